import assert from "node:assert/strict";
import { KeyedTasks } from "./keyed_tasks.ts";

/** A task body that ends when the test says so. */
interface Gate {
  work: (signal: AbortSignal) => Promise<void>;
  /** Lets the task succeed. */
  pass(): void;
  /** Lets the task fail with `error`. */
  fail(error: unknown): void;
  /** The signal the task was given, once it started. */
  signal(): AbortSignal | undefined;
}

function gate(): Gate {
  const { promise, resolve, reject } = Promise.withResolvers<void>();
  let given: AbortSignal | undefined;
  return {
    work: (signal) => {
      given = signal;
      return promise;
    },
    pass: () => resolve(),
    fail: (error) => reject(error),
    signal: () => given,
  };
}

/**
 * KeyedTasks with a settable clock and delays without jitter (1 s, 2 s,
 * 4 s, then 4 s), that counts onSettled calls and lets a test wait for the
 * next one.
 */
function harness(): {
  tasks: KeyedTasks;
  clock: { now: number };
  settledCalls: () => number;
  settled: () => Promise<void>;
  /** What onSettled saw, per call: `running(key)` and `error(key)` of "a". */
  seen: { running: boolean; error: unknown }[];
} {
  const clock = { now: 10_000 };
  let calls = 0;
  let waiters: (() => void)[] = [];
  const seen: { running: boolean; error: unknown }[] = [];
  const tasks: KeyedTasks = new KeyedTasks({
    backoff: { initialMs: 2_000, maxMs: 8_000, random: () => 0 },
    now: () => clock.now,
    onSettled: () => {
      calls++;
      seen.push({ running: tasks.running("a"), error: tasks.error("a") });
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    },
  });
  return {
    tasks,
    clock,
    settledCalls: () => calls,
    settled: () => new Promise<void>((resolve) => waiters.push(resolve)),
    seen,
  };
}

/** Runs work for `key` that fails at once with `error`, and waits for it. */
async function failOnce(
  h: ReturnType<typeof harness>,
  key: string,
  fingerprint: string,
  error: unknown = new Error(`${key} failed`),
): Promise<boolean> {
  const settled = h.settled();
  const started = h.tasks.run(key, fingerprint, () => Promise.reject(error));
  if (started) await settled;
  return started;
}

/** Runs work for `key` that succeeds at once, and waits for it. */
async function passOnce(
  h: ReturnType<typeof harness>,
  key: string,
  fingerprint: string,
): Promise<boolean> {
  const settled = h.settled();
  const started = h.tasks.run(key, fingerprint, () => Promise.resolve());
  if (started) await settled;
  return started;
}

Deno.test("KeyedTasks.run() runs at most one task per key at a time", async () => {
  const h = harness();
  const first = gate();
  assert.equal(h.tasks.run("a", "v1", first.work), true);
  assert.equal(h.tasks.running("a"), true);
  let second = 0;
  const count = () => {
    second++;
    return Promise.resolve();
  };
  assert.equal(h.tasks.run("a", "v1", count), false);
  assert.equal(h.tasks.run("a", "v2", count), false);
  assert.equal(second, 0);

  const other = gate();
  assert.equal(h.tasks.run("b", "v1", other.work), true);
  assert.equal(h.tasks.running("b"), true);
  assert.deepEqual(h.tasks.keys().sort(), ["a", "b"]);

  let settled = h.settled();
  first.pass();
  await settled;
  assert.equal(h.tasks.running("a"), false);
  assert.equal(h.tasks.running("b"), true);
  settled = h.settled();
  assert.equal(h.tasks.run("a", "v1", count), true);
  await settled;
  assert.equal(second, 1);

  settled = h.settled();
  other.pass();
  await settled;
  assert.equal(h.settledCalls(), 3);
  await h.tasks.stop();
});

Deno.test("KeyedTasks.running() and error() know nothing of unknown keys", async () => {
  const h = harness();
  assert.equal(h.tasks.running("nope"), false);
  assert.equal(h.tasks.error("nope"), undefined);
  assert.deepEqual(h.tasks.keys(), []);
  assert.equal(h.tasks.nextRetryAt(), undefined);
  await h.tasks.stop();
});

Deno.test("KeyedTasks.run() blocks the same failed work until its retry time", async () => {
  const h = harness();
  const error = new Error("503 service unavailable");
  assert.equal(await failOnce(h, "a", "v1", error), true);
  assert.equal(h.tasks.error("a"), error);
  assert.equal(h.tasks.running("a"), false);
  assert.equal(h.tasks.nextRetryAt(), 11_000);

  h.clock.now = 10_999;
  assert.equal(h.tasks.run("a", "v1", () => Promise.resolve()), false);
  h.clock.now = 11_000;
  // Fails again: the delay doubles from the new failure.
  assert.equal(await failOnce(h, "a", "v1"), true);
  assert.equal(h.tasks.nextRetryAt(), 13_000);
  h.clock.now = 13_000;
  assert.equal(await failOnce(h, "a", "v1"), true);
  assert.equal(h.tasks.nextRetryAt(), 17_000);
  h.clock.now = 17_000;
  assert.equal(await failOnce(h, "a", "v1"), true);
  // Capped at maxMs (8 s, halved by the jitter).
  assert.equal(h.tasks.nextRetryAt(), 21_000);
  await h.tasks.stop();
});

Deno.test("KeyedTasks.run() starts different work for a failing key at once", async () => {
  const h = harness();
  await failOnce(h, "a", "v1");
  assert.equal(h.tasks.nextRetryAt(), 11_000);
  assert.equal(await failOnce(h, "a", "v2"), true);
  // The newest failure counts, and the backoff kept growing.
  assert.equal(h.tasks.nextRetryAt(), 12_000);
  assert.equal(h.tasks.run("a", "v2", () => Promise.resolve()), false);
  // The older work is no longer the failed one.
  assert.equal(await passOnce(h, "a", "v1"), true);
  await h.tasks.stop();
});

Deno.test("KeyedTasks.run() clears the error and resets the backoff after a success", async () => {
  const h = harness();
  await failOnce(h, "a", "v1");
  h.clock.now = 11_000;
  await failOnce(h, "a", "v1");
  assert.equal(h.tasks.nextRetryAt(), 13_000);

  assert.equal(await passOnce(h, "a", "v2"), true);
  assert.equal(h.tasks.error("a"), undefined);
  assert.equal(h.tasks.nextRetryAt(), undefined);
  assert.deepEqual(h.tasks.keys(), ["a"]);

  await failOnce(h, "a", "v1");
  assert.equal(h.tasks.nextRetryAt(), 12_000, "first delay again");
  await h.tasks.stop();
});

Deno.test("KeyedTasks.run() counts a work function that throws synchronously as a failure", async () => {
  const h = harness();
  const error = new TypeError("bad input");
  const settled = h.settled();
  assert.equal(
    h.tasks.run("a", "v1", () => {
      throw error;
    }),
    true,
  );
  await settled;
  assert.equal(h.tasks.error("a"), error);
  assert.equal(h.tasks.nextRetryAt(), 11_000);
  await h.tasks.stop();
});

Deno.test("KeyedTasks calls onSettled after each task, once its key is idle", async () => {
  const h = harness();
  await passOnce(h, "a", "v1");
  await failOnce(h, "a", "v2", "plain string");
  await passOnce(h, "a", "v3");
  assert.equal(h.settledCalls(), 3);
  assert.deepEqual(h.seen, [
    { running: false, error: undefined },
    { running: false, error: "plain string" },
    { running: false, error: undefined },
  ]);
  await h.tasks.stop();
});

Deno.test("KeyedTasks.nextRetryAt() is the earliest retry time of all failed keys", async () => {
  const h = harness();
  await failOnce(h, "a", "v1"); // 10 s + 1 s
  h.clock.now = 10_500;
  await failOnce(h, "b", "v1"); // 10.5 s + 1 s
  await passOnce(h, "c", "v1");
  assert.equal(h.tasks.nextRetryAt(), 11_000);
  h.clock.now = 11_000;
  await failOnce(h, "a", "v1"); // 11 s + 2 s
  assert.equal(h.tasks.nextRetryAt(), 11_500);
  await passOnce(h, "b", "v2");
  assert.equal(h.tasks.nextRetryAt(), 13_000);
  h.tasks.forget("a");
  assert.equal(h.tasks.nextRetryAt(), undefined);
  await h.tasks.stop();
});

Deno.test("KeyedTasks.forget() drops idle keys, with their failure, but not running ones", async () => {
  const h = harness();
  await failOnce(h, "failed", "v1");
  await passOnce(h, "done", "v1");
  const busy = gate();
  h.tasks.run("busy", "v1", busy.work);
  assert.deepEqual(h.tasks.keys().sort(), ["busy", "done", "failed"]);

  h.tasks.forget("failed");
  h.tasks.forget("done");
  h.tasks.forget("busy");
  h.tasks.forget("unknown");
  assert.deepEqual(h.tasks.keys(), ["busy"]);
  assert.equal(h.tasks.running("busy"), true);
  assert.equal(h.tasks.run("busy", "v2", () => Promise.resolve()), false);
  // A forgotten failure no longer blocks the same work.
  assert.equal(h.tasks.error("failed"), undefined);
  assert.equal(await passOnce(h, "failed", "v1"), true);

  const settled = h.settled();
  busy.pass();
  await settled;
  assert.deepEqual(h.tasks.keys().sort(), ["busy", "failed"]);
  await h.tasks.stop();
});

Deno.test("KeyedTasks.stop() aborts running tasks and waits for them", async () => {
  const h = harness();
  const ended: string[] = [];
  const untilAborted = (key: string) => (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      signal.addEventListener("abort", () => {
        // End well after the abort itself: stop() must wait for this.
        setTimeout(() => {
          ended.push(key);
          if (key === "a") resolve();
          else reject(signal.reason);
        }, 20);
      }, { once: true });
    });
  assert.equal(h.tasks.run("a", "v1", untilAborted("a")), true);
  assert.equal(h.tasks.run("b", "v1", untilAborted("b")), true);
  const idle = gate();
  assert.equal(h.tasks.run("c", "v1", idle.work), true);
  assert.equal(idle.signal()?.aborted, false);
  idle.pass();

  await h.tasks.stop();
  assert.deepEqual(ended.sort(), ["a", "b"]);
  assert.equal(idle.signal()?.aborted, true);
  assert.equal(h.tasks.running("a"), false);
  assert.equal(h.tasks.running("b"), false);
  // No pass is triggered by tasks that end after stop().
  assert.equal(h.settledCalls(), 0);
});

Deno.test("KeyedTasks.run() starts nothing after stop()", async () => {
  const h = harness();
  await h.tasks.stop();
  let called = false;
  assert.equal(
    h.tasks.run("a", "v1", () => {
      called = true;
      return Promise.resolve();
    }),
    false,
  );
  assert.equal(called, false);
  assert.equal(h.tasks.running("a"), false);
  assert.deepEqual(h.tasks.keys(), []);
  await h.tasks.stop();
});

Deno.test("KeyedTasks uses Date.now and the default delays without options", async () => {
  const tasks = new KeyedTasks({ onSettled: () => {} });
  const before = Date.now();
  assert.equal(
    tasks.run("a", "v1", () => Promise.reject(new Error("x"))),
    true,
  );
  // stop() waits for the task, so its failure is recorded.
  await tasks.stop();
  const after = Date.now();
  const at = tasks.nextRetryAt();
  assert.ok(at !== undefined);
  // The first default delay is 500 ms scaled by a jitter in [0.5, 1].
  assert.ok(at >= before + 250 && at <= after + 500, String(at - before));
});

Deno.test("KeyedTasks.nextRetryAt() ignores a failed key while its retry runs", async () => {
  const h = harness();
  await failOnce(h, "a", "v1"); // may be retried at 11 s
  h.clock.now = 11_000;
  const retry = gate();
  assert.equal(h.tasks.run("a", "v1", retry.work), true);
  // Nothing is due while the retry runs: onSettled reports its end.
  assert.equal(h.tasks.nextRetryAt(), undefined);
  const settled = h.settled();
  retry.fail(new Error("again"));
  await settled;
  assert.equal(h.tasks.nextRetryAt(), 13_000);
  await h.tasks.stop();
});
