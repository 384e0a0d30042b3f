/**
 * Waiting for the `Ready` condition of a DependencyRule or a Lock, as a
 * tenant or a provider watches it after applying one:
 * {@linkcode waitForReadyCondition} waits until it has a given status and
 * reason for the object's current generation (a status without
 * `observedGeneration` counts as current), and returns it, so that the
 * caller can check what it says. On a timeout the error quotes the last
 * status read. For a rule only, see also `waitForRuleReady` in
 * `rule_status.ts`, which needs `observedGeneration`.
 *
 * ```ts
 * import { kcpTest } from "./mod.ts";
 * import { waitForReadyCondition } from "./ready_condition.ts";
 *
 * kcpTest("a Lock is enforced", async (kcp, step) => {
 *   await step("wait", async () => {
 *     const ready = await waitForReadyCondition(kcp, {
 *       workspace: "root:consumers:c1",
 *       resource: "lock",
 *       name: "prod",
 *       namespace: "team-a",
 *     }, { status: "True", reason: "Enforced" });
 *     console.log(ready.message);
 *   });
 * });
 * ```
 *
 * @module
 */
import type { KcpApi } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";

/** A status condition as kubectl prints it. */
export interface StatusCondition {
  /** `Ready`, ... */
  type: string;
  /** `True` or `False`. */
  status: string;
  /** `Enforced`, `ClusterScopedTarget`, ... */
  reason?: string;
  /** What it says. */
  message?: string;
}

/** The DependencyRule, or the Lock, whose `Ready` condition is waited for. */
export interface ReadyConditionTarget {
  /** The workspace (path) it is in. */
  workspace: string;
  /** Its type as kubectl names it. */
  resource: "dependencyrule" | "lock";
  /** Its name. */
  name: string;
  /** The namespace of a Lock. */
  namespace?: string;
}

/** The `Ready` condition waited for, and how long to wait. */
export interface ReadyConditionWanted {
  /** `True` or `False`. */
  status: string;
  /** The reason it must give. */
  reason: string;
  /** How long to wait. @default {90_000} */
  timeoutMs?: number;
  /** Pause between reads. @default {250} */
  intervalMs?: number;
}

/** A DependencyRule or a Lock as kubectl prints it. */
interface StatusObject {
  metadata: { name: string; namespace?: string; generation?: number };
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: StatusCondition[] };
}

/**
 * Waits until `target` (a DependencyRule, or a Lock in its namespace) shows
 * `Ready` with `want`'s status and reason for its current generation, and
 * returns the condition.
 *
 * @throws {Error} If it does not within the timeout, with the last status.
 */
export async function waitForReadyCondition(
  kcp: KcpApi,
  target: ReadyConditionTarget,
  want: ReadyConditionWanted,
): Promise<StatusCondition> {
  const { workspace } = target;
  const { timeoutMs = 90_000, intervalMs = 250 } = want;
  let last = "no status yet";
  try {
    return await waitFor(
      `${target.resource} ${target.name} in ${workspace} to be Ready=${want.status} (${want.reason})`,
      async () => {
        const object = JSON.parse(
          await kcp.kubectlOk([
            "get",
            target.resource,
            target.name,
            ...(target.namespace === undefined ? [] : ["-n", target.namespace]),
            "-o",
            "json",
          ], { workspace }),
        ) as StatusObject;
        const ready = object.status?.conditions?.find((c) =>
          c.type === "Ready"
        );
        last = JSON.stringify(object.status ?? {});
        const current = (object.status?.observedGeneration ??
          object.metadata.generation) === object.metadata.generation;
        return current && ready?.status === want.status &&
            ready.reason === want.reason
          ? ready
          : undefined;
      },
      { timeoutMs, intervalMs },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last status: ${last}`);
  }
}
