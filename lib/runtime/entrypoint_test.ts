import assert from "node:assert/strict";
import {
  drainTimeoutWithin,
  runEntrypoint,
  type ShutdownStep,
  shutdownWithin,
} from "./entrypoint.ts";
import { createLogger, type LogLevel } from "./log.ts";

interface Options {
  logLevel: LogLevel;
}

function harness(
  run: (options: Options) => Promise<number>,
  plainErrors?: boolean,
) {
  const out: string[] = [];
  const err: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const entry = (args: string[]) =>
    runEntrypoint(args, {
      name: "thing",
      summary: "Does a thing.",
      flags: [{ name: "log-level", default: "info", help: "level" }],
      parse(argv) {
        if (argv.includes("--help")) return { help: true };
        if (argv.includes("--bad")) throw new TypeError("Cannot parse --bad");
        return { help: false, options: { logLevel: "info" } };
      },
      run,
      ...(plainErrors === undefined ? {} : { plainErrors }),
    }, {
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      write: (line) => lines.push(JSON.parse(line)),
    });
  return { entry, out, err, lines };
}

Deno.test("runEntrypoint() prints --help and exits 0 without running", async () => {
  let ran = false;
  const h = harness(() => {
    ran = true;
    return Promise.resolve(0);
  });
  assert.equal(await h.entry(["--help"]), 0);
  assert.equal(ran, false);
  assert.match(h.out.join(""), /^Usage: thing \[flags\]\n\nDoes a thing\./);
  assert.match(h.out.join(""), /--log-level=<value>/);
});

Deno.test("runEntrypoint() exits 2 on a flag error, naming the program", async () => {
  const h = harness(() => Promise.resolve(0));
  assert.equal(await h.entry(["--bad"]), 2);
  assert.deepEqual(h.err, ["thing: Cannot parse --bad"]);
});

Deno.test("runEntrypoint() returns run's exit code", async () => {
  const h = harness(() => Promise.resolve(0));
  assert.equal(await h.entry([]), 0);
  assert.deepEqual(h.lines, []);
});

Deno.test("runEntrypoint() turns a startup failure into one 'cannot start' log line and exit 1", async () => {
  const h = harness(() => Promise.reject(new Error("kubeconfig unreadable")));
  assert.equal(await h.entry([]), 1);
  assert.equal(h.lines.length, 1);
  const line = h.lines[0]!;
  assert.equal(line.level, "error");
  assert.equal(line.msg, "cannot start");
  assert.equal(line.component, "thing");
  assert.match(JSON.stringify(line.error), /kubeconfig unreadable/);
});

Deno.test("runEntrypoint() with plainErrors writes a failure as one line naming the program, no log line", async () => {
  const failure = new Error("Cannot load kubeconfig /k: no such file", {
    cause: new Error("deep"),
  });
  const h = harness(() => Promise.reject(failure), true);
  assert.equal(await h.entry([]), 1);
  assert.deepEqual(h.err, ["thing: Cannot load kubeconfig /k: no such file"]);
  assert.deepEqual(h.lines, []);
});

/** A logger into an array of records, and a deadline the test fires. */
function shutdownHarness() {
  const records: Record<string, unknown>[] = [];
  const log = createLogger({
    level: "debug",
    write: (line) => records.push(JSON.parse(line)),
  });
  const waits: { ms: number; signal: AbortSignal }[] = [];
  let fire = () => {};
  const wait = (ms: number, signal: AbortSignal) => {
    waits.push({ ms, signal });
    return new Promise<void>((resolve) => (fire = resolve));
  };
  let clock = 0;
  const now = () => (clock += 5);
  return { records, log, waits, fire: () => fire(), wait, now };
}

/** A step that records its start and ends when `end()` is called. */
function manualStep(name: string, order: string[]) {
  let end = () => {};
  const step: ShutdownStep = {
    name,
    stop: () => {
      order.push(name);
      return new Promise<void>((resolve) => (end = resolve));
    },
  };
  return { step, end: () => end() };
}

/** Lets every queued promise callback run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

Deno.test("shutdownWithin() runs stages in order and their steps at once, then cancels the deadline", async () => {
  const h = shutdownHarness();
  const order: string[] = [];
  const a = manualStep("a", order);
  const b = manualStep("b", order);
  const c = manualStep("c", order);
  const result = shutdownWithin([[a.step, b.step], [c.step]], {
    timeoutMs: 15_000,
    log: h.log,
    wait: h.wait,
    now: h.now,
  });
  await settle();
  assert.deepEqual(order, ["a", "b"]);
  a.end();
  await settle();
  assert.deepEqual(order, ["a", "b"], "stage 2 began before stage 1 ended");
  b.end();
  await settle();
  assert.deepEqual(order, ["a", "b", "c"]);
  c.end();
  assert.deepEqual(await result, {
    finished: true,
    pending: [],
    notStarted: [],
  });
  assert.deepEqual(h.waits.map((w) => [w.ms, w.signal.aborted]), [[
    15_000,
    true,
  ]]);
  assert.deepEqual(
    h.records.map((r) => [r.level, r.msg, r.step]),
    [
      ["debug", "shutdown step done", "a"],
      ["debug", "shutdown step done", "b"],
      ["debug", "shutdown step done", "c"],
    ],
  );
});

Deno.test("shutdownWithin() returns at the deadline when a step never ends, naming it and the steps never started", async () => {
  const h = shutdownHarness();
  const never: ShutdownStep = {
    name: "rule watcher",
    stop: () => new Promise(() => {}),
  };
  let laterRan = false;
  const result = shutdownWithin([
    [{ name: "admission server", stop: () => Promise.resolve() }, never],
    [{ name: "leader lease", stop: () => (laterRan = true) }],
  ], { timeoutMs: 8_000, log: h.log, wait: h.wait, now: h.now });
  await settle();
  h.fire();
  assert.deepEqual(await result, {
    finished: false,
    pending: ["rule watcher"],
    notStarted: ["leader lease"],
  });
  assert.equal(laterRan, false);
  const timedOut = h.records.find((r) => r.level === "error");
  assert.deepEqual(timedOut && { ...timedOut, time: undefined }, {
    time: undefined,
    level: "error",
    msg: "shutdown timed out, exiting anyway",
    timeoutMs: 8_000,
    pending: ["rule watcher"],
    notStarted: ["leader lease"],
  });
  assert.ok(
    h.records.some((r) =>
      r.msg === "shutdown step done" && r.step === "admission server"
    ),
  );
});

Deno.test("shutdownWithin() with a real clock ends a shutdown that a step holds, at a tiny deadline", async () => {
  const h = shutdownHarness();
  const result = await shutdownWithin([[{
    name: "hung",
    stop: () => new Promise(() => {}),
  }]], { timeoutMs: 1, log: h.log });
  assert.deepEqual(result, {
    finished: false,
    pending: ["hung"],
    notStarted: [],
  });
});

Deno.test("shutdownWithin() logs a step that throws or rejects and goes on with the others", async () => {
  const h = shutdownHarness();
  let laterRan = false;
  const result = await shutdownWithin([
    [
      {
        name: "throws",
        stop: () => {
          throw new Error("sync boom");
        },
      },
      { name: "rejects", stop: () => Promise.reject(new Error("async boom")) },
    ],
    [{ name: "later", stop: () => (laterRan = true) }],
  ], { timeoutMs: 1_000, log: h.log, wait: h.wait, now: h.now });
  assert.equal(result.finished, true);
  assert.equal(laterRan, true);
  const failed = h.records.filter((r) => r.msg === "shutdown step failed");
  assert.deepEqual(
    failed.map((r) => [
      r.level,
      r.step,
      (r.error as Record<string, unknown>).message,
    ]),
    [["error", "throws", "sync boom"], ["error", "rejects", "async boom"]],
  );
});

Deno.test("drainTimeoutWithin() leaves 1 s of the deadline, or a quarter of a short one, to close connections", () => {
  assert.equal(drainTimeoutWithin(8_000), 7_000);
  assert.equal(drainTimeoutWithin(15_000), 14_000);
  assert.equal(drainTimeoutWithin(4_000), 3_000);
  assert.equal(drainTimeoutWithin(2_000), 1_500);
  assert.equal(drainTimeoutWithin(1), 0);
  assert.equal(drainTimeoutWithin(0), 0);
});
