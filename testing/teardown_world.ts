/**
 * The world of the teardown steps (seed 003): two consumers with VPCs and
 * VirtualMachines referring to them, each VirtualMachine held by a
 * finalizer ({@linkcode TEARDOWN_HOLD}) that a {@linkcode FinalizerHelper}
 * removes only after recording whether its VPC still exists, watches that
 * record every deletion ({@linkcode watchDeletions}), and the checks of
 * the order they saw.
 *
 * ```ts
 * import { componentTest, worldPaths } from "./mod.ts";
 * import { FinalizerHelper, teardownWorld, watchDeletions } from "./teardown_world.ts";
 *
 * componentTest("a teardown", {}, async (world, step) => {
 *   const { kcp, c1 } = teardownWorld(world, worldPaths("root:teardown"));
 *   await step("delete a namespace", async () => {
 *     const watches = await watchDeletions(kcp, c1);
 *     const helper = new FinalizerHelper(kcp, c1);
 *     await kcp.kubectlOk(["delete", "namespace", "ordered"], { workspace: c1 });
 *     await helper.stop();
 *     console.log(await watches.stopAllDeleted(), helper.releases);
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ComponentWorld, WorldPaths } from "./component_suite.ts";
import type { WebhookProcess } from "./components.ts";
import { dropFinalizers } from "./delete_checks.ts";
import {
  type DeletionRecorder,
  recordDeletions,
  type Seen,
} from "./deletion_order.ts";
import type { KcpApi, KcpServer } from "./kcp_server.ts";
import { sample } from "./metrics_text.ts";

/** The finalizer that holds the teardown's VirtualMachines and a Lock. */
export const TEARDOWN_HOLD = "teardown.example.com/hold";

/** How many VPC and VirtualMachine pairs {@linkcode vmVpcPairs} makes. */
export const PAIRS = 3;

/** The workspaces of the teardown steps and their kcp. */
export interface TeardownWorld {
  /** The test's kcp. */
  kcp: KcpServer;
  /** The network provider. */
  network: string;
  /** The compute provider, where the rule is. */
  compute: string;
  /** The consumer whose namespace `ordered` is deleted. */
  c1: string;
  /** The consumer deleted as a whole workspace, with Locks. */
  c2: string;
  /** The parent of the consumers, where c2 is deleted. */
  consumers: string;
}

/** The teardown's world under `paths` (it deletes `<prefix>:consumers:c2`). */
export function teardownWorld(
  world: ComponentWorld,
  paths: WorldPaths,
): TeardownWorld {
  return {
    kcp: world.kcp,
    network: paths.network,
    compute: paths.compute,
    c1: paths.consumer("c1"),
    c2: paths.consumer("c2"),
    consumers: `${paths.prefix}:consumers`,
  };
}

/**
 * Watches for deleted VPCs and VirtualMachines in `workspace` (all
 * namespaces), and resolves once kcp answered the watches.
 * {@linkcode DeletionRecorder.stopAllDeleted} returns what they saw.
 */
export function watchDeletions(
  kcp: KcpApi,
  workspace: string,
): Promise<DeletionRecorder> {
  return recordDeletions(kcp, {
    workspace,
    types: [
      {
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        kind: "VPC",
      },
      {
        group: "compute.example.com",
        version: "v1alpha1",
        resource: "virtualmachines",
        kind: "VirtualMachine",
      },
    ],
  });
}

/** What the finalizer helper saw when it let a VirtualMachine go. */
export interface Release {
  /** The VirtualMachine's name. */
  vm: string;
  /** Whether the VPC the VirtualMachine refers to still existed then. */
  vpcExisted: boolean;
  /** When (`performance.now()`). */
  at: number;
}

/**
 * Lets terminating VirtualMachines in `workspace` go one by one, each only
 * after recording whether the VPC it refers to still exists.
 */
export class FinalizerHelper {
  /** Each VirtualMachine let go, recorded once, in the order let go. */
  readonly releases: Release[] = [];
  /** `<namespace>/<name>` of each VirtualMachine recorded in `releases`. */
  readonly #recorded = new Set<string>();
  #running = true;
  readonly #done: Promise<void>;

  /** Starts letting go what `workspace` holds by {@linkcode TEARDOWN_HOLD}. */
  constructor(kcp: KcpApi, workspace: string) {
    this.#done = this.#run(kcp, workspace);
  }

  async #run(kcp: KcpApi, workspace: string): Promise<void> {
    while (this.#running) {
      const vms = await heldTerminating<{ vpcRef: { name: string } }>(kcp, {
        workspace,
        resource: "virtualmachines",
      });
      for (const { metadata: { name, namespace }, spec } of vms) {
        // Recorded once, when first let go: a patch that failed (a busy
        // kcp) is sent again at the next round, not recorded again.
        const key = `${namespace}/${name}`;
        if (!this.#recorded.has(key)) {
          const vpcExisted = await vpcExists(kcp, {
            workspace,
            namespace,
            name: spec.vpcRef.name,
          });
          this.#recorded.add(key);
          this.releases.push({ vm: name, vpcExisted, at: performance.now() });
        }
        await dropFinalizers(kcp, {
          workspace,
          type: "virtualmachine",
          namespace,
          name,
        });
      }
      await this.#releaseLocks(kcp, workspace);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /**
   * Lets terminating Locks held by {@linkcode TEARDOWN_HOLD} go once the
   * object they lock is gone: so the Lock surely exists while kcp deletes
   * that object.
   */
  async #releaseLocks(kcp: KcpApi, workspace: string): Promise<void> {
    const locks = await heldTerminating<
      { target: { resource: string; name: string } }
    >(kcp, { workspace, resource: "locks" });
    for (const { metadata: { name, namespace }, spec: { target } } of locks) {
      const found = await kcp.kubectl([
        "get",
        target.resource,
        target.name,
        "-n",
        namespace,
        "-o",
        "name",
      ], { workspace });
      if (!/NotFound/.test(found.stderr)) continue;
      this.lockReleases.push(name);
      this.lockReleasedAt = performance.now();
      await dropFinalizers(kcp, { workspace, type: "lock", namespace, name });
    }
  }

  /** Locks let go, each after the object it locked was gone. */
  readonly lockReleases: string[] = [];
  /** When the last Lock was let go (`performance.now()`). */
  lockReleasedAt = NaN;

  /** Stops the helper. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.#done;
  }
}

/** An object being deleted that {@linkcode TEARDOWN_HOLD} still holds. */
interface HeldObject<Spec> {
  metadata: { name: string; namespace: string };
  spec: Spec;
}

/**
 * The objects of `resource` in every namespace of `workspace` that are
 * being deleted and carry {@linkcode TEARDOWN_HOLD}; none when the list
 * fails (a busy kcp: the caller asks again at its next round).
 */
async function heldTerminating<Spec>(
  kcp: KcpApi,
  where: { workspace: string; resource: string },
): Promise<HeldObject<Spec>[]> {
  const listed = await kcp.kubectl(
    ["get", where.resource, "-A", "-o", "json"],
    { workspace: where.workspace },
  );
  if (listed.code !== 0) return [];
  const { items } = JSON.parse(listed.stdout) as {
    items: {
      metadata: {
        name: string;
        namespace: string;
        deletionTimestamp?: string;
        finalizers?: string[];
      };
      spec: Spec;
    }[];
  };
  return items.filter(({ metadata }) =>
    metadata.deletionTimestamp !== undefined &&
    (metadata.finalizers ?? []).includes(TEARDOWN_HOLD)
  );
}

/**
 * Whether the VPC exists: only NotFound says it is gone; another failure
 * (a busy kcp) is asked again, up to 10 times, 200 ms apart.
 */
async function vpcExists(
  kcp: KcpApi,
  vpc: { workspace: string; namespace: string; name: string },
): Promise<boolean> {
  let existed = false;
  for (let tries = 0; tries < 10; tries++) {
    const r = await kcp.kubectl(
      ["get", "vpc", vpc.name, "-n", vpc.namespace, "-o", "name"],
      { workspace: vpc.workspace },
    );
    existed = r.code === 0;
    if (existed || /NotFound/.test(r.stderr)) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return existed;
}

/**
 * VPCs `vpc-<i>` and VirtualMachines `vm-<i>` (held by
 * {@linkcode TEARDOWN_HOLD}) referring to them, {@linkcode PAIRS} of each.
 */
export function vmVpcPairs(namespace: string): unknown[] {
  return Array.from({ length: PAIRS }, (_, i) => [
    {
      apiVersion: "network.example.com/v1alpha1",
      kind: "VPC",
      metadata: { name: `vpc-${i}`, namespace },
      spec: {},
    },
    {
      apiVersion: "compute.example.com/v1alpha1",
      kind: "VirtualMachine",
      metadata: { name: `vm-${i}`, namespace, finalizers: [TEARDOWN_HOLD] },
      spec: { vpcRef: { name: `vpc-${i}` } },
    },
  ]).flat();
}

/** The webhook's count of reviews with `outcome`. */
export async function reviewCount(
  webhook: WebhookProcess,
  outcome: string,
): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return sample(
    text,
    `dependency_webhook_admission_reviews_total{outcome="${outcome}"}`,
  ) ?? 0;
}

/**
 * Asserts that each VPC of {@linkcode vmVpcPairs} in `namespace` went after
 * the VirtualMachine that referred to it.
 */
export function assertOrdered(
  deletions: readonly Seen[],
  namespace: string,
): void {
  for (let i = 0; i < PAIRS; i++) {
    const vm = deletions.find((d) =>
      d.kind === "VirtualMachine" && d.namespace === namespace &&
      d.name === `vm-${i}`
    );
    const vpc = deletions.find((d) =>
      d.kind === "VPC" && d.namespace === namespace && d.name === `vpc-${i}`
    );
    assert.ok(vm !== undefined, `the watch saw vm-${i} deleted`);
    assert.ok(vpc !== undefined, `the watch saw vpc-${i} deleted`);
    assert.ok(
      vpc.revision > vm.revision,
      `vpc-${i} (revision ${vpc.revision}) went after vm-${i} (${vm.revision})`,
    );
  }
}

/** Asserts the helper let every VirtualMachine go while its VPC existed. */
export function assertReleasedWithVpc(releases: readonly Release[]): void {
  assert.deepEqual(
    releases.map((r) => r.vm).sort(),
    Array.from({ length: PAIRS }, (_, i) => `vm-${i}`),
  );
  for (const r of releases) {
    assert.ok(r.vpcExisted, `the VPC of ${r.vm} existed when it was let go`);
  }
}
