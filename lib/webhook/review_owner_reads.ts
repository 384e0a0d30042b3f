/**
 * The owner reads of a review (`fieldRef.from: Target` and
 * `TargetNamespace`): from the live object's metadata (and, where a rule
 * reads it there, its Namespace's), the owners it names, each looked up
 * once, all at once, under the review's one deadline. Nothing is listed.
 * What holds the object is decided by `ownerHold` (pure); this module only
 * reads.
 *
 * @module
 */
import { KubeApiError } from "../kcp/mod.ts";
import { Deadline, DeadlineExceeded, errorText } from "../runtime/mod.ts";
import type { WhenBudget } from "../when/mod.ts";
import type { Protection } from "./rule_registry.ts";
import { ownDependents } from "./review_match.ts";
import {
  MAX_OWNERS_LOOKED_UP,
  type NamedOwner,
  type OwnerFindings,
  ownerHold,
  ownersNamed,
} from "./review_owners.ts";
import { type DependentSource, Forbidden } from "./review_source.ts";
import { isNamespaceType, type ReviewTarget } from "./review_target.ts";

/** The core Namespace type, read for `from: TargetNamespace`. */
const NAMESPACES = { group: "", version: "v1", resource: "namespaces" };

/** What {@linkcode readOwners} reads with. */
export interface OwnerReadContext {
  /** The object under review. */
  target: ReviewTarget;
  /** The rules that read the owner on the object itself. */
  owners: readonly Protection[];
  /** The rules that read the owner on the object's Namespace. */
  namespaceOwners: readonly Protection[];
  /** The live object's metadata, as the review's confirmation reads it. */
  live: Promise<Record<string, unknown> | undefined>;
  /** The review's one deadline. */
  deadline: Deadline;
  /** What the review's `when` evaluations may spend together. */
  budget: WhenBudget;
  /**
   * Which export each type of the workspace is bound from (`fresh`: read
   * again), `undefined` when unreadable; read at most once each per review.
   */
  bound: (fresh: boolean) => Promise<ReadonlyMap<string, string> | undefined>;
}

/**
 * The owners the live object (and its Namespace) name that hold it: at
 * most {@linkcode MAX_OWNERS_LOOKED_UP}, read at once. Nothing is read for
 * a review the live object does not confirm.
 *
 * @throws {Forbidden} When our identity may not read an owner or the Namespace.
 * @throws {Error} When a read fails or runs out of time.
 */
export async function readOwners(
  source: DependentSource,
  context: OwnerReadContext,
): Promise<OwnerFindings> {
  const { target, deadline } = context;
  // Which rules count (by the export the workspace binds the owner type
  // from) is read beside the live object, as the lists read it.
  const counting = Promise.all([
    ownOwners(context.owners, context.bound),
    ownOwners(context.namespaceOwners, context.bound),
  ]);
  counting.catch(() => {});
  const metadata = await context.live;
  // Not confirmed: the fold refuses, and no owner is read for a forged review.
  if (metadata?.uid !== target.uid) return { holding: [], unchecked: 0 };
  const { cluster } = target;
  const [owners, namespaceOwners] = await counting;
  const home = target.namespace ??
    (isNamespaceType(target.resource) ? target.name : undefined);
  const named = ownersNamed(metadata, { protections: owners, home });
  const lookups: { owner: NamedOwner; via: string | undefined }[] = named
    .owners.map((owner) => ({ owner, via: undefined }));
  let unchecked = named.more;
  if (namespaceOwners.length > 0 && target.namespace !== undefined) {
    const namespace = target.namespace;
    const found = await deadline.race(
      source.liveMetadata({
        cluster,
        resource: NAMESPACES,
        name: namespace,
      }, deadline.signal),
    ).catch((error) => {
      throw readFailure(error, NAMESPACES, `the namespace ${namespace}`);
    });
    const more = ownersNamed(found, {
      protections: namespaceOwners,
      home: namespace,
    });
    for (const owner of more.owners) lookups.push({ owner, via: namespace });
    unchecked += more.more;
  }
  const looked = lookups.slice(0, MAX_OWNERS_LOOKED_UP);
  unchecked += lookups.length - looked.length;
  const read = await Promise.all(looked.map(async ({ owner, via }) => {
    const live = await deadline.race(source.ownerObject({
      cluster,
      ...(owner.home === undefined ? {} : { namespace: owner.home }),
      resource: owner.type,
      name: owner.name,
    }, deadline.signal)).catch((error) => {
      throw readFailure(error, owner.type, `${owner.type.kind}/${owner.name}`);
    });
    return ownerHold(owner, live, {
      viaNamespace: via,
      budget: context.budget,
    });
  }));
  return {
    holding: read.filter((hold) => hold !== undefined),
    unchecked,
  };
}

/**
 * The owner rules that speak of this workspace's objects of their
 * dependent type (bound from the rule's dependent export): like
 * {@linkcode ownDependents}, an answer that would drop one is read again,
 * fresh, so a kept answer may only ever make a rule count.
 */
async function ownOwners(
  protections: readonly Protection[],
  bound: OwnerReadContext["bound"],
): Promise<readonly Protection[]> {
  if (protections.every((p) => p.dependentIdentity === undefined)) {
    return protections;
  }
  const keep = (identities: ReadonlyMap<string, string> | undefined) =>
    protections.filter((p) => ownDependents([p], identities).length === 1);
  const kept = keep(await bound(false));
  return kept.length < protections.length ? keep(await bound(true)) : kept;
}

/** A failed read of `what`, worded for the denial. */
function readFailure(
  error: unknown,
  type: { group: string; resource: string },
  what: string,
): Error {
  if (error instanceof DeadlineExceeded) {
    return new DeadlineExceeded(`reading ${what}`, error.timeoutMs);
  }
  if (error instanceof KubeApiError && error.status === 403) {
    return new Forbidden("get", type);
  }
  return new Error(`reading ${what} failed: ${errorText(error)}`);
}
