/**
 * Polling for eventually consistent state, as kcp needs after nearly every
 * step (workspace Ready, binding Bound, endpoint URL published).
 *
 * @module
 */

/** Thrown by a probe to end {@linkcode waitFor} at once (e.g. the process it waits for exited). */
export class GiveUp extends Error {
  /** Builds the error. */
  constructor(message: string) {
    super(message);
    this.name = "GiveUp";
  }
}

/** Options for {@linkcode waitFor}. */
export interface WaitOptions {
  /** How long to keep polling. @default {60_000} */
  timeoutMs?: number;
  /** Pause between probes. @default {100} */
  intervalMs?: number;
}

/**
 * Calls `probe` until it returns something other than `undefined`, and
 * returns that. A probe that throws counts as "not yet"; its last error is
 * part of the timeout message; a {@linkcode GiveUp} ends the wait at once.
 *
 * @throws {Error} If the timeout passes first.
 */
export async function waitFor<T>(
  description: string,
  probe: () => Promise<T | undefined>,
  options: WaitOptions = {},
): Promise<T> {
  const { timeoutMs = 60_000, intervalMs = 100 } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (true) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof GiveUp) throw error;
      lastError = error;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const detail = lastError instanceof Error
    ? `: last error: ${lastError.message}`
    : "";
  throw new Error(
    `Timed out after ${timeoutMs / 1000} s waiting for ${description}${detail}`,
  );
}
