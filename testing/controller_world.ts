/**
 * The world of the controller steps: the network provider three levels
 * deep ({@linkcode ControllerWorld.network}), the compute provider, two
 * consumers, the webhook and controller processes the steps start, stop
 * and replace ({@linkcode withControllerWorld} stops what is left), rules
 * whose dependencies default to the provider of their resource, and what
 * the steps read back: the webhook configuration the controller writes in
 * a provider, a rule's status, a component's failing watches.
 *
 * ```ts
 * import { applyObjects, kcpTest } from "./mod.ts";
 * import {
 *   waitForWebhookConfiguration,
 *   withControllerWorld,
 * } from "./controller_world.ts";
 *
 * kcpTest("a rule installs a configuration", async (kcp, step) => {
 *   await withControllerWorld(async (w) => {
 *     await step("a rule", async () => {
 *       await applyObjects(kcp, w.compute, [
 *         w.rule("vm-vpc", [{ resource: "vpcs", field: ".spec.vpcRef.name" }]),
 *       ]);
 *       await waitForWebhookConfiguration(kcp, w.network, ["vpcs"]);
 *     });
 *   });
 * });
 * ```
 *
 * @module
 */
import {
  type ComponentProcess,
  stopComponents,
  type WebhookProcess,
} from "./components.ts";
import { type NamespacedTarget, targetsOf } from "./expect.ts";
import type { KcpApi } from "./kcp_server.ts";
import {
  type ReadyCondition,
  type RuleRef,
  waitForRuleReady,
} from "./rule_status.ts";
import { dependencyRule, type RuleDependency } from "./rules.ts";
import type { Topology } from "./topology.ts";
import { waitFor } from "./wait.ts";

/** How the controller steps poll kcp for a status: every 200 ms, for 30 s. */
export const STATUS_POLL: Readonly<{ timeoutMs: number; intervalMs: number }> =
  { timeoutMs: 30_000, intervalMs: 200 };

/** The resource of the webhook configurations the controller writes. */
const VWC = "validatingwebhookconfigurations";

/** A dependency of {@linkcode ControllerWorld.rule}: its path may be left out. */
export type ProviderDependency = Omit<RuleDependency, "path"> & {
  /**
   * Workspace path of the provider that exports the type.
   * @default {the world's compute provider for virtualmachines, else its network provider}
   */
  path?: string;
};

/** Options for {@linkcode ControllerWorld.rule}. */
export interface ProviderRuleOptions {
  /** The type that holds the references. @default {"VirtualMachine"} */
  dependent?: "VirtualMachine" | "VPC";
}

/**
 * The controller steps' workspaces and processes. The first step builds
 * the topology and starts the components; later steps replace
 * {@linkcode ControllerWorld.controller} and add replicas to
 * {@linkcode ControllerWorld.others}.
 */
export class ControllerWorld {
  /** The network provider, three levels deep. */
  readonly network = "root:org:team:network";
  /** The compute provider. */
  readonly compute = "root:providers:compute";
  /** The topology, once the first step built it. */
  topo!: Topology;
  /** The webhook, once the first step started it. */
  webhook!: WebhookProcess;
  /** The controller that runs now, if any. */
  controller: ComponentProcess | undefined;
  /** Further controllers (replicas) to stop at the end. */
  readonly others: ComponentProcess[] = [];
  /** The first consumer's path. */
  c1 = "";
  /** The second consumer's path. */
  c2 = "";

  /**
   * A rule named `name` whose dependencies without a path are in the
   * compute provider (virtualmachines) or the network provider (the rest).
   */
  rule(
    name: string,
    dependencies: readonly ProviderDependency[],
    options: ProviderRuleOptions = {},
  ): Record<string, unknown> {
    return dependencyRule(name, {
      dependent: options.dependent ?? "VirtualMachine",
      dependencies: dependencies.map((d) => ({
        ...d,
        path: d.path ??
          (d.resource === "virtualmachines" ? this.compute : this.network),
      })),
    });
  }

  /** The object `name` of `type` in the first consumer's `default` namespace. */
  inC1(type: string, name: string): NamespacedTarget {
    return targetsOf(this.c1, type)("default", name);
  }

  /** The object `name` of `type` in the second consumer's `default` namespace. */
  inC2(type: string, name: string): NamespacedTarget {
    return targetsOf(this.c2, type)("default", name);
  }
}

/**
 * Runs `body` with a new {@linkcode ControllerWorld}, then stops the
 * controllers it left running; when `body` failed, first prints their
 * logs and the webhook's, and stops the webhook too (the last step stops
 * it when all went well).
 */
export async function withControllerWorld(
  body: (world: ControllerWorld) => Promise<void>,
): Promise<void> {
  const world = new ControllerWorld();
  let failed = true;
  try {
    await body(world);
    failed = false;
  } finally {
    await stopComponents([world.controller, ...world.others], {
      showLogs: failed,
    });
    if (failed && world.webhook !== undefined) {
      console.error(
        `--- webhook ---\n${(await world.webhook.log()).slice(-2000)}`,
      );
      await world.webhook.stop();
    }
  }
}

/** The webhook configuration the controller owns in `workspace`, if any. */
export async function webhookConfiguration(
  kcp: KcpApi,
  workspace: string,
): Promise<Record<string, unknown> | undefined> {
  const r = await kcp.kubectl(
    ["get", VWC, "dependency-controller", "-o", "json"],
    { workspace },
  );
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get ${VWC} failed: ${r.stderr}`);
  }
  return JSON.parse(r.stdout);
}

/** The resources a webhook configuration protects, in its order. */
export function protectedResources(
  config: Record<string, unknown> | undefined,
): string[] {
  const webhooks = (config?.webhooks ?? []) as {
    rules?: { resources?: string[] }[];
  }[];
  return webhooks.flatMap((w) =>
    (w.rules ?? []).flatMap((r) => r.resources ?? [])
  );
}

/**
 * Waits until the controller's configuration in `workspace` protects
 * exactly `resources`, in that order (for none: until it is absent), and
 * returns it.
 *
 * @throws {Error} If it does not within 30 s.
 */
export async function waitForWebhookConfiguration(
  kcp: KcpApi,
  workspace: string,
  resources: readonly string[],
): Promise<Record<string, unknown> | undefined> {
  return await waitFor(
    `the webhook configuration in ${workspace} to protect [${resources}]`,
    async () => {
      const config = await webhookConfiguration(kcp, workspace);
      if (resources.length === 0) return config === undefined || undefined;
      return JSON.stringify(protectedResources(config)) ===
          JSON.stringify(resources)
        ? config
        : undefined;
    },
    STATUS_POLL,
  ) as Record<string, unknown> | undefined;
}

/** A condition of a DependencyRule's status. */
export interface RuleCondition extends ReadyCondition {
  /** The generation it was set for. */
  observedGeneration?: number;
}

/** A DependencyRule as kubectl shows it: its generation and status. */
export interface DependencyRuleObject {
  /** Its metadata, of which the steps read the generation. */
  metadata: { generation: number };
  /** Its status, once the controller wrote one. */
  status?: { observedGeneration?: number; conditions?: RuleCondition[] };
}

/** The DependencyRule `rule` as `kubectl get -o json` shows it. */
export async function getDependencyRule(
  kcp: KcpApi,
  rule: RuleRef,
): Promise<DependencyRuleObject> {
  const r = await kcp.kubectlOk(
    ["get", "dependencyrules", rule.name, "-o", "json"],
    { workspace: rule.workspace },
  );
  return JSON.parse(r);
}

/**
 * Waits until the rule's `Ready` condition is `False` with `reason` for
 * its current generation, and returns it.
 *
 * @throws {Error} If it is not within 30 s.
 */
export function waitForRuleNotReady(
  kcp: KcpApi,
  rule: RuleRef,
  reason: string,
): Promise<ReadyCondition> {
  return waitForRuleReady(kcp, rule, {
    ...STATUS_POLL,
    test: (ready) => ready.status === "False" && ready.reason === reason,
    description: `False (${reason})`,
  });
}

/**
 * `dependency_<component>_watches_failing` as the component's /metrics
 * serves it; `NaN` when it does not.
 */
export async function watchesFailing(
  process: Pick<ComponentProcess, "get" | "metricsPort">,
  component: "controller" | "webhook",
): Promise<number> {
  const { text } = await process.get(process.metricsPort, "/metrics");
  const match = new RegExp(
    `^dependency_${component}_watches_failing (\\d+)$`,
    "m",
  ).exec(text);
  return Number(match?.[1] ?? NaN);
}
