/**
 * What a dependent refers to: the names (and namespaces) a dependency's
 * `fieldRef` finds in one dependent object.
 *
 * `fieldRef.path` gives the name; `fieldRef.namespacePath`, when the rule has
 * one, gives the namespace, read from the same list element as the name
 * (their `[*]` pair: see `pairingProblem` in `field_path.ts`). Without a namespace
 * path, or where it finds nothing or an empty string, the reference is to
 * the dependent's own namespace, as in the reference implementation.
 *
 * @example Usage
 * ```ts
 * import { parseFieldPath } from "./field_path.ts";
 * import { referencesOf } from "./references.ts";
 *
 * const vm = {
 *   metadata: { namespace: "team-a" },
 *   spec: { nics: [{ subnetRef: { name: "core", namespace: "shared" } }] },
 * };
 * referencesOf(vm, {
 *   fieldPath: parseFieldPath(".spec.nics[*].subnetRef.name"),
 *   namespacePath: parseFieldPath(".spec.nics[*].subnetRef.namespace"),
 * }); // [{ name: "core", namespace: "shared", indexes: [0] }]
 * ```
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";
import {
  type FieldPath,
  resolveFieldPath,
  resolveFieldPathAt,
} from "./field_path.ts";

/** Where a dependent keeps its references to one protected type. */
export interface ReferenceFields {
  /** Where the name is (`fieldRef.path`). */
  readonly fieldPath: FieldPath;
  /** Where the namespace is (`fieldRef.namespacePath`), if the rule says. */
  readonly namespacePath?: FieldPath;
}

/** One object a dependent refers to. */
export interface Reference {
  /** The referenced object's name. */
  readonly name: string;
  /**
   * The referenced object's namespace: what `namespacePath` found, else the
   * dependent's own namespace (`""` for a cluster-scoped dependent).
   */
  readonly namespace: string;
  /** The list index taken at each `[*]` of the path, for naming the field. */
  readonly indexes: readonly number[];
}

/**
 * Every reference `fields` finds in `object`, in the order of the path's
 * list elements. Values that are missing or not strings are skipped, as are
 * empty names.
 *
 * @param object A dependent object, as decoded from JSON.
 * @param fields Where the names and namespaces are.
 * @returns The references found.
 */
export function referencesOf(
  object: unknown,
  fields: ReferenceFields,
): Reference[] {
  const names = resolveFieldPath(object, fields.fieldPath);
  if (names.length === 0) return [];
  const metadata = isRecord(object) ? object.metadata : undefined;
  const own = isRecord(metadata) && typeof metadata.namespace === "string"
    ? metadata.namespace
    : "";
  const references: Reference[] = [];
  for (const { value, indexes } of names) {
    if (value === "") continue;
    const found = fields.namespacePath === undefined
      ? undefined
      : resolveFieldPathAt(object, fields.namespacePath, indexes);
    references.push({
      name: value,
      namespace: found === undefined || found === "" ? own : found,
      indexes,
    });
  }
  return references;
}
