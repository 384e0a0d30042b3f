/**
 * One owner's delete removes everything it owns, in dependency order (seed
 * 003, "GlobalOwner"), on a real kcp with nothing but kcp's own garbage
 * collector and DependencyRules: no controller of ours deletes anything.
 *
 * The network provider also exports an owner type, Project
 * (`testing/fixtures/projects/`, `testing/owned_projects.ts`). In a
 * consumer, a Project owns VPCs, Subnets and VirtualMachines through
 * `metadata.ownerReferences` (blockOwnerDeletion), and two rules of the
 * default kind (`from: Dependent`) order them: a VirtualMachine refers to its
 * Subnet, a Subnet to its VPC.
 *
 * - `kubectl delete project --cascade=foreground`: kcp's garbage collector
 *   deletes the owned objects, the webhook denies each Subnet and VPC while
 *   something still refers to it (the collector retries), and the Project
 *   goes last. `--cascade=background`: the Project goes first, then the same
 *   order. Watches on the four types, started before the delete, record the
 *   order (kcp's resourceVersion of each DELETED event) and the times
 *   (`testing/deletion_order.ts`).
 * - The owner rule (issue 23): dependent Project, dependencies VPC, Subnet
 *   and VirtualMachine with `fieldRef: {from: Target, path:
 *   .metadata.ownerReferences[*].name}`. With `protectWhile: Active` a
 *   foreground delete of the owner still completes (the Project has a
 *   deletionTimestamp, so it no longer protects what it owns); switched to
 *   `Exists`, a Project being deleted protects again. What `Exists` does to
 *   the owner's own foreground delete, and the ways out, are in
 *   `owner_teardown_held_test.ts`.
 * - Every rule that says `Enforced`, the owner rule too, proves it
 *   (`assertStatusTruth`).
 *
 * A probe Project that our own finalizer keeps deleting shows when the
 * webhook has taken each `protectWhile`. Every teardown prints its order and
 * times.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  applyOrderRules,
  assertDependencyOrder,
  assertStatusTruth,
  type ComponentProcess,
  grantWebhookReads,
  kcpTest,
  ownedTree,
  PROJECT_OWNER_RULE,
  ProjectConsumer,
  projectDenial,
  projectOwnerRule,
  projectPlace,
  reportDeletionOrder,
  startProjects,
  teardownDenials,
  type TeardownResource,
  waitForRuleEnforced,
  type WebhookProcess,
} from "../../testing/mod.ts";

const NETWORK = "root:providers:network";
const COMPUTE = "root:providers:compute";
const C1 = "root:consumers:c1";

kcpTest(
  "owner teardown: deleting a Project removes what it owns in dependency order with kcp's garbage collector, also under an Active owner rule",
  async (kcp, step) => {
    let webhook: WebhookProcess | undefined;
    let controller: ComponentProcess | undefined;
    const c1 = new ProjectConsumer(kcp, C1);
    try {
      await step(
        "the network provider exports Projects and Subnets that name their VPC; a consumer binds both providers",
        async () => {
          ({ webhook, controller } = await startProjects(kcp, {
            networkPath: NETWORK,
            computePath: COMPUTE,
            consumer: C1,
          }));
        },
      );

      await step(
        "rules of the default kind: a VirtualMachine refers to its Subnet, a Subnet to its VPC",
        async () => {
          await applyOrderRules(kcp, {
            networkPath: NETWORK,
            computePath: COMPUTE,
          });
        },
      );

      await step(
        "kubectl delete project --cascade=foreground: VirtualMachines, then Subnets, then VPCs, then the Project",
        async () => {
          const owned = ownedTree("fg");
          await c1.createProject("fg", owned);
          await c1.waitForReferences("fg", owned);
          const before = await teardownDenials(webhook!);
          const t = await c1.teardown("fg", "foreground");
          const after = await teardownDenials(webhook!);
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "fg"), "last");
          // The Project is marked first and waits for what it owns.
          assert.equal(t.deleting[0]?.resource, "projects");
          const denied = after.referenced - before.referenced;
          // The collector queues what the Project owns in the order of a Go
          // map, at random: the webhook's denials are what keep the order.
          // (Three trees of 7 objects: a random order meets every edge by
          // itself about once in 250 000 runs.)
          assert.ok(denied > 0, "the webhook denied some of kcp's deletes");
          reportDeletionOrder("foreground", t, {
            extra:
              `${denied} deletes denied (denied_referenced) and retried by kcp's garbage collector`,
          });
        },
      );

      await step(
        "kubectl delete project --cascade=background: the Project goes at once, then the same order",
        async () => {
          const owned = ownedTree("bg");
          await c1.createProject("bg", owned);
          await c1.waitForReferences("bg", owned);
          const before = await teardownDenials(webhook!);
          const t = await c1.teardown("bg", "background");
          const after = await teardownDenials(webhook!);
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "bg"), "first");
          const denied = after.referenced - before.referenced;
          assert.ok(denied > 0, "the webhook denied some of kcp's deletes");
          reportDeletionOrder("background", t, {
            extra:
              `${denied} deletes denied (denied_referenced) and retried by kcp's garbage collector`,
          });
        },
      );

      await step(
        "an owner rule (from: Target, protectWhile: Active): an active Project protects what it owns, one being deleted does not",
        async () => {
          await applyObjects(kcp, NETWORK, [
            projectOwnerRule({
              networkPath: NETWORK,
              computePath: COMPUTE,
              protectWhile: "Active",
            }),
          ]);
          const role = await grantWebhookReads(kcp);
          assert.match(role, /- projects\n/);
          await waitForRuleEnforced(kcp, {
            workspace: NETWORK,
            name: PROJECT_OWNER_RULE,
          }, { intervalMs: 200 });
          // A probe: a Project our own finalizer keeps deleting, owning one
          // VirtualMachine (background: kcp's collector leaves it alone
          // while its owner exists).
          await c1.createProbe();
          const denied = await c1.waitForProbe(true);
          assert.match(denied, /Conflict/);
          await c1.deleteProbe();
          // Active: the probe, now being deleted, no longer protects.
          await c1.waitForProbe(false);
        },
      );

      await step(
        "with protectWhile: Active, the owner's foreground delete completes in dependency order",
        async () => {
          const owned = ownedTree("active");
          await c1.createProject("active", owned);
          await c1.waitForReferences("active", owned);
          // The active Project protects each object it owns.
          for (
            const [resource, name] of [
              ["vpcs", owned.vpcs[0]!],
              ["subnets", owned.subnets[0]!.name],
              ["virtualmachines", owned.vms[0]!.name],
            ] as [TeardownResource, string][]
          ) {
            await c1.waitForDryRun({
              resource,
              namespace: "active",
              name,
            }, projectDenial({ resource, name }, "active"));
          }
          const r = await c1.delete({
            resource: "virtualmachines",
            namespace: "active",
            name: owned.vms[0]!.name,
          });
          assert.notEqual(r.code, 0, "a user's delete of an owned VM");
          assert.match(
            r.stderr,
            projectDenial({
              resource: "virtualmachines",
              name: owned.vms[0]!.name,
            }, "active"),
          );
          const before = await teardownDenials(webhook!);
          const t = await c1.teardown("active", "foreground");
          const after = await teardownDenials(webhook!);
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "active"), "last");
          assert.equal(t.deleting[0]?.resource, "projects");
          reportDeletionOrder("foreground, owner rule Active", t, {
            extra: `${
              after.referenced - before.referenced
            } denied_referenced, ${after.owned - before.owned} denied_owned`,
          });
        },
      );

      await step(
        "switching the owner rule to protectWhile: Exists: a Project being deleted protects again",
        async () => {
          await kcp.kubectlOk([
            "patch",
            "dependencyrule",
            PROJECT_OWNER_RULE,
            "--type=merge",
            "-p",
            '{"spec":{"protectWhile":"Exists"}}',
          ], { workspace: NETWORK });
          await waitForRuleEnforced(kcp, {
            workspace: NETWORK,
            name: PROJECT_OWNER_RULE,
          }, { intervalMs: 200 });
          await c1.waitForProbe(true);
        },
      );

      await step(
        "status truth: every rule that says Ready=True Enforced, the owner rule too, denies a delete of what it covers",
        async () => {
          const truth = await assertStatusTruth(kcp, {
            workspaces: ["root:dep-ctrl", NETWORK, COMPUTE, C1],
            minimum: { rules: 3 },
          });
          assert.deepEqual(truth.rulesProven.sort(), [
            `${COMPUTE}/vm-subnet`,
            `${NETWORK}/${PROJECT_OWNER_RULE}`,
            `${NETWORK}/subnet-vpc`,
          ]);
          // One per dependency: the owner rule protects three types.
          assert.equal(truth.denials, 5);
          assert.deepEqual(truth.leftBehind, []);
        },
      );

      await step(
        "the probe goes, with what it owns, once our finalizer lets it",
        async () => {
          await c1.releaseProbe();
        },
      );
    } finally {
      await controller?.stop();
      await webhook?.stop();
    }
  },
);
