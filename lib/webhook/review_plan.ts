/**
 * The first step of a review: from the request and what the webhook holds
 * in memory (rules, Locks), either the answer at once or the plan of what
 * to read. Pure: it reads nothing and keeps no state.
 *
 * A plan says what holds the object (Locks), what protects it (rules about
 * the provider's export of its type) and how the review ends when no Lock
 * holds it; {@linkcode planReads} derives the reads from it: the live
 * object (always, so a forged review learns nothing), the dependent lists
 * and the bypass question. `review_reads.ts` makes them under one deadline
 * and `review_fold.ts` folds them into the verdict.
 *
 * @module
 */
import { SKIP_PROTECTION_ANNOTATION } from "../rules/mod.ts";
import type { ReviewUser } from "./access_review.ts";
import { type AdmissionRequest, objectOf } from "./admission_review.ts";
import type { LockHold, LockIndex } from "../locks/mod.ts";
import type { Protection } from "./rule_registry.ts";
import {
  asRecord,
  isNamespaceType,
  type ReviewTarget,
  reviewTarget,
} from "./review_target.ts";
import { allowed, invalid, notReady, type Verdict } from "./verdicts.ts";

/** How a review ends when no Lock holds the object. */
export type Unlocked =
  /** Decided without the dependents: allowed, or allowed by the annotation. */
  | { kind: "verdict"; verdict: Verdict }
  /** Denied while a dependent refers to the object. */
  | { kind: "references" }
  /** The annotation counts only if kcp allows the user `bypass`. */
  | { kind: "bypass"; user: ReviewUser };

/** What a review reads and how its readings are folded. */
export interface ReviewPlan {
  /** The review's uid. */
  uid: string;
  /** The object, checked. */
  target: ReviewTarget;
  /** What the request does to it. */
  verb: "delete" | "update";
  /** The Locks that hold it for that verb, sorted. */
  holds: readonly LockHold[];
  /** The rules' protections whose dependents are listed (none with the annotation). */
  protections: readonly Protection[];
  /** The answer when no Lock holds the object (and in a workspace kcp is deleting). */
  unlocked: Unlocked;
  /**
   * Whether a Lock in the workspace names the type: such a review is
   * confirmed against the live object even when nothing holds it, so a
   * forged one cannot tell a locked object from a free one.
   */
  covered: boolean;
}

/** A review's first step: the answer, or what to read. */
export type ReviewStep = { verdict: Verdict } | { plan: ReviewPlan };

/** What {@linkcode planReview} decides with. */
export interface PlanContext {
  /** Whether the rules (and Locks, if any) are loaded. */
  loaded: boolean;
  /** The protections of a type (the rule registry's `find`). */
  protectionsOf: (
    resource: AdmissionRequest["resource"],
  ) => readonly Protection[];
  /** The Locks; unset, none apply and UPDATEs are allowed. */
  locks?: LockIndex | undefined;
  /** The webhook's clock, ms since the epoch: an expired Lock holds nothing. */
  now: number;
  /** The provider whose configuration kcp called: only its rules apply. */
  provider?: string | undefined;
  /** Whether the annotation counts only for users kcp allows `bypass`. */
  authorizedBypass: boolean;
}

/**
 * The answer to `request` when it needs no read, else the plan of the
 * reads. Never throws.
 */
export function planReview(
  request: AdmissionRequest,
  context: PlanContext,
): ReviewStep {
  const { uid } = request;
  const { locks } = context;
  const verb = request.operation === "DELETE"
    ? "delete"
    : request.operation === "UPDATE" && locks !== undefined
    ? "update"
    : undefined;
  if (verb === undefined) return { verdict: allowed(uid) };
  if (!context.loaded) return { verdict: notReady(uid) };
  const object = objectOf(request);
  if (object === undefined) {
    return {
      verdict: invalid(
        uid,
        `cannot read the object being ${
          verb === "delete" ? "deleted" : "updated"
        }: the review carries no oldObject`,
      ),
    };
  }
  const annotations = asRecord(asRecord(object.metadata)?.annotations);
  const skip = annotations?.[SKIP_PROTECTION_ANNOTATION] === "true";
  // Without Locks the annotation alone decides, before anything is checked.
  if (skip && !context.authorizedBypass && locks === undefined) {
    return { verdict: allowed(uid, "allowed_skip") };
  }
  const target = reviewTarget(request, object);
  if (typeof target === "string") return { verdict: invalid(uid, target) };
  const type = {
    cluster: target.cluster,
    group: target.resource.group,
    resource: target.resource.resource,
  };
  const holds = locks?.find({
    ...type,
    ...(target.namespace === undefined ? {} : { namespace: target.namespace }),
    name: target.name,
    operation: verb === "delete" ? "Delete" : "Update",
  }, { now: context.now }) ?? [];
  const found = verb === "delete"
    ? context.protectionsOf(request.resource)
    : [];
  const protections = context.provider === undefined
    ? found
    : found.filter((p) => p.provider === context.provider);
  let unlocked: Unlocked;
  if (skip && !context.authorizedBypass) {
    unlocked = { kind: "verdict", verdict: allowed(uid, "allowed_skip") };
  } else if (protections.length === 0) {
    unlocked = { kind: "verdict", verdict: allowed(uid) };
  } else if (skip) {
    unlocked = { kind: "bypass", user: request.userInfo ?? {} };
  } else {
    unlocked = { kind: "references" };
  }
  const covered = holds.length > 0 || (locks?.covers(type) ?? false);
  if (!covered && unlocked.kind === "verdict") {
    return { verdict: unlocked.verdict };
  }
  return {
    plan: {
      uid,
      target,
      verb,
      holds,
      // With the annotation, references are not listed: it lets them
      // through (and a Lock holds whatever it says).
      protections: skip ? [] : protections,
      unlocked,
      covered,
    },
  };
}

/** The reads of a plan. */
export interface PlannedReads {
  /** Read the live object: always, every decision depends on it. */
  confirm: true;
  /** List the dependents of these protections (grouped by dependent type). */
  lists: readonly Protection[];
  /**
   * Look up the owners the live object names for these protections
   * (`from: Target`; for a Namespace, `TargetNamespace` too): its metadata
   * is read whole, not only its uid.
   */
  owners: readonly Protection[];
  /**
   * Read the object's Namespace (metadata only) and look up the owners it
   * names for these protections (`from: TargetNamespace`).
   */
  namespaceOwners: readonly Protection[];
  /** Ask kcp whether this user may bypass protections. */
  bypass?: ReviewUser;
  /** Read which export each type of the workspace is bound from. */
  boundIdentities: boolean;
}

/** What `plan` needs read, each at most once. */
export function planReads(plan: ReviewPlan): PlannedReads {
  const { protections, target } = plan;
  // A Namespace's own labels are those TargetNamespace reads; another
  // cluster-scoped object has no Namespace to read.
  const own = isNamespaceType(target.resource);
  const namespaced = target.namespace !== undefined;
  return {
    confirm: true,
    lists: protections.filter((p) => p.from === "Dependent"),
    owners: protections.filter((p) =>
      p.from === "Target" || (p.from === "TargetNamespace" && own)
    ),
    namespaceOwners: protections.filter((p) =>
      p.from === "TargetNamespace" && namespaced
    ),
    ...(plan.unlocked.kind === "bypass" ? { bypass: plan.unlocked.user } : {}),
    boundIdentities: plan.protections.some((p) =>
      p.dependentIdentity !== undefined
    ),
  };
}
