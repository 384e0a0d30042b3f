/**
 * The controller's flags (compatible with the reference implementation's
 * names and defaults) and their parsing into typed options.
 *
 * @module
 */
import { DEFAULT_API_EXPORT_NAME } from "./api.ts";
import {
  type BindAddress,
  type FlagSpec,
  parseDuration,
  parseFlag,
  parseFlags,
  parseServiceBinds,
  requiredFlag,
} from "./flags.ts";
import { baseUrl } from "./kcp.ts";
import { type LogLevel, parseLogLevel } from "./log.ts";

/** The controller's flag table, in `--help` order. */
export const CONTROLLER_FLAGS: readonly FlagSpec[] = [
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
    name: "kcp-base-host",
    help:
      "Front-proxy base URL for resolving workspace paths (default: the kubeconfig server without /clusters/...)",
  },
  {
    name: "webhook-url",
    help:
      "URL kcp calls for admission reviews, used as-is in clientConfig.url (https, e.g. https://webhook.example:9443/validate)",
  },
  {
    name: "webhook-ca-bundle-path",
    help:
      "PEM file of the CA that signed the webhook's certificate; becomes caBundle, re-read on every resync",
  },
  {
    name: "webhook-timeout",
    default: "10s",
    help:
      "How long kcp waits for the webhook, whole seconds from 1s to 30s (timeoutSeconds)",
  },
  {
    name: "resync-period",
    default: "5m",
    help: "How often to reconcile everything again",
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
    name: "leader-elect",
    boolean: true,
    help:
      "Run only while holding the leader Lease, so several replicas can run (--leader-elect=true|false also works)",
  },
  {
    name: "leader-election-namespace",
    default: "default",
    help: "Namespace of the leader Lease in the dep-ctrl workspace",
  },
  {
    name: "leader-election-id",
    default: "dependency-controller",
    help: "Name of the leader Lease",
  },
  { name: "log-level", default: "info", help: "debug, info, warn or error" },
];

/** Typed controller options. */
export interface ControllerOptions {
  /** Kubeconfig path. */
  kubeconfig: string;
  /** dep-ctrl APIExport name. */
  apiExportName: string;
  /** Front-proxy base override, without `/clusters/...`. */
  kcpBaseHost?: string;
  /** The webhook's URL, exactly as given. */
  webhookUrl: string;
  /** PEM file whose bytes become the webhook configuration's caBundle. */
  webhookCaBundlePath: string;
  /** The webhook configuration's timeoutSeconds. */
  webhookTimeoutSeconds: number;
  /** Resync period, ms. */
  resyncPeriodMs: number;
  /** Probe listener, if enabled. */
  healthBind?: BindAddress;
  /** Metrics listener, if enabled. */
  metricsBind?: BindAddress;
  /** Whether to run only as the elected leader. */
  leaderElect: boolean;
  /** Namespace of the leader Lease. */
  leaderElectionNamespace: string;
  /** Name of the leader Lease. */
  leaderElectionId: string;
  /** Log level. */
  logLevel: LogLevel;
}

/** The result of {@linkcode parseControllerOptions}: options, or a request for help. */
export type ControllerArgs = { help: true } | {
  help: false;
  options: ControllerOptions;
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Parses the controller's command line.
 *
 * @throws {TypeError} With a message naming the flag when a value is missing or malformed.
 */
export function parseControllerOptions(
  args: readonly string[],
  options: { env?: (name: string) => string | undefined } = {},
): ControllerArgs {
  const flags = parseFlags(args, CONTROLLER_FLAGS, options);
  if (flags.help) return { help: true };
  const v = flags.values;
  const kubeconfig = requiredFlag(flags, "kubeconfig", { env: "KUBECONFIG" });
  const webhookUrlText = requiredFlag(flags, "webhook-url");
  const webhookCaBundlePath = requiredFlag(flags, "webhook-ca-bundle-path");
  const kcpBaseHost = v["kcp-base-host"]
    ? parseFlag("kcp-base-host", () => baseUrl(v["kcp-base-host"]!))
    : undefined;
  return {
    help: false,
    options: {
      kubeconfig,
      apiExportName: v["api-export-name"]!,
      ...(kcpBaseHost === undefined ? {} : { kcpBaseHost }),
      webhookUrl: parseFlag(
        "webhook-url",
        () => checkWebhookUrl(webhookUrlText),
      ),
      webhookCaBundlePath,
      webhookTimeoutSeconds: parseFlag(
        "webhook-timeout",
        () => parseWebhookTimeout(v["webhook-timeout"]!),
      ),
      resyncPeriodMs: parseFlag(
        "resync-period",
        () => parseDuration(v["resync-period"]!),
      ),
      ...parseServiceBinds(flags),
      leaderElect: v["leader-elect"] === "true",
      leaderElectionNamespace: parseFlag(
        "leader-election-namespace",
        () =>
          checkName(v["leader-election-namespace"]!, DNS_LABEL, "a DNS label"),
      ),
      leaderElectionId: parseFlag(
        "leader-election-id",
        () =>
          checkName(
            v["leader-election-id"]!,
            DNS_SUBDOMAIN,
            "a DNS subdomain",
          ),
      ),
      logLevel: parseFlag("log-level", () => parseLogLevel(v["log-level"]!)),
    },
  };
}

/**
 * Checks the webhook URL as Kubernetes validates `clientConfig.url`: https,
 * a host, no user information, no query and no fragment. Returns it unchanged.
 */
function checkWebhookUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(
      `want an absolute https:// URL: current value is '${text}'`,
    );
  }
  if (url.protocol !== "https:") {
    throw new TypeError(
      `kcp calls webhooks over https only: current value is '${text}'`,
    );
  }
  if (
    url.username !== "" || url.password !== "" ||
    /^https:\/\/[^/?#]*@/i.test(text)
  ) {
    throw new TypeError(
      `user information is not permitted in the URL: current value is '${text}'`,
    );
  }
  if (text.includes("#")) {
    throw new TypeError(
      `fragments are not permitted in the URL: current value is '${text}'`,
    );
  }
  if (text.includes("?")) {
    throw new TypeError(
      `query parameters are not permitted in the URL: current value is '${text}'`,
    );
  }
  return text;
}

/** A duration of whole seconds from 1s to 30s, in seconds. */
function parseWebhookTimeout(text: string): number {
  const ms = parseDuration(text);
  if (ms % 1000 !== 0 || ms < 1000 || ms > 30_000) {
    throw new TypeError(
      `want whole seconds from 1s to 30s: current value is '${text}'`,
    );
  }
  return ms / 1000;
}

function checkName(text: string, pattern: RegExp, what: string): string {
  if (text.length > 253 || !pattern.test(text)) {
    throw new TypeError(`want ${what}: current value is '${text}'`);
  }
  return text;
}
