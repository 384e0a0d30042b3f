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
