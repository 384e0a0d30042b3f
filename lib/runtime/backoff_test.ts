import assert from "node:assert/strict";
import { Backoff, sleep } from "./backoff.ts";

Deno.test("Backoff.next() doubles up to the cap and reset() starts over", () => {
  const backoff = new Backoff({
    initialMs: 100,
    maxMs: 1000,
    random: () => 1 - Number.EPSILON,
  });
  const delays = Array.from({ length: 6 }, () => backoff.next());
  assert.deepEqual(delays, [100, 200, 400, 800, 1000, 1000]);
  backoff.reset();
  assert.equal(backoff.next(), 100);
});

Deno.test("Backoff.next() jitters each delay into [base/2, base)", () => {
  assert.equal(new Backoff({ initialMs: 100, random: () => 0 }).next(), 50);
  assert.equal(new Backoff({ initialMs: 100, random: () => 0.5 }).next(), 75);
});

Deno.test("Backoff() rejects nonsense options", () => {
  assert.throws(() => new Backoff({ initialMs: 0 }), RangeError);
  assert.throws(
    () => new Backoff({ initialMs: 10, maxMs: 5 }),
    /current values are 10 and 5/,
  );
  assert.throws(() => new Backoff({ factor: 0.5 }), RangeError);
});

Deno.test("sleep() resolves early when its signal aborts", async () => {
  const controller = new AbortController();
  const started = Date.now();
  const done = sleep(60_000, controller.signal);
  controller.abort();
  await done;
  assert.ok(Date.now() - started < 1000);
});
