/**
 * What a review answers, and every message it answers with: the
 * {@linkcode Verdict} type, its outcomes, and one builder per kind of
 * answer. How the dependents and owners that hold an object are named, in
 * a message and as causes, is `holders.ts` (re-exported here); what could
 * not be read, `review_unread.ts`. Pure: the texts depend only on their
 * arguments.
 *
 * @module
 */
import { GROUP, SKIP_PROTECTION_ANNOTATION } from "../rules/mod.ts";
import { type Cause, statusCause } from "../causes/mod.ts";
import { BYPASS_RESOURCE, BYPASS_VERB } from "./access_review.ts";
import { type AdmissionResponse, allow, deny } from "./admission_review.ts";
import { lockedMessage, type LockHold } from "../locks/mod.ts";
import { MAX_OWNERS_READ, type OwnerHold } from "./review_owners.ts";
import { type Unread, unreadCauses, unreadText } from "./review_unread.ts";
import {
  type Blocker,
  ownedBy,
  ownerCauses,
  referenceCauses,
  referencedBy,
} from "./holders.ts";

export {
  type Blocker,
  ownedBy,
  ownerCauses,
  referenceCauses,
  referencedBy,
} from "./holders.ts";

export {
  MAX_UNREAD_NAMED,
  type Unread,
  unreadCauses,
  unreadText,
} from "./review_unread.ts";
import {
  isNamespaceType,
  type ReviewTarget,
  shownTarget,
} from "./review_target.ts";

/** The exact denial while rules are not loaded (scripts match on it). */
export const NOT_INITIALIZED_MESSAGE =
  "dependency webhook not yet initialized, retry later";

/**
 * The one denial of a review that the live object does not confirm: the
 * object is gone, or its uid is not the one the review carries. It names
 * nothing but the review's verb, so a forged review learns nothing from it.
 */
export function unconfirmedMessage(verb: "delete" | "update"): string {
  return `cannot confirm the object being ${verb}d: it no longer exists as the review describes it ` +
    `(deleted or recreated meanwhile); retry the ${verb}`;
}

/** {@linkcode unconfirmedMessage} of a delete, the usual review. */
export const UNCONFIRMED_MESSAGE = unconfirmedMessage("delete");

/** How a review ended, for metrics and logs. */
export type Outcome =
  | "allowed"
  | "allowed_skip"
  | "allowed_workspace_deleting"
  | "denied_referenced"
  | "denied_owned"
  | "denied_not_ready"
  | "denied_error"
  | "denied_invalid"
  | "denied_unconfirmed"
  | "denied_busy"
  | "denied_skip_unauthorized"
  | "denied_locked";

/** A decision: the response and why. */
export interface Verdict {
  /** The AdmissionReview response. */
  response: AdmissionResponse;
  /** Why, in one word. */
  outcome: Outcome;
  /** Number of blocking dependents found (denied_referenced only). */
  blockers?: number;
  /**
   * The permission kcp refused our identity: on a `denied_error`, or on a
   * denial that holds the object and says what it could not read.
   */
  forbidden?: Permission;
  /** What holds the object, as the denial's `status.details.causes` carry it. */
  causes?: Cause[];
  /**
   * Set on a denial because something holds the object (references,
   * owners, Locks) when the live object confirmed the review (its uid
   * matched the review's): only such a denial is recorded in the hold
   * table.
   */
  confirmed?: true;
}

/** A permission on a type: what a 403 refused. */
export interface Permission {
  /** The verb refused. */
  verb: "get" | "list";
  /** The type's API group (`""` for core). */
  group: string;
  /** The type's resource. */
  resource: string;
}

/** Allowed, for `outcome`. */
export function allowed(
  uid: string,
  outcome: "allowed" | "allowed_skip" | "allowed_workspace_deleting" =
    "allowed",
): Verdict {
  return { response: allow(uid), outcome };
}

/** Denied while the rules or Locks are not loaded (503). */
export function notReady(uid: string): Verdict {
  return {
    response: deny(uid, {
      code: 503,
      reason: "ServiceUnavailable",
      message: NOT_INITIALIZED_MESSAGE,
    }),
    outcome: "denied_not_ready",
  };
}

/** A review that cannot be used (400). */
export function invalid(uid: string, message: string): Verdict {
  return {
    response: deny(uid, { code: 400, reason: "BadRequest", message }),
    outcome: "denied_invalid",
  };
}

/** The one generic denial of a review (a `verb`) the live object does not confirm. */
export function unconfirmed(
  uid: string,
  verb: "delete" | "update" = "delete",
): Verdict {
  return {
    response: deny(uid, {
      code: 409,
      reason: "Conflict",
      message: unconfirmedMessage(verb),
    }),
    outcome: "denied_unconfirmed",
  };
}

/** Busy: the workspace's share of the reviews that read kcp is in use (503). */
export function busy(
  uid: string,
  context: { target: ReviewTarget; maxPerKey: number; capacity: number },
): Verdict {
  return {
    response: deny(uid, {
      code: 503,
      reason: "ServiceUnavailable",
      message:
        `cannot delete ${
          shownTarget(context.target)
        }: the dependency webhook is busy ` +
        `with this workspace's deletes (at most ${context.maxPerKey} of a workspace's ` +
        `${context.capacity} reviews read kcp at once, and more wait); retry the delete`,
    }),
    outcome: "denied_busy",
  };
}

/**
 * Fail closed: the delete (or update) waits until the check can be made
 * (503). The skip annotation is offered only for a delete with
 * `problem.skippable` (default true): it overrides no Lock, and lets no
 * update through. With `problem.forbidden`, the verdict carries the
 * permission kcp refused.
 */
export function unavailable(
  uid: string,
  problem: {
    shown: string;
    what: string;
    until: string;
    forbidden?: Permission | undefined;
    verb?: "delete" | "update";
    skippable?: boolean;
    /** What could not be read, as causes: said in the message already. */
    unread?: readonly Unread[] | undefined;
  },
): Verdict {
  const verb = problem.verb ?? "delete";
  const causes = unreadCauses(problem.unread ?? []);
  const skip = verb === "delete" && (problem.skippable ?? true)
    ? `, or set the annotation ${SKIP_PROTECTION_ANNOTATION}=true on the object to delete it anyway`
    : "";
  return {
    ...(problem.forbidden === undefined
      ? {}
      : { forbidden: problem.forbidden }),
    response: deny(uid, {
      code: 503,
      reason: "ServiceUnavailable",
      message: `cannot ${verb} ${problem.shown}: ${problem.what}; ` +
        `the ${verb} is denied until ${problem.until}: retry later${skip}`,
      causes: causes.map(statusCause),
    }),
    outcome: "denied_error",
    ...(causes.length === 0 ? {} : { causes }),
  };
}

/** Denied while dependents refer to the object (409), naming them. */
export function referenced(
  uid: string,
  found: {
    target: ReviewTarget;
    named: readonly Blocker[];
    total: number;
    unread?: readonly Unread[] | undefined;
  },
): Verdict {
  const unread = found.unread ?? [];
  const causes = [
    ...referenceCauses(found.named, found.total),
    ...unreadCauses(unread),
  ];
  return {
    ...forbiddenOf(unread),
    response: deny(uid, {
      code: 409,
      reason: "Conflict",
      message: `cannot delete ${shownTarget(found.target)}: ${
        referencedBy(found.named, found.total, found.target.namespace)
      }${unreadText(unread)}`,
      causes: causes.map(statusCause),
    }),
    outcome: "denied_referenced",
    blockers: found.total,
    causes,
  };
}

/** The first permission kcp refused among `unread`, as a verdict's field. */
function forbiddenOf(
  unread: readonly Unread[],
): { forbidden?: Permission } {
  const refused = unread.find((u) => u.forbidden !== undefined)?.forbidden;
  return refused === undefined ? {} : { forbidden: refused };
}

/**
 * Denied while owners the object (or its Namespace) names hold it, and
 * perhaps dependents refer to it too (409), naming them: `denied_owned`
 * when only owners hold it, `denied_referenced` when dependents refer too.
 */
export function held(
  uid: string,
  found: {
    target: ReviewTarget;
    owners: readonly OwnerHold[];
    unchecked: number;
    named: readonly Blocker[];
    total: number;
    unread?: readonly Unread[] | undefined;
  },
): Verdict {
  const { target, owners, unchecked, total } = found;
  const unread = found.unread ?? [];
  const parts: string[] = [];
  if (owners.length > 0) parts.push(ownedBy(owners, target, unchecked));
  else if (unchecked > 0) {
    parts.push(
      `it names ${
        MAX_OWNERS_READ + unchecked
      } owners, more than the ${MAX_OWNERS_READ} the dependency webhook reads per delete: ` +
        `none of those it read holds it, and the other ${unchecked} were not read; ` +
        "remove the surplus owner references and retry",
    );
  }
  if (total > 0) {
    parts.push(referencedBy(found.named, total, target.namespace));
  }
  const causes = [
    ...ownerCauses(owners, unchecked),
    ...referenceCauses(found.named, total),
    ...unreadCauses(unread),
  ];
  return {
    ...forbiddenOf(unread),
    response: deny(uid, {
      code: 409,
      reason: "Conflict",
      message: `cannot delete ${shownTarget(target)}: ${parts.join("; ")}${
        unreadText(unread)
      }`,
      causes: causes.map(statusCause),
    }),
    outcome: total > 0 ? "denied_referenced" : "denied_owned",
    ...(total > 0 ? { blockers: total } : {}),
    causes,
  };
}

/**
 * Denied by Locks (409), naming them and their reasons and, when known,
 * what else still refers to the object.
 */
export function locked(
  uid: string,
  context: {
    target: ReviewTarget;
    verb: "delete" | "update";
    holds: readonly LockHold[];
    also?: { named: readonly Blocker[]; total: number } | undefined;
    /** What could not be read that might hold it too: said, not waited for. */
    unread?: readonly Unread[] | undefined;
  },
): Verdict {
  const { target, also } = context;
  const unread = context.unread ?? [];
  const references = also !== undefined && also.total > 0
    ? `; also ${referencedBy(also.named, also.total, target.namespace)}`
    : "";
  const causes: Cause[] = [
    ...context.holds.map((h): Cause => ({
      type: "Lock",
      lock: { namespace: h.namespace, name: h.name },
      reason: h.reason,
      ...(h.expiresAt === undefined ? {} : { expiresAt: h.expiresAt }),
      ...(h.since === undefined ? {} : { since: h.since }),
    })),
    ...(also === undefined ? [] : referenceCauses(also.named, also.total)),
    ...unreadCauses(unread),
  ];
  return {
    ...forbiddenOf(unread),
    response: deny(uid, {
      code: 409,
      reason: "Conflict",
      message: `cannot ${context.verb} ${shownTarget(target)}: ${
        lockedMessage(context.holds)
      }${references}${unreadText(unread)}`,
      causes: causes.map(statusCause),
    }),
    outcome: "denied_locked",
    causes,
  };
}

/**
 * The denial of a locked object the webhook may not read (a Secret, say:
 * the grant generator never grants it): without the live object the review
 * cannot be confirmed, so it names no Lock and no reason, only where to
 * look.
 */
export function lockedUnreadable(
  uid: string,
  context: { target: ReviewTarget; verb: "delete" | "update" },
): Verdict {
  const { target } = context;
  const namespace = target.namespace ??
    (isNamespaceType(target.resource) ? target.name : undefined);
  const where = namespace === undefined
    ? "kubectl get locks --all-namespaces"
    : `kubectl get locks -n ${namespace}`;
  return {
    response: deny(uid, {
      code: 409,
      reason: "Conflict",
      message:
        `cannot ${context.verb} ${
          shownTarget(target)
        }: a Lock may hold it, and the dependency webhook may not read ` +
        `${target.resource.resource} to say which: see the Locks in its namespace (${where}); deleting the Lock unlocks it`,
    }),
    outcome: "denied_locked",
  };
}

/** The annotation set by a user kcp does not allow `bypass` (403). */
export function skipUnauthorized(
  uid: string,
  context: { target: ReviewTarget; username: string },
): Verdict {
  return {
    response: deny(uid, {
      code: 403,
      reason: "Forbidden",
      message:
        `cannot delete ${
          shownTarget(context.target)
        }: the ${SKIP_PROTECTION_ANNOTATION} annotation lets a delete through only for users ` +
        `allowed "${BYPASS_VERB}" on ${BYPASS_RESOURCE}.${GROUP} in this workspace, and ${
          JSON.stringify(context.username)
        } is not: ask for that permission, or delete what still refers to the object first`,
    }),
    outcome: "denied_skip_unauthorized",
  };
}
