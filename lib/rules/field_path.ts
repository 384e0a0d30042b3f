/**
 * Parsing and resolving the `fieldRef.path` of a DependencyRule dependency,
 * such as `.spec.vpcRef.name`: the place inside a dependent object where the
 * name of the protected object lives.
 *
 * The grammar matches the reference implementation: dot notation with an
 * optional leading dot, at least two segments, each segment an identifier
 * (`[A-Za-z_][A-Za-z0-9_]*`). Array indexes, wildcards, empty segments and
 * whitespace are rejected.
 *
 * @example Usage
 * ```ts
 * import { formatFieldPath, parseFieldPath, resolveFieldPath } from "./field_path.ts";
 *
 * const path = parseFieldPath("spec.vpcRef.name"); // ["spec", "vpcRef", "name"]
 * formatFieldPath(path); // ".spec.vpcRef.name"
 * resolveFieldPath({ spec: { vpcRef: { name: "vpc-1" } } }, path); // "vpc-1"
 * ```
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";

/**
 * A parsed field path: the segments of a path such as `.spec.vpcRef.name`,
 * in order (`["spec", "vpcRef", "name"]`).
 */
export type FieldPath = readonly string[];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const WHITESPACE = /\s/;
const MIN_SEGMENTS = 2;

/**
 * Parses a field path in dot notation, such as `.spec.vpcRef.name` or
 * `spec.vpcRef.name`, into its segments.
 *
 * @param text The path as written in `fieldRef.path`.
 * @returns The segments, frozen.
 * @throws {SyntaxError} If `text` is empty, contains whitespace, has an empty
 * segment, a segment that is not an identifier (array indexes and wildcards
 * included), or fewer than two segments.
 */
export function parseFieldPath(text: string): FieldPath {
  const parsed = _parse(text);
  if (typeof parsed === "string") {
    throw new SyntaxError(
      `Cannot parse field path: ${parsed}: current value is '${text}'`,
    );
  }
  return parsed;
}

/**
 * Parses a field path like {@linkcode parseFieldPath}, returning `undefined`
 * instead of throwing when `text` is not a valid field path.
 *
 * @param text The path as written in `fieldRef.path`.
 * @returns The segments, frozen, or `undefined` if `text` is invalid.
 */
export function tryParseFieldPath(text: string): FieldPath | undefined {
  const parsed = _parse(text);
  return typeof parsed === "string" ? undefined : parsed;
}

/**
 * Formats a field path in its canonical form, with a leading dot
 * (`.spec.vpcRef.name`). An empty path formats as the empty string.
 *
 * @param path The segments.
 * @returns The path in dot notation with a leading dot.
 */
export function formatFieldPath(path: FieldPath): string {
  return path.map((segment) => `.${segment}`).join("");
}

/**
 * Resolves a field path in an object, such as a dependent decoded from JSON,
 * and returns the string found there.
 *
 * Only own properties of plain objects (non-null, non-array objects) are
 * walked, so prototype keys such as `constructor` or `__proto__` never
 * resolve to anything inherited.
 *
 * @param object The object to look into.
 * @param path The segments to follow.
 * @returns The value at `path` if it is a string; `undefined` if `path` is
 * empty, a field is missing, an intermediate value is not a plain object, or
 * the leaf is not a string.
 */
export function resolveFieldPath(
  object: unknown,
  path: FieldPath,
): string | undefined {
  if (path.length === 0) return undefined;
  let current: unknown = object;
  for (const segment of path) {
    if (!isRecord(current) || !Object.hasOwn(current, segment)) {
      return undefined;
    }
    current = current[segment];
  }
  return typeof current === "string" ? current : undefined;
}

/** Returns the segments of a valid path, or the problem with an invalid one. */
function _parse(text: string): FieldPath | string {
  if (text === "") return "path is empty";
  if (WHITESPACE.test(text)) return "path contains whitespace";
  const body = text.startsWith(".") ? text.slice(1) : text;
  const segments = body.split(".");
  for (const [index, segment] of segments.entries()) {
    const problem = _segmentProblem(segment, index + 1);
    if (problem !== undefined) return problem;
  }
  if (segments.length < MIN_SEGMENTS) {
    return `path needs at least ${MIN_SEGMENTS} segments, found ${segments.length}`;
  }
  return Object.freeze(segments);
}

function _segmentProblem(
  segment: string,
  position: number,
): string | undefined {
  if (segment === "") return `segment ${position} is empty`;
  if (IDENTIFIER.test(segment)) return undefined;
  if (segment.includes("[") || segment.includes("]")) {
    return `segment ${position} '${segment}' has an array index, which is not supported`;
  }
  if (segment.includes("*")) {
    return `segment ${position} '${segment}' has a wildcard, which is not supported`;
  }
  return `segment ${position} '${segment}' is not an identifier`;
}
