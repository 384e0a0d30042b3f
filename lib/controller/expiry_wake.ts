/**
 * The reconciler's alarm for Locks that expire: one timer, set after every
 * pass to a second after the next `spec.expiresAt` the plan found
 * (`Plan.nextLockExpiry`), so that a Lock's status turns `Expired` at its
 * time rather than at the next resync. The plan's clock counts whole
 * seconds, hence the second; a time further than a day ahead wakes the
 * reconciler after a day, which then sets the timer again.
 *
 * @example Usage
 * ```ts
 * import { ExpiryWake } from "./expiry_wake.ts";
 *
 * const wake = new ExpiryWake(() => console.log("plan again"));
 * wake.set(Date.now() + 60_000, { now: Date.now() });
 * wake.stop();
 * ```
 *
 * @module
 */

/** The longest the timer waits: setTimeout fires at once beyond 2^31 - 1 ms. */
const MAX_WAIT_MS = 86_400_000;
/** How long after the expiry the timer fires: the plan's clock counts whole seconds. */
const AFTER_MS = 1_000;

/**
 * How long to wait, from `now`, for a plan that sees the Lock expiring at
 * `at` (both ms since the epoch) as expired: a second after it, at most a
 * day, never less than 0.
 */
export function wakeDelay(at: number, now: number): number {
  return Math.min(Math.max(0, at - now) + AFTER_MS, MAX_WAIT_MS);
}

/** One timer that calls back when the next Lock has expired. */
export class ExpiryWake {
  readonly #onWake: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** An alarm that calls `onWake` (the reconciler's trigger); not set. */
  constructor(onWake: () => void) {
    this.#onWake = onWake;
  }

  /**
   * Sets the alarm for a Lock expiring at `at` (ms since the epoch), by
   * the clock reading `options.now`, replacing the one set before;
   * `undefined` clears it.
   */
  set(at: number | undefined, options: { now: number }): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (at === undefined || this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#onWake();
    }, wakeDelay(at, options.now));
  }

  /** Clears the alarm for good. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
