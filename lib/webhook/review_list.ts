/**
 * One dependent type listed for a review, page by page: the dependents that
 * refer to the object, matched against the rules as the index's confirmed
 * dependents are (`referringFields`), counted and the first few named.
 *
 * @module
 */
import type { Protection } from "./rule_registry.ts";
import type { ReviewTarget } from "./review_target.ts";
import { type DependentSource, Forbidden } from "./review_source.ts";
import { keepFirst, ownDependents, referringBlocker } from "./review_match.ts";
import type { Blocker, Unread } from "./verdicts.ts";
import { errorText } from "../runtime/mod.ts";
import type { WhenBudget } from "../when/mod.ts";

/** The dependents that still refer to the object: the first few, and how many. */
export interface Blockers {
  /** The first `maxNamed` in (kind, namespace, name) order. */
  named: Blocker[];
  /** All of them. */
  total: number;
}

/** Options of {@linkcode listBlockers}. */
export interface ListBlockersOptions {
  /** Where the pages come from. */
  source: DependentSource;
  /** Ends the list. */
  signal: AbortSignal;
  /** Which export each type of the workspace is bound from (kept). */
  bound: Promise<ReadonlyMap<string, string> | undefined>;
  /** The same, read again: asked when the kept answer would drop a rule. */
  freshBound: () => Promise<ReadonlyMap<string, string> | undefined>;
  /** Whether every namespace is listed, not only the object's. */
  everyNamespace: boolean;
  /** The review's `when` budget. */
  budget: WhenBudget;
  /** How many blockers to name. */
  maxNamed: number;
  /** Where the blockers go. */
  found: Blockers;
}

/**
 * Whether a list of `group`'s dependent type for `target` reads every
 * namespace: for a cluster-scoped object, or when a rule's namespace path
 * lets a dependent in any namespace refer to it; otherwise only the
 * object's own namespace.
 */
export function listsEveryNamespace(
  group: readonly Protection[],
  target: ReviewTarget,
): boolean {
  return target.namespace === undefined ||
    group.some((p) => p.namespacePath !== undefined);
}

/**
 * Lists one dependent type (of `all`) page by page into `options.found`,
 * matching each dependent against the rules whose export the workspace
 * binds the type from; only the dependents that refer to `target` are
 * kept, so memory stays bounded by a page.
 */
export async function listBlockers(
  all: readonly Protection[],
  target: ReviewTarget,
  options: ListBlockersOptions,
): Promise<void> {
  const { signal, found } = options;
  const dependent = all[0]!.dependent;
  let group = all;
  const pages = options.source.pages({
    cluster: target.cluster,
    dependent,
    ...(options.everyNamespace ? {} : { namespace: target.namespace }),
  }, signal);
  let first = true;
  for await (const items of pages) {
    if (signal.aborted) return;
    if (first) {
      first = false;
      group = ownDependents(all, await options.bound);
      if (group.length < all.length) {
        group = ownDependents(all, await options.freshBound());
      }
      if (group.length === 0) return;
    }
    for (const item of items) {
      const blocker = referringBlocker(item, group, {
        target,
        budget: options.budget,
      });
      if (blocker === undefined) continue;
      found.total++;
      keepFirst(found.named, blocker, options.maxNamed);
    }
  }
}

/** Adds what `more` found to `found`, naming at most `maxNamed`. */
export function addBlockers(
  found: Blockers,
  more: Blockers,
  maxNamed: number,
): void {
  for (const blocker of more.named) keepFirst(found.named, blocker, maxNamed);
  found.total += more.total;
}

/** A dependent type whose list failed with `error`, for the denial. */
export function unreadList(
  type: { group: string; resource: string },
  error: unknown,
): Unread {
  return {
    verb: "list",
    type: { group: type.group, resource: type.resource },
    why: errorText(error),
    ...(error instanceof Forbidden ? { forbidden: error.permission } : {}),
  };
}
