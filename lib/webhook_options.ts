/**
 * The webhook's flags (compatible with the reference implementation's names
 * and defaults) and their parsing into typed options.
 *
 * @module
 */
import {
  API_EXPORT_NAME_FLAG,
  type ComponentOptions,
  kcpBaseHostFlag,
  KUBECONFIG_FLAG,
  LOG_LEVEL_FLAG,
  parseComponentOptions,
  SERVICE_BIND_FLAGS,
} from "./component_flags.ts";
import {
  type BindAddress,
  type FlagSpec,
  parseBindAddress,
  parseDuration,
  parseFlag,
  parseFlags,
} from "./flags.ts";

/** The webhook's flag table, in `--help` order. */
export const WEBHOOK_FLAGS: readonly FlagSpec[] = [
  KUBECONFIG_FLAG,
  API_EXPORT_NAME_FLAG,
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
  ...SERVICE_BIND_FLAGS,
  kcpBaseHostFlag("listing dependents"),
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
  LOG_LEVEL_FLAG,
];

/** Typed webhook options. */
export interface WebhookOptions extends ComponentOptions {
  /** Admission listener. */
  webhookBind: BindAddress;
  /** Certificate directory. */
  tlsCertDir: string;
  /** Certificate reload interval, ms. */
  tlsReloadIntervalMs: number;
  /** Review deadline, ms. */
  listTimeoutMs: number;
  /** Page size for dependent lists. */
  listPageSize: number;
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
  const common = parseComponentOptions(flags);
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
      ...common,
      webhookBind,
      tlsCertDir: v["tls-cert-dir"]!,
      tlsReloadIntervalMs: parseFlag(
        "tls-reload-interval",
        () => parseDuration(v["tls-reload-interval"]!),
      ),
      listTimeoutMs: parseFlag(
        "list-timeout",
        () => parseDuration(v["list-timeout"]!),
      ),
      listPageSize: pageSize,
    },
  };
}
