import assert from "node:assert/strict";
import { ABORTED, settledWithin, untilAborted, valueWithin } from "./settle.ts";

const never = new Promise<number>(() => {});

Deno.test("untilAborted() gives the value, the rejection, or ABORTED once the signal aborts", async () => {
  const signal = new AbortController().signal;
  assert.equal(await untilAborted(Promise.resolve(1), signal), 1);
  await assert.rejects(untilAborted(Promise.reject(new Error("x")), signal));
  const controller = new AbortController();
  const waiting = untilAborted(never, controller.signal);
  controller.abort();
  assert.equal(await waiting, ABORTED);
  // Already aborted: ABORTED, and a later rejection is not unhandled.
  assert.equal(
    await untilAborted(Promise.reject(new Error("late")), controller.signal),
    ABORTED,
  );
});

Deno.test("settledWithin() ends when the promise settles, or after the time, never throwing", async () => {
  await settledWithin(Promise.reject(new Error("x")), 10_000);
  await settledWithin(never, 5);
});

Deno.test("valueWithin() gives the value, or undefined after the time or at once for none", async () => {
  assert.equal(await valueWithin(Promise.resolve(2), 10_000), 2);
  assert.equal(await valueWithin(never, 5), undefined);
  assert.equal(await valueWithin(Promise.resolve(2), 0), undefined);
  await assert.rejects(valueWithin(Promise.reject(new Error("x")), 10_000));
});
