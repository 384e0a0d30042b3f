/**
 * Background tasks by key, as a controller's work queue runs them: at most
 * one task per key at a time, and after a failure the same work is not
 * tried again before a per-key, capped, exponential backoff has passed (a
 * failing key never delays the others). Different work for a failing key
 * (another fingerprint) starts at once.
 *
 * @module
 */
import { Backoff, type BackoffOptions } from "./backoff.ts";

/** Options for {@linkcode KeyedTasks}. */
export interface KeyedTasksOptions {
  /** Retry delays per key. */
  backoff?: BackoffOptions;
  /** Called after every task ended (successfully or not). */
  onSettled: () => void;
  /** The clock. @default {Date.now} */
  now?: () => number;
}

/** The state of one key. */
interface KeyState {
  running: boolean;
  backoff: Backoff;
  /** Set after a failure. */
  failure?: { fingerprint: string; error: unknown; retryAt: number };
}

/** Runs keyed background work with single flight and per-key backoff. */
export class KeyedTasks {
  readonly #options: KeyedTasksOptions;
  readonly #keys = new Map<string, KeyState>();
  readonly #running = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  readonly #now: () => number;

  /** Builds an empty set of tasks. */
  constructor(options: KeyedTasksOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Starts `work` for `key` unless a task for the key is running, or the
   * same work (same `fingerprint`) failed and its retry time has not come.
   *
   * @returns Whether the work started.
   */
  run(
    key: string,
    fingerprint: string,
    work: (signal: AbortSignal) => Promise<void>,
  ): boolean {
    if (this.#abort.signal.aborted) return false;
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = { running: false, backoff: new Backoff(this.#options.backoff) };
      this.#keys.set(key, state);
    }
    if (state.running) return false;
    const failure = state.failure;
    if (
      failure !== undefined && failure.fingerprint === fingerprint &&
      failure.retryAt > this.#now()
    ) {
      return false;
    }
    state.running = true;
    const current = state;
    const task = (async () => {
      try {
        await work(this.#abort.signal);
        delete current.failure;
        current.backoff.reset();
      } catch (error) {
        current.failure = {
          fingerprint,
          error,
          retryAt: this.#now() + current.backoff.next(),
        };
      } finally {
        current.running = false;
      }
    })();
    this.#running.add(task);
    task.then(() => {
      this.#running.delete(task);
      if (!this.#abort.signal.aborted) this.#options.onSettled();
    });
    return true;
  }

  /** Whether a task for `key` is running. */
  running(key: string): boolean {
    return this.#keys.get(key)?.running ?? false;
  }

  /** The error of the last task for `key`, if it failed. */
  error(key: string): unknown {
    return this.#keys.get(key)?.failure?.error;
  }

  /** Forgets a key that has no work any more (keeps it if running). */
  forget(key: string): void {
    if (!this.#keys.get(key)?.running) this.#keys.delete(key);
  }

  /** The keys known (running, failed or succeeded and not forgotten). */
  keys(): string[] {
    return [...this.#keys.keys()];
  }

  /**
   * The earliest time a failed key may be retried, if any. Running keys
   * are left out: their end calls `onSettled` anyway.
   */
  nextRetryAt(): number | undefined {
    let earliest: number | undefined;
    for (const state of this.#keys.values()) {
      if (state.running) continue;
      const at = state.failure?.retryAt;
      if (at !== undefined && (earliest === undefined || at < earliest)) {
        earliest = at;
      }
    }
    return earliest;
  }

  /** Aborts running tasks (through their signal) and waits for them. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#running);
  }
}
