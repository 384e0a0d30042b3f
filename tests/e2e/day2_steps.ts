/**
 * Day 2 on a real kcp, as docs/operations.md ("A provider adds a rule for a
 * new type") tells an operator to do it, with the tool the image ships
 * (`controller grants`): a provider adds a rule whose dependent type the
 * webhook may not read yet; the rule says `WebhookCannotRead` and how to
 * grant it; the grant makes it `Enforced` and the delete is denied naming
 * the new dependent; applying `manifests/kcp/system-admin` again keeps the
 * grant (kcp aggregates it into the role the base binds). Also the names
 * people type: `kubectl get dependencies` and the printer columns.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertStatusTruth,
  bindExport,
  buildTopology,
  type ComponentWorld,
  DEP_CTRL_EXPORT,
  dryRunDelete,
  exportedTarget,
  grantWebhookReads,
  lockManifest,
  MANIFESTS,
  type Step,
  vmVpcRule,
  vpcManifest,
  VWC_CLAIM,
  waitFor,
  waitForRuleReady,
  type WorldPaths,
} from "../../testing/mod.ts";
import { day2World } from "../../testing/provider_rules_world.ts";

/**
 * The steps of "day 2: a provider adds a rule for a new type; the shipped
 * grants tool makes it Enforced, and the grant survives the base manifests",
 * in the world under `paths`, ending with status truth. It needs a kcp on
 * which the webhook may not yet read VPCAttachments: no suite that grants
 * them runs before it.
 */
export async function day2Steps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = day2World(paths);
  await step(
    "day 1: the VM rule is granted and Enforced",
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
      await grantWebhookReads(kcp);
      await waitForRuleReady(
        kcp,
        { workspace: w.compute, name: "vm-vpc" },
        { test: (r) => r.reason === "Enforced", description: "Enforced" },
      );
      await waitFor("vpcattachments to be served in c1", async () => {
        const r = await kcp.kubectl(["get", "vpcattachments"], {
          workspace: w.c1,
        });
        return r.code === 0 || undefined;
      });
      await applyObjects(kcp, w.c1, [
        vpcManifest("core"),
        {
          apiVersion: "compute.example.com/v1alpha1",
          kind: "VPCAttachment",
          metadata: { name: "edge" },
          spec: { vpcRef: { name: "core", namespace: "default" } },
        },
      ]);
      // Nothing day 1 knows refers to it.
      await waitFor(
        "the VPC delete to be allowed",
        async () => await dryRunDelete(kcp, w.core) === "" || undefined,
      );
    },
  );

  await step(
    "day 2: the provider applies a rule for VPCAttachments; it says WebhookCannotRead and how to grant, and deletes of VPCs are denied naming the permission",
    async () => {
      await kcp.kubectlOk(["apply", "-f", "-"], {
        workspace: w.compute,
        stdin: w.attachmentRule,
      });
      const { message } = await waitForRuleReady(kcp, {
        workspace: w.compute,
        name: "vpcattachment-vpc",
      }, {
        test: (r) => r.reason === "WebhookCannotRead",
        description: "WebhookCannotRead",
      });
      assert.match(
        message,
        /dependency-webhook may not list vpcattachments\.compute\.example\.com.*controller grants --kubeconfig=<webhook kubeconfig> \| kubectl apply -f -/,
      );
      const error = await waitFor("the delete to be denied", async () => {
        const e = await dryRunDelete(kcp, w.core);
        return e === "" ? undefined : e;
      }) as string;
      assert.match(
        error,
        /may not list vpcattachments\.compute\.example\.com in this workspace \(403 Forbidden\).*controller grants/,
      );
    },
  );

  await step(
    "while VPCAttachments cannot be read, a Lock's denial names the Lock, the VM that refers, and the type it could not list",
    async () => {
      await bindExport(kcp, w.c1, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      await waitFor("Locks to be served in c1", async () => {
        const r = await kcp.kubectl(["get", "locks", "-n", "default"], {
          workspace: w.c1,
        });
        return r.code === 0 || undefined;
      });
      await applyObjects(kcp, w.c1, [
        {
          apiVersion: "compute.example.com/v1alpha1",
          kind: "VirtualMachine",
          metadata: { name: "web", namespace: "default" },
          spec: { vpcRef: { name: "core" } },
        },
        {
          apiVersion: "dependencies.opendefense.cloud/v1alpha1",
          kind: "Lock",
          metadata: { name: "hold", namespace: "default" },
          spec: {
            target: {
              apiExportRef: { path: w.network, name: "network.example.com" },
              group: "network.example.com",
              version: "v1alpha1",
              resource: "vpcs",
              name: "core",
            },
            reason: "incomplete answers say so",
          },
        },
      ]);
      let last = "";
      await waitFor(
        "the denial to name the Lock, the VM and what it could not read",
        async () => {
          last = await dryRunDelete(kcp, w.core);
          return /locked by Lock default\/hold/.test(last) &&
              /still referenced by VirtualMachine\/web \(\.spec\.vpcRef\.name\)/
                .test(last) &&
              /could not list vpcattachments\.compute\.example\.com, which may refer to it too \(the webhook's identity may not list/
                .test(last) || undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      ).catch((error) => {
        throw new Error(`${error}; last denial: ${last}`);
      });
      // Unlocked, the tenant meets the reference and what was not read.
      await kcp.kubectlOk(["delete", "lock", "hold", "-n", "default"], {
        workspace: w.c1,
      });
      await waitFor(
        "the denial to name the VM without the Lock",
        async () => {
          last = await dryRunDelete(kcp, w.core);
          return !/Lock default\/hold/.test(last) &&
              /still referenced by VirtualMachine\/web/.test(last) &&
              /could not list vpcattachments\.compute\.example\.com/.test(
                last,
              ) ||
            undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      await kcp.kubectlOk([
        "delete",
        "virtualmachine",
        "web",
        "-n",
        "default",
      ], {
        workspace: w.c1,
      });
    },
  );

  await step(
    "the operator applies what controller grants prints in system:admin: the rule is Enforced and the delete is denied naming the attachment",
    async () => {
      const role = await grantWebhookReads(kcp);
      assert.match(role, /name: dependency-webhook:reads:rules/);
      assert.match(
        role,
        /dependencies\.opendefense\.cloud\/aggregate-to-dependents-reader: ['"]true['"]/,
      );
      assert.match(role, /- vpcattachments/);
      await waitForRuleReady(kcp, {
        workspace: w.compute,
        name: "vpcattachment-vpc",
      }, { test: (r) => r.reason === "Enforced", description: "Enforced" });
      await waitFor(
        "the denial to name the attachment",
        async () =>
          /still referenced by VPCAttachment\/edge \(\.spec\.vpcRef\.name\)/
            .test(await dryRunDelete(kcp, w.core)) || undefined,
      );
    },
  );

  await step(
    "applying manifests/kcp/system-admin again keeps the grant",
    async () => {
      await kcp.kubectlOk([
        "apply",
        "-k",
        `${MANIFESTS}kcp/system-admin`,
      ], { workspace: "system:admin", identity: "shardAdmin" });
      // kcp's aggregation keeps the reader's rules: the grant is there
      // after the apply, and stays.
      for (let i = 0; i < 3; i++) {
        const rules = await kcp.kubectlOk([
          "get",
          "clusterrole",
          "dependency-webhook:dependents-reader",
          "-o",
          "jsonpath={.rules[*].resources}",
        ], { workspace: "system:admin", identity: "shardAdmin" });
        assert.match(rules, /vpcattachments/);
        assert.match(
          await dryRunDelete(kcp, w.core),
          /still referenced by VPCAttachment\/edge/,
        );
        await new Promise((r) => setTimeout(r, 500));
      }
      await waitForRuleReady(kcp, {
        workspace: w.compute,
        name: "vpcattachment-vpc",
      }, { test: (r) => r.reason === "Enforced", description: "Enforced" });
    },
  );

  await step(
    "kubectl get dependencies lists rules and Locks; the columns say what each protects and why",
    async () => {
      const rules = await kcp.kubectlOk(["get", "dependencies"], {
        workspace: w.compute,
      });
      assert.match(
        rules,
        /dependencyrule\.dependencies\.opendefense\.cloud\/vm-vpc/,
      );
      assert.match(
        rules,
        /dependencyrule\.dependencies\.opendefense\.cloud\/vpcattachment-vpc/,
      );
      const table = await kcp.kubectlOk(["get", "deprule"], {
        workspace: w.compute,
      });
      assert.match(
        table,
        /^NAME\s+DEPENDENT\s+TARGET\s+PATH\s+READY\s+REASON\s+AGE$/m,
      );
      assert.match(
        table,
        /^vpcattachment-vpc\s+vpcattachments\s+vpcs\s+\.spec\.vpcRef\.name\s+True\s+Enforced\s/m,
      );
      await bindExport(kcp, w.c1, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      await waitFor("Locks to be served in c1", async () => {
        const r = await kcp.kubectl(["get", "locks", "-n", "default"], {
          workspace: w.c1,
        });
        return r.code === 0 || undefined;
      });
      await applyObjects(kcp, w.c1, [
        lockManifest("keep", {
          target: exportedTarget(w.network, { resource: "vpcs", name: "core" }),
          reason: "in use by the edge team",
        }),
      ]);
      const locks = await kcp.kubectlOk(
        ["get", "dependencies", "-n", "default"],
        { workspace: w.c1 },
      );
      assert.match(
        locks,
        /lock\.dependencies\.opendefense\.cloud\/keep/,
      );
      await waitFor("the Lock's columns", async () => {
        const out = await kcp.kubectlOk(
          ["get", "deplock", "-n", "default"],
          { workspace: w.c1 },
        );
        return /^NAME\s+TARGET\s+RESOURCE\s+REASON\s+READY\s+STATUS\s+EXPIRES\s+AGE$/m
              .test(out) &&
            /^keep\s+core\s+vpcs\s+in use by the edge team\s+True\s+Enforced\s/m
              .test(out) ||
          undefined;
      }, { timeoutMs: 60_000, intervalMs: 250 });
    },
  );

  await step(
    "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
    async () => {
      const truth = await assertStatusTruth(kcp, {
        workspaces: ["root:dep-ctrl", w.network, w.compute, w.c1],
        minimum: { locks: 1 },
      });
      assert.deepEqual(truth.locksProven, [`${w.c1}/default/keep`]);
      assert.deepEqual(truth.leftBehind, []);
    },
  );
}
