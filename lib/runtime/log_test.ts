import assert from "node:assert/strict";
import {
  createLogger,
  createSampler,
  type LoggerOptions,
  parseLogLevel,
} from "./log.ts";
import { MAX_LOG_LINE_BYTES } from "./log_line.ts";
import { MAX_LOG_ITEMS, MAX_LOG_STRING_CHARS } from "./log_values.ts";

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

Deno.test("createLogger() keeps stacks in error records and at debug, and leaves them out of warnings", () => {
  const err = new Error("Cannot list vpcs", {
    cause: new Error("connection refused"),
  });
  const { lines, log } = capture();
  log.warn("list or watch failed, retrying", { error: err });
  log.info("noted", { error: err });
  log.error("gave up", { error: err });
  const [warn, info, error] = lines.map((l) => JSON.parse(l));
  for (const record of [warn, info]) {
    assert.deepEqual(record.error, {
      name: "Error",
      message: "Cannot list vpcs",
      cause: { name: "Error", message: "connection refused" },
    });
  }
  assert.equal(typeof error.error.stack, "string");
  assert.equal(typeof error.error.cause.stack, "string");
  const debug = capture({ level: "debug" });
  debug.log.warn("list or watch failed, retrying", { error: err });
  const record = only(debug.lines);
  assert.match(
    String((record.error as { stack: string }).stack),
    /Cannot list/,
  );
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
    // Non-ASCII is written escaped: the line is ASCII.
    `{"time":"${TIME}","level":"info","msg":"h\\u00e9llo"}\n`,
  );
});

/** Asserts `line` is printable ASCII within the line bound, and parses it. */
function bounded(line: string | undefined): Record<string, unknown> {
  assert.ok(line !== undefined);
  assert.ok(
    line.length <= MAX_LOG_LINE_BYTES,
    `line of ${line.length} bytes`,
  );
  assert.match(line, /^[\x20-\x7e]*$/);
  return JSON.parse(line);
}

Deno.test("createLogger() cuts a long string value, at any depth, to MAX_LOG_STRING_CHARS", () => {
  const { lines, log } = capture();
  const long = "x".repeat(MAX_LOG_STRING_CHARS + 10);
  const exact = "y".repeat(MAX_LOG_STRING_CHARS);
  // One field a line: the cut, not the line bound, shortens them.
  log.info("m", { long });
  log.info("m", { exact });
  log.info("m", { nested: { deep: [long] } });
  log.info("m", { big: 10n ** 5000n });
  const [first, second, third, fourth] = lines.map(bounded);
  const cut = `${"x".repeat(MAX_LOG_STRING_CHARS)}...(+10 chars)`;
  assert.equal(first?.long, cut);
  assert.equal(second?.exact, exact);
  assert.deepEqual(third?.nested, { deep: [cut] });
  assert.match(String(fourth?.big), /^10{4095}\.\.\.\(\+905 chars\)$/);
});

Deno.test("createLogger() keeps MAX_LOG_ITEMS items of arrays, Sets, Maps and objects and counts the rest", () => {
  const { lines, log } = capture();
  const numbers = Array.from({ length: MAX_LOG_ITEMS + 5 }, (_, i) => i);
  const keyed = Object.fromEntries(numbers.map((i) => [`k${i}`, i]));
  log.info("m", {
    array: numbers,
    set: new Set(numbers),
    map: new Map(numbers.map((i) => [i, i])),
    object: keyed,
    fits: numbers.slice(0, MAX_LOG_ITEMS),
  });
  const record = bounded(lines[0]);
  const kept = numbers.slice(0, MAX_LOG_ITEMS);
  assert.deepEqual(record.array, [...kept, "...(+5 items)"]);
  assert.deepEqual(record.set, [...kept, "...(+5 items)"]);
  assert.deepEqual(
    record.map,
    { ...Object.fromEntries(kept.map((i) => [i, i])), "...": "(+5 keys)" },
  );
  assert.deepEqual(
    record.object,
    {
      ...Object.fromEntries(kept.map((i) => [`k${i}`, i])),
      "...": "(+5 keys)",
    },
  );
  assert.deepEqual(record.fits, kept);
});

Deno.test("createLogger() writes 100 000 groups as a bounded line", () => {
  const { lines, log } = capture();
  const groups = Array.from({ length: 100_000 }, (_, i) => `group-${i}`);
  log.info("admission review denied", { groups, outcome: "denied" });
  const record = bounded(lines[0]);
  const written = record.groups as string[];
  assert.equal(written.length, MAX_LOG_ITEMS + 1);
  assert.equal(written.at(-1), `...(+${100_000 - MAX_LOG_ITEMS} items)`);
  assert.equal(record.outcome, "denied");
});

Deno.test("createLogger() cuts the largest fields to an equal share when a line would be too long, keeping small fields whole", () => {
  const { lines, log } = capture();
  const fields: Record<string, unknown> = { first: "kept", count: 7 };
  for (let i = 0; i < 10; i++) fields[`s${i}`] = `${i}`.repeat(4_000);
  fields.object = { list: Array.from({ length: 100 }, () => "z".repeat(100)) };
  fields.last = true;
  log.warn("big", fields);
  const record = bounded(lines[0]);
  assert.ok(lines[0]!.length > MAX_LOG_LINE_BYTES - 200, "room left unused");
  assert.equal(record.first, "kept");
  assert.equal(record.count, 7);
  assert.equal(record.last, true);
  assert.equal(record.logTruncated, undefined);
  const shares = new Set<number>();
  for (let i = 0; i < 10; i++) {
    const value = String(record[`s${i}`]);
    const match = value.match(/^(\d+)\.\.\.\(\+(\d+) chars\)$/);
    assert.ok(match, value.slice(0, 40));
    assert.equal(match[1], `${i}`.repeat(match[1]!.length));
    assert.equal(match[1]!.length + Number(match[2]), 4_000);
    shares.add(JSON.stringify(value).length);
  }
  assert.ok(Math.max(...shares) - Math.min(...shares) <= 1, "unequal shares");
  assert.match(
    String(record.object),
    /^\{"list":\["zzz.*\.\.\.\(\+\d+ chars\)$/,
  );
});

Deno.test("createLogger() keeps MAX_LOG_ITEMS fields and drops the rest, saying so in logTruncated", () => {
  const { lines, log } = capture({ fields: { component: "webhook" } });
  const fields = Object.fromEntries(
    Array.from({ length: 250 }, (_, i) => [`f${i}`, i]),
  );
  log.info("many", fields);
  const record = bounded(lines[0]);
  assert.equal(record.component, "webhook");
  assert.equal(record.f98, 98);
  assert.equal(record.f99, undefined);
  assert.equal(
    record.logTruncated,
    `151 more fields dropped to stay within ${MAX_LOG_LINE_BYTES} bytes`,
  );
});

Deno.test("createLogger() drops fields from the end when even their names do not fit", () => {
  const { lines, log } = capture();
  const fields = Object.fromEntries(
    Array.from({ length: MAX_LOG_ITEMS }, (_, i) => [
      `${i}`.padStart(3, "0") + "k".repeat(1_000),
      "v".repeat(1_000),
    ]),
  );
  log.info("long names", fields);
  const record = bounded(lines[0]);
  const names = Object.keys(record).filter((k) => /^\d{3}k/.test(k));
  assert.ok(
    names.length > 10 && names.length < MAX_LOG_ITEMS,
    `${names.length}`,
  );
  assert.equal(names[0], `000${"k".repeat(253)}...(+747 chars)`);
  assert.equal(
    record.logTruncated,
    `${
      MAX_LOG_ITEMS - names.length
    } more fields dropped to stay within ${MAX_LOG_LINE_BYTES} bytes`,
  );
});

Deno.test("createLogger() cuts a long msg and a long logError", () => {
  const { lines, log } = capture();
  log.info("m".repeat(5_000));
  const hostile = {
    get boom(): never {
      throw new Error("e".repeat(1_000_000));
    },
  };
  log.warn("w".repeat(5_000), { hostile });
  const first = bounded(lines[0]);
  const second = bounded(lines[1]);
  assert.match(String(first.msg), /^m{1000,}\.\.\.\(\+\d+ chars\)$/);
  assert.ok(String(first.msg).length < 1_024);
  assert.match(String(second.msg), /^w+\.\.\.\(\+\d+ chars\)$/);
  assert.match(
    String(second.logError),
    /^Cannot serialize log fields: Error: e+\.\.\.\(\+\d+ chars\)$/,
  );
  assert.ok(lines[1]!.length < 2_200);
});

Deno.test("createLogger() reads a bounded part of a huge nested value", () => {
  const { lines, log } = capture();
  let reads = 0;
  const leaf = {
    get v(): string {
      reads++;
      return "leaf";
    },
  };
  const level2 = Array.from({ length: 100 }, () => leaf);
  const level1 = Array.from({ length: 100 }, () => level2);
  const wide = Array.from({ length: 100 }, () => level1);
  log.info("wide", { wide });
  const record = bounded(lines[0]);
  // 1 000 000 leaves; only about a line's worth of them is read.
  assert.ok(reads > 100 && reads < 5_000, `${reads} reads`);
  assert.match(
    String(record.wide),
    /^\[\[\[\{"v":"leaf"\},.*\.\.\.\(\+\d+ chars\)$/,
  );
});

Deno.test("createLogger() writes control, separator and bidi characters escaped, so no value forges a line", () => {
  const { lines, log } = capture();
  const forged = '\n{"time":"x","level":"error","msg":"forged"}\r';
  const odd =
    "a\u0000b\u001b[31mc\u007fd\u0085e\u009bf\u2028g\u2029h\u202ei\u2066j\ud800k\u{1F600}";
  log.error(`msg${forged}`, { [`key${forged}`]: forged, odd, list: [odd] });
  assert.equal(lines.length, 1);
  const record = bounded(lines[0]);
  assert.equal(record.msg, `msg${forged}`);
  assert.equal(record[`key${forged}`], forged);
  assert.equal(record.odd, odd);
  assert.deepEqual(record.list, [odd]);
  for (
    const escape of [
      "\\n",
      "\\r",
      "\\u0000",
      "\\u001b",
      "\\u007f",
      "\\u0085",
      "\\u009b",
      "\\u2028",
      "\\u2029",
      "\\u202e",
      "\\u2066",
      "\\ud800",
      "\\ud83d\\ude00",
    ]
  ) {
    assert.ok(lines[0]!.includes(escape), escape);
  }
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
