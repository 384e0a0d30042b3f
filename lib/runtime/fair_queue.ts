/**
 * Permits shared fairly between keys, in the spirit of kube-apiserver's API
 * Priority and Fairness: how the webhook can bound the reviews that read kcp
 * at once without letting one logical cluster's burst of heavy deletes turn
 * every other cluster's deletes away as "busy".
 *
 * Each key (a logical cluster) has its own FIFO queue. A freed permit goes
 * to the waiting key that holds the fewest permits, and among those to the
 * one that has waited longest for its turn (round robin), never simply to
 * the oldest waiter overall: a key's waiters queue behind each other, not
 * in front of other keys'. A per-key cap (`maxPerKey`) keeps permits free
 * for keys that arrive while one key is busy, and the queues are bounded
 * so that memory stays bounded whatever clients send.
 *
 * @example Usage
 * ```ts
 * import { FairQueue } from "./fair_queue.ts";
 *
 * const reviews = new FairQueue({ capacity: 4 });
 * const cluster = "root:org:team"; // the review's logical cluster
 * const release = await reviews.acquire(cluster, { timeoutMs: 2_000 });
 * if (release === undefined) {
 *   // the cluster's queue is full, or no permit came within 2 s:
 *   // answer "busy, retry"
 * } else {
 *   try {
 *     // ... the work the permit bounds
 *   } finally {
 *     release();
 *   }
 * }
 * ```
 *
 * @module
 */
import type { AcquireOptions } from "./semaphore.ts";

/**
 * Starts a timer that calls `callback` after `ms` milliseconds.
 *
 * @returns A function that cancels the timer (harmless once it fired).
 */
export type SetTimer = (callback: () => void, ms: number) => () => void;

/** Options of {@linkcode FairQueue}. */
export interface FairQueueOptions {
  /** Permits in all; each acquirer takes one. */
  capacity: number;
  /**
   * Permits one key may hold at once; a value above `capacity` is cut to
   * `capacity`, which turns the cap off.
   *
   * The cap trades a lone key's throughput for the latency of the others.
   * Permits are never taken back, so without a cap a key that arrives while
   * another holds all of them waits until one of those ends, however long
   * that takes (with 4 permits held by reviews of 7 s and a queue timeout of
   * 2 s, it is turned away as busy). With the cap, `capacity - maxPerKey`
   * permits are always left to other keys: a second key is served at once,
   * and a key that still has to wait goes first when a permit frees (it
   * holds fewer than the keys served). The price is that a key alone may
   * use only `maxPerKey` permits while the others stay idle, so its own
   * burst waits longer (and is turned away sooner) than with a plain
   * semaphore: that key is the one causing the load.
   *
   * @default {Math.ceil(capacity / 2)} Half the permits for one key, the
   * other half left for the rest: with the webhook's 4 permits, a second
   * cluster gets 2 at once.
   */
  maxPerKey?: number;
  /**
   * Acquirers one key may have waiting; one more is turned away at once
   * (`undefined`) rather than held until its timeout. `0` never waits.
   *
   * @default {64} Beyond what a key's share of the permits can serve within
   * a queue timeout of a few seconds unless its reviews take only
   * milliseconds, and small enough that one key's burst cannot fill memory.
   */
  maxQueuedPerKey?: number;
  /**
   * Keys that may have acquirers waiting at once; a waiter of a further key
   * is turned away at once. With `maxQueuedPerKey` this bounds the waiters
   * (and the per-key state: keys that only hold permits are at most
   * `capacity`), however many distinct keys clients send.
   *
   * @default {1_024} About the webhook's cap on open connections (1 000),
   * each of which carries at most one review at a time, so the bound only
   * bites when connections are not bounded.
   */
  maxKeys?: number;
  /**
   * The clock of the waiting deadlines (for tests).
   *
   * @default {setTimeout and clearTimeout}
   */
  setTimer?: SetTimer;
}

/** One acquirer waiting for a permit. */
interface Waiter {
  /** Hands the permit over; stops the deadline and the abort listener. */
  grant: (release: () => void) => void;
}

/** What is kept per key while it holds permits or has waiters. */
interface KeyState {
  readonly key: string;
  /** Permits it holds. */
  held: number;
  /** Its waiters, oldest first. */
  readonly queue: Waiter[];
  /** The entry of `#ready` it is in, when it may be granted a permit. */
  level: number | undefined;
}

const defaultSetTimer: SetTimer = (callback, ms) => {
  const id = setTimeout(callback, ms);
  return () => clearTimeout(id);
};

function integerOption(
  name: string,
  value: number,
  min: number,
): number {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(
      `Cannot build a fair queue: ${name} must be an integer of at least ${min}: current value is ${value}`,
    );
  }
  return value;
}

/**
 * A counting semaphore whose waiters queue per key and are served fairly
 * across keys: a freed permit goes to the waiting key that holds the fewest
 * permits, round robin among equals, and within a key in arrival order. A
 * key may hold at most `maxPerKey` permits; its waiters and the waiting
 * keys are bounded. State for a key is dropped as soon as it holds nothing
 * and has no waiters.
 *
 * Each step costs O(`maxPerKey`) plus, when a waiter gives up, O(its key's
 * queue).
 */
export class FairQueue {
  readonly #capacity: number;
  readonly #maxPerKey: number;
  readonly #maxQueuedPerKey: number;
  readonly #maxKeys: number;
  readonly #setTimer: SetTimer;
  #used = 0;
  #waiting = 0;
  #keysWaiting = 0;
  readonly #keys = new Map<string, KeyState>();
  /**
   * Keys that have waiters and hold fewer than `maxPerKey` permits, by the
   * permits they hold; each set in the order the keys entered it (a key
   * granted a permit, or releasing one, moves to the back of another set).
   */
  readonly #ready: Set<KeyState>[];

  /**
   * Builds a fair queue; see {@linkcode FairQueueOptions} for the defaults.
   *
   * @throws {RangeError} If `capacity` or `maxPerKey` is not a positive
   * integer, or `maxQueuedPerKey` or `maxKeys` is not a non-negative integer.
   */
  constructor(options: FairQueueOptions) {
    this.#capacity = integerOption("capacity", options.capacity, 1);
    this.#maxPerKey = Math.min(
      integerOption(
        "maxPerKey",
        options.maxPerKey ?? Math.ceil(this.#capacity / 2),
        1,
      ),
      this.#capacity,
    );
    this.#maxQueuedPerKey = integerOption(
      "maxQueuedPerKey",
      options.maxQueuedPerKey ?? 64,
      0,
    );
    this.#maxKeys = integerOption("maxKeys", options.maxKeys ?? 1_024, 0);
    this.#setTimer = options.setTimer ?? defaultSetTimer;
    this.#ready = Array.from({ length: this.#maxPerKey }, () => new Set());
  }

  /** The permits in all. */
  get capacity(): number {
    return this.#capacity;
  }

  /** The permits one key may hold at once. */
  get maxPerKey(): number {
    return this.#maxPerKey;
  }

  /** Permits taken now. */
  get used(): number {
    return this.#used;
  }

  /** Acquirers waiting now, over all keys. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Keys with acquirers waiting now. */
  get keysWaiting(): number {
    return this.#keysWaiting;
  }

  /** Keys holding permits or with acquirers waiting now (the state kept). */
  get keys(): number {
    return this.#keys.size;
  }

  /**
   * Takes one permit for `key`, waiting up to `timeoutMs` for it (for ever
   * when `Infinity`, until `signal` aborts). It is granted at once when a
   * permit is free, the key holds fewer than `maxPerKey` and has no earlier
   * waiter; otherwise it queues behind the key's earlier waiters, unless
   * the key already has `maxQueuedPerKey` waiting or it would be one key
   * too many waiting (`maxKeys`).
   *
   * @returns A function that gives the permit back (once; later calls do
   * nothing), or `undefined` when it was not granted: the wait timed out or
   * was aborted, or the queue was full.
   */
  acquire(
    key: string,
    options: AcquireOptions,
  ): Promise<(() => void) | undefined> {
    let state = this.#keys.get(key);
    // While a permit is free no key below its cap has waiters (they would
    // have been granted it), so this is the waiter's turn.
    if (
      this.#used < this.#capacity &&
      (state === undefined ||
        (state.held < this.#maxPerKey && state.queue.length === 0))
    ) {
      if (state === undefined) {
        state = { key, held: 0, queue: [], level: undefined };
        this.#keys.set(key, state);
      }
      return Promise.resolve(this.#take(state));
    }
    if (
      !(options.timeoutMs > 0) || options.signal?.aborted ||
      (state?.queue.length ?? 0) >= this.#maxQueuedPerKey ||
      ((state?.queue.length ?? 0) === 0 && this.#keysWaiting >= this.#maxKeys)
    ) {
      return Promise.resolve(undefined);
    }
    if (state === undefined) {
      state = { key, held: 0, queue: [], level: undefined };
      this.#keys.set(key, state);
    }
    const current = state;
    return new Promise((resolve) => {
      let cancelTimer = () => {};
      const settle = (release: (() => void) | undefined) => {
        cancelTimer();
        options.signal?.removeEventListener("abort", giveUp);
        resolve(release);
      };
      const waiter: Waiter = { grant: settle };
      const giveUp = () => {
        const at = current.queue.indexOf(waiter);
        if (at === -1) return;
        current.queue.splice(at, 1);
        this.#waiting--;
        if (current.queue.length === 0) this.#keysWaiting--;
        // Fewer waiters make no one else eligible: nothing to grant.
        this.#place(current);
        settle(undefined);
      };
      if (options.timeoutMs !== Infinity) {
        cancelTimer = this.#setTimer(giveUp, options.timeoutMs);
      }
      options.signal?.addEventListener("abort", giveUp, { once: true });
      if (current.queue.length === 0) this.#keysWaiting++;
      current.queue.push(waiter);
      this.#waiting++;
      this.#place(current);
    });
  }

  /** Gives `state` a permit and returns the function that gives it back. */
  #take(state: KeyState): () => void {
    this.#used++;
    state.held++;
    this.#place(state);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#used--;
      state.held--;
      this.#place(state);
      this.#grant();
    };
  }

  /**
   * Puts `state` in the `#ready` set it belongs to (at the back, when it
   * moves), or in none; drops it when it holds nothing and has no waiters.
   */
  #place(state: KeyState): void {
    const level = state.queue.length > 0 && state.held < this.#maxPerKey
      ? state.held
      : undefined;
    if (level !== state.level) {
      if (state.level !== undefined) this.#ready[state.level]!.delete(state);
      if (level !== undefined) this.#ready[level]!.add(state);
      state.level = level;
    }
    if (state.held === 0 && state.queue.length === 0) {
      this.#keys.delete(state.key);
    }
  }

  /** Hands free permits to the waiters whose turn it is. */
  #grant(): void {
    while (this.#used < this.#capacity) {
      const ready = this.#ready.find((keys) => keys.size > 0);
      if (ready === undefined) return;
      const state: KeyState = ready.values().next().value!;
      const waiter = state.queue.shift()!;
      this.#waiting--;
      if (state.queue.length === 0) this.#keysWaiting--;
      waiter.grant(this.#take(state));
    }
  }
}
