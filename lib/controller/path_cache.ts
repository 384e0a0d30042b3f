/**
 * The controller's one cache of workspace paths: which logical cluster each
 * path a rule names resolves to, or why it does not. The reconciler says
 * which paths it wants at every pass; the cache resolves them in the
 * background (one task per path, per-path backoff after a failure, retried
 * on its own timer), resolves every wanted path again on a resync while
 * keeping the old answers, and calls `onChange` when an answer changes, as
 * the watches do.
 *
 * A path whose cluster has no dep-ctrl binding (`stale`: the workspace may
 * have been deleted and recreated) is dropped from the resolver and asked
 * again, with backoff while the answer stays the same. When the set of bound
 * clusters changes, failing paths are retried at once: a new binding may be
 * the workspace a failing path names.
 *
 * @module
 */
import type { BackoffOptions, Logger } from "../runtime/mod.ts";
import { KeyedTasks } from "../runtime/mod.ts";
import {
  WorkspaceResolutionError,
  type WorkspaceResolver,
} from "./workspace_resolver.ts";

/**
 * The outcome of resolving one workspace path: its logical cluster, or why
 * not, and whether that answer is `definitive` (the workspace does not
 * exist) or may change (forbidden, unreachable).
 */
export type Resolution =
  | { cluster: string }
  | { reason: string; message: string; definitive: boolean };

/** Options for {@linkcode PathCache}. */
export interface PathCacheOptions {
  /** Resolves one path (and shares parent lookups between paths). */
  resolver: Pick<WorkspaceResolver, "resolve" | "invalidate">;
  /** Where to log answers that change. */
  log: Logger;
  /** Called when an answer changes (not when it is asked again and stays). */
  onChange: () => void;
  /** Called after every resolution, with the failure's message if it failed. */
  onResolved?: (failure: string | undefined) => void;
  /** Retry delays per path. @default {initialMs: 500, maxMs: 60_000} */
  backoff?: BackoffOptions;
}

/** What the reconciler wants at one pass. */
export interface WantedPaths {
  /** Every path a valid rule names. */
  paths: readonly string[];
  /** Wanted paths whose cluster has no dep-ctrl binding. */
  stale: readonly string[];
  /** The logical clusters bound to the dep-ctrl export. */
  bound: readonly string[];
}

/** Resolves the wanted workspace paths in the background and keeps the answers. */
export class PathCache {
  readonly #options: PathCacheOptions;
  readonly #tasks: KeyedTasks;
  readonly #answers = new Map<string, Resolution>();
  #wanted: WantedPaths = { paths: [], stale: [], bound: [] };
  #bound = "";
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** Builds an empty cache; it resolves nothing until {@linkcode PathCache.want} is called. */
  constructor(options: PathCacheOptions) {
    this.#options = options;
    this.#tasks = new KeyedTasks({
      backoff: options.backoff ?? { initialMs: 500, maxMs: 60_000 },
      onSettled: () => this.#settled(),
    });
  }

  /** The answers so far; a wanted path without one is still being resolved. */
  resolutions(): ReadonlyMap<string, Resolution> {
    return this.#answers;
  }

  /**
   * Sets the wanted paths: starts resolving those without an answer (and
   * the stale ones again), forgets the answers of paths no longer wanted.
   */
  want(wanted: WantedPaths): void {
    if (this.#stopped) return;
    this.#wanted = wanted;
    const bound = [...wanted.bound].sort().join("\n");
    if (bound !== this.#bound) {
      this.#bound = bound;
      // A new or gone binding may be the workspace a path names: no backoff.
      for (const key of this.#tasks.keys()) this.#tasks.forget(key);
    }
    const paths = new Set(wanted.paths);
    for (const path of this.#answers.keys()) {
      if (!paths.has(path)) this.#answers.delete(path);
    }
    for (const key of this.#tasks.keys()) {
      if (!paths.has(key)) this.#tasks.forget(key);
    }
    this.#startAll();
  }

  /** Resolves every wanted path again, keeping the old answers meanwhile (the periodic resync). */
  refresh(): void {
    this.#startAll({ refresh: true });
  }

  /** Stops resolving and waits for running resolutions. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    await this.#tasks.stop();
  }

  #startAll(options: { refresh?: boolean } = {}): void {
    const stale = new Set(this.#wanted.stale);
    for (const path of this.#wanted.paths) {
      const mode = stale.has(path)
        ? "stale"
        : options.refresh
        ? "refresh"
        : "missing";
      const known = this.#answers.get(path);
      if (mode === "missing" && known !== undefined && "cluster" in known) {
        continue;
      }
      this.#start(path, mode);
    }
    this.#scheduleRetry();
  }

  #start(path: string, mode: "missing" | "refresh" | "stale"): void {
    const stale = mode === "stale";
    this.#tasks.run(path, "resolve", async (signal) => {
      const { resolver, log } = this.#options;
      if (stale) resolver.invalidate(path);
      let answer: Resolution;
      try {
        answer = { cluster: await resolver.resolve(path, { signal }) };
      } catch (error) {
        if (!(error instanceof WorkspaceResolutionError)) throw error;
        answer = {
          reason: error.reason,
          message: error.message,
          definitive: error.reason === "NotFound",
        };
      }
      if (this.#stopped) return;
      const before = JSON.stringify(this.#answers.get(path));
      const after = JSON.stringify(answer);
      const failure = "cluster" in answer ? undefined : answer.message;
      if (this.#wanted.paths.includes(path)) this.#answers.set(path, answer);
      this.#options.onResolved?.(failure);
      if (after !== before) {
        log[failure === undefined ? "info" : "warn"](
          "resolved workspace path",
          { path, ...answer },
        );
        this.#options.onChange();
      }
      // Failing (or still stale) answers are retried after the path's backoff.
      if (failure !== undefined) throw new Error(failure);
      if (stale && after === before) {
        throw new Error(`workspace ${path} still has no dep-ctrl binding`);
      }
    });
  }

  #settled(): void {
    if (this.#stopped) return;
    this.#scheduleRetry();
  }

  /** Wakes up when the first failed path may be tried again. */
  #scheduleRetry(): void {
    clearTimeout(this.#retryTimer);
    const at = this.#tasks.nextRetryAt();
    if (at === undefined || this.#stopped) return;
    this.#retryTimer = setTimeout(
      () => this.#startAll(),
      Math.max(0, at - Date.now()) + 5,
    );
  }
}
