/**
 * Whether a field path (see `field_path.ts`) can find a string in objects of
 * a type, judged from the type's OpenAPI v3 schema (an APIResourceSchema's
 * `spec.versions[].schema.openAPIV3Schema`): every segment must be a field
 * under `properties` or a key of a map (`additionalProperties`), whether it
 * is written as a field (`.app`) or a quoted key (`["example.com/app"]`),
 * which read alike; every
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
 * import { checkSchemaPath } from "./schema_path.ts";
 * import { pruneSchema } from "./schema_walk.ts";
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
import type { FieldPath } from "./field_path.ts";
import { suggestPath } from "./schema_suggestion.ts";
import {
  type Failure,
  fieldNames,
  type SchemaNode,
  shapeOf,
  walkPath,
} from "./schema_walk.ts";

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
    /**
     * What is wrong there, such as `no such field`, `no such field, and
     * .spec.owners is not a map` (for a key) or `is a list of objects, not a
     * string`.
     */
    readonly problem: string;
    /** A path near the given one that the schema has, if one was found. */
    readonly suggestion?: string;
    /**
     * `<at>: <problem>`, then `; did you mean <suggestion>?`, or for a
     * missing field without one the fields that are there.
     */
    readonly message: string;
  };

/** How many field names a message lists. */
const MAX_LISTED = 8;

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
  const walk = walkPath(schema, path);
  if (walk.ok) return walk.open === undefined ? { ok: true } : walk;
  const { failure } = walk;
  const suggestion = suggestPath(schema, { path, failure });
  const problem = _problem(failure, path);
  const hint = suggestion !== undefined
    ? `; did you mean ${suggestion}?`
    : failure.kind === "field"
    ? `; ${failure.prefix || "the object"} has ${
      _listed(fieldNames(failure.parent, failure.resource))
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

function _problem(failure: Failure, path: FieldPath): string {
  switch (failure.kind) {
    case "field":
      // A key looks for a map: say that there is none.
      return path[failure.segment]?.key
        ? `no such field, and ${failure.prefix || "the object"} is not a map`
        : "no such field";
    case "notObject":
      return `is ${_describe(failure.node, false)}, not ${
        path[failure.segment]?.key ? "a map" : "an object"
      }`;
    case "notList":
      return `is ${_describe(failure.node, false)}, not a list`;
    case "leaf":
      return `is ${_describe(failure.node, false)}, not a string`;
  }
}

/** `a list of objects`, `a map of strings`, `an integer`; `plural`: `lists of objects`. */
function _describe(node: SchemaNode, plural: boolean): string {
  const shape = shapeOf(node);
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
