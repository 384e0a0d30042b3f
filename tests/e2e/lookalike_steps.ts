/**
 * A tenant's look-alike export on a real kcp: a tenant that binds the
 * dep-ctrl export (to use Locks) creates an APIExport of its own with the
 * same group and resource as the compute provider's VirtualMachines, and a
 * DependencyRule about "its" VirtualMachines naming VPCs through
 * `.metadata.name`. The rule passes every check (its own workspace exports
 * its dependent type), yet it must reach no other tenant: another tenant's
 * VirtualMachines are bound from the provider's export, not the tenant's,
 * so they are not the rule's. The provider's own rule keeps protecting.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  bindExport,
  buildTopology,
  type ComponentWorld,
  createWorkspace,
  DEP_CTRL_EXPORT,
  dependencyRule,
  grantWebhookReads,
  type Step,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  VWC_CLAIM,
  waitFor,
  waitForRuleReady,
  type WorldPaths,
} from "../../testing/mod.ts";
import { lookalikeWorld } from "../../testing/provider_rules_world.ts";

/**
 * The steps of "look-alike exports: a tenant's rule about its own copy of a
 * provider's type reaches no other tenant", in the world under `paths` (the
 * tenant at `<prefix>:tenants:t1`). Its first step needs a kcp on which the
 * webhook may not yet read VirtualMachines: no suite that grants them runs
 * before it.
 */
export async function lookalikeSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = lookalikeWorld(paths);
  await step(
    "the provider's rule is WebhookCannotRead until the webhook's reads are granted, then Enforced",
    async () => {
      await buildTopology(kcp, {
        networkPath: w.network,
        computePath: w.compute,
        consumerPaths: [w.c1],
      });
      await world.startComponents();
      await applyObjects(kcp, w.compute, [
        vmVpcRule(w.network),
      ]);
      // Until the webhook may read what the rule names, every such
      // delete would get 503: the status says so and how to grant it.
      await waitForRuleReady(kcp, { workspace: w.compute, name: "vm-vpc" }, {
        test: (r) => r.reason === "WebhookCannotRead",
        description: "WebhookCannotRead",
        timeoutMs: 90_000,
        intervalMs: 500,
      });
      const message = await kcp.kubectlOk([
        "get",
        "dependencyrule",
        "vm-vpc",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].message}',
      ], { workspace: w.compute });
      assert.match(
        message,
        /dependency-webhook may not list virtualmachines\.compute\.example\.com.*controller grants/,
      );
      await grantWebhookReads(kcp);
      await waitForRuleReady(kcp, { workspace: w.compute, name: "vm-vpc" }, {
        test: (r) => r.reason === "Enforced",
        description: "Enforced",
        timeoutMs: 90_000,
        intervalMs: 500,
      });
    },
  );

  await step(
    "a tenant exports its own virtualmachines.compute.example.com and declares a rule about them: it passes the checks",
    async () => {
      await createWorkspace(kcp, w.tenant);
      for (
        const file of [
          "apiresourceschema-virtualmachines.yaml",
          "apiresourceschema-vpcattachments.yaml",
          "apiexport.yaml",
        ]
      ) {
        await kcp.kubectlOk(["apply", "-f", `${w.computeFixtures}${file}`], {
          workspace: w.tenant,
        });
      }
      await bindExport(kcp, w.tenant, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      await applyObjects(kcp, w.tenant, [
        dependencyRule("look-alike", {
          dependencies: [{
            path: w.network,
            resource: "vpcs",
            field: ".metadata.name",
          }],
        }),
      ]);
      // Its own workspace exports its dependent type, and the webhook
      // may read it: by every check the rule is in effect, for the
      // consumers of the tenant's export (there are none).
      await waitForRuleReady(kcp, { workspace: w.tenant, name: "look-alike" }, {
        test: (r) => r.reason === "Enforced",
        description: "Enforced",
        timeoutMs: 90_000,
        intervalMs: 500,
      });
    },
  );

  await step(
    "another tenant's VPC, named like one of its VMs, is deleted: the look-alike rule does not see VMs bound from the provider",
    async () => {
      await applyObjects(kcp, w.c1, [
        vpcManifest("shared"),
        vmManifest("shared", { vpc: "elsewhere" }),
        vpcManifest("used"),
        vmManifest("user", { vpc: "used" }),
      ]);
      // The provider's rule protects: kcp calls the webhook for VPCs.
      await waitFor("the provider's rule to deny", async () => {
        const r = await kcp.kubectl([
          "delete",
          "vpc",
          "used",
          "--dry-run=server",
        ], { workspace: w.c1 });
        return /still referenced by VirtualMachine\/user \(\.spec\.vpcRef\.name\)/
          .test(r.stderr) || undefined;
      }, { timeoutMs: 60_000, intervalMs: 500 });
      // The look-alike rule's field matches VM "shared", which is not its.
      const r = await kcp.kubectl(["delete", "vpc", "shared"], {
        workspace: w.c1,
      });
      assert.equal(r.code, 0, r.stderr);
      const gone = await kcp.kubectl(["get", "vpc", "shared"], {
        workspace: w.c1,
      });
      assert.match(gone.stderr, /NotFound/);
    },
  );
}
