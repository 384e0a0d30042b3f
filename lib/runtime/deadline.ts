/**
 * One deadline for a piece of work and every read it makes: a signal that
 * aborts when the time is up (or when the caller cancels), what is left of
 * it, and a race that ends a promise at the deadline even when what it
 * awaits ignores the signal.
 *
 * @example Usage
 * ```ts
 * import { Deadline } from "./deadline.ts";
 *
 * const deadline = new Deadline(7_000, { what: "the review's reads" });
 * try {
 *   const page = await deadline.race(fetch("https://example.com", { signal: deadline.signal }));
 * } finally {
 *   deadline.close();
 * }
 * ```
 *
 * @module
 */

/** The reason a {@linkcode Deadline}'s signal aborts with when time is up. */
export class DeadlineExceeded extends Error {
  /** The time the deadline allowed, in ms. */
  readonly timeoutMs: number;

  /** Builds the error for `what` not finishing within `timeoutMs`. */
  constructor(what: string, timeoutMs: number) {
    super(`${what} did not finish within ${timeoutMs} ms`);
    this.name = "DeadlineExceeded";
    this.timeoutMs = timeoutMs;
  }
}

/** Options of {@linkcode Deadline}. */
export interface DeadlineOptions {
  /** What runs under the deadline, for the error message. @default {"the work"} */
  what?: string;
  /** A caller's signal that ends the work early as well. */
  signal?: AbortSignal;
  /** The clock in ms, for {@linkcode Deadline.remainingMs}. @default {performance.now} */
  now?: () => number;
}

/** A deadline: its signal, what is left of it, and a race against it. */
export class Deadline {
  readonly #controller = new AbortController();
  readonly #signal: AbortSignal;
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #end: number;
  readonly #now: () => number;
  /** Rejects once the signal aborts; made by the first {@linkcode race}. */
  #aborted: Promise<never> | undefined;

  /** Starts a deadline `timeoutMs` from now. */
  constructor(timeoutMs: number, options: DeadlineOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#end = this.#now() + timeoutMs;
    const what = options.what ?? "the work";
    this.#timer = setTimeout(
      () => this.abort(new DeadlineExceeded(what, timeoutMs)),
      Math.max(0, timeoutMs),
    );
    // AbortSignal.any holds the caller's signal weakly: a long-lived one
    // shared by many deadlines keeps none of them alive.
    this.#signal = options.signal === undefined
      ? this.#controller.signal
      : AbortSignal.any([this.#controller.signal, options.signal]);
  }

  /** Aborts when the deadline passes, the caller cancels, or {@linkcode abort} is called. */
  get signal(): AbortSignal {
    return this.#signal;
  }

  /** Milliseconds left, 0 once passed or aborted. */
  remainingMs(): number {
    if (this.#signal.aborted) return 0;
    return Math.max(0, this.#end - this.#now());
  }

  /** Ends the work now, with `reason` as the signal's reason (if not ended already). */
  abort(reason?: unknown): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  /**
   * Settles as `work` does, or rejects with the signal's reason once it
   * aborts, whichever comes first.
   */
  race<T>(work: Promise<T>): Promise<T> {
    if (this.#aborted === undefined) {
      const signal = this.#signal;
      this.#aborted = new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), {
          once: true,
        });
      });
      this.#aborted.catch(() => {});
    }
    return Promise.race([work, this.#aborted]);
  }

  /**
   * Stops the clock and nothing else: the signal no longer aborts for time,
   * but still does when the caller's signal aborts (a response body that
   * streams on after its headers came in time).
   */
  disarm(): void {
    clearTimeout(this.#timer);
  }

  /** Clears the timer and aborts what still runs. */
  close(): void {
    clearTimeout(this.#timer);
    this.abort(new Error("finished"));
  }
}
