/**
 * One log record as one line of JSON, in ASCII and within
 * {@linkcode MAX_LOG_LINE_BYTES}: `time`, `level` and `msg` first, then the
 * fields, each a bounded copy (see `log_values.ts`), the largest cut to an
 * equal share of the room when they do not fit, and a last `logTruncated`
 * field counting those dropped.
 *
 * @example Usage
 * ```ts
 * import { formatRecord } from "./log_line.ts";
 *
 * formatRecord(new Date(0), {
 *   level: "info",
 *   msg: "hello",
 *   fields: { n: 1 },
 *   stacks: false,
 * });
 * // {"time":"1970-01-01T00:00:00.000Z","level":"info","msg":"hello","n":1}
 * ```
 *
 * @module
 */
import {
  cutAt,
  MAX_KEY_CHARS,
  MAX_LOG_ITEMS,
  toJson,
  truncateText,
} from "./log_values.ts";

/** Keys every record starts with; fields cannot replace them. */
const RESERVED = new Set(["time", "level", "msg"]);

/**
 * The most bytes of one log line, without its newline. A record whose fields
 * do not fit has its largest fields cut to an equal share (see
 * {@linkcode createLogger}); the line is ASCII, so bytes and characters are
 * the same.
 */
export const MAX_LOG_LINE_BYTES = 16_384;
/** The most characters of `msg` once written as JSON. */
const MAX_MSG_JSON = 1_024;
/** Room kept in every line for the `logTruncated` note. */
const NOTE_ROOM = 96;
/**
 * What one field may cost to copy (roughly its JSON characters); past it,
 * the rest of the field becomes `...(truncated)` (see `toJson`). Bounds the
 * work a huge or deeply nested value causes, before the line is cut to size.
 */
const FIELD_BUDGET = MAX_LOG_LINE_BYTES;

/**
 * One record as one line of JSON (see the module's description); `stacks`
 * says whether its Errors keep their stacks.
 *
 * @throws {Error} Whatever reading the fields throws (a getter, say): the
 * caller writes {@linkcode fallbackRecord} instead.
 */
export function formatRecord(
  time: Date,
  record: {
    level: string;
    msg: string;
    fields: Readonly<Record<string, unknown>>;
    stacks: boolean;
  },
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

/**
 * The record written instead when a record's fields cannot be serialized:
 * the time, level, msg and a `logError` key saying why. Never throws.
 */
export function fallbackRecord(
  now: () => Date,
  record: { level: string; msg: string; error: unknown },
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
