/**
 * How many of the controller's background reads of one kind (APIExports,
 * access reviews) run at once; the others wait their turn, first come first
 * served. A cold start wants thousands of reads in one pass: sent at once,
 * they queue on the one connection to kcp behind each other, and those at
 * the back reach their deadline before kcp even sees them. In turns, each
 * read's deadline covers only its own exchange, and the reads that settle
 * the first configurations and statuses are not held up behind the rest.
 *
 * @example Usage
 * ```ts
 * import { ReadLimit } from "./read_limit.ts";
 *
 * const limit = new ReadLimit(2);
 * const read = limit.wrap((name: string) => Promise.resolve(name.length));
 * await read("vpcs", new AbortController().signal); // 4
 * ```
 *
 * @module
 */

/** A read waiting for its turn. */
interface Waiter {
  start: () => void;
  giveUp: () => void;
}

/** Runs reads at most `capacity` at a time, in the order they asked. */
export class ReadLimit {
  readonly #capacity: number;
  #running = 0;
  readonly #waiting: Waiter[] = [];
  /** Index of the first waiter in {@linkcode ReadLimit.#waiting} not yet started or gone. */
  #head = 0;

  /**
   * Builds a limit of `capacity` reads at once.
   *
   * @throws {RangeError} If `capacity` is not a positive integer.
   */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(
        `Cannot limit reads: capacity must be a positive integer: current value is ${capacity}`,
      );
    }
    this.#capacity = capacity;
  }

  /** Reads running now. */
  get running(): number {
    return this.#running;
  }

  /** Reads waiting for their turn now. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  /**
   * `read` made to wait for its turn (`onStart` is told when it gets it); a
   * read whose signal aborts while it waits is rejected with the signal's
   * reason and never runs.
   */
  wrap<R, A>(
    read: (ref: R, signal: AbortSignal) => Promise<A>,
    onStart?: (ref: R) => void,
  ): (ref: R, signal: AbortSignal) => Promise<A> {
    return async (ref, signal) => {
      await this.#turn(signal);
      try {
        onStart?.(ref);
        return await read(ref, signal);
      } finally {
        this.#running--;
        this.#next();
      }
    };
  }

  /** Resolves when a read may start (and counts it as running). */
  #turn(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.waiting === 0 && this.#running < this.#capacity) {
      this.#running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          signal.removeEventListener("abort", waiter.giveUp);
          resolve();
        },
        giveUp: () => {
          const at = this.#waiting.indexOf(waiter, this.#head);
          if (at !== -1) this.#waiting.splice(at, 1);
          reject(signal.reason);
        },
      };
      signal.addEventListener("abort", waiter.giveUp, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** Starts the next waiters while there is room. */
  #next(): void {
    while (this.#running < this.#capacity && this.waiting > 0) {
      const waiter = this.#waiting[this.#head++]!;
      this.#running++;
      waiter.start();
    }
    // Drop the started waiters now and then, not at every start.
    if (this.#head > 1024 && this.#head * 2 > this.#waiting.length) {
      this.#waiting.splice(0, this.#head);
      this.#head = 0;
    }
  }
}
