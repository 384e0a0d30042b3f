/**
 * Where the type a Lock names comes from in the Lock's own workspace, and
 * whether kcp will call the webhook configuration the Lock is placed in.
 *
 * kcp calls, for a bound type, only the configurations of the workspace
 * that exports it, and for a type of the workspace's own (a core type, a
 * CRD) only the workspace's own. A Lock is namespaced and holds objects of
 * its namespace (or the namespace itself). So a Lock is in effect only if
 * its workspace serves the type, the type is namespaced (or is
 * `namespaces`), and `target.apiExportRef` names the export the workspace
 * binds the type from, or is absent for a type of the workspace's own.
 *
 * The reader asks the Lock's workspace twice, at once: discovery of the
 * target's group and version (is it served, is it namespaced) and its
 * APIBindings (is it bound, from which export). The controller's identity
 * needs `list` on `apibindings` there (`manifests/kcp/system-admin` grants
 * it on every shard; discovery needs only kcp's workspace access). The check
 * is a pure function over what was read.
 *
 * @example Usage
 * ```ts
 * import { checkLockTarget } from "./lock_targets.ts";
 *
 * const check = checkLockTarget(
 *   { answer: { served: true, namespaced: true, boundFrom: { path: "root:net", name: "net.io" } } },
 *   { target: { group: "net.io", version: "v1", resource: "vpcs" }, resolve: () => "c1" },
 * );
 * check.state; // "failed": the Lock names no apiExportRef
 * ```
 *
 * @module
 */
import {
  clusterUrl,
  KubeApiError,
  type KubeClient,
  pathSegment,
} from "../kcp/mod.ts";
import { isRecord } from "../runtime/mod.ts";
import type { LockConditionReason } from "../locks/mod.ts";
import { boundResourcesOf } from "../exports/mod.ts";
import type { Reading } from "../runtime/mod.ts";

/** The type a Lock names, in the Lock's workspace. */
export interface LockTargetRef {
  /** The Lock's logical cluster. */
  cluster: string;
  /** API group (`""` for core). */
  group: string;
  /** Version. */
  version: string;
  /** Plural resource. */
  resource: string;
}

/** The export a workspace binds a type from. */
export interface BoundFrom {
  /** The export's workspace path (the binding's own workspace when the binding names none). */
  path: string;
  /** The export's name. */
  name: string;
}

/** What the Lock's workspace says about the type. */
export type LockTargetAnswer =
  | { served: false }
  | {
    served: true;
    /** Whether its objects are namespaced. */
    namespaced: boolean;
    /** The export it is bound from; absent for a type of the workspace's own. */
    boundFrom?: BoundFrom;
  };

/** The key of a {@linkcode LockTargetRef} in the cache's readings. */
export function lockTargetKey(ref: LockTargetRef): string {
  return JSON.stringify([ref.cluster, ref.group, ref.version, ref.resource]);
}

const BINDINGS = "/apis/apis.kcp.io/v1alpha2/apibindings";

/**
 * Reads what the Lock's workspace serves of `ref` and where it comes from.
 *
 * @throws {KubeApiError} For any failure but a 404 of the discovery (the
 * group and version are not served): 403, outage, deadline.
 */
export async function readLockTarget(
  client: KubeClient,
  base: string,
  ref: LockTargetRef,
  options: { signal?: AbortSignal } = {},
): Promise<LockTargetAnswer> {
  const workspace = clusterUrl(base, ref.cluster);
  const discovery = ref.group === ""
    ? `${workspace}/api/${pathSegment(ref.version)}`
    : `${workspace}/apis/${pathSegment(ref.group)}/${pathSegment(ref.version)}`;
  const [served, bindings] = await Promise.all([
    client.get<unknown>(discovery, options).catch((error) => {
      if (error instanceof KubeApiError && error.notFound) return undefined;
      throw error;
    }),
    client.list(`${workspace}${BINDINGS}`, {
      limit: 500,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    }),
  ]);
  const resources = isRecord(served) && Array.isArray(served.resources)
    ? served.resources
    : [];
  const found = resources.find((r) => isRecord(r) && r.name === ref.resource);
  if (!isRecord(found)) return { served: false };
  const boundFrom = boundFromOf(bindings.items, ref);
  return {
    served: true,
    namespaced: found.namespaced === true,
    ...(boundFrom === undefined ? {} : { boundFrom }),
  };
}

/** The export of the first binding whose bound resources include the type. */
function boundFromOf(
  bindings: readonly unknown[],
  ref: LockTargetRef,
): BoundFrom | undefined {
  const bound = boundResourcesOf(bindings).find((b) =>
    b.group === ref.group && b.resource === ref.resource
  );
  if (bound === undefined) return undefined;
  return { path: bound.export.path ?? ref.cluster, name: bound.export.name };
}

/** Why a Lock's target is not in effect where it is placed. */
export type LockTargetReason = Extract<
  LockConditionReason,
  | "TargetTypeUnknown"
  | "ClusterScopedTarget"
  | "ProviderMismatch"
  | "TargetNotChecked"
>;

/** The outcome of {@linkcode checkLockTarget}. */
export type LockTargetCheck =
  | { state: "ok" }
  | { state: "pending"; paths: string[] }
  | {
    state: "failed";
    reason: LockTargetReason;
    message: string;
    /**
     * Whether the Lock is still placed in the configuration: a failed read
     * never weakens protection, so a Lock that could not be checked is
     * placed all the same, but is not said to be enforced.
     */
    placed: boolean;
    /**
     * For `ProviderMismatch`: the export the workspace binds the type from,
     * whose configuration kcp calls for it (and so the webhook, which then
     * honours every Lock of the workspace on that type).
     */
    calledBy?: { path: string; name: string };
  };

/** What {@linkcode checkLockTarget} checks a reading against. */
export interface LockTargetCheckOptions {
  /** The Lock's target type and export. */
  target: {
    group: string;
    version: string;
    resource: string;
    apiExportRef?: { path: string; name: string };
  };
  /**
   * The logical cluster of a workspace path, `undefined` while it is being
   * resolved, `null` when it cannot be.
   */
  resolve: (path: string) => string | null | undefined;
}

/**
 * Whether kcp will call the configuration a Lock is placed in for its
 * target, from what the Lock's workspace said (`reading`).
 */
export function checkLockTarget(
  reading: Reading<LockTargetAnswer> | undefined,
  options: LockTargetCheckOptions,
): LockTargetCheck {
  const { target } = options;
  const type = `${target.resource}${
    target.group === "" ? "" : "."
  }${target.group}`;
  const answer = reading?.answer;
  if (answer === undefined) {
    if (reading?.error === undefined) return { state: "pending", paths: [] };
    return {
      state: "failed",
      reason: "TargetNotChecked",
      placed: true,
      message:
        `cannot check where ${type} comes from in the Lock's workspace: ${reading.error}; ` +
        "the controller needs list on apibindings.apis.kcp.io in every workspace " +
        "(manifests/kcp/system-admin, applied to each shard's system:admin)",
    };
  }
  if (!answer.served) {
    return {
      state: "failed",
      reason: "TargetTypeUnknown",
      placed: false,
      message:
        `the Lock's workspace does not serve ${type} in version ${target.version}`,
    };
  }
  const namespaces = target.group === "" && target.resource === "namespaces";
  if (!answer.namespaced && !namespaces) {
    return {
      state: "failed",
      reason: "ClusterScopedTarget",
      placed: false,
      message:
        `${type} is cluster-scoped: a Lock holds only objects in its own namespace, or that namespace itself`,
    };
  }
  const ref = target.apiExportRef;
  const from = answer.boundFrom;
  if (from === undefined) {
    if (ref === undefined) return { state: "ok" };
    return {
      state: "failed",
      reason: "ProviderMismatch",
      placed: false,
      message:
        `${type} is a type of the Lock's workspace's own, not bound from the APIExport ${ref.name} in ${ref.path}: remove spec.target.apiExportRef`,
    };
  }
  const named = `{path: ${from.path}, name: ${from.name}}`;
  if (ref === undefined) {
    return {
      state: "failed",
      reason: "ProviderMismatch",
      placed: false,
      calledBy: from,
      message:
        `${type} is bound from the APIExport ${from.name} in ${from.path}, whose webhook configuration kcp calls for it: set spec.target.apiExportRef to ${named}`,
    };
  }
  if (ref.name === from.name && ref.path === from.path) return { state: "ok" };
  const wanted = options.resolve(ref.path);
  const bound = options.resolve(from.path);
  if (wanted === undefined || bound === undefined) {
    return {
      state: "pending",
      paths: [ref.path, from.path].filter((p) =>
        options.resolve(p) === undefined
      ),
    };
  }
  if (ref.name === from.name && wanted !== null && wanted === bound) {
    return { state: "ok" };
  }
  return {
    state: "failed",
    reason: "ProviderMismatch",
    placed: false,
    calledBy: from,
    message:
      `${type} is bound from the APIExport ${from.name} in ${from.path}, not from ${ref.name} in ${ref.path}: set spec.target.apiExportRef to ${named}`,
  };
}
