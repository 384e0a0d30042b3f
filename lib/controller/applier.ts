/**
 * Carries out a plan's writes: webhook configurations and rule status,
 * through the dep-ctrl virtual workspace. Each key (a provider's
 * configuration, a rule's status) has at most one write running; a failed
 * write is not repeated before its per-key backoff has passed, while other
 * work for the key starts at once; at most `maxInFlight` writes run at a
 * time and the rest wait in a queue that each plan replaces.
 *
 * After a write, its key waits until the watch shows it (or a deadline), so
 * that a plan computed from a stale cache does not repeat it. The applier
 * asks for a new plan (`onRetry`) when a failed write may be tried again,
 * when an expectation times out, and after a failure (the rule status
 * reports it); a successful write needs none, since the watch event that
 * shows it asks for one.
 *
 * @module
 */
import { GROUP, PLURAL, VERSION } from "../rules/mod.ts";
import { type BackoffOptions, errorText, type Logger } from "../runtime/mod.ts";
import {
  clusterOf,
  clusterUrl,
  type EndpointObject,
  KubeApiError,
  type KubeClient,
  type KubeObject,
  pathSegment,
} from "../kcp/mod.ts";
import { LOCK_PLURAL } from "../locks/mod.ts";
import { KeyedTasks } from "../runtime/mod.ts";
import type { ConfigurationAction } from "./configuration_plan.ts";
import type { Plan } from "./reconcile_plan.ts";
import type { StatusAction } from "./status_tally.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  WEBHOOK_CONFIGURATIONS_PATH,
} from "./webhook_config.ts";

/** Options for {@linkcode Applier}. */
export interface ApplierOptions {
  /** Client for the virtual workspaces. */
  client: KubeClient;
  /** Where to log writes. */
  log: Logger;
  /** Asks for a new plan. */
  onRetry: () => void;
  /** Called after every write, with its error if it failed. */
  onWritten?: (kind: "configuration" | "status", error?: unknown) => void;
  /** Called when the number of writes running changes. */
  onInFlight?: (count: number) => void;
  /** Retry delays per key. @default {initialMs: 500, maxMs: 60_000} */
  backoff?: BackoffOptions;
  /** How long a key waits for the watch to show its write. @default {10_000} */
  expectationTimeoutMs?: number;
  /** Writes running at once. @default {8} */
  maxInFlight?: number;
  /**
   * How long after a configuration changed it is touched once more (see
   * {@linkcode REFRESHED_ANNOTATION}). @default {3_000}
   */
  refreshAfterMs?: number;
}

/**
 * The annotation a configuration gets a few seconds after each change.
 * kcp's admission keeps the hooks of each webhook configuration in a cache
 * keyed by the configuration's name (Kubernetes' webhook configuration
 * manager): an update that races an admission call can leave the old hooks
 * cached until the next update event, so that, say, a Lock's new UPDATE
 * operation is never called. One more write, which changes nothing the
 * webhooks do, is that next event.
 */
export const REFRESHED_ANNOTATION = "dependencies.opendefense.cloud/refreshed";

/** What the watch caches show now: the objects the writes change. */
export interface Observed {
  /** The webhook configurations we own. */
  configurations: readonly EndpointObject[];
  /** Every DependencyRule. */
  rules: readonly EndpointObject[];
  /** Every Lock. @default {none} */
  locks?: readonly EndpointObject[];
}

/** A write we wait to see in the watches. */
interface Expectation {
  /** The resourceVersion (or "absent") the cache showed before the write. */
  before: string;
  /** When to stop waiting. */
  deadline: number;
}

/** A write waiting for room. */
interface Queued {
  /**
   * What the write does, to tell a retry of a failed write from new work;
   * computed only for the writes that start (a plan queues thousands).
   */
  fingerprint: () => string;
  work: (signal: AbortSignal) => Promise<void>;
  /** Set once the write succeeded: what its key then waits to see. */
  expect: string;
}

const ABSENT = "absent";

/** Runs the writes of successive plans with bounded concurrency. */
export class Applier {
  readonly #options: ApplierOptions;
  readonly #tasks: KeyedTasks;
  readonly #expectations = new Map<string, Expectation>();
  #queue = new Map<string, Queued>();
  #inFlight = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #refreshTimers = new Set<ReturnType<typeof setTimeout>>();
  #stopped = false;

  /** Builds an applier with nothing to do. */
  constructor(options: ApplierOptions) {
    this.#options = options;
    this.#tasks = new KeyedTasks({
      backoff: options.backoff ?? { initialMs: 500, maxMs: 60_000 },
      onSettled: () => this.#pump(),
    });
  }

  /** Writes running now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * The last failed configuration write per provider cluster (conflicts
   * aside: the cache was behind, and the next plan repeats the write).
   */
  failures(): ReadonlyMap<string, string> {
    const failures = new Map<string, string>();
    for (const key of this.#tasks.keys()) {
      if (!key.startsWith(CONFIGURATION_KEY)) continue;
      const error = this.#tasks.error(key);
      if (error !== undefined && !isConflict(error)) {
        failures.set(key.slice(CONFIGURATION_KEY.length), errorText(error));
      }
    }
    return failures;
  }

  /**
   * Replaces the queued writes with `plan`'s, leaving out keys whose last
   * write the caches in `observed` do not show yet, and forgets keys that
   * have no work any more.
   */
  apply(
    plan: Pick<Plan, "configurations" | "statuses">,
    observed: Observed,
  ): void {
    if (this.#stopped) return;
    this.#settleExpectations(observed);
    const queue = new Map<string, Queued>();
    for (const action of plan.configurations) {
      const key = configurationKey(action.cluster);
      if (!this.#expectations.has(key)) {
        queue.set(key, this.#configurationWrite(action));
      }
    }
    for (const action of plan.statuses) {
      const key = statusKey(action);
      if (!this.#expectations.has(key)) {
        queue.set(key, this.#statusWrite(action));
      }
    }
    const live = new Set([
      ...plan.configurations.map((a) => configurationKey(a.cluster)),
      ...plan.statuses.map((a) => statusKey(a)),
    ]);
    for (const key of this.#tasks.keys()) {
      if (!live.has(key)) this.#tasks.forget(key);
    }
    this.#queue = queue;
    this.#pump();
  }

  /** Stops: no new writes; waits for running ones. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    for (const timer of this.#refreshTimers) clearTimeout(timer);
    this.#refreshTimers.clear();
    this.#queue.clear();
    await this.#tasks.stop();
  }

  /** Starts queued writes while there is room, then sets the retry timer. */
  #pump(): void {
    if (this.#stopped) return;
    const maxInFlight = this.#options.maxInFlight ?? 8;
    for (const [key, queued] of this.#queue) {
      if (this.#inFlight >= maxInFlight) break;
      this.#queue.delete(key);
      // A write that ended meanwhile is awaited in the caches, not repeated.
      if (this.#tasks.running(key) || this.#expectations.has(key)) continue;
      const started = this.#tasks.run(
        key,
        queued.fingerprint(),
        async (signal) => {
          try {
            await queued.work(signal);
            this.#expect(key, queued.expect);
          } catch (error) {
            // The rule status reports the failure: ask for a plan.
            queueMicrotask(() => this.#options.onRetry());
            throw error;
          } finally {
            this.#inFlight--;
            this.#options.onInFlight?.(this.#inFlight);
          }
        },
      );
      if (started) {
        this.#inFlight++;
        this.#options.onInFlight?.(this.#inFlight);
      }
    }
    this.#scheduleRetry();
  }

  #configurationWrite(action: ConfigurationAction): Queued {
    const name = action.object.metadata?.name ?? "";
    const collection = `${
      clusterUrl(action.endpoint, action.cluster)
    }${WEBHOOK_CONFIGURATIONS_PATH}`;
    const before = action.action === "create"
      ? ABSENT
      : action.object.metadata?.resourceVersion ?? "";
    const { client, log } = this.#options;
    return {
      fingerprint: () => `${action.action}:${JSON.stringify(action.object)}`,
      expect: before,
      work: async (signal) => {
        try {
          if (action.action === "create") {
            await client.request("POST", collection, {
              body: action.object,
              signal,
            }).catch(async (error) => {
              throw await foreignConfigurationError(error, {
                client,
                url: `${collection}/${name}`,
                signal,
              });
            });
          } else if (action.action === "update") {
            await client.request("PUT", `${collection}/${name}`, {
              body: action.object,
              signal,
            });
          } else {
            await deleteIgnoringNotFound(client, `${collection}/${name}`, {
              resourceVersion: before,
              signal,
            });
          }
        } catch (error) {
          this.#options.onWritten?.("configuration", error);
          log.warn("cannot write webhook configuration", {
            cluster: action.cluster,
            ...(action.workspace === undefined
              ? {}
              : { workspace: action.workspace }),
            action: action.action,
            error,
          });
          throw error;
        }
        this.#options.onWritten?.("configuration");
        log.info("webhook configuration written", {
          cluster: action.cluster,
          ...(action.workspace === undefined
            ? {}
            : { workspace: action.workspace }),
          action: action.action,
        });
        if (action.action === "update") {
          this.#refreshLater(`${collection}/${name}`, action.cluster);
        }
      },
    };
  }

  /** Touches a changed configuration once more, a few seconds later. */
  #refreshLater(url: string, cluster: string): void {
    const timer = setTimeout(async () => {
      this.#refreshTimers.delete(timer);
      if (this.#stopped) return;
      try {
        await this.#options.client.request("PATCH", url, {
          body: {
            metadata: {
              annotations: { [REFRESHED_ANNOTATION]: new Date().toISOString() },
            },
          },
          contentType: "application/merge-patch+json",
        });
        this.#options.log.debug("webhook configuration refreshed", { cluster });
      } catch (error) {
        // Gone or changed meanwhile: the next write is the next event.
        this.#options.log.debug("cannot refresh webhook configuration", {
          cluster,
          error,
        });
      }
    }, this.#options.refreshAfterMs ?? 3_000);
    this.#refreshTimers.add(timer);
  }

  #statusWrite(action: StatusAction): Queued {
    const collection = action.namespace === undefined
      ? PLURAL
      : `namespaces/${pathSegment(action.namespace)}/${LOCK_PLURAL}`;
    const url = `${
      clusterUrl(action.endpoint, action.cluster)
    }/apis/${GROUP}/${VERSION}/${collection}/${
      pathSegment(action.name)
    }/status`;
    return {
      // Transition times move with the clock: they do not make new work.
      fingerprint: () =>
        JSON.stringify(
          action.status.conditions?.map((c) => ({
            ...c,
            lastTransitionTime: "",
          })),
        ),
      expect: action.resourceVersion,
      work: async (signal) => {
        try {
          await this.#options.client.request("PATCH", url, {
            body: { status: action.status },
            contentType: "application/merge-patch+json",
            signal,
          });
        } catch (error) {
          if (error instanceof KubeApiError && error.notFound) return;
          this.#options.onWritten?.("status", error);
          this.#options.log.warn("cannot write status", {
            cluster: action.cluster,
            ...(action.namespace === undefined
              ? {}
              : { namespace: action.namespace }),
            name: action.name,
            error,
          });
          throw error;
        }
        this.#options.onWritten?.("status");
      },
    };
  }

  /** Drops the expectations the caches now show, or whose deadline passed. */
  #settleExpectations(observed: Observed): void {
    const versions = new Map<string, string>();
    for (const { object } of observed.configurations) {
      versions.set(
        configurationKey(clusterOf(object)),
        object.metadata?.resourceVersion ?? "",
      );
    }
    for (const { object } of observed.rules) {
      versions.set(
        statusKey({
          cluster: clusterOf(object),
          name: object.metadata?.name ?? "",
        }),
        object.metadata?.resourceVersion ?? "",
      );
    }
    for (const { object } of observed.locks ?? []) {
      versions.set(
        statusKey({
          cluster: clusterOf(object),
          name: object.metadata?.name ?? "",
          namespace: object.metadata?.namespace ?? "",
        }),
        object.metadata?.resourceVersion ?? "",
      );
    }
    const now = Date.now();
    for (const [key, expectation] of this.#expectations) {
      const seen = versions.get(key) ?? ABSENT;
      if (seen !== expectation.before || expectation.deadline <= now) {
        this.#expectations.delete(key);
      }
    }
  }

  #expect(key: string, before: string): void {
    this.#expectations.set(key, {
      before,
      deadline: Date.now() + (this.#options.expectationTimeoutMs ?? 10_000),
    });
  }

  /** Asks for a plan when a failed key may be retried or an expectation times out. */
  #scheduleRetry(): void {
    clearTimeout(this.#retryTimer);
    if (this.#stopped) return;
    let at = this.#tasks.nextRetryAt();
    for (const expectation of this.#expectations.values()) {
      if (at === undefined || expectation.deadline < at) {
        at = expectation.deadline;
      }
    }
    if (at === undefined) return;
    this.#retryTimer = setTimeout(
      () => this.#options.onRetry(),
      Math.max(0, at - Date.now()) + 5,
    );
  }
}

async function deleteIgnoringNotFound(
  client: KubeClient,
  url: string,
  options: { resourceVersion: string; signal: AbortSignal },
): Promise<void> {
  try {
    await client.request("DELETE", url, {
      body: {
        apiVersion: "v1",
        kind: "DeleteOptions",
        preconditions: { resourceVersion: options.resourceVersion },
      },
      signal: options.signal,
    });
  } catch (error) {
    if (error instanceof KubeApiError && error.notFound) return;
    throw error;
  }
}

/** Task key prefix of the webhook configuration of a provider cluster. */
const CONFIGURATION_KEY = "vwc/";

function configurationKey(cluster: string): string {
  return `${CONFIGURATION_KEY}${cluster}`;
}

function statusKey(
  action: Pick<StatusAction, "cluster" | "name" | "namespace">,
): string {
  return action.namespace === undefined
    ? `status/${action.cluster}/${action.name}`
    : `status/${action.cluster}/${action.namespace}/${action.name}`;
}

/**
 * A create answered AlreadyExists: when the configuration of that name is
 * ours, the cache is behind (a conflict, retried quietly); when it lacks our
 * label (made by hand, or by another installation), every retry would fail
 * the same way, so the error says what to do, and the rule reports it.
 */
async function foreignConfigurationError(
  error: unknown,
  options: { client: KubeClient; url: string; signal: AbortSignal },
): Promise<unknown> {
  if (
    !(error instanceof KubeApiError) || error.status !== 409 ||
    error.reason !== "AlreadyExists"
  ) return error;
  const existing = await options.client.request<KubeObject>(
    "GET",
    options.url,
    { signal: options.signal },
  ).catch(() => undefined);
  const labels = existing?.metadata?.labels ?? {};
  if (existing === undefined || labels[MANAGED_BY_LABEL] === MANAGED_BY_VALUE) {
    return error;
  }
  const name = existing.metadata?.name ?? "";
  return new Error(
    `a ValidatingWebhookConfiguration named ${name} exists without the ` +
      `label ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}: delete it (the ` +
      "controller then installs its own), or add the label to let the " +
      "controller take it over",
  );
}

function isConflict(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 409;
}
