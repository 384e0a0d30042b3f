/**
 * What holds an object under review, named for a denial: the dependents
 * that still refer to it ({@linkcode Blocker}) and the owners that hold it
 * (`OwnerHold`), each in words for its message ({@linkcode referencedBy},
 * {@linkcode ownedBy}) and as causes for its `status.details.causes`
 * ({@linkcode referenceCauses}, {@linkcode ownerCauses}), the first few by
 * name and the others counted. The verdicts (`verdicts.ts`) that deny
 * because something holds the object build on these. Pure: the texts
 * depend only on their arguments.
 *
 * @example Usage
 * ```ts
 * import { type Blocker, referenceCauses, referencedBy } from "./holders.ts";
 *
 * const vm: Blocker = {
 *   kind: "VirtualMachine",
 *   type: { group: "compute.example.com", version: "v1", resource: "virtualmachines" },
 *   namespace: "team-a",
 *   name: "vm-1",
 *   paths: [".spec.vpcRef.name"],
 *   rules: ["provider/vms-need-vpcs"],
 * };
 * referencedBy([vm], 3, "team-a");
 * // "still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name) and 2 more"
 * referenceCauses([vm], 3).length; // 2: vm-1, and a count of the others
 * ```
 *
 * @module
 */
import type { GroupVersionResource } from "../rules/mod.ts";
import type { Cause } from "../causes/mod.ts";
import { printable } from "../runtime/mod.ts";
import { MAX_OWNERS_READ, type OwnerHold } from "./review_owners.ts";
import type { ReviewTarget } from "./review_target.ts";

/** A dependent that still refers to the object under review. */
export interface Blocker {
  /** Its kind. */
  kind: string;
  /** Its type. */
  type: GroupVersionResource;
  /** Its namespace, `""` when cluster-scoped. */
  namespace: string;
  /** Its name. */
  name: string;
  /**
   * The fields that refer, concrete (`.spec.nics[1].subnetRef.name`): the
   * first few, the others counted in {@linkcode Blocker.pathsNotShown}.
   */
  paths: string[];
  /** How many more fields refer than {@linkcode Blocker.paths} shows, if any. */
  pathsNotShown?: number;
  /** The rules (their keys) under which it refers. */
  rules: string[];
  /** Why it protects though its rule's `when` could not say, if so. */
  note?: string;
  /** When it began to refer, where known: its `creationTimestamp` (RFC 3339). */
  since?: string;
}

/**
 * `it belongs to Network/net-a (.metadata.labels["x/owner"]), which still
 * exists`, for every owner that holds the object.
 */
export function ownedBy(
  owners: readonly OwnerHold[],
  target: ReviewTarget,
  unchecked: number,
): string {
  const names = owners.map((o) => {
    const id = o.namespace !== "" && o.namespace !== target.namespace
      ? `${o.kind}/${o.namespace}/${o.name}`
      : `${o.kind}/${o.name}`;
    const field = o.viaNamespace === undefined
      ? o.field
      : `${o.field} of namespace ${o.viaNamespace}`;
    const when = o.when === undefined ? "" : `, with ${printable(o.when, 200)}`;
    const note = o.note === undefined ? "" : `; ${o.note}`;
    return `${id} (${field}${when}${note})`;
  });
  const exist = owners.length === 1
    ? "which still exists"
    : "which still exist";
  const more = unchecked > 0
    ? `, and it names ${unchecked} more owners not read (at most ${MAX_OWNERS_READ} per delete)`
    : "";
  return `it belongs to ${names.join(", ")}, ${exist}${more}`;
}

/** `still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name) and 2 more`. */
export function referencedBy(
  named: readonly Blocker[],
  total: number,
  namespace: string | undefined,
): string {
  const names = named.map((b) => {
    // A dependent in the object's own namespace goes by its name alone.
    const id = b.namespace !== "" && b.namespace !== namespace
      ? `${b.kind}/${b.namespace}/${b.name}`
      : `${b.kind}/${b.name}`;
    const note = b.note === undefined ? "" : `; ${b.note}`;
    const fields = b.pathsNotShown === undefined
      ? b.paths
      : [...b.paths, `and ${b.pathsNotShown} more`];
    return `${id} (${fields.join(", ")}${note})`;
  });
  const more = total > named.length ? ` and ${total - named.length} more` : "";
  return `still referenced by ${names.join(", ")}${more}`;
}

/** One cause per named dependent, and a count of the others. */
export function referenceCauses(
  named: readonly Blocker[],
  total: number,
): Cause[] {
  const causes: Cause[] = named.map((b) => ({
    type: "Reference",
    object: causeObject(b.type, b),
    fields: [...b.paths],
    rules: [...b.rules],
    ...(b.note === undefined ? {} : { note: b.note }),
    ...(b.since === undefined ? {} : { since: b.since }),
  }));
  if (total > named.length) {
    causes.push({ type: "More", of: "Reference", count: total - named.length });
  }
  return causes;
}

/** One cause per owner that holds, and a count of those not read. */
export function ownerCauses(
  owners: readonly OwnerHold[],
  unchecked: number,
): Cause[] {
  const causes: Cause[] = owners.map((o) => ({
    type: "Owner",
    object: causeObject(o.type, o),
    field: o.field,
    ...(o.viaNamespace === undefined ? {} : { viaNamespace: o.viaNamespace }),
    rule: o.rule,
    ...(o.when === undefined ? {} : { when: o.when }),
    ...(o.note === undefined ? {} : { note: o.note }),
    ...(o.since === undefined ? {} : { since: o.since }),
  }));
  if (unchecked > 0) {
    causes.push({ type: "More", of: "Owner", count: unchecked });
  }
  return causes;
}

/** The object of a cause: a dependent's or owner's type and identity. */
function causeObject(
  type: GroupVersionResource,
  object: { kind: string; namespace: string; name: string },
) {
  return {
    group: type.group,
    version: type.version,
    resource: type.resource,
    kind: object.kind,
    namespace: object.namespace,
    name: object.name,
  };
}
