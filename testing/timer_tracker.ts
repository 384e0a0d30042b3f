/**
 * A recorder of the timers code starts and does not clear, to check that a
 * component's `stop()` leaves none behind (and which file started each).
 * Only for `*_test.ts` files.
 *
 * ```ts
 * import { TimerTracker } from "./mod.ts";
 *
 * const timers = new TimerTracker();
 * timers.install();
 * try {
 *   // ... start and stop a component
 *   console.log(timers.pendingFrom("lib/controller/applier.ts"));
 * } finally {
 *   timers.uninstall();
 * }
 * ```
 *
 * @module
 */

/**
 * Records the timers started while installed that have neither fired nor
 * been cleared, with the stack that started each.
 */
export class TimerTracker {
  readonly #pending = new Map<number, string>();
  readonly #original = {
    setTimeout: globalThis.setTimeout,
    setInterval: globalThis.setInterval,
    clearTimeout: globalThis.clearTimeout,
    clearInterval: globalThis.clearInterval,
  };

  /** Replaces the global timer functions with recording ones. */
  install(): void {
    const { setTimeout, setInterval, clearTimeout, clearInterval } =
      this.#original;
    const pending = this.#pending;
    // Timer handles are objects that convert to their numeric id.
    type Handle = Parameters<typeof clearTimeout>[0];
    const clear = (id: Handle) => pending.delete(Number(id));
    globalThis.setTimeout = ((
      callback: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      const id = setTimeout(() => {
        clear(id);
        callback(...args);
      }, ms);
      pending.set(Number(id), new Error().stack ?? "");
      return id;
    }) as typeof globalThis.setTimeout;
    globalThis.setInterval = ((
      callback: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      const id = setInterval(callback, ms, ...args);
      pending.set(Number(id), new Error().stack ?? "");
      return id;
    }) as typeof globalThis.setInterval;
    globalThis.clearTimeout = (id: Handle) => {
      clear(id);
      clearTimeout(id);
    };
    globalThis.clearInterval = (id: Handle) => {
      clear(id);
      clearInterval(id);
    };
  }

  /** Puts the original timer functions back. */
  uninstall(): void {
    Object.assign(globalThis, this.#original);
  }

  /**
   * Stacks of the pending timers started directly by a function of `file`,
   * a path from the repository's root such as `lib/controller/applier.ts`.
   */
  pendingFrom(file: string): string[] {
    return [...this.#pending.values()].filter((stack) =>
      // Line 0 is "Error", line 1 the wrapper above, line 2 its caller.
      stack.split("\n")[2]?.includes(`/${file}:`)
    );
  }
}
