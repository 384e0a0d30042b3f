import assert from "node:assert/strict";
import { Semaphore } from "./semaphore.ts";

Deno.test("Semaphore.acquire() grants at once while permits are free, and not beyond the capacity", async () => {
  const semaphore = new Semaphore(3);
  const first = await semaphore.acquire(2, { timeoutMs: 0 });
  const second = await semaphore.acquire(1, { timeoutMs: 0 });
  const third = await semaphore.acquire(1, { timeoutMs: 0 });
  assert.equal(typeof first, "function");
  assert.equal(typeof second, "function");
  assert.equal(third, undefined);
  assert.equal(semaphore.used, 3);
});

Deno.test("Semaphore.acquire() gives a waiter the permits another releases", async () => {
  const semaphore = new Semaphore(1);
  const held = (await semaphore.acquire(1, { timeoutMs: 0 }))!;
  const waiting = semaphore.acquire(1, { timeoutMs: 60_000 });
  assert.equal(semaphore.waiting, 1);
  held();
  const granted = await waiting;
  assert.equal(typeof granted, "function");
  assert.equal(semaphore.used, 1);
  granted!();
  assert.equal(semaphore.used, 0);
});

Deno.test("Semaphore.acquire() answers undefined when the wait times out, and forgets the waiter", async () => {
  const semaphore = new Semaphore(1);
  const held = (await semaphore.acquire(1, { timeoutMs: 0 }))!;
  assert.equal(await semaphore.acquire(1, { timeoutMs: 10 }), undefined);
  assert.equal(semaphore.waiting, 0);
  held();
  assert.equal(semaphore.used, 0);
});

Deno.test("Semaphore.acquire() stops waiting when its signal aborts", async () => {
  const semaphore = new Semaphore(1);
  const held = (await semaphore.acquire(1, { timeoutMs: 0 }))!;
  const stop = new AbortController();
  const waiting = semaphore.acquire(1, {
    timeoutMs: 60_000,
    signal: stop.signal,
  });
  stop.abort();
  assert.equal(await waiting, undefined);
  assert.equal(semaphore.waiting, 0);
  held();
});

Deno.test("Semaphore.acquire() grants in arrival order: a light acquirer does not overtake a heavy waiter", async () => {
  const semaphore = new Semaphore(4);
  const held = (await semaphore.acquire(3, { timeoutMs: 0 }))!;
  const order: string[] = [];
  const heavy = semaphore.acquire(4, { timeoutMs: 60_000 }).then((r) => {
    order.push("heavy");
    return r;
  });
  // One permit is free, but the heavy waiter came first.
  assert.equal(await semaphore.acquire(1, { timeoutMs: 0 }), undefined);
  const light = semaphore.acquire(1, { timeoutMs: 60_000 }).then((r) => {
    order.push("light");
    return r;
  });
  held();
  (await heavy)!();
  (await light)!();
  assert.deepEqual(order, ["heavy", "light"]);
  assert.equal(semaphore.used, 0);
});

Deno.test("Semaphore.acquire() cuts a weight above the capacity to the capacity", async () => {
  const semaphore = new Semaphore(2);
  const release = await semaphore.acquire(10, { timeoutMs: 0 });
  assert.equal(semaphore.used, 2);
  release!();
  assert.equal(semaphore.used, 0);
});

Deno.test("Semaphore: a release given twice frees its permits once", async () => {
  const semaphore = new Semaphore(2);
  const a = (await semaphore.acquire(1, { timeoutMs: 0 }))!;
  const b = (await semaphore.acquire(1, { timeoutMs: 0 }))!;
  a();
  a();
  assert.equal(semaphore.used, 1);
  b();
  assert.equal(semaphore.used, 0);
});

Deno.test("Semaphore: a timed-out heavy waiter lets the lighter waiters behind it go", async () => {
  const semaphore = new Semaphore(2);
  const held = (await semaphore.acquire(1, { timeoutMs: 0 }))!;
  const heavy = semaphore.acquire(2, { timeoutMs: 20 });
  const light = semaphore.acquire(1, { timeoutMs: 60_000 });
  assert.equal(await heavy, undefined);
  const granted = await light;
  assert.equal(typeof granted, "function");
  granted!();
  held();
});

Deno.test("new Semaphore() refuses a capacity that is not a positive integer", () => {
  for (const capacity of [0, -1, 1.5, NaN]) {
    assert.throws(() => new Semaphore(capacity), RangeError);
  }
});

/** A task that ends when the test says, recording the order tasks start in. */
function controlled(): {
  task: (name: string, signal: AbortSignal) => Promise<string>;
  started: string[];
  finish: (name: string) => void;
} {
  const started: string[] = [];
  const pending = new Map<string, () => void>();
  return {
    started,
    task: (name) =>
      new Promise((resolve) => {
        started.push(name);
        pending.set(name, () => resolve(name));
      }),
    finish: (name) => pending.get(name)!(),
  };
}

/** Lets promise callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

Deno.test("Semaphore.wrap() runs at most the capacity of tasks at once, the others in the order they came", async () => {
  const semaphore = new Semaphore(2);
  const { task, started, finish } = controlled();
  const limited = semaphore.wrap(task);
  const signal = new AbortController().signal;
  const answers = ["a", "b", "c", "d"].map((name) => limited(name, signal));
  await settle();
  assert.deepEqual(started, ["a", "b"]);
  assert.equal(semaphore.used, 2);
  assert.equal(semaphore.waiting, 2);
  finish("b");
  await settle();
  assert.deepEqual(started, ["a", "b", "c"]);
  finish("a");
  finish("c");
  await settle();
  finish("d");
  assert.deepEqual(await Promise.all(answers), ["a", "b", "c", "d"]);
  assert.equal(semaphore.used, 0);
  assert.equal(semaphore.waiting, 0);
});

Deno.test("Semaphore.wrap() rejects a waiting task whose signal aborts, which never runs, and frees the permit of a task that throws", async () => {
  const semaphore = new Semaphore(1);
  const { task, started, finish } = controlled();
  const limited = semaphore.wrap(task);
  const first = limited("a", new AbortController().signal);
  const abort = new AbortController();
  const second = limited("b", abort.signal);
  const third = limited("c", new AbortController().signal);
  abort.abort(new Error("stopped"));
  await assert.rejects(second, /stopped/);
  finish("a");
  await first;
  await settle();
  assert.deepEqual(started, ["a", "c"]);
  finish("c");
  await third;
  const failing = semaphore.wrap(() => Promise.reject(new Error("403")));
  await assert.rejects(failing("x", new AbortController().signal), /403/);
  assert.equal(semaphore.used, 0);
  await assert.rejects(
    limited("d", AbortSignal.abort(new Error("gone"))),
    /gone/,
  );
  assert.deepEqual(started, ["a", "c"], "an aborted signal never runs");
});

Deno.test("Semaphore.wrap() tells when each task gets its turn, and waits without a deadline", async () => {
  const semaphore = new Semaphore(1);
  const { task, finish } = controlled();
  const turns: string[] = [];
  const limited = semaphore.wrap(task, {
    onStart: (name) => turns.push(name),
  });
  const signal = new AbortController().signal;
  const answers = [limited("a", signal), limited("b", signal)];
  await settle();
  assert.deepEqual(turns, ["a"]);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(turns, ["a"], "b still waits, no timer gave up on it");
  assert.equal(semaphore.waiting, 1);
  finish("a");
  await settle();
  assert.deepEqual(turns, ["a", "b"]);
  finish("b");
  await Promise.all(answers);
});
