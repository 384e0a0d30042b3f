/**
 * The Locks' part of the conditions: each Lock's Ready condition, from
 * where the Locks' part of the plan placed it (`lock_plan.ts`) and the
 * configuration writes still to make.
 *
 * @module
 */
import { type Condition, READY_CONDITION } from "../rules/mod.ts";
import type { LockConditionReason } from "../locks/mod.ts";
import { clusterOf, type EndpointObject } from "../kcp/mod.ts";
import { lockKey, type LockPlacement } from "./lock_plan.ts";
import {
  type PlannedStatuses,
  type StatusContext,
  StatusTally,
} from "./status_tally.ts";

/**
 * Each Lock's Ready condition, once settled: `Enforced` when the
 * configuration that covers its target is in place, why not otherwise.
 */
export function planLockStatuses(
  locks: readonly EndpointObject[],
  context: StatusContext & { placement: LockPlacement },
): PlannedStatuses {
  const { placement, settings } = context;
  const planned = new StatusTally(context.memo);
  for (const source of locks) {
    const metadata = source.object.metadata ?? {};
    const cluster = clusterOf(source.object);
    const key = lockKey(cluster, metadata.namespace ?? "", metadata.name ?? "");
    const state = placement.states.get(key);
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
      ready = lockReady("False", state);
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
