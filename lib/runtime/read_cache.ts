/**
 * A cache of background reads by key, as the controller keeps what it must
 * read from kcp besides its watches (the APIExports rules name, where the
 * types Locks name come from). The reconciler says which references it
 * wants at every pass; the cache reads them in the background (one task per
 * key, per-key backoff after a failed read, retried on its own timer),
 * reads every wanted reference again on a resync, and calls `onChange` when
 * what it knows changes.
 *
 * A failed read keeps the last answer and records the failure next to it:
 * the plan goes on deciding from what was last read.
 *
 * @example Usage
 * ```ts
 * import { ReadCache } from "./read_cache.ts";
 * import { createLogger } from "./log.ts";
 *
 * const cache = new ReadCache<{ name: string }, number>({
 *   key: (ref) => ref.name,
 *   read: (ref) => Promise.resolve(ref.name.length),
 *   log: createLogger({ level: "error" }),
 *   what: "length",
 *   onChange: () => {},
 * });
 * cache.want([{ name: "abc" }]);
 * await cache.stop();
 * ```
 *
 * @module
 */
import type { BackoffOptions } from "./backoff.ts";
import type { Logger } from "./log.ts";
import { errorText } from "./values.ts";
import { KeyedTasks } from "./keyed_tasks.ts";

/** The last answer read for a reference, and the last read's failure if it failed. */
export interface Reading<A> {
  /** The last answer read, if any read succeeded. */
  answer?: A;
  /** Why the last read failed, if it did. */
  error?: string;
}

/** Options for {@linkcode ReadCache}. */
export interface ReadCacheOptions<R, A> {
  /** The key of a reference in {@linkcode ReadCache.readings}. */
  key: (ref: R) => string;
  /** Reads one reference; throws when it cannot. */
  read: (ref: R, signal: AbortSignal) => Promise<A>;
  /** Where to log answers that change. */
  log: Logger;
  /** What is read, for the log line (`read <what>`). */
  what: string;
  /** The fields of the log line that describe a reference and its reading. */
  describe?: (ref: R, reading: Reading<A>) => Record<string, unknown>;
  /** Called when what is known of a reference changes. */
  onChange: () => void;
  /** Retry delays per reference. @default {initialMs: 500, maxMs: 60_000} */
  backoff?: BackoffOptions;
  /**
   * Answers to read again every `everyMs`, besides the resync: those
   * expected to change soon (a permission not granted yet), which a user
   * fixes and waits for. @default {none}
   */
  recheck?: { when: (answer: A) => boolean; everyMs: number };
}

/** Reads the wanted references in the background and keeps the answers. */
export class ReadCache<R, A> {
  readonly #options: ReadCacheOptions<R, A>;
  readonly #tasks: KeyedTasks;
  readonly #readings = new Map<string, Reading<A>>();
  #wanted = new Map<string, R>();
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #recheckTimer: ReturnType<typeof setInterval> | undefined;
  #stopped = false;

  /** Builds an empty cache; it reads nothing until {@linkcode ReadCache.want} is called. */
  constructor(options: ReadCacheOptions<R, A>) {
    this.#options = options;
    this.#tasks = new KeyedTasks({
      backoff: options.backoff ?? { initialMs: 500, maxMs: 60_000 },
      onSettled: () => this.#scheduleRetry(),
    });
    const { recheck } = options;
    this.#recheckTimer = recheck === undefined
      ? undefined
      : setInterval(() => this.#recheck(recheck.when), recheck.everyMs);
  }

  /** What is known per key; a wanted reference without an entry is being read. */
  readings(): ReadonlyMap<string, Reading<A>> {
    return this.#readings;
  }

  /** Sets the wanted references: reads those not read yet, forgets the others. */
  want(refs: readonly R[]): void {
    if (this.#stopped) return;
    this.#wanted = new Map(refs.map((ref) => [this.#options.key(ref), ref]));
    for (const key of [...this.#readings.keys()]) {
      if (!this.#wanted.has(key)) this.#readings.delete(key);
    }
    for (const key of this.#tasks.keys()) {
      if (!this.#wanted.has(key)) this.#tasks.forget(key);
    }
    this.#startAll(false);
  }

  /** Reads every wanted reference again, keeping the old answers meanwhile (the periodic resync). */
  refresh(): void {
    this.#startAll(true);
  }

  /** Stops reading and waits for running reads. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#recheckTimer);
    await this.#tasks.stop();
  }

  #startAll(again: boolean): void {
    if (this.#stopped) return;
    for (const [key, ref] of this.#wanted) {
      const known = this.#readings.get(key);
      if (!again && known !== undefined && known.error === undefined) continue;
      this.#start(key, ref);
    }
    this.#scheduleRetry();
  }

  /** Reads again the wanted references whose answer `when` marks. */
  #recheck(when: (answer: A) => boolean): void {
    if (this.#stopped) return;
    for (const [key, ref] of this.#wanted) {
      const answer = this.#readings.get(key)?.answer;
      if (answer !== undefined && when(answer)) this.#start(key, ref);
    }
  }

  #start(key: string, ref: R): void {
    this.#tasks.run(key, "read", async (signal) => {
      const before = this.#readings.get(key);
      let after: Reading<A>;
      let failure: unknown;
      try {
        after = { answer: await this.#options.read(ref, signal) };
      } catch (error) {
        failure = error;
        after = {
          ...(before?.answer === undefined ? {} : { answer: before.answer }),
          error: errorText(error),
        };
      }
      if (this.#stopped || !this.#wanted.has(key)) return;
      this.#readings.set(key, after);
      if (JSON.stringify(after) !== JSON.stringify(before)) {
        // A first answer is routine (thousands at a cold start): debug; a
        // changed one is news: info; a failure: warn.
        const level = failure !== undefined
          ? "warn"
          : before === undefined
          ? "debug"
          : "info";
        this.#options.log[level](
          `read ${this.#options.what}`,
          this.#options.describe?.(ref, after) ?? { key, error: after.error },
        );
        this.#options.onChange();
      }
      // A failed read is tried again after the reference's backoff.
      if (failure !== undefined) throw failure;
    });
  }

  /** Wakes up when the first failed reference may be read again. */
  #scheduleRetry(): void {
    clearTimeout(this.#retryTimer);
    const at = this.#tasks.nextRetryAt();
    if (at === undefined || this.#stopped) return;
    this.#retryTimer = setTimeout(
      () => this.#startAll(false),
      Math.max(0, at - Date.now()) + 5,
    );
  }
}
