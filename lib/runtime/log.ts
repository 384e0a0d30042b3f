/**
 * Structured logs: one JSON object per line, `time`, `level` and `msg`
 * first, then fields. Errors keep their name, message and cause chain, and
 * their stack in `error` records or when the logger logs `debug`;
 * BigInts, cycles and throwing getters never break a log call. Every line is
 * bounded ({@linkcode MAX_LOG_LINE_BYTES}) and plain ASCII, whatever the
 * fields hold. No global logger: build one in `main()` and pass it down.
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
import { fallbackRecord, formatRecord } from "./log_line.ts";

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
 * - an `Error` becomes `{ name, message, stack?, cause? }`, with `stack` only
 *   in an `error` record or when `level` is `debug` (a warning that repeats
 *   while kcp is away stays one short line);
 * - a BigInt, `NaN` or an infinity becomes a string;
 * - a `Map` becomes an object and a `Set` an array;
 * - a cycle becomes `"[Circular]"` and nesting deeper than 10 (cause chains
 *   included) `"[Truncated]"`.
 *
 * And bounded, so that no caller, whatever it logs, writes a huge line:
 * - a string longer than {@linkcode MAX_LOG_STRING_CHARS} keeps that many
 *   characters and ends in `...(+N chars)`; keys are cut at 256 and `msg`
 *   to 1 KiB;
 * - an array or Set keeps {@linkcode MAX_LOG_ITEMS} items and ends in an
 *   item `"...(+N items)"`; an object or Map keeps as many keys and gets a
 *   key `"..."` with the value `"(+N keys)"`;
 * - a record keeps {@linkcode MAX_LOG_ITEMS} fields;
 * - a line stays within {@linkcode MAX_LOG_LINE_BYTES}: if the fields do not
 *   fit, each field larger than an equal share of the room is cut to it (a
 *   string value to a shorter string, any other value to the start of its
 *   JSON as a string, both ending in `...(+N chars)`), and fields that still
 *   do not fit are dropped from the end and counted in a last field
 *   `logTruncated`;
 * - every character from DEL (U+007F) up is written as a `\uXXXX` escape
 *   (and `JSON.stringify` escapes the C0 controls), so a line is ASCII and
 *   no value can end it, start another or drive a terminal.
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
  return new JsonLogger(
    { threshold, write, now, stacks: level === "debug" },
    { ...fields },
  );
}

interface Sink {
  threshold: number;
  /** Whether records below `error` keep the stacks of their Errors. */
  stacks: boolean;
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
      line = formatRecord(this.#sink.now(), {
        level,
        msg,
        fields: merged,
        stacks: this.#sink.stacks || level === "error",
      });
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
