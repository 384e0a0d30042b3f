/**
 * Where each Lock needs the webhook, and what it says about itself: a pure
 * step of the plan, over the same caches as the rules' (resolved paths,
 * dep-ctrl bindings, APIExports read).
 *
 * A Lock whose target names an APIExport (`target.apiExportRef`) needs the
 * webhook configuration of that provider's workspace, since kcp calls only
 * the exporting workspace's configurations for a bound type. A Lock without
 * one locks a type of the workspace's own (a core type, or a CRD there), so
 * it needs the configuration of its own workspace, which must bind the
 * dep-ctrl export and accept its claim like a provider. The configuration
 * covers the target's type for the Lock's operations (DELETE, UPDATE).
 *
 * It then checks what the Lock's workspace said about the target's type
 * (`lock_targets.ts`): kcp must call the configuration the Lock is placed
 * in, and a Lock holds only namespaced objects (or its namespace). A Lock is
 * placed while its workspace is being asked (its status waits for the
 * answer) and removed if the answer refuses it. What each Lock's status
 * then says is planned in `rule_status_plan.ts`, its types' configurations in
 * `configuration_plan.ts`.
 *
 * @module
 */
import { clusterOf, type EndpointObject } from "../kcp/mod.ts";
import {
  type Lock,
  type LockConditionReason,
  type LockParseResult,
  parseLock,
} from "../locks/mod.ts";
import {
  checkExported,
  exportKey,
  type ExportReading,
  type ExportRef,
} from "../exports/mod.ts";
import type { ProtectedType, WebhookOperation } from "./webhook_config.ts";
import { bindingProblem } from "./binding_check.ts";
import {
  checkLockTarget,
  type LockTargetAnswer,
  lockTargetKey,
  type LockTargetReason,
  type LockTargetRef,
} from "./lock_targets.ts";
import type { Reading } from "../runtime/mod.ts";
import type { Resolution } from "./path_cache.ts";

/** Why a Lock is not in effect, as its Ready condition says. */
export type LockProblemReason =
  | Extract<
    LockConditionReason,
    "InvalidSpec" | "PathNotResolved" | "ProviderNotBound" | "ClaimNotAccepted"
  >
  | LockTargetReason;

/** One Lock's state after placement. */
export type LockState =
  | {
    state: "ok";
    /** The logical cluster whose configuration must cover the target. */
    cluster: string;
    /** How messages name that workspace. */
    shown: string;
    /**
     * Placed all the same, but not known to be in effect: the check of its
     * target could not be made (a failed read never weakens protection).
     */
    problem?: LockProblem;
    /**
     * Placed while its workspace is being asked about the target's type:
     * its status waits for the answer.
     */
    checking?: boolean;
  }
  | { state: "pending" }
  | {
    state: "failed";
    reason: LockProblemReason;
    message: string;
    /**
     * For `ProviderMismatch`, once its path is resolved: the workspace whose
     * configuration kcp calls for the target's type. The webhook honours
     * every Lock of the workspace whenever it is called, so the Lock holds
     * whenever that configuration covers the type for other rules or Locks
     * (`lock_status_plan.ts` says so).
     */
    calledIn?: { cluster: string; shown: string };
  };

/** What the placement step is computed from. */
export interface LockPlacementContext {
  /** Resolved workspace paths; a path without an entry is being resolved. */
  resolutions: ReadonlyMap<string, Resolution>;
  /** Dep-ctrl bindings by logical cluster, with whether the claim is accepted. */
  bindings: ReadonlyMap<
    string,
    { claimAccepted: boolean; claimShortfall?: string }
  >;
  /** APIExports read, by `exportKey`; absent: nothing checked. */
  exports?: ReadonlyMap<string, ExportReading> | undefined;
  /** What each Lock's workspace said of its target type, by `lockTargetKey`; absent: nothing checked. */
  targets?: ReadonlyMap<string, Reading<LockTargetAnswer>> | undefined;
  /** `<path>:<name>` of the dep-ctrl export, for messages. */
  exportRef: string;
  /** Validates a Lock object. @default {parseLock} */
  parse?: (object: EndpointObject["object"]) => LockParseResult;
}

/** What the Locks ask of the configurations, and each Lock's state. */
export interface LockPlacement {
  /** Types (with operations) each cluster's configuration must cover. */
  desired: Map<string, ProtectedType[]>;
  /** Workspace paths the Locks name (to resolve). */
  paths: Set<string>;
  /** The workspace path each provider cluster of `desired` was named by. */
  providerPaths: Map<string, string>;
  /** APIExports the Locks name (to read). */
  exports: Map<string, ExportRef>;
  /** The target types to ask the Locks' workspaces about (to read). */
  targets: Map<string, LockTargetRef>;
  /** Whether any placement is not known yet (then nothing is removed). */
  unsure: boolean;
  /** Each Lock's state, by `<cluster>/<namespace>/<name>`. */
  states: Map<string, LockState>;
  /** Each valid Lock as parsed, by the same key. */
  locks: Map<string, Lock>;
}

/** The key of a Lock in {@linkcode LockPlacement.states}. */
export function lockKey(
  cluster: string,
  namespace: string,
  name: string,
): string {
  return `${cluster}/${namespace}/${name}`;
}

/** Places every Lock: which configuration must cover its target, or why none can. */
export function planLockPlacement(
  locks: readonly EndpointObject[],
  context: LockPlacementContext,
): LockPlacement {
  const placement: LockPlacement = {
    desired: new Map(),
    paths: new Set(),
    providerPaths: new Map(),
    exports: new Map(),
    targets: new Map(),
    unsure: false,
    states: new Map(),
    locks: new Map(),
  };
  for (const source of locks) {
    const cluster = clusterOf(source.object);
    const metadata = source.object.metadata ?? {};
    const key = lockKey(cluster, metadata.namespace ?? "", metadata.name ?? "");
    const parsed = (context.parse ?? parseLock)(source.object);
    if (!parsed.ok) {
      placement.states.set(key, {
        state: "failed",
        reason: "InvalidSpec",
        message: parsed.error,
      });
      continue;
    }
    const placed = placeLock(parsed.lock, cluster, context, placement);
    // A malformed expiresAt alone: held as a Lock without it (fail
    // closed), and said so before any other problem.
    const state: LockState = placed.state === "ok" &&
        parsed.expiryProblem !== undefined
      ? {
        ...placed,
        problem: {
          reason: "InvalidSpec",
          message:
            `${parsed.expiryProblem}; until it is fixed the Lock holds as one without spec.expiresAt, until deleted`,
        },
      }
      : placed;
    placement.states.set(key, state);
    placement.locks.set(key, parsed.lock);
    if (state.state === "pending") placement.unsure = true;
    if (state.state !== "ok") continue;
    const { target } = parsed.lock.spec;
    const types = placement.desired.get(state.cluster) ?? [];
    types.push({
      group: target.group,
      version: target.version,
      resource: target.resource,
      operations: parsed.lock.spec.operations.map((o): WebhookOperation =>
        o === "Delete" ? "DELETE" : "UPDATE"
      ),
    });
    placement.desired.set(state.cluster, types);
  }
  return placement;
}

/** Where one valid Lock needs the webhook, or why it cannot have it. */
function placeLock(
  lock: Lock,
  cluster: string,
  context: LockPlacementContext,
  placement: LockPlacement,
): LockState {
  const state = placeChecked(lock, cluster, context, placement);
  if (state.state !== "ok") return state;
  // Only then what the Lock's workspace says: a problem of the export
  // (a type it does not serve) is the more telling message.
  const checked = checkTarget(lock, cluster, context, placement);
  if ("state" in checked) return checked.state;
  if (checked.checking) return { ...state, checking: true };
  return checked.problem === undefined
    ? state
    : { ...state, problem: checked.problem };
}

/** A problem of a Lock that is placed all the same. */
interface LockProblem {
  reason: LockProblemReason;
  message: string;
}

/**
 * What the Lock's workspace said of the target's type: a state when the
 * Lock must not be placed (yet), or whether it is placed with a problem.
 */
function checkTarget(
  lock: Lock,
  cluster: string,
  context: LockPlacementContext,
  placement: LockPlacement,
): { state: LockState } | { problem?: LockProblem; checking?: true } {
  if (context.targets === undefined) return {};
  const { target } = lock.spec;
  const ref: LockTargetRef = {
    cluster,
    group: target.group,
    version: target.version,
    resource: target.resource,
  };
  const key = lockTargetKey(ref);
  placement.targets.set(key, ref);
  const check = checkLockTarget(context.targets.get(key), {
    target,
    resolve: (path) => {
      placement.paths.add(path);
      const resolution = context.resolutions.get(path);
      if (resolution === undefined) return undefined;
      return "cluster" in resolution ? resolution.cluster : null;
    },
  });
  if (check.state === "ok") return {};
  // Placed while the workspace is asked: protection never waits for the
  // check, and the status waits for its answer.
  if (check.state === "pending") return { checking: true };
  const problem = { reason: check.reason, message: check.message };
  if (check.placed) return { problem };
  const calledBy = check.calledBy;
  if (calledBy === undefined) return { state: { state: "failed", ...problem } };
  placement.paths.add(calledBy.path);
  const resolution = context.resolutions.get(calledBy.path);
  return {
    state: {
      state: "failed",
      ...problem,
      ...(resolution !== undefined && "cluster" in resolution
        ? { calledIn: { cluster: resolution.cluster, shown: calledBy.path } }
        : {}),
    },
  };
}

/** Where a Lock needs the webhook by what it names, or why it cannot have it. */
function placeChecked(
  lock: Lock,
  cluster: string,
  context: LockPlacementContext,
  placement: LockPlacement,
): LockState {
  const { target } = lock.spec;
  const ref = target.apiExportRef;
  if (ref === undefined) {
    // The workspace's own type: its own configuration.
    return bound(cluster, "the Lock's workspace", context);
  }
  placement.paths.add(ref.path);
  const resolution = context.resolutions.get(ref.path);
  if (resolution === undefined) return { state: "pending" };
  if (!("cluster" in resolution)) {
    if (!resolution.definitive) placement.unsure = true;
    return {
      state: "failed",
      reason: "PathNotResolved",
      message: resolution.message,
    };
  }
  const refKey = exportKey({ workspace: ref.path, name: ref.name });
  placement.exports.set(refKey, { workspace: ref.path, name: ref.name });
  const reading = context.exports?.get(refKey);
  if (context.exports !== undefined && reading === undefined) {
    return { state: "pending" };
  }
  const exported = checkExported(reading, {
    workspace: ref.path,
    name: ref.name,
    shown: ref.path,
  }, target);
  if (!exported.ok) {
    return {
      state: "failed",
      reason: "TargetTypeUnknown",
      message: exported.message,
    };
  }
  const state = bound(resolution.cluster, ref.path, context);
  if (state.state === "ok") {
    placement.providerPaths.set(resolution.cluster, ref.path);
  }
  return state;
}

/** The configuration of `cluster`, if the controller may write there. */
function bound(
  cluster: string,
  shown: string,
  context: LockPlacementContext,
): LockState {
  const unbound = bindingProblem(context.bindings.get(cluster), {
    shown,
    exportRef: context.exportRef,
  });
  if (unbound !== undefined) return { state: "failed", ...unbound };
  return { state: "ok", cluster, shown };
}
