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
  type Step,
  vmVpcRule,
  VWC_CLAIM,
  waitFor,
  type WebhookProcess,
  type WorldPaths,
} from "../../testing/mod.ts";
import {
  assertOrdered,
  assertReleasedWithVpc,
  FinalizerHelper,
  PAIRS,
  reviewCount,
  TEARDOWN_HOLD,
  teardownWorld,
  vmVpcPairs,
  watchDeletions,
} from "../../testing/teardown_world.ts";

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
  const { kcp, network, compute, c1, c2, consumers } = teardownWorld(
    world,
    paths,
  );
  let webhook!: WebhookProcess;
  await step(
    "two consumers with VPCs and held VirtualMachines referring to them; a Lock on a Namespace in the second",
    async () => {
      await buildTopology(kcp, {
        networkPath: network,
        computePath: compute,
        consumerPaths: [c1, c2],
      });
      await bindExport(kcp, c2, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      ({ webhook } = await world.startComponents());
      await applyObjects(kcp, compute, [
        vmVpcRule(network),
      ]);
      for (const [ws, ns] of [[c1, "ordered"], [c2, "app"]] as const) {
        await kcp.kubectlOk(["create", "namespace", ns], { workspace: ws });
        await applyObjects(kcp, ws, vmVpcPairs(ns));
      }
      // A VPC nothing refers to, locked by a Lock that outlives it in
      // the teardown: only the workspace's deletion lets it go.
      await applyObjects(kcp, c2, [{
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
          finalizers: [TEARDOWN_HOLD],
        },
        spec: {
          target: {
            apiExportRef: { path: network, name: "network.example.com" },
            group: "network.example.com",
            version: "v1alpha1",
            resource: "vpcs",
            name: "locked",
          },
          reason: "the locked VPC stays",
        },
      }]);
      await applyObjects(kcp, c2, [{
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
      for (const [ws, ns] of [[c1, "ordered"], [c2, "app"]] as const) {
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
          { workspace: c2 },
        );
        return /locked by Lock app\/keep-vpc/.test(r.stderr) || undefined;
      }, { timeoutMs: 60_000, intervalMs: 500 });
      await waitFor("the Namespace app to be locked", async () => {
        const r = await kcp.kubectl(
          ["delete", "namespace", "app", "--dry-run=server"],
          { workspace: c2 },
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
        workspaces: ["root:dep-ctrl", network, compute, c1, c2],
        minimum: { rules: 1, locks: 2 },
      });
      assert.deepEqual(truth.rulesProven, [`${compute}/vm-vpc`]);
      assert.deepEqual(truth.locksProven.sort(), [
        `${c2}/app/keep-app`,
        `${c2}/app/keep-vpc`,
      ]);
      assert.deepEqual(truth.leftBehind, []);
    },
  );

  await step(
    "deleting a namespace: every VPC goes after its VirtualMachine, denied until then",
    async () => {
      const watches = await watchDeletions(kcp, c1);
      const helper = new FinalizerHelper(kcp, c1);
      const denied = await reviewCount(webhook!, "denied_referenced");
      const started = performance.now();
      await kcp.kubectlOk([
        "delete",
        "namespace",
        "ordered",
        "--wait=false",
      ], {
        workspace: c1,
      });
      await waitFor("namespace ordered to be gone", async () => {
        const r = await kcp.kubectl(["get", "namespace", "ordered"], {
          workspace: c1,
        });
        return /NotFound/.test(r.stderr) || undefined;
      }, { timeoutMs: 300_000, intervalMs: 250 });
      const seconds = (performance.now() - started) / 1000;
      await helper.stop();
      const deletions = await watches.stopAllDeleted();
      assertOrdered(deletions, "ordered");
      assertReleasedWithVpc(helper.releases);
      const denials = await reviewCount(webhook!, "denied_referenced") -
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
      const watches = await watchDeletions(kcp, c2);
      const helper = new FinalizerHelper(kcp, c2);
      const denied = await reviewCount(webhook!, "denied_referenced");
      const released = await reviewCount(
        webhook!,
        "allowed_workspace_deleting",
      );
      const started = performance.now();
      await kcp.kubectlOk(["delete", "workspace", "c2", "--wait=false"], {
        workspace: consumers,
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
          workspace: consumers,
        });
        return /NotFound/.test(r.stderr) || undefined;
      }, { timeoutMs: 600_000, intervalMs: 500 });
      const seconds = (performance.now() - started) / 1000;
      await helper.stop();
      const deletions = await watches.stopAllDeleted();
      assertOrdered(deletions, "app");
      assertReleasedWithVpc(helper.releases);
      const denials = await reviewCount(webhook!, "denied_referenced") -
        denied;
      const releases = await reviewCount(
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
