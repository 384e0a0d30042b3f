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
  type KcpServer,
  kubectlDelete,
  labelPath,
  type NamespacedTarget,
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
  targetsOf,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  type WorldPaths,
} from "../../testing/mod.ts";

/** The labels the rules read, one per rule so that each is seen alone. */
const OWNER = "network.example.com/owner";
const PROJECT = "owners.example.com/project";

/** `metadata.uid` of an object in `workspace`. */
function uidIn(
  kcp: KcpServer,
  workspace: string,
  args: string[],
): Promise<string> {
  return kcp.kubectlOk(
    ["get", ...args, "-o", "jsonpath={.metadata.uid}"],
    { workspace },
  );
}

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
  const NETWORK = paths.network;
  const COMPUTE = paths.compute;
  /** The owners provider: exports Networks and Projects, holds the owner rules. */
  const OWNERS = `${paths.prefix}:providers:owners`;
  const C1 = paths.consumer("c1");
  /** Another tenant, bound to the same providers, with objects of the same names. */
  const C2 = paths.consumer("c2");
  /** The Subnet `name` in `namespace` of C1. */
  const subnet = targetsOf(C1, "subnet");
  /** The same Subnet in C2. */
  const inC2 = (target: NamespacedTarget): NamespacedTarget => ({
    ...target,
    workspace: C2,
  });
  /** `metadata.uid` of an object in C1 (or `workspace`). */
  const uidOf = (kcp: KcpServer, args: string[], workspace = C1) =>
    uidIn(kcp, workspace, args);
  let depCtrl = "";

  await step(
    "topology, an owners provider exporting Networks and Projects bound by two consumers, webhook and controller",
    async () => {
      const [topo] = await Promise.all([
        buildTopology(kcp, {
          networkPath: NETWORK,
          computePath: COMPUTE,
          consumerPaths: [C1, C2],
        }),
        ownersProvider(kcp, OWNERS),
      ]);
      depCtrl = topo.depCtrl.path;
      await Promise.all(
        [C1, C2].map((consumer) =>
          bindOwners(kcp, { consumer, ownersPath: OWNERS })
        ),
      );
      await applyObjects(kcp, C1, [
        namespaceObject("team-a"),
        namespaceObject("team-b"),
      ]);
      await applyObjects(kcp, C2, [namespaceObject("team-a")]);
      await world.startComponents();
    },
  );

  await step(
    "from: Target with a label: the Network a Subnet names holds it (a dry run explains), only in the Subnet's namespace, beside its dependents, until the Network is deleted",
    async () => {
      await applyObjects(kcp, OWNERS, [
        ownerRule("subnet-owner", {
          networkPath: NETWORK,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(OWNER),
          },
        }),
      ]);
      const role = await grantWebhookReads(kcp);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: OWNERS,
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
      ], { workspace: OWNERS });
      assert.equal(stored, `Target ${labelPath(OWNER)}`);

      await applyObjects(kcp, C1, [
        networkObject("team-a", "net-a"),
        subnetObject("team-a", "s-1", { labels: { [OWNER]: "net-a" } }),
        // No Network net-a in team-b: the owner is looked up in the
        // Subnet's own namespace.
        subnetObject("team-b", "s-2", { labels: { [OWNER]: "net-a" } }),
        subnetObject("team-a", "s-free"),
      ]);
      const message = subnetOwnedBy("s-1", {
        owner: "Network/net-a",
        field: labelPath(OWNER),
      });
      assert.equal(
        message,
        'cannot delete subnets/s-1: it belongs to Network/net-a (.metadata.labels["network.example.com/owner"]), which still exists',
      );
      const dryRun = await waitForDeleteDenial(
        kcp,
        subnet("team-a", "s-1"),
        message,
      );
      assert.match(dryRun, /Error from server \(Conflict\)/);
      assert.ok(await objectExists(kcp, subnet("team-a", "s-1")));
      await assertDeleteDenied(kcp, subnet("team-a", "s-1"), message);
      await assertDeleteAllowed(kcp, subnet("team-b", "s-2"));
      await assertDeleteAllowed(kcp, subnet("team-a", "s-free"));

      // A dependent that refers too (a from: Dependent rule of the
      // compute provider) is named after the owner.
      await applyObjects(kcp, COMPUTE, [
        dependencyRule("vm-subnet", {
          dependencies: [{
            path: NETWORK,
            resource: "subnets",
            field: ".spec.subnetRef.name",
          }],
        }),
      ]);
      await grantWebhookReads(kcp);
      await waitForRuleEnforced(kcp, {
        workspace: COMPUTE,
        name: "vm-subnet",
      });
      await applyObjects(kcp, C1, [{
        apiVersion: "compute.example.com/v1alpha1",
        kind: "VirtualMachine",
        metadata: { name: "vm-1", namespace: "team-a" },
        spec: { subnetRef: { name: "s-1" } },
      }]);
      const both =
        `${message}; still referenced by VirtualMachine/vm-1 (.spec.subnetRef.name)`;
      await waitForDeleteDenial(kcp, subnet("team-a", "s-1"), both);
      await assertDeleteDenied(kcp, subnet("team-a", "s-1"), both);
      await kcp.kubectlOk(
        ["delete", "virtualmachine", "vm-1", "-n", "team-a"],
        { workspace: C1 },
      );
      await assertDeleteDenied(kcp, subnet("team-a", "s-1"), message);

      await kcp.kubectlOk(["delete", "network", "net-a", "-n", "team-a"], {
        workspace: C1,
      });
      await assertDeleteAllowed(kcp, subnet("team-a", "s-1"));
    },
  );

  await step(
    "from: Target with .metadata.ownerReferences[*].name: only an entry of the Network kind and group, with the live Network's uid, holds",
    async () => {
      await applyObjects(kcp, OWNERS, [
        ownerRule("subnet-owner-refs", {
          networkPath: NETWORK,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: ".metadata.ownerReferences[*].name",
          },
        }),
      ]);
      await waitForRuleEnforced(kcp, {
        workspace: OWNERS,
        name: "subnet-owner-refs",
      });
      await applyObjects(kcp, C1, [
        networkObject("team-a", "net-o"),
        projectObject("net-o"),
      ]);
      const uid = await uidOf(kcp, ["network", "net-o", "-n", "team-a"]);
      const projectUid = await uidOf(kcp, ["project", "net-o"]);
      assert.notEqual(uid, projectUid);
      await applyObjects(kcp, C1, [
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
      await waitForDeleteDenial(kcp, subnet("team-a", "s-owned"), message);
      await assertDeleteDenied(kcp, subnet("team-a", "s-owned"), message);
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
        const target = subnet("team-a", name);
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
        ], { workspace: C1 });
        assert.equal(stored, entry, `${name}'s first ownerReference`);
        await assertDeleteAllowed(kcp, target);
      }

      // Deleting the Network (kubectl's default, background cascade):
      // kcp's garbage collector deletes the Subnet it owns, or the user
      // does; either delete passes the webhook now.
      await kcp.kubectlOk(["delete", "network", "net-o", "-n", "team-a"], {
        workspace: C1,
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
        ], { workspace: C1 });
        last = r.stderr;
        return r.code === 0 || undefined;
      }, { timeoutMs: 30_000, intervalMs: 500 }).catch((error: Error) => {
        assert.fail(`${error.message}; last answer: ${last}`);
      });
      assert.ok(!(await objectExists(kcp, subnet("team-a", "s-owned"))));
      await kcp.kubectlOk(["delete", "project", "net-o"], {
        workspace: C1,
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
      await applyObjects(kcp, C1, [networkObject("team-a", "net-m")]);
      const uid = await uidOf(kcp, ["network", "net-m", "-n", "team-a"]);
      await applyObjects(kcp, C1, [
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
        subnet("team-a", "s-many-one-live"),
        /it belongs to Network\/net-m \(\.metadata\.ownerReferences\[99\]\.name\), which still exists/,
      );
      await assertDeleteAllowed(kcp, subnet("team-a", "s-many-dead"));
      // No anchor: every owner is gone, so kcp's garbage collector deletes
      // the Subnet itself, and the webhook lets it.
      await applyObjects(kcp, C1, [
        subnetObject("team-a", "s-collected", { ownerReferences: dead(20) }),
      ]);
      await waitFor(
        "kcp's garbage collector to delete s-collected",
        async () =>
          !(await objectExists(kcp, subnet("team-a", "s-collected"))) ||
          undefined,
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      await kcp.kubectlOk(["delete", "network", "net-m", "-n", "team-a"], {
        workspace: C1,
      });
      await waitFor("s-many-one-live to be deleted", async () => {
        const r = await kcp.kubectl([
          "delete",
          "subnet",
          "s-many-one-live",
          "-n",
          "team-a",
          "--ignore-not-found",
        ], { workspace: C1 });
        return r.code === 0 || undefined;
      }, { timeoutMs: 30_000, intervalMs: 500 });
    },
  );

  await step(
    "from: TargetNamespace: a Namespace labelled with a Project's name puts its Subnets under that Project; a rule cannot name core namespaces",
    async () => {
      await applyObjects(kcp, OWNERS, [
        ownerRule("subnet-project", {
          networkPath: NETWORK,
          owner: "Project",
          fieldRef: {
            from: "TargetNamespace",
            path: labelPath(PROJECT),
          },
        }),
      ]);
      const role = await grantWebhookReads(kcp);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: OWNERS,
        name: "subnet-project",
      });
      assert.match(
        ready.message,
        /^deleting subnets\.network\.example\.com is denied while the Project its Namespace names exists/,
      );
      assert.match(role, /- projects\n\s+verbs:\n\s+- get\n/);
      // The webhook reads the Subnet's Namespace (its metadata).
      assert.match(role, /- namespaces\n\s+verbs:\n\s+- get\n/);
      await applyObjects(kcp, C1, [
        projectObject("p-1"),
        namespaceObject("proj-a", { [PROJECT]: "p-1" }),
        namespaceObject("proj-none"),
      ]);
      await applyObjects(kcp, C1, [
        subnetObject("proj-a", "s-p"),
        subnetObject("proj-none", "s-q"),
      ]);
      const message = subnetOwnedBy("s-p", {
        owner: "Project/p-1",
        field: `${labelPath(PROJECT)} of namespace proj-a`,
      });
      const dryRun = await waitForDeleteDenial(
        kcp,
        subnet("proj-a", "s-p"),
        message,
      );
      assert.match(dryRun, /Error from server \(Conflict\)/);
      await assertDeleteDenied(kcp, subnet("proj-a", "s-p"), message);
      await assertDeleteAllowed(kcp, subnet("proj-none", "s-q"));

      // The Namespace itself cannot be protected: a dependency names a
      // type by its APIExport and API group, and kcp's schema for
      // DependencyRules refuses the core group "" of namespaces.
      const refused = await kcp.kubectl(["apply", "-f", "-"], {
        workspace: OWNERS,
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
              apiExportRef: { path: OWNERS, name: OWNERS_EXPORT },
              group: "",
              version: "v1",
              resource: "namespaces",
              fieldRef: { from: "Target", path: labelPath(PROJECT) },
            }],
          },
        }),
      });
      assert.notEqual(refused.code, 0, refused.stdout);
      assert.match(refused.stderr, /spec\.dependencies\[0\]\.group/);
      assert.match(refused.stderr, /should match/);

      await kcp.kubectlOk(["delete", "project", "p-1"], { workspace: C1 });
      await assertDeleteAllowed(kcp, subnet("proj-a", "s-p"));
    },
  );

  await step(
    "tenancy: another consumer with the same names is not held by the first one's owners",
    async () => {
      // C1: owners by label, by ownerReference, by Namespace.
      await applyObjects(kcp, C1, [
        networkObject("team-a", "net-t"),
        networkObject("team-a", "net-r"),
        projectObject("p-t"),
        namespaceObject("proj-t", { [PROJECT]: "p-t" }),
      ]);
      const c1Uid = await uidOf(kcp, ["network", "net-r", "-n", "team-a"]);
      // C2: the same namespaces, labels and Subnets; no net-t and no
      // p-t; a net-r of its own, whose uid is not the one C2's Subnet
      // names (C1's).
      await applyObjects(kcp, C2, [
        networkObject("team-a", "net-r"),
        namespaceObject("proj-t", { [PROJECT]: "p-t" }),
      ]);
      const c2Uid = await uidOf(
        kcp,
        ["network", "net-r", "-n", "team-a"],
        C2,
      );
      assert.notEqual(c1Uid, c2Uid);
      for (const consumer of [C1, C2]) {
        await applyObjects(kcp, consumer, [
          subnetObject("team-a", "s-t", { labels: { [OWNER]: "net-t" } }),
          subnetObject("team-a", "s-tr", {
            ownerReferences: [networkRef("net-r", c1Uid), GC_ANCHOR],
          }),
          subnetObject("proj-t", "s-tn"),
        ]);
      }
      await assertDeleteDenied(
        kcp,
        subnet("team-a", "s-t"),
        subnetOwnedBy("s-t", {
          owner: "Network/net-t",
          field: labelPath(OWNER),
        }),
      );
      await assertDeleteDenied(
        kcp,
        subnet("team-a", "s-tr"),
        subnetOwnedBy("s-tr", {
          owner: "Network/net-r",
          field: ".metadata.ownerReferences[0].name",
        }),
      );
      await assertDeleteDenied(
        kcp,
        subnet("proj-t", "s-tn"),
        subnetOwnedBy("s-tn", {
          owner: "Project/p-t",
          field: `${labelPath(PROJECT)} of namespace proj-t`,
        }),
      );
      for (
        const target of [
          subnet("team-a", "s-t"),
          subnet("team-a", "s-tr"),
          subnet("proj-t", "s-tn"),
        ]
      ) {
        const dryRun = await kubectlDelete(kcp, inC2(target), {
          dryRun: true,
        });
        assert.equal(dryRun.code, 0, `${target.name}: ${dryRun.stderr}`);
        // Still naming C1's net-r after the dry run (the garbage
        // collector only ever removes entries).
        const named = await kcp.kubectlOk([
          "get",
          "subnet",
          target.name,
          "-n",
          target.namespace,
          "-o",
          "jsonpath={.metadata.ownerReferences[0].uid}",
        ], { workspace: C2 });
        assert.equal(named, target.name === "s-tr" ? c1Uid : "");
        await assertDeleteAllowed(kcp, inC2(target));
        // C1's stays held while C2's went.
        assert.ok(await objectExists(kcp, target));
      }
      await assertDeleteDenied(
        kcp,
        subnet("team-a", "s-t"),
        subnetOwnedBy("s-t", {
          owner: "Network/net-t",
          field: labelPath(OWNER),
        }),
      );
    },
  );

  await step(
    "status truth: every rule that says Ready=True Enforced, owner rules and the compute provider's from: Dependent rule alike, denies a delete of what it covers",
    async () => {
      const truth = await assertStatusTruth(kcp, {
        workspaces: [depCtrl, NETWORK, COMPUTE, OWNERS, C1],
        minimum: { rules: 4 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${COMPUTE}/vm-subnet`,
        `${OWNERS}/subnet-owner`,
        `${OWNERS}/subnet-owner-refs`,
        `${OWNERS}/subnet-project`,
      ]);
      assert.deepEqual(truth.notEnforced, []);
      assert.deepEqual(truth.leftBehind, []);
    },
  );
}
