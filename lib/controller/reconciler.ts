/**
 * The controller's reconcile loop: caches, then a pure plan, then writes.
 * Each pass reads what the caches show (the watches, the four read caches:
 * workspace paths, APIExports, Lock targets and the webhook's access, and
 * the webhook settings), computes the desired state from scratch
 * ({@linkcode planReconcile}, with the reconciler's own {@linkcode PlanMemo}
 * of what earlier passes found), tells the read caches what is wanted and
 * hands the writes to the applier. A pass runs after every change the
 * caches report, when the applier asks (a retry, a failed write), and every
 * resync period; passes never overlap and triggers coalesce.
 *
 * @module
 */
import {
  type DependencyRuleParseResult,
  parseDependencyRule,
  RULES_PATH,
} from "../rules/mod.ts";
import { type BackoffOptions, errorText, type Logger } from "../runtime/mod.ts";
import type {
  Collection,
  EndpointObject,
  ExportWatcher,
  KubeClient,
  KubeObject,
} from "../kcp/mod.ts";
import { Applier } from "./applier.ts";
import { PathCache } from "./path_cache.ts";
import { LOCKS_PATH } from "../locks/mod.ts";
import type { LockTargetAnswer, LockTargetRef } from "./lock_targets.ts";
import { PassScheduler, ReadCache, type Reading } from "../runtime/mod.ts";
import { AccessWait } from "./access_wait.ts";
import { ExpiryWake } from "./expiry_wake.ts";
import { readCache } from "./read_caches.ts";
import {
  type ExportAnswer,
  exportKey,
  type ExportRef,
} from "../exports/mod.ts";
import { type Plan, PlanMemo, planReconcile } from "./reconcile_plan.ts";
import { accessKey, type AccessRef } from "./webhook_access.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  WEBHOOK_CONFIGURATIONS_PATH,
  type WebhookClientSettings,
} from "./webhook_config.ts";
import type { WorkspaceResolver } from "./workspace_resolver.ts";

/** The collections the controller follows behind every endpoint. */
export type ControllerCollection =
  | "rules"
  | "locks"
  | "bindings"
  | "configurations";

/**
 * Where those collections are: every DependencyRule and Lock, the export's
 * APIBindings (the virtual workspace serves only those), and the webhook
 * configurations we own (others are never even listed).
 */
export const CONTROLLER_COLLECTIONS: Readonly<
  Record<ControllerCollection, Collection>
> = {
  rules: { path: RULES_PATH },
  locks: { path: LOCKS_PATH },
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
  /** The number of writes running changed. */
  writing?(count: number): void;
}

/** Options for {@linkcode Reconciler}. */
export interface ReconcilerOptions {
  /** Client for the virtual workspaces. */
  client: KubeClient;
  /** The controller's watches. */
  watcher: ExportWatcher<ControllerCollection>;
  /** Resolves workspace paths. */
  resolver: WorkspaceResolver;
  /**
   * Reads what an APIExport serves (see `export_reader.ts`), to check each
   * rule's types against the exports it names.
   * @default {no checks}
   */
  readExport?: (ref: ExportRef, signal: AbortSignal) => Promise<ExportAnswer>;
  /**
   * Asks a Lock's workspace what it serves of the Lock's target type and
   * where it comes from (see `lock_targets.ts`), to check that the Lock is
   * placed where kcp calls it.
   * @default {no checks}
   */
  readLockTarget?: (
    ref: LockTargetRef,
    signal: AbortSignal,
  ) => Promise<LockTargetAnswer>;
  /**
   * Asks kcp whether the webhook's identity may make a read a rule needs
   * (see `webhook_access.ts`), with the webhook's user name for messages.
   * @default {no checks}
   */
  webhookAccess?: {
    read: (ref: AccessRef, signal: AbortSignal) => Promise<boolean>;
    user: string;
  };
  /**
   * Whether the webhook keeps its dependents index (`--dependents-index`):
   * then whether it may feed it is asked too, and shown in each installed
   * rule's `Indexed` condition (see `index_access.ts`). @default {false}
   */
  dependentsIndex?: boolean;
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
  /** Writes running at once. @default {8} */
  maxWritesInFlight?: number;
  /** Least time between the starts of two passes, in milliseconds. @default {200} */
  minPassIntervalMs?: number;
  /**
   * Most time between the starts of two passes while changes keep coming
   * (see `PassScheduler`'s `maxIntervalMs`). @default {2_000}
   */
  maxPassIntervalMs?: number;
  /**
   * How long an installed rule's status waits for kcp's first answer about
   * a read the webhook must make once it is sent (see `access_wait.ts`).
   * @default {20_000}
   */
  accessWaitMs?: number;
  /**
   * How long it waits at most from the pass that first asked, sent or not
   * (at least `accessWaitMs`). @default {60_000}
   */
  accessMaxWaitMs?: number;
}

/**
 * How long a status waits for the first answers about the webhook's reads
 * once they are sent: longer than one read that times out (the client's
 * 10 s) and its retry.
 */
const ACCESS_WAIT_MS = 20_000;
/** How long a status waits for them at most, sent or still in line. */
const ACCESS_MAX_WAIT_MS = 60_000;

/**
 * How many passes in a row may start without the least spacing (see
 * `PassScheduler`'s `quickPasses`): the steps of one change, from a rule
 * created to its status written.
 */
const QUICK_PASSES = 10;

/**
 * How long a workspace path or an export no rule wants any more is still
 * resolved and read: a rule deleted and created again (a re-apply) finds
 * them read, and its configuration is written in its first pass instead of
 * after a pass for each read.
 */
const KEEP_READS_MS = 30_000;

/** The paths or exports wanted lately, by key, and until when. */
type Kept<T> = Map<string, { value: T; until: number }>;

/**
 * `wanted`, and what was wanted within `KEEP_READS_MS` before `now`: notes
 * the wanted ones in `kept` and forgets those kept long enough.
 */
function keepWanted<T>(
  kept: Kept<T>,
  wanted: readonly T[],
  key: (value: T) => string,
  now: number,
): T[] {
  for (const value of wanted) {
    kept.set(key(value), { value, until: now + KEEP_READS_MS });
  }
  const values: T[] = [];
  for (const [k, { value, until }] of kept) {
    if (until < now) kept.delete(k);
    else values.push(value);
  }
  return values;
}

/** The webhook settings last read, or why they could not be. */
type Settings = WebhookClientSettings | { error: string };

/** Converges webhook configurations and rule status to the rules. */
export class Reconciler {
  readonly #options: ReconcilerOptions;
  readonly #paths: PathCache;
  readonly #exports: ReadCache<ExportRef, ExportAnswer> | undefined;
  readonly #lockTargets: ReadCache<LockTargetRef, LockTargetAnswer> | undefined;
  readonly #access: ReadCache<AccessRef, boolean> | undefined;
  readonly #applier: Applier;
  /**
   * What the plan remembers between this reconciler's passes: its own, so
   * a new leader's reconciler starts from nothing the old one found.
   */
  readonly #memo = new PlanMemo();
  /** Each rule object's validation, kept as long as the watch cache keeps the object. */
  readonly #parsed = new WeakMap<KubeObject, DependencyRuleParseResult>();
  /**
   * The last validation of each rule by uid, with the generation it was
   * made at: a new version of a rule whose generation did not move (its
   * status was written) has the same spec, so its validation is the earlier
   * one (the plan reads only a rule's name and spec from it). Rules gone
   * are dropped when the map outgrows the rules, and all once the rules
   * are listed again (a list may show fields the watch's schema left out).
   */
  readonly #specs = new Map<string, ParsedSpec>();
  #ruleLists = 0; // the watcher's lists of the rules, as #specs knows them
  /** How long statuses wait for the answers about the webhook's reads. */
  readonly #accessWait: AccessWait;
  #accessTimer: ReturnType<typeof setTimeout> | undefined;
  /** The reads about the webhook's access the last pass wanted. */
  #accessWanted: readonly AccessRef[] | undefined;
  /** The paths and exports wanted lately (see `KEEP_READS_MS`). */
  readonly #keptPaths: Kept<string> = new Map();
  readonly #keptExports: Kept<ExportRef> = new Map();
  /** Runs the passes: coalesced, never two at once, spaced apart. */
  readonly #passes: PassScheduler;
  #settings: Settings | undefined;
  #resync = false;
  #resyncTimer: ReturnType<typeof setInterval> | undefined;
  /** Plans again when the next Lock expires. */
  readonly #expiryWake = new ExpiryWake(() => this.trigger());
  #started = false;
  #stopped = false;

  /** Builds a reconciler; {@linkcode Reconciler.start} runs it. */
  constructor(options: ReconcilerOptions) {
    this.#options = options;
    const { observer } = options;
    // Passes start at least minIntervalMs apart: a burst of changes
    // (thousands of writes showing up in the watches) shares passes, and
    // while changes keep coming (a cold start) the spacing grows to
    // maxPassIntervalMs, so a pass over thousands of rules runs tens of
    // times, not hundreds. A lone change takes a few passes in a row (its
    // path resolved, its export read, its configuration showing up): those
    // start without the spacing, so a new rule is enforced in tens of
    // milliseconds rather than after a spacing at each step.
    this.#passes = new PassScheduler(() => this.#pass(), {
      minIntervalMs: options.minPassIntervalMs ?? 200,
      quickPasses: QUICK_PASSES,
      maxIntervalMs: options.maxPassIntervalMs ?? 2_000,
      onError: (error) => {
        this.#options.log.error("reconcile pass failed", { error });
      },
    });
    const backoff = options.backoff ?? { initialMs: 500, maxMs: 60_000 };
    this.#accessWait = new AccessWait({
      waitMs: options.accessWaitMs ?? ACCESS_WAIT_MS,
      maxWaitMs: Math.max(
        options.accessWaitMs ?? ACCESS_WAIT_MS,
        options.accessMaxWaitMs ?? ACCESS_MAX_WAIT_MS,
      ),
    });
    this.#paths = new PathCache({
      resolver: options.resolver,
      log: options.log,
      backoff,
      onChange: () => this.trigger(),
      onResolved: (failure) => observer?.wrote("resolve", failure),
    });
    // The background reads, each kind built from its row of the table
    // (read_caches.ts).
    const reads = {
      log: options.log,
      memo: this.#memo,
      backoff,
      onChange: () => this.trigger(),
    };
    this.#exports = readCache("exports", {
      read: options.readExport,
      ...reads,
    });
    this.#lockTargets = readCache("lockTargets", {
      read: options.readLockTarget,
      ...reads,
    });
    this.#access = readCache("access", {
      read: options.webhookAccess?.read,
      onStart: (ref) => this.#accessWait.sent(accessKey(ref, this.#memo)),
      ...reads,
    });
    this.#applier = new Applier({
      client: options.client,
      log: options.log,
      backoff,
      onRetry: () => this.trigger(),
      onWritten: (kind, error) => observer?.wrote(kind, error),
      onInFlight: (count) => observer?.writing?.(count),
      ...(options.expectationTimeoutMs === undefined
        ? {}
        : { expectationTimeoutMs: options.expectationTimeoutMs }),
      ...(options.maxWritesInFlight === undefined
        ? {}
        : { maxInFlight: options.maxWritesInFlight }),
    });
  }

  /** Starts reconciling: a pass now, then on every trigger and resync. */
  start(): void {
    this.#started = true;
    this.#resyncTimer = setInterval(() => {
      this.#options.log.debug("periodic resync");
      this.#resync = true;
      this.trigger();
    }, this.#options.resyncPeriodMs);
    this.trigger();
  }

  /** Asks for a pass soon (coalesced; never two at once, at most one per `minPassIntervalMs`). */
  trigger(): void {
    if (!this.#started) return;
    this.#passes.trigger();
  }

  /** Stops: no new passes or writes; waits for running ones. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#resyncTimer);
    clearTimeout(this.#accessTimer);
    this.#expiryWake.stop();
    await this.#passes.stop();
    await Promise.all([
      this.#paths.stop(),
      this.#exports?.stop(),
      this.#lockTargets?.stop(),
      this.#access?.stop(),
      this.#applier.stop(),
    ]);
  }

  async #pass(): Promise<void> {
    const started = performance.now();
    const { watcher, observer } = this.#options;
    if (!watcher.synced) return observer?.passed(undefined, 0);
    const resync = this.#resync;
    this.#resync = false;
    const settings = await this.#readSettings(resync);
    if (this.#stopped) return;
    const rules = watcher.items("rules");
    const locks = watcher.items("locks");
    const ruleLists = watcher.lists("rules");
    if (ruleLists !== this.#ruleLists) this.#specs.clear();
    this.#ruleLists = ruleLists;
    const bindings = watcher.items("bindings");
    const configurations = watcher.items("configurations");
    const plan = planReconcile({
      rules,
      locks,
      bindings,
      configurations,
      resolutions: this.#paths.resolutions(),
      ...(this.#exports === undefined
        ? {}
        : { exports: this.#exports.readings() }),
      ...(this.#lockTargets === undefined
        ? {}
        : { lockTargets: this.#lockTargets.readings() }),
      ...(this.#access === undefined ||
          this.#options.webhookAccess === undefined
        ? {}
        : {
          webhookAccess: {
            readings: this.#accessReadings(this.#access),
            user: this.#options.webhookAccess.user,
          },
        }),
      ...(this.#options.dependentsIndex === true
        ? { dependentsIndex: true }
        : {}),
      settings,
      installErrors: this.#applier.failures(),
      exportRef: this.#options.exportRef,
      parse: (object) => this.#parse(object),
      now: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    }, this.#memo);
    const now = performance.now();
    this.#paths.want({
      paths: keepWanted(this.#keptPaths, plan.paths, (p) => p, now),
      stale: plan.stalePaths,
      bound: plan.boundClusters,
    });
    this.#exports?.want(
      keepWanted(this.#keptExports, plan.exports, exportKey, now),
    );
    this.#lockTargets?.want(plan.lockTargets);
    if (this.#specs.size > rules.length) this.#forgetSpecs(rules);
    // The same list while the rules are the same: nothing new to read.
    if (plan.webhookAccess !== this.#accessWanted) {
      this.#accessWanted = plan.webhookAccess;
      this.#access?.want(plan.webhookAccess);
      this.#accessWait.want(
        plan.webhookAccess.map((ref) => accessKey(ref, this.#memo)),
      );
    }
    if (resync) {
      this.#paths.refresh();
      this.#exports?.refresh();
      this.#lockTargets?.refresh();
      this.#access?.refresh();
    }
    this.#applier.apply(plan, { configurations, rules, locks });
    this.#expiryWake.set(plan.nextLockExpiry, { now: Date.now() });
    this.#options.log.debug("reconciled", {
      rules: rules.length,
      configurations: configurations.length,
      writes: plan.configurations.length,
      statusWrites: plan.statuses.length,
      writesInFlight: this.#applier.inFlight,
    });
    observer?.passed(plan, (performance.now() - started) / 1000);
  }

  /** The webhook settings: read at the first pass, every resync, and after a failed read. */
  async #readSettings(resync: boolean): Promise<Settings> {
    if (resync || this.#settings === undefined || "error" in this.#settings) {
      try {
        this.#settings = await this.#options.readSettings();
      } catch (error) {
        this.#settings = {
          error: `cannot read the webhook settings: ${errorText(error)}`,
        };
      }
    }
    return this.#settings;
  }

  /**
   * The answers about the webhook's reads as the plan is to see them (see
   * `access_wait.ts`), with a pass asked for when the next wait ends.
   */
  #accessReadings(
    cache: ReadCache<AccessRef, boolean>,
  ): ReadonlyMap<string, Reading<boolean>> {
    const { readings, nextAt } = this.#accessWait.view(cache.readings());
    clearTimeout(this.#accessTimer);
    this.#accessTimer = nextAt === undefined ? undefined : setTimeout(
      () => this.trigger(),
      Math.max(0, nextAt - performance.now()) + 5,
    );
    return readings;
  }

  #parse(object: KubeObject): DependencyRuleParseResult {
    let parsed = this.#parsed.get(object);
    if (parsed !== undefined) return parsed;
    const { uid, generation } = object.metadata ?? {};
    const earlier = uid === undefined ? undefined : this.#specs.get(uid);
    if (earlier !== undefined && earlier.generation === generation) {
      parsed = earlier.parsed;
    } else {
      parsed = parseDependencyRule(object);
      if (uid !== undefined && generation !== undefined) {
        this.#specs.set(uid, { generation, parsed });
      }
    }
    this.#parsed.set(object, parsed);
    return parsed;
  }

  /** Drops the validations of rules no longer watched. */
  #forgetSpecs(rules: readonly EndpointObject[]): void {
    const uids = new Set(rules.map(({ object }) => object.metadata?.uid));
    for (const uid of this.#specs.keys()) {
      if (!uids.has(uid)) this.#specs.delete(uid);
    }
  }
}

/** A rule's validation, and the generation it was made at. */
interface ParsedSpec {
  generation: number;
  parsed: DependencyRuleParseResult;
}
