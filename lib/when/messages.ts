/**
 * The messages of a failed compile or evaluation: one line, at most
 * {@linkcode MAX_WHEN_ERROR_LENGTH} characters, read from at most a bounded
 * head of the text.
 *
 * @example A failure
 * ```ts
 * import { failure } from "./messages.ts";
 *
 * failure("no such key:\n spec"); // { ok: false, error: "no such key: spec" }
 * ```
 *
 * @module
 */
import { MAX_WHEN_ERROR_LENGTH } from "./limits.ts";

/** The characters of a message that {@linkcode oneLine} reads. */
const MESSAGE_SCAN_LENGTH = 4 * MAX_WHEN_ERROR_LENGTH;

/** A failed result of `error` made one bounded line. */
export function failure(error: string): { ok: false; error: string } {
  return { ok: false, error: oneLine(error) };
}

/** The message of a thrown value. */
export function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/**
 * A message on one line, at most {@linkcode MAX_WHEN_ERROR_LENGTH} long. Only
 * its first {@linkcode MESSAGE_SCAN_LENGTH} characters are read: a message
 * may quote a string of the object (a missing key of MBs), and reading it
 * all would be work that no budget charges.
 */
export function oneLine(text: string): string {
  const long = text.length > MESSAGE_SCAN_LENGTH;
  const head = long ? text.slice(0, MESSAGE_SCAN_LENGTH) : text;
  const line = head.replace(/\s+/g, " ").replace(/\p{C}/gu, "?").trim() ||
    "unknown error";
  return !long && line.length <= MAX_WHEN_ERROR_LENGTH
    ? line
    : `${line.slice(0, MAX_WHEN_ERROR_LENGTH - 3)}...`;
}
