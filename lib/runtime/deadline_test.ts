import assert from "node:assert/strict";
import { Deadline, DeadlineExceeded } from "./deadline.ts";

Deno.test("Deadline aborts its signal with DeadlineExceeded when time is up", async () => {
  const deadline = new Deadline(10, { what: "listing vpcs" });
  try {
    await new Promise((resolve) =>
      deadline.signal.addEventListener("abort", resolve)
    );
    assert.ok(deadline.signal.reason instanceof DeadlineExceeded);
    assert.equal(
      deadline.signal.reason.message,
      "listing vpcs did not finish within 10 ms",
    );
    assert.equal(deadline.remainingMs(), 0);
  } finally {
    deadline.close();
  }
});

Deno.test("Deadline.race() ends work that ignores the signal at the deadline", async () => {
  const deadline = new Deadline(10);
  try {
    const never = new Promise<string>(() => {});
    await assert.rejects(deadline.race(never), DeadlineExceeded);
  } finally {
    deadline.close();
  }
});

Deno.test("Deadline.race() settles as the work does before the deadline", async () => {
  const deadline = new Deadline(10_000);
  try {
    assert.equal(await deadline.race(Promise.resolve(42)), 42);
    await assert.rejects(
      deadline.race(Promise.reject(new Error("boom"))),
      /boom/,
    );
    assert.equal(deadline.signal.aborted, false);
  } finally {
    deadline.close();
  }
});

Deno.test("Deadline.remainingMs() counts down by its clock", () => {
  let now = 1_000;
  const deadline = new Deadline(500, { now: () => now });
  try {
    assert.equal(deadline.remainingMs(), 500);
    now += 200;
    assert.equal(deadline.remainingMs(), 300);
    now += 1_000;
    assert.equal(deadline.remainingMs(), 0);
  } finally {
    deadline.close();
  }
});

Deno.test("Deadline follows a caller's signal, and abort() ends it with a reason", async () => {
  const caller = new AbortController();
  const deadline = new Deadline(10_000, { signal: caller.signal });
  caller.abort(new Error("client went away"));
  await assert.rejects(
    deadline.race(new Promise(() => {})),
    /client went away/,
  );
  deadline.close();
  const early = new Deadline(10_000);
  early.abort(new Error("a list failed"));
  assert.match(String(early.signal.reason), /a list failed/);
  assert.equal(early.remainingMs(), 0);
  early.close();
  const already = new Deadline(10_000, { signal: AbortSignal.abort("gone") });
  assert.equal(already.signal.aborted, true);
  already.close();
});

Deno.test("Deadline.close() clears the timer and aborts what still runs", () => {
  const deadline = new Deadline(60_000);
  deadline.close();
  assert.equal(deadline.signal.aborted, true);
  assert.ok(!(deadline.signal.reason instanceof DeadlineExceeded));
});

Deno.test("Deadline.disarm() stops the clock but keeps following the caller", async () => {
  const caller = new AbortController();
  const deadline = new Deadline(10, { signal: caller.signal });
  deadline.disarm();
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(deadline.signal.aborted, false);
  caller.abort(new Error("stop watching"));
  assert.match(String(deadline.signal.reason), /stop watching/);
  deadline.close();
});
