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
 * The most bytes of one log line, without its newline. A record whose fields
 * do not fit has its largest fields cut to an equal share (see
 * {@linkcode createLogger}); the line is ASCII, so bytes and characters are
 * the same.
 */
export const MAX_LOG_LINE_BYTES = 16_384;
/**
 * The most characters (UTF-16 code units) of one string value, at any depth;
 * the rest is replaced by `...(+N chars)`. Large enough for a stack trace.
 */
export const MAX_LOG_STRING_CHARS = 4_096;
/**
 * The most items of an array or Set, entries of a Map and keys of an object,
 * at any depth, and the most fields of one record. Further items become one
 * last item `...(+N items)`; further keys one key `...` whose value is
 * `(+N keys)`; further fields are dropped and counted in `logTruncated`.
 */
export const MAX_LOG_ITEMS = 100;
/** The most characters of a key (a field name, an object or Map key). */
const MAX_KEY_CHARS = 256;
/** The most characters of `msg` once written as JSON. */
const MAX_MSG_JSON = 1_024;
/** Room kept in every line for the `logTruncated` note. */
const NOTE_ROOM = 96;
/**
 * What one field may cost to copy (roughly its JSON characters); past it,
 * the rest of the field becomes {@linkcode CUT}. Bounds the work a huge or
 * deeply nested value causes, before the line is cut to size.
 */
const FIELD_BUDGET = MAX_LOG_LINE_BYTES;
/** What a value becomes once its field's budget is spent. */
const CUT = "...(truncated)";

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

function formatRecord(
  time: Date,
  record: { level: LogLevel; msg: string; fields: LogFields; stacks: boolean },
): string {
  // Joined by hand so that time, level and msg stay first even when a field
  // name looks like an array index (which objects would move to the front).
  const head = [
    `"time":${jsonText(time.toISOString())}`,
    `"level":${jsonText(record.level)}`,
    `"msg":${fitString(String(record.msg), MAX_MSG_JSON)}`,
  ];
  const fields: Field[] = [];
  let dropped = 0;
  for (const [key, value] of Object.entries(record.fields)) {
    if (fields.length === MAX_LOG_ITEMS) {
      dropped++;
      continue;
    }
    const safe = toJson(value, {
      ancestors: [],
      left: FIELD_BUDGET,
      stacks: record.stacks,
    });
    if (safe === undefined) continue;
    const name = RESERVED.has(key) ? `field.${key}` : key;
    fields.push({
      name: jsonText(truncateText(name, MAX_KEY_CHARS)),
      value: safe,
      json: jsonText(safe),
    });
  }
  const room = MAX_LOG_LINE_BYTES - "{}".length - head.join(",").length -
    NOTE_ROOM;
  dropped += fitFields(fields, room);
  const parts = [...head, ...fields.map((f) => `${f.name}:${f.json}`)];
  if (dropped > 0) {
    parts.push(
      `"logTruncated":${
        jsonText(
          `${dropped} more fields dropped to stay within ${MAX_LOG_LINE_BYTES} bytes`,
        )
      }`,
    );
  }
  return `{${parts.join(",")}}`;
}

/** One field of a record: its name and value as ASCII JSON. */
interface Field {
  name: string;
  value: unknown;
  json: string;
}

/**
 * Cuts `fields` (in place) until `name:json` of all of them, with commas,
 * takes at most `room` characters: every field keeps what it needs if that
 * is less than an equal share of what the others leave; larger ones are cut
 * to that share (a string stays a shorter string, anything else becomes the
 * start of its JSON as a string). Drops fields from the end while that is
 * not enough (too many long names) and returns how many.
 */
function fitFields(fields: Field[], room: number): number {
  const size = (f: Field) => f.name.length + 1 + f.json.length + 1;
  if (fields.reduce((sum, f) => sum + size(f), 0) <= room) return 0;
  let dropped = 0;
  const names = () => fields.reduce((sum, f) => sum + f.name.length + 2, 0);
  while (fields.length > 0 && names() + fields.length * MIN_VALUE > room) {
    fields.pop();
    dropped++;
  }
  const share = fairShare(
    fields.map((f) => f.json.length),
    room - names(),
  );
  for (const field of fields) {
    if (field.json.length <= share) continue;
    field.json = typeof field.value === "string"
      ? fitString(field.value, share)
      : fitString(field.json, share);
  }
  return dropped;
}

/** The least room a cut value needs: quotes and the marker of a long cut. */
const MIN_VALUE = 32;

/**
 * The largest cap such that the `lengths`, each cut to it, sum to at most
 * `room`; `Infinity` if they fit as they are.
 */
function fairShare(lengths: readonly number[], room: number): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  let left = room;
  for (let i = 0; i < sorted.length; i++) {
    const share = Math.floor(left / (sorted.length - i));
    if (sorted[i]! > share) return Math.max(share, MIN_VALUE);
    left -= sorted[i]!;
  }
  return Infinity;
}

/**
 * `value` as JSON, in ASCII: what `JSON.stringify` leaves as it is from DEL
 * (U+007F) up, C1 controls, line and paragraph separators and bidi controls
 * included, is written as a `\uXXXX` escape. So no value can break a line,
 * move the cursor or reorder text in a terminal, and the line's length in
 * characters is its size in bytes.
 */
function jsonText(value: unknown): string {
  return ascii(JSON.stringify(value));
}

function ascii(json: string): string {
  return json.replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The characters that code unit `c` takes in {@linkcode jsonText}'s output. */
function escapedLength(c: number): number {
  if (c === 0x22 || c === 0x5c) return 2; // \" \\
  if (c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d) {
    return 2; // \b \t \n \f \r
  }
  return c < 0x20 || c >= 0x7f ? 6 : 1;
}

/**
 * `text` as an ASCII JSON string of at most `max` characters (`max` at
 * least {@linkcode MIN_VALUE}): whole, or its start and `...(+N chars)`.
 */
function fitString(text: string, max: number): string {
  const whole = jsonText(text);
  if (whole.length <= max) return whole;
  let left = max - `""...(+${text.length} chars)`.length;
  let end = 0;
  while (end < text.length) {
    const cost = escapedLength(text.charCodeAt(end));
    if (cost > left) break;
    left -= cost;
    end++;
  }
  return jsonText(cutAt(text, end));
}

/** `text` up to `end` (not splitting a surrogate pair) and `...(+N chars)`. */
function cutAt(text: string, end: number): string {
  const code = text.charCodeAt(end - 1);
  const at = end > 0 && code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
  return `${text.slice(0, at)}...(+${text.length - at} chars)`;
}

/**
 * `text` if it has at most `maxChars` characters (UTF-16 code units), else
 * its first `maxChars` (one fewer rather than half a surrogate pair) and
 * `...(+N chars)`, N counting what was left out. The marker the logger
 * itself cuts strings with, for callers that bound a value tighter.
 *
 * @example Usage
 * ```ts
 * import { truncateText } from "./log.ts";
 * truncateText("abcdef", 4); // "abcd...(+2 chars)"
 * ```
 */
export function truncateText(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : cutAt(text, maxChars);
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
  let msg = "";
  try {
    msg = String(record.msg);
  } catch {
    // An empty msg rather than none.
  }
  return `{${
    [
      `"time":${jsonText(time)}`,
      `"level":${jsonText(record.level)}`,
      `"msg":${fitString(msg, MAX_MSG_JSON)}`,
      `"logError":${
        fitString(`Cannot serialize log fields: ${reason}`, MAX_MSG_JSON)
      }`,
    ].join(",")
  }}`;
}

/** The state of copying one field: see {@linkcode toJson}. */
interface Copy {
  /** The objects being copied, outermost first. */
  ancestors: object[];
  /** What the field may still cost, roughly in JSON characters. */
  left: number;
  /** Whether Errors keep their stacks. */
  stacks: boolean;
}

/**
 * A JSON-safe, bounded copy of `value`; `undefined` where `JSON.stringify`
 * would drop the key. `copy.ancestors` holds the objects being copied, so a
 * repeated (but not circular) reference is copied in full; `copy.left` is
 * spent as the copy grows, and once it is gone the rest becomes
 * {@linkcode CUT}.
 */
function toJson(value: unknown, copy: Copy): unknown {
  if (copy.left <= 0) return CUT;
  if (typeof value !== "object" || value === null) {
    const safe = primitiveToJson(value);
    copy.left -= typeof safe === "string" ? safe.length + 2 : 8;
    return safe;
  }
  if (copy.ancestors.includes(value)) return "[Circular]";
  if (copy.ancestors.length >= MAX_DEPTH) return "[Truncated]";
  copy.left -= 2;
  copy.ancestors.push(value);
  try {
    return objectToJson(value, copy);
  } finally {
    copy.ancestors.pop();
  }
}

function primitiveToJson(value: unknown): unknown {
  switch (typeof value) {
    case "string":
      return truncateText(value, MAX_LOG_STRING_CHARS);
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "bigint":
      return truncateText(value.toString(), MAX_LOG_STRING_CHARS);
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    default:
      return value; // boolean, null
  }
}

function objectToJson(value: object, copy: Copy): unknown {
  if (Error.isError(value)) return errorToJson(value, copy);
  if (Array.isArray(value)) return itemsToJson(value, copy);
  if (hasToJson(value)) return toJson(value.toJSON(), copy);
  if (value instanceof Map) return entriesToJson(value.entries(), copy);
  if (value instanceof Set) return itemsToJson(value, copy);
  return entriesToJson(Object.entries(value), copy);
}

/** At most {@linkcode MAX_LOG_ITEMS} items, then `...(+N items)`. */
function itemsToJson(
  items: readonly unknown[] | ReadonlySet<unknown>,
  copy: Copy,
): unknown[] {
  const total = Array.isArray(items)
    ? items.length
    : (items as ReadonlySet<unknown>).size;
  const out: unknown[] = [];
  for (const item of items) {
    if (out.length === MAX_LOG_ITEMS || copy.left <= 0) break;
    out.push(toJson(item, copy) ?? null);
  }
  if (out.length < total) out.push(`...(+${total - out.length} items)`);
  return out;
}

/** At most {@linkcode MAX_LOG_ITEMS} keys, then a key `...`: `(+N keys)`. */
function entriesToJson(
  entries: Iterable<readonly [unknown, unknown]>,
  copy: Copy,
): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null);
  let kept = 0;
  let more = 0;
  for (const [key, item] of entries) {
    if (kept === MAX_LOG_ITEMS || copy.left <= 0) {
      more++;
      continue;
    }
    const name = truncateText(String(key), MAX_KEY_CHARS);
    copy.left -= name.length + 3;
    out[name] = toJson(item, copy);
    kept++;
  }
  if (more > 0) out["..."] = `(+${more} keys)`;
  return out;
}

function errorToJson(error: Error, copy: Copy): unknown {
  const out: Record<string, unknown> = Object.create(null);
  out.name = toJson(String(error.name), copy);
  out.message = toJson(String(error.message), copy);
  if (copy.stacks && typeof error.stack === "string") {
    out.stack = toJson(error.stack, copy);
  }
  if (error.cause !== undefined) out.cause = toJson(error.cause, copy);
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
