/**
 * Protection that follows what an object belongs to, pure: the owners a
 * protected object (or its Namespace) names for the rules that read the
 * reference there (`fieldRef.from: Target` or `TargetNamespace`), and
 * whether an owner that was read holds it (whether it protects now is
 * `protects_now.ts`'s to say, for owners and dependents alike).
 *
 * Every name read from a tenant's object is checked as a DNS-1123
 * subdomain (what a custom resource's name must be) before it is looked
 * up, so it goes into a URL only through the URL helpers and only as what
 * it claims to be; at most {@linkcode MAX_OWNERS_LOOKED_UP} owners are
 * looked up per review, the rest are counted.
 *
 * @module
 */
import {
  formatFieldPath,
  type GroupVersionResource,
  gvrKey,
  referencesOf,
} from "../rules/mod.ts";
import { sinceOf } from "../causes/mod.ts";
import { isDnsSubdomain } from "../kcp/mod.ts";
import type { WhenBudget } from "../when/mod.ts";
import type { Protection } from "./rule_registry.ts";
import { asRecord } from "./review_target.ts";
import { protectsNow } from "./protects_now.ts";

/**
 * Most owners one review looks up one by one; past it, each owner type is
 * listed instead (`review_owner_reads.ts`).
 */
export const MAX_OWNERS_LOOKED_UP = 16;

/**
 * Most owners one review reads, by lists past
 * {@linkcode MAX_OWNERS_LOOKED_UP}; more are counted, and the delete is
 * denied while none of those read holds (fail closed).
 */
export const MAX_OWNERS_READ = 100_000;

/** One owner a protected object names, to look up. */
export interface NamedOwner {
  /** The first rule's protection that names it. */
  protection: Protection;
  /** The owner's type (the rule's dependent). */
  type: GroupVersionResource & { kind: string };
  /** Its name, a DNS-1123 subdomain. */
  name: string;
  /**
   * The namespace it is looked up in first (the protected object's, or the
   * Namespace's own); absent: cluster-scoped only.
   */
  home?: string;
  /** The uid the ownerReference names; absent for a label or annotation. */
  uid?: string;
  /** The field that names it, concrete (`.metadata.ownerReferences[0].name`). */
  field: string;
}

/** The owners `metadata` names for `protections`, the first `max`. */
export interface OwnersNamed {
  /** The owners to look up, distinct, in the order named. */
  owners: NamedOwner[];
  /** How many more were named and are not looked up. */
  more: number;
}

/**
 * The owners the `metadata` of a protected object (or of its Namespace)
 * names for each protection. A name that cannot be a custom resource's name
 * is skipped: no such owner can exist. For a path over
 * `metadata.ownerReferences`, only entries of the rule's dependent kind and
 * API group count, each with its uid.
 *
 * @param metadata The live object's (or Namespace's) `metadata`.
 * @param context `protections`: the rules that read it there; `home`: the
 * namespace an owner is looked up in first.
 */
export function ownersNamed(
  metadata: unknown,
  context: {
    protections: readonly Protection[];
    home: string | undefined;
    /** The most owners kept; more are counted. @default {MAX_OWNERS_LOOKED_UP} */
    max?: number;
  },
): OwnersNamed {
  const max = context.max ?? MAX_OWNERS_LOOKED_UP;
  const object = { metadata };
  const seen = new Set<string>();
  const owners: NamedOwner[] = [];
  let more = 0;
  for (const p of context.protections) {
    for (const reference of referencesOf(object, { fieldPath: p.fieldPath })) {
      const { name } = reference;
      if (name.length > 253 || !isDnsSubdomain(name)) continue;
      let uid: string | undefined;
      if (p.ownerReferences) {
        uid = ownerReferenceUid(metadata, reference.indexes[0], p.dependent);
        if (uid === undefined) continue;
      }
      const key = JSON.stringify([gvrKey(p.dependent), name, uid ?? ""]);
      if (seen.has(key)) continue;
      seen.add(key);
      if (owners.length >= max) {
        more++;
        continue;
      }
      owners.push({
        protection: p,
        type: p.dependent,
        name,
        ...(context.home === undefined ? {} : { home: context.home }),
        ...(uid === undefined ? {} : { uid }),
        field: formatFieldPath(p.fieldPath, reference.indexes),
      });
    }
  }
  return { owners, more };
}

/**
 * The uid of `metadata.ownerReferences[index]` when that entry is of
 * `type`'s kind and API group; `undefined` otherwise.
 */
function ownerReferenceUid(
  metadata: unknown,
  index: number | undefined,
  type: { group: string; kind: string },
): string | undefined {
  const list = asRecord(metadata)?.ownerReferences;
  if (!Array.isArray(list) || index === undefined) return undefined;
  const entry = asRecord(list[index]);
  if (entry === undefined || entry.kind !== type.kind) return undefined;
  const apiVersion = entry.apiVersion;
  if (typeof apiVersion !== "string") return undefined;
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  if (group !== type.group) return undefined;
  return typeof entry.uid === "string" && entry.uid !== ""
    ? entry.uid
    : undefined;
}

/** An owner that still holds the object under review. */
export interface OwnerHold {
  /** Its kind. */
  kind: string;
  /** Its type. */
  type: GroupVersionResource;
  /** The rule (its key) under which it holds. */
  rule: string;
  /** Its namespace, `""` when cluster-scoped. */
  namespace: string;
  /** Its name. */
  name: string;
  /** The field of the object (or its Namespace) that names it. */
  field: string;
  /** Set when the reference is on the object's Namespace: its name. */
  viaNamespace?: string;
  /** The rule's `when`, true for it. */
  when?: string;
  /** Why it protects though its `when` could not say. */
  note?: string;
  /** When it began to hold, where known: its `creationTimestamp` (RFC 3339). */
  since?: string;
}

/** What the owners named by a review's object say. */
export interface OwnerFindings {
  /** The owners that hold it, in the order named. */
  holding: OwnerHold[];
  /** Owners named and not read (over {@linkcode MAX_OWNERS_READ}). */
  unchecked: number;
}

/**
 * Whether the owner read as `live` (`undefined`: it does not exist) holds
 * the object that names it as `named`: it exists (with the uid an
 * ownerReference names) and protects now.
 */
export function ownerHold(
  named: NamedOwner,
  live: Record<string, unknown> | undefined,
  options: {
    viaNamespace?: string | undefined;
    budget?: WhenBudget | undefined;
  } = {},
): OwnerHold | undefined {
  if (live === undefined) return undefined;
  const metadata = asRecord(live.metadata);
  if (named.uid !== undefined && metadata?.uid !== named.uid) return undefined;
  const protects = protectsNow(live, named.protection, options.budget);
  if (!protects.protects) return undefined;
  const namespace = typeof metadata?.namespace === "string"
    ? metadata.namespace
    : "";
  const since = sinceOf(live);
  return {
    kind: named.type.kind,
    type: {
      group: named.type.group,
      version: named.type.version,
      resource: named.type.resource,
    },
    rule: named.protection.rule,
    namespace,
    name: named.name,
    field: named.field,
    ...(options.viaNamespace === undefined
      ? {}
      : { viaNamespace: options.viaNamespace }),
    ...(protects.when === undefined ? {} : { when: protects.when }),
    ...(protects.note === undefined ? {} : { note: protects.note }),
    ...(since === undefined ? {} : { since }),
  };
}
