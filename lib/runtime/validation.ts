/**
 * Validating an untrusted value against a zod schema with one wording for
 * every problem, as `<path>: <what is wrong>` joined by `; `:
 *
 * - a missing field: `spec.dependent.kind: is required`;
 * - a wrong type: `spec.dependent.group: must be a string: current value is 42`;
 * - a wrong literal or enum value:
 *   `kind: must be 'DependencyRule': current value is 'Other'`,
 *   `request.operation: must be one of 'CREATE', 'UPDATE': current value is 'PATCH'`;
 * - anything else: the message the schema gives (its own `error`), else zod's.
 *
 * A path names fields with dots and indexes in brackets
 * (`spec.dependencies[0].version`); a key that is not an identifier is
 * quoted in brackets (`metadata.annotations["kcp.io/cluster"]`). A string
 * shown as the current value is cut after 60 characters. zod's own
 * `z.prettifyError` is not used: it writes each issue over two lines, the
 * message and then its path, where these messages go into one line of a
 * status condition, an HTTP answer or a log field.
 *
 * @example Usage
 * ```ts
 * import { z } from "zod";
 * import { validateWith } from "./validation.ts";
 *
 * const checked = validateWith(z.object({ name: z.string() }), { name: 7 });
 * if (!checked.ok) console.error(checked.error);
 * // name: must be a string: current value is 7
 * ```
 *
 * @module
 */
import type { z } from "zod";

/** Options for {@linkcode validateWith}. */
export interface ValidateOptions {
  /**
   * The name of the value, put in front of every path: `request` gives
   * `request.kind` and `request` for the value itself. Without it, paths
   * start at the value's own fields and the value itself is `(root)`.
   */
  root?: string;
  /**
   * The most problems to list; more are counted as ` (and N more)`.
   * @default all of them
   */
  limit?: number;
}

/** The outcome of {@linkcode validateWith}: the parsed value, or the problems in one line. */
export type Validated<T> =
  | { ok: true; data: T }
  | { ok: false; error: string };

/** How many characters of a string {@linkcode validateWith} shows as the current value. */
const VALUE_SHOWN = 60;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Parses `value` with `schema` and words every problem the same way (see
 * the module documentation). Throws only what the schema or a hostile value
 * (a throwing getter or proxy) throws.
 *
 * @param schema The zod schema to parse with.
 * @param value The untrusted value.
 * @param options `root`, the name of the value in paths, and `limit`, the
 * most problems to list.
 * @returns `{ ok: true, data }`, or `{ ok: false, error }` with the problems
 * as `<path>: <message>` joined by `; `, for example
 * `spec.dependencies[0].version: must look like v1, v1alpha1 or v2beta3: current value is 'v0'`.
 */
export function validateWith<S extends z.ZodType>(
  schema: S,
  value: unknown,
  options: ValidateOptions = {},
): Validated<z.output<S>> {
  const result = schema.safeParse(value, { error: issueMessage });
  if (result.success) return { ok: true, data: result.data };
  const { root, limit = Infinity } = options;
  const issues = result.error.issues;
  const shown = issues.slice(0, limit).map((issue) =>
    `${issuePath(issue.path, root)}: ${issue.message}`
  );
  const more = issues.length > shown.length
    ? ` (and ${issues.length - shown.length} more)`
    : "";
  return { ok: false, error: `${shown.join("; ")}${more}` };
}

/**
 * The message of an issue zod raises on its own; `undefined` leaves it to
 * the schema's `error` or zod's default. A schema's own `error` wins over
 * this one.
 */
function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.input === undefined) return "is required";
  switch (issue.code) {
    case "invalid_type":
      return `must be ${expectedType(issue.expected)}: current value is ${
        currentValue(issue.input)
      }`;
    case "invalid_value": {
      const values = issue.values.map((value) => describeValue(value));
      const wanted = values.length === 1
        ? values[0]
        : `one of ${values.join(", ")}`;
      return `must be ${wanted}: current value is ${currentValue(issue.input)}`;
    }
    default:
      return undefined;
  }
}

/** `a string`, `an object`, `an integer`: zod's expected type with an article. */
function expectedType(expected: string): string {
  switch (expected) {
    case "object":
    case "record":
      return "an object";
    case "array":
      return "an array";
    case "int":
      return "an integer";
    default:
      return `a ${expected}`;
  }
}

/** {@linkcode describeValue}, with a long string cut short. */
function currentValue(value: unknown): string {
  if (typeof value === "string" && value.length > VALUE_SHOWN) {
    return `'${value.slice(0, VALUE_SHOWN)}...' (truncated)`;
  }
  return describeValue(value);
}

/** `'text'`, `42`, `null`, or `an object`/`an array` without the content. */
function describeValue(value: unknown): string {
  if (typeof value === "string") return `'${value}'`;
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return String(value);
}

/** `spec.dependencies[0].version`; keys that are not identifiers in brackets. */
function issuePath(
  path: readonly PropertyKey[],
  root: string | undefined,
): string {
  let text = root ?? "";
  for (const key of path) {
    if (typeof key === "number") text += `[${key}]`;
    else if (typeof key === "symbol") text += `[${String(key)}]`;
    else if (IDENTIFIER.test(key)) text += text === "" ? key : `.${key}`;
    else text += `[${JSON.stringify(key)}]`;
  }
  return text === "" ? "(root)" : text;
}
