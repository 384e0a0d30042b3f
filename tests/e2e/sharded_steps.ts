/**
 * The product on a sharded kcp, as production runs it: a cache server, the
 * root shard, a second shard (`shard-1`) and kcp-front-proxy in front. The
 * components are their own processes and identities and talk to kcp through
 * the front-proxy (their kubeconfigs name it); only what the design requires
 * goes to a shard itself: the virtual-workspace URLs the dep-ctrl endpoint
 * slice lists (one per shard), and `system:admin` RBAC, applied per shard.
 *
 * dep-ctrl and the network provider are on the root shard, the compute
 * provider (and so the rules) on shard-1, one consumer on each. Protection
 * holds for both consumers, by references and by an owner rule (the owner
 * read through the front-proxy); a Lock on a VirtualMachine puts a configuration
 * in the compute provider on shard-1; RBAC missing on shard-1 denies there
 * (naming the permission) and nowhere else; with shard-1 stopped the root
 * consumer keeps its protection, and once it is back protection returns on
 * shard-1 and a new rule there is enforced, without restarting anything.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertStatusTruth,
  bindExport,
  buildTopology,
  createWorkspace,
  DEP_CTRL_EXPORT,
  dependencyRule,
  grantWebhookReads,
  MANIFESTS,
  type ShardedKcp,
  type Step,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  VWC_CLAIM,
  waitFor,
  waitForRuleEnforced,
  workspaceShard,
} from "../../testing/mod.ts";
import { shardedWorld, shardsOfUrls } from "../../testing/sharded_world.ts";

/**
 * The steps of "sharded: two shards behind kcp-front-proxy, components
 * through the front-proxy; protection on both shards, fail-closed per shard,
 * a shard down and back", on `kcp` (under `root`, beside the harness's
 * workspaces).
 */
export async function shardedSteps(
  kcp: ShardedKcp,
  step: Step,
): Promise<void> {
  const w = shardedWorld(kcp);
  const { front, shards } = w;
  try {
    await step(
      "workspaces placed on both shards; the dep-ctrl endpoint slice lists both shards; the components start through the front-proxy",
      async () => {
        for (const [path, shard] of w.placement) {
          await createWorkspace(front, path, { shard });
        }
        await buildTopology(front, {
          networkPath: w.network,
          computePath: w.compute,
          consumerPaths: [w.onRoot, w.onShard1],
        });
        for (const [path, shard] of w.placement) {
          assert.equal(await workspaceShard(front, path), shard, path);
        }
        // Each shard installs a bound API once and establishes it 5 s
        // later: the consumers bind side by side.
        await Promise.all([w.onRoot, w.onShard1].map(async (consumer) => {
          await bindExport(front, consumer, {
            exportPath: w.depCtrl,
            exportName: DEP_CTRL_EXPORT,
            acceptClaims: [VWC_CLAIM],
          });
          await front.kubectlOk(["create", "namespace", "team"], {
            workspace: consumer,
          });
        }));
        const urls = await waitFor("two dep-ctrl endpoint URLs", async () => {
          const slice = await front.request<
            { status?: { endpoints?: { url: string }[] } }
          >(
            "GET",
            `/clusters/${w.depCtrl}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/${DEP_CTRL_EXPORT}`,
          );
          const found = (slice.status?.endpoints ?? []).map((e) => e.url);
          return found.length === 2 ? found.sort() : undefined;
        }, { timeoutMs: 120_000, intervalMs: 500 }) as string[];
        // Straight at the shards, not at the front-proxy.
        assert.deepEqual(shardsOfUrls(shards, urls), ["root", "shard-1"]);
        assert.ok(urls.every((u) => !u.startsWith(front.baseUrl)));
        await w.startComponents();
        assert.equal(
          await w.metric("dependency_webhook_endpoints"),
          2,
        );
      },
    );

    await step(
      "a rule on shard-1 protects VPCs in consumers on both shards; its status and the network provider's configuration converge",
      async () => {
        await applyObjects(front, w.compute, [
          vmVpcRule(w.network),
        ]);
        // system:admin RBAC, applied on every shard; the rule is
        // Enforced only once the webhook may read what it names.
        await grantWebhookReads(front);
        await waitForRuleEnforced(
          front,
          { workspace: w.compute, name: "vm-vpc" },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        for (const consumer of [w.onRoot, w.onShard1]) {
          await applyObjects(front, consumer, [
            vpcManifest("core", { namespace: "team" }),
            vmManifest("vm-1", { namespace: "team", vpc: "core" }),
          ]);
          const error = await w.waitForDenial(
            consumer,
            ["vpc", "core"],
            /still referenced/,
          );
          assert.match(
            error,
            /cannot delete vpcs\/core: still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\)/,
          );
        }
        assert.deepEqual(await w.configurationUrls(w.network), [
          `${w.webhook().url}/${w.network}`,
        ]);
      },
    );

    await step(
      "an owner rule on shard-1: a VPC whose label names a live VirtualMachine is held on both shards, read through the front-proxy with no list",
      async () => {
        const label = "compute.example.com/vm";
        await applyObjects(front, w.compute, [
          dependencyRule("vm-owns-vpc", {
            dependencies: [{
              path: w.network,
              resource: "vpcs",
              from: "Target",
              field: `.metadata.labels["${label}"]`,
            }],
          }),
        ]);
        await grantWebhookReads(front);
        await waitForRuleEnforced(front, {
          workspace: w.compute,
          name: "vm-owns-vpc",
        }, { timeoutMs: 120_000, intervalMs: 500 });
        for (const consumer of [w.onRoot, w.onShard1]) {
          await applyObjects(front, consumer, [
            {
              apiVersion: "network.example.com/v1alpha1",
              kind: "VPC",
              metadata: {
                name: "owned",
                namespace: "team",
                labels: { [label]: "vm-owner" },
              },
              spec: {},
            },
            {
              apiVersion: "compute.example.com/v1alpha1",
              kind: "VirtualMachine",
              metadata: { name: "vm-owner", namespace: "team" },
              spec: {},
            },
          ]);
          const error = await w.waitForDenial(
            consumer,
            ["vpc", "owned"],
            /belongs to/,
          );
          assert.match(
            error,
            /cannot delete vpcs\/owned: it belongs to VirtualMachine\/vm-owner \(\.metadata\.labels\["compute\.example\.com\/vm"\]\), which still exists/,
          );
        }
        // The owner gone, the VPC goes: in each consumer, only its own owner counts.
        await front.kubectlOk(
          ["delete", "virtualmachine", "vm-owner", "-n", "team"],
          { workspace: w.onRoot },
        );
        await waitFor(
          "the root consumer's VPC to be deletable",
          async () =>
            await w.dryRunDelete(w.onRoot, ["vpc", "owned"]) === "" ||
            undefined,
          { timeoutMs: 60_000, intervalMs: 500 },
        );
        assert.match(
          await w.dryRunDelete(w.onShard1, ["vpc", "owned"]),
          /belongs to VirtualMachine\/vm-owner/,
        );
        await front.kubectlOk(["delete", "vpc", "owned", "-n", "team"], {
          workspace: w.onRoot,
        });
      },
    );

    await step(
      "a Lock on a VirtualMachine puts a configuration in the compute provider on shard-1 and holds only its own object",
      async () => {
        await applyObjects(front, w.onRoot, [{
          apiVersion: "dependencies.opendefense.cloud/v1alpha1",
          kind: "Lock",
          metadata: { name: "keep-vm", namespace: "team" },
          spec: {
            target: {
              apiExportRef: { path: w.compute, name: "compute.example.com" },
              group: "compute.example.com",
              version: "v1alpha1",
              resource: "virtualmachines",
              name: "vm-1",
            },
            reason: "runs the payroll",
          },
        }]);
        await waitFor("the compute provider's configuration", async () => {
          const urls = await w.configurationUrls(w.compute);
          return urls?.includes(`${w.webhook().url}/${w.compute}`) || undefined;
        }, { timeoutMs: 120_000, intervalMs: 500 });
        await grantWebhookReads(front);
        const error = await w.waitForDenial(
          w.onRoot,
          ["virtualmachine", "vm-1"],
          /locked by Lock/,
        );
        assert.match(
          error,
          /locked by Lock team\/keep-vm \("runs the payroll"\)/,
        );
        assert.equal(
          await w.dryRunDelete(w.onShard1, ["virtualmachine", "vm-1"]),
          "",
        );
        await waitFor("the Lock to be Ready", async () => {
          const out = await front.kubectlOk([
            "get",
            "lock",
            "keep-vm",
            "-n",
            "team",
            "-o",
            "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
          ], { workspace: w.onRoot });
          return out === "True" || undefined;
        }, { timeoutMs: 60_000, intervalMs: 500 });
      },
    );

    await step(
      "system:admin RBAC missing on shard-1 denies there, naming the permission, and nowhere else",
      async () => {
        await shards["shard-1"].kubectlOk([
          "delete",
          "clusterrolebinding",
          "dependency-webhook:dependents-reader",
        ], { workspace: "system:admin", identity: "shardAdmin" });
        const error = await w.waitForDenial(
          w.onShard1,
          ["vpc", "core"],
          /403 Forbidden/,
        );
        assert.match(
          error,
          /the webhook's identity may not (get vpcs\.network|list virtualmachines\.compute)\.example\.com in this workspace \(403 Forbidden\): grant/,
        );
        assert.match(
          await w.dryRunDelete(w.onRoot, ["vpc", "core"]),
          /still referenced by VirtualMachine\/vm-1/,
        );
        // Restored as an operator does: the base on that shard, then the grants.
        await shards["shard-1"].kubectlOk(
          ["apply", "-k", `${MANIFESTS}kcp/system-admin`],
          { workspace: "system:admin", identity: "shardAdmin" },
        );
        await grantWebhookReads(front);
        await w.waitForDenial(
          w.onShard1,
          ["vpc", "core"],
          /still referenced by VirtualMachine\/vm-1/,
        );
      },
    );

    await step(
      "shard-1 stopped: the root consumer keeps its protection; back again: protection returns there and a new rule on shard-1 is enforced, without restarting anything",
      async () => {
        const pids = [w.webhook().pid, w.controller().pid];
        await shards["shard-1"].stop();
        const down = await front.kubectl(
          ["delete", "vpc", "core", "-n", "team"],
          { workspace: w.onShard1 },
        );
        assert.notEqual(down.code, 0, "shard-1's consumer is unreachable");
        await waitFor(
          "the webhook to see its shard-1 watch fail",
          async () =>
            (await w.metric("dependency_webhook_watches_failing")) >
              0 || undefined,
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        // The rules from shard-1 stay in force for the root consumer.
        assert.match(
          await w.dryRunDelete(w.onRoot, ["vpc", "core"]),
          /still referenced by VirtualMachine\/vm-1/,
        );
        await shards["shard-1"].start();
        await waitFor(
          "the webhook's watches to recover",
          async () =>
            (await w.metric("dependency_webhook_watches_failing")) ===
              0 || undefined,
          { timeoutMs: 180_000, intervalMs: 500 },
        );
        await w.waitForDenial(
          w.onShard1,
          ["vpc", "core"],
          /still referenced by VirtualMachine\/vm-1/,
        );
        // A rule written on shard-1 after its restart: seen by both components.
        await applyObjects(front, w.compute, [
          dependencyRule("vm-alt-vpc", {
            dependencies: [{
              path: w.network,
              resource: "vpcs",
              field: ".spec.altVpcRef.name",
            }],
          }),
        ]);
        await waitForRuleEnforced(front, {
          workspace: w.compute,
          name: "vm-alt-vpc",
        }, { timeoutMs: 120_000, intervalMs: 500 });
        await applyObjects(
          front,
          w.onShard1,
          [
            vpcManifest("alt", { namespace: "team" }),
            vmManifest("vm-2", { namespace: "team", altVpc: "alt" }),
          ],
        );
        await w.waitForDenial(
          w.onShard1,
          ["vpc", "alt"],
          /still referenced by VirtualMachine\/vm-2 \(\.spec\.altVpcRef\.name\)/,
        );
        assert.deepEqual([w.webhook().pid, w.controller().pid], pids);
        for (const c of [w.webhook(), w.controller()]) {
          assert.equal((await c.get(c.healthPort, "/readyz")).status, 200);
        }
      },
    );

    await step(
      "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers, through the front-proxy on both shards",
      async () => {
        // Each rule (on shard-1) is proven in the consumer on each shard;
        // the Lock in the root shard's consumer.
        const truth = await assertStatusTruth(front, {
          workspaces: w.placement.map(([path]) => path),
          minimum: { rules: 3, locks: 1 },
          everywhere: true,
        });
        assert.deepEqual(truth.rulesProven.sort(), [
          `${w.compute}/vm-alt-vpc`,
          `${w.compute}/vm-owns-vpc`,
          `${w.compute}/vm-vpc`,
        ]);
        assert.deepEqual(truth.locksProven, [`${w.onRoot}/team/keep-vm`]);
        assert.equal(truth.denials, 3 * 2 + 1);
      },
    );
  } finally {
    await w.stop();
  }
}
