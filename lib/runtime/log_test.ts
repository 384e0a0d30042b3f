import assert from "node:assert/strict";
import {
  createLogger,
  createSampler,
  type LoggerOptions,
  parseLogLevel,
} from "./log.ts";

const TIME = "2024-05-01T12:00:00.000Z";

/** A logger writing into an array, with a fixed clock. */
function capture(
  options: LoggerOptions = {},
): { lines: string[]; log: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const log = createLogger({
    now: () => new Date(TIME),
    write: (line) => lines.push(line),
    ...options,
  });
  return { lines, log };
}

/** The one record written, parsed. */
function only(lines: string[]): Record<string, unknown> {
  assert.equal(lines.length, 1);
  return JSON.parse(lines[0] ?? "");
}

Deno.test("createLogger() writes one exact line of JSON per record", () => {
  const { lines, log } = capture({ fields: { component: "controller" } });
  log.info("reconciled", { cluster: "root:org", n: 3, ok: true });
  assert.deepEqual(lines, [
    `{"time":"${TIME}","level":"info","msg":"reconciled","component":"controller","cluster":"root:org","n":3,"ok":true}`,
  ]);
});

Deno.test("createLogger() writes the level name of each method", () => {
  const { lines, log } = capture({ level: "debug" });
  log.debug("a");
  log.info("b");
  log.warn("c");
  log.error("d");
  assert.deepEqual(
    lines.map((line) => JSON.parse(line).level),
    ["debug", "info", "warn", "error"],
  );
});

Deno.test("createLogger() drops records below the level without touching fields", () => {
  const { lines, log } = capture();
  let reads = 0;
  const fields = {
    get expensive(): string {
      reads++;
      return "x";
    },
  };
  log.debug("dropped", fields);
  assert.deepEqual(lines, []);
  assert.equal(reads, 0);
  log.info("kept", fields);
  assert.equal(reads, 1);
  assert.equal(only(lines).msg, "kept");

  const warnOnly = capture({ level: "warn" });
  warnOnly.log.info("dropped");
  warnOnly.log.warn("kept");
  warnOnly.log.error("kept too");
  assert.deepEqual(
    warnOnly.lines.map((line) => JSON.parse(line).msg),
    ["kept", "kept too"],
  );
});

Deno.test("createLogger() rejects an unknown level", () => {
  assert.throws(
    () => createLogger({ level: "trace" as unknown as "info" }),
    (e: unknown) =>
      e instanceof RangeError && e.message.endsWith("current value is 'trace'"),
  );
});

Deno.test("Logger.with() binds fields in order and call fields override them", () => {
  const { lines, log } = capture();
  const child = log.with({ cluster: "a", key: "k" }).with({ queue: "q" });
  child.info("m", { cluster: "b", extra: 1 });
  log.info("parent");
  assert.deepEqual(lines, [
    `{"time":"${TIME}","level":"info","msg":"m","cluster":"b","key":"k","queue":"q","extra":1}`,
    `{"time":"${TIME}","level":"info","msg":"parent"}`,
  ]);
});

Deno.test("Logger.with() copies the bound fields, not the caller's object", () => {
  const { lines, log } = capture();
  const bound: Record<string, unknown> = { a: 1 };
  const child = log.with(bound);
  bound.a = 2;
  bound.b = 3;
  child.info("m");
  assert.deepEqual(only(lines), { time: TIME, level: "info", msg: "m", a: 1 });
});

Deno.test("createLogger() keeps time, level and msg first and unreplaceable", () => {
  const { lines, log } = capture();
  log.with({ level: "debug" }).warn("real", { msg: "fake", time: 0, "7": "x" });
  assert.equal(
    lines[0],
    `{"time":"${TIME}","level":"warn","msg":"real","7":"x","field.level":"debug","field.msg":"fake","field.time":0}`,
  );
});

Deno.test("createLogger() serializes Errors with name, message, stack and nested cause", () => {
  class KubeApiError extends Error {
    override name = "KubeApiError";
  }
  const root = new Error("connection refused");
  const err = new KubeApiError("Cannot list deployments", { cause: root });
  const { lines, log } = capture();
  log.error("reconcile failed", { err, list: [new RangeError("r")] });

  const record = only(lines);
  const json = record.err as Record<string, unknown>;
  const cause = json.cause as Record<string, unknown>;
  assert.equal(typeof json.stack, "string");
  assert.match(String(json.stack), /Cannot list deployments/);
  assert.equal(typeof cause.stack, "string");
  delete json.stack;
  delete cause.stack;
  assert.deepEqual(json, {
    name: "KubeApiError",
    message: "Cannot list deployments",
    cause: { name: "Error", message: "connection refused" },
  });
  const [nested] = record.list as Record<string, unknown>[];
  assert.equal(nested?.name, "RangeError");
  assert.equal(nested?.message, "r");
});

Deno.test("createLogger() serializes odd Errors: no stack, non-Error cause, cause cycles, long chains", () => {
  const bare = new Error("bare", { cause: "just a string" });
  delete bare.stack;
  const loop = new Error("loop");
  loop.cause = loop;
  let chain = new Error("e0");
  for (let i = 1; i < 30; i++) chain = new Error(`e${i}`, { cause: chain });

  const { lines, log } = capture();
  log.error("odd", { bare, loop, chain });
  const record = only(lines);

  assert.deepEqual(record.bare, {
    name: "Error",
    message: "bare",
    cause: "just a string",
  });
  assert.equal((record.loop as Record<string, unknown>).cause, "[Circular]");
  let depth = 0;
  let link: unknown = record.chain;
  while (typeof link === "object" && link !== null) {
    link = (link as Record<string, unknown>).cause;
    depth++;
  }
  assert.equal(depth, 10);
  assert.equal(link, "[Truncated]");
});

Deno.test("createLogger() replaces cycles with [Circular] but repeats shared references", () => {
  const node: Record<string, unknown> = { name: "a" };
  node.self = node;
  const shared = { v: 1 };
  const list: unknown[] = [1];
  list.push(list);
  const { lines, log } = capture();
  log.info("cyclic", { node, x: shared, y: shared, list });
  assert.deepEqual(only(lines), {
    time: TIME,
    level: "info",
    msg: "cyclic",
    node: { name: "a", self: "[Circular]" },
    x: { v: 1 },
    y: { v: 1 },
    list: [1, "[Circular]"],
  });
});

Deno.test("createLogger() makes BigInt, non-finite numbers, Dates, Maps and Sets JSON-safe", () => {
  const { lines, log } = capture();
  log.info("values", {
    big: 2n ** 64n,
    nan: NaN,
    inf: -Infinity,
    date: new Date(0),
    map: new Map<unknown, unknown>([["a", 1], [2, 3n]]),
    set: new Set(["x", "y"]),
    skipped: undefined,
    fn: () => 1,
    arr: [undefined, null],
    proto: JSON.parse('{"__proto__":{"polluted":true}}'),
  });
  assert.equal(
    lines[0],
    `{"time":"${TIME}","level":"info","msg":"values","big":"18446744073709551616","nan":"NaN","inf":"-Infinity","date":"1970-01-01T00:00:00.000Z","map":{"2":"3","a":1},"set":["x","y"],"arr":[null,null],"proto":{"__proto__":{"polluted":true}}}`,
  );
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("createLogger() writes a logError record when fields cannot be read", () => {
  const { lines, log } = capture();
  const hostile = {
    get boom(): never {
      throw new Error("getter exploded");
    },
  };
  const toJson = {
    toJSON: (): never => {
      throw new TypeError("nope");
    },
  };
  log.warn("first", { hostile });
  log.warn("second", { toJson });
  assert.deepEqual(lines.map((line) => JSON.parse(line)), [
    {
      time: TIME,
      level: "warn",
      msg: "first",
      logError: "Cannot serialize log fields: Error: getter exploded",
    },
    {
      time: TIME,
      level: "warn",
      msg: "second",
      logError: "Cannot serialize log fields: TypeError: nope",
    },
  ]);
});

Deno.test("createLogger() never throws when the writer or the clock fails", () => {
  const failing = createLogger({
    now: () => new Date(TIME),
    write: () => {
      throw new Error("disk full");
    },
  });
  failing.error("lost", { err: new Error("x") });

  const lines: string[] = [];
  const badClock = createLogger({
    now: () => new Date(NaN),
    write: (line) => lines.push(line),
  });
  badClock.info("kept");
  const record = only(lines);
  assert.equal(record.msg, "kept");
  assert.match(String(record.logError), /RangeError/);
  assert.ok(!Number.isNaN(Date.parse(String(record.time))));
});

Deno.test("createLogger() writes to stderr by default, looping over partial writes", () => {
  const chunks: Uint8Array[] = [];
  Object.defineProperty(Deno.stderr, "writeSync", {
    configurable: true,
    value: (bytes: Uint8Array): number => {
      const n = Math.min(5, bytes.length);
      chunks.push(bytes.slice(0, n));
      return n;
    },
  });
  try {
    createLogger({ now: () => new Date(TIME) }).info("h\u00e9llo");
  } finally {
    delete (Deno.stderr as { writeSync?: unknown }).writeSync;
  }
  assert.ok(chunks.length > 1);
  assert.equal(
    new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c]))),
    `{"time":"${TIME}","level":"info","msg":"h\u00e9llo"}\n`,
  );
});

Deno.test("parseLogLevel() accepts levels in any case and rejects the rest", () => {
  const accepted: [string, string][] = [
    ["debug", "debug"],
    ["INFO", "info"],
    ["Warn", "warn"],
    ["warning", "warn"],
    ["WARNING", "warn"],
    ["error", "error"],
    [" info\n", "info"],
  ];
  for (const [text, want] of accepted) {
    assert.equal(parseLogLevel(text), want, text);
  }
  for (const text of ["", "trace", "fatal", "warnings", "err", "0"]) {
    assert.throws(
      () => parseLogLevel(text),
      (e: unknown) =>
        e instanceof RangeError &&
        e.message ===
          `Cannot parse log level as it must be one of debug, info, warn, warning, error: current value is '${text}'`,
      text,
    );
  }
});

Deno.test("createSampler() lets one call through per interval and reports how many it held back", () => {
  let clock = 0;
  const sample = createSampler(10_000, { now: () => clock });
  const seen: number[] = [];
  for (let i = 0; i < 5; i++) sample((suppressed) => seen.push(suppressed));
  assert.deepEqual(seen, [0]);
  clock = 9_999;
  sample((suppressed) => seen.push(suppressed));
  assert.deepEqual(seen, [0]);
  clock = 10_000;
  sample((suppressed) => seen.push(suppressed));
  assert.deepEqual(seen, [0, 5]);
});
