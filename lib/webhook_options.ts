/**
 * The webhook's flags (compatible with the reference implementation's names
 * and defaults) and their parsing into typed options.
 *
 * @module
 */
import { DEFAULT_API_EXPORT_NAME } from "./api.ts";
import {
  type BindAddress,
  type FlagSpec,
  parseBindAddress,
  parseDuration,
  parseFlag,
  parseFlags,
  parseServiceBinds,
  requiredFlag,
} from "./flags.ts";
import { baseUrl } from "./kcp.ts";
import { type LogLevel, parseLogLevel } from "./log.ts";

/** The webhook's flag table, in `--help` order. */
export const WEBHOOK_FLAGS: readonly FlagSpec[] = [
  {
    name: "kubeconfig",
    env: "KUBECONFIG",
    help:
      "Kubeconfig whose server is the dep-ctrl workspace (https://<front-proxy>/clusters/root:dep-ctrl)",
  },
  {
    name: "api-export-name",
    default: DEFAULT_API_EXPORT_NAME,
    help: "Name of the dep-ctrl APIExport",
  },
  {
    name: "webhook-bind-address",
    default: ":9443",
    help: "Address the HTTPS admission endpoint (POST /validate) listens on",
  },
  {
    name: "webhook-port",
    help:
      "Port of the admission endpoint on all interfaces (alias kept for compatibility)",
  },
  {
    name: "tls-cert-dir",
    default: "/etc/webhook-tls",
    help: "Directory with tls.crt and tls.key, re-read when they change",
  },
  {
    name: "tls-reload-interval",
    default: "10s",
    help: "How often to look for a rotated certificate",
  },
  {
    name: "health-probe-bind-address",
    default: ":8081",
    help: "Address of /healthz and /readyz; 0 disables",
  },
  {
    name: "metrics-bind-address",
    default: ":8080",
    help: "Address of /metrics (Prometheus); 0 disables",
  },
  {
    name: "kcp-base-host",
    help:
      "Front-proxy base URL for listing dependents (default: the kubeconfig server without /clusters/...)",
  },
  {
    name: "list-timeout",
    default: "7s",
    help: "Deadline for all dependent lists of one review (kcp waits 10s)",
  },
  {
    name: "list-page-size",
    default: "10000",
    help:
      "Objects per page when listing dependents (each further page is a fresh read for kcp)",
  },
  { name: "log-level", default: "info", help: "debug, info, warn or error" },
];

/** Typed webhook options. */
export interface WebhookOptions {
  /** Kubeconfig path. */
  kubeconfig: string;
  /** dep-ctrl APIExport name. */
  apiExportName: string;
  /** Admission listener. */
  webhookBind: BindAddress;
  /** Certificate directory. */
  tlsCertDir: string;
  /** Certificate reload interval, ms. */
  tlsReloadIntervalMs: number;
  /** Probe listener, if enabled. */
  healthBind?: BindAddress;
  /** Metrics listener, if enabled. */
  metricsBind?: BindAddress;
  /** Front-proxy base override, without `/clusters/...`. */
  kcpBaseHost?: string;
  /** Review deadline, ms. */
  listTimeoutMs: number;
  /** Page size for dependent lists. */
  listPageSize: number;
  /** Log level. */
  logLevel: LogLevel;
}

/** The result of {@linkcode parseWebhookOptions}: options, or a request for help. */
export type WebhookArgs = { help: true } | {
  help: false;
  options: WebhookOptions;
};

/**
 * Parses the webhook's command line.
 *
 * @throws {TypeError} With a message naming the flag when a value is missing or malformed.
 */
export function parseWebhookOptions(
  args: readonly string[],
  options: { env?: (name: string) => string | undefined } = {},
): WebhookArgs {
  const flags = parseFlags(args, WEBHOOK_FLAGS, options);
  if (flags.help) return { help: true };
  const v = flags.values;
  const kubeconfig = requiredFlag(flags, "kubeconfig", { env: "KUBECONFIG" });
  const webhookBindText =
    flags.given.has("webhook-port") && !flags.given.has("webhook-bind-address")
      ? `:${v["webhook-port"]}`
      : v["webhook-bind-address"]!;
  const webhookBind = parseFlag(
    "webhook-bind-address",
    () => parseBindAddress(webhookBindText),
  );
  if (webhookBind === undefined) {
    throw new TypeError(
      "Cannot start: --webhook-bind-address cannot be disabled",
    );
  }
  const pageSize = Number(v["list-page-size"]);
  if (!Number.isInteger(pageSize) || pageSize < 1) {
    throw new TypeError(
      `Cannot parse --list-page-size: want a positive integer: current value is '${
        v["list-page-size"]
      }'`,
    );
  }
  return {
    help: false,
    options: {
      kubeconfig,
      apiExportName: v["api-export-name"]!,
      webhookBind,
      tlsCertDir: v["tls-cert-dir"]!,
      tlsReloadIntervalMs: parseFlag(
        "tls-reload-interval",
        () => parseDuration(v["tls-reload-interval"]!),
      ),
      ...parseServiceBinds(flags),
      ...(v["kcp-base-host"]
        ? {
          kcpBaseHost: parseFlag(
            "kcp-base-host",
            () => baseUrl(v["kcp-base-host"]!),
          ),
        }
        : {}),
      listTimeoutMs: parseFlag(
        "list-timeout",
        () => parseDuration(v["list-timeout"]!),
      ),
      listPageSize: pageSize,
      logLevel: parseFlag("log-level", () => parseLogLevel(v["log-level"]!)),
    },
  };
}
