import assert from "node:assert/strict";
import { AccessWait } from "./access_wait.ts";

/** A wait of 1 s once sent, 5 s at most, on a clock the test moves. */
function clocked(): { wait: AccessWait; at: (ms: number) => void } {
  let now = 0;
  return {
    wait: new AccessWait({ waitMs: 1_000, maxWaitMs: 5_000, now: () => now }),
    at: (ms) => now = ms,
  };
}

Deno.test("AccessWait.view() hides a failure of a read never answered while its wait runs, and says when it ends", () => {
  const { wait, at } = clocked();
  at(100);
  wait.want(["a", "b", "c"]);
  wait.sent("a");
  wait.sent("b");
  const readings = new Map([
    ["a", { answer: true }],
    ["b", { error: "no answer within 10000 ms" }],
  ]);
  at(600);
  const view = wait.view(readings);
  assert.deepEqual([...view.readings], [["a", { answer: true }]]);
  assert.equal(view.nextAt, 1_100);
  // The caller's readings are left as they are.
  assert.equal(readings.size, 2);
});

Deno.test("AccessWait.view() reports a read unanswered once its wait is over: its failure, or that it was not answered", () => {
  const { wait, at } = clocked();
  wait.want(["a", "b", "c"]);
  for (const key of ["a", "b", "c"]) wait.sent(key);
  at(1_000);
  const view = wait.view(
    new Map([["a", { answer: false }], ["b", { error: "403 Forbidden" }]]),
  );
  assert.deepEqual([...view.readings], [
    ["a", { answer: false }],
    ["b", { error: "403 Forbidden" }],
    ["c", { error: "not answered within 1 s" }],
  ]);
  assert.equal(view.nextAt, undefined);
});

Deno.test("AccessWait.view() waits for a read still in line up to the longest wait, and counts the shorter one from when it is sent", () => {
  const { wait, at } = clocked();
  wait.want(["queued", "late"]);
  at(3_000);
  wait.sent("late");
  at(3_500);
  assert.deepEqual([...wait.view(new Map()).readings], []);
  assert.equal(wait.view(new Map()).nextAt, 4_000);
  at(4_000);
  assert.deepEqual([...wait.view(new Map()).readings], [
    ["late", { error: "not answered within 1 s" }],
  ]);
  // Sent again later: the first time counts.
  wait.sent("late");
  at(5_000);
  assert.deepEqual([...wait.view(new Map()).readings], [
    ["queued", {
      error: "not sent within 5 s, behind the controller's other reviews",
    }],
    ["late", { error: "not answered within 1 s" }],
  ]);
});

Deno.test("AccessWait.view() returns the readings themselves when every read is answered, and an answer kept through a failed read again counts", () => {
  const { wait } = clocked();
  wait.want(["a"]);
  const readings = new Map([["a", { answer: true, error: "timeout" }]]);
  const view = wait.view(readings);
  assert.equal(view.readings, readings);
  assert.equal(view.nextAt, undefined);
});

Deno.test("AccessWait.want() keeps the times of a read wanted before, and a read wanted again after it was dropped waits anew", () => {
  const { wait, at } = clocked();
  wait.want(["a", "b"]);
  wait.sent("a");
  at(800);
  wait.want(["a", "c"]);
  wait.sent("c");
  // a: sent at 0; c: sent at 800.
  assert.equal(wait.view(new Map()).nextAt, 1_000);
  at(1_000);
  assert.deepEqual([...wait.view(new Map()).readings.keys()], ["a"]);
  wait.want(["c"]);
  wait.want(["a", "c"]);
  wait.sent("a");
  assert.deepEqual([...wait.view(new Map()).readings.keys()], []);
  assert.equal(wait.view(new Map()).nextAt, 1_800);
  // A read not wanted is not noted as sent.
  wait.sent("z");
  at(6_000);
  assert.deepEqual([...wait.view(new Map()).readings.keys()], ["a", "c"]);
});
