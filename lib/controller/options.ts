/**
 * The controller's flags (compatible with the reference implementation's
 * names and defaults) and their parsing into typed options.
 *
 * @module
 */
import {
  ALLOW_INSECURE_HTTP_FLAG,
  API_EXPORT_NAME_FLAG,
  type ComponentOptions,
  EXPORT_RELIST_INTERVAL_FLAG,
  kcpBaseHostFlag,
  KUBECONFIG_FLAG,
  LOG_LEVEL_FLAG,
  parseComponentOptions,
  SERVICE_BIND_FLAGS,
} from "../kcp/mod.ts";
import {
  type FlagSpec,
  parseDuration,
  parseFlag,
  parseFlags,
  parsePositiveInteger,
  requiredFlag,
} from "../runtime/mod.ts";

/** The controller's flag table, in `--help` order. */
export const CONTROLLER_FLAGS: readonly FlagSpec[] = [
  KUBECONFIG_FLAG,
  API_EXPORT_NAME_FLAG,
  kcpBaseHostFlag("resolving workspace paths"),
  EXPORT_RELIST_INTERVAL_FLAG,
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
    name: "webhook-user",
    default: "dependency-webhook",
    help:
      "The webhook's kcp user name: a rule is Enforced only while kcp says this user may read what the rule names (a SubjectAccessReview in the rule's workspace)",
  },
  {
    name: "dependents-index",
    boolean: true,
    help:
      "The webhook runs with --dependents-index: also check that its user may feed the index (watch on each rule's dependent type, list and watch on apiexports/content of its export and on apiexportendpointslices) and say so in each rule's Indexed condition; a missing grant never changes Ready (the webhook lists instead)",
  },
  {
    name: "resync-period",
    default: "5m",
    help: "How often to reconcile everything again",
  },
  {
    name: "max-writes-in-flight",
    default: "8",
    help:
      "Writes to kcp (webhook configurations, rule status) running at once; the rest wait their turn",
  },
  ...SERVICE_BIND_FLAGS,
  {
    name: "graph",
    boolean: true,
    help:
      "Also serve GET /graph (a page with a picture of the types the rules protect, each rule's state and the Locks per type) and GET /graph.json on the metrics listener; whoever reaches that port sees every rule's workspace and types",
  },
  {
    name: "graph-holds-url",
    help:
      "With --graph: the webhook's /holds.json on its metrics port (http or https, e.g. http://<webhook Pod IP>:8080/holds.json, or the chart's Service dependency-webhook port 8080 when it has a ServiceMonitor), read each time the page is served to show what the webhook holds; the webhook needs --holds",
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
  LOG_LEVEL_FLAG,
  ALLOW_INSECURE_HTTP_FLAG,
];

/** Typed controller options. */
export interface ControllerOptions extends ComponentOptions {
  /** The webhook's URL, exactly as given. */
  webhookUrl: string;
  /** PEM file whose bytes become the webhook configuration's caBundle. */
  webhookCaBundlePath: string;
  /** The webhook configuration's timeoutSeconds. */
  webhookTimeoutSeconds: number;
  /** The webhook's kcp user name, asked about in SubjectAccessReviews. */
  webhookUser: string;
  /** Whether the webhook keeps its dependents index: rules say whether it may feed it. */
  dependentsIndex: boolean;
  /** Resync period, ms. */
  resyncPeriodMs: number;
  /** Writes to kcp running at once. */
  maxWritesInFlight: number;
  /** Whether the metrics listener also serves `/graph` and `/graph.json`. */
  graph: boolean;
  /** The webhook's `/holds.json` URL, read for the graph page; absent if not given. */
  graphHoldsUrl?: string;
  /** Whether to run only as the elected leader. */
  leaderElect: boolean;
  /** Namespace of the leader Lease. */
  leaderElectionNamespace: string;
  /** Name of the leader Lease. */
  leaderElectionId: string;
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
  const common = parseComponentOptions(flags);
  const webhookUrlText = requiredFlag(flags, "webhook-url");
  const webhookCaBundlePath = requiredFlag(flags, "webhook-ca-bundle-path");
  const graph = v.graph === "true";
  const graphHoldsUrl = v["graph-holds-url"] === undefined
    ? undefined
    : parseFlag(
      "graph-holds-url",
      () => checkHoldsUrl(v["graph-holds-url"]!, graph),
    );
  if (graph && common.metricsBind === undefined) {
    throw new TypeError(
      "Cannot parse --graph: the page is served on the metrics listener, which --metrics-bind-address=0 turns off",
    );
  }
  return {
    help: false,
    options: {
      ...common,
      webhookUrl: parseFlag(
        "webhook-url",
        () => checkWebhookUrl(webhookUrlText),
      ),
      webhookCaBundlePath,
      webhookTimeoutSeconds: parseFlag(
        "webhook-timeout",
        () => parseWebhookTimeout(v["webhook-timeout"]!),
      ),
      webhookUser: parseFlag("webhook-user", () => {
        const user = v["webhook-user"]!;
        if (user === "" || user.length > 253 || /[\s\p{C}]/u.test(user)) {
          throw new TypeError(
            `must be a user name without spaces or control characters: current value is ${
              JSON.stringify(user.slice(0, 64))
            }`,
          );
        }
        return user;
      }),
      dependentsIndex: v["dependents-index"] === "true",
      resyncPeriodMs: parseFlag(
        "resync-period",
        () => parseDuration(v["resync-period"]!),
      ),
      maxWritesInFlight: parseFlag(
        "max-writes-in-flight",
        () => parsePositiveInteger(v["max-writes-in-flight"]!),
      ),
      graph,
      ...(graphHoldsUrl === undefined ? {} : { graphHoldsUrl }),
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

/**
 * Checks the webhook's `/holds.json` URL: http or https, a host, no user
 * information and no fragment; only with `--graph`, which reads it.
 * Returns it unchanged.
 */
function checkHoldsUrl(text: string, graph: boolean): string {
  if (!graph) {
    throw new TypeError(
      "only the graph page reads it: add --graph or leave it out",
    );
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(
      `want an absolute http:// or https:// URL: current value is '${text}'`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(
      `want an absolute http:// or https:// URL: current value is '${text}'`,
    );
  }
  if (url.hostname === "") {
    throw new TypeError(`want a host in the URL: current value is '${text}'`);
  }
  if (
    url.username !== "" || url.password !== "" ||
    /^https?:\/\/[^/?#]*@/i.test(text)
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
