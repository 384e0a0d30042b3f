/**
 * A field path's walk through a type's OpenAPI v3 schema: the schema pruned
 * to what the walk reads ({@linkcode SchemaNode}, {@linkcode pruneSchema}),
 * the ObjectMeta every object has ({@linkcode OBJECT_META_SCHEMA}), what one
 * node is (its shape, its fields, how many lists it nests), and the walk
 * itself, which stops where the schema is open or at the first bad segment
 * (see `schema_path.ts` for the rules).
 *
 * @example Usage
 * ```ts
 * import { pruneSchema, walkPath } from "./schema_walk.ts";
 * import { parseFieldPath } from "./field_path.ts";
 *
 * const schema = pruneSchema({
 *   type: "object",
 *   properties: { spec: { type: "object", description: "dropped" } },
 * });
 * walkPath(schema, parseFieldPath(".spec.name")).ok; // false: no such field
 * ```
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";
import { type FieldPath, formatFieldName } from "./field_path.ts";

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
 * What a schema node holds: a `type` it knows, `intOrString` for
 * `x-kubernetes-int-or-string`, `object` or `array` for an untyped node with
 * `properties`/`additionalProperties` or `items`, else `open` (anything).
 */
export type Shape =
  | "string"
  | "intOrString"
  | "integer"
  | "number"
  | "boolean"
  | "object"
  | "array"
  | "open";

/** The first thing wrong with a path, and where. */
export type Failure =
  | {
    /** Segment `segment` is not a field of `parent`, nor a key of it as a map. */
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
    /** Segment `segment` looks up a field (or key) in `node`, which is no object. */
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

/** The outcome of {@linkcode walkPath}. */
export type Walk = { ok: true; open?: string } | {
  ok: false;
  failure: Failure;
};

/**
 * Walks `path` through `schema` up to its first bad segment.
 *
 * @returns `ok`, with `open` where the schema stopped saying anything, or
 * the first thing wrong with the path.
 */
export function walkPath(schema: SchemaNode, path: FieldPath): Walk {
  let node = schema;
  let resource = true;
  let at = "";
  for (const [segment, written] of path.entries()) {
    const { name, lists } = written;
    const shape = shapeOf(node);
    if (shape === "open") return { ok: true, open: at };
    if (shape !== "object") {
      return { ok: false, failure: { kind: "notObject", segment, node, at } };
    }
    const child = fieldOf(node, name, resource);
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
          at: at + formatFieldName(written),
        },
      };
    }
    node = child;
    at += formatFieldName(written);
    for (let taken = 0; taken < lists; taken++) {
      const listShape = shapeOf(node);
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
  const shape = shapeOf(node);
  if (shape === "open") return { ok: true, open: at };
  if (shape === "string" || shape === "intOrString") return { ok: true };
  return { ok: false, failure: { kind: "leaf", node, at } };
}

/** What `node` holds (see {@linkcode Shape}). */
export function shapeOf(node: SchemaNode): Shape {
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

/**
 * The field `name` of an object node, or its map key `name`, which is
 * read alike: the schema under `properties`, else that of the map's values
 * (`additionalProperties`); `"open"` where the schema keeps any field, or
 * `undefined` if it has none.
 */
export function fieldOf(
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
export function fieldNames(node: SchemaNode, resource: boolean): string[] {
  const names = new Set(Object.keys(node.properties ?? {}));
  if (resource) {
    for (const name of ["apiVersion", "kind", "metadata"]) names.add(name);
  }
  return [...names].sort();
}

/** How many arrays are nested at `node`: 0 for no array, 2 for a list of lists. */
export function listDepth(node: SchemaNode): number {
  let depth = 0;
  let current: SchemaNode | undefined = node;
  while (current !== undefined && shapeOf(current) === "array") {
    depth++;
    current = current.items;
    if (depth > MAX_DEPTH) break;
  }
  return depth;
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
