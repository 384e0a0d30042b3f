/**
 * Small helpers for untyped values that every package needs: telling a JSON
 * object apart, turning a caught value into text, and ordering strings the
 * same way on every machine.
 *
 * @example Usage
 * ```ts
 * import { compareStrings, errorText, isRecord } from "./values.ts";
 *
 * isRecord(JSON.parse('{"a":1}')); // true
 * errorText(new Error("boom")); // "boom"
 * ["b", "B", "a"].sort(compareStrings); // ["B", "a", "b"]
 * ```
 *
 * @module
 */

/**
 * Whether `value` is a plain JSON-style object: not `null`, not an array,
 * not a primitive.
 *
 * @param value Any value, typically decoded JSON or YAML.
 * @returns `true` when `value` can be read as `Record<string, unknown>`.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The text of a caught value, for a message or a status: an `Error`'s
 * `message`, anything else through `String()`.
 *
 * @param error What a `catch` clause or a rejected promise gave.
 * @returns `error.message` for an `Error`, `String(error)` otherwise.
 */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Orders two strings by UTF-16 code unit, as `Array.prototype.sort()` does
 * without a comparer, independent of locale: `"B"` before `"a"`.
 *
 * @param a The first string.
 * @param b The second string.
 * @returns A negative number, zero or a positive number as `a` sorts
 * before, with or after `b`.
 */
export function compareStrings(a: string, b: string): number {
  if (a < b) return -1;
  if (a > b) return 1;
  return 0;
}

/**
 * A kind with its indefinite article, chosen by the first letter: `an
 * Instance`, `a VirtualMachine`. A leading `U` takes `a` (`a User`).
 */
export function withArticle(kind: string): string {
  return `${/^[AEIO]/.test(kind) ? "an" : "a"} ${kind}`;
}
