/**
 * Rules checked against what their APIExports serve, on a real kcp: a
 * mistyped protected group, a mistyped dependent resource and a wrong export
 * name each give `Ready=False` with the reason that says so and no webhook
 * rule for the type that does not exist; fixing the typo in place makes the
 * rule `Enforced` and the protection real. A field path the dependent's
 * schema does not have gives `FieldNotInSchema` with the nearest path (its
 * type stays in the configuration, and nothing is protected through it);
 * fixed in place, the rule is `Enforced` and denies the delete. The
 * controller reads the exports with the RBAC `manifests/kcp/system-admin`
 * grants it, nothing more.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  applySystemAdminOverlay,
  assertStatusTruth,
  buildTopology,
  type ComponentWorld,
  dependencyRule,
  type Step,
  waitFor,
  type WorldPaths,
} from "../../testing/mod.ts";
import { ruleChecksWorld } from "../../testing/rule_checks_world.ts";

/**
 * The steps of "rule checks: a type its APIExport does not serve is reported
 * and never protected; fixing it in place enforces the rule", in the world
 * under `paths`, with status truth.
 */
export async function ruleChecksSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = ruleChecksWorld(world, paths);
  await step("topology, webhook and controller start", async () => {
    w.topo = await buildTopology(kcp, {
      networkPath: w.network,
      computePath: w.compute,
      consumerPaths: [paths.consumer("c1")],
    });
    await applySystemAdminOverlay(kcp, [
      {
        group: "compute.example.com",
        resources: ["virtualmachines"],
        verbs: ["get", "list"],
      },
      {
        group: "network.example.com",
        resources: ["vpcs", "subnets"],
        verbs: ["get", "list"],
      },
    ]);
    await world.startComponents();
  });

  await step(
    "a mistyped protected group: TypeNotExported, naming the export and what it serves; no webhook rule",
    async () => {
      await applyObjects(kcp, w.compute, [
        w.vmRule("typo-group", { group: "network.exampel.com" }),
      ]);
      const ready = await w.waitForReady("typo-group", {
        status: "False",
        reason: "TypeNotExported",
      });
      assert.equal(
        ready.message,
        `the APIExport network.example.com in ${w.network} does not export vpcs.network.exampel.com: it exports subnets.network.example.com (v1alpha1), vpcs.network.example.com (v1alpha1)`,
      );
      // kubectl shows the reason in the printer column.
      const shown = await kcp.kubectlOk(["get", "dependencyrules"], {
        workspace: w.compute,
      });
      assert.match(
        shown,
        /^typo-group\s+\S+\s+\S+\s+\S+\s+False\s+TypeNotExported\s/m,
      );
      assert.deepEqual(await w.protectedTypes(), []);
    },
  );

  await step(
    "a mistyped dependent resource and a wrong export name: TypeNotExported and APIExportNotFound; still no webhook rule",
    async () => {
      await applyObjects(kcp, w.compute, [
        w.vmRule("typo-dependent", { dependentResource: "virtualmachinez" }),
        w.vmRule("typo-export", { exportName: "network.example.org" }),
      ]);
      const dependent = await w.waitForReady("typo-dependent", {
        status: "False",
        reason: "TypeNotExported",
      });
      assert.equal(
        dependent.message,
        "spec.dependent: the APIExport compute.example.com in the rule's workspace does not export virtualmachinez.compute.example.com: it exports virtualmachines.compute.example.com (v1alpha1), vpcattachments.compute.example.com (v1alpha1)",
      );
      const missing = await w.waitForReady("typo-export", {
        status: "False",
        reason: "APIExportNotFound",
      });
      assert.equal(
        missing.message,
        `there is no APIExport network.example.org in ${w.network}, which should serve vpcs.network.example.com`,
      );
      assert.deepEqual(await w.protectedTypes(), []);
    },
  );

  await step(
    "fixing each rule in place makes it Enforced, and the protection real",
    async () => {
      await applyObjects(kcp, w.compute, [
        w.vmRule("typo-group"),
        w.vmRule("typo-dependent"),
        w.vmRule("typo-export"),
      ]);
      for (const name of ["typo-group", "typo-dependent", "typo-export"]) {
        const ready = await w.waitForReady(name, {
          status: "True",
          reason: "Enforced",
        });
        assert.doesNotMatch(ready.message, /not checked/);
      }
      assert.deepEqual(await w.protectedTypes(), [
        "network.example.com/vpcs",
      ]);
      const c1 = w.topo.consumers[0]!.path;
      await applyObjects(kcp, c1, [
        {
          apiVersion: "network.example.com/v1alpha1",
          kind: "VPC",
          metadata: { name: "vpc-a", namespace: "default" },
          spec: {},
        },
        {
          apiVersion: "compute.example.com/v1alpha1",
          kind: "VirtualMachine",
          metadata: { name: "vm-1", namespace: "default" },
          spec: { vpcRef: { name: "vpc-a" } },
        },
      ]);
      await waitFor("the delete to be denied", async () => {
        const r = await kcp.kubectl(
          ["delete", "vpc", "vpc-a", "-n", "default", "--dry-run=server"],
          { workspace: c1 },
        );
        return /still referenced by VirtualMachine\/vm-1/.test(r.stderr) ||
          undefined;
      }, { timeoutMs: 30_000, intervalMs: 250 });
    },
  );

  await step(
    "a mistyped field path: FieldNotInSchema with the nearest path; the type stays installed and nothing is protected through it",
    async () => {
      await applyObjects(kcp, w.compute, [
        dependencyRule("typo-field", {
          dependencies: [{
            path: w.network,
            resource: "subnets",
            field: ".spec.nic[*].subnetRef.name",
          }],
        }),
      ]);
      const ready = await w.waitForReady("typo-field", {
        status: "False",
        reason: "FieldNotInSchema",
      });
      assert.equal(
        ready.message,
        "spec.dependencies[0].fieldRef.path: .spec.nic: no such field; did you mean .spec.nics[*].subnetRef.name?",
      );
      const shown = await kcp.kubectlOk(["get", "dependencyrules"], {
        workspace: w.compute,
      });
      assert.match(
        shown,
        /^typo-field\s+\S+\s+\S+\s+\S+\s+False\s+FieldNotInSchema\s/m,
      );
      // Settled with Ready=False FieldNotInSchema: installed, yet not enforced.
      assert.deepEqual((await w.protectedTypes()).sort(), [
        "network.example.com/subnets",
        "network.example.com/vpcs",
      ]);
      const c1 = w.topo.consumers[0]!.path;
      await waitFor("subnets to be served", async () => {
        const r = await kcp.kubectl(["get", "subnets", "-A"], {
          workspace: c1,
        });
        return r.code === 0 || undefined;
      });
      await applyObjects(kcp, c1, [
        {
          apiVersion: "network.example.com/v1alpha1",
          kind: "Subnet",
          metadata: { name: "subnet-a", namespace: "default" },
          spec: {},
        },
        {
          apiVersion: "compute.example.com/v1alpha1",
          kind: "VirtualMachine",
          metadata: { name: "vm-2", namespace: "default" },
          spec: { nics: [{ subnetRef: { name: "subnet-a" } }] },
        },
      ]);
      // What the status says: the wrong path finds no reference.
      const r = await kcp.kubectl(
        [
          "delete",
          "subnet",
          "subnet-a",
          "-n",
          "default",
          "--dry-run=server",
        ],
        { workspace: c1 },
      );
      assert.equal(r.code, 0, r.stderr);
    },
  );

  await step(
    "the field path fixed in place: Enforced, and a real delete is denied",
    async () => {
      await applyObjects(kcp, w.compute, [
        dependencyRule("typo-field", {
          dependencies: [{
            path: w.network,
            resource: "subnets",
            field: ".spec.nics[*].subnetRef.name",
          }],
        }),
      ]);
      const ready = await w.waitForReady("typo-field", {
        status: "True",
        reason: "Enforced",
      });
      assert.equal(
        ready.message,
        "deleting subnets.network.example.com is denied while a VirtualMachine in the same workspace refers to it",
      );
      const c1 = w.topo.consumers[0]!.path;
      // The webhook reads rules through its own watch: wait for it.
      await waitFor("the webhook to apply the fixed rule", async () => {
        const r = await kcp.kubectl(
          [
            "delete",
            "subnet",
            "subnet-a",
            "-n",
            "default",
            "--dry-run=server",
          ],
          { workspace: c1 },
        );
        return r.code !== 0 || undefined;
      }, { timeoutMs: 30_000, intervalMs: 250 });
      const denied = await kcp.kubectl(
        ["delete", "subnet", "subnet-a", "-n", "default"],
        { workspace: c1 },
      );
      assert.notEqual(denied.code, 0);
      assert.match(
        denied.stderr,
        /still referenced by VirtualMachine\/vm-2 \(\.spec\.nics\[0\]\.subnetRef\.name\)/,
      );
      await kcp.kubectlOk(["get", "subnet", "subnet-a", "-n", "default"], {
        workspace: c1,
      });
    },
  );

  await step(
    "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
    async () => {
      // The four rules fixed in place, none mistyped any more.
      const truth = await assertStatusTruth(kcp, {
        workspaces: [
          w.topo.depCtrl.path,
          w.network,
          w.compute,
          w.topo.consumers[0]!.path,
        ],
        minimum: { rules: 4 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${w.compute}/typo-dependent`,
        `${w.compute}/typo-export`,
        `${w.compute}/typo-field`,
        `${w.compute}/typo-group`,
      ]);
    },
  );
}
