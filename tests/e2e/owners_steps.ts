/**
 * Owners, end to end on a real kcp: rules whose reference is read on the
 * protected object (`fieldRef.from: Target`: a label, or its
 * ownerReferences) or on its Namespace (`from: TargetNamespace`), so that a
 * Subnet cannot be deleted while the Network (or Project) it belongs to
 * exists, in its own tenant only; then every rule that says `Enforced`
 * proves it (`assertStatusTruth`, owner rules included). `when` and
 * `protectWhile` are in `owners_when_steps.ts`. `controller.ts` and
 * `webhook.ts` run as separate processes with their own identities, the
 * webhook's reads are granted with `controller grants`, and users act with
 * kubectl. An owners provider exports Networks and Projects
 * (`testing/fixtures/owners/`) and holds the rules; the network provider's
 * Subnets are what they protect.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertDeleteAllowed,
  assertDeleteDenied,
  assertStatusTruth,
  bindOwners,
  buildTopology,
  type ComponentWorld,
  dependencyRule,
  GC_ANCHOR,
  grantWebhookReads,
  kubectlDelete,
  labelPath,
  namespaceObject,
  networkObject,
  networkRef,
  objectExists,
  ownerRule,
  OWNERS_EXPORT,
  ownersProvider,
  projectObject,
  type Step,
  subnetObject,
  subnetOwnedBy,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  type WorldPaths,
} from "../../testing/mod.ts";
import {
  OWNER_LABEL,
  ownerWorld,
  PROJECT_LABEL,
} from "../../testing/owner_world.ts";

/**
 * The steps of "owners: a Subnet cannot be deleted while the Network or
 * Project it (or its Namespace) names exists, in its own tenant", in the
 * world under `paths` (its owners provider at `<prefix>:providers:owners`,
 * consumers c1 and c2), ending with status truth.
 */
export async function ownersSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = ownerWorld(world, paths);

  await step(
    "topology, an owners provider exporting Networks and Projects bound by two consumers, webhook and controller",
    async () => {
      const [topo] = await Promise.all([
        buildTopology(kcp, {
          networkPath: w.network,
          computePath: w.compute,
          consumerPaths: [w.c1, w.c2],
        }),
        ownersProvider(kcp, w.owners),
      ]);
      w.depCtrl = topo.depCtrl.path;
      await Promise.all(
        [w.c1, w.c2].map((consumer) =>
          bindOwners(kcp, { consumer, ownersPath: w.owners })
        ),
      );
      await applyObjects(kcp, w.c1, [
        namespaceObject("team-a"),
        namespaceObject("team-b"),
      ]);
      await applyObjects(kcp, w.c2, [namespaceObject("team-a")]);
      await world.startComponents();
    },
  );

  await step(
    "from: Target with a label: the Network a Subnet names holds it (a dry run explains), only in the Subnet's namespace, beside its dependents, until the Network is deleted",
    async () => {
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-owner", {
          networkPath: w.network,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(OWNER_LABEL),
          },
        }),
      ]);
      const role = await grantWebhookReads(kcp);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: w.owners,
        name: "subnet-owner",
      });
      assert.match(
        ready.message,
        /^deleting subnets\.network\.example\.com is denied while the Network it names exists/,
      );
      assert.match(role, /- networks\n\s+verbs:\n\s+- get\n/);
      assert.match(role, /- subnets\n\s+verbs:\n\s+- get\n/);
      const stored = await kcp.kubectlOk([
        "get",
        "dependencyrule",
        "subnet-owner",
        "-o",
        "jsonpath={.spec.dependencies[0].fieldRef.from} {.spec.dependencies[0].fieldRef.path}",
      ], { workspace: w.owners });
      assert.equal(stored, `Target ${labelPath(OWNER_LABEL)}`);

      await applyObjects(kcp, w.c1, [
        networkObject("team-a", "net-a"),
        subnetObject("team-a", "s-1", { labels: { [OWNER_LABEL]: "net-a" } }),
        // No Network net-a in team-b: the owner is looked up in the
        // Subnet's own namespace.
        subnetObject("team-b", "s-2", { labels: { [OWNER_LABEL]: "net-a" } }),
        subnetObject("team-a", "s-free"),
      ]);
      const message = subnetOwnedBy("s-1", {
        owner: "Network/net-a",
        field: labelPath(OWNER_LABEL),
      });
      assert.equal(
        message,
        'cannot delete subnets/s-1: it belongs to Network/net-a (.metadata.labels["network.example.com/owner"]), which still exists',
      );
      const dryRun = await waitForDeleteDenial(
        kcp,
        w.subnet("team-a", "s-1"),
        message,
      );
      assert.match(dryRun, /Error from server \(Conflict\)/);
      assert.ok(await objectExists(kcp, w.subnet("team-a", "s-1")));
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-1"), message);
      await assertDeleteAllowed(kcp, w.subnet("team-b", "s-2"));
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-free"));

      // A dependent that refers too (a from: Dependent rule of the
      // compute provider) is named after the owner.
      await applyObjects(kcp, w.compute, [
        dependencyRule("vm-subnet", {
          dependencies: [{
            path: w.network,
            resource: "subnets",
            field: ".spec.subnetRef.name",
          }],
        }),
      ]);
      await grantWebhookReads(kcp);
      await waitForRuleEnforced(kcp, {
        workspace: w.compute,
        name: "vm-subnet",
      });
      await applyObjects(kcp, w.c1, [{
        apiVersion: "compute.example.com/v1alpha1",
        kind: "VirtualMachine",
        metadata: { name: "vm-1", namespace: "team-a" },
        spec: { subnetRef: { name: "s-1" } },
      }]);
      const both =
        `${message}; still referenced by VirtualMachine/vm-1 (.spec.subnetRef.name)`;
      await waitForDeleteDenial(kcp, w.subnet("team-a", "s-1"), both);
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-1"), both);
      await kcp.kubectlOk(
        ["delete", "virtualmachine", "vm-1", "-n", "team-a"],
        { workspace: w.c1 },
      );
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-1"), message);

      await kcp.kubectlOk(["delete", "network", "net-a", "-n", "team-a"], {
        workspace: w.c1,
      });
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-1"));
    },
  );

  await step(
    "from: Target with .metadata.ownerReferences[*].name: only an entry of the Network kind and group, with the live Network's uid, holds",
    async () => {
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-owner-refs", {
          networkPath: w.network,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: ".metadata.ownerReferences[*].name",
          },
        }),
      ]);
      await waitForRuleEnforced(kcp, {
        workspace: w.owners,
        name: "subnet-owner-refs",
      });
      await applyObjects(kcp, w.c1, [
        networkObject("team-a", "net-o"),
        projectObject("net-o"),
      ]);
      const uid = await w.uidOf(["network", "net-o", "-n", "team-a"]);
      const projectUid = await w.uidOf(["project", "net-o"]);
      assert.notEqual(uid, projectUid);
      await applyObjects(kcp, w.c1, [
        subnetObject("team-a", "s-owned", {
          ownerReferences: [networkRef("net-o", uid)],
        }),
        // The Network's name and uid, but the kind Project (kcp's
        // garbage collector would drop the dangling entry: the anchor
        // keeps it).
        subnetObject("team-a", "s-other-kind", {
          ownerReferences: [
            { ...networkRef("net-o", uid), kind: "Project" },
            GC_ANCHOR,
          ],
        }),
        // The Network's kind, name and uid in another API group.
        subnetObject("team-a", "s-other-group", {
          ownerReferences: [{
            ...networkRef("net-o", uid),
            apiVersion: "network.example.com/v1alpha1",
          }],
        }),
        // The right kind, group and name, with a uid that is not the
        // live Network's (a Network of that name deleted and created
        // again).
        subnetObject("team-a", "s-stale", {
          ownerReferences: [
            networkRef("net-o", "6a1f3c2e-0000-4000-8000-000000000001"),
            GC_ANCHOR,
          ],
        }),
      ]);
      const message = subnetOwnedBy("s-owned", {
        owner: "Network/net-o",
        field: ".metadata.ownerReferences[0].name",
      });
      await waitForDeleteDenial(kcp, w.subnet("team-a", "s-owned"), message);
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-owned"), message);
      // A dry run is allowed while the entry is still there as written
      // (the garbage collector only ever removes entries: still there
      // after the dry run, it was there during it); then the delete.
      const expected = {
        "s-other-kind": `Project/${OWNERS_EXPORT}/v1alpha1/${uid}`,
        "s-other-group": `Network/network.example.com/v1alpha1/${uid}`,
        "s-stale":
          `Network/${OWNERS_EXPORT}/v1alpha1/6a1f3c2e-0000-4000-8000-000000000001`,
      };
      for (const [name, entry] of Object.entries(expected)) {
        const target = w.subnet("team-a", name);
        const dryRun = await kubectlDelete(kcp, target, {
          dryRun: true,
        });
        assert.equal(dryRun.code, 0, `${name}: ${dryRun.stderr}`);
        const stored = await kcp.kubectlOk([
          "get",
          "subnet",
          name,
          "-n",
          "team-a",
          "-o",
          "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].apiVersion}/{.metadata.ownerReferences[0].uid}",
        ], { workspace: w.c1 });
        assert.equal(stored, entry, `${name}'s first ownerReference`);
        await assertDeleteAllowed(kcp, target);
      }

      // Deleting the Network (kubectl's default, background cascade):
      // kcp's garbage collector deletes the Subnet it owns, or the user
      // does; either delete passes the webhook now.
      await kcp.kubectlOk(["delete", "network", "net-o", "-n", "team-a"], {
        workspace: w.c1,
      });
      let last = "";
      await waitFor("s-owned to be deleted", async () => {
        const r = await kcp.kubectl([
          "delete",
          "subnet",
          "s-owned",
          "-n",
          "team-a",
          "--ignore-not-found",
        ], { workspace: w.c1 });
        last = r.stderr;
        return r.code === 0 || undefined;
      }, { timeoutMs: 30_000, intervalMs: 500 }).catch((error: Error) => {
        assert.fail(`${error.message}; last answer: ${last}`);
      });
      assert.ok(!(await objectExists(kcp, w.subnet("team-a", "s-owned"))));
      await kcp.kubectlOk(["delete", "project", "net-o"], {
        workspace: w.c1,
      });
    },
  );

  await step(
    "more than 16 owners named: none alive lets the Subnet go (the user's delete, and kcp's garbage collector's), one alive holds it, named",
    async () => {
      const dead = (count: number) =>
        Array.from({ length: count }, (_, i) =>
          networkRef(
            `gone-${i}`,
            `6a1f3c2e-0000-4000-8000-${String(i).padStart(12, "0")}`,
          ));
      await applyObjects(kcp, w.c1, [networkObject("team-a", "net-m")]);
      const uid = await w.uidOf(["network", "net-m", "-n", "team-a"]);
      await applyObjects(kcp, w.c1, [
        // The anchor keeps kcp's garbage collector off: the user deletes.
        subnetObject("team-a", "s-many-dead", {
          ownerReferences: [...dead(17), GC_ANCHOR],
        }),
        subnetObject("team-a", "s-many-one-live", {
          ownerReferences: [...dead(99), networkRef("net-m", uid), GC_ANCHOR],
        }),
      ]);
      await waitForDeleteDenial(
        kcp,
        w.subnet("team-a", "s-many-one-live"),
        /it belongs to Network\/net-m \(\.metadata\.ownerReferences\[99\]\.name\), which still exists/,
      );
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-many-dead"));
      // No anchor: every owner is gone, so kcp's garbage collector deletes
      // the Subnet itself, and the webhook lets it.
      await applyObjects(kcp, w.c1, [
        subnetObject("team-a", "s-collected", { ownerReferences: dead(20) }),
      ]);
      await waitFor(
        "kcp's garbage collector to delete s-collected",
        async () =>
          !(await objectExists(kcp, w.subnet("team-a", "s-collected"))) ||
          undefined,
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      await kcp.kubectlOk(["delete", "network", "net-m", "-n", "team-a"], {
        workspace: w.c1,
      });
      await waitFor("s-many-one-live to be deleted", async () => {
        const r = await kcp.kubectl([
          "delete",
          "subnet",
          "s-many-one-live",
          "-n",
          "team-a",
          "--ignore-not-found",
        ], { workspace: w.c1 });
        return r.code === 0 || undefined;
      }, { timeoutMs: 30_000, intervalMs: 500 });
    },
  );

  await step(
    "from: TargetNamespace: a Namespace labelled with a Project's name puts its Subnets under that Project; a rule cannot name core namespaces",
    async () => {
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-project", {
          networkPath: w.network,
          owner: "Project",
          fieldRef: {
            from: "TargetNamespace",
            path: labelPath(PROJECT_LABEL),
          },
        }),
      ]);
      const role = await grantWebhookReads(kcp);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: w.owners,
        name: "subnet-project",
      });
      assert.match(
        ready.message,
        /^deleting subnets\.network\.example\.com is denied while the Project its Namespace names exists/,
      );
      assert.match(role, /- projects\n\s+verbs:\n\s+- get\n/);
      // The webhook reads the Subnet's Namespace (its metadata).
      assert.match(role, /- namespaces\n\s+verbs:\n\s+- get\n/);
      await applyObjects(kcp, w.c1, [
        projectObject("p-1"),
        namespaceObject("proj-a", { [PROJECT_LABEL]: "p-1" }),
        namespaceObject("proj-none"),
      ]);
      await applyObjects(kcp, w.c1, [
        subnetObject("proj-a", "s-p"),
        subnetObject("proj-none", "s-q"),
      ]);
      const message = subnetOwnedBy("s-p", {
        owner: "Project/p-1",
        field: `${labelPath(PROJECT_LABEL)} of namespace proj-a`,
      });
      const dryRun = await waitForDeleteDenial(
        kcp,
        w.subnet("proj-a", "s-p"),
        message,
      );
      assert.match(dryRun, /Error from server \(Conflict\)/);
      await assertDeleteDenied(kcp, w.subnet("proj-a", "s-p"), message);
      await assertDeleteAllowed(kcp, w.subnet("proj-none", "s-q"));

      // The Namespace itself cannot be protected: a dependency names a
      // type by its APIExport and API group, and kcp's schema for
      // DependencyRules refuses the core group "" of namespaces.
      const refused = await kcp.kubectl(["apply", "-f", "-"], {
        workspace: w.owners,
        stdin: JSON.stringify({
          apiVersion: "dependencies.opendefense.cloud/v1alpha1",
          kind: "DependencyRule",
          metadata: { name: "namespace-project" },
          spec: {
            dependent: {
              apiExportName: OWNERS_EXPORT,
              group: OWNERS_EXPORT,
              version: "v1alpha1",
              kind: "Project",
              resource: "projects",
            },
            dependencies: [{
              apiExportRef: { path: w.owners, name: OWNERS_EXPORT },
              group: "",
              version: "v1",
              resource: "namespaces",
              fieldRef: { from: "Target", path: labelPath(PROJECT_LABEL) },
            }],
          },
        }),
      });
      assert.notEqual(refused.code, 0, refused.stdout);
      assert.match(refused.stderr, /spec\.dependencies\[0\]\.group/);
      assert.match(refused.stderr, /should match/);

      await kcp.kubectlOk(["delete", "project", "p-1"], { workspace: w.c1 });
      await assertDeleteAllowed(kcp, w.subnet("proj-a", "s-p"));
    },
  );

  await step(
    "tenancy: another consumer with the same names is not held by the first one's owners",
    async () => {
      // c1: owners by label, by ownerReference, by Namespace.
      await applyObjects(kcp, w.c1, [
        networkObject("team-a", "net-t"),
        networkObject("team-a", "net-r"),
        projectObject("p-t"),
        namespaceObject("proj-t", { [PROJECT_LABEL]: "p-t" }),
      ]);
      const c1Uid = await w.uidOf(["network", "net-r", "-n", "team-a"]);
      // c2: the same namespaces, labels and Subnets; no net-t and no
      // p-t; a net-r of its own, whose uid is not the one c2's Subnet
      // names (c1's).
      await applyObjects(kcp, w.c2, [
        networkObject("team-a", "net-r"),
        namespaceObject("proj-t", { [PROJECT_LABEL]: "p-t" }),
      ]);
      const c2Uid = await w.uidOf(["network", "net-r", "-n", "team-a"], w.c2);
      assert.notEqual(c1Uid, c2Uid);
      for (const consumer of [w.c1, w.c2]) {
        await applyObjects(kcp, consumer, [
          subnetObject("team-a", "s-t", { labels: { [OWNER_LABEL]: "net-t" } }),
          subnetObject("team-a", "s-tr", {
            ownerReferences: [networkRef("net-r", c1Uid), GC_ANCHOR],
          }),
          subnetObject("proj-t", "s-tn"),
        ]);
      }
      await assertDeleteDenied(
        kcp,
        w.subnet("team-a", "s-t"),
        subnetOwnedBy("s-t", {
          owner: "Network/net-t",
          field: labelPath(OWNER_LABEL),
        }),
      );
      await assertDeleteDenied(
        kcp,
        w.subnet("team-a", "s-tr"),
        subnetOwnedBy("s-tr", {
          owner: "Network/net-r",
          field: ".metadata.ownerReferences[0].name",
        }),
      );
      await assertDeleteDenied(
        kcp,
        w.subnet("proj-t", "s-tn"),
        subnetOwnedBy("s-tn", {
          owner: "Project/p-t",
          field: `${labelPath(PROJECT_LABEL)} of namespace proj-t`,
        }),
      );
      for (
        const target of [
          w.subnet("team-a", "s-t"),
          w.subnet("team-a", "s-tr"),
          w.subnet("proj-t", "s-tn"),
        ]
      ) {
        const dryRun = await kubectlDelete(kcp, w.inC2(target), {
          dryRun: true,
        });
        assert.equal(dryRun.code, 0, `${target.name}: ${dryRun.stderr}`);
        // Still naming c1's net-r after the dry run (the garbage
        // collector only ever removes entries).
        const named = await kcp.kubectlOk([
          "get",
          "subnet",
          target.name,
          "-n",
          target.namespace,
          "-o",
          "jsonpath={.metadata.ownerReferences[0].uid}",
        ], { workspace: w.c2 });
        assert.equal(named, target.name === "s-tr" ? c1Uid : "");
        await assertDeleteAllowed(kcp, w.inC2(target));
        // c1's stays held while c2's went.
        assert.ok(await objectExists(kcp, target));
      }
      await assertDeleteDenied(
        kcp,
        w.subnet("team-a", "s-t"),
        subnetOwnedBy("s-t", {
          owner: "Network/net-t",
          field: labelPath(OWNER_LABEL),
        }),
      );
    },
  );

  await step(
    "status truth: every rule that says Ready=True Enforced, owner rules and the compute provider's from: Dependent rule alike, denies a delete of what it covers",
    async () => {
      const truth = await assertStatusTruth(kcp, {
        workspaces: [w.depCtrl, w.network, w.compute, w.owners, w.c1],
        minimum: { rules: 4 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${w.compute}/vm-subnet`,
        `${w.owners}/subnet-owner`,
        `${w.owners}/subnet-owner-refs`,
        `${w.owners}/subnet-project`,
      ]);
      assert.deepEqual(truth.notEnforced, []);
      assert.deepEqual(truth.leftBehind, []);
    },
  );
}
