/**
 * The other kcp release, in every run: the full suite runs on one kcp
 * release (`KCP_VERSION`, by default the newest this project builds), and
 * this file runs the product on the other one, so that neither can break
 * unseen. On one kcp of that release it covers what the product promises
 * end to end: a reference rule, an owner rule and a Lock, `controller.ts`
 * and `webhook.ts` as their own processes with their own identities and the
 * Deployment's flags, the webhook's reads granted with `controller grants`,
 * denials and an allowed delete through kubectl as tenants act, and status
 * truth: every rule and Lock that says `Enforced` proves it with a denial.
 * `docs/compatibility.md` lists what differs between the releases.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertDeleteAllowed,
  assertDeleteDenied,
  assertStatusTruth,
  componentTest,
  dryRunDelete,
  exportedTarget,
  grantWebhookReads,
  labelPath,
  lockManifest,
  networkObject,
  ownerRule,
  subnetObject,
  subnetOwnedBy,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
} from "../../testing/mod.ts";
import {
  kcpVersionsWorld,
  OTHER_KCP_VERSION as OTHER,
} from "../../testing/kcp_versions_world.ts";

componentTest(
  `kcp ${OTHER}: a reference rule, an owner rule and a Lock deny through kubectl, and every Enforced status proves itself`,
  { kcp: { version: OTHER }, sigterm: true },
  async (world, step) => {
    const { kcp, network, compute, owners, c1, ownerLabel, vpc, build } =
      kcpVersionsWorld(world);
    await step(`the kcp under test is ${OTHER}`, async () => {
      const version = await kcp.request<{ gitVersion: string }>(
        "GET",
        "/version",
        { identity: "shardAdmin" },
      );
      assert.match(version.gitVersion, new RegExp(`\\+kcp-${OTHER}$`));
    });

    await step(
      "providers, an owners provider and a consumer bound to all of them and to dep-ctrl (for Locks); webhook and controller as processes",
      async () => {
        await build();
      },
    );

    await step(
      "a reference rule: a VPC a VM names cannot be deleted until the VM is gone",
      async () => {
        await applyObjects(kcp, compute, [
          vmVpcRule(network),
        ]);
        await grantWebhookReads(kcp, {
          lockTypes: ["vpcs.network.example.com"],
        });
        await waitForRuleEnforced(kcp, {
          workspace: compute,
          name: "vm-vpc",
        });
        await applyObjects(kcp, c1, [
          vpcManifest("vpc-a", { namespace: "team-a" }),
          vmManifest("vm-1", { namespace: "team-a", vpc: "vpc-a" }),
        ]);
        const message =
          "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";
        await waitForDeleteDenial(kcp, vpc("team-a", "vpc-a"), message);
        await assertDeleteDenied(kcp, vpc("team-a", "vpc-a"), message);
        await kcp.kubectlOk(
          ["delete", "virtualmachine", "vm-1", "-n", "team-a"],
          { workspace: c1 },
        );
        await assertDeleteAllowed(kcp, vpc("team-a", "vpc-a"));
      },
    );

    await step(
      "an owner rule: a Subnet cannot be deleted while the Network its label names exists",
      async () => {
        await applyObjects(kcp, owners, [
          ownerRule("subnet-owner", {
            owner: "Network",
            fieldRef: { from: "Target", path: labelPath(ownerLabel) },
          }),
        ]);
        await grantWebhookReads(kcp, {
          lockTypes: ["vpcs.network.example.com"],
        });
        await waitForRuleEnforced(kcp, {
          workspace: owners,
          name: "subnet-owner",
        });
        await applyObjects(kcp, c1, [
          networkObject("team-a", "net-a"),
          subnetObject("team-a", "s-1", { labels: { [ownerLabel]: "net-a" } }),
        ]);
        const subnet = {
          workspace: c1,
          type: "subnet",
          namespace: "team-a",
          name: "s-1",
        };
        const message = subnetOwnedBy("s-1", {
          owner: "Network/net-a",
          field: labelPath(ownerLabel),
        });
        await waitForDeleteDenial(kcp, subnet, message);
        await assertDeleteDenied(kcp, subnet, message);
      },
    );

    await step(
      "a Lock: a VPC is kept with its reason until the Lock is deleted",
      async () => {
        await applyObjects(kcp, c1, [
          vpcManifest("core", { namespace: "team-a" }),
          lockManifest("prod", {
            namespace: "team-a",
            target: exportedTarget(network, {
              resource: "vpcs",
              name: "core",
            }),
            reason: "production VPC",
            operations: ["Delete"],
          }),
        ]);
        const core = vpc("team-a", "core");
        const message =
          'cannot delete vpcs/core: locked by Lock team-a/prod ("production VPC"): deleting the Lock unlocks it; the skip-protection annotation does not';
        await waitForDeleteDenial(kcp, core, message);
        await assertDeleteDenied(kcp, core, message);
      },
    );

    await step(
      "status truth: every Enforced rule and Lock is proven by a denial",
      async () => {
        await assertStatusTruth(kcp, {
          workspaces: [compute, owners, network, c1],
          minimum: { rules: 2, locks: 1 },
        });
      },
    );

    await step("the Lock deleted, the VPC can be deleted", async () => {
      await kcp.kubectlOk(["delete", "lock", "prod", "-n", "team-a"], {
        workspace: c1,
      });
      const core = vpc("team-a", "core");
      // The webhook learns of the deletion from its watch of Locks.
      await waitFor(
        "the unlocked VPC's dry-run delete to pass",
        async () => (await dryRunDelete(kcp, core)) === "" || undefined,
      );
      await assertDeleteAllowed(kcp, core);
    });
  },
);
