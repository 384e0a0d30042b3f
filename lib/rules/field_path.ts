/**
 * Parsing and resolving the `fieldRef.path` (and `fieldRef.namespacePath`)
 * of a DependencyRule dependency, such as `.spec.vpcRef.name` or
 * `.spec.nics[*].subnetRef.name`: the place inside a dependent object where
 * the name (or namespace) of the protected object lives.
 *
 * The grammar extends the reference implementation's: dot notation with an
 * optional leading dot, at least two segments, each segment an identifier
 * (`[A-Za-z_][A-Za-z0-9_]*`) that may be followed by `[*]` once or more
 * (every element of a list; `[*][*]` for a list of lists). Concrete indexes,
 * other wildcards, empty segments and whitespace are rejected. A path
 * without `[*]` means what it means for the reference.
 *
 * @example Usage
 * ```ts
 * import { formatFieldPath, parseFieldPath, resolveFieldPath } from "./field_path.ts";
 *
 * const path = parseFieldPath("spec.nics[*].subnetRef.name");
 * formatFieldPath(path); // ".spec.nics[*].subnetRef.name"
 * const found = resolveFieldPath(
 *   { spec: { nics: [{ subnetRef: { name: "a" } }, { subnetRef: { name: "b" } }] } },
 *   path,
 * ); // [{ value: "a", indexes: [0] }, { value: "b", indexes: [1] }]
 * formatFieldPath(path, found[1]!.indexes); // ".spec.nics[1].subnetRef.name"
 * ```
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";

/** One segment of a field path: a field name, and how many `[*]` follow it. */
export interface FieldSegment {
  /** The field's name, an identifier. */
  readonly name: string;
  /** How many `[*]` follow the name: 0 for a plain field, 1 for a list, 2 for a list of lists. */
  readonly lists: number;
}

/**
 * A parsed field path: the segments of a path such as
 * `.spec.nics[*].subnetRef.name`, in order.
 */
export type FieldPath = readonly FieldSegment[];

/** A string found at a field path, and the list indexes that led to it. */
export interface FieldMatch {
  /** The string found. */
  readonly value: string;
  /** The index taken at each `[*]` of the path, in order; empty for a path without `[*]`. */
  readonly indexes: readonly number[];
}

/**
 * Pattern of a `fieldRef.path` or `fieldRef.namespacePath`: dot notation with
 * an optional leading dot and at least two identifier segments, each
 * optionally followed by `[*]` (every element of a list), such as
 * `.spec.vpcRef.name` or `.spec.nics[*].subnetRef.name`. It accepts exactly
 * what {@linkcode parseFieldPath} accepts.
 */
export const FIELD_PATH_PATTERN =
  /^\.?[A-Za-z_][A-Za-z0-9_]*(\[\*\])*(\.[A-Za-z_][A-Za-z0-9_]*(\[\*\])*)+$/;

const SEGMENT = /^([A-Za-z_][A-Za-z0-9_]*)((?:\[\*\])*)$/;
const WHITESPACE = /\s/;
const MIN_SEGMENTS = 2;
const LIST = "[*]";

/**
 * Parses a field path in dot notation, such as `.spec.vpcRef.name`,
 * `spec.vpcRef.name` or `.spec.nics[*].subnetRef.name`, into its segments.
 *
 * @param text The path as written in `fieldRef.path`.
 * @returns The segments, frozen.
 * @throws {SyntaxError} If `text` is empty, contains whitespace, has an empty
 * segment, a segment that is not an identifier optionally followed by `[*]`
 * (concrete indexes and other wildcards included), or fewer than two
 * segments.
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
 * (`.spec.nics[*].subnetRef.name`). With `indexes`, each `[*]` is replaced
 * by the index taken there (`.spec.nics[1].subnetRef.name`); a `[*]` beyond
 * the indexes given stays `[*]`. An empty path formats as the empty string.
 *
 * @param path The segments.
 * @param indexes The index taken at each `[*]`, in order.
 * @returns The path in dot notation with a leading dot.
 */
export function formatFieldPath(
  path: FieldPath,
  indexes: readonly number[] = [],
): string {
  let text = "";
  let next = 0;
  for (const segment of path) {
    text += `.${segment.name}`;
    for (let i = 0; i < segment.lists; i++) {
      const index = indexes[next++];
      text += index === undefined ? LIST : `[${index}]`;
    }
  }
  return text;
}

/**
 * Whether `namespacePath` can be read beside `path`, element by element:
 * every `[*]` of `namespacePath` must be one of `path`'s, at the same place,
 * so that both read the same list element. That holds when the segments of
 * `namespacePath` up to its last `[*]` are those of `path`. A
 * `namespacePath` without `[*]` pairs with any `path` (one namespace for all
 * its elements).
 *
 * @returns `undefined` if they pair, or the problem as a sentence fragment.
 */
export function pairingProblem(
  path: FieldPath,
  namespacePath: FieldPath,
): string | undefined {
  let last = -1;
  namespacePath.forEach((segment, index) => {
    if (segment.lists > 0) last = index;
  });
  for (let index = 0; index <= last; index++) {
    const a = namespacePath[index]!;
    const b = path[index];
    if (b === undefined || a.name !== b.name || a.lists !== b.lists) {
      return `its [*] must be those of the path at the same place, so that both read the same list element: '${
        formatFieldPath(namespacePath)
      }' does not pair with '${formatFieldPath(path)}'`;
    }
  }
  return undefined;
}

/**
 * Resolves a field path in an object, such as a dependent decoded from JSON,
 * and returns every string found there: one at most for a path without
 * `[*]`, one per list element (in order) otherwise.
 *
 * Only own properties of plain objects (non-null, non-array objects) are
 * walked, and `[*]` walks only arrays, so prototype keys such as
 * `constructor` or `__proto__` never resolve to anything inherited. Missing
 * fields, values of the wrong shape and leaves that are not strings are
 * skipped.
 *
 * @param object The object to look into.
 * @param path The segments to follow.
 * @returns The strings found, each with the indexes that led to it.
 */
export function resolveFieldPath(
  object: unknown,
  path: FieldPath,
): FieldMatch[] {
  const found: FieldMatch[] = [];
  if (path.length > 0) _walk(object, path, 0, 0, [], found);
  return found;
}

/**
 * Resolves a field path at given list indexes: the `i`-th `[*]` takes
 * `indexes[i]`. This reads the field that pairs with a match of another path
 * (see {@linkcode pairingProblem}).
 *
 * @param object The object to look into.
 * @param path The segments to follow.
 * @param indexes The index to take at each `[*]`, in order.
 * @returns The string there, or `undefined` if anything on the way is
 * missing, of the wrong shape, or not a string, or if `path` has more `[*]`
 * than `indexes`.
 */
export function resolveFieldPathAt(
  object: unknown,
  path: FieldPath,
  indexes: readonly number[],
): string | undefined {
  let current: unknown = object;
  let next = 0;
  for (const segment of path) {
    if (!isRecord(current) || !Object.hasOwn(current, segment.name)) {
      return undefined;
    }
    current = current[segment.name];
    for (let i = 0; i < segment.lists; i++) {
      const index = indexes[next++];
      if (!Array.isArray(current) || index === undefined) return undefined;
      if (index < 0 || index >= current.length) return undefined;
      current = current[index];
    }
  }
  return path.length > 0 && typeof current === "string" ? current : undefined;
}

function _walk(
  current: unknown,
  path: FieldPath,
  segment: number,
  list: number,
  indexes: number[],
  found: FieldMatch[],
): void {
  if (segment === path.length) {
    if (typeof current === "string") {
      found.push({ value: current, indexes: [...indexes] });
    }
    return;
  }
  const { name, lists } = path[segment]!;
  let value = current;
  if (list === 0) {
    if (!isRecord(current) || !Object.hasOwn(current, name)) return;
    value = current[name];
  }
  if (list === lists) {
    _walk(value, path, segment + 1, 0, indexes, found);
    return;
  }
  if (!Array.isArray(value)) return;
  for (let index = 0; index < value.length; index++) {
    indexes.push(index);
    // The next `[*]` of the same segment, or the next segment.
    _walk(value[index], path, segment, list + 1, indexes, found);
    indexes.pop();
  }
}

/** Returns the segments of a valid path, or the problem with an invalid one. */
function _parse(text: string): FieldPath | string {
  if (text === "") return "path is empty";
  if (WHITESPACE.test(text)) return "path contains whitespace";
  const body = text.startsWith(".") ? text.slice(1) : text;
  const parts = body.split(".");
  const segments: FieldSegment[] = [];
  for (const [index, part] of parts.entries()) {
    const match = SEGMENT.exec(part);
    if (match === null) return _segmentProblem(part, index + 1);
    segments.push(
      Object.freeze({
        name: match[1]!,
        lists: match[2]!.length / LIST.length,
      }),
    );
  }
  if (segments.length < MIN_SEGMENTS) {
    return `path needs at least ${MIN_SEGMENTS} segments, found ${segments.length}`;
  }
  return Object.freeze(segments);
}

function _segmentProblem(segment: string, position: number): string {
  if (segment === "") return `segment ${position} is empty`;
  if (/\[[0-9]*\]/.test(segment)) {
    return `segment ${position} '${segment}' has an array index: write [*] for every element of a list`;
  }
  if (segment.includes("[") || segment.includes("]")) {
    return `segment ${position} '${segment}' has brackets other than [*] after a field name`;
  }
  if (segment.includes("*")) {
    return `segment ${position} '${segment}' has a wildcard other than [*] after a field name`;
  }
  return `segment ${position} '${segment}' is not an identifier`;
}
