/**
 * Waiting on a promise without being held by it: until a signal aborts
 * ({@linkcode untilAborted}), at most some time for it to settle
 * ({@linkcode settledWithin}), or for its value ({@linkcode valueWithin}).
 * What list+watch loops and reviews use so that a request that never
 * answers cannot hold their stop or their deadline.
 *
 * @module
 */

/** What {@linkcode untilAborted} resolves with once its signal aborted. */
export const ABORTED: unique symbol = Symbol("aborted");

/**
 * `promise`, or {@linkcode ABORTED} as soon as `signal` aborts, whichever
 * comes first; a later rejection of `promise` is then ignored.
 */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal,
): Promise<T | typeof ABORTED> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.resolve(ABORTED);
  }
  return new Promise((resolve, reject) => {
    const aborted = () => resolve(ABORTED);
    signal.addEventListener("abort", aborted, { once: true });
    promise.then(resolve, (error) => {
      if (signal.aborted) resolve(ABORTED);
      else reject(error);
    }).finally(() => signal.removeEventListener("abort", aborted));
  });
}

/** Resolves once `promise` settles, or after `ms`, whichever comes first. */
export async function settledWithin(
  promise: Promise<unknown>,
  ms: number,
): Promise<void> {
  await valueWithin(promise.then(() => {}, () => {}), ms);
}

/**
 * `promise`'s value, or `undefined` when it has not settled after `ms`
 * (at once for `ms <= 0`); its rejection, if it comes first.
 */
export async function valueWithin<T>(
  promise: Promise<T>,
  ms: number,
): Promise<T | undefined> {
  if (ms <= 0) return undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
