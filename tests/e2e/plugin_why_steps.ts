/**
 * `kubectl dependencies why`, end to end on a real kcp: real kubectl runs
 * the plugin as `deno task plugin:install` installs it (with the
 * permissions it is installed with) and a tenant's kubeconfig, against the
 * real webhook and controller and the manifests users apply. It names the
 * VM that refers to a VPC and the field, the Network that owns a Subnet and
 * its switch, the Lock that holds a VM and its reason; with `--recursive` it
 * follows a chain and stops at a cycle of objects; it exits 0 when nothing
 * holds the object and 2 for a missing object or one the tenant may not
 * delete; `-o json` parses.
 * `why namespace/<ns>` names what keeps a namespace the tenant deleted in
 * Terminating, the deletion's duration and each blocker's since; it and
 * `why <object>` name an owner deleted in the foreground (a cluster-scoped
 * Project) that waits for a Subnet a Lock holds, and since when. `why
 * workspace` names every held object of the workspace with its causes
 * (exit 1), and exits 0 in a workspace where nothing is held.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  bindExport,
  bindOwners,
  buildTopology,
  type ComponentWorld,
  DEP_CTRL_EXPORT,
  dependencyRule,
  dropFinalizers,
  dryRunDelete,
  exportedTarget,
  grantWebhookReads,
  labelPath,
  lockManifest,
  namespaceObject,
  networkObject,
  ownerRule,
  ownersProvider,
  projectObject,
  type Step,
  subnetObject,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  VWC_CLAIM,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  type WorldPaths,
} from "../../testing/mod.ts";
import { OWNER_LABEL, PROTECTION_SWITCH } from "../../testing/owner_world.ts";
import {
  FOREGROUND_NS,
  FOREGROUND_PROJECT,
  GONE_NS,
  KUBE_TIME,
  namespaceRbac,
  networkConsumer,
  pluginWhyWorld,
  projectReadRbac,
  runWhy,
  type ScopeJson,
  shown,
  SINCE_PATTERN,
  subnetOwnedByProject,
  tenantRbac,
  VM_LABEL,
  WHY_NS,
  WHY_REASON,
  type WhyJson,
  withFinalizer,
} from "../../testing/plugin_why_world.ts";
import { VPC_CIDR } from "../../testing/webhook_world.ts";

/**
 * The steps of "plugin why: names what holds an object (references, owners,
 * Locks), follows them with --recursive, and exits 0, 1 or 2", in the world
 * under `paths` (its owners provider at `<prefix>:providers:owners`).
 */
export async function pluginWhySteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = pluginWhyWorld(paths);

  await step(
    "topology, an owners provider, the dep-ctrl export bound for Locks, a tenant's RBAC; webhook and controller start",
    async () => {
      await Promise.all([
        buildTopology(kcp, {
          networkPath: w.network,
          computePath: w.compute,
          consumerPaths: [w.c1],
        }),
        ownersProvider(kcp, w.owners),
      ]);
      await Promise.all([
        bindOwners(kcp, { consumer: w.c1, ownersPath: w.owners }),
        bindExport(kcp, w.c1, {
          exportPath: "root:dep-ctrl",
          exportName: DEP_CTRL_EXPORT,
          acceptClaims: [VWC_CLAIM],
        }),
      ]);
      await applyObjects(kcp, w.c1, [
        namespaceObject(WHY_NS),
        ...tenantRbac(kcp.identity("user").user),
      ]);
      w.tenant = await kcp.kubeconfig("user", w.c1);
      await world.startComponents();
    },
  );

  await step(
    "rules: a VM holds the VPC it names; a Network holds the Subnet that names it while its switch is on",
    async () => {
      await applyObjects(kcp, w.compute, [
        vmVpcRule(w.network),
      ]);
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-owner", {
          networkPath: w.network,
          owner: "Network",
          fieldRef: { from: "Target", path: labelPath(OWNER_LABEL) },
          when: PROTECTION_SWITCH,
        }),
      ]);
      await grantWebhookReads(kcp);
      await waitForRuleEnforced(kcp, {
        workspace: w.compute,
        name: "vm-vpc",
      });
      await waitForRuleEnforced(kcp, {
        workspace: w.owners,
        name: "subnet-owner",
      });
    },
  );

  await step(
    "a VPC a VM refers to: exit 1, naming the VM, its field and the rule, in the tree and in JSON",
    async () => {
      await applyObjects(kcp, w.c1, [
        vpcManifest("core", { namespace: WHY_NS, cidr: VPC_CIDR }),
        vmManifest("vm-1", { namespace: WHY_NS, vpc: "core" }),
      ]);
      await waitForDeleteDenial(kcp, {
        workspace: w.c1,
        type: "vpc",
        namespace: WHY_NS,
        name: "core",
      }, /still referenced by VirtualMachine\/vm-1 /);
      const tree = await runWhy(w.tenant, ["vpc/core", "-n", WHY_NS]);
      assert.equal(tree.code, 1, shown(tree));
      assert.match(
        tree.stdout,
        new RegExp(
          `^VPC team-a/core is held by:\n\u2514\u2500\u2500 referenced by VirtualMachine team-a/vm-1 \\(\\.spec\\.vpcRef\\.name; rule [a-z0-9]+/vm-vpc${SINCE_PATTERN}\\)\n$`,
        ),
        shown(tree),
      );
      const json = await runWhy(w.tenant, [
        "vpcs.network.example.com",
        "core",
        "-n",
        WHY_NS,
        "-o",
        "json",
      ]);
      assert.equal(json.code, 1, shown(json));
      const parsed = JSON.parse(json.stdout) as WhyJson;
      assert.equal(parsed.state, "held");
      assert.equal(parsed.held, true);
      assert.deepEqual(parsed.object, {
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        kind: "VPC",
        namespace: WHY_NS,
        name: "core",
      });
      assert.equal(parsed.causes?.length, 1);
      const [cause] = parsed.causes!;
      assert.equal(cause!.type, "Reference");
      assert.deepEqual(cause!.object, {
        group: "compute.example.com",
        version: "v1alpha1",
        resource: "virtualmachines",
        kind: "VirtualMachine",
        namespace: WHY_NS,
        name: "vm-1",
      });
      assert.deepEqual(cause!.fields, [".spec.vpcRef.name"]);
      assert.match((cause!.rules as string[])[0]!, /^[a-z0-9]+\/vm-vpc$/);
      assert.match(String(cause!.since), KUBE_TIME);
      assert.equal(parsed.children, undefined);
    },
  );

  await step(
    "a Subnet whose Network holds it: the owner, the field that names it and the switch that is on",
    async () => {
      await applyObjects(kcp, w.c1, [
        networkObject(WHY_NS, "net-a", { deletionProtection: true }),
        subnetObject(WHY_NS, "s-1", { labels: { [OWNER_LABEL]: "net-a" } }),
      ]);
      await waitForDeleteDenial(kcp, {
        workspace: w.c1,
        type: "subnet",
        namespace: WHY_NS,
        name: "s-1",
      }, /it belongs to Network\/net-a /);
      const tree = await runWhy(w.tenant, ["subnet", "s-1", "-n", WHY_NS]);
      assert.equal(tree.code, 1, shown(tree));
      assert.match(
        tree.stdout,
        new RegExp(
          `^Subnet team-a/s-1 is held by:\n\u2514\u2500\u2500 belongs to Network team-a/net-a \\(\\.metadata\\.labels\\["network\\.example\\.com/owner"\\]; when object\\.spec\\.deletionProtection == true; rule [a-z0-9]+/subnet-owner${SINCE_PATTERN}\\)\n$`,
        ),
        shown(tree),
      );
      const yaml = await runWhy(w.tenant, [
        "subnet/s-1",
        "-n",
        WHY_NS,
        "-o",
        "yaml",
      ]);
      assert.equal(yaml.code, 1, shown(yaml));
      assert.match(
        yaml.stdout,
        /^ {4}when: object\.spec\.deletionProtection == true$/m,
      );
      assert.match(yaml.stdout, /^ {2}- type: Owner$/m);
    },
  );

  await step(
    "a locked VM: the Lock's name and reason",
    async () => {
      await applyObjects(kcp, w.c1, [lockManifest("keep-vm", {
        namespace: WHY_NS,
        target: exportedTarget(w.compute, {
          resource: "virtualmachines",
          name: "vm-1",
        }),
        reason: WHY_REASON,
        operations: ["Delete"],
      })]);
      await waitForDeleteDenial(kcp, {
        workspace: w.c1,
        type: "virtualmachine",
        namespace: WHY_NS,
        name: "vm-1",
      }, /locked by Lock team-a\/keep-vm/);
      const tree = await runWhy(w.tenant, [
        "virtualmachine/vm-1",
        "-n",
        WHY_NS,
      ]);
      assert.equal(tree.code, 1, shown(tree));
      assert.match(
        tree.stdout,
        new RegExp(
          `^VirtualMachine team-a/vm-1 is held by:\n\u2514\u2500\u2500 locked by Lock team-a/keep-vm \\(reason: ${WHY_REASON}${SINCE_PATTERN}\\)\n$`,
        ),
        shown(tree),
      );
      const json = JSON.parse(
        (await runWhy(w.tenant, [
          "virtualmachine/vm-1",
          "-n",
          WHY_NS,
          "-o",
          "json",
        ]))
          .stdout,
      ) as WhyJson;
      const since = json.causes?.[0]?.since;
      assert.match(String(since), KUBE_TIME);
      assert.deepEqual(json.causes, [{
        type: "Lock",
        lock: { namespace: WHY_NS, name: "keep-vm" },
        reason: WHY_REASON,
        since,
      }]);
    },
  );

  await step(
    "--recursive: from the VPC through its VM to the VM's Lock; from the Subnet to a Network the tenant may not delete",
    async () => {
      const chain = await runWhy(w.tenant, [
        "vpc/core",
        "-n",
        WHY_NS,
        "--recursive",
      ]);
      assert.equal(chain.code, 1, shown(chain));
      assert.match(
        chain.stdout,
        new RegExp(
          [
            "^VPC team-a/core is held by:",
            `\u2514\u2500\u2500 referenced by VirtualMachine team-a/vm-1 \\(\\.spec\\.vpcRef\\.name; rule [a-z0-9]+/vm-vpc${SINCE_PATTERN}\\)`,
            `    \u2514\u2500\u2500 locked by Lock team-a/keep-vm \\(reason: ${WHY_REASON}${SINCE_PATTERN}\\)`,
            "$",
          ].join("\n"),
        ),
        shown(chain),
      );
      const json = await runWhy(w.tenant, [
        "vpc/core",
        "-n",
        WHY_NS,
        "-R",
        "-o",
        "json",
      ]);
      assert.equal(json.code, 1, shown(json));
      const parsed = JSON.parse(json.stdout) as WhyJson;
      assert.equal(parsed.children?.length, 1);
      const child = parsed.children![0]!;
      assert.equal(child.object.name, "vm-1");
      assert.equal(child.state, "held");
      assert.deepEqual(child.children, []);
      assert.equal(child.causes?.[0]?.type, "Lock");

      const owned = await runWhy(w.tenant, [
        "subnet/s-1",
        "-n",
        WHY_NS,
        "-R",
        "-o",
        "json",
      ]);
      assert.equal(owned.code, 1, shown(owned));
      const network = (JSON.parse(owned.stdout) as WhyJson).children?.[0];
      assert.equal(network?.object.name, "net-a");
      assert.equal(network?.state, "error");
      assert.match(
        network?.error ?? "",
        /^you may not delete networks\.owners\.example\.com in namespace team-a: /,
      );
      const ownedTree = await runWhy(w.tenant, [
        "subnet/s-1",
        "-n",
        WHY_NS,
        "-R",
      ]);
      assert.match(
        ownedTree.stdout,
        /\n {4}\u2514\u2500\u2500 cannot tell: you may not delete networks\.owners\.example\.com in namespace team-a: /,
        shown(ownedTree),
      );
    },
  );

  await step(
    "nothing holds a VPC no VM names: exit 0, in every output format",
    async () => {
      await applyObjects(kcp, w.c1, [
        vpcManifest("free", { namespace: WHY_NS, cidr: VPC_CIDR }),
      ]);
      const tree = await runWhy(w.tenant, ["vpc/free", "-n", WHY_NS]);
      assert.equal(tree.code, 0, shown(tree));
      assert.equal(
        tree.stdout,
        "VPC team-a/free: nothing holds it, a delete would go through\n",
      );
      const json = await runWhy(w.tenant, [
        "vpc/free",
        "-n",
        WHY_NS,
        "-o",
        "json",
        "-R",
      ]);
      assert.equal(json.code, 0, shown(json));
      assert.deepEqual(JSON.parse(json.stdout), {
        object: {
          group: "network.example.com",
          version: "v1alpha1",
          resource: "vpcs",
          kind: "VPC",
          namespace: WHY_NS,
          name: "free",
        },
        state: "free",
        held: false,
        causes: [],
        children: [],
      });
      for (const output of ["yaml", "dot"]) {
        const r = await runWhy(w.tenant, [
          "vpc/free",
          "-n",
          WHY_NS,
          "-o",
          output,
        ]);
        assert.equal(r.code, 0, shown(r));
      }
      // A dry run deletes nothing.
      await kcp.kubectlOk(["get", "vpc", "free", "-n", WHY_NS], {
        workspace: w.c1,
      });
    },
  );

  await step(
    "a missing object, a type the tenant may not delete, an unknown type: exit 2 with a message, nothing on stdout",
    async () => {
      const cases: [string[], RegExp][] = [
        [
          ["vpc/nope", "-n", WHY_NS],
          /^error: not found: vpcs\.network\.example\.com "nope" in namespace team-a\n$/,
        ],
        [
          ["network/net-a", "-n", WHY_NS, "-o", "json"],
          /^error: you may not delete networks\.owners\.example\.com in namespace team-a: .*forbidden/,
        ],
        [
          ["frobs/x", "-n", WHY_NS],
          /^error: the server doesn't have a resource type "frobs"/,
        ],
      ];
      for (const [args, message] of cases) {
        const r = await runWhy(w.tenant, args);
        assert.equal(r.code, 2, shown(r));
        assert.match(r.stderr, message, shown(r));
        assert.equal(r.stdout, "");
      }
    },
  );

  await step(
    "--recursive stops at a cycle of objects: a VPC that names (by a label) the VM that names it",
    async () => {
      await applyObjects(kcp, w.network, [
        dependencyRule("vpc-vm", {
          dependent: "VPC",
          dependencies: [{
            path: w.compute,
            resource: "virtualmachines",
            field: labelPath(VM_LABEL),
          }],
        }),
      ]);
      await grantWebhookReads(kcp);
      await applyObjects(kcp, w.c1, [
        vpcManifest("loop-vpc", {
          namespace: WHY_NS,
          labels: { [VM_LABEL]: "loop-vm" },
          cidr: VPC_CIDR,
        }),
        vmManifest("loop-vm", { namespace: WHY_NS, vpc: "loop-vpc" }),
      ]);
      await waitForDeleteDenial(kcp, {
        workspace: w.c1,
        type: "virtualmachine",
        namespace: WHY_NS,
        name: "loop-vm",
      }, /still referenced by VPC\/loop-vpc /);
      const r = await runWhy(w.tenant, ["vpc/loop-vpc", "-n", WHY_NS, "-R"]);
      assert.equal(r.code, 1, shown(r));
      assert.match(
        r.stdout,
        new RegExp(
          [
            "^VPC team-a/loop-vpc is held by:",
            `\u2514\u2500\u2500 referenced by VirtualMachine team-a/loop-vm \\(\\.spec\\.vpcRef\\.name; rule [a-z0-9]+/vm-vpc${SINCE_PATTERN}\\)`,
            `    \u2514\u2500\u2500 referenced by VPC team-a/loop-vpc \\(\\.metadata\\.labels\\["example\\.com/vm"\\]; rule [a-z0-9]+/vpc-vm${SINCE_PATTERN}\\) \\(cycle\\)`,
            "$",
          ].join("\n"),
        ),
        shown(r),
      );
      const json = JSON.parse(
        (await runWhy(w.tenant, [
          "vpc/loop-vpc",
          "-n",
          WHY_NS,
          "-R",
          "-o",
          "json",
        ]))
          .stdout,
      ) as WhyJson;
      assert.equal(json.children?.[0]?.children?.[0]?.state, "cycle");
      const dot = await runWhy(w.tenant, [
        "vpc/loop-vpc",
        "-n",
        WHY_NS,
        "-R",
        "-o",
        "dot",
      ]);
      assert.equal(dot.code, 1, shown(dot));
      assert.match(dot.stdout, /^digraph "why" \{/);
      assert.match(
        dot.stdout,
        /"virtualmachines\.compute\.example\.com\/team-a\/loop-vm" -> "vpcs\.network\.example\.com\/team-a\/loop-vpc"/,
      );
      assert.match(
        dot.stdout,
        /"vpcs\.network\.example\.com\/team-a\/loop-vpc" -> "virtualmachines\.compute\.example\.com\/team-a\/loop-vm"/,
      );
      await kcp.kubectlOk(["delete", "dependencyrule", "vpc-vm"], {
        workspace: w.network,
      });
    },
  );

  await step(
    "why namespace/<ns>: a namespace the tenant deleted stays Terminating, held by a VM's reference and a Lock, each with its since, and for how long",
    async () => {
      await applyObjects(kcp, w.c1, [
        namespaceObject(GONE_NS),
        ...namespaceRbac(kcp.identity("user").user),
      ]);
      // Finalizers (a controller's, say) keep the VM and the Lock through
      // the namespace's teardown, so that they go on holding.
      await applyObjects(kcp, w.c1, [
        vpcManifest("core", { namespace: GONE_NS, cidr: VPC_CIDR }),
        withFinalizer(vmManifest("vm-1", { namespace: GONE_NS, vpc: "core" })),
        subnetObject(GONE_NS, "kept"),
        withFinalizer(lockManifest("keep-subnet", {
          namespace: GONE_NS,
          target: exportedTarget(w.network, {
            resource: "subnets",
            name: "kept",
          }),
          reason: WHY_REASON,
          operations: ["Delete"],
        })),
      ]);
      await waitForDeleteDenial(kcp, {
        workspace: w.c1,
        type: "subnet",
        namespace: GONE_NS,
        name: "kept",
      }, /locked by Lock team-gone\/keep-subnet/);
      const before = await runWhy(w.tenant, [`namespace/${GONE_NS}`]);
      assert.equal(before.code, 1, shown(before));
      assert.match(
        before.stdout,
        /^Namespace team-gone: 2 of \d+ objects asked about are held:\n/,
        shown(before),
      );

      await kcp.kubectlOk(["delete", "namespace", GONE_NS, "--wait=false"], {
        identity: "user",
        workspace: w.c1,
      });
      const held = await waitFor(
        "why to name both blockers of the Terminating namespace",
        async () => {
          const r = await runWhy(w.tenant, [
            `namespace/${GONE_NS}`,
            "-o",
            "json",
          ]);
          const report = JSON.parse(r.stdout) as ScopeJson;
          const names = report.objects.map((o) => o.object.name).sort();
          return r.code === 1 && report.scope.deletionTimestamp !== undefined &&
              names.join() === "core,kept"
            ? report
            : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 2_000 },
      );
      const phase = await kcp.kubectlOk(
        ["get", "namespace", GONE_NS, "-o", "jsonpath={.status.phase}"],
        { identity: "user", workspace: w.c1 },
      );
      assert.equal(phase, "Terminating");
      assert.equal(held.scope.kind, "Namespace");
      assert.match(held.scope.deletionTimestamp!, KUBE_TIME);
      const byName = new Map(held.objects.map((o) => [o.object.name, o]));
      const reference = byName.get("core")!.causes![0]!;
      assert.equal(reference.type, "Reference");
      assert.equal((reference.object as { name: string }).name, "vm-1");
      assert.match(String(reference.since), KUBE_TIME);
      const lock = byName.get("kept")!.causes![0]!;
      assert.equal(lock.type, "Lock");
      assert.deepEqual(lock.lock, { namespace: GONE_NS, name: "keep-subnet" });
      assert.match(String(lock.since), KUBE_TIME);

      const tree = await runWhy(w.tenant, [`namespace/${GONE_NS}`]);
      assert.equal(tree.code, 1, shown(tree));
      assert.match(
        tree.stdout,
        new RegExp(
          [
            "^Namespace team-gone is being deleted for \\d+[smhd] \\(since \\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z\\): 2 of \\d+ objects asked about are held:",
            "",
          ].join("\n"),
        ),
        shown(tree),
      );
      assert.match(
        tree.stdout,
        new RegExp(
          `\n {4}\u2514\u2500\u2500 referenced by VirtualMachine team-gone/vm-1 \\(\\.spec\\.vpcRef\\.name; rule [a-z0-9]+/vm-vpc${SINCE_PATTERN}\\)\n$`,
        ),
        shown(tree),
      );
      assert.match(
        tree.stdout,
        new RegExp(
          `\n\u2502   \u2514\u2500\u2500 locked by Lock team-gone/keep-subnet \\(reason: ${WHY_REASON}${SINCE_PATTERN}\\)\n`,
        ),
        shown(tree),
      );
      for (const output of ["yaml", "dot"]) {
        const r = await runWhy(w.tenant, [
          `namespace/${GONE_NS}`,
          "-o",
          output,
        ]);
        assert.equal(r.code, 1, shown(r));
      }

      // The teardown marks the Lock deleted; kept by its finalizer, it still
      // holds (docs/architecture.md, "Until it is gone").
      const lockDeleted = await waitFor(
        "the namespace's teardown to mark Lock keep-subnet deleted",
        async () => {
          const stamp = await kcp.kubectlOk([
            "get",
            "lock",
            "keep-subnet",
            "-n",
            GONE_NS,
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
          ], { workspace: w.c1 });
          return stamp === "" ? undefined : stamp;
        },
        { timeoutMs: 120_000, intervalMs: 1_000 },
      );
      assert.match(lockDeleted, KUBE_TIME);
      assert.match(
        await dryRunDelete(kcp, {
          workspace: w.c1,
          type: "subnet",
          namespace: GONE_NS,
          name: "kept",
        }),
        /locked by Lock team-gone\/keep-subnet/,
      );

      // Let go: the finalizers off, the namespace's teardown goes on.
      for (
        const [type, name] of [["lock", "keep-subnet"], [
          "virtualmachine",
          "vm-1",
        ]]
      ) {
        const r = await dropFinalizers(kcp, {
          workspace: w.c1,
          type: type!,
          namespace: GONE_NS,
          name: name!,
        });
        assert.equal(r.code, 0, r.stderr);
      }
    },
  );

  await step(
    "an owner deleted in the foreground waits for a Subnet a Lock holds: why namespace/<ns> and why <object> name the owner's deletion and since when",
    async () => {
      await applyObjects(kcp, w.c1, [
        namespaceObject(FOREGROUND_NS),
        projectObject(FOREGROUND_PROJECT),
        ...projectReadRbac(kcp.identity("user").user),
      ]);
      const uid = await kcp.kubectlOk(
        [
          "get",
          "project",
          FOREGROUND_PROJECT,
          "-o",
          "jsonpath={.metadata.uid}",
        ],
        { workspace: w.c1 },
      );
      await applyObjects(kcp, w.c1, [
        subnetOwnedByProject(FOREGROUND_NS, "s-fg", {
          name: FOREGROUND_PROJECT,
          uid,
        }),
        lockManifest("keep-fg", {
          namespace: FOREGROUND_NS,
          target: exportedTarget(w.network, {
            resource: "subnets",
            name: "s-fg",
          }),
          reason: WHY_REASON,
          operations: ["Delete"],
        }),
      ]);
      await waitForDeleteDenial(kcp, {
        workspace: w.c1,
        type: "subnet",
        namespace: FOREGROUND_NS,
        name: "s-fg",
      }, /locked by Lock team-fg\/keep-fg/);
      await kcp.kubectlOk([
        "delete",
        "project",
        FOREGROUND_PROJECT,
        "--cascade=foreground",
        "--wait=false",
      ], { workspace: w.c1 });
      const project = JSON.parse(
        await kcp.kubectlOk([
          "get",
          "project",
          FOREGROUND_PROJECT,
          "-o",
          "json",
        ], {
          workspace: w.c1,
        }),
      ) as { metadata: { deletionTimestamp?: string; finalizers?: string[] } };
      const deleted = project.metadata.deletionTimestamp ?? "";
      assert.match(deleted, KUBE_TIME);
      assert.ok(project.metadata.finalizers?.includes("foregroundDeletion"));

      const report = await waitFor(
        "why namespace/<ns> to name the Project being deleted",
        async () => {
          const r = await runWhy(w.tenant, [
            `namespace/${FOREGROUND_NS}`,
            "-o",
            "json",
          ]);
          const found = JSON.parse(r.stdout) as ScopeJson;
          return r.code === 1 &&
              found.objects[0]?.deletingOwners?.[0]?.object.name ===
                FOREGROUND_PROJECT
            ? found
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2_000 },
      );
      assert.deepEqual(report.objects.map((o) => o.object.name), ["s-fg"]);
      assert.deepEqual(report.objects[0]!.deletingOwners, [{
        object: {
          group: "owners.example.com",
          version: "v1alpha1",
          resource: "projects",
          kind: "Project",
          namespace: "",
          name: FOREGROUND_PROJECT,
        },
        deletionTimestamp: deleted,
        foreground: true,
        blockOwnerDeletion: true,
      }]);
      assert.equal(report.objects[0]!.causes?.[0]?.type, "Lock");

      const tree = await runWhy(w.tenant, [`namespace/${FOREGROUND_NS}`]);
      assert.equal(tree.code, 1, shown(tree));
      assert.match(
        tree.stdout,
        new RegExp(
          [
            "^Namespace team-fg: 1 of \\d+ objects asked about is held:",
            `\u2514\u2500\u2500 Subnet team-fg/s-fg is held by: \\[owner Project p-fg being deleted since ${deleted} \\(for \\d+[smhd]\\), waiting for it\\]`,
            `    \u2514\u2500\u2500 locked by Lock team-fg/keep-fg \\(reason: ${WHY_REASON}${SINCE_PATTERN}\\)`,
            "$",
          ].join("\n"),
        ),
        shown(tree),
      );
      const one = await runWhy(w.tenant, ["subnet/s-fg", "-n", FOREGROUND_NS]);
      assert.equal(one.code, 1, shown(one));
      assert.match(
        one.stdout,
        new RegExp(
          [
            `^Subnet team-fg/s-fg is held by: \\[owner Project p-fg being deleted since ${deleted} \\(for \\d+[smhd]\\), waiting for it\\]`,
            `\u2514\u2500\u2500 locked by Lock team-fg/keep-fg \\(reason: ${WHY_REASON}${SINCE_PATTERN}\\)`,
            "$",
          ].join("\n"),
        ),
        shown(one),
      );
      const yaml = await runWhy(w.tenant, [
        "subnet/s-fg",
        "-n",
        FOREGROUND_NS,
        "-o",
        "yaml",
      ]);
      assert.equal(yaml.code, 1, shown(yaml));
      assert.match(yaml.stdout, /^deletingOwners:\n {2}- object:\n/m);
      assert.match(yaml.stdout, /^ {4}foreground: true$/m);
      // The owner still waits: the Lock holds what it owns.
      await kcp.kubectlOk(["get", "project", FOREGROUND_PROJECT], {
        workspace: w.c1,
      });
    },
  );

  await step(
    "why workspace: every held object of the workspace with its causes, exit 1; exit 0 in a workspace where nothing is held",
    async () => {
      const tree = await runWhy(w.tenant, ["workspace"]);
      assert.equal(tree.code, 1, shown(tree));
      assert.match(
        tree.stdout,
        new RegExp(
          `^Workspace ${w.c1}: \\d+ of \\d+ objects asked about are held:\n`,
        ),
        shown(tree),
      );
      const held: [string, string][] = [
        [
          "VirtualMachine team-a/vm-1",
          `locked by Lock team-a/keep-vm \\(reason: ${WHY_REASON}${SINCE_PATTERN}\\)`,
        ],
        [
          "Subnet team-a/s-1",
          `belongs to Network team-a/net-a \\(\\.metadata\\.labels\\["network\\.example\\.com/owner"\\]; when object\\.spec\\.deletionProtection == true; rule [a-z0-9]+/subnet-owner${SINCE_PATTERN}\\)`,
        ],
        [
          "VPC team-a/core",
          `referenced by VirtualMachine team-a/vm-1 \\(\\.spec\\.vpcRef\\.name; rule [a-z0-9]+/vm-vpc${SINCE_PATTERN}\\)`,
        ],
        [
          "VPC team-a/loop-vpc",
          `referenced by VirtualMachine team-a/loop-vm \\(\\.spec\\.vpcRef\\.name; rule [a-z0-9]+/vm-vpc${SINCE_PATTERN}\\)`,
        ],
      ];
      for (const [object, cause] of held) {
        assert.match(
          tree.stdout,
          new RegExp(
            `\n\u251c\u2500\u2500 ${object} is held by:\n\u2502   \u2514\u2500\u2500 ${cause}\n`,
          ),
          shown(tree),
        );
      }
      assert.match(
        tree.stdout,
        new RegExp(
          `\n\u251c\u2500\u2500 Subnet team-fg/s-fg is held by: \\[owner Project p-fg being deleted since [^ ]+ \\(for \\d+[smhd]\\), waiting for it\\]\n\u2502   \u2514\u2500\u2500 locked by Lock team-fg/keep-fg `,
        ),
        shown(tree),
      );

      const json = await runWhy(w.tenant, ["workspace", "-o", "json"]);
      assert.equal(json.code, 1, shown(json));
      const report = JSON.parse(json.stdout) as ScopeJson;
      assert.deepEqual(report.scope, { kind: "Workspace", name: w.c1 });
      assert.equal(report.state, "held");
      const causes = new Map(
        report.objects.filter((o) =>
          o.state === "held" &&
          [WHY_NS, FOREGROUND_NS].includes(o.object.namespace)
        ).map((o) => [
          `${o.object.namespace}/${o.object.name}`,
          o.causes!.map((c) => c.type).join(),
        ]),
      );
      assert.deepEqual(Object.fromEntries(causes), {
        "team-a/vm-1": "Lock",
        "team-a/s-1": "Owner",
        "team-fg/s-fg": "Lock",
        "team-a/core": "Reference",
        "team-a/loop-vpc": "Reference",
      });
      // The Network the tenant may not delete cannot be asked about.
      const network = report.objects.find((o) => o.object.name === "net-a");
      assert.equal(network?.state, "error");

      await networkConsumer(kcp, { path: w.c2, networkPath: w.network });
      await applyObjects(kcp, w.c2, [
        namespaceObject(WHY_NS),
        ...tenantRbac(kcp.identity("user").user),
      ]);
      await applyObjects(kcp, w.c2, [
        vpcManifest("free", { namespace: WHY_NS, cidr: VPC_CIDR }),
      ]);
      const free = await runWhy(await kcp.kubeconfig("user", w.c2), [
        "workspace",
      ]);
      assert.equal(free.code, 0, shown(free));
      assert.equal(
        free.stdout,
        `Workspace ${w.c2}: nothing in it is held (1 object asked about)\n`,
      );
    },
  );
}
