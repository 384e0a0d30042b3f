/**
 * Capped exponential backoff with jitter, for reconnects and retries.
 *
 * @module
 */

/** Options for {@linkcode Backoff}. */
export interface BackoffOptions {
  /** First delay, in milliseconds. @default {500} */
  initialMs?: number;
  /** Largest delay, in milliseconds. @default {30_000} */
  maxMs?: number;
  /** Growth per attempt. @default {2} */
  factor?: number;
  /** Random source in [0, 1); each delay is scaled by 0.5 + random()/2. @default {Math.random} */
  random?: () => number;
}

/** Delays that double per failure up to a cap; {@linkcode Backoff.reset} after a success. */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #factor: number;
  readonly #random: () => number;
  #attempt = 0;

  /**
   * Builds a backoff.
   *
   * @throws {RangeError} If a delay is not positive or the factor is below 1.
   */
  constructor(options: BackoffOptions = {}) {
    const {
      initialMs = 500,
      maxMs = 30_000,
      factor = 2,
      random = Math.random,
    } = options;
    if (!(initialMs > 0) || !(maxMs >= initialMs)) {
      throw new RangeError(
        `Cannot build backoff: need 0 < initialMs <= maxMs: current values are ${initialMs} and ${maxMs}`,
      );
    }
    if (!(factor >= 1)) {
      throw new RangeError(
        `Cannot build backoff: factor must be at least 1: current value is ${factor}`,
      );
    }
    this.#initialMs = initialMs;
    this.#maxMs = maxMs;
    this.#factor = factor;
    this.#random = random;
  }

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const base = Math.min(
      this.#maxMs,
      this.#initialMs * this.#factor ** this.#attempt,
    );
    this.#attempt++;
    return Math.round(base * (0.5 + this.#random() / 2));
  }

  /** Starts over after a success. */
  reset(): void {
    this.#attempt = 0;
  }
}

/** Options for {@linkcode ReconnectBackoff}. */
export interface ReconnectBackoffOptions extends BackoffOptions {
  /**
   * Largest delay after a failure that got no answer at all (connection
   * refused or reset, no answer in time), in milliseconds: retrying a
   * server that is away costs it nothing, and the retry that finds it back
   * comes this soon. @default {2_000}
   */
  unansweredMaxMs?: number;
}

/**
 * The delays of a reconnect loop against a server that may be away for a
 * while (kcp restarting): failures the server answered (a 403, a 500) back
 * off up to `maxMs`; failures that got no answer back off only up to
 * `unansweredMaxMs`, so a loop finds the server within that long of its
 * return, however long it was away; and the first answer after such
 * failures starts the answered delays over, since a server that has just
 * come back often answers 403 or 404 for a moment while it starts.
 *
 * ```ts
 * import { ReconnectBackoff } from "./backoff.ts";
 *
 * const delays = new ReconnectBackoff({ random: () => 1 - Number.EPSILON });
 * delays.next({ answered: false }); // 500, then up to 2 000 while away
 * delays.next({ answered: true }); // 500: the server is back, start over
 * ```
 */
export class ReconnectBackoff {
  readonly #answered: Backoff;
  readonly #unanswered: Backoff;
  #away = false;

  /**
   * Builds the delays.
   *
   * @throws {RangeError} As {@linkcode Backoff} does. An `unansweredMaxMs`
   * outside `[initialMs, maxMs]` is taken as the nearer bound.
   */
  constructor(options: ReconnectBackoffOptions = {}) {
    const { unansweredMaxMs = 2_000, ...backoff } = options;
    this.#answered = new Backoff(backoff);
    // Never below the first delay, never above the cap.
    const maxMs = Math.max(
      backoff.initialMs ?? 500,
      Math.min(backoff.maxMs ?? 30_000, unansweredMaxMs),
    );
    this.#unanswered = new Backoff({ ...backoff, maxMs });
  }

  /** The delay before the next attempt after a failure, answered or not. */
  next(failure: { answered: boolean }): number {
    if (!failure.answered) {
      this.#away = true;
      return this.#unanswered.next();
    }
    if (this.#away) {
      this.#away = false;
      this.#answered.reset();
    }
    return this.#answered.next();
  }

  /** Starts over after a success. */
  reset(): void {
    this.#away = false;
    this.#answered.reset();
    this.#unanswered.reset();
  }
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
