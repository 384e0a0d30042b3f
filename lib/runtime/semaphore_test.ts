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
