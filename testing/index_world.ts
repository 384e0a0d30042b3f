/**
 * The world of the dependents index's suites on one kcp
 * (`tests/e2e/dependents_index_test.ts`): the test topology with a few
 * consumers, the rule `vm-vpc` in the compute provider, a VPC `vpc-a` a VM
 * `vm-1` names in the first consumer and the denial of its delete; what
 * the webhook's `/metrics` say of its index, the rule's `Indexed`
 * condition, and the operator's manifest that lets the webhook list the
 * endpoint slices (`manifests/kcp/system-admin/dependents-index`).
 *
 * ```ts
 * import { componentTest, worldPaths } from "./mod.ts";
 * import { applyIndexManifest, indexWorld } from "./index_world.ts";
 *
 * componentTest("the index", {}, async (world, step) => {
 *   const w = indexWorld(world, worldPaths("root:idx"), {
 *     consumers: ["c1"],
 *   });
 *   await step("the grants", async () => {
 *     await applyIndexManifest(w.kcp);
 *   });
 * });
 * ```
 *
 * @module
 */
import type { ComponentWorld, WorldPaths } from "./component_suite.ts";
import type { WebhookProcess } from "./components.ts";
import type { NamespacedTarget } from "./expect.ts";
import type { KcpApi, KcpServer } from "./kcp_server.ts";
import type { ReadyCondition, RuleRef } from "./rule_status.ts";
import { MANIFESTS } from "./topology.ts";
import { waitFor } from "./wait.ts";

/** Options for {@linkcode indexWorld}. */
export interface IndexWorldOptions {
  /** The consumers' names (`c1`, ...), the first one holding `vpc-a`. */
  consumers: readonly string[];
  /** Back-to-back rounds per consumer. @default {0} */
  rounds?: number;
}

/** One world of the dependents index's suites; see {@linkcode indexWorld}. */
export interface IndexWorld {
  /** The test's kcp. */
  readonly kcp: KcpServer;
  /** The network provider. */
  readonly network: string;
  /** The compute provider: the rule `vm-vpc` lives here. */
  readonly compute: string;
  /** The consumers' paths, in the order of the options. */
  readonly consumers: string[];
  /** The first consumer's path. */
  readonly c1: string;
  /** The namespace of the consumers' objects, `team-a`. */
  readonly namespace: string;
  /** Back-to-back rounds per consumer. */
  readonly rounds: number;
  /** The rule `vm-vpc` in the compute provider. */
  readonly rule: RuleRef;
  /** The VPC `vpc-a` in the first consumer's namespace. */
  readonly vpc: NamespacedTarget;
  /** The denial of a delete of {@linkcode vpc} while `vm-1` names it. */
  readonly denial: string;
  /**
   * The running webhook.
   *
   * @throws {Error} If the components were not started.
   */
  webhook(): WebhookProcess;
  /** The running webhook's `/metrics`, as text. */
  metrics(): Promise<string>;
}

/**
 * The world at `paths` of a dependents index suite on `world`'s kcp, with
 * the consumers `options.consumers`. Its components are `world`'s.
 */
export function indexWorld(
  world: ComponentWorld,
  paths: WorldPaths,
  options: IndexWorldOptions,
): IndexWorld {
  const consumers = options.consumers.map((c) => paths.consumer(c));
  const c1 = consumers[0]!;
  const namespace = "team-a";
  const webhook = () => world.components().webhook;
  return {
    kcp: world.kcp,
    network: paths.network,
    compute: paths.compute,
    consumers,
    c1,
    namespace,
    rounds: options.rounds ?? 0,
    rule: { workspace: paths.compute, name: "vm-vpc" },
    vpc: { workspace: c1, type: "vpc", namespace, name: "vpc-a" },
    denial:
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
    webhook,
    async metrics() {
      const response = await fetch(
        `http://127.0.0.1:${webhook().metricsPort}/metrics`,
      );
      return await response.text();
    },
  };
}

/**
 * Applies `manifests/kcp/system-admin/dependents-index` in `system:admin`
 * as `shardAdmin` (through a front-proxy: on every shard), as an operator
 * does for a webhook run with `--dependents-index`.
 */
export async function applyIndexManifest(kcp: KcpApi): Promise<void> {
  await kcp.kubectlOk(
    ["apply", "-k", `${MANIFESTS}kcp/system-admin/dependents-index`],
    { workspace: "system:admin", identity: "shardAdmin" },
  );
}

/** Whether the metrics `text` show a synced feed of the index named `key`. */
export function feedSynced(text: string, key: string): boolean {
  return text.split("\n").some((line) =>
    line.startsWith("dependency_webhook_index_feeds{") &&
    line.includes(`index="${key}"`) &&
    /state="synced"\} [1-9]/.test(line)
  );
}

/** Whether the metrics `text` show a synced feed of any index. */
export function anyFeedSynced(text: string): boolean {
  return /^dependency_webhook_index_feeds\{[^}]*state="synced"\} [1-9]/m
    .test(text);
}

/** The rule's conditions, for its current generation (else none). */
export async function conditionsOf(
  kcp: KcpApi,
  rule: RuleRef,
): Promise<ReadyCondition[]> {
  const object = JSON.parse(
    await kcp.kubectlOk(
      ["get", "dependencyrules", rule.name, "-o", "json"],
      { workspace: rule.workspace },
    ),
  ) as {
    metadata: { generation: number };
    status?: { observedGeneration?: number; conditions?: ReadyCondition[] };
  };
  return object.status?.observedGeneration === object.metadata.generation
    ? object.status?.conditions ?? []
    : [];
}

/**
 * Waits (90 s) until the rule's `Indexed` condition has `reason`, and
 * returns it.
 *
 * @throws {Error} If it does not, with the last `Indexed`.
 */
export function waitForIndexed(
  kcp: KcpApi,
  rule: RuleRef,
  reason: string,
): Promise<ReadyCondition> {
  return waitFor(`rule ${rule.name} to say Indexed ${reason}`, async () => {
    const indexed = (await conditionsOf(kcp, rule)).find((c) =>
      c.type === "Indexed"
    );
    if (indexed?.reason === reason) return indexed;
    throw new Error(`Indexed is ${JSON.stringify(indexed)}`);
  }, { timeoutMs: 90_000, intervalMs: 500 });
}
