/**
 * Whether a rule's types exist: its dependent type must be served by the
 * APIExport `spec.dependent.apiExportName` in the rule's own workspace, and
 * each protected type by the APIExport `apiExportRef` names. Pure functions
 * over what `ExportCache` read; reading is the cache's job.
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
import type { GroupVersionResource } from "../rules/mod.ts";

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
}

/** What reading an APIExport gave: its types, or that it does not exist. */
export type ExportAnswer =
  | { found: true; types: readonly ExportedType[] }
  | { found: false };

/** The last answer read for an export, and the last read's failure if it failed. */
export interface ExportReading {
  /** The last answer read, if any read succeeded. */
  answer?: ExportAnswer;
  /** Why the last read failed, if it did. */
  error?: string;
}

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

/** `subnets.net.io (v1), vpcs.net.io (v1, v2)`, or `nothing`. */
function describeTypes(types: readonly ExportedType[]): string {
  if (types.length === 0) return "nothing";
  return types
    .map((t) => `${t.resource}.${t.group} (${t.versions.join(", ")})`)
    .sort()
    .join(", ");
}
