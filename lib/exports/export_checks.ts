/**
 * Whether a rule's types exist: its dependent type must be served by the
 * APIExport `spec.dependent.apiExportName` in the rule's own workspace, and
 * each protected type by the APIExport `apiExportRef` names. And whether its
 * field paths exist: each dependency's `fieldRef.path` and `namespacePath`
 * must lead to a string in the dependent's schema, as that export serves it
 * (see `lib/rules/schema_path.ts`); a path read on the protected object
 * (`fieldRef.from: Target`) or on its Namespace (`TargetNamespace`) must
 * lead to a string in their metadata, all the webhook reads of them. Pure
 * functions over what `ExportCache` read; reading is the cache's job.
 *
 * A check fails only on a definite answer (the export does not exist, or
 * it does and does not serve the type). An export that has not been read yet,
 * or cannot be read, fails nothing: a read failure must never weaken
 * protection. What was last read stays the answer while a new read fails.
 *
 * @example Usage
 * ```ts
 * import { checkExported } from "./export_checks.ts";
 *
 * const check = checkExported(
 *   { answer: { found: true, types: [{ group: "net.io", resource: "vpcs", versions: ["v1"], kind: "VPC" }] } },
 *   { workspace: "root:net", name: "net.io", shown: "root:net" },
 *   { group: "net.io", version: "v1", resource: "subnets" },
 * );
 * check.ok; // false: TypeNotExported
 * ```
 *
 * @module
 */
import {
  checkSchemaPath,
  type Dependency,
  type GroupVersionResource,
  OBJECT_META_SCHEMA,
  type SchemaNode,
  type SchemaPathCheck,
  tryParseFieldPath,
} from "../rules/mod.ts";
import type { Reading } from "../runtime/mod.ts";

/** An APIExport by workspace (path or logical cluster name) and name. */
export interface ExportRef {
  /** Workspace path or logical cluster name. */
  workspace: string;
  /** The APIExport's name. */
  name: string;
}

/** One type an APIExport serves, with its schema's served versions and kind. */
export interface ExportedType {
  /** API group. */
  group: string;
  /** Plural resource. */
  resource: string;
  /** The versions its APIResourceSchema serves. */
  versions: readonly string[];
  /** Its kind. */
  kind: string;
  /**
   * Served from another virtual workspace (`storage.virtual`, kcp v0.31 and
   * later) rather than stored by kcp: not something rules can cover yet.
   */
  virtual?: true;
  /**
   * The OpenAPI v3 schema of each served version that has one, pruned to
   * what field paths are checked against (see `pruneSchema`). Absent when
   * the schemas were not read: then no path is checked.
   */
  schemas?: Readonly<Record<string, SchemaNode>>;
}

/** What reading an APIExport gave: its types, or that it does not exist. */
export type ExportAnswer =
  | {
    found: true;
    types: readonly ExportedType[];
    /**
     * The export's identity (`status.identityHash`): what kcp stores its
     * types' objects under, and what a workspace's APIBinding names for
     * each type it binds from it.
     */
    identityHash?: string;
  }
  | { found: false };

/** The last answer read for an export, and the last read's failure if it failed. */
export type ExportReading = Reading<ExportAnswer>;

/** The outcome of one check. */
export type ExportCheck =
  | {
    ok: true;
    /** Why the type could not be checked, if it could not. */
    unverified?: string;
  }
  | {
    ok: false;
    reason: "TypeNotExported" | "APIExportNotFound";
    message: string;
  };

/** The key of an export in the cache's readings. */
export function exportKey(ref: ExportRef): string {
  return `${ref.workspace}\n${ref.name}`;
}

/**
 * Checks that the export `ref` serves `type` (group, resource and version).
 *
 * @param reading What was read for `ref`, if anything.
 * @param ref The export, with `shown`: how messages name its workspace.
 * @param type The type the rule names.
 */
export function checkExported(
  reading: ExportReading | undefined,
  ref: ExportRef & { shown: string },
  type: GroupVersionResource,
): ExportCheck {
  const shownType = `${type.resource}.${type.group}`;
  const answer = reading?.answer;
  if (answer === undefined) {
    return reading?.error === undefined ? { ok: true } : {
      ok: true,
      unverified:
        `cannot read the APIExport ${ref.name} in ${ref.shown} to check ${shownType}: ${reading.error}`,
    };
  }
  const stale = reading?.error === undefined
    ? ""
    : ` (as last read; reading it again failed: ${reading.error})`;
  if (!answer.found) {
    return {
      ok: false,
      reason: "APIExportNotFound",
      message:
        `there is no APIExport ${ref.name} in ${ref.shown}, which should serve ${shownType}${stale}`,
    };
  }
  const served = answer.types.find((t) =>
    t.group === type.group && t.resource === type.resource
  );
  if (served?.virtual) {
    return {
      ok: false,
      reason: "TypeNotExported",
      message:
        `the APIExport ${ref.name} in ${ref.shown} serves ${shownType} from a virtual workspace (storage.virtual), which dependency-controller does not protect or read: only types stored by kcp (storage.crd) can be covered${stale}`,
    };
  }
  if (served?.versions.includes(type.version)) return { ok: true };
  const problem = served === undefined
    ? `does not export ${shownType}`
    : `serves ${shownType} only in ${
      served.versions.join(", ") || "no version"
    }, not ${type.version}`;
  return {
    ok: false,
    reason: "TypeNotExported",
    message:
      `the APIExport ${ref.name} in ${ref.shown} ${problem}: it exports ${
        describeTypes(answer.types)
      }${stale}`,
  };
}

/** The dependent type's schema as its export serves it, for {@linkcode checkFieldRef}. */
export interface ServedSchema {
  /** The version the rule names. */
  version: string;
  /** That version's schema; absent when its APIResourceSchema has none. */
  schema?: SchemaNode;
  /** Appended to messages when the last read failed (the schema is as last read); else empty. */
  stale: string;
}

/**
 * The schema of `type` in the version the rule names, when the export was
 * read and serves it there with its schemas.
 *
 * @param reading What was read for the export that should serve `type`.
 * @param type The dependent type.
 * @returns `undefined` when nothing can be checked: the export was not read
 * (or could not be), does not exist, does not serve `type` in that version
 * (the export check reports that), or its schemas were not read.
 */
export function servedSchema(
  reading: ExportReading | undefined,
  type: GroupVersionResource,
): ServedSchema | undefined {
  const answer = reading?.answer;
  if (answer === undefined || !answer.found) return undefined;
  const served = answer.types.find((t) =>
    t.group === type.group && t.resource === type.resource
  );
  if (
    served?.schemas === undefined || !served.versions.includes(type.version)
  ) return undefined;
  const schema = Object.hasOwn(served.schemas, type.version)
    ? served.schemas[type.version]
    : undefined;
  return {
    version: type.version,
    ...(schema === undefined ? {} : { schema }),
    stale: reading?.error === undefined
      ? ""
      : ` (as last read; reading it again failed: ${reading.error})`,
  };
}

/** The outcome of {@linkcode checkFieldRef}. */
export interface FieldRefCheck {
  /**
   * One message per path the schema does not have, such as
   * `spec.dependencies[0].fieldRef.path: .spec.volume: no such field; did you mean .spec.volumes[*].volumeRef.name?`
   * (reason `FieldNotInSchema`).
   */
  problems: string[];
  /**
   * One note per path checked only in part, such as
   * `spec.dependencies[0].fieldRef.path below .spec.config`: the schema
   * leaves that subtree open.
   */
  unchecked: string[];
}

/**
 * Checks that a dependency's `fieldRef.path` and `fieldRef.namespacePath`
 * lead to a string in the dependent's schema (see `checkSchemaPath`). A
 * `path` that fails finds no name in any dependent, so the dependency
 * protects nothing; a `namespacePath` that fails finds no namespace, so
 * every name counts as in the dependent's own namespace. For a `fieldRef`
 * read on the dependent (`from: Dependent`, the default); one read on the
 * protected object or its Namespace is {@linkcode checkOwnerFieldRef}'s.
 *
 * @param served The dependent's schema (see {@linkcode servedSchema}).
 * @param fieldRef The dependency's `fieldRef`.
 * @param options `index`: the dependency's index in `spec.dependencies`,
 * for messages; `memo`: where the checks of paths in a schema are kept for
 * the next call with the same schema object (none: nothing is kept).
 */
export function checkFieldRef(
  served: ServedSchema,
  fieldRef: Dependency["fieldRef"],
  options: { index: number; memo?: PathCheckMemo },
): FieldRefCheck {
  const result: FieldRefCheck = { problems: [], unchecked: [] };
  const fields: [string, string | undefined][] = [
    ["path", fieldRef.path],
    ["namespacePath", fieldRef.namespacePath],
  ];
  for (const [name, text] of fields) {
    if (text === undefined) continue;
    const check = served.schema !== undefined
      ? pathCheck(served.schema, { text, memo: options.memo })
      : tryParseFieldPath(text) === undefined
      ? undefined
      : "no schema";
    // A path that does not parse fails the rule's validation before this.
    if (check === undefined) continue;
    const field = `spec.dependencies[${options.index}].fieldRef.${name}`;
    if (check === "no schema") {
      result.unchecked.push(`${field} (no schema for ${served.version})`);
    } else if (!check.ok) {
      result.problems.push(`${field}: ${check.message}${served.stale}`);
    } else if (check.open === "") {
      result.unchecked.push(`${field} (the schema is open)`);
    } else if (check.open !== undefined) {
      result.unchecked.push(`${field} below ${check.open}`);
    }
  }
  return result;
}

/**
 * What the webhook reads of the object a `from: Target` or `TargetNamespace`
 * path is read on (the protected object, or its Namespace): its metadata
 * alone, shaped as Kubernetes' ObjectMeta whatever the type's schema says.
 */
const METADATA_ONLY: SchemaNode = Object.freeze({
  type: "object",
  properties: Object.freeze({ metadata: OBJECT_META_SCHEMA }),
});

/**
 * Checks that the `fieldRef.path` of a dependency whose reference is read on
 * the protected object (`from: Target`) or on its Namespace
 * (`from: TargetNamespace`) leads to a string in that object's metadata:
 * the webhook reads nothing else of it (a label, an annotation,
 * `.metadata.ownerReferences[*].name`), so a path outside `.metadata` finds
 * no owner, whatever the protected type's schema has there. Needs no
 * schema: every object's metadata is ObjectMeta. A `fieldRef` read on the
 * dependent (`from: Dependent`) is {@linkcode checkFieldRef}'s.
 *
 * @param fieldRef The dependency's `fieldRef`.
 * @param options `index`: the dependency's index in `spec.dependencies`,
 * for messages.
 * @returns Its problems (reason `FieldNotInSchema`), such as
 * `spec.dependencies[0].fieldRef.path: .spec: from: Target reads only the protected object's metadata, not .spec; ...`,
 * and a note where ObjectMeta leaves the path open (`managedFields`).
 */
export function checkOwnerFieldRef(
  fieldRef: Dependency["fieldRef"],
  options: { index: number },
): FieldRefCheck {
  const result: FieldRefCheck = { problems: [], unchecked: [] };
  const from = fieldRef.from ?? "Dependent";
  const path = tryParseFieldPath(fieldRef.path);
  // A path that does not parse fails the rule's validation before this.
  if (from === "Dependent" || path === undefined) return result;
  const field = `spec.dependencies[${options.index}].fieldRef.path`;
  const first = path[0]!;
  if (first.name !== "metadata") {
    const read = from === "Target"
      ? "the protected object's metadata"
      : "the metadata of the protected object's Namespace";
    const examples = from === "Target"
      ? `.metadata.labels["example.com/owner"] or .metadata.ownerReferences[*].name`
      : `.metadata.labels["example.com/owner"]`;
    result.problems.push(
      `${field}: .${first.name}: from: ${from} reads only ${read}, not .${first.name}; use a path below .metadata, such as ${examples}`,
    );
    return result;
  }
  const check = checkSchemaPath(METADATA_ONLY, path);
  if (!check.ok) {
    result.problems.push(`${field}: ${check.message}`);
  } else if (check.open !== undefined) {
    result.unchecked.push(`${field} below ${check.open}`);
  }
  return result;
}

/**
 * What {@linkcode checkFieldRef} remembers between calls, held by whoever
 * runs them (the controller's plan memo): the checks of field paths
 * against each schema, by the path as written. Every rule on one dependent
 * type is checked against the same schema object at every pass, and a
 * schema read again is a new object.
 */
export interface PathCheckMemo {
  /** Per schema object, the check of each path as written (`undefined`: it does not parse). */
  readonly pathChecks: WeakMap<
    SchemaNode,
    Map<string, SchemaPathCheck | undefined>
  >;
}

/** `checkSchemaPath` of `text` in `schema`, remembered in `memo` if given; `undefined` when `text` does not parse. */
function pathCheck(
  schema: SchemaNode,
  options: { text: string; memo: PathCheckMemo | undefined },
): SchemaPathCheck | undefined {
  const { text, memo } = options;
  let checks = memo?.pathChecks.get(schema);
  if (checks === undefined) {
    checks = new Map();
    memo?.pathChecks.set(schema, checks);
  }
  if (checks.has(text)) return checks.get(text);
  const path = tryParseFieldPath(text);
  const check = path === undefined ? undefined : checkSchemaPath(schema, path);
  checks.set(text, check);
  return check;
}

/** `subnets.net.io (v1), vpcs.net.io (v1, v2)`, or `nothing`. */
function describeTypes(types: readonly ExportedType[]): string {
  if (types.length === 0) return "nothing";
  return types
    .map((t) => `${t.resource}.${t.group} (${t.versions.join(", ")})`)
    .sort()
    .join(", ");
}
