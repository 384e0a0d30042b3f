/**
 * `why`'s answers as data: JSON ({@linkcode jsonText}) and YAML
 * ({@linkcode yamlText}) of a value whose strings come from tenants and
 * providers. No control or direction-changing character reaches the output
 * as it is: JSON and YAML write them as `\uXXXX` escapes, the values stay
 * the same.
 *
 * @example Usage
 * ```ts
 * import { jsonText } from "./why_data.ts";
 *
 * jsonText({ name: "a\u202eb" }); // '{\n  "name": "a\\u202eb"\n}\n'
 * ```
 *
 * @module
 */
import { Document, isScalar, visit } from "yaml";

/** Controls and direction-changing characters: never shown as they are. */
// deno-lint-ignore no-control-regex
const UNSAFE = new RegExp(
  "[\\u0000-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]",
);

/**
 * What is left of them in JSON text to escape: `JSON.stringify` escapes
 * the controls below U+0020 itself, and a line break there is the layout's.
 */
const UNSAFE_IN_JSON = new RegExp(
  "[\\u007f-\\u009f\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]",
  "g",
);

/**
 * What is left of them in YAML text to escape: every one but the line
 * break, which is the layout's (a string holding one is double-quoted, and
 * the line break in it escaped).
 */
// deno-lint-ignore no-control-regex
const UNSAFE_IN_YAML = new RegExp(
  "[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]",
  "g",
);

/** `\uXXXX` of a character of the Basic Multilingual Plane. */
function escaped(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/** `value` as indented JSON, ending with a newline, unsafe characters escaped. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2).replace(UNSAFE_IN_JSON, escaped)}\n`;
}

/**
 * `value` as YAML, the same value as {@linkcode jsonText}: a string with
 * a control or direction-changing character is double-quoted, with the
 * character escaped.
 */
export function yamlText(value: unknown): string {
  const doc = new Document(value);
  visit(doc, {
    Scalar(_key, scalar) {
      if (
        isScalar(scalar) && typeof scalar.value === "string" &&
        UNSAFE.test(scalar.value)
      ) {
        scalar.type = "QUOTE_DOUBLE";
      }
    },
  });
  return doc.toString({ lineWidth: 0 }).replace(UNSAFE_IN_YAML, escaped);
}
