/**
 * References in lists and across namespaces, end to end on a real kcp:
 * `controller.ts` and `webhook.ts` run as separate processes with their own
 * identities, the webhook's reads are granted with `controller grants` after
 * each rule that names new types, and users act with kubectl. Rules read
 * every element of a list (`.spec.nics[*].subnetRef.name`), a namespace
 * beside the name (`fieldRef.namespacePath`), and a cluster-scoped dependent
 * (VPCAttachment) protects namespaced VPCs.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertDeleteAllowed,
  assertDenied,
  assertStatusTruth,
  buildTopology,
  type ComponentWorld,
  dependencyRule,
  grantWebhookReads,
  kubectlDelete,
  namespaceObject,
  objectExists,
  type Step,
  subnetManifest,
  validRules,
  vmManifest,
  vpcManifest,
  waitFor,
  waitForDryRunDelete,
  waitForRuleEnforced,
} from "../../testing/mod.ts";
import {
  nicField,
  referencesWorld,
  vmWithNics,
  VPC_REF_FIELD,
  vpcAttachment,
  waitForValidRules,
} from "../../testing/references_world.ts";

/**
 * The steps of "references: list paths name the element, namespace paths
 * reach across namespaces and from cluster scope", in the world at `root`.
 * First on its kcp: it counts the rules the webhook holds from none.
 */
export async function referencesSteps(
  world: ComponentWorld,
  step: Step,
): Promise<void> {
  const { kcp } = world;
  const w = referencesWorld(world);
  await step(
    "topology, webhook and controller start from the manifests users apply",
    async () => {
      w.topo = await buildTopology(kcp, {
        networkPath: w.network,
        computePath: w.compute,
        consumerPaths: ["root:consumers:c1"],
      });
      w.c1 = w.topo.consumers[0]!.path;
      await waitFor("vpcattachments and subnets to be served", async () => {
        const r = await kcp.kubectl(
          ["get", "vpcattachments,subnets", "-A"],
          { workspace: w.c1 },
        );
        return r.code === 0 || undefined;
      });
      await applyObjects(kcp, w.c1, [
        namespaceObject("team-a"),
        namespaceObject("shared"),
      ]);
      await world.startComponents();
      assert.equal(await validRules(w.webhook), 0);
    },
  );

  await step(
    "a rule with a list path is Enforced, and controller grants grants what it names",
    async () => {
      await applyObjects(kcp, w.compute, [
        dependencyRule("vm-nics", {
          dependencies: [{
            path: w.network,
            resource: "subnets",
            field: ".spec.nics[*].subnetRef.name",
          }],
        }),
      ]);
      await waitForValidRules(w.webhook, 1);
      const stored = await kcp.kubectlOk([
        "get",
        "dependencyrules",
        "vm-nics",
        "-o",
        "jsonpath={.spec.dependencies[0].fieldRef.path}",
      ], { workspace: w.compute });
      assert.equal(stored, ".spec.nics[*].subnetRef.name");
      const role = await grantWebhookReads(kcp);
      // Enforced only once the webhook may read what the rule names.
      await waitForRuleEnforced(
        kcp,
        { workspace: w.compute, name: "vm-nics" },
        {
          timeoutMs: 30_000,
          intervalMs: 200,
        },
      );
      assert.match(
        role,
        /- virtualmachines\n\s+verbs:\n\s+- get\n\s+- list/,
      );
      assert.match(role, /- subnets\n\s+verbs:\n\s+- get\n/);
    },
  );

  await step(
    "a VM with three NICs blocks the delete of each Subnet, naming the NIC's index",
    async () => {
      await applyObjects(kcp, w.c1, [
        subnetManifest("subnet-a", { namespace: "default", cidr: w.cidr }),
        subnetManifest("subnet-b", { namespace: "default", cidr: w.cidr }),
        subnetManifest("subnet-c", { namespace: "default", cidr: w.cidr }),
        subnetManifest("subnet-free", { namespace: "default", cidr: w.cidr }),
        vmWithNics("default", "vm-nics", [
          { name: "subnet-a" },
          { name: "subnet-b" },
          { name: "subnet-c" },
        ]),
      ]);
      for (
        const [index, name] of ["subnet-a", "subnet-b", "subnet-c"]
          .entries()
      ) {
        const target = w.subnet("default", name);
        const denial = new RegExp(
          `still referenced by VirtualMachine/vm-nics \\(${
            nicField(index)
          }\\)$`,
          "m",
        );
        const dryRun = await waitForDryRunDelete(kcp, target, denial);
        assert.match(dryRun, /Conflict/);
        await assertDenied(kcp, target, denial);
      }
      // A subnet no NIC names is not protected (a dry run deletes nothing).
      const free = await kubectlDelete(
        kcp,
        w.subnet("default", "subnet-free"),
        { dryRun: true },
      );
      assert.equal(free.code, 0, free.stderr);
      assert.match(
        free.stdout,
        /"subnet-free" deleted.*\(server dry run\)/,
      );
      assert.ok(await objectExists(kcp, w.subnet("default", "subnet-free")));
    },
  );

  await step(
    "a VM naming one Subnet in two NICs is named once, with both fields",
    async () => {
      await applyObjects(kcp, w.c1, [
        subnetManifest("subnet-d", { namespace: "default", cidr: w.cidr }),
        vmWithNics("default", "vm-twice", [
          { name: "subnet-d" },
          { name: "subnet-free" },
          { name: "subnet-d" },
        ]),
      ]);
      const stderr = await assertDenied(
        kcp,
        w.subnet("default", "subnet-d"),
        new RegExp(
          `still referenced by VirtualMachine/vm-twice \\(${nicField(0)}, ${
            nicField(2)
          }\\)$`,
          "m",
        ),
      );
      assert.doesNotMatch(stderr, /vm-nics|nics\[1\]/);
      await kcp.kubectlOk(
        ["delete", "virtualmachine", "vm-twice", "-n", "default"],
        { workspace: w.c1 },
      );
      await assertDeleteAllowed(kcp, w.subnet("default", "subnet-d"));
    },
  );

  await step(
    "removing one NIC from the VM releases exactly that Subnet",
    async () => {
      await kcp.kubectlOk([
        "patch",
        "virtualmachine",
        "vm-nics",
        "-n",
        "default",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/spec/nics/1"}]',
      ], { workspace: w.c1 });
      const nics = await kcp.kubectlOk([
        "get",
        "virtualmachine",
        "vm-nics",
        "-n",
        "default",
        "-o",
        "jsonpath={.spec.nics[*].subnetRef.name}",
      ], { workspace: w.c1 });
      assert.equal(nics, "subnet-a subnet-c");
      await assertDeleteAllowed(kcp, w.subnet("default", "subnet-b"));
      // The others stay blocked; subnet-c's NIC is now the second one.
      await assertDenied(
        kcp,
        w.subnet("default", "subnet-a"),
        new RegExp(
          `still referenced by VirtualMachine/vm-nics \\(${nicField(0)}\\)$`,
          "m",
        ),
      );
      await assertDenied(
        kcp,
        w.subnet("default", "subnet-c"),
        new RegExp(
          `still referenced by VirtualMachine/vm-nics \\(${nicField(1)}\\)$`,
          "m",
        ),
      );
    },
  );

  await step(
    "with a namespace path, a VM in team-a referring to shared/core blocks its delete, named with its namespace",
    async () => {
      await applyObjects(kcp, w.compute, [
        dependencyRule("vm-vpc", {
          dependencies: [{
            path: w.network,
            resource: "vpcs",
            field: ".spec.vpcRef.name",
            namespacePath: ".spec.vpcRef.namespace",
          }],
        }),
      ]);
      await waitForValidRules(w.webhook, 2);
      const role = await grantWebhookReads(kcp);
      await waitForRuleEnforced(kcp, { workspace: w.compute, name: "vm-vpc" }, {
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      assert.match(role, /- vpcs\n\s+verbs:\n\s+- get\n/);
      await applyObjects(kcp, w.c1, [
        vpcManifest("core", { namespace: "shared", cidr: w.cidr }),
        vpcManifest("core", { namespace: "team-a", cidr: w.cidr }),
        vmManifest("vm-cross", {
          namespace: "team-a",
          spec: {
            vpcRef: { name: "core", namespace: "shared" },
          },
        }),
        vmManifest("vm-local", {
          namespace: "team-a",
          spec: { vpcRef: { name: "core" } },
        }),
        vmManifest("vm-empty", {
          namespace: "team-a",
          spec: {
            vpcRef: { name: "core", namespace: "" },
          },
        }),
      ]);
      const cross = new RegExp(
        `still referenced by VirtualMachine/team-a/vm-cross ${VPC_REF_FIELD}$`,
        "m",
      );
      await waitForDryRunDelete(kcp, w.vpc("shared", "core"), cross);
      const stderr = await assertDenied(kcp, w.vpc("shared", "core"), cross);
      // Neither the VM without a namespace nor the one with an empty
      // namespace refers to shared/core.
      assert.doesNotMatch(stderr, /vm-local|vm-empty/);
    },
  );

  await step(
    "a VM in team-a naming core without a namespace blocks team-a/core, not shared/core once the cross-namespace VM is gone",
    async () => {
      // Same namespace as the VPC: named without it, sorted by name.
      const local = await assertDenied(
        kcp,
        w.vpc("team-a", "core"),
        new RegExp(
          `still referenced by VirtualMachine/vm-empty ${VPC_REF_FIELD}, VirtualMachine/vm-local ${VPC_REF_FIELD}$`,
          "m",
        ),
      );
      assert.doesNotMatch(local, /vm-cross|team-a\//);
      await kcp.kubectlOk(
        ["delete", "virtualmachine", "vm-cross", "-n", "team-a"],
        { workspace: w.c1 },
      );
      await assertDeleteAllowed(kcp, w.vpc("shared", "core"));
      await assertDenied(
        kcp,
        w.vpc("team-a", "core"),
        /still referenced by VirtualMachine\/vm-empty .*VirtualMachine\/vm-local/,
      );
    },
  );

  await step(
    "a namespace path with [*] is read from the same NIC as the name",
    async () => {
      await applyObjects(kcp, w.compute, [
        dependencyRule("vm-nics", {
          dependencies: [{
            path: w.network,
            resource: "subnets",
            field: ".spec.nics[*].subnetRef.name",
            namespacePath: ".spec.nics[*].subnetRef.namespace",
          }],
        }),
      ]);
      await waitForRuleEnforced(
        kcp,
        { workspace: w.compute, name: "vm-nics" },
        {
          timeoutMs: 30_000,
          intervalMs: 200,
        },
      );
      await applyObjects(kcp, w.c1, [
        subnetManifest("net", { namespace: "shared", cidr: w.cidr }),
        subnetManifest("net", { namespace: "team-a", cidr: w.cidr }),
        vmWithNics("team-a", "vm-pair", [
          { name: "net", namespace: "shared" },
          { name: "net" },
        ]),
      ]);
      // Under the old rule, vm-pair's first NIC would name team-a/net;
      // once shared/net is blocked, the webhook reads the new one.
      const shared = new RegExp(
        `still referenced by VirtualMachine/team-a/vm-pair \\(${
          nicField(0)
        }\\)$`,
        "m",
      );
      await waitForDryRunDelete(kcp, w.subnet("shared", "net"), shared);
      await assertDenied(kcp, w.subnet("shared", "net"), shared);
      await assertDenied(
        kcp,
        w.subnet("team-a", "net"),
        new RegExp(
          `still referenced by VirtualMachine/vm-pair \\(${nicField(1)}\\)$`,
          "m",
        ),
      );
      // NICs without a namespace still refer to their VM's own namespace.
      await assertDenied(
        kcp,
        w.subnet("default", "subnet-a"),
        new RegExp(
          `still referenced by VirtualMachine/vm-nics \\(${nicField(0)}\\)$`,
          "m",
        ),
      );
    },
  );

  await step(
    "a cluster-scoped VPCAttachment protects nothing without a namespace path, and a namespaced VPC with one",
    async () => {
      await applyObjects(kcp, w.c1, [
        vpcManifest("edge", { namespace: "shared", cidr: w.cidr }),
        vpcAttachment("att-edge", { name: "edge", namespace: "shared" }),
        vpcAttachment("att-bare", { name: "edge" }),
      ]);
      await applyObjects(kcp, w.compute, [
        dependencyRule("attachment-vpc", {
          dependent: "VPCAttachment",
          dependencies: [{
            path: w.network,
            resource: "vpcs",
            field: ".spec.vpcRef.name",
          }],
        }),
      ]);
      await waitForValidRules(w.webhook, 3);
      const role = await grantWebhookReads(kcp);
      await waitForRuleEnforced(kcp, {
        workspace: w.compute,
        name: "attachment-vpc",
      }, { timeoutMs: 30_000, intervalMs: 200 });
      assert.match(
        role,
        /- vpcattachments\n\s+verbs:\n\s+- get\n\s+- list/,
      );
      // Allowed once the webhook may read attachments (until then it
      // denies, naming the missing permission): the attachment, in no
      // namespace, does not refer to shared/edge.
      const allowed = await waitForDryRunDelete(
        kcp,
        w.vpc("shared", "edge"),
        undefined,
      );
      assert.match(allowed, /"edge" deleted.*\(server dry run\)/);
      assert.ok(await objectExists(kcp, w.vpc("shared", "edge")));

      await kcp.kubectlOk([
        "patch",
        "dependencyrule",
        "attachment-vpc",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/spec/dependencies/0/fieldRef/namespacePath","value":".spec.vpcRef.namespace"}]',
      ], { workspace: w.compute });
      await waitForRuleEnforced(kcp, {
        workspace: w.compute,
        name: "attachment-vpc",
      }, { timeoutMs: 30_000, intervalMs: 200 });
      const denial = new RegExp(
        `still referenced by VPCAttachment/att-edge ${VPC_REF_FIELD}$`,
        "m",
      );
      await waitForDryRunDelete(kcp, w.vpc("shared", "edge"), denial);
      const stderr = await assertDenied(kcp, w.vpc("shared", "edge"), denial);
      // An attachment without a namespace names a VPC in no namespace.
      assert.doesNotMatch(stderr, /att-bare/);
      await kcp.kubectlOk(["delete", "vpcattachment", "att-edge"], {
        workspace: w.c1,
      });
      await assertDeleteAllowed(kcp, w.vpc("shared", "edge"));
    },
  );

  await step(
    "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
    async () => {
      // A list path with a namespace path, a namespace path, and a
      // cluster-scoped dependent naming a namespaced VPC.
      const truth = await assertStatusTruth(kcp, {
        workspaces: [w.topo.depCtrl.path, w.network, w.compute, w.c1],
        minimum: { rules: 3 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${w.compute}/attachment-vpc`,
        `${w.compute}/vm-nics`,
        `${w.compute}/vm-vpc`,
      ]);
    },
  );
}
