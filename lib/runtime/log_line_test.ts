import assert from "node:assert/strict";
import {
  fallbackRecord,
  formatRecord,
  MAX_LOG_LINE_BYTES,
} from "./log_line.ts";

const TIME = new Date("2024-05-01T12:00:00.000Z");

Deno.test("formatRecord() writes time, level and msg first, then the fields, renaming reserved ones", () => {
  assert.equal(
    formatRecord(TIME, {
      level: "info",
      msg: "hello",
      fields: { 1: "index", msg: "field", skipped: undefined, n: 2 },
      stacks: false,
    }),
    '{"time":"2024-05-01T12:00:00.000Z","level":"info","msg":"hello",' +
      '"1":"index","field.msg":"field","n":2}',
  );
});

Deno.test("formatRecord() writes ASCII and stays within MAX_LOG_LINE_BYTES, counting dropped fields", () => {
  assert.equal(
    formatRecord(TIME, {
      level: "warn",
      msg: "caf\u00e9\n",
      fields: {},
      stacks: false,
    }),
    '{"time":"2024-05-01T12:00:00.000Z","level":"warn","msg":"caf\\u00e9\\n"}',
  );
  const fields = Object.fromEntries(
    Array.from({ length: 150 }, (_, i) => [`f${i}`, "x".repeat(1_000)]),
  );
  const line = formatRecord(TIME, {
    level: "info",
    msg: "big",
    fields,
    stacks: false,
  });
  assert.ok(line.length <= MAX_LOG_LINE_BYTES);
  assert.match(line, /^[\x20-\x7e]*$/);
  assert.match(
    JSON.parse(line).logTruncated,
    /^50 more fields dropped to stay within 16384 bytes$/,
  );
});

Deno.test("fallbackRecord() says why the fields could not be written, even when the clock throws", () => {
  const record = JSON.parse(
    fallbackRecord(() => TIME, {
      level: "error",
      msg: "failed",
      error: new TypeError("getter threw"),
    }),
  );
  assert.deepEqual(record, {
    time: "2024-05-01T12:00:00.000Z",
    level: "error",
    msg: "failed",
    logError: "Cannot serialize log fields: TypeError: getter threw",
  });
  const clockless = JSON.parse(
    fallbackRecord(() => {
      throw new Error("no clock");
    }, { level: "info", msg: "m", error: "odd" }),
  );
  assert.equal(typeof clockless.time, "string");
  assert.equal(clockless.logError, "Cannot serialize log fields: odd");
});
