/**
 * Whether a field path (see `field_path.ts`) can find a string in objects of
 * a type, judged from the type's OpenAPI v3 schema (an APIResourceSchema's
 * `spec.versions[].schema.openAPIV3Schema`): every segment must be a field
 * under `properties` (or a key of a map, `additionalProperties`), every
 * `[*]` must stand on a `type: array`, and the leaf must be a string (or
 * `x-kubernetes-int-or-string`, which may hold one). A path that fails finds
 * nothing in any object of the type.
 *
 * Where the schema leaves a subtree open (`x-kubernetes-preserve-unknown-fields`
 * without the field among `properties`, `additionalProperties: true`, or no
 * schema at all, or a `type` it does not know), the walk stops there: the
 * path is not wrong, only not checked below that point. `apiVersion`, `kind` and `metadata` of the
 * object (and of any `x-kubernetes-embedded-resource`) are known without
 * the schema: `metadata` has the shape of Kubernetes' ObjectMeta
 * ({@linkcode OBJECT_META_SCHEMA}), since APIResourceSchemas usually say only
 * `metadata: {type: object}`.
 *
 * On a mismatch the result names the first bad segment, what the schema has
 * there, and a corrected path when one is near (field names by edit
 * distance, `[*]` added or dropped, a list or object completed to a string
 * below it, preferring a `name`).
 *
 * @example Usage
 * ```ts
 * import { checkSchemaPath, pruneSchema } from "./schema_path.ts";
 * import { parseFieldPath } from "./field_path.ts";
 *
 * const schema = pruneSchema({
 *   type: "object",
 *   properties: {
 *     spec: {
 *       type: "object",
 *       properties: {
 *         volumes: {
 *           type: "array",
 *           items: {
 *             type: "object",
 *             properties: {
 *               volumeRef: { type: "object", properties: { name: { type: "string" } } },
 *             },
 *           },
 *         },
 *       },
 *     },
 *   },
 * });
 * checkSchemaPath(schema, parseFieldPath(".spec.volume[*].volumeRef.name")).ok; // false
 * // message: ".spec.volume: no such field; did you mean .spec.volumes[*].volumeRef.name?"
 * ```
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";
import {
  type FieldPath,
  type FieldSegment,
  formatFieldPath,
} from "./field_path.ts";

/**
 * The part of an OpenAPI v3 schema node the walk reads; everything else
 * (descriptions, validations) is dropped by {@linkcode pruneSchema}.
 */
export interface SchemaNode {
  /** `string`, `integer`, `number`, `boolean`, `object` or `array`; absent: any. */
  readonly type?: string;
  /** The fields of an object. */
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  /** The elements of an array. */
  readonly items?: SchemaNode;
  /** The values of a map (a schema), any value (`true`) or none (`false`). */
  readonly additionalProperties?: SchemaNode | boolean;
  /** Fields not among `properties` are kept: the walk cannot check below. */
  readonly "x-kubernetes-preserve-unknown-fields"?: boolean;
  /** An object with `apiVersion`, `kind` and `metadata` (ObjectMeta). */
  readonly "x-kubernetes-embedded-resource"?: boolean;
  /** An integer or a string. */
  readonly "x-kubernetes-int-or-string"?: boolean;
}

/** The outcome of {@linkcode checkSchemaPath}. */
export type SchemaPathCheck =
  | {
    readonly ok: true;
    /**
     * Where the schema stops saying anything, if it does before the leaf:
     * the path up to there (`.spec.config`; `""` for a schema open at the
     * top). The rest of the path is not checked.
     */
    readonly open?: string;
  }
  | {
    readonly ok: false;
    /** The path up to the first bad segment, such as `.spec.volume`. */
    readonly at: string;
    /** What is wrong there, such as `no such field` or `is a list of objects, not a string`. */
    readonly problem: string;
    /** A path near the given one that the schema has, if one was found. */
    readonly suggestion?: string;
    /**
     * `<at>: <problem>`, then `; did you mean <suggestion>?`, or for a
     * missing field without one the fields that are there.
     */
    readonly message: string;
  };

const STRING: SchemaNode = { type: "string" };
const INTEGER: SchemaNode = { type: "integer" };
const BOOLEAN: SchemaNode = { type: "boolean" };
const STRING_MAP: SchemaNode = { type: "object", additionalProperties: STRING };
const STRING_LIST: SchemaNode = { type: "array", items: STRING };

/**
 * The shape of Kubernetes' ObjectMeta, used for `metadata` of every object
 * and embedded resource whatever its schema says: names and times are
 * strings, `labels` and `annotations` maps of strings, `ownerReferences` a
 * list of objects with `apiVersion`, `kind`, `name` and `uid`.
 */
export const OBJECT_META_SCHEMA: SchemaNode = Object.freeze({
  type: "object",
  properties: Object.freeze({
    name: STRING,
    generateName: STRING,
    namespace: STRING,
    uid: STRING,
    resourceVersion: STRING,
    selfLink: STRING,
    creationTimestamp: STRING,
    deletionTimestamp: STRING,
    generation: INTEGER,
    deletionGracePeriodSeconds: INTEGER,
    labels: STRING_MAP,
    annotations: STRING_MAP,
    finalizers: STRING_LIST,
    ownerReferences: {
      type: "array",
      items: {
        type: "object",
        properties: {
          apiVersion: STRING,
          kind: STRING,
          name: STRING,
          uid: STRING,
          controller: BOOLEAN,
          blockOwnerDeletion: BOOLEAN,
        },
      },
    },
    managedFields: {
      type: "array",
      items: {
        type: "object",
        properties: {
          manager: STRING,
          operation: STRING,
          apiVersion: STRING,
          time: STRING,
          fieldsType: STRING,
          subresource: STRING,
          fieldsV1: {
            type: "object",
            "x-kubernetes-preserve-unknown-fields": true,
          },
        },
      },
    },
  }),
});

/** Deeper schema nodes are kept open; kube-apiserver's own limit is lower. */
const MAX_DEPTH = 64;
/** How many corrections one suggestion may combine. */
const MAX_REPAIRS = 3;
/** How many alternatives are tried per correction. */
const MAX_ALTERNATIVES = 3;
/** How many segments a list or object may be completed with. */
const MAX_COMPLETION = 3;
/** How many field names a message lists. */
const MAX_LISTED = 8;
const FLAGS = [
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-int-or-string",
] as const;

/**
 * Keeps of an untrusted OpenAPI v3 schema (as read from kcp) only what the
 * walk reads, to keep it small in memory: `type`, `properties`, `items`,
 * `additionalProperties` and the `x-kubernetes-*` flags that change the
 * walk. Anything not shaped as expected becomes `{}` (open), and so does
 * every node below {@linkcode MAX_DEPTH}.
 *
 * @param value An `openAPIV3Schema`, decoded from JSON.
 * @returns The pruned schema; `{}` if `value` is not an object.
 */
export function pruneSchema(value: unknown): SchemaNode {
  return _prune(value, 0);
}

/**
 * Walks `path` through `schema` (see the module's description).
 *
 * @param schema The type's schema, as {@linkcode pruneSchema} returns it.
 * @param path The parsed `fieldRef.path` or `fieldRef.namespacePath`.
 * @returns `ok`, with `open` where the schema stopped saying anything, or
 * the first bad segment, the problem there and a suggestion when one is near.
 */
export function checkSchemaPath(
  schema: SchemaNode,
  path: FieldPath,
): SchemaPathCheck {
  const walk = _walk(schema, path);
  if (walk.ok) return walk.open === undefined ? { ok: true } : walk;
  const { failure } = walk;
  const suggestion = _suggest(schema, { path, failure });
  const problem = _problem(failure);
  const hint = suggestion !== undefined
    ? `; did you mean ${suggestion}?`
    : failure.kind === "field"
    ? `; ${failure.prefix || "the object"} has ${
      _listed(_fieldNames(failure.parent, failure.resource))
    }`
    : "";
  return {
    ok: false,
    at: failure.at,
    problem,
    ...(suggestion === undefined ? {} : { suggestion }),
    message: `${failure.at || "the object"}: ${problem}${hint}`,
  };
}

type Shape =
  | "string"
  | "intOrString"
  | "integer"
  | "number"
  | "boolean"
  | "object"
  | "array"
  | "open";

/** The first thing wrong with a path, and where. */
type Failure =
  | {
    /** Segment `segment` is not a field of `parent`. */
    kind: "field";
    segment: number;
    parent: SchemaNode;
    /** Whether `parent` is an object or embedded resource (apiVersion, kind, metadata). */
    resource: boolean;
    /** The path up to `parent`. */
    prefix: string;
    at: string;
  }
  | {
    /** Segment `segment` looks up a field in `node`, which is no object. */
    kind: "notObject";
    segment: number;
    node: SchemaNode;
    at: string;
  }
  | {
    /** The `taken + 1`-th `[*]` of segment `segment` stands on `node`, which is no list. */
    kind: "notList";
    segment: number;
    taken: number;
    node: SchemaNode;
    at: string;
  }
  | {
    /** The leaf, `node`, is no string. */
    kind: "leaf";
    node: SchemaNode;
    at: string;
  };

type Walk = { ok: true; open?: string } | { ok: false; failure: Failure };

function _walk(schema: SchemaNode, path: FieldPath): Walk {
  let node = schema;
  let resource = true;
  let at = "";
  for (const [segment, { name, lists }] of path.entries()) {
    const shape = _shape(node);
    if (shape === "open") return { ok: true, open: at };
    if (shape !== "object") {
      return { ok: false, failure: { kind: "notObject", segment, node, at } };
    }
    const child = _field(node, name, resource);
    // Unknown fields are kept here: nothing is known of this one.
    if (child === "open") return { ok: true, open: at };
    if (child === undefined) {
      return {
        ok: false,
        failure: {
          kind: "field",
          segment,
          parent: node,
          resource,
          prefix: at,
          at: `${at}.${name}`,
        },
      };
    }
    node = child;
    at += `.${name}`;
    for (let taken = 0; taken < lists; taken++) {
      const listShape = _shape(node);
      if (listShape === "open") return { ok: true, open: at };
      if (listShape !== "array") {
        return {
          ok: false,
          failure: { kind: "notList", segment, taken, node, at },
        };
      }
      node = node.items ?? {};
      at += "[*]";
    }
    resource = node["x-kubernetes-embedded-resource"] === true;
  }
  const shape = _shape(node);
  if (shape === "open") return { ok: true, open: at };
  if (shape === "string" || shape === "intOrString") return { ok: true };
  return { ok: false, failure: { kind: "leaf", node, at } };
}

function _shape(node: SchemaNode): Shape {
  if (node["x-kubernetes-int-or-string"] === true) return "intOrString";
  switch (node.type) {
    case "string":
    case "integer":
    case "number":
    case "boolean":
    case "object":
    case "array":
      return node.type;
  }
  if (node.type === undefined) {
    if (node.properties !== undefined) return "object";
    if (node.additionalProperties !== undefined) return "object";
    if (node.items !== undefined) return "array";
  }
  return "open";
}

/** The field `name` of an object node: its schema, `"open"`, or `undefined` if it has none. */
function _field(
  node: SchemaNode,
  name: string,
  resource: boolean,
): SchemaNode | "open" | undefined {
  if (resource) {
    if (name === "apiVersion" || name === "kind") return STRING;
    if (name === "metadata") return OBJECT_META_SCHEMA;
  }
  const { properties, additionalProperties } = node;
  if (properties !== undefined && Object.hasOwn(properties, name)) {
    return properties[name]!;
  }
  if (isRecord(additionalProperties)) return additionalProperties;
  if (additionalProperties === true) return "open";
  if (node["x-kubernetes-preserve-unknown-fields"] === true) return "open";
  return undefined;
}

/** The named fields of an object node, sorted. */
function _fieldNames(node: SchemaNode, resource: boolean): string[] {
  const names = new Set(Object.keys(node.properties ?? {}));
  if (resource) {
    for (const name of ["apiVersion", "kind", "metadata"]) names.add(name);
  }
  return [...names].sort();
}

function _problem(failure: Failure): string {
  switch (failure.kind) {
    case "field":
      return "no such field";
    case "notObject":
      return `is ${_describe(failure.node, false)}, not an object`;
    case "notList":
      return `is ${_describe(failure.node, false)}, not a list`;
    case "leaf":
      return `is ${_describe(failure.node, false)}, not a string`;
  }
}

/** `a list of objects`, `a map of strings`, `an integer`; `plural`: `lists of objects`. */
function _describe(node: SchemaNode, plural: boolean): string {
  const shape = _shape(node);
  switch (shape) {
    case "intOrString":
      return plural ? "integers or strings" : "an integer or a string";
    case "integer":
      return plural ? "integers" : "an integer";
    case "string":
    case "number":
    case "boolean":
      return plural ? `${shape}s` : `a ${shape}`;
    case "array":
      return `${plural ? "lists" : "a list"} of ${
        node.items === undefined ? "values" : _describe(node.items, true)
      }`;
    case "object":
      if (
        node.properties === undefined && isRecord(node.additionalProperties)
      ) {
        return `${plural ? "maps" : "a map"} of ${
          _describe(node.additionalProperties, true)
        }`;
      }
      return plural ? "objects" : "an object";
    case "open":
      return plural ? "values" : "any value";
  }
}

function _listed(names: readonly string[]): string {
  if (names.length === 0) return "no fields";
  const shown = names.slice(0, MAX_LISTED).join(", ");
  return names.length > MAX_LISTED ? `${shown}, ...` : shown;
}

/**
 * The nearest path the schema has: corrections of the first bad segment
 * (then of the next, up to {@linkcode MAX_REPAIRS} in all), breadth first,
 * so the fewest corrections win. Without a whole path, a misspelt field
 * still gets its nearest name, followed by `...` when more of the path follows.
 */
function _suggest(
  schema: SchemaNode,
  start: { path: FieldPath; failure: Failure },
): string | undefined {
  const seen = new Set([formatFieldPath(start.path)]);
  let frontier = [start];
  for (let round = 0; round < MAX_REPAIRS; round++) {
    const next: { path: FieldPath; failure: Failure }[] = [];
    for (const { path, failure } of frontier) {
      for (const candidate of _repairs(path, failure)) {
        const text = formatFieldPath(candidate);
        if (seen.has(text)) continue;
        seen.add(text);
        const walk = _walk(schema, candidate);
        if (walk.ok) return text;
        next.push({ path: candidate, failure: walk.failure });
      }
    }
    frontier = next;
  }
  if (start.failure.kind !== "field") return undefined;
  const first = _repairs(start.path, start.failure)[0];
  if (first === undefined) return undefined;
  const segment = start.failure.segment;
  const partial = formatFieldPath(first.slice(0, segment + 1));
  return segment + 1 < start.path.length ? `${partial}...` : partial;
}

/** Paths that correct `failure`, the likeliest first. */
function _repairs(path: FieldPath, failure: Failure): FieldPath[] {
  const candidates: FieldPath[] = [];
  const replace = (index: number, segments: FieldSegment[]) => {
    const candidate = [
      ...path.slice(0, index),
      ...segments,
      ...path.slice(index + 1),
    ];
    if (candidate.length >= 2) candidates.push(candidate);
  };
  switch (failure.kind) {
    case "field": {
      const { segment, parent, resource } = failure;
      const original = path[segment]!;
      for (
        const name of _nearNames(
          original.name,
          _fieldNames(parent, resource),
        )
      ) {
        const child = _field(parent, name, resource);
        const depth = child === undefined || child === "open"
          ? 0
          : _listDepth(child);
        replace(segment, [{ name, lists: depth }]);
        if (depth !== original.lists) {
          replace(segment, [{ name, lists: original.lists }]);
        }
      }
      break;
    }
    case "notObject": {
      const { segment, node } = failure;
      const previous = path[segment - 1];
      if (previous === undefined) break;
      if (_shape(node) === "array") {
        // A field of list elements: the list needs its [*].
        replace(segment - 1, [{
          name: previous.name,
          lists: previous.lists + _listDepth(node),
        }]);
      } else if (segment >= 2) {
        // A field of a string: the string itself is likely meant.
        candidates.push(path.slice(0, segment));
      }
      break;
    }
    case "notList": {
      const original = path[failure.segment]!;
      replace(failure.segment, [{ name: original.name, lists: failure.taken }]);
      break;
    }
    case "leaf": {
      const last = path.length - 1;
      const leaf = path[last]!;
      let node = failure.node;
      const depth = _listDepth(node);
      for (let i = 0; i < depth; i++) node = node.items ?? {};
      const listed = { name: leaf.name, lists: leaf.lists + depth };
      const shape = _shape(node);
      if (depth > 0 && (shape === "string" || shape === "intOrString")) {
        replace(last, [listed]);
      }
      for (const completion of _completions(node)) {
        replace(last, [listed, ...completion]);
      }
      break;
    }
  }
  return candidates;
}

/** How many arrays are nested at `node`: 0 for no array, 2 for a list of lists. */
function _listDepth(node: SchemaNode): number {
  let depth = 0;
  let current: SchemaNode | undefined = node;
  while (current !== undefined && _shape(current) === "array") {
    depth++;
    current = current.items;
    if (depth > MAX_DEPTH) break;
  }
  return depth;
}

/**
 * Ways down from an object node to a string, at most
 * {@linkcode MAX_COMPLETION} segments: a field `name` first, then the
 * shortest, then by name.
 */
function _completions(node: SchemaNode): FieldSegment[][] {
  const found: FieldSegment[][] = [];
  let frontier: { node: SchemaNode; segments: FieldSegment[] }[] = [{
    node,
    segments: [],
  }];
  for (let length = 1; length <= MAX_COMPLETION; length++) {
    const next: typeof frontier = [];
    for (const { node: parent, segments } of frontier) {
      if (_shape(parent) !== "object") continue;
      for (const [name, child] of Object.entries(parent.properties ?? {})) {
        const lists = _listDepth(child);
        let element = child;
        for (let i = 0; i < lists; i++) element = element.items ?? {};
        const path = [...segments, { name, lists }];
        const shape = _shape(element);
        if (shape === "string") found.push(path);
        else if (shape === "object") {
          next.push({ node: element, segments: path });
        }
      }
    }
    frontier = next;
  }
  const text = (segments: FieldSegment[]) => formatFieldPath(segments);
  return found
    .sort((a, b) => {
      const aName = a.at(-1)!.name === "name" ? 0 : 1;
      const bName = b.at(-1)!.name === "name" ? 0 : 1;
      if (aName !== bName) return aName - bName;
      if (a.length !== b.length) return a.length - b.length;
      return text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0;
    })
    .slice(0, MAX_ALTERNATIVES);
}

/**
 * The names near `name`, nearest first: within an edit distance of a third
 * of the longer name (at least 1, case ignored, a swap of two letters
 * counting once), or one a prefix of the other of at least three letters.
 */
function _nearNames(name: string, names: readonly string[]): string[] {
  const lower = name.toLowerCase();
  const scored: { name: string; distance: number }[] = [];
  for (const candidate of names) {
    if (candidate === name) continue;
    const other = candidate.toLowerCase();
    const distance = _distance(lower, other);
    const limit = Math.max(
      1,
      Math.floor(Math.max(lower.length, other.length) / 3),
    );
    const shorter = lower.length < other.length ? lower : other;
    const longer = shorter === lower ? other : lower;
    if (
      distance <= limit || (shorter.length >= 3 && longer.startsWith(shorter))
    ) {
      scored.push({ name: candidate, distance });
    }
  }
  return scored
    .sort((a, b) =>
      a.distance - b.distance ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
    )
    .slice(0, MAX_ALTERNATIVES)
    .map((s) => s.name);
}

/** The optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function _distance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i, ...new Array<number>(b.length).fill(0)]);
  }
  for (let j = 0; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        rows[i - 1]![j]! + 1,
        rows[i]![j - 1]! + 1,
        rows[i - 1]![j - 1]! + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

function _prune(value: unknown, depth: number): SchemaNode {
  if (!isRecord(value) || depth > MAX_DEPTH) return {};
  const node: {
    type?: string;
    properties?: Record<string, SchemaNode>;
    items?: SchemaNode;
    additionalProperties?: SchemaNode | boolean;
    "x-kubernetes-preserve-unknown-fields"?: boolean;
    "x-kubernetes-embedded-resource"?: boolean;
    "x-kubernetes-int-or-string"?: boolean;
  } = {};
  if (typeof value.type === "string") node.type = value.type;
  if (isRecord(value.properties)) {
    // fromEntries defines own properties: a field named __proto__ stays a field.
    node.properties = Object.fromEntries(
      Object.entries(value.properties).map((
        [name, child],
      ) => [name, _prune(child, depth + 1)]),
    );
  }
  if (isRecord(value.items)) node.items = _prune(value.items, depth + 1);
  if (typeof value.additionalProperties === "boolean") {
    node.additionalProperties = value.additionalProperties;
  } else if (isRecord(value.additionalProperties)) {
    node.additionalProperties = _prune(value.additionalProperties, depth + 1);
  }
  for (const flag of FLAGS) if (value[flag] === true) node[flag] = true;
  return node;
}
