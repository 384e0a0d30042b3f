/**
 * The last step of a review: its plan and readings folded into the
 * verdict. Pure: the same plan and readings give the same verdict.
 *
 * {@linkcode foldReview} decides from the reads of the plan;
 * {@linkcode foldTeardown} decides again, from the same readings, once the
 * fold asked whether kcp is deleting the workspace
 * ({@linkcode asksTeardown}): Locks no longer hold there, and references
 * keep the teardown in dependency order only for a while.
 *
 * @module
 */
import { errorText } from "../runtime/mod.ts";
import { planReads, type ReviewPlan } from "./review_plan.ts";
import {
  Forbidden,
  type ReviewReadings,
  UnknownWorkspace,
} from "./review_reads.ts";
import { shownTarget } from "./review_target.ts";
import {
  allowed,
  held,
  locked,
  lockedUnreadable,
  referenced,
  skipUnauthorized,
  unavailable,
  unconfirmed,
  type Unread,
  unreadText,
  type Verdict,
} from "./verdicts.ts";
import { typeName } from "../rules/mod.ts";

/** The verdict of `plan` given what was read. */
export function foldReview(
  plan: ReviewPlan,
  readings: ReviewReadings,
): Verdict {
  const { uid, target } = plan;
  const { confirmed } = readings;
  if (plan.holds.length > 0) {
    // A Lock holds whatever the annotation says, once the live object
    // confirms the review: a forged review learns nothing, not even a
    // Lock's reason. A failed list does not change the verdict (the Lock
    // denies anyway), but the denial says what it could not read.
    if (
      confirmed.status === "rejected" && confirmed.reason instanceof Forbidden
    ) {
      return lockedUnreadable(uid, { target, verb: plan.verb });
    }
    const refused = refusal(plan, confirmed);
    if (refused !== undefined) return refused;
    // The denial is not complete unless every read was made: what could
    // not be read is named, and what the other reads found too.
    const blockers = readings.blockers;
    return locked(uid, {
      target,
      verb: plan.verb,
      holds: plan.holds,
      also: blockers?.status === "fulfilled"
        ? blockers.value
        : readings.partial,
      unread: unreadOf(plan, readings),
    });
  }
  return foldUnlocked(plan, readings, { confirmFirst: plan.covered });
}

/** Whether `verdict` holds the object in a way a workspace teardown releases. */
export function asksTeardown(verdict: Verdict): boolean {
  return verdict.outcome === "denied_referenced" ||
    verdict.outcome === "denied_owned" ||
    verdict.outcome === "denied_locked";
}

/** Options of {@linkcode foldTeardown}. */
export interface TeardownContext {
  /** When kcp marked the workspace for deletion; `undefined` if not (or unknown). */
  deletedAt: Date | undefined;
  /** Now, in ms since the epoch. */
  now: number;
  /** How long after the mark references still order the teardown. */
  teardownOrderMs: number;
}

/**
 * What a denial becomes when kcp is deleting the object's workspace: Locks
 * no longer hold (they go with the workspace), and references keep the
 * teardown in dependency order (dependents first) for `teardownOrderMs`
 * after the mark, then no longer hold either, so that a cycle or a stuck
 * dependent cannot keep a workspace for ever. Unknown whether it is being
 * deleted, the denial stands (fail closed).
 */
export function foldTeardown(
  plan: ReviewPlan,
  readings: ReviewReadings,
  context: { verdict: Verdict } & TeardownContext,
): Verdict {
  const { verdict, deletedAt } = context;
  if (!asksTeardown(verdict) || deletedAt === undefined) return verdict;
  const released = allowed(plan.uid, "allowed_workspace_deleting");
  if (context.now - deletedAt.getTime() >= context.teardownOrderMs) {
    return released;
  }
  if (
    verdict.outcome === "denied_referenced" ||
    verdict.outcome === "denied_owned"
  ) return verdict;
  // Locked: decided again as if no Lock held it, from the same readings.
  const again = foldUnlocked(plan, readings, { confirmFirst: false });
  return again.response.allowed ? released : again;
}

/** The verdict when no Lock holds the object. */
function foldUnlocked(
  plan: ReviewPlan,
  readings: ReviewReadings,
  options: { confirmFirst: boolean },
): Verdict {
  const { uid, target, unlocked } = plan;
  const { confirmed } = readings;
  const shown = shownTarget(target);
  switch (unlocked.kind) {
    case "verdict": {
      // A type Locks cover is confirmed first, so a forged review of a free
      // object is answered as one of a held object would be. A type the
      // webhook may not read is not: reading it is not ours to grant.
      if (!options.confirmFirst) return unlocked.verdict;
      const forbidden = confirmed.status === "rejected" &&
        confirmed.reason instanceof Forbidden;
      return (forbidden ? undefined : refusal(plan, confirmed)) ??
        unlocked.verdict;
    }
    case "bypass": {
      // Nothing about the user is answered unless the live object confirms
      // the review.
      if (confirmed.status === "fulfilled" && !confirmed.value) {
        return unconfirmed(uid, plan.verb);
      }
      const asked = readings.bypass;
      const failed = confirmed.status === "rejected"
        ? confirmed.reason
        : asked === undefined
        ? new Error("not asked")
        : asked.status === "rejected"
        ? asked.reason
        : undefined;
      if (failed !== undefined || asked?.status !== "fulfilled") {
        return unavailable(uid, {
          shown,
          what: `cannot check whether you may bypass its protection (${
            errorText(failed)
          })`,
          until: "it can be checked",
          forbidden: failed instanceof Forbidden
            ? failed.permission
            : undefined,
        });
      }
      if (asked.value) return allowed(uid, "allowed_skip");
      return skipUnauthorized(uid, {
        target,
        username: unlocked.user.username ?? "",
      });
    }
    case "references": {
      const refused = refusal(plan, confirmed);
      if (refused !== undefined) return refused;
      const reads = planReads(plan);
      const listed = reads.lists.length === 0
        ? settled({ named: [], total: 0 })
        : readings.blockers ?? missing("nothing was listed");
      const owned = reads.owners.length + reads.namespaceOwners.length === 0
        ? settled({ holding: [], unchecked: 0 })
        : readings.owners ?? missing("no owner was read");
      const failed = listed.status === "rejected"
        ? listed.reason
        : owned.status === "rejected"
        ? owned.reason
        : undefined;
      if (listed.status === "rejected" || owned.status === "rejected") {
        const unread = unreadOf(plan, readings);
        // What the reads that answered found holds the object: a 409
        // naming it, and saying what could not be read.
        const found = listed.status === "fulfilled"
          ? listed.value
          : readings.partial ?? { named: [], total: 0 };
        const holding = owned.status === "fulfilled" ? owned.value : undefined;
        if (found.total > 0 || (holding?.holding.length ?? 0) > 0) {
          return holding === undefined || holding.holding.length === 0
            ? referenced(uid, { target, ...found, unread })
            : held(uid, {
              target,
              owners: holding.holding,
              unchecked: holding.unchecked,
              ...found,
              unread,
            });
        }
        const what = failed instanceof Forbidden
          ? failed.message
          : listed.status === "rejected"
          ? `cannot check whether other objects still refer to it (${
            errorText(failed)
          })`
          : `cannot check whether the owners it names still hold it (${
            errorText(failed)
          })`;
        // Every type not read is named: those the first failure does not.
        const unsaid = unread.filter((u) => !what.includes(typeName(u.type)));
        return unavailable(uid, {
          unread,
          shown,
          what: `${what}${unreadText(unsaid)}`,
          until: failed instanceof Forbidden ? "it may" : "they can be checked",
          forbidden: failed instanceof Forbidden
            ? failed.permission
            : undefined,
        });
      }
      const { named, total } = listed.value;
      const { holding, unchecked } = owned.value;
      if (total === 0 && holding.length === 0 && unchecked === 0) {
        return allowed(uid);
      }
      if (holding.length === 0 && unchecked === 0) {
        return referenced(uid, { target, named, total });
      }
      return held(uid, { target, owners: holding, unchecked, named, total });
    }
  }
}

/**
 * What the reads of `plan` could not read that might hold the object: the
 * dependent types not listed, and the owner types not looked up.
 */
export function unreadOf(
  plan: ReviewPlan,
  readings: ReviewReadings,
): Unread[] {
  const unread = [...(readings.unread ?? [])];
  const { blockers, owners } = readings;
  if (
    blockers?.status === "rejected" && unread.length === 0 &&
    blockers.reason instanceof Forbidden
  ) {
    unread.push(
      unreadRead("list", blockers.reason.permission, blockers.reason),
    );
  }
  if (owners?.status === "rejected") {
    const reason = owners.reason;
    if (reason instanceof Forbidden) {
      unread.push(unreadRead("get", reason.permission, reason));
    } else {
      const reads = planReads(plan);
      const types = new Map(
        [...reads.owners, ...reads.namespaceOwners].map((p) => [
          typeName(p.dependent),
          p.dependent,
        ]),
      );
      for (const type of types.values()) {
        unread.push(unreadRead("get", type, reason));
      }
    }
  }
  return unread;
}

function unreadRead(
  verb: "list" | "get",
  type: { group: string; resource: string },
  error: unknown,
): Unread {
  return {
    verb,
    type: { group: type.group, resource: type.resource },
    why: errorText(error),
    ...(error instanceof Forbidden ? { forbidden: error.permission } : {}),
  };
}

function settled<T>(value: T): PromiseSettledResult<T> {
  return { status: "fulfilled", value };
}

function missing(what: string): PromiseRejectedResult {
  return { status: "rejected", reason: new Error(what) };
}

/**
 * The verdict when the live object could not be read or does not confirm
 * the review; `undefined` when it confirms it. Where Locks name the type,
 * the skip annotation is not offered: it overrides no Lock, and a review
 * of a free object must read as one of a held object would.
 */
function refusal(
  plan: ReviewPlan,
  confirmed: PromiseSettledResult<boolean>,
): Verdict | undefined {
  if (confirmed.status === "fulfilled") {
    return confirmed.value ? undefined : unconfirmed(plan.uid, plan.verb);
  }
  const reason = confirmed.reason;
  const named = reason instanceof Forbidden ||
    reason instanceof UnknownWorkspace;
  return unavailable(plan.uid, {
    verb: plan.verb,
    skippable: !plan.covered,
    shown: shownTarget(plan.target),
    what: named
      ? reason.message
      : `cannot read the object itself (${errorText(reason)})`,
    until: named ? "it may" : "it can be read",
    forbidden: reason instanceof Forbidden ? reason.permission : undefined,
  });
}
