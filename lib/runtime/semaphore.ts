/**
 * A weighted semaphore with a deadline on waiting: how the webhook bounds
 * the bytes of review bodies being parsed and the reviews that list
 * dependents at once, so that no burst of clients can exhaust its memory,
 * and how the controller's background reads of one kind take turns
 * ({@linkcode Semaphore.wrap}). A cold start wants thousands of reads in
 * one pass: sent at once, they queue on the one connection to kcp behind
 * each other, and those at the back reach their deadline before kcp even
 * sees them. In turns, each read's deadline covers only its own exchange,
 * and the reads that settle the first configurations and statuses are not
 * held up behind the rest.
 *
 * @example Usage
 * ```ts
 * import { Semaphore } from "./semaphore.ts";
 *
 * const reviews = new Semaphore(4);
 * const release = await reviews.acquire(1, { timeoutMs: 2_000 });
 * if (release === undefined) {
 *   // still busy after 2 s: answer "busy, retry"
 * } else {
 *   try {
 *     // ... the work the permit bounds
 *   } finally {
 *     release();
 *   }
 * }
 * ```
 *
 * @example Reads in turns
 * ```ts
 * import { Semaphore } from "./semaphore.ts";
 *
 * const read = new Semaphore(2).wrap((name: string) =>
 *   Promise.resolve(name.length)
 * );
 * await read("vpcs", new AbortController().signal); // 4
 * ```
 *
 * @module
 */

interface Waiter {
  weight: number;
  grant: (release: () => void) => void;
}

/** Options of {@linkcode Semaphore.acquire}. */
export interface AcquireOptions {
  /**
   * How long to wait for the permits; `0` does not wait. A semaphore
   * (not a `FairQueue`) takes `Infinity`: it waits until they come or the
   * signal aborts.
   */
  timeoutMs: number;
  /** Gives up waiting when aborted. */
  signal?: AbortSignal;
}

/**
 * Permits up to a capacity, taken by weight and granted in arrival order
 * (a heavy waiter is not overtaken by light ones, so it cannot starve).
 * A weight above the capacity is cut to the capacity: it then runs alone.
 */
export class Semaphore {
  readonly #capacity: number;
  #used = 0;
  readonly #queue: Waiter[] = [];

  /**
   * Builds a semaphore with `capacity` permits.
   *
   * @throws {RangeError} If `capacity` is not a positive integer.
   */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(
        `Cannot build a semaphore: capacity must be a positive integer: current value is ${capacity}`,
      );
    }
    this.#capacity = capacity;
  }

  /** The capacity. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Permits taken now. */
  get used(): number {
    return this.#used;
  }

  /** Acquirers waiting now. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Takes `weight` permits, waiting up to `timeoutMs` for them.
   *
   * @returns A function that gives the permits back (once; later calls do
   * nothing), or `undefined` when they were not granted in time.
   */
  acquire(
    weight: number,
    options: AcquireOptions,
  ): Promise<(() => void) | undefined> {
    const want = Math.min(Math.max(1, Math.ceil(weight)), this.#capacity);
    if (this.#queue.length === 0 && this.#used + want <= this.#capacity) {
      this.#used += want;
      return Promise.resolve(this.#releaser(want));
    }
    if (options.timeoutMs <= 0 || options.signal?.aborted) {
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        weight: want,
        grant: (release) => {
          clearTimeout(timer);
          options.signal?.removeEventListener("abort", giveUp);
          resolve(release);
        },
      };
      const giveUp = () => {
        const at = this.#queue.indexOf(waiter);
        if (at === -1) return;
        this.#queue.splice(at, 1);
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", giveUp);
        resolve(undefined);
        // A heavy waiter leaving may let lighter ones behind it go.
        this.#grant();
      };
      const timer = Number.isFinite(options.timeoutMs)
        ? setTimeout(giveUp, options.timeoutMs)
        : undefined;
      options.signal?.addEventListener("abort", giveUp, { once: true });
      this.#queue.push(waiter);
    });
  }

  /**
   * `task` made to wait for its turn: each call takes one permit, waiting
   * without a deadline, in the order the calls came, and gives it back
   * when the task ends, whether it succeeded or threw (`onStart` is told
   * when a call gets its turn). A call whose signal has aborted, or aborts
   * while it waits, is rejected with the signal's reason and never runs.
   */
  wrap<R, A>(
    task: (ref: R, signal: AbortSignal) => Promise<A>,
    options: { onStart?: (ref: R) => void } = {},
  ): (ref: R, signal: AbortSignal) => Promise<A> {
    return async (ref, signal) => {
      signal.throwIfAborted();
      const release = await this.acquire(1, { timeoutMs: Infinity, signal });
      if (release === undefined) throw signal.reason;
      try {
        options.onStart?.(ref);
        return await task(ref, signal);
      } finally {
        release();
      }
    };
  }

  #releaser(weight: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#used -= weight;
      this.#grant();
    };
  }

  #grant(): void {
    while (this.#queue.length > 0) {
      const next = this.#queue[0]!;
      if (this.#used + next.weight > this.#capacity) return;
      this.#queue.shift();
      this.#used += next.weight;
      next.grant(this.#releaser(next.weight));
    }
  }
}
