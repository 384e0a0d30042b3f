/**
 * The values of `kubectl dependencies lock`'s flags that need more than a
 * string: `--operations`, `--timeout`, and `--for` / `--until`, which set
 * the Lock's `spec.expiresAt`. Pure: the clock is passed in.
 *
 * @example Usage
 * ```ts
 * import { parseExpiry } from "./lock_flags.ts";
 *
 * parseExpiry({ for: "2h" }, { now: Date.parse("2026-12-01T16:00:00Z") });
 * // "2026-12-01T18:00:00Z"
 * ```
 *
 * @module
 */
import { LOCK_OPERATIONS, type LockOperation } from "../locks/mod.ts";
import { errorText, parseDuration, printable } from "../runtime/mod.ts";
import { PluginError } from "./context.ts";

/**
 * `Delete` or `Delete,Update` (in any case and order) as the Lock's
 * operations.
 *
 * @throws {PluginError} With exit code 2 for anything else.
 */
export function parseOperations(text: string): LockOperation[] {
  const operations: LockOperation[] = [];
  for (const part of text.split(",").map((p) => p.trim())) {
    const operation = LOCK_OPERATIONS.find((o) =>
      o.toLowerCase() === part.toLowerCase()
    );
    if (operation === undefined) {
      throw new PluginError(
        `lock: --operations must list ${
          LOCK_OPERATIONS.join(" or ")
        }: current value is '${printable(text)}'`,
      );
    }
    if (!operations.includes(operation)) operations.push(operation);
  }
  return operations;
}

/**
 * `--timeout`: a duration, or `0` not to wait.
 *
 * @throws {PluginError} With exit code 2 for anything else.
 */
export function parseTimeout(text: string): number {
  if (/^0(ms|s|m|h)?$/.test(text)) return 0;
  try {
    return parseDuration(text);
  } catch (error) {
    throw new PluginError(`lock: --timeout: ${errorText(error)}`);
  }
}

/** An RFC 3339 date-time, as the Lock's schema takes it (`T` and `Z` in any case). */
const RFC3339 =
  /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * The Lock's `spec.expiresAt` from `--for <duration>` (from `options.now`,
 * rounded up to a whole second: never less than asked) or `--until <RFC
 * 3339 time>` (as given, `T` and `Z` upper-cased); `undefined` without
 * either: the Lock holds until deleted.
 *
 * @throws {PluginError} With exit code 2 when both are given, when
 * `--for` is not a positive duration, or `--until` not an RFC 3339 time
 * after `options.now`.
 */
export function parseExpiry(
  flags: { for?: string | undefined; until?: string | undefined },
  options: { now: number },
): string | undefined {
  if (flags.for !== undefined && flags.until !== undefined) {
    throw new PluginError(
      "lock: --for and --until both say when the Lock ends: give one",
    );
  }
  if (flags.for !== undefined) {
    let ms: number;
    try {
      ms = parseDuration(flags.for);
    } catch (error) {
      throw new PluginError(`lock: --for: ${errorText(error)}`);
    }
    const at = Math.ceil((options.now + ms) / 1000) * 1000;
    return new Date(at).toISOString().replace(/\.000Z$/, "Z");
  }
  if (flags.until === undefined) return undefined;
  const text = flags.until.toUpperCase();
  const at = Date.parse(text);
  if (!RFC3339.test(flags.until) || !Number.isFinite(at)) {
    throw new PluginError(
      `lock: --until must be an RFC 3339 time such as 2026-12-01T18:00:00Z: current value is '${
        printable(flags.until)
      }'`,
    );
  }
  if (at <= options.now) {
    throw new PluginError(
      `lock: --until ${printable(flags.until)} has passed (now is ${
        new Date(options.now).toISOString()
      }): a Lock must end in the future`,
    );
  }
  return text;
}
