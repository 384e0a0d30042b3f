/**
 * The world of the rule-checks e2e suite: the test topology under a prefix,
 * where rules are checked against what their APIExports serve. Here: the
 * rule in which VirtualMachines refer to VPCs, written with the typos the
 * suite makes ({@linkcode vmRuleWith}), the wait for a rule's `Ready` in the
 * compute provider, and the types the webhook's configuration in the network
 * provider protects ({@linkcode protectedTypes}).
 *
 * ```ts
 * import { componentTest, worldPaths } from "./mod.ts";
 * import { ruleChecksWorld } from "./rule_checks_world.ts";
 *
 * componentTest("rule checks", {}, async (world, step) => {
 *   const w = ruleChecksWorld(world, worldPaths("root:checks"));
 *   await step("a mistyped group", async () => {
 *     console.log(w.vmRule("typo", { group: "network.exampel.com" }));
 *     const ready = await w.waitForReady("typo", {
 *       status: "False",
 *       reason: "TypeNotExported",
 *     });
 *     console.log(ready.message, await w.protectedTypes());
 *   });
 * });
 * ```
 *
 * @module
 */
import type { ComponentWorld, WorldPaths } from "./component_suite.ts";
import type { KcpApi } from "./kcp_server.ts";
import { type ReadyCondition, waitForRuleReady } from "./rule_status.ts";
import { dependencyRule, RULE_DEPENDENTS } from "./rules.ts";
import type { Topology } from "./topology.ts";

/** What {@linkcode vmRuleWith} writes otherwise than right. */
export interface VmRuleOverrides {
  /** The protected type's API group. @default {"network.example.com"} */
  group?: string;
  /** The protected type's APIExport. @default {"network.example.com"} */
  exportName?: string;
  /** The dependent's resource. @default {"virtualmachines"} */
  dependentResource?: string;
}

/**
 * A rule `name` in which VirtualMachines refer to the VPCs of the network
 * provider at `network` at `.spec.vpcRef.name`, with overrides.
 */
export function vmRuleWith(
  network: string,
  name: string,
  overrides: VmRuleOverrides = {},
): unknown {
  const { group, exportName, dependentResource } = overrides;
  return dependencyRule(name, {
    dependent: dependentResource === undefined
      ? "VirtualMachine"
      : { ...RULE_DEPENDENTS.VirtualMachine, resource: dependentResource },
    dependencies: [{
      path: network,
      resource: "vpcs",
      field: ".spec.vpcRef.name",
      ...(group === undefined ? {} : { group }),
      ...(exportName === undefined ? {} : { exportName }),
    }],
  });
}

/**
 * The `group/resource` pairs our ValidatingWebhookConfiguration in the
 * network provider at `network` protects; none while there is none.
 */
export async function protectedTypes(
  kcp: KcpApi,
  network: string,
): Promise<string[]> {
  const r = await kcp.kubectl([
    "get",
    "validatingwebhookconfigurations",
    "dependency-controller",
    "-o",
    "json",
  ], { workspace: network });
  if (r.code !== 0) return [];
  const config = JSON.parse(r.stdout) as {
    webhooks: { rules: { apiGroups: string[]; resources: string[] }[] }[];
  };
  return config.webhooks.flatMap((w) =>
    w.rules.map((rule) => `${rule.apiGroups[0]}/${rule.resources[0]}`)
  );
}

/** A `Ready` condition to wait for: its status and reason. */
export interface ReadyWanted {
  /** `True` or `False`. */
  status: string;
  /** `Enforced`, `TypeNotExported`, ... */
  reason: string;
}

/** What the rule-checks suite acts on, from {@linkcode ruleChecksWorld}. */
export interface RuleChecksWorld {
  /** The network provider, whose exports the rules name. */
  readonly network: string;
  /** The compute provider, which holds the rules. */
  readonly compute: string;
  /**
   * The topology, once the first step has built it.
   *
   * @throws {Error} If read before.
   */
  topo: Topology;
  /** {@linkcode vmRuleWith} for the world's network provider. */
  vmRule(name: string, overrides?: VmRuleOverrides): unknown;
  /**
   * Waits until the rule `name` in the compute provider says `Ready` as
   * wanted for its generation, and returns the condition.
   */
  waitForReady(name: string, want: ReadyWanted): Promise<ReadyCondition>;
  /** {@linkcode protectedTypes} in the world's network provider. */
  protectedTypes(): Promise<string[]>;
}

/** The rule-checks world under `paths`, on the kcp of `world`. */
export function ruleChecksWorld(
  world: ComponentWorld,
  paths: WorldPaths,
): RuleChecksWorld {
  const { kcp } = world;
  const { network, compute } = paths;
  let topo: Topology | undefined;
  return {
    network,
    compute,
    get topo(): Topology {
      if (topo === undefined) throw new Error("the topology is not built yet");
      return topo;
    },
    set topo(value: Topology) {
      topo = value;
    },
    vmRule: (name, overrides) => vmRuleWith(network, name, overrides),
    waitForReady: (name, want) =>
      waitForRuleReady(kcp, { workspace: compute, name }, {
        test: (ready) =>
          ready.status === want.status && ready.reason === want.reason,
        description: `Ready=${want.status} (${want.reason})`,
      }),
    protectedTypes: () => protectedTypes(kcp, network),
  };
}
