/**
 * Passes over some state, run on demand the way a level-triggered loop runs
 * them: triggers coalesce into one pass, passes never overlap (a trigger
 * during a pass runs one more after it), passes start at least
 * `minIntervalMs` apart, and `stop()` waits for the pass under way and runs
 * no more. With `maxIntervalMs`, once triggers have had to wait
 * {@linkcode BUSY_PASSES_BEFORE_SPACING} times in a row (changes keep
 * coming), each further wait doubles the spacing up to it, and a quiet
 * spell brings it back: a cold start's thousands of changes cost tens of
 * passes, while a lone change and the few passes it causes keep the least
 * spacing. With `quickPasses`, a few passes may start without waiting for
 * the least spacing (an allowance that refills one per `minIntervalMs`):
 * a lone change whose passes follow each other (a read answered, a write
 * showing up in a watch) does not wait the spacing at each step, while
 * over time at most one pass more than the spacing allows starts per
 * `minIntervalMs`, and none once the spacing has grown. The reconciler
 * runs its reconcile passes with it, the export watcher its change
 * notifications.
 *
 * @example Usage
 * ```ts
 * import { PassScheduler } from "./pass_scheduler.ts";
 *
 * const passes = new PassScheduler(async () => {}, { minIntervalMs: 200 });
 * passes.trigger();
 * passes.trigger(); // the same pass
 * await passes.stop();
 * ```
 *
 * @module
 */

/** The timers a {@linkcode PassScheduler} uses; tests inject their own. */
export interface PassClock {
  /** Milliseconds since an arbitrary origin, never going back. */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds; returns what cancels that. */
  after(ms: number, fn: () => void): () => void;
}

/** Options for {@linkcode PassScheduler}. */
export interface PassSchedulerOptions {
  /** Least time between the starts of two passes, in milliseconds. @default {0} */
  minIntervalMs?: number;
  /**
   * Most the spacing grows to while triggers keep coming (it doubles each
   * time a trigger has to wait, and is back at `minIntervalMs` once two
   * spacings pass without a trigger). @default {minIntervalMs: no growth}
   */
  maxIntervalMs?: number;
  /**
   * How many passes may start without waiting for the least spacing: an
   * allowance that refills one pass per `minIntervalMs`, spent only while
   * the spacing is the least (not while it has grown). @default {0}
   */
  quickPasses?: number;
  /**
   * Called with what a pass threw or rejected with; the scheduler goes on.
   * @default {none: the error is thrown out of the timer, uncaught}
   */
  onError?: (error: unknown) => void;
  /** The clock. @default {performance.now and the global timers} */
  clock?: PassClock;
}

/**
 * How many triggers in a row may wait for the least spacing before the
 * spacing grows (see {@linkcode PassSchedulerOptions.maxIntervalMs}): the
 * few passes one change causes (a write, then its watch event) stay fast.
 */
export const BUSY_PASSES_BEFORE_SPACING = 10;

/** The global clock: `performance.now()` and the global timers. */
const GLOBAL_CLOCK: PassClock = {
  now: () => performance.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

/** Runs a pass after triggers: coalesced, never overlapping, spaced apart. */
export class PassScheduler {
  readonly #run: () => void | Promise<void>;
  readonly #minIntervalMs: number;
  readonly #maxIntervalMs: number;
  #intervalMs: number;
  #busy = 0;
  readonly #quickPasses: number;
  /** Quick passes left, and when that was last counted. */
  #quick: number;
  #quickAt = -Infinity;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #clock: PassClock;
  #scheduled = false;
  #cancel: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #lastStartAt = -Infinity;
  #stopped = false;

  /**
   * Builds a scheduler of `run`; nothing runs until
   * {@linkcode PassScheduler.trigger}. A pass that returns a promise runs
   * until it settles; one that returns nothing ends when it returns.
   */
  constructor(
    run: () => void | Promise<void>,
    options: PassSchedulerOptions = {},
  ) {
    this.#run = run;
    this.#minIntervalMs = options.minIntervalMs ?? 0;
    this.#maxIntervalMs = Math.max(
      this.#minIntervalMs,
      options.maxIntervalMs ?? this.#minIntervalMs,
    );
    this.#intervalMs = this.#minIntervalMs;
    this.#quickPasses = Math.max(0, options.quickPasses ?? 0);
    this.#quick = this.#quickPasses;
    this.#onError = options.onError;
    this.#clock = options.clock ?? GLOBAL_CLOCK;
  }

  /**
   * Asks for a pass soon: at the next macrotask, or the spacing after the
   * last pass started. Triggers before it starts share it; one during a
   * pass asks for one more after it. Ignored once stopped.
   */
  trigger(): void {
    if (this.#stopped || this.#scheduled) return;
    this.#scheduled = true;
    const since = this.#clock.now() - this.#lastStartAt;
    // Quiet for two spacings: back to the least spacing.
    if (since >= 2 * this.#intervalMs) {
      this.#intervalMs = this.#minIntervalMs;
      this.#busy = 0;
    }
    let wait = Math.max(0, this.#intervalMs - since);
    // A quick pass left: at once (it does not count as having waited).
    if (wait > 0 && this.#takeQuickPass()) wait = 0;
    // Changes keep coming: space the passes after this one further apart.
    if (wait > 0 && ++this.#busy > BUSY_PASSES_BEFORE_SPACING) {
      this.#intervalMs = Math.min(
        this.#maxIntervalMs,
        Math.max(this.#intervalMs * 2, 1),
      );
    }
    this.#cancel = this.#clock.after(wait, () => this.#fire());
  }

  /**
   * Whether a pass may start without waiting for the least spacing: while
   * the spacing is the least, and the allowance (refilled one per
   * `minIntervalMs`) has one left.
   */
  #takeQuickPass(): boolean {
    if (this.#quickPasses === 0) return false;
    const now = this.#clock.now();
    this.#quick = Math.min(
      this.#quickPasses,
      this.#quick + (now - this.#quickAt) / this.#minIntervalMs,
    );
    this.#quickAt = now;
    if (this.#intervalMs > this.#minIntervalMs || this.#quick < 1) {
      return false;
    }
    this.#quick -= 1;
    return true;
  }

  /** Runs no more passes and waits for the one under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancel?.();
    this.#cancel = undefined;
    await this.#running;
  }

  #fire(): void {
    this.#scheduled = false;
    this.#cancel = undefined;
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#lastStartAt = this.#clock.now();
    let result: void | Promise<void>;
    try {
      result = this.#run();
    } catch (error) {
      this.#failed(error);
      return;
    }
    if (!(result instanceof Promise)) return;
    this.#running = result.catch((error) => this.#failed(error)).finally(
      () => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.trigger();
        }
      },
    );
  }

  #failed(error: unknown): void {
    if (this.#onError === undefined) throw error;
    this.#onError(error);
  }
}
