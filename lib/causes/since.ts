/**
 * When a blocker began to hold, as a cause says it ({@linkcode sinceOf}):
 * the `metadata.creationTimestamp` of the dependent, owner or Lock, read
 * from an object a tenant wrote and so checked before use: an RFC 3339
 * date-time with a zone (`2026-11-29T12:00:00Z`), at most
 * {@linkcode MAX_SINCE} characters, or nothing.
 *
 * @example Usage
 * ```ts
 * import { sinceOf } from "./since.ts";
 *
 * sinceOf({ metadata: { creationTimestamp: "2026-11-29T12:00:00Z" } });
 * // "2026-11-29T12:00:00Z"
 * sinceOf({ metadata: { creationTimestamp: "yesterday" } }); // undefined
 * ```
 *
 * @module
 */

/** The most characters of a `since` time. */
export const MAX_SINCE = 64;

/** RFC 3339 `date-time`: a date, `T`, a time with optional fraction, a zone. */
const RFC3339 =
  /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Whether `value` is an RFC 3339 date-time with a zone that names a real
 * instant, at most {@linkcode MAX_SINCE} characters.
 */
export function isRfc3339(value: unknown): value is string {
  return typeof value === "string" && value.length <= MAX_SINCE &&
    RFC3339.test(value) && Number.isFinite(Date.parse(value));
}

/**
 * The `metadata.creationTimestamp` of `object` when it is an RFC 3339
 * date-time ({@linkcode isRfc3339}); `undefined` otherwise (absent, not a
 * string, malformed, too long).
 */
export function sinceOf(object: unknown): string | undefined {
  if (typeof object !== "object" || object === null) return undefined;
  const metadata = (object as Record<string, unknown>).metadata;
  if (typeof metadata !== "object" || metadata === null) return undefined;
  const stamp = (metadata as Record<string, unknown>).creationTimestamp;
  return isRfc3339(stamp) ? stamp : undefined;
}
