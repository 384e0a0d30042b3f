/**
 * The Locks' part of the conditions: each Lock's Ready condition, from
 * where the Locks' part of the plan placed it (`lock_plan.ts`) and the
 * configuration writes still to make, and `Expired` from a Lock's
 * `spec.expiresAt` on, by the plan's clock, whatever else is true of it;
 * and when the next Lock expires, for the reconciler to wake up then.
 *
 * @module
 */
import { type Condition, READY_CONDITION } from "../rules/mod.ts";
import {
  type Lock,
  type LockConditionReason,
  lockExpiredAt,
  lockExpiresAt,
} from "../locks/mod.ts";
import { typeName } from "../rules/mod.ts";
import type { ProtectedType } from "./webhook_config.ts";
import { clusterOf, type EndpointObject } from "../kcp/mod.ts";
import { lockKey, type LockPlacement } from "./lock_plan.ts";
import {
  type PlannedStatuses,
  type StatusContext,
  StatusTally,
} from "./status_tally.ts";

/**
 * Each Lock's Ready condition, once settled: `Expired` from its
 * `spec.expiresAt` on (at once, even before it is placed), else `Enforced`
 * when the configuration that covers its target is in place, why not
 * otherwise.
 */
export function planLockStatuses(
  locks: readonly EndpointObject[],
  context: StatusContext & {
    placement: LockPlacement;
    /**
     * The types each cluster's configuration covers (rules' and Locks'),
     * to say when a Lock not placed holds all the same.
     */
    desired?: ReadonlyMap<string, ReadonlyMap<string, ProtectedType>>;
  },
): PlannedStatuses {
  const { placement, settings } = context;
  const planned = new StatusTally(context.memo);
  for (const source of locks) {
    const metadata = source.object.metadata ?? {};
    const cluster = clusterOf(source.object);
    const key = lockKey(cluster, metadata.namespace ?? "", metadata.name ?? "");
    const state = placement.states.get(key);
    const expired = expiredReady(placement.locks.get(key), context.now);
    if (expired !== undefined) {
      planned.count(expired);
      planned.write(source, {
        now: context.now,
        conditions: [expired],
        namespace: metadata.namespace ?? "",
      });
      continue;
    }
    let ready: Condition;
    if (
      state === undefined || state.state === "pending" ||
      // Placed, but its workspace is still being asked: no status yet.
      (state.state === "ok" && state.checking)
    ) {
      planned.countShown(source.object);
      continue;
    }
    if (state.state === "failed") {
      const honoured = state.calledIn === undefined
        ? undefined
        : honouredAnyway(placement.locks.get(key), {
          ...state.calledIn,
          context,
        });
      if (honoured === "wait") {
        planned.countShown(source.object);
        continue;
      }
      ready = honoured === undefined
        ? lockReady("False", state)
        : lockReady(honoured.status, {
          reason: honoured.status === "True" ? "Enforced" : state.reason,
          message: honoured.status === "True"
            ? `${honoured.denied} while this Lock exists: kcp calls the webhook configuration of ${state.calledIn?.shown} for ${honoured.type}, ` +
              "which covers it for other rules or Locks there, and the webhook honours every Lock of the workspace; " +
              `but this Lock is not placed there itself, and holds only while they need it: ${state.message}`
            : `${state.message}; meanwhile ${honoured.denied} while this Lock exists, since the webhook configuration of ` +
              `${state.calledIn?.shown}, which kcp calls for ${honoured.type}, covers that for other rules or Locks there`,
        });
    } else if (state.problem !== undefined) {
      ready = lockReady("False", state.problem);
    } else if ("error" in settings) {
      ready = lockReady("False", {
        reason: "InstallFailed",
        message: settings.error,
      });
    } else if (context.pendingClusters.has(state.cluster)) {
      const error = context.installErrors.get(state.cluster);
      if (error === undefined) {
        planned.countShown(source.object);
        continue;
      }
      ready = lockReady("False", {
        reason: "InstallFailed",
        message:
          `cannot write the webhook configuration in ${state.shown}: ${error}`,
      });
    } else {
      const spec = placement.locks.get(key)!.spec;
      const verbs = spec.operations.map((o) =>
        o === "Update" ? "updating" : "deleting"
      ).join(" and ");
      ready = lockReady("True", {
        reason: "Enforced",
        message:
          `${verbs} ${spec.target.resource}/${spec.target.name} is denied while this Lock exists (webhook installed in ${state.shown})`,
      });
    }
    planned.count(ready);
    planned.write(source, {
      now: context.now,
      conditions: [ready],
      namespace: metadata.namespace ?? "",
    });
  }
  return { statuses: planned.statuses, ready: planned.ready };
}

/**
 * Whether the webhook honours a Lock not placed (`ProviderMismatch`)
 * because the configuration kcp calls for its type (that of `cluster`)
 * covers the type for other rules or Locks: `True` when it covers every
 * operation of the Lock, `False` with those it covers, `undefined` when it
 * covers none (or the Lock is not known), `wait` while that configuration
 * is being written.
 */
function honouredAnyway(
  lock: Lock | undefined,
  where: {
    cluster: string;
    context: StatusContext & {
      desired?: ReadonlyMap<string, ReadonlyMap<string, ProtectedType>>;
    };
  },
):
  | { status: "True" | "False"; denied: string; type: string }
  | "wait"
  | undefined {
  const { context } = where;
  if (lock === undefined || context.desired === undefined) return undefined;
  const { target, operations } = lock.spec;
  const covered = new Set<string>();
  for (const type of context.desired.get(where.cluster)?.values() ?? []) {
    if (type.group !== target.group || type.resource !== target.resource) {
      continue;
    }
    for (const operation of type.operations ?? ["DELETE"]) {
      covered.add(operation);
    }
  }
  const held = operations.filter((o) =>
    covered.has(o === "Update" ? "UPDATE" : "DELETE")
  );
  if (held.length === 0) return undefined;
  if (context.pendingClusters.has(where.cluster)) {
    return context.installErrors.has(where.cluster) ? undefined : "wait";
  }
  const verbs = held.map((o) => o === "Update" ? "updating" : "deleting")
    .join(" and ");
  return {
    status: held.length === operations.length ? "True" : "False",
    denied: `${verbs} ${target.resource}/${target.name} is denied`,
    type: typeName(target),
  };
}

/**
 * `Ready` False, `Expired`, for a Lock whose `spec.expiresAt` is not after
 * `now` (an RFC 3339 time, the plan's clock); `undefined` for any other.
 */
function expiredReady(
  lock: Lock | undefined,
  now: string,
): Condition | undefined {
  if (lock === undefined) return undefined;
  const expiresAt = lockExpiresAt(lock.spec);
  if (!lockExpiredAt(expiresAt, Date.parse(now))) return undefined;
  const { target } = lock.spec;
  return lockReady("False", {
    reason: "Expired",
    message:
      `expired at ${lock.spec.expiresAt}: ${target.resource}/${target.name} is no longer held by this Lock ` +
      "(the webhook lets go by its own clock, at most its --lock-expiry-skew later); " +
      "delete the Lock, or set a later spec.expiresAt to hold it again",
  });
}

/**
 * When the next of `locks` expires after `now` (the plan's clock): the
 * earliest `spec.expiresAt` still ahead, in ms since the epoch, or
 * `undefined` when none is. The reconciler plans again then, so a Lock
 * shows `Expired` without waiting for a resync.
 */
export function nextLockExpiry(
  locks: Iterable<Lock>,
  now: string,
): number | undefined {
  const at = Date.parse(now);
  let next: number | undefined;
  for (const lock of locks) {
    const expiresAt = lockExpiresAt(lock.spec);
    if (expiresAt === undefined || lockExpiredAt(expiresAt, at)) continue;
    if (next === undefined || expiresAt < next) next = expiresAt;
  }
  return next;
}

/** A Lock's Ready condition. */
function lockReady(
  status: Condition["status"],
  options: { reason: LockConditionReason; message: string },
): Condition {
  return {
    type: READY_CONDITION,
    status,
    reason: options.reason,
    message: options.message,
    lastTransitionTime: "",
  };
}
