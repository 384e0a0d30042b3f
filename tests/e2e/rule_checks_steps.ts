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
  type KcpServer,
  type Step,
  type Topology,
  waitFor,
  type WorldPaths,
} from "../../testing/mod.ts";

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/**
 * A rule in which VirtualMachines refer to the VPCs of the network provider
 * at `network` at `.spec.vpcRef.name`, with overrides.
 */
function vmRuleOf(
  network: string,
  name: string,
  overrides: {
    group?: string;
    exportName?: string;
    dependentResource?: string;
  } = {},
): unknown {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent: {
        apiExportName: "compute.example.com",
        group: "compute.example.com",
        version: "v1alpha1",
        kind: "VirtualMachine",
        resource: overrides.dependentResource ?? "virtualmachines",
      },
      dependencies: [{
        apiExportRef: {
          path: network,
          name: overrides.exportName ?? "network.example.com",
        },
        group: overrides.group ?? "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpcRef.name" },
      }],
    },
  };
}

/** Waits until the rule `name` in `compute` says Ready `want` for its generation. */
async function waitForReadyIn(
  kcp: KcpServer,
  compute: string,
  name: string,
  want: { status: string; reason: string },
): Promise<Condition> {
  return await waitFor(
    `rule ${name} Ready=${want.status} (${want.reason})`,
    async () => {
      const rule = await kcp.request<{
        metadata: { generation: number };
        status?: { observedGeneration?: number; conditions?: Condition[] };
      }>(
        "GET",
        `/clusters/${compute}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules/${name}`,
      );
      const ready = rule.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === want.status && ready.reason === want.reason &&
          rule.status?.observedGeneration === rule.metadata.generation
        ? ready
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  ) as Condition;
}

/** The `group/resource` pairs our configuration in the network provider at `network` protects. */
async function protectedTypesIn(
  kcp: KcpServer,
  network: string,
): Promise<string[]> {
  const r = await kcp.kubectl([
    "get",
    "validatingwebhookconfigurations",
    "dependency-controller",
    "-o",
    "json",
  ], { workspace: network });
  if (r.code !== 0) return [];
  const config = JSON.parse(r.stdout) as {
    webhooks: { rules: { apiGroups: string[]; resources: string[] }[] }[];
  };
  return config.webhooks.flatMap((w) =>
    w.rules.map((rule) => `${rule.apiGroups[0]}/${rule.resources[0]}`)
  );
}

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
  const NETWORK = paths.network;
  const COMPUTE = paths.compute;
  const vmRule = (name: string, overrides?: Parameters<typeof vmRuleOf>[2]) =>
    vmRuleOf(NETWORK, name, overrides);
  const waitForReady = (
    kcp: KcpServer,
    name: string,
    want: { status: string; reason: string },
  ) => waitForReadyIn(kcp, COMPUTE, name, want);
  const protectedTypes = (kcp: KcpServer) => protectedTypesIn(kcp, NETWORK);
  let topo!: Topology;
  await step("topology, webhook and controller start", async () => {
    topo = await buildTopology(kcp, {
      networkPath: NETWORK,
      computePath: COMPUTE,
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
      await applyObjects(kcp, COMPUTE, [
        vmRule("typo-group", { group: "network.exampel.com" }),
      ]);
      const ready = await waitForReady(kcp, "typo-group", {
        status: "False",
        reason: "TypeNotExported",
      });
      assert.equal(
        ready.message,
        `the APIExport network.example.com in ${NETWORK} does not export vpcs.network.exampel.com: it exports subnets.network.example.com (v1alpha1), vpcs.network.example.com (v1alpha1)`,
      );
      // kubectl shows the reason in the printer column.
      const shown = await kcp.kubectlOk(["get", "dependencyrules"], {
        workspace: COMPUTE,
      });
      assert.match(
        shown,
        /^typo-group\s+\S+\s+\S+\s+\S+\s+False\s+TypeNotExported\s/m,
      );
      assert.deepEqual(await protectedTypes(kcp), []);
    },
  );

  await step(
    "a mistyped dependent resource and a wrong export name: TypeNotExported and APIExportNotFound; still no webhook rule",
    async () => {
      await applyObjects(kcp, COMPUTE, [
        vmRule("typo-dependent", { dependentResource: "virtualmachinez" }),
        vmRule("typo-export", { exportName: "network.example.org" }),
      ]);
      const dependent = await waitForReady(kcp, "typo-dependent", {
        status: "False",
        reason: "TypeNotExported",
      });
      assert.equal(
        dependent.message,
        "spec.dependent: the APIExport compute.example.com in the rule's workspace does not export virtualmachinez.compute.example.com: it exports virtualmachines.compute.example.com (v1alpha1), vpcattachments.compute.example.com (v1alpha1)",
      );
      const missing = await waitForReady(kcp, "typo-export", {
        status: "False",
        reason: "APIExportNotFound",
      });
      assert.equal(
        missing.message,
        `there is no APIExport network.example.org in ${NETWORK}, which should serve vpcs.network.example.com`,
      );
      assert.deepEqual(await protectedTypes(kcp), []);
    },
  );

  await step(
    "fixing each rule in place makes it Enforced, and the protection real",
    async () => {
      await applyObjects(kcp, COMPUTE, [
        vmRule("typo-group"),
        vmRule("typo-dependent"),
        vmRule("typo-export"),
      ]);
      for (const name of ["typo-group", "typo-dependent", "typo-export"]) {
        const ready = await waitForReady(kcp, name, {
          status: "True",
          reason: "Enforced",
        });
        assert.doesNotMatch(ready.message, /not checked/);
      }
      assert.deepEqual(await protectedTypes(kcp), [
        "network.example.com/vpcs",
      ]);
      const c1 = topo.consumers[0]!.path;
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
      await applyObjects(kcp, COMPUTE, [
        dependencyRule("typo-field", {
          dependencies: [{
            path: NETWORK,
            resource: "subnets",
            field: ".spec.nic[*].subnetRef.name",
          }],
        }),
      ]);
      const ready = await waitForReady(kcp, "typo-field", {
        status: "False",
        reason: "FieldNotInSchema",
      });
      assert.equal(
        ready.message,
        "spec.dependencies[0].fieldRef.path: .spec.nic: no such field; did you mean .spec.nics[*].subnetRef.name?",
      );
      const shown = await kcp.kubectlOk(["get", "dependencyrules"], {
        workspace: COMPUTE,
      });
      assert.match(
        shown,
        /^typo-field\s+\S+\s+\S+\s+\S+\s+False\s+FieldNotInSchema\s/m,
      );
      // Settled with Ready=False FieldNotInSchema: installed, yet not enforced.
      assert.deepEqual((await protectedTypes(kcp)).sort(), [
        "network.example.com/subnets",
        "network.example.com/vpcs",
      ]);
      const c1 = topo.consumers[0]!.path;
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
      await applyObjects(kcp, COMPUTE, [
        dependencyRule("typo-field", {
          dependencies: [{
            path: NETWORK,
            resource: "subnets",
            field: ".spec.nics[*].subnetRef.name",
          }],
        }),
      ]);
      const ready = await waitForReady(kcp, "typo-field", {
        status: "True",
        reason: "Enforced",
      });
      assert.equal(
        ready.message,
        "deleting subnets.network.example.com is denied while a VirtualMachine in the same workspace refers to it",
      );
      const c1 = topo.consumers[0]!.path;
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
          topo.depCtrl.path,
          NETWORK,
          COMPUTE,
          topo.consumers[0]!.path,
        ],
        minimum: { rules: 4 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${COMPUTE}/typo-dependent`,
        `${COMPUTE}/typo-export`,
        `${COMPUTE}/typo-field`,
        `${COMPUTE}/typo-group`,
      ]);
    },
  );
}
