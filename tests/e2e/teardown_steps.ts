/**
 * Teardown in dependency order (seed 003), on a real kcp: a namespace and a
 * whole workspace holding VPCs and the VirtualMachines that refer to them are
 * deleted, a watch records every deletion, and no VPC disappears while a
 * VirtualMachine referring to it still exists.
 *
 * kcp's own order is not relied on: every VirtualMachine carries a finalizer
 * that a helper removes only after checking that its VPC still exists, so
 * the VirtualMachines linger while kcp deletes the VPCs, and the webhook's
 * denials are what keep the order. In the workspace, Locks (one on the
 * Namespace itself) no longer hold once kcp has marked it for deletion.
 * Denials and teardown times are printed.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertStatusTruth,
  bindExport,
  buildTopology,
  type ComponentWorld,
  DEP_CTRL_EXPORT,
  grantWebhookReads,
  type KcpServer,
  sample,
  type Step,
  vmVpcRule,
  VWC_CLAIM,
  waitFor,
  type WebhookProcess,
  type WorldPaths,
} from "../../testing/mod.ts";

const HOLD = "teardown.example.com/hold";
const PAIRS = 3;

/** One deletion the watch saw. */
interface Deletion {
  kind: "VPC" | "VirtualMachine";
  namespace: string;
  name: string;
  /** kcp's resourceVersion of the DELETED event (one counter per shard). */
  revision: bigint;
}

/**
 * Watches one type in a workspace (all namespaces) and records every
 * DELETED event, until stopped or until the workspace goes.
 */
class DeletionWatch {
  readonly deletions: Deletion[] = [];
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  readonly #client: Deno.HttpClient;

  constructor(
    kcp: KcpServer,
    options: { workspace: string; path: string; kind: Deletion["kind"] },
  ) {
    this.#client = Deno.createHttpClient({ caCerts: [kcp.caPem] });
    const url = `${
      kcp.clusterUrl(options.workspace)
    }${options.path}?watch=true`;
    this.#done = this.#run(url, kcp.identity("admin").token, options.kind);
  }

  async #run(url: string, token: string, kind: Deletion["kind"]) {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      client: this.#client,
      signal: this.#stop.signal,
    });
    assert.equal(response.status, 200, `watch ${url}`);
    try {
      let buffer = "";
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        let newline;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          const event = JSON.parse(line) as {
            type: string;
            object: {
              metadata: {
                name: string;
                namespace: string;
                resourceVersion: string;
              };
            };
          };
          if (event.type !== "DELETED") continue;
          const { name, namespace, resourceVersion } = event.object.metadata;
          this.deletions.push({
            kind,
            name,
            namespace,
            revision: BigInt(resourceVersion),
          });
        }
      }
    } catch (error) {
      // The stream ends when the workspace goes; only a stop is expected
      // to abort it, and what was recorded until then stays.
      if (!this.#stop.signal.aborted) this.ended = error;
    }
  }

  /** Why the stream broke off before it was stopped, if it did. */
  ended: unknown = undefined;

  /** Stops watching; rethrows what made the watch fail. */
  async stop(): Promise<void> {
    this.#stop.abort();
    try {
      await this.#done;
    } finally {
      this.#client.close();
    }
  }
}

/** Watches for deleted VPCs and VirtualMachines in `workspace`. */
function watchDeletions(kcp: KcpServer, workspace: string): DeletionWatch[] {
  return [
    new DeletionWatch(kcp, {
      workspace,
      path: "/apis/network.example.com/v1alpha1/vpcs",
      kind: "VPC",
    }),
    new DeletionWatch(kcp, {
      workspace,
      path: "/apis/compute.example.com/v1alpha1/virtualmachines",
      kind: "VirtualMachine",
    }),
  ];
}

/** What the finalizer helper saw when it let a VirtualMachine go. */
interface Release {
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
class FinalizerHelper {
  readonly releases: Release[] = [];
  /** `<namespace>/<name>` of each VirtualMachine recorded in `releases`. */
  readonly #recorded = new Set<string>();
  #running = true;
  readonly #done: Promise<void>;

  constructor(kcp: KcpServer, workspace: string) {
    this.#done = this.#run(kcp, workspace);
  }

  async #run(kcp: KcpServer, workspace: string): Promise<void> {
    while (this.#running) {
      const listed = await kcp.kubectl(
        ["get", "virtualmachines", "-A", "-o", "json"],
        { workspace },
      );
      if (listed.code === 0) {
        const items = (JSON.parse(listed.stdout) as {
          items: {
            metadata: {
              name: string;
              namespace: string;
              deletionTimestamp?: string;
              finalizers?: string[];
            };
            spec: { vpcRef: { name: string } };
          }[];
        }).items;
        for (const vm of items) {
          const { name, namespace, deletionTimestamp, finalizers } =
            vm.metadata;
          if (deletionTimestamp === undefined) continue;
          if (!(finalizers ?? []).includes(HOLD)) continue;
          // Recorded once, when first let go: a patch that failed (a busy
          // kcp) is sent again at the next round, not recorded again.
          const key = `${namespace}/${name}`;
          if (!this.#recorded.has(key)) {
            // Only NotFound says the VPC is gone; another failure (a busy
            // kcp) is asked again, a few times.
            let vpcExisted = false;
            for (let tries = 0; tries < 10; tries++) {
              const vpc = await kcp.kubectl([
                "get",
                "vpc",
                vm.spec.vpcRef.name,
                "-n",
                namespace,
                "-o",
                "name",
              ], { workspace });
              vpcExisted = vpc.code === 0;
              if (vpcExisted || /NotFound/.test(vpc.stderr)) break;
              await new Promise((resolve) => setTimeout(resolve, 200));
            }
            this.#recorded.add(key);
            this.releases.push({
              vm: name,
              vpcExisted,
              at: performance.now(),
            });
          }
          await kcp.kubectl([
            "patch",
            "virtualmachine",
            name,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
          ], { workspace });
        }
      }
      await this.#releaseLocks(kcp, workspace);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /**
   * Lets terminating Locks held by {@linkcode HOLD} go once the object they
   * lock is gone: so the Lock surely exists while kcp deletes that object.
   */
  async #releaseLocks(kcp: KcpServer, workspace: string): Promise<void> {
    const listed = await kcp.kubectl(["get", "locks", "-A", "-o", "json"], {
      workspace,
    });
    if (listed.code !== 0) return;
    const items = (JSON.parse(listed.stdout) as {
      items: {
        metadata: {
          name: string;
          namespace: string;
          deletionTimestamp?: string;
          finalizers?: string[];
        };
        spec: { target: { resource: string; name: string } };
      }[];
    }).items;
    for (const lock of items) {
      const { name, namespace, deletionTimestamp, finalizers } = lock.metadata;
      if (deletionTimestamp === undefined) continue;
      if (!(finalizers ?? []).includes(HOLD)) continue;
      const target = await kcp.kubectl([
        "get",
        lock.spec.target.resource,
        lock.spec.target.name,
        "-n",
        namespace,
        "-o",
        "name",
      ], { workspace });
      if (!/NotFound/.test(target.stderr)) continue;
      this.lockReleases.push(name);
      this.lockReleasedAt = performance.now();
      await kcp.kubectl([
        "patch",
        "lock",
        name,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
      ], { workspace });
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

/** VPCs `vpc-<i>` and VirtualMachines `vm-<i>` (held by {@linkcode HOLD}) referring to them. */
function pairs(namespace: string): unknown[] {
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
      metadata: { name: `vm-${i}`, namespace, finalizers: [HOLD] },
      spec: { vpcRef: { name: `vpc-${i}` } },
    },
  ]).flat();
}

/** The webhook's count of reviews with `outcome`. */
async function reviews(
  webhook: WebhookProcess,
  outcome: string,
): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return sample(
    text,
    `dependency_webhook_admission_reviews_total{outcome="${outcome}"}`,
  ) ?? 0;
}

/** Asserts that each VPC went after the VirtualMachine that referred to it. */
function assertOrdered(deletions: readonly Deletion[], namespace: string) {
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
function assertReleasedWithVpc(releases: readonly Release[]) {
  assert.deepEqual(
    releases.map((r) => r.vm).sort(),
    Array.from({ length: PAIRS }, (_, i) => `vm-${i}`),
  );
  for (const r of releases) {
    assert.ok(r.vpcExisted, `the VPC of ${r.vm} existed when it was let go`);
  }
}

/**
 * The steps of "teardown: a namespace and a whole workspace go in
 * dependency order, and Locks do not hold a workspace being deleted", in the
 * world under `paths` (it deletes `<prefix>:consumers:c2`), with status
 * truth.
 */
export async function teardownSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const NETWORK = paths.network;
  const COMPUTE = paths.compute;
  const C1 = paths.consumer("c1");
  const C2 = paths.consumer("c2");
  /** The parent of the consumers, where c2 is deleted. */
  const CONSUMERS = `${paths.prefix}:consumers`;
  let webhook!: WebhookProcess;
  await step(
    "two consumers with VPCs and held VirtualMachines referring to them; a Lock on a Namespace in the second",
    async () => {
      await buildTopology(kcp, {
        networkPath: NETWORK,
        computePath: COMPUTE,
        consumerPaths: [C1, C2],
      });
      await bindExport(kcp, C2, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      ({ webhook } = await world.startComponents());
      await applyObjects(kcp, COMPUTE, [
        vmVpcRule(NETWORK),
      ]);
      for (const [ws, ns] of [[C1, "ordered"], [C2, "app"]] as const) {
        await kcp.kubectlOk(["create", "namespace", ns], { workspace: ws });
        await applyObjects(kcp, ws, pairs(ns));
      }
      // A VPC nothing refers to, locked by a Lock that outlives it in
      // the teardown: only the workspace's deletion lets it go.
      await applyObjects(kcp, C2, [{
        apiVersion: "network.example.com/v1alpha1",
        kind: "VPC",
        metadata: { name: "locked", namespace: "app" },
        spec: {},
      }, {
        apiVersion: "dependencies.opendefense.cloud/v1alpha1",
        kind: "Lock",
        metadata: {
          name: "keep-vpc",
          namespace: "app",
          finalizers: [HOLD],
        },
        spec: {
          target: {
            apiExportRef: { path: NETWORK, name: "network.example.com" },
            group: "network.example.com",
            version: "v1alpha1",
            resource: "vpcs",
            name: "locked",
          },
          reason: "the locked VPC stays",
        },
      }]);
      await applyObjects(kcp, C2, [{
        apiVersion: "dependencies.opendefense.cloud/v1alpha1",
        kind: "Lock",
        metadata: { name: "keep-app", namespace: "app" },
        spec: {
          target: {
            group: "",
            version: "v1",
            resource: "namespaces",
            name: "app",
          },
          reason: "the app namespace stays",
        },
      }]);
      // The webhook may now read what the rule and the Locks name (the
      // operator allows Lock targets of type Namespace).
      await grantWebhookReads(kcp, { lockTypes: ["namespaces"] });
      for (const [ws, ns] of [[C1, "ordered"], [C2, "app"]] as const) {
        await waitFor(`vpc-0 in ${ws} to be protected`, async () => {
          const r = await kcp.kubectl([
            "delete",
            "vpc",
            "vpc-0",
            "-n",
            ns,
            "--dry-run=server",
          ], { workspace: ws });
          return /still referenced by VirtualMachine\/vm-0/.test(
            r.stderr,
          ) || undefined;
        }, { timeoutMs: 90_000, intervalMs: 500 });
      }
      await waitFor("the VPC locked to be locked", async () => {
        const r = await kcp.kubectl(
          ["delete", "vpc", "locked", "-n", "app", "--dry-run=server"],
          { workspace: C2 },
        );
        return /locked by Lock app\/keep-vpc/.test(r.stderr) || undefined;
      }, { timeoutMs: 60_000, intervalMs: 500 });
      await waitFor("the Namespace app to be locked", async () => {
        const r = await kcp.kubectl(
          ["delete", "namespace", "app", "--dry-run=server"],
          { workspace: C2 },
        );
        return /locked by Lock app\/keep-app \("the app namespace stays"\)/
          .test(r.stderr) || undefined;
      }, { timeoutMs: 60_000, intervalMs: 500 });
    },
  );

  await step(
    "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
    async () => {
      // Before the teardown steps delete them: the rule, the Lock on a
      // VPC and the Lock on a Namespace. What the check creates (in c1's
      // status-truth namespace) is gone before the watches start.
      const truth = await assertStatusTruth(kcp, {
        workspaces: ["root:dep-ctrl", NETWORK, COMPUTE, C1, C2],
        minimum: { rules: 1, locks: 2 },
      });
      assert.deepEqual(truth.rulesProven, [`${COMPUTE}/vm-vpc`]);
      assert.deepEqual(truth.locksProven.sort(), [
        `${C2}/app/keep-app`,
        `${C2}/app/keep-vpc`,
      ]);
      assert.deepEqual(truth.leftBehind, []);
    },
  );

  await step(
    "deleting a namespace: every VPC goes after its VirtualMachine, denied until then",
    async () => {
      const watches = watchDeletions(kcp, C1);
      const helper = new FinalizerHelper(kcp, C1);
      const denied = await reviews(webhook!, "denied_referenced");
      const started = performance.now();
      await kcp.kubectlOk([
        "delete",
        "namespace",
        "ordered",
        "--wait=false",
      ], {
        workspace: C1,
      });
      await waitFor("namespace ordered to be gone", async () => {
        const r = await kcp.kubectl(["get", "namespace", "ordered"], {
          workspace: C1,
        });
        return /NotFound/.test(r.stderr) || undefined;
      }, { timeoutMs: 300_000, intervalMs: 250 });
      const seconds = (performance.now() - started) / 1000;
      await helper.stop();
      for (const w of watches) await w.stop();
      const deletions = watches.flatMap((w) => w.deletions);
      assertOrdered(deletions, "ordered");
      assertReleasedWithVpc(helper.releases);
      const denials = await reviews(webhook!, "denied_referenced") -
        denied;
      assert.ok(denials > 0, "the webhook denied VPC deletes meanwhile");
      console.log(
        `namespace teardown: ${
          seconds.toFixed(1)
        } s, ${denials} reviews denied (denied_referenced), ${deletions.length} deletions watched`,
      );
    },
  );

  await step(
    "deleting a whole workspace: locked objects and the locked Namespace go, and VPCs still go after their VirtualMachines",
    async () => {
      const watches = watchDeletions(kcp, C2);
      const helper = new FinalizerHelper(kcp, C2);
      const denied = await reviews(webhook!, "denied_referenced");
      const released = await reviews(
        webhook!,
        "allowed_workspace_deleting",
      );
      const started = performance.now();
      await kcp.kubectlOk(["delete", "workspace", "c2", "--wait=false"], {
        workspace: CONSUMERS,
      });
      // Every VirtualMachine is let go by the helper, and then the
      // workspace's content is gone.
      await waitFor(
        "every VirtualMachine in c2 to be let go",
        () => Promise.resolve(helper.releases.length === PAIRS || undefined),
        {
          timeoutMs: 600_000,
          intervalMs: 250,
        },
      );
      await waitFor("workspace c2 to be gone", async () => {
        const r = await kcp.kubectl(["get", "workspace", "c2"], {
          workspace: CONSUMERS,
        });
        return /NotFound/.test(r.stderr) || undefined;
      }, { timeoutMs: 600_000, intervalMs: 500 });
      const seconds = (performance.now() - started) / 1000;
      await helper.stop();
      for (const w of watches) await w.stop();
      const deletions = watches.flatMap((w) => w.deletions);
      assertOrdered(deletions, "app");
      assertReleasedWithVpc(helper.releases);
      const denials = await reviews(webhook!, "denied_referenced") -
        denied;
      const releases = await reviews(
        webhook!,
        "allowed_workspace_deleting",
      ) - released;
      assert.ok(denials > 0, "references still ordered the teardown");
      // The locked VPC was reviewed while its Lock existed, and let go.
      assert.ok(releases > 0, "a Lock let go in the workspace's teardown");
      assert.deepEqual(helper.lockReleases, ["keep-vpc"]);
      const lines = (await webhook!.log()).split("\n").filter((l) =>
        l.includes("delete allowed: kcp is deleting the whole workspace")
      );
      assert.ok(
        lines.some((l) => l.includes('"name":"locked"')),
        `the webhook logged letting the locked VPC go: ${lines.join("\n")}`,
      );
      const after = (at: number) => ((at - started) / 1000).toFixed(1);
      console.log(
        `workspace teardown timeline, s after the delete: VirtualMachines let go at ${
          helper.releases.map((r) => after(r.at)).join(", ")
        }; the Lock at ${after(helper.lockReleasedAt)}; workspace gone at ${
          seconds.toFixed(1)
        }`,
      );
      console.log(
        `workspace teardown: ${
          seconds.toFixed(1)
        } s, ${denials} reviews denied (denied_referenced), ${releases} let go (allowed_workspace_deleting), ${deletions.length} deletions watched`,
      );
    },
  );
}
