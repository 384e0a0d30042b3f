/**
 * A short-lived cache of which export each type a consumer workspace binds
 * comes from (the identity check's read), per logical cluster: reviews of
 * the same workspace within `ttlMs` share one read, and concurrent ones
 * share the read in flight. A failed read is not kept.
 *
 * What a stale entry can do: a consumer that rebinds a type from another
 * export is seen with its old bindings for at most `ttlMs`. The entry holds
 * only that consumer's own bindings, so it can never reach another tenant;
 * and the webhook uses a kept answer only to count a rule, never to drop
 * one (it reads again, fresh, before dropping), so it fails closed.
 *
 * @module
 */

/** Options of {@linkcode BindingCache}. */
export interface BindingCacheOptions<T> {
  /** Reads a cluster's bindings. */
  read: (cluster: string, signal: AbortSignal) => Promise<T>;
  /** How long an answer is used. 0 reads every time. */
  ttlMs: number;
  /** Most clusters kept; the oldest entry goes first. @default {10_000} */
  maxEntries?: number;
  /** The clock, ms. @default {performance.now} */
  now?: () => number;
}

interface Entry<T> {
  value: Promise<T>;
  at: number;
}

/** A per-cluster cache of one read, with a time to live and a size bound. */
export class BindingCache<T> {
  readonly #options: BindingCacheOptions<T>;
  readonly #entries = new Map<string, Entry<T>>();
  readonly #now: () => number;

  /** A cache over `options.read`. */
  constructor(options: BindingCacheOptions<T>) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Clusters held now (for tests and metrics). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The cluster's answer: the one read within `ttlMs` (or in flight), else
   * a new read with `signal`.
   *
   * @throws {Error} What the read threw.
   */
  get(cluster: string, signal: AbortSignal): Promise<T> {
    const { ttlMs } = this.#options;
    if (ttlMs <= 0) return this.#options.read(cluster, signal);
    const now = this.#now();
    const held = this.#entries.get(cluster);
    if (held !== undefined && now - held.at < ttlMs) {
      return abortable(held.value, signal);
    }
    return this.refresh(cluster, signal);
  }

  /**
   * A new read of the cluster, whatever is held, which then replaces the
   * held answer (with 0 `ttlMs`, just the read).
   *
   * @throws {Error} What the read threw.
   */
  refresh(cluster: string, signal: AbortSignal): Promise<T> {
    if (this.#options.ttlMs <= 0) return this.#options.read(cluster, signal);
    const now = this.#now();
    this.#entries.delete(cluster);
    // The shared read is not bound to the first caller's signal: a review
    // that gives up must not fail the others waiting on it. Each caller
    // still stops waiting at its own deadline.
    const value = this.#options.read(cluster, AbortSignal.timeout(30_000));
    const entry = { value, at: now };
    this.#entries.set(cluster, entry);
    value.catch(() => {
      if (this.#entries.get(cluster) === entry) this.#entries.delete(cluster);
    });
    const max = this.#options.maxEntries ?? 10_000;
    while (this.#entries.size > max) {
      const oldest = this.#entries.keys().next().value!;
      this.#entries.delete(oldest);
    }
    return abortable(value, signal);
  }
}

/** `value`, or a rejection with the signal's reason once it aborts. */
function abortable<T>(value: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    value.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", onAbort)
    );
  });
}
