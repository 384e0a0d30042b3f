/**
 * Waiting for a DependencyRule's `Ready` condition, as a provider watches
 * it after applying a rule: {@linkcode waitForRuleReady} until it passes a
 * test for the rule's current generation, {@linkcode waitForRuleEnforced}
 * until it says `True`/`Enforced`.
 *
 * ```ts
 * import { kcpTest, waitForRuleEnforced } from "./mod.ts";
 *
 * kcpTest("a rule is enforced", async (kcp, step) => {
 *   await step("wait", async () => {
 *     const ready = await waitForRuleEnforced(kcp, {
 *       workspace: "root:providers:compute",
 *       name: "vm-vpc",
 *     });
 *     console.log(ready.message);
 *   });
 * });
 * ```
 *
 * @module
 */
import type { KcpApi } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";

/** A rule's `Ready` condition. */
export interface ReadyCondition {
  /** `Ready`. */
  type: string;
  /** `True` or `False`. */
  status: string;
  /** `Enforced`, `InvalidCondition`, ... */
  reason: string;
  /** What it says. */
  message: string;
}

/** A DependencyRule: its workspace (path) and name. */
export interface RuleRef {
  /** The workspace it is in. */
  workspace: string;
  /** Its name. */
  name: string;
}

/** Options for {@linkcode waitForRuleReady}. */
export interface WaitForRuleReadyOptions {
  /** What `Ready` must pass. */
  test: (ready: ReadyCondition) => boolean;
  /** What it is then, for the timeout's message (`Enforced`). */
  description: string;
  /** How long to wait. @default {60_000} */
  timeoutMs?: number;
  /** Pause between reads. @default {250} */
  intervalMs?: number;
}

interface RuleObject {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: ReadyCondition[] };
}

/**
 * Waits until the rule's `Ready` condition passes `options.test` while its
 * status is of the rule's current generation, and returns it.
 *
 * @throws {Error} If it does not within the timeout, with the last `Ready`.
 */
export async function waitForRuleReady(
  kcp: KcpApi,
  rule: RuleRef,
  options: WaitForRuleReadyOptions,
): Promise<ReadyCondition> {
  const { timeoutMs = 60_000, intervalMs = 250 } = options;
  return await waitFor(
    `rule ${rule.workspace}/${rule.name} to be ${options.description}`,
    async () => {
      const object = JSON.parse(
        await kcp.kubectlOk(
          ["get", "dependencyrules", rule.name, "-o", "json"],
          { workspace: rule.workspace },
        ),
      ) as RuleObject;
      const ready = object.status?.conditions?.find((c) => c.type === "Ready");
      if (
        ready !== undefined && options.test(ready) &&
        object.status?.observedGeneration === object.metadata.generation
      ) return ready;
      throw new Error(`Ready is ${JSON.stringify(ready)}`);
    },
    { timeoutMs, intervalMs },
  );
}

/**
 * Waits until the rule is `Ready=True` with reason `Enforced` for its
 * current generation, and returns the condition.
 *
 * @throws {Error} If it is not within the timeout, with the last `Ready`.
 */
export function waitForRuleEnforced(
  kcp: KcpApi,
  rule: RuleRef,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<ReadyCondition> {
  return waitForRuleReady(kcp, rule, {
    ...options,
    test: (ready) => ready.status === "True" && ready.reason === "Enforced",
    description: "Enforced",
  });
}
