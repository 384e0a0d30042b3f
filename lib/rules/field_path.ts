/**
 * Parsing and resolving the `fieldRef.path` (and `fieldRef.namespacePath`)
 * of a DependencyRule dependency, such as `.spec.vpcRef.name`,
 * `.spec.nics[*].subnetRef.name` or
 * `.metadata.labels["network.example.com/owner"]`: the place inside a
 * dependent object where the name (or namespace) of the protected object
 * lives.
 *
 * The grammar extends the reference implementation's: dot notation with an
 * optional leading dot and at least two segments. The first segment is an
 * identifier (`[A-Za-z_][A-Za-z0-9_]*`); each further one is `.` and an
 * identifier, or a quoted map key `["key"]` written right after the segment
 * before it. A key has the characters of a Kubernetes label or annotation
 * key: 1 to 317 letters, digits, `.`, `_`, `-` and `/`, starting and ending
 * with a letter or digit (so no quote, backslash or bracket, and no escaping).
 * Every segment may be followed by `[*]` once or more (every element of a
 * list; `[*][*]` for a list of lists). Concrete indexes, other wildcards,
 * single-quoted keys, empty segments and whitespace are rejected. A path
 * without `[*]` and keys means what it means for the reference.
 *
 * A key reads the map entry of that name, exactly as a field of that name
 * would: `.metadata.labels["app"]` and `.metadata.labels.app` find the same
 * string. Keys name what an identifier cannot, such as
 * `.metadata.annotations["example.com/owner"]`.
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
 *
 * const owner = parseFieldPath('.metadata.labels["network.example.com/owner"]');
 * owner[2]; // { name: "network.example.com/owner", key: true, lists: 0 }
 * resolveFieldPath(
 *   { metadata: { labels: { "network.example.com/owner": "vpc-1" } } },
 *   owner,
 * ); // [{ value: "vpc-1", indexes: [] }]
 * ```
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";

/**
 * One segment of a field path: a field name (`.name`) or a quoted map key
 * (`["example.com/owner"]`), and how many `[*]` follow it. Both read the
 * entry of that name in an object.
 */
export interface FieldSegment {
  /** The field's name, an identifier; for a key, the key without its quotes. */
  readonly name: string;
  /** Present when the segment was written as a quoted map key, `["name"]`. */
  readonly key?: true;
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
 * an optional leading dot and at least two segments, the first an
 * identifier, each further one `.` and an identifier or a quoted map key
 * `["key"]`, and each optionally followed by `[*]` (every element of a
 * list), such as `.spec.vpcRef.name`, `.spec.nics[*].subnetRef.name` or
 * `.metadata.labels["example.com/owner"]`. It accepts exactly what
 * {@linkcode parseFieldPath} accepts, and is both ECMA-262 and RE2 syntax
 * (no lookaround, no backreferences), as an OpenAPI `pattern` must be for
 * kube-apiserver.
 */
export const FIELD_PATH_PATTERN =
  /^\.?[A-Za-z_][A-Za-z0-9_]*(\[\*\])*((\.[A-Za-z_][A-Za-z0-9_]*|\["[A-Za-z0-9]([-A-Za-z0-9_.\/]{0,315}[A-Za-z0-9])?"\])(\[\*\])*)+$/;

/**
 * The longest map key: a Kubernetes label or annotation key, a DNS
 * subdomain prefix of up to 253 characters, `/` and a name of up to 63.
 */
export const MAX_KEY_LENGTH = 317;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SEGMENT = /^([A-Za-z_][A-Za-z0-9_]*)((?:\[\*\])*)$/;
const LISTS = /^(?:\[\*\])*$/;
const KEY_CHARACTER = /^[-A-Za-z0-9_./]$/;
const ALPHANUMERIC = /^[A-Za-z0-9]$/;
const WHITESPACE = /\s/;
const MIN_SEGMENTS = 2;
const LIST = "[*]";

/**
 * Whether `name` can be written as a field segment, `.name`: an identifier
 * (`[A-Za-z_][A-Za-z0-9_]*`).
 *
 * @param name A field name.
 * @returns `true` for an identifier.
 */
export function isFieldName(name: string): boolean {
  return IDENTIFIER.test(name);
}

/**
 * Whether `name` can be written as a quoted map key, `["name"]`: 1 to
 * {@linkcode MAX_KEY_LENGTH} letters, digits, `.`, `_`, `-` and `/`,
 * starting and ending with a letter or digit.
 *
 * @param name A map key.
 * @returns `true` for a valid key.
 */
export function isMapKey(name: string): boolean {
  return _keyProblem(name) === undefined;
}

/**
 * The segment that reads the entry `name` of an object: a field segment when
 * `name` is an identifier, else a key segment when it is a valid key.
 *
 * @param name The field's name or the map's key.
 * @param lists How many `[*]` follow it.
 * @returns The segment, frozen, or `undefined` if `name` can be written
 * neither way.
 */
export function fieldSegment(
  name: string,
  lists = 0,
): FieldSegment | undefined {
  if (isFieldName(name)) return Object.freeze({ name, lists });
  if (isMapKey(name)) return Object.freeze({ name, key: true, lists });
  return undefined;
}

/**
 * How a segment's name is written in a path, without its `[*]`: `.name`
 * for a field, `["name"]` for a key.
 *
 * @param segment The segment.
 * @returns Its name as written in a canonical path.
 */
export function formatFieldName(segment: FieldSegment): string {
  return segment.key ? `["${segment.name}"]` : `.${segment.name}`;
}

/**
 * Parses a field path in dot notation, such as `.spec.vpcRef.name`,
 * `spec.vpcRef.name`, `.spec.nics[*].subnetRef.name` or
 * `.metadata.labels["example.com/owner"]`, into its segments.
 *
 * @param text The path as written in `fieldRef.path`.
 * @returns The segments, frozen.
 * @throws {SyntaxError} If `text` is empty, contains whitespace, has an empty
 * segment, a segment that is neither an identifier nor a quoted key
 * optionally followed by `[*]` (concrete indexes and other wildcards
 * included), a key that is empty, unterminated, single-quoted, first, after
 * a dot, too long or has a character a key cannot have, or fewer than two
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
 * Formats a field path in its canonical form, with a leading dot and keys
 * in double quotes (`.spec.nics[*].subnetRef.name`,
 * `.metadata.labels["a/b"]`). With `indexes`, each `[*]` is replaced
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
    text += formatFieldName(segment);
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
    if (
      b === undefined || a.name !== b.name || a.key !== b.key ||
      a.lists !== b.lists
    ) {
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
 * A key segment reads the map entry of that name just as a field segment
 * reads a field. Only own properties of plain objects (non-null, non-array
 * objects) are walked, and `[*]` walks only arrays, so prototype keys such
 * as `constructor` or `__proto__` never resolve to anything inherited. Missing
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
  const segments: FieldSegment[] = [];
  for (const [index, raw] of _split(body).entries()) {
    const position = index + 1;
    if (_opensKey(raw.text, 0)) {
      const parsed = _keySegment(raw.text, position, raw.dotted, segments);
      if (typeof parsed === "string") return parsed;
      segments.push(parsed);
      continue;
    }
    const match = SEGMENT.exec(raw.text);
    if (match === null) return _segmentProblem(raw.text, position);
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

/** One segment as written, and whether a dot (or the path's start) is before it. */
interface RawSegment {
  readonly text: string;
  readonly dotted: boolean;
}

/**
 * Splits a path (without its leading dot) into its segments as written: at
 * every dot outside a key, and before every `["` or `['` that opens a key.
 * A key runs to its closing quote, so it may hold dots; an unterminated
 * key runs to the end.
 */
function _split(body: string): RawSegment[] {
  const raws: RawSegment[] = [];
  let start = 0;
  let dotted = true;
  let at = 0;
  while (at < body.length) {
    if (body[at] === ".") {
      raws.push({ text: body.slice(start, at), dotted });
      start = at + 1;
      dotted = true;
      at++;
    } else if (_opensKey(body, at)) {
      if (at > start) {
        raws.push({ text: body.slice(start, at), dotted });
        start = at;
        dotted = false;
      }
      const close = body.indexOf(body[at + 1]!, at + 2);
      at = close === -1 ? body.length : close + 1;
    } else {
      at++;
    }
  }
  raws.push({ text: body.slice(start), dotted });
  return raws;
}

/** Whether a key, `["` or `['`, opens at `at`. */
function _opensKey(text: string, at: number): boolean {
  return text[at] === "[" && (text[at + 1] === '"' || text[at + 1] === "'");
}

/** The segment of a raw `["key"][*]`, or the problem with it. */
function _keySegment(
  raw: string,
  position: number,
  dotted: boolean,
  before: readonly FieldSegment[],
): FieldSegment | string {
  const segment = `segment ${position} '${raw}'`;
  const quote = raw[1]!;
  const close = raw.indexOf(quote, 2);
  if (quote === "'") {
    const key = close === -1 ? raw.slice(2) : raw.slice(2, close);
    return `${segment} quotes its key with single quotes: write ["${key}"]`;
  }
  if (close === -1) return `${segment} has an unterminated key: end it with "]`;
  if (raw[close + 1] !== "]") {
    return `${segment} does not end its key with "]`;
  }
  const name = raw.slice(2, close);
  const problem = _keyProblem(name);
  if (problem !== undefined) return `${segment} ${problem}`;
  const written = raw.slice(0, close + 2);
  if (position === 1) {
    return `${segment} is a key: a path starts with a field name`;
  }
  if (dotted) {
    return `${segment} follows a dot: write a key right after its map, as in '${
      formatFieldPath(before)
    }${written}'`;
  }
  const suffix = raw.slice(close + 2);
  if (!LISTS.test(suffix)) {
    if (/\[[0-9]*\]/.test(suffix)) {
      return `${segment} has an array index: write [*] for every element of a list`;
    }
    if (suffix.includes("[") || suffix.includes("]")) {
      return `${segment} has brackets other than [*] after a key`;
    }
    if (suffix.includes("*")) {
      return `${segment} has a wildcard other than [*] after a key`;
    }
    return `${segment} has '${suffix}' after its key: only [*] may follow a key, and a field follows a dot`;
  }
  return Object.freeze({
    name,
    key: true,
    lists: suffix.length / LIST.length,
  });
}

/** The problem with a map key, without its segment, or `undefined`. */
function _keyProblem(key: string): string | undefined {
  if (key === "") return "has an empty key";
  for (const character of key) {
    if (!KEY_CHARACTER.test(character)) {
      const escaping = character === "\\" ? "; there is no escaping" : "";
      return `has a key with '${character}', which a key cannot hold: a key has letters, digits, '.', '_', '-' and '/'${escaping}`;
    }
  }
  if (!ALPHANUMERIC.test(key[0]!) || !ALPHANUMERIC.test(key.at(-1)!)) {
    return "has a key that does not start and end with a letter or digit";
  }
  if (key.length > MAX_KEY_LENGTH) {
    return `has a key of ${key.length} characters, more than ${MAX_KEY_LENGTH}`;
  }
  return undefined;
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
