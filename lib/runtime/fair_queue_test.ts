import assert from "node:assert/strict";
import fc from "fast-check";
import { FairQueue, type SetTimer } from "./fair_queue.ts";

/** Timers that fire only when the test advances their clock. */
class ManualTimers {
  #now = 0;
  #nextId = 0;
  readonly #timers = new Map<number, { at: number; callback: () => void }>();

  readonly set: SetTimer = (callback, ms) => {
    const id = this.#nextId++;
    this.#timers.set(id, { at: this.#now + ms, callback });
    return () => this.#timers.delete(id);
  };

  /** Timers started and neither fired nor cancelled. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves the clock on by `ms`, firing the timers due in order. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      let due: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (
          entry[1].at <= until && (due === undefined || entry[1].at < due[1].at)
        ) {
          due = entry;
        }
      }
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].callback();
    }
    this.#now = until;
  }
}

/** A promise's outcome, as seen so far. */
interface Tracked<T> {
  done: boolean;
  value: T | undefined;
}

function track<T>(promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = { done: false, value: undefined };
  promise.then((value) => {
    tracked.done = true;
    tracked.value = value;
  });
  return tracked;
}

/** Lets the reactions of the promises settled so far run. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

Deno.test("FairQueue.acquire() grants at once up to the capacity, and not beyond", async () => {
  const queue = new FairQueue({ capacity: 2, maxPerKey: 2 });
  assert.equal(typeof await queue.acquire("a", { timeoutMs: 0 }), "function");
  assert.equal(typeof await queue.acquire("b", { timeoutMs: 0 }), "function");
  assert.equal(await queue.acquire("c", { timeoutMs: 0 }), undefined);
  assert.equal(queue.used, 2);
  assert.equal(queue.waiting, 0);
});

Deno.test("FairQueue: a freed permit goes round robin across keys, FIFO within each key", async () => {
  const queue = new FairQueue({ capacity: 1, maxPerKey: 1 });
  const held = (await queue.acquire("x", { timeoutMs: 0 }))!;
  const order: string[] = [];
  const done = ["a1", "a2", "a3", "b1", "b2", "c1"].map((name) =>
    queue.acquire(name[0]!, { timeoutMs: 60_000 }).then((release) => {
      order.push(name);
      release!();
    })
  );
  assert.equal(queue.waiting, 6);
  assert.equal(queue.keysWaiting, 3);
  held();
  await Promise.all(done);
  // A semaphore would serve a1, a2, a3, b1, b2, c1.
  assert.deepEqual(order, ["a1", "b1", "c1", "a2", "b2", "a3"]);
  assert.equal(queue.used, 0);
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue: a freed permit goes to the waiting key holding the fewest, even if another key queued first", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({
    capacity: 2,
    maxPerKey: 2,
    setTimer: timers.set,
  });
  const a1 = (await queue.acquire("a", { timeoutMs: 0 }))!;
  const a2 = (await queue.acquire("a", { timeoutMs: 0 }))!;
  const a3 = track(queue.acquire("a", { timeoutMs: 1_000 }));
  const b1 = track(queue.acquire("b", { timeoutMs: 1_000 }));
  a1();
  await flush();
  assert.equal(typeof b1.value, "function");
  assert.equal(a3.done, false);
  a2();
  await flush();
  assert.equal(typeof a3.value, "function");
  (a3.value as () => void)();
  (b1.value as () => void)();
  assert.equal(queue.used, 0);
  assert.equal(timers.pending, 0);
});

Deno.test("FairQueue: a key may hold maxPerKey permits; more of it wait while other keys take the rest", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({ capacity: 4, setTimer: timers.set });
  assert.equal(queue.maxPerKey, 2);
  const a1 = (await queue.acquire("a", { timeoutMs: 0 }))!;
  const a2 = (await queue.acquire("a", { timeoutMs: 0 }))!;
  assert.equal(await queue.acquire("a", { timeoutMs: 0 }), undefined);
  const a3 = track(queue.acquire("a", { timeoutMs: 1_000 }));
  await flush();
  assert.equal(a3.done, false);
  assert.equal(queue.used, 2);
  const b1 = await queue.acquire("b", { timeoutMs: 0 });
  const b2 = await queue.acquire("b", { timeoutMs: 0 });
  assert.equal(queue.used, 4);
  a1();
  await flush();
  assert.equal(typeof a3.value, "function");
  for (const release of [a2, b1!, b2!, a3.value as () => void]) release();
  assert.equal(queue.used, 0);
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue: maxPerKey above the capacity is cut to it", () => {
  assert.equal(new FairQueue({ capacity: 3, maxPerKey: 10 }).maxPerKey, 3);
  assert.equal(new FairQueue({ capacity: 1 }).maxPerKey, 1);
});

Deno.test("FairQueue: one key's burst does not hold up another key (the webhook's scenario)", async () => {
  // 4 permits, default cap: tenant A takes all it may, 8 more of its
  // reviews queue; tenant B's single review gets a permit at once.
  const timers = new ManualTimers();
  const queue = new FairQueue({ capacity: 4, setTimer: timers.set });
  const aHeld: (() => void)[] = [];
  const aQueued: Tracked<(() => void) | undefined>[] = [];
  for (let i = 0; i < 10; i++) {
    const tracked = track(queue.acquire("a", { timeoutMs: 2_000 }));
    aQueued.push(tracked);
  }
  await flush();
  for (const tracked of aQueued.splice(0)) {
    if (tracked.done) aHeld.push(tracked.value!);
    else aQueued.push(tracked);
  }
  assert.equal(aHeld.length, 2);
  assert.equal(aQueued.length, 8);
  const b = await queue.acquire("b", { timeoutMs: 2_000 });
  assert.equal(typeof b, "function");
  assert.equal(queue.waiting, 8);
  b!();
  await flush();
  // B's permit is free again, but A is at its cap.
  assert.equal(aQueued.filter((t) => t.done).length, 0);
  for (const release of aHeld) release();
  await flush();
  const aNext = aQueued.filter((t) => t.done);
  assert.deepEqual(aNext, aQueued.slice(0, 2));
  for (const t of aNext) (t.value as () => void)();
  await flush();
  assert.deepEqual(aQueued.filter((t) => t.done), aQueued.slice(0, 4));
  timers.advance(2_000);
  await flush();
  for (const t of aQueued.slice(2, 4)) (t.value as () => void)();
  assert.deepEqual(aQueued.slice(4).map((t) => t.value), [
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
  assert.equal(queue.used, 0);
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue: without a per-key cap, another key is still served before a busy key's queue", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({
    capacity: 4,
    maxPerKey: 4,
    setTimer: timers.set,
  });
  const aHeld: (() => void)[] = [];
  for (let i = 0; i < 4; i++) {
    aHeld.push((await queue.acquire("a", { timeoutMs: 0 }))!);
  }
  const aQueued = Array.from(
    { length: 8 },
    () => track(queue.acquire("a", { timeoutMs: 2_000 })),
  );
  const b = track(queue.acquire("b", { timeoutMs: 2_000 }));
  await flush();
  assert.equal(b.done, false);
  aHeld.pop()!();
  await flush();
  assert.equal(typeof b.value, "function");
  assert.equal(aQueued.filter((t) => t.done).length, 0);
  (b.value as () => void)();
  for (const release of aHeld) release();
  await flush();
  // A's queue, in order, took the permits B and A gave back.
  assert.deepEqual(aQueued.filter((t) => t.done), aQueued.slice(0, 4));
  for (const t of aQueued.slice(0, 4)) (t.value as () => void)();
  await flush();
  assert.deepEqual(aQueued.filter((t) => t.done), aQueued);
  for (const t of aQueued.slice(4)) (t.value as () => void)();
  assert.equal(queue.used, 0);
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue.acquire() answers undefined when the wait times out, and forgets the waiter and its key", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({ capacity: 1, setTimer: timers.set });
  const held = (await queue.acquire("x", { timeoutMs: 0 }))!;
  const waiting = track(queue.acquire("a", { timeoutMs: 100 }));
  assert.equal(queue.keys, 2);
  timers.advance(99);
  await flush();
  assert.equal(waiting.done, false);
  timers.advance(1);
  await flush();
  assert.equal(waiting.done, true);
  assert.equal(waiting.value, undefined);
  assert.equal(queue.waiting, 0);
  assert.equal(queue.keysWaiting, 0);
  assert.equal(queue.keys, 1);
  held();
  assert.equal(queue.used, 0);
  assert.equal(queue.keys, 0);
  assert.equal(timers.pending, 0);
});

Deno.test("FairQueue: a waiter timing out in the middle of its key's queue leaves the others in order", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({ capacity: 1, setTimer: timers.set });
  const held = (await queue.acquire("x", { timeoutMs: 0 }))!;
  const a1 = track(queue.acquire("a", { timeoutMs: 1_000 }));
  const a2 = track(queue.acquire("a", { timeoutMs: 10 }));
  const a3 = track(queue.acquire("a", { timeoutMs: 1_000 }));
  timers.advance(10);
  await flush();
  assert.equal(a2.done, true);
  assert.equal(a2.value, undefined);
  held();
  await flush();
  assert.equal(typeof a1.value, "function");
  assert.equal(a3.done, false);
  (a1.value as () => void)();
  await flush();
  assert.equal(typeof a3.value, "function");
  (a3.value as () => void)();
  assert.equal(queue.used, 0);
  assert.equal(timers.pending, 0);
});

Deno.test("FairQueue.acquire() stops waiting when its signal aborts", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({ capacity: 1, setTimer: timers.set });
  const held = (await queue.acquire("x", { timeoutMs: 0 }))!;
  const stop = new AbortController();
  const waiting = queue.acquire("a", {
    timeoutMs: 60_000,
    signal: stop.signal,
  });
  stop.abort();
  assert.equal(await waiting, undefined);
  assert.equal(queue.waiting, 0);
  assert.equal(queue.keys, 1);
  assert.equal(timers.pending, 0);
  held();
  assert.equal(queue.used, 0);
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue.acquire() with an aborted signal is granted when a permit is free, and does not wait otherwise", async () => {
  const queue = new FairQueue({ capacity: 1 });
  const signal = AbortSignal.abort();
  const release = await queue.acquire("a", { timeoutMs: 60_000, signal });
  assert.equal(typeof release, "function");
  assert.equal(
    await queue.acquire("b", { timeoutMs: 60_000, signal }),
    undefined,
  );
  assert.equal(queue.waiting, 0);
  release!();
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue: aborting after the grant changes nothing, and the grant stops the timer and the abort listener", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({ capacity: 1, setTimer: timers.set });
  const held = (await queue.acquire("x", { timeoutMs: 0 }))!;
  const stop = new AbortController();
  const listeners = new Set<unknown>();
  const { addEventListener, removeEventListener } = stop.signal;
  stop.signal.addEventListener = (
    ...args: Parameters<typeof addEventListener>
  ) => {
    listeners.add(args[1]);
    addEventListener.apply(stop.signal, args);
  };
  stop.signal.removeEventListener = (
    ...args: Parameters<typeof removeEventListener>
  ) => {
    listeners.delete(args[1]);
    removeEventListener.apply(stop.signal, args);
  };
  const waiting = queue.acquire("a", { timeoutMs: 100, signal: stop.signal });
  assert.equal(timers.pending, 1);
  assert.equal(listeners.size, 1);
  held();
  const release = await waiting;
  assert.equal(timers.pending, 0);
  assert.equal(listeners.size, 0);
  stop.abort();
  timers.advance(100);
  assert.equal(queue.used, 1);
  release!();
  assert.equal(queue.used, 0);
});

Deno.test("FairQueue.acquire() with timeoutMs Infinity waits without a timer until granted or aborted", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({ capacity: 1, setTimer: timers.set });
  const held = (await queue.acquire("x", { timeoutMs: 0 }))!;
  const stop = new AbortController();
  const waiting = track(
    queue.acquire("a", { timeoutMs: Infinity, signal: stop.signal }),
  );
  assert.equal(timers.pending, 0);
  await flush();
  assert.equal(waiting.done, false);
  stop.abort();
  await flush();
  assert.equal(waiting.done, true);
  assert.equal(waiting.value, undefined);
  held();
});

Deno.test("FairQueue.acquire() turns a waiter away at once when its key's queue is full", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({
    capacity: 1,
    maxQueuedPerKey: 2,
    setTimer: timers.set,
  });
  const held = (await queue.acquire("x", { timeoutMs: 0 }))!;
  const a1 = track(queue.acquire("a", { timeoutMs: 1_000 }));
  const a2 = track(queue.acquire("a", { timeoutMs: 1_000 }));
  const a3 = track(queue.acquire("a", { timeoutMs: 1_000 }));
  const b1 = track(queue.acquire("b", { timeoutMs: 1_000 }));
  await flush();
  assert.equal(a3.done, true);
  assert.equal(a3.value, undefined);
  assert.equal(a1.done || a2.done || b1.done, false);
  assert.equal(queue.waiting, 3);
  assert.equal(timers.pending, 3);
  timers.advance(1_000);
  held();
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue.acquire() never waits when maxQueuedPerKey is 0", async () => {
  const queue = new FairQueue({ capacity: 1, maxQueuedPerKey: 0 });
  const held = (await queue.acquire("a", { timeoutMs: 0 }))!;
  assert.equal(await queue.acquire("b", { timeoutMs: 60_000 }), undefined);
  assert.equal(queue.waiting, 0);
  held();
});

Deno.test("FairQueue.acquire() turns away a waiter of one key too many, but grants it a free permit", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({
    capacity: 2,
    maxPerKey: 1,
    maxKeys: 1,
    setTimer: timers.set,
  });
  const a1 = (await queue.acquire("a", { timeoutMs: 0 }))!;
  const a2 = track(queue.acquire("a", { timeoutMs: 100 }));
  const b1 = await queue.acquire("b", { timeoutMs: 100 });
  assert.equal(typeof b1, "function");
  const c1 = track(queue.acquire("c", { timeoutMs: 100 }));
  const a3 = track(queue.acquire("a", { timeoutMs: 100 }));
  await flush();
  assert.equal(c1.done, true);
  assert.equal(c1.value, undefined);
  assert.equal(a3.done, false);
  assert.equal(queue.keysWaiting, 1);
  timers.advance(100);
  await flush();
  assert.equal(a2.value, undefined);
  assert.equal(queue.keysWaiting, 0);
  // The key's waiters are gone: another key may wait now.
  const c2 = track(queue.acquire("c", { timeoutMs: 100 }));
  await flush();
  assert.equal(c2.done, false);
  assert.equal(queue.keysWaiting, 1);
  a1();
  await flush();
  assert.equal(typeof c2.value, "function");
  (c2.value as () => void)();
  b1!();
  assert.equal(queue.keys, 0);
});

Deno.test("FairQueue: a release given twice frees its permit once", async () => {
  const timers = new ManualTimers();
  const queue = new FairQueue({
    capacity: 1,
    maxPerKey: 1,
    setTimer: timers.set,
  });
  const a = (await queue.acquire("a", { timeoutMs: 0 }))!;
  const b = track(queue.acquire("b", { timeoutMs: 100 }));
  const c = track(queue.acquire("c", { timeoutMs: 100 }));
  a();
  a();
  await flush();
  assert.equal(typeof b.value, "function");
  assert.equal(c.done, false);
  assert.equal(queue.used, 1);
  const release = b.value as () => void;
  release();
  release();
  await flush();
  assert.equal(typeof c.value, "function");
  assert.equal(queue.used, 1);
  (c.value as () => void)();
  assert.equal(queue.used, 0);
  assert.equal(queue.keys, 0);
});

Deno.test("new FairQueue() refuses limits that are not integers in range", () => {
  for (const capacity of [0, -1, 1.5, NaN, Infinity]) {
    assert.throws(() => new FairQueue({ capacity }), RangeError);
  }
  for (const maxPerKey of [0, 1.5, NaN]) {
    assert.throws(() => new FairQueue({ capacity: 2, maxPerKey }), RangeError);
  }
  for (const limit of [-1, 0.5, NaN, Infinity]) {
    assert.throws(
      () => new FairQueue({ capacity: 2, maxQueuedPerKey: limit }),
      RangeError,
    );
    assert.throws(
      () => new FairQueue({ capacity: 2, maxKeys: limit }),
      RangeError,
    );
  }
});

type Op =
  | { kind: "acquire"; key: string; timeoutMs: number; abortable: boolean }
  | { kind: "release"; index: number; twice: boolean }
  | { kind: "abort"; index: number }
  | { kind: "advance"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("acquire" as const),
    key: fc.constantFrom("a", "b", "c", "d"),
    timeoutMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 50 })),
    abortable: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("release" as const),
    index: fc.nat(),
    twice: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("abort" as const), index: fc.nat() }),
  fc.record({
    kind: fc.constant("advance" as const),
    ms: fc.integer({ min: 0, max: 60 }),
  }),
);

interface Pending {
  key: string;
  stop: AbortController;
  tracked: Tracked<(() => void) | undefined>;
}

Deno.test("FairQueue: random acquires, releases, timeouts and aborts keep every bound and leak nothing", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        capacity: fc.integer({ min: 1, max: 5 }),
        maxPerKey: fc.integer({ min: 1, max: 5 }),
        maxQueuedPerKey: fc.integer({ min: 0, max: 4 }),
        maxKeys: fc.integer({ min: 0, max: 4 }),
      }),
      fc.array(op, { maxLength: 60 }),
      async (limits, ops) => {
        const timers = new ManualTimers();
        const queue = new FairQueue({ ...limits, setTimer: timers.set });
        const maxPerKey = Math.min(limits.maxPerKey, limits.capacity);
        let pending: Pending[] = [];
        const granted: { key: string; release: () => void }[] = [];
        const heldBy = (key: string) =>
          granted.filter((g) => g.key === key).length;
        /** Moves settled waiters out of `pending`; returns the granted ones. */
        const settle = () => {
          const now = pending.filter((p) => p.tracked.done);
          pending = pending.filter((p) => !p.tracked.done);
          const grants = now.filter((p) => p.tracked.value !== undefined);
          for (const p of grants) {
            granted.push({ key: p.key, release: p.tracked.value! });
          }
          return { grants, refused: now.length - grants.length };
        };
        const check = () => {
          assert.equal(queue.used, granted.length);
          assert.ok(queue.used <= limits.capacity);
          const waitingKeys = new Set(pending.map((p) => p.key));
          const keys = new Set([...waitingKeys, ...granted.map((g) => g.key)]);
          for (const key of keys) assert.ok(heldBy(key) <= maxPerKey);
          assert.equal(queue.waiting, pending.length);
          assert.equal(queue.keysWaiting, waitingKeys.size);
          assert.equal(queue.keys, keys.size);
          assert.equal(timers.pending, pending.length);
          for (const key of waitingKeys) {
            assert.ok(
              pending.filter((p) => p.key === key).length <=
                limits.maxQueuedPerKey,
            );
          }
          assert.ok(waitingKeys.size <= limits.maxKeys);
          // A permit is free only while every waiting key is at its cap.
          if (queue.used < limits.capacity) {
            for (const key of waitingKeys) {
              assert.equal(heldBy(key), maxPerKey);
            }
          }
        };
        for (const step of ops) {
          if (step.kind === "acquire") {
            const queued = pending.filter((p) => p.key === step.key).length;
            const grantable = granted.length < limits.capacity &&
              heldBy(step.key) < maxPerKey && queued === 0;
            const refused = !grantable &&
              (step.timeoutMs === 0 || queued >= limits.maxQueuedPerKey ||
                (queued === 0 &&
                  new Set(pending.map((p) => p.key)).size >= limits.maxKeys));
            const stop = new AbortController();
            pending.push({
              key: step.key,
              stop,
              tracked: track(
                queue.acquire(step.key, {
                  timeoutMs: step.timeoutMs,
                  ...(step.abortable ? { signal: stop.signal } : {}),
                }),
              ),
            });
            await flush();
            const { grants, refused: gone } = settle();
            assert.equal(grants.length, grantable ? 1 : 0);
            assert.equal(gone, refused ? 1 : 0);
          } else if (step.kind === "release") {
            if (granted.length === 0) continue;
            const { release } = granted.splice(
              step.index % granted.length,
              1,
            )[0]!;
            // Whose turn it is: the oldest waiter of a key below its cap
            // holding the fewest permits once this one is back.
            const eligible = pending.filter((p) => heldBy(p.key) < maxPerKey);
            const fewest = Math.min(...eligible.map((p) => heldBy(p.key)));
            release();
            if (step.twice) release();
            await flush();
            const { grants, refused } = settle();
            assert.equal(refused, 0);
            assert.equal(grants.length, eligible.length > 0 ? 1 : 0);
            const [next] = grants;
            if (next !== undefined) {
              assert.equal(heldBy(next.key) - 1, fewest);
              const first = eligible.find((p) => p.key === next.key);
              assert.equal(first, next);
            }
          } else if (step.kind === "abort") {
            if (pending.length === 0) continue;
            const target = pending[step.index % pending.length]!;
            target.stop.abort();
            await flush();
            const { grants } = settle();
            assert.equal(grants.length, 0);
          } else {
            timers.advance(step.ms);
            await flush();
            const { grants } = settle();
            assert.equal(grants.length, 0);
          }
          check();
        }
        // Drain: everything given back, every waiter served or timed out.
        while (granted.length > 0 || pending.length > 0) {
          for (const { release } of granted.splice(0)) release();
          await flush();
          settle();
          timers.advance(50);
          await flush();
          settle();
        }
        assert.equal(queue.used, 0);
        assert.equal(queue.waiting, 0);
        assert.equal(queue.keysWaiting, 0);
        assert.equal(queue.keys, 0);
        assert.equal(timers.pending, 0);
      },
    ),
    { numRuns: 300 },
  );
});
