/**
 * The webhook's flags (compatible with the reference implementation's names
 * and defaults) and their parsing into typed options.
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
  type BindAddress,
  type FlagSpec,
  parseBindAddress,
  parseDuration,
  parseDurationOrZero,
  parseFlag,
  parseFlags,
  parsePositiveInteger,
} from "../runtime/mod.ts";
import { MAX_REVIEW_BYTES } from "./admission_review.ts";
import { DEFAULT_MAX_PAGE_BYTES } from "./dependent_lister.ts";

/**
 * The default of `--list-page-size`: 500 objects of a few KB fit a page of
 * the default `--max-list-page-bytes`; bigger objects make smaller pages.
 */
export const DEFAULT_LIST_PAGE_SIZE = 500;

/**
 * The default of `--max-list-bytes-in-flight`: four pages of the default
 * `--max-list-page-bytes` (32 MiB of estimated memory), one for each of
 * the default `--max-concurrent-reviews`. Eight reviews at once over
 * thousands of 27 KB objects (usual ones, or all empty objects, or keys
 * all different) ran in a 48 MB old generation, well inside the webhook's
 * 128 MB (`lib/webhook/list_memory_test.ts` runs them in 128 MB).
 */
export const DEFAULT_LIST_BYTES_IN_FLIGHT = 4 * DEFAULT_MAX_PAGE_BYTES;

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
  EXPORT_RELIST_INTERVAL_FLAG,
  {
    name: "list-timeout",
    default: "7s",
    help: "Deadline for all dependent lists of one review (kcp waits 10s)",
  },
  {
    name: "bindings-cache-ttl",
    default: "5s",
    help:
      "How long a consumer workspace's APIBindings, read to tell which export each of its types comes from, serve its later reviews (0s: read for every review); a stale answer concerns only that workspace's own bindings",
  },
  {
    name: "teardown-order-timeout",
    default: "2m",
    help:
      "How long after kcp marks a workspace for deletion references still keep its teardown in dependency order; then nothing in it is protected (0s: at once). Locks never hold in a workspace being deleted",
  },
  {
    name: "lock-expiry-skew",
    default: "5s",
    help:
      "How long after a Lock's spec.expiresAt, by this webhook's clock, the Lock still holds (0s to 10m): a clock ahead of the Lock writer's by up to this never lets a Lock go early",
  },
  {
    name: "list-page-size",
    default: String(DEFAULT_LIST_PAGE_SIZE),
    help:
      "Objects in the first page when listing dependents; while pages of small objects stay well under --max-list-page-bytes the next asks for up to ten times more, filling up to three quarters of it (each further page is a fresh read for kcp, dearer than the first)",
  },
  {
    name: "max-list-page-bytes",
    default: String(DEFAULT_MAX_PAGE_BYTES),
    help:
      "Memory one list page (or object) may take, estimated from its JSON as it arrives (about twice its size for usual objects); a larger page is asked for again with a tenth of the objects, down to one, and only a single larger object denies the delete with 503 (memory bound)",
  },
  {
    name: "max-list-bytes-in-flight",
    default: String(DEFAULT_LIST_BYTES_IN_FLIGHT),
    help:
      "Memory of list pages read and scanned at once across all reviews, each page counting --max-list-page-bytes (at least that); more wait within the review's --list-timeout (memory bound)",
  },
  {
    name: "max-concurrent-reviews",
    default: "4",
    help:
      "Reviews that read kcp at once; more wait up to --review-queue-timeout, then are denied as busy (memory bound)",
  },
  {
    name: "max-review-bytes-in-flight",
    default: "8388608",
    help:
      "Bytes of review bodies read and parsed at once (at least 3 MiB); more wait, then get 503 (memory bound)",
  },
  {
    name: "review-queue-timeout",
    default: "2s",
    help:
      "How long a review waits for room under the two bounds above before it is turned away",
  },
  {
    name: "tls-handshake-timeout",
    default: "5s",
    help: "Time a new connection has to complete its TLS handshake",
  },
  {
    name: "read-header-timeout",
    default: "5s",
    help:
      "Time a connection has to send a complete request head (after the handshake or its first byte); then 408 and closed",
  },
  {
    name: "read-timeout",
    default: "10s",
    help:
      "Time a whole request, head and body, has to arrive; a slower one ends its connection",
  },
  {
    name: "idle-timeout",
    default: "60s",
    help: "Time a keep-alive connection may stay idle between requests",
  },
  {
    name: "max-connections",
    default: "1000",
    help: "Open admission connections beyond which new ones are closed at once",
  },
  {
    name: "shutdown-timeout",
    default: "8s",
    help:
      "After SIGTERM, the deadline of the whole shutdown (reviews get a second less); exits 0 when everything stopped, 3 when the deadline passed",
  },
  {
    name: "skip-protection-mode",
    default: "annotation",
    help:
      "annotation: the skip-protection annotation alone lets a delete through (as the reference); authorized: only for users kcp allows 'bypass' on protections.dependencies.opendefense.cloud in the workspace",
  },
  {
    name: "holds",
    boolean: true,
    help:
      "Keep a table of the objects whose delete was denied recently because something holds them (what, since when) and serve it as /holds.json on the metrics listener, with the gauge dependency_webhook_oldest_hold_seconds; it names tenants' objects, so only operators should reach that port (--holds=true|false also works)",
  },
  {
    name: "holds-max",
    default: "1000",
    help:
      "Most objects the --holds table keeps (the one denied longest ago goes first; an entry keeps at most 4 KiB of causes and is forgotten an hour after its last denial)",
  },
  {
    name: "dependents-index",
    boolean: true,
    help:
      "Keep an index of dependents, fed by a list+watch of each rule's dependent type on every shard, and answer reviews from it instead of listing: a dependent it names is read again to confirm it still refers, and 'nothing refers' counts only once the index is shown to hold every change up to the review's start (else the review lists, as without it); rules with a 'when' are always listed (--dependents-index=true|false also works)",
  },
  {
    name: "index-max-dependents",
    default: "100000",
    help:
      "Most dependents every index keeps together (one index per dependent type and export), and four times as many references; the index that would pass either drops what it keeps, its type is listed on each review and the metric dependency_webhook_index_feeds says overflowed. Up to about 520 bytes of heap each: the webhook refuses to start when this needs more than half of its V8 heap (--max-old-space-size)",
  },
  {
    name: "index-freshness-timeout",
    default: "200ms",
    help:
      "How long a review waits for an index to show it holds every change up to the review's start before it lists instead (at most a quarter of what is left of --list-timeout)",
  },
  LOG_LEVEL_FLAG,
  ALLOW_INSECURE_HTTP_FLAG,
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
  /** How long references order a workspace's teardown, ms. */
  teardownOrderMs: number;
  /** How long a Lock still holds after its `spec.expiresAt`, ms. */
  lockExpirySkewMs: number;
  /** How long a workspace's APIBindings serve its reviews, ms. */
  bindingsCacheTtlMs: number;
  /** Page size for dependent lists. */
  listPageSize: number;
  /** Memory one list page (or object) may take, estimated, in bytes. */
  maxListPageBytes: number;
  /** Memory of list pages read and scanned at once, estimated, in bytes. */
  maxListBytesInFlight: number;
  /** Reviews that read kcp at once. */
  maxConcurrentReviews: number;
  /** Bytes of review bodies read and parsed at once. */
  maxReviewBytesInFlight: number;
  /** How long a review waits for room, ms. */
  reviewQueueTimeoutMs: number;
  /** Whether the skip-protection annotation needs the user's `bypass` permission. */
  skipProtectionMode: "annotation" | "authorized";
  /** TLS handshake deadline, ms. */
  tlsHandshakeTimeoutMs: number;
  /** Request-head deadline, ms. */
  readHeaderTimeoutMs: number;
  /** Whole-request deadline, ms. */
  readTimeoutMs: number;
  /** Keep-alive idle timeout, ms. */
  idleTimeoutMs: number;
  /** Open admission connections at most. */
  maxConnections: number;
  /** Drain deadline after SIGTERM, ms. */
  shutdownTimeoutMs: number;
  /** Whether to keep the hold table and serve `/holds.json`. */
  holds: boolean;
  /** Most entries of the hold table. */
  holdsMax: number;
  /** Whether reviews answer from the dependents index where it can. */
  dependentsIndex: boolean;
  /** Most dependents one index keeps. */
  indexMaxDependents: number;
  /** How long a review waits for an index to show it is fresh, ms. */
  indexFreshnessMs: number;
}

/** The result of {@linkcode parseWebhookOptions}: options, or a request for help. */
export type WebhookArgs = { help: true } | {
  help: false;
  options: WebhookOptions;
};

/** The most `--lock-expiry-skew` may be: a bound, not a second lifetime. */
export const MAX_LOCK_EXPIRY_SKEW_MS = 600_000;

/** `--lock-expiry-skew`: `0s` (or `0`), or a duration up to 10m. */
function lockExpirySkew(text: string): number {
  const ms = parseDurationOrZero(text);
  if (ms > MAX_LOCK_EXPIRY_SKEW_MS) {
    throw new TypeError(
      `want at most 10m: current value is '${text}'`,
    );
  }
  return ms;
}

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
  const duration = (flag: string) =>
    parseFlag(flag, () => parseDuration(v[flag]!));
  const pageSize = positiveInteger("list-page-size", v["list-page-size"]!);
  const maxListPageBytes = positiveInteger(
    "max-list-page-bytes",
    v["max-list-page-bytes"]!,
  );
  const maxListBytesInFlight = positiveInteger(
    "max-list-bytes-in-flight",
    v["max-list-bytes-in-flight"]!,
  );
  if (maxListBytesInFlight < maxListPageBytes) {
    throw new TypeError(
      `Cannot use --max-list-bytes-in-flight below --max-list-page-bytes (${maxListPageBytes} bytes): current value is '${maxListBytesInFlight}'`,
    );
  }
  const maxReviewBytesInFlight = positiveInteger(
    "max-review-bytes-in-flight",
    v["max-review-bytes-in-flight"]!,
  );
  if (maxReviewBytesInFlight < MAX_REVIEW_BYTES) {
    throw new TypeError(
      `Cannot use --max-review-bytes-in-flight below the largest review (${MAX_REVIEW_BYTES} bytes): current value is '${maxReviewBytesInFlight}'`,
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
      teardownOrderMs: parseFlag(
        "teardown-order-timeout",
        () => parseDurationOrZero(v["teardown-order-timeout"]!),
      ),
      lockExpirySkewMs: parseFlag(
        "lock-expiry-skew",
        () => lockExpirySkew(v["lock-expiry-skew"]!),
      ),
      bindingsCacheTtlMs: parseFlag(
        "bindings-cache-ttl",
        () => parseDurationOrZero(v["bindings-cache-ttl"]!),
      ),
      listPageSize: pageSize,
      maxListPageBytes,
      maxListBytesInFlight,
      maxConcurrentReviews: positiveInteger(
        "max-concurrent-reviews",
        v["max-concurrent-reviews"]!,
      ),
      maxReviewBytesInFlight,
      reviewQueueTimeoutMs: parseFlag(
        "review-queue-timeout",
        () => parseDuration(v["review-queue-timeout"]!),
      ),
      skipProtectionMode: skipProtectionMode(v["skip-protection-mode"]!),
      tlsHandshakeTimeoutMs: duration("tls-handshake-timeout"),
      readHeaderTimeoutMs: duration("read-header-timeout"),
      readTimeoutMs: duration("read-timeout"),
      idleTimeoutMs: duration("idle-timeout"),
      maxConnections: positiveInteger(
        "max-connections",
        v["max-connections"]!,
      ),
      shutdownTimeoutMs: duration("shutdown-timeout"),
      holds: v["holds"] === "true",
      holdsMax: positiveInteger("holds-max", v["holds-max"]!),
      dependentsIndex: v["dependents-index"] === "true",
      indexMaxDependents: positiveInteger(
        "index-max-dependents",
        v["index-max-dependents"]!,
      ),
      indexFreshnessMs: duration("index-freshness-timeout"),
    },
  };
}

function skipProtectionMode(text: string): "annotation" | "authorized" {
  if (text === "annotation" || text === "authorized") return text;
  throw new TypeError(
    `Cannot parse --skip-protection-mode: want annotation or authorized: current value is '${text}'`,
  );
}

function positiveInteger(flag: string, text: string): number {
  return parseFlag(flag, () => parsePositiveInteger(text));
}
