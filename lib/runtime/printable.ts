/**
 * Text from tenants made safe for a terminal: {@linkcode printable}.
 *
 * @module
 */

/** Characters that must not reach a terminal as they are: controls and bidi overrides. */
// deno-lint-ignore no-control-regex
const UNPRINTABLE = new RegExp(
  "[\\u0000-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]",
  "g",
);

/**
 * `text` made safe for a message a terminal shows: every control or
 * direction-changing character written as `\u{...}`, cut at `max` characters.
 */
export function printable(text: string, max = 300): string {
  const shown = text.replace(
    UNPRINTABLE,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
  return shown.length > max ? `${shown.slice(0, max)}...` : shown;
}
