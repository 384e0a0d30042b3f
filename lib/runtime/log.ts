/**
 * Structured logs: one JSON object per line, `time`, `level` and `msg`
 * first, then fields. Errors keep their name, message, stack and cause;
 * BigInts, cycles and throwing getters never break a log call. No global
 * logger: build one in `main()` and pass it down.
 *
 * @example Usage
 * ```ts
 * import { createLogger, parseLogLevel } from "./log.ts";
 *
 * const log = createLogger({ level: parseLogLevel("info") });
 * const reconcileLog = log.with({ cluster: "root:org" });
 * reconcileLog.info("reconciled", { name: "web", durationMs: 12 });
 * // {"time":"...","level":"info","msg":"reconciled","cluster":"root:org","name":"web","durationMs":12}
 * ```
 *
 * @module
 */

/** Severity of a log record, lowest first: `debug`, `info`, `warn`, `error`. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** Extra keys of a log record. */
export type LogFields = Readonly<Record<string, unknown>>;

/** Writes JSON log records. */
export interface Logger {
  /** Logs at `debug` level. */
  debug(msg: string, fields?: LogFields): void;
  /** Logs at `info` level. */
  info(msg: string, fields?: LogFields): void;
  /** Logs at `warn` level. */
  warn(msg: string, fields?: LogFields): void;
  /** Logs at `error` level. */
  error(msg: string, fields?: LogFields): void;
  /**
   * A logger that adds `fields` to every record, after the fields already
   * bound. A field of the same name replaces the bound one.
   */
  with(fields: LogFields): Logger;
}

/** Options for {@linkcode createLogger}. */
export interface LoggerOptions {
  /**
   * Records below this level are dropped before any serialization.
   * @default {"info"}
   */
  level?: LogLevel;
  /**
   * Receives each record as one line of JSON without a trailing newline.
   * Whatever it throws is swallowed.
   * @default {writes the line and "\n" to stderr synchronously}
   */
  write?: (line: string) => void;
  /**
   * The clock for the `time` key.
   * @default {() => new Date()}
   */
  now?: () => Date;
  /** Fields bound to every record, as with {@linkcode Logger.with}. */
  fields?: LogFields;
}

const LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];
/** Keys every record starts with; fields cannot replace them. */
const RESERVED = new Set(["time", "level", "msg"]);
/** How deep objects, arrays and cause chains are followed. */
const MAX_DEPTH = 10;

/**
 * Parses a log level, ignoring case and surrounding whitespace. `warning` is
 * accepted for `warn`.
 *
 * @example Usage
 * ```ts
 * import { parseLogLevel } from "./log.ts";
 * parseLogLevel("WARNING"); // "warn"
 * ```
 *
 * @throws {RangeError} If `text` is not a log level.
 */
export function parseLogLevel(text: string): LogLevel {
  const level = text.trim().toLowerCase();
  if (level === "warning") return "warn";
  const found = LEVELS.find((candidate) => candidate === level);
  if (found !== undefined) return found;
  throw new RangeError(
    `Cannot parse log level as it must be one of debug, info, warn, warning, error: current value is '${text}'`,
  );
}

/**
 * Creates a logger that writes one line of JSON per record:
 * `{"time":"<ISO-8601>","level":"info","msg":"...", ...fields}`. Bound fields
 * come before the call's fields. Fields named `time`, `level` or `msg` are
 * written as `field.time`, `field.level` and `field.msg`.
 *
 * Values are made JSON-safe, at any depth:
 * - an `Error` becomes `{ name, message, stack?, cause? }`;
 * - a BigInt, `NaN` or an infinity becomes a string;
 * - a `Map` becomes an object and a `Set` an array;
 * - a cycle becomes `"[Circular]"` and nesting deeper than 10 (cause chains
 *   included) `"[Truncated]"`.
 *
 * If a record still cannot be serialized (a getter throws, say), a record
 * with the time, level, msg and a `logError` key is written instead. Logging
 * never throws.
 *
 * @example Usage
 * ```ts
 * import { createLogger } from "./log.ts";
 *
 * const lines: string[] = [];
 * const log = createLogger({
 *   level: "debug",
 *   write: (line) => lines.push(line),
 *   now: () => new Date(0),
 * });
 * log.error("sync failed", { err: new Error("boom") });
 * ```
 *
 * @throws {RangeError} If `options.level` is not a log level.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const {
    level = "info",
    write = stderrWriter(),
    now = () => new Date(),
    fields = {},
  } = options;
  const threshold = LEVELS.indexOf(level);
  if (threshold === -1) {
    throw new RangeError(
      `Cannot create logger as the level must be one of debug, info, warn, error: current value is '${
        String(level)
      }'`,
    );
  }
  return new JsonLogger({ threshold, write, now }, { ...fields });
}

interface Sink {
  threshold: number;
  write: (line: string) => void;
  now: () => Date;
}

class JsonLogger implements Logger {
  #sink: Sink;
  #fields: LogFields;

  constructor(sink: Sink, fields: LogFields) {
    this.#sink = sink;
    this.#fields = fields;
  }

  debug(msg: string, fields?: LogFields): void {
    this.#log("debug", msg, fields);
  }

  info(msg: string, fields?: LogFields): void {
    this.#log("info", msg, fields);
  }

  warn(msg: string, fields?: LogFields): void {
    this.#log("warn", msg, fields);
  }

  error(msg: string, fields?: LogFields): void {
    this.#log("error", msg, fields);
  }

  with(fields: LogFields): Logger {
    return new JsonLogger(this.#sink, { ...this.#fields, ...fields });
  }

  #log(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    if (LEVELS.indexOf(level) < this.#sink.threshold) return;
    let line: string;
    try {
      const merged = fields === undefined
        ? this.#fields
        : { ...this.#fields, ...fields };
      line = formatRecord(this.#sink.now(), { level, msg, fields: merged });
    } catch (error) {
      line = fallbackRecord(this.#sink.now, { level, msg, error });
    }
    try {
      this.#sink.write(line);
    } catch {
      // Nowhere left to report it; a log line must not fail the caller.
    }
  }
}

function formatRecord(
  time: Date,
  record: { level: LogLevel; msg: string; fields: LogFields },
): string {
  // Joined by hand so that time, level and msg stay first even when a field
  // name looks like an array index (which objects would move to the front).
  const parts = [
    `"time":${JSON.stringify(time.toISOString())}`,
    `"level":${JSON.stringify(record.level)}`,
    `"msg":${JSON.stringify(record.msg)}`,
  ];
  const ancestors: object[] = [];
  for (const [key, value] of Object.entries(record.fields)) {
    const json = JSON.stringify(toJson(value, ancestors));
    if (json === undefined) continue;
    const name = RESERVED.has(key) ? `field.${key}` : key;
    parts.push(`${JSON.stringify(name)}:${json}`);
  }
  return `{${parts.join(",")}}`;
}

function fallbackRecord(
  now: () => Date,
  record: { level: LogLevel; msg: string; error: unknown },
): string {
  let time: string;
  try {
    time = now().toISOString();
  } catch {
    time = new Date().toISOString();
  }
  let reason = "unknown error";
  try {
    const { error } = record;
    reason = Error.isError(error)
      ? `${error.name}: ${error.message}`
      : String(error);
  } catch {
    // Keep the generic reason.
  }
  return JSON.stringify({
    time,
    level: record.level,
    msg: record.msg,
    logError: `Cannot serialize log fields: ${reason}`,
  });
}

/**
 * A JSON-safe copy of `value`; `undefined` where `JSON.stringify` would drop
 * the key. `ancestors` holds the objects being copied, outermost first, so
 * a repeated (but not circular) reference is copied in full.
 */
function toJson(value: unknown, ancestors: object[]): unknown {
  if (typeof value !== "object" || value === null) {
    return primitiveToJson(value);
  }
  if (ancestors.includes(value)) return "[Circular]";
  if (ancestors.length >= MAX_DEPTH) return "[Truncated]";
  ancestors.push(value);
  try {
    return objectToJson(value, ancestors);
  } finally {
    ancestors.pop();
  }
}

function primitiveToJson(value: unknown): unknown {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "bigint":
      return value.toString();
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    default:
      return value; // string, boolean, null
  }
}

function objectToJson(value: object, ancestors: object[]): unknown {
  if (Error.isError(value)) return errorToJson(value, ancestors);
  if (Array.isArray(value)) {
    return value.map((item: unknown) => toJson(item, ancestors) ?? null);
  }
  if (hasToJson(value)) return toJson(value.toJSON(), ancestors);
  if (value instanceof Map) {
    const out: Record<string, unknown> = Object.create(null);
    for (const [key, item] of value) out[String(key)] = toJson(item, ancestors);
    return out;
  }
  if (value instanceof Set) {
    return [...value].map((item: unknown) => toJson(item, ancestors) ?? null);
  }
  const out: Record<string, unknown> = Object.create(null);
  for (const [key, item] of Object.entries(value)) {
    out[key] = toJson(item, ancestors);
  }
  return out;
}

function errorToJson(error: Error, ancestors: object[]): unknown {
  const out: Record<string, unknown> = Object.create(null);
  out.name = String(error.name);
  out.message = String(error.message);
  if (typeof error.stack === "string") out.stack = error.stack;
  if (error.cause !== undefined) out.cause = toJson(error.cause, ancestors);
  return out;
}

function hasToJson(value: object): value is { toJSON(): unknown } {
  return typeof (value as { toJSON?: unknown }).toJSON === "function";
}

/** Writes each line and a newline to stderr, synchronously and in full. */
function stderrWriter(): (line: string) => void {
  const encoder = new TextEncoder();
  return function writeStderr(line: string): void {
    let bytes = encoder.encode(`${line}\n`);
    while (bytes.length > 0) {
      const written = Deno.stderr.writeSync(bytes);
      if (written <= 0) return; // Never spin on a stuck stream.
      bytes = bytes.subarray(written);
    }
  };
}

/**
 * Lets one call through per interval and counts the ones it held back, for
 * records a client can cause at will (a burst of malformed requests then
 * writes one line per interval, not one per request).
 *
 * @example Usage
 * ```ts
 * import { createLogger, createSampler } from "./log.ts";
 *
 * const log = createLogger();
 * const sample = createSampler(10_000);
 * sample((suppressed) => log.warn("rejected a request", { suppressed }));
 * ```
 *
 * @param intervalMs The least time between two calls that go through.
 * @param options `now`, the clock in milliseconds (default `performance.now`).
 * @returns A function that runs `record` with the number of calls held back
 * since the last one that went through, or holds this one back.
 */
export function createSampler(
  intervalMs: number,
  options: { now?: () => number } = {},
): (record: (suppressed: number) => void) => void {
  const now = options.now ?? (() => performance.now());
  let last = -Infinity;
  let suppressed = 0;
  return (record) => {
    const at = now();
    if (at - last < intervalMs) {
      suppressed++;
      return;
    }
    last = at;
    const held = suppressed;
    suppressed = 0;
    record(held);
  };
}
