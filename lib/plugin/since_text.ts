/**
 * How long ago a time was, in a few characters, for `why`'s tree: the
 * since of a cause (`since 2026-11-29T12:00:00Z (3h ago)`) and how long a
 * deletion has been going on (`for 3h`). Pure: the clock reading is an
 * argument.
 *
 * @example Usage
 * ```ts
 * import { durationText, sinceText } from "./since_text.ts";
 *
 * durationText(3 * 3_600_000); // "3h"
 * sinceText("2026-11-29T12:00:00Z", Date.parse("2026-11-29T15:00:00Z"));
 * // "since 2026-11-29T12:00:00Z (3h ago)"
 * ```
 *
 * @module
 */
import { printable } from "../runtime/mod.ts";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * `ms` in its largest whole unit: `45s`, `12m`, `3h` (under two days),
 * `9d`; `0s` for anything below a second, a negative time included.
 */
export function durationText(ms: number): string {
  if (!Number.isFinite(ms) || ms < SECOND) return "0s";
  if (ms < MINUTE) return `${Math.floor(ms / SECOND)}s`;
  if (ms < HOUR) return `${Math.floor(ms / MINUTE)}m`;
  if (ms < 2 * DAY) return `${Math.floor(ms / HOUR)}h`;
  return `${Math.floor(ms / DAY)}d`;
}

/**
 * `since <time> (<age> ago)` when `now` (ms since the epoch) is given and
 * `time` reads as one, else `since <time>`; `time` made printable. A time
 * after `now` (a clock behind the server's) reads `(0s ago)`.
 */
export function sinceText(time: string, now?: number): string {
  const shown = `since ${printable(time, 64)}`;
  const at = Date.parse(time);
  if (now === undefined || !Number.isFinite(at)) return shown;
  return `${shown} (${durationText(now - at)} ago)`;
}
