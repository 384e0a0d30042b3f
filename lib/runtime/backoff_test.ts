import assert from "node:assert/strict";
import { Backoff, ReconnectBackoff, sleep } from "./backoff.ts";

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

Deno.test("ReconnectBackoff: unanswered failures stay within unansweredMaxMs, the first answer after them starts over", () => {
  const delays = new ReconnectBackoff({
    initialMs: 100,
    maxMs: 10_000,
    unansweredMaxMs: 400,
    random: () => 1 - Number.EPSILON,
  });
  const answered = { answered: true };
  const unanswered = { answered: false };
  // kcp answers 500 for a while: the delays grow as a Backoff's do.
  assert.deepEqual(
    Array.from({ length: 4 }, () => delays.next(answered)),
    [100, 200, 400, 800],
  );
  // kcp is away (connection refused) for long: never more than 400 ms.
  assert.deepEqual(
    Array.from({ length: 6 }, () => delays.next(unanswered)),
    [100, 200, 400, 400, 400, 400],
  );
  // kcp is back but still starting (403, 404): the delays start over.
  assert.deepEqual(
    Array.from({ length: 3 }, () => delays.next(answered)),
    [100, 200, 400],
  );
  delays.reset();
  assert.equal(delays.next(unanswered), 100);
  assert.equal(delays.next(answered), 100);
});

Deno.test("ReconnectBackoff: unansweredMaxMs never raises the cap nor goes below the first delay", () => {
  const delays = new ReconnectBackoff({
    initialMs: 100,
    maxMs: 200,
    unansweredMaxMs: 5_000,
    random: () => 1 - Number.EPSILON,
  });
  assert.deepEqual(
    Array.from({ length: 3 }, () => delays.next({ answered: false })),
    [100, 200, 200],
  );
  const slow = new ReconnectBackoff({
    initialMs: 60_000,
    maxMs: 60_000,
    random: () => 1 - Number.EPSILON,
  });
  assert.equal(slow.next({ answered: false }), 60_000);
});

Deno.test("sleep() resolves early when its signal aborts", async () => {
  const controller = new AbortController();
  const started = Date.now();
  const done = sleep(60_000, controller.signal);
  controller.abort();
  await done;
  assert.ok(Date.now() - started < 1000);
});
