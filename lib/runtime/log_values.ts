/**
 * The JSON-safe, bounded copy of a value that a log record holds: Errors as
 * `{ name, message, stack?, cause? }`, BigInts and non-finite numbers as
 * strings, Maps as objects and Sets as arrays, cycles and deep nesting
 * replaced by markers, and strings, items and keys cut to bounds
 * ({@linkcode MAX_LOG_STRING_CHARS}, {@linkcode MAX_LOG_ITEMS}) with a count
 * of what was left out.
 *
 * @example Usage
 * ```ts
 * import { toJson } from "./log_values.ts";
 *
 * const value: Record<string, unknown> = { n: 1n };
 * value.self = value;
 * toJson(value, { ancestors: [], left: 1_000, stacks: false });
 * // { n: "1", self: "[Circular]" }
 * ```
 *
 * @module
 */

/** How deep objects, arrays and cause chains are followed. */
const MAX_DEPTH = 10;

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
export const MAX_KEY_CHARS = 256;
/** What a value becomes once its field's budget is spent. */
const CUT = "...(truncated)";

/** `text` up to `end` (not splitting a surrogate pair) and `...(+N chars)`. */
export function cutAt(text: string, end: number): string {
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
 * import { truncateText } from "./log_values.ts";
 * truncateText("abcdef", 4); // "abcd...(+2 chars)"
 * ```
 */
export function truncateText(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : cutAt(text, maxChars);
}

/** The state of copying one field: see {@linkcode toJson}. */
export interface Copy {
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
export function toJson(value: unknown, copy: Copy): unknown {
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
