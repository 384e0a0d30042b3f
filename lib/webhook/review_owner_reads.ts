/**
 * The owner reads of a review (`fieldRef.from: Target` and
 * `TargetNamespace`): from the live object's metadata (and, where a rule
 * reads it there, its Namespace's), the owners it names, each looked up
 * once, all at once, under the review's one deadline. When the object
 * names more owners than {@linkcode MAX_OWNERS_LOOKED_UP}, they are not
 * looked up one by one: each owner type is listed once where they would be
 * looked up ({@linkcode MAX_OWNER_LIST_ITEMS} objects at most), so owner
 * references that name nothing alive never keep an object from being
 * deleted. What holds the object is decided by `ownerHold` (pure); this
 * module only reads.
 *
 * @module
 */
import { KubeApiError } from "../kcp/mod.ts";
import { type GroupVersionResource, gvrKey, typeName } from "../rules/mod.ts";
import { Deadline, DeadlineExceeded, errorText } from "../runtime/mod.ts";
import type { WhenBudget } from "../when/mod.ts";
import type { Protection } from "./rule_registry.ts";
import { ownDependents } from "./review_match.ts";
import {
  MAX_OWNERS_LOOKED_UP,
  MAX_OWNERS_READ,
  type NamedOwner,
  type OwnerFindings,
  type OwnerHold,
  ownerHold,
  ownersNamed,
} from "./review_owners.ts";
import { type DependentSource, Forbidden } from "./review_source.ts";
import {
  asRecord,
  isNamespaceType,
  type ReviewTarget,
} from "./review_target.ts";

/**
 * The most objects of one owner type read by the list made instead of the
 * lookups; past it the review fails closed, saying what to do.
 */
export const MAX_OWNER_LIST_ITEMS = 20_000;

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
 * The owners the live object (and its Namespace) name that hold it: up to
 * {@linkcode MAX_OWNERS_LOOKED_UP} looked up at once, more by one list per
 * owner type and namespace. Nothing is read for a review the live object
 * does not confirm.
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
  const named = ownersNamed(metadata, {
    protections: owners,
    home,
    max: MAX_OWNERS_READ,
  });
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
      max: MAX_OWNERS_READ,
    });
    for (const owner of more.owners) lookups.push({ owner, via: namespace });
    unchecked += more.more;
  }
  if (lookups.length > MAX_OWNERS_LOOKED_UP) {
    const read = await listOwners(source, { ...context, lookups });
    return {
      holding: read.filter((hold) => hold !== undefined),
      unchecked,
    };
  }
  const read = await Promise.all(lookups.map(async ({ owner, via }) => {
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
 * What `lookups` (more than {@linkcode MAX_OWNERS_LOOKED_UP}) find, by one
 * list per owner type and namespace instead of a lookup each: only the
 * objects named are kept, and at most {@linkcode MAX_OWNER_LIST_ITEMS} are
 * read per list. An owner type that is not namespaced there is listed
 * cluster-wide (its objects without a namespace), as a lookup would fall
 * back to its cluster-scoped URL.
 *
 * @throws {Forbidden} When our identity may not list an owner type.
 * @throws {Error} When a list fails, runs out of time or is too long.
 */
async function listOwners(
  source: DependentSource,
  context: OwnerReadContext & {
    lookups: readonly { owner: NamedOwner; via: string | undefined }[];
  },
): Promise<(OwnerHold | undefined)[]> {
  const { target, deadline, lookups } = context;
  const groups = new Map<string, NamedOwner[]>();
  for (const { owner } of lookups) {
    const key = JSON.stringify([gvrKey(owner.type), owner.home ?? ""]);
    groups.set(key, [...(groups.get(key) ?? []), owner]);
  }
  const found = new Map<string, Record<string, unknown>>();
  await Promise.all([...groups.values()].map(async (owners) => {
    const { type, home } = owners[0]!;
    const wanted = new Set(owners.map((o) => o.name));
    const what = `${typeName(type)}${
      home === undefined ? "" : ` in namespace ${home}`
    }`;
    const list = async (namespace: string | undefined) => {
      let read = 0;
      for await (
        const items of source.pages({
          cluster: target.cluster,
          ...(namespace === undefined ? {} : { namespace }),
          dependent: type,
        }, deadline.signal)
      ) {
        read += items.length;
        if (read > MAX_OWNER_LIST_ITEMS) {
          throw new TooManyToList(
            `there are more than ${MAX_OWNER_LIST_ITEMS} ${what} to find the ${wanted.size} owners it names among; ` +
              "remove the owner references that name no existing owner, then retry",
          );
        }
        for (const item of items) {
          const metadata = asRecord(asRecord(item)?.metadata);
          const name = metadata?.name;
          if (typeof name !== "string" || !wanted.has(name)) continue;
          // Listed cluster-wide: only the type's cluster-scoped objects, as
          // a lookup at the cluster-scoped URL finds.
          if (namespace === undefined && (metadata?.namespace ?? "") !== "") {
            continue;
          }
          found.set(ownerKey(type, name), item as Record<string, unknown>);
        }
      }
    };
    try {
      await deadline.race(
        list(home).catch(async (error) => {
          // Not namespaced there (or not served): its cluster-scoped URL.
          if (home === undefined || !(error instanceof KubeApiError)) {
            throw error;
          }
          if (!error.notFound) throw error;
          await list(undefined).catch((again) => {
            if (again instanceof KubeApiError && again.notFound) return;
            throw again;
          });
        }),
      );
    } catch (error) {
      if (error instanceof TooManyToList) throw error;
      if (error instanceof KubeApiError && error.notFound) return;
      if (error instanceof DeadlineExceeded) {
        throw new DeadlineExceeded(`listing ${what}`, error.timeoutMs);
      }
      if (error instanceof KubeApiError && error.status === 403) {
        throw new Forbidden("list", type);
      }
      throw new Error(`listing ${what} failed: ${errorText(error)}`);
    }
  }));
  return lookups.map(({ owner, via }) =>
    ownerHold(owner, found.get(ownerKey(owner.type, owner.name)), {
      viaNamespace: via,
      budget: context.budget,
    })
  );
}

/** A list of owners longer than {@linkcode MAX_OWNER_LIST_ITEMS}: what to do. */
class TooManyToList extends Error {}

function ownerKey(type: GroupVersionResource, name: string): string {
  return JSON.stringify([gvrKey(type), name]);
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
