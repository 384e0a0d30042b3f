/**
 * The controller's reconcile loop. Each pass computes the desired state from
 * scratch ({@linkcode planReconcile}) out of what the watches show, and
 * starts the writes that converge kcp to it: webhook configurations through
 * the dep-ctrl virtual workspace, rule status, and workspace-path
 * resolutions. Writes run per key in the background with per-key backoff,
 * so a failing workspace or rule never delays another. A pass runs after
 * every change, after every write, at each retry time, and every resync
 * period.
 *
 * After a write the key waits until the watch shows it (or a deadline), so
 * the next pass does not repeat the write from a stale cache.
 *
 * @module
 */
import {
  type DependencyRuleParseResult,
  GROUP,
  parseDependencyRule,
  PLURAL,
  RULES_PATH,
  VERSION,
} from "../rules/mod.ts";
import type { BackoffOptions, Logger } from "../runtime/mod.ts";
import {
  clusterOf,
  clusterUrl,
  type Collection,
  type ExportWatcher,
  KubeApiError,
  type KubeClient,
  type KubeObject,
} from "../kcp/mod.ts";
import { KeyedTasks } from "./keyed_tasks.ts";
import {
  type ConfigurationAction,
  type Plan,
  planReconcile,
  type Resolution,
  type StatusAction,
} from "./reconcile_plan.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  WEBHOOK_CONFIGURATIONS_PATH,
  type WebhookClientSettings,
} from "./webhook_config.ts";
import {
  WorkspaceResolutionError,
  type WorkspaceResolver,
} from "./workspace_resolver.ts";

/** The collections the controller follows behind every endpoint. */
export type ControllerCollection = "rules" | "bindings" | "configurations";

/**
 * Where those collections are: every DependencyRule, the export's
 * APIBindings (the virtual workspace serves only those), and the webhook
 * configurations we own (others are never even listed).
 */
export const CONTROLLER_COLLECTIONS: Readonly<
  Record<ControllerCollection, Collection>
> = {
  rules: { path: RULES_PATH },
  bindings: { path: "/apis/apis.kcp.io/v1alpha2/apibindings" },
  configurations: {
    path: WEBHOOK_CONFIGURATIONS_PATH,
    labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
  },
};

/** What the reconciler reports, for metrics. */
export interface ReconcileObserver {
  /** A pass ended; `plan` is undefined if the watches were not synced. */
  passed(plan: Plan | undefined, seconds: number): void;
  /** A write or resolution ended. */
  wrote(kind: "configuration" | "status" | "resolve", error?: unknown): void;
}

/** Options for {@linkcode Reconciler}. */
export interface ReconcilerOptions {
  /** Client for the virtual workspaces. */
  client: KubeClient;
  /** The controller's watches. */
  watcher: ExportWatcher<ControllerCollection>;
  /** Resolves workspace paths. */
  resolver: WorkspaceResolver;
  /** Reads the webhook's URL, CA bundle and timeout (at the first pass, every resync, and after a failed read). */
  readSettings: () => Promise<WebhookClientSettings>;
  /** `<workspace path>:<export name>` of the dep-ctrl export, for messages. */
  exportRef: string;
  /** Where to log. */
  log: Logger;
  /** Metrics. */
  observer?: ReconcileObserver;
  /** Period of full resyncs (paths resolved again, everything compared). */
  resyncPeriodMs: number;
  /** Retry delays per key. @default {initialMs: 500, maxMs: 60_000} */
  backoff?: BackoffOptions;
  /** How long a key waits for the watch to show its write. @default {10_000} */
  expectationTimeoutMs?: number;
}

/** A write we wait to see in the watches. */
interface Expectation {
  /** The resourceVersion (or "absent") the cache showed before the write. */
  before: string;
  /** When to stop waiting. */
  deadline: number;
}

const ABSENT = "absent";

/** Converges webhook configurations and rule status to the rules. */
export class Reconciler {
  readonly #options: ReconcilerOptions;
  readonly #tasks: KeyedTasks;
  readonly #resolutions = new Map<string, Resolution>();
  readonly #expectations = new Map<string, Expectation>();
  #passScheduled = false;
  #passRunning: Promise<void> | undefined;
  #again = false;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #resyncTimer: ReturnType<typeof setInterval> | undefined;
  #stopped = false;
  #started = false;
  /** Set by the periodic resync: resolve every path again (keeping the old answers meanwhile). */
  #refresh = false;
  /** Each rule object's validation, kept as long as the watch cache keeps the object. */
  readonly #parsed = new WeakMap<KubeObject, DependencyRuleParseResult>();
  readonly #parse = (object: KubeObject): DependencyRuleParseResult => {
    let parsed = this.#parsed.get(object);
    if (parsed === undefined) {
      parsed = parseDependencyRule(object);
      this.#parsed.set(object, parsed);
    }
    return parsed;
  };
  /** The webhook settings last read. */
  #settings: WebhookClientSettings | { error: string } | undefined;
  /** The clusters bound to the export at the last pass. */
  #bound = "";

  /** Builds a reconciler; {@linkcode Reconciler.start} runs it. */
  constructor(options: ReconcilerOptions) {
    this.#options = options;
    this.#tasks = new KeyedTasks({
      backoff: options.backoff ?? { initialMs: 500, maxMs: 60_000 },
      onSettled: () => this.trigger(),
    });
  }

  /** Starts reconciling: a pass now, then on every trigger and resync. */
  start(): void {
    this.#started = true;
    this.#resyncTimer = setInterval(() => {
      this.#options.log.debug("periodic resync");
      this.#refresh = true;
      this.trigger();
    }, this.#options.resyncPeriodMs);
    this.trigger();
  }

  /** Asks for a pass soon (coalesced). */
  trigger(): void {
    if (!this.#started || this.#stopped || this.#passScheduled) return;
    this.#passScheduled = true;
    setTimeout(() => {
      this.#passScheduled = false;
      this.#runPass();
    }, 0);
  }

  /** Stops: no new passes or writes; waits for running ones. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#resyncTimer);
    clearTimeout(this.#retryTimer);
    await this.#passRunning;
    await this.#tasks.stop();
  }

  #runPass(): void {
    if (this.#stopped) return;
    if (this.#passRunning !== undefined) {
      this.#again = true;
      return;
    }
    this.#passRunning = this.#pass().catch((error) => {
      this.#options.log.error("reconcile pass failed", { error });
    }).finally(() => {
      this.#passRunning = undefined;
      if (this.#again) {
        this.#again = false;
        this.trigger();
      }
    });
  }

  async #pass(): Promise<void> {
    const started = performance.now();
    const { watcher, log } = this.#options;
    if (!watcher.synced) {
      this.#options.observer?.passed(undefined, 0);
      return;
    }
    const refresh = this.#refresh;
    this.#refresh = false;
    // Read at the first pass, at every resync, and after a failed read.
    if (refresh || this.#settings === undefined || "error" in this.#settings) {
      try {
        this.#settings = await this.#options.readSettings();
      } catch (error) {
        this.#settings = {
          error: `cannot read the webhook settings: ${
            error instanceof Error ? error.message : String(error)
          }`,
        };
      }
    }
    const settings = this.#settings;
    if (this.#stopped) return;
    const installErrors = new Map<string, string>();
    for (const key of this.#tasks.keys()) {
      if (!key.startsWith(CONFIGURATION_KEY)) continue;
      const error = this.#tasks.error(key);
      if (error !== undefined && !isConflict(error)) {
        installErrors.set(
          key.slice(CONFIGURATION_KEY.length),
          errorText(error),
        );
      }
    }
    const configurations = watcher.items("configurations");
    const rules = watcher.items("rules");
    const bindings = watcher.items("bindings");
    const plan = planReconcile({
      rules,
      bindings,
      configurations,
      resolutions: this.#resolutions,
      settings,
      installErrors,
      exportRef: this.#options.exportRef,
      parse: this.#parse,
      now: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    });

    // Expectations: a key waits until the cache shows its last write.
    const cacheVersions = new Map<string, string>();
    for (const { object } of configurations) {
      cacheVersions.set(
        configurationKey(clusterOf(object)),
        object.metadata?.resourceVersion ?? "",
      );
    }
    for (const { object } of rules) {
      cacheVersions.set(
        statusKey(clusterOf(object), object.metadata?.name ?? ""),
        object.metadata?.resourceVersion ?? "",
      );
    }
    const now = Date.now();
    for (const [key, expectation] of this.#expectations) {
      const seen = cacheVersions.get(key) ?? ABSENT;
      if (seen !== expectation.before || expectation.deadline <= now) {
        this.#expectations.delete(key);
      }
    }

    // A new dep-ctrl binding may be a provider workspace that a failing or
    // stale path names (created, or deleted and recreated): retry now.
    const bound = JSON.stringify(
      bindings.map(({ object }) => clusterOf(object)).sort(),
    );
    if (bound !== this.#bound) {
      this.#bound = bound;
      for (const path of this.#resolutions.keys()) {
        this.#tasks.forget(pathKey(path));
      }
    }
    const stale = new Set(plan.stalePaths);
    for (const path of plan.paths) {
      this.#resolve(
        path,
        stale.has(path) ? "stale" : refresh ? "refresh" : "missing",
      );
    }
    for (const action of plan.configurations) this.#writeConfiguration(action);
    for (const action of plan.statuses) this.#writeStatus(action);
    // Forget keys that no longer have work.
    const live = new Set([
      ...plan.configurations.map((a) => configurationKey(a.cluster)),
      ...plan.statuses.map((a) => statusKey(a.cluster, a.name)),
      ...plan.paths.map((p) => pathKey(p)),
    ]);
    for (const key of this.#tasks.keys()) {
      if (!live.has(key)) this.#tasks.forget(key);
    }
    const paths = new Set(plan.paths);
    for (const path of this.#resolutions.keys()) {
      if (!paths.has(path)) this.#resolutions.delete(path);
    }
    this.#scheduleRetry();
    log.debug("reconciled", {
      rules: rules.length,
      configurations: configurations.length,
      writes: plan.configurations.length,
      statusWrites: plan.statuses.length,
    });
    this.#options.observer?.passed(
      plan,
      (performance.now() - started) / 1000,
    );
  }

  /**
   * Resolves a path in the background unless its answer is known; a failed
   * answer is retried with backoff, and a `stale` one (its cluster has no
   * dep-ctrl binding: the workspace may have been recreated) is dropped
   * from the resolver's cache and resolved again, with backoff while it
   * stays the same. `refresh` (the periodic resync) asks the resolver again
   * and keeps the old answer meanwhile.
   */
  #resolve(path: string, mode: "missing" | "refresh" | "stale"): void {
    const stale = mode === "stale";
    const known = this.#resolutions.get(path);
    if (known !== undefined && "cluster" in known && mode === "missing") {
      return;
    }
    this.#tasks.run(pathKey(path), "resolve", async (signal) => {
      if (stale) this.#options.resolver.invalidate(path);
      let resolution: Resolution;
      try {
        resolution = {
          cluster: await this.#options.resolver.resolve(path, { signal }),
        };
      } catch (error) {
        if (!(error instanceof WorkspaceResolutionError)) throw error;
        resolution = {
          reason: error.reason,
          message: error.message,
          definitive: error.reason === "NotFound",
        };
      }
      const before = JSON.stringify(this.#resolutions.get(path));
      const after = JSON.stringify(resolution);
      this.#resolutions.set(path, resolution);
      const failure = "cluster" in resolution ? undefined : resolution.message;
      const failed = failure !== undefined;
      this.#options.observer?.wrote("resolve", failure);
      if (after !== before) {
        this.#options.log[failed ? "warn" : "info"](
          "resolved workspace path",
          { path, ...resolution },
        );
      }
      // Failing (or still stale) answers are retried after the key's backoff.
      if (failed) throw new Error(failure);
      if (stale && after === before) {
        throw new Error(`workspace ${path} still has no dep-ctrl binding`);
      }
    });
  }

  #writeConfiguration(action: ConfigurationAction): void {
    const key = configurationKey(action.cluster);
    if (this.#expectations.has(key)) return;
    const fingerprint = `${action.action}:${JSON.stringify(action.object)}`;
    const name = action.object.metadata?.name ?? "";
    const collection = `${
      clusterUrl(action.endpoint, action.cluster)
    }${WEBHOOK_CONFIGURATIONS_PATH}`;
    const before = action.action === "create"
      ? ABSENT
      : action.object.metadata?.resourceVersion ?? "";
    this.#tasks.run(key, fingerprint, async (signal) => {
      const { client, log } = this.#options;
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
        this.#options.observer?.wrote("configuration", error);
        log.warn("cannot write webhook configuration", {
          cluster: action.cluster,
          action: action.action,
          error,
        });
        throw error;
      }
      this.#expect(key, before);
      this.#options.observer?.wrote("configuration");
      log.info("webhook configuration written", {
        cluster: action.cluster,
        action: action.action,
      });
    });
  }

  #writeStatus(action: StatusAction): void {
    const key = statusKey(action.cluster, action.name);
    if (this.#expectations.has(key)) return;
    const url = `${
      clusterUrl(action.endpoint, action.cluster)
    }/apis/${GROUP}/${VERSION}/${PLURAL}/${action.name}/status`;
    // Transition times move with the clock: they do not make new work.
    const fingerprint = JSON.stringify(
      action.status.conditions?.map((c) => ({ ...c, lastTransitionTime: "" })),
    );
    this.#tasks.run(key, fingerprint, async (signal) => {
      try {
        await this.#options.client.request("PATCH", url, {
          body: { status: action.status },
          contentType: "application/merge-patch+json",
          signal,
        });
      } catch (error) {
        if (error instanceof KubeApiError && error.notFound) return;
        this.#options.observer?.wrote("status", error);
        this.#options.log.warn("cannot write rule status", {
          cluster: action.cluster,
          name: action.name,
          error,
        });
        throw error;
      }
      this.#expect(key, action.resourceVersion);
      this.#options.observer?.wrote("status");
    });
  }

  #expect(key: string, before: string): void {
    this.#expectations.set(key, {
      before,
      deadline: Date.now() + (this.#options.expectationTimeoutMs ?? 10_000),
    });
  }

  #scheduleRetry(): void {
    clearTimeout(this.#retryTimer);
    let at = this.#tasks.nextRetryAt();
    for (const expectation of this.#expectations.values()) {
      if (at === undefined || expectation.deadline < at) {
        at = expectation.deadline;
      }
    }
    if (at === undefined) return;
    this.#retryTimer = setTimeout(
      () => this.trigger(),
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

function statusKey(cluster: string, name: string): string {
  return `status/${cluster}/${name}`;
}

function pathKey(path: string): string {
  return `path/${path}`;
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

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
