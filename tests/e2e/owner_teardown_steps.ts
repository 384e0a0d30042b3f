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
 *   the owner's own foreground delete, and the ways out, follow.
 * - Every rule that says `Enforced`, the owner rule too, proves it
 *   (`assertStatusTruth`).
 *
 * A probe Project that our own finalizer keeps deleting shows when the
 * webhook has taken each `protectWhile`. Every teardown prints its order and
 * times.
 *
 * An owner rule with `protectWhile: Exists` holds its owner's foreground
 * delete, on a real kcp with kcp's own garbage collector: the Project
 * (`testing/owned_projects.ts`) still exists while it is being deleted, so
 * every delete of what it owns is denied (`denied_owned`), nothing it owns
 * is deleted, and the Project stays with its deletionTimestamp; kcp's
 * garbage collector logs our denial (kcp's log, an operator's view: the
 * collector records no Event, and the Project shows only its
 * deletionTimestamp and kcp's foregroundDeletion finalizer), and a user sees
 * the reason only by deleting an owned object. Three ways out, each
 * completing the teardown in dependency order (watches record it,
 * `testing/deletion_order.ts`): the user deletes the Project again with
 * `--cascade=background` (the apiserver takes the latest policy and drops
 * foregroundDeletion, so the owner is gone at once); the user deletes the
 * namespace (kcp's namespace controller deletes with Background too); the
 * provider switches the rule to Active.
 *
 * Both run in two worlds (`testing/owner_teardown_world.ts`): the
 * teardowns that go through under `root:unheld`, the held ones under
 * `root:held`, each with providers of its own, so that one world's exports,
 * rules and probe reach nothing of the other's; dep-ctrl, the webhook and
 * the controller serve both.
 */
import assert from "node:assert/strict";
import {
  applyOrderRules,
  assertDependencyOrder,
  assertStatusTruth,
  buildProjectsTopology,
  type ComponentWorld,
  garbageCollectorErrors,
  kcpLogOffset,
  kcpLogSince,
  ownedCount,
  type OwnedTree,
  ownedTree,
  PROJECT_OWNER_RULE,
  projectDenial,
  projectPlace,
  reportDeletionOrder,
  startProjects,
  type Step,
  teardownDenials,
  type TeardownResource,
  waitFor,
  waitForRuleEnforced,
} from "../../testing/mod.ts";
import {
  declareProjectRule,
  ownerTeardownWorld,
} from "../../testing/owner_teardown_world.ts";

/**
 * The steps of "owner teardown: deleting a Project removes what it owns in
 * dependency order with kcp's garbage collector, also under an Active owner
 * rule; an Exists owner rule holds a Project's foreground delete, and a
 * second delete with --cascade=background, the namespace's delete, or
 * switching the rule to Active lets it go in dependency order", in the
 * worlds `root:unheld` and `root:held`. Its first step starts the
 * components; they run when it ends.
 */
export async function ownerTeardownSteps(
  world: ComponentWorld,
  step: Step,
): Promise<void> {
  const { kcp } = world;
  const w = ownerTeardownWorld(world);
  await step(
    "the network provider exports Projects and Subnets that name their VPC; a consumer binds both providers",
    async () => {
      world.keep(
        await startProjects(kcp, {
          networkPath: w.unheld.network,
          computePath: w.unheld.compute,
          consumer: w.c1.workspace,
        }),
      );
      await buildProjectsTopology(kcp, {
        networkPath: w.held.network,
        computePath: w.held.compute,
        consumer: w.heldC1.workspace,
      });
    },
  );

  await step(
    "rules of the default kind: a VirtualMachine refers to its Subnet, a Subnet to its VPC",
    async () => {
      for (const paths of [w.unheld, w.held]) {
        await applyOrderRules(kcp, {
          networkPath: paths.network,
          computePath: paths.compute,
        });
      }
    },
  );

  await step(
    "kubectl delete project --cascade=foreground: VirtualMachines, then Subnets, then VPCs, then the Project",
    async () => {
      const owned = ownedTree("fg");
      await w.c1.createProject("fg", owned);
      await w.c1.waitForReferences("fg", owned);
      const before = await teardownDenials(w.webhook);
      const t = await w.c1.teardown("fg", "foreground");
      const after = await teardownDenials(w.webhook);
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
      await w.c1.createProject("bg", owned);
      await w.c1.waitForReferences("bg", owned);
      const before = await teardownDenials(w.webhook);
      const t = await w.c1.teardown("bg", "background");
      const after = await teardownDenials(w.webhook);
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
      await declareProjectRule(kcp, {
        network: w.unheld.network,
        compute: w.unheld.compute,
        consumer: w.c1,
        protectWhile: "Active",
      });
    },
  );

  await step(
    "with protectWhile: Active, the owner's foreground delete completes in dependency order",
    async () => {
      const owned = ownedTree("active");
      await w.c1.createProject("active", owned);
      await w.c1.waitForReferences("active", owned);
      // The active Project protects each object it owns.
      for (
        const [resource, name] of [
          ["vpcs", owned.vpcs[0]!],
          ["subnets", owned.subnets[0]!.name],
          ["virtualmachines", owned.vms[0]!.name],
        ] as [TeardownResource, string][]
      ) {
        await w.c1.waitForDryRun({
          resource,
          namespace: "active",
          name,
        }, projectDenial({ resource, name }, "active"));
      }
      const r = await w.c1.delete({
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
      const before = await teardownDenials(w.webhook);
      const t = await w.c1.teardown("active", "foreground");
      const after = await teardownDenials(w.webhook);
      assertDependencyOrder(t, owned);
      assert.equal(projectPlace(t, "active"), "last");
      assert.equal(t.deleting[0]?.resource, "projects");
      reportDeletionOrder("foreground, owner rule Active", t, {
        extra: `${after.referenced - before.referenced} denied_referenced, ${
          after.owned - before.owned
        } denied_owned`,
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
      ], { workspace: w.unheld.network });
      await waitForRuleEnforced(kcp, {
        workspace: w.unheld.network,
        name: PROJECT_OWNER_RULE,
      }, { intervalMs: 200 });
      await w.c1.waitForProbe(true);
    },
  );

  await step(
    "status truth: every rule that says Ready=True Enforced, the owner rule too, denies a delete of what it covers",
    async () => {
      const truth = await assertStatusTruth(kcp, {
        workspaces: [
          "root:dep-ctrl",
          w.unheld.network,
          w.unheld.compute,
          w.c1.workspace,
        ],
        minimum: { rules: 3 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${w.unheld.compute}/vm-subnet`,
        `${w.unheld.network}/${PROJECT_OWNER_RULE}`,
        `${w.unheld.network}/subnet-vpc`,
      ]);
      // One per dependency: the owner rule protects three types.
      assert.equal(truth.denials, 5);
      assert.deepEqual(truth.leftBehind, []);
    },
  );

  await step(
    "the probe goes, with what it owns, once our finalizer lets it",
    async () => {
      await w.c1.releaseProbe();
    },
  );

  await step(
    "an owner rule (from: Target, protectWhile: Exists): a Project being deleted still protects what it owns",
    async () => {
      await declareProjectRule(kcp, {
        network: w.held.network,
        compute: w.held.compute,
        consumer: w.heldC1,
        protectWhile: "Exists",
      });
    },
  );

  await step(
    "with protectWhile: Exists, a user lets a held Project go by deleting it again with --cascade=background",
    async () => {
      const owned = ownedTree("rebg");
      const held = await w.heldC1.holdTeardown("rebg", owned);
      // The apiserver takes the latest propagation policy: Background
      // drops kcp's foregroundDeletion finalizer, the Project goes, and
      // with it what held its objects.
      const watches = await w.heldC1.recordTeardown();
      const before = await teardownDenials(w.webhook);
      const from = performance.now();
      await kcp.kubectlOk([
        "delete",
        "project",
        "rebg",
        "-n",
        "rebg",
        "--cascade=background",
        "--wait=false",
      ], { workspace: w.heldC1.workspace });
      await w.heldC1.waitForEmpty("rebg");
      const t = await watches.stop({ namespace: "rebg", from });
      const after = await teardownDenials(w.webhook);
      assertDependencyOrder(t, owned);
      assert.equal(projectPlace(t, "rebg"), "first");
      reportDeletionOrder(
        "foreground, owner rule Exists, released by the user's second delete with --cascade=background",
        t,
        {
          extra: `held: kcp's garbage collector denied all ${
            ownedCount(owned)
          } owned objects within ${
            held.toFixed(2)
          } s of the first delete; after the second: ${
            after.owned - before.owned
          } denied_owned, ${
            after.referenced - before.referenced
          } denied_referenced`,
          since: "the second delete",
        },
      );
    },
  );

  await step(
    "with protectWhile: Exists, deleting the held Project's namespace lets it go: kcp's namespace controller deletes with Background",
    async () => {
      const owned = ownedTree("nsdel");
      const held = await w.heldC1.holdTeardown("nsdel", owned);
      const watches = await w.heldC1.recordTeardown();
      const before = await teardownDenials(w.webhook);
      const from = performance.now();
      await kcp.kubectlOk(
        ["delete", "namespace", "nsdel", "--wait=false"],
        {
          workspace: w.heldC1.workspace,
        },
      );
      // What the Namespace says meanwhile, as a user reads it.
      const messages = new Set<string>();
      await waitFor("namespace nsdel to be gone", async () => {
        const r = await kcp.kubectl(
          ["get", "namespace", "nsdel", "-o", "json"],
          { workspace: w.heldC1.workspace },
        );
        if (/NotFound/.test(r.stderr)) return true;
        const ns = JSON.parse(r.stdout) as {
          status?: {
            conditions?: {
              type: string;
              status: string;
              message: string;
            }[];
          };
        };
        for (const c of ns.status?.conditions ?? []) {
          if (c.status === "True") messages.add(`${c.type}: ${c.message}`);
        }
        return undefined;
      }, { timeoutMs: 300_000, intervalMs: 100 });
      const t = await watches.stop({ namespace: "nsdel", from });
      const after = await teardownDenials(w.webhook);
      assertDependencyOrder(t, owned);
      reportDeletionOrder(
        "foreground, owner rule Exists, released by deleting the namespace",
        t,
        {
          extra: `held: kcp's garbage collector denied all ${
            ownedCount(owned)
          } owned objects within ${
            held.toFixed(2)
          } s of the Project's delete; after the namespace's delete: ${
            after.owned - before.owned
          } denied_owned, ${
            after.referenced - before.referenced
          } denied_referenced; the Namespace's True conditions seen meanwhile: ${
            messages.size === 0 ? "none" : [...messages].join(" | ")
          }`,
          since: "the namespace's delete",
        },
      );
    },
  );

  let heldOwned: OwnedTree | undefined;
  await step(
    "with protectWhile: Exists, the owner's foreground delete is held: what it owns stays, the Project stays deleting",
    async () => {
      const owned = heldOwned = ownedTree("held");
      const before = await teardownDenials(w.webhook);
      const offset = await kcpLogOffset(kcp);
      const held = await w.heldC1.holdTeardown("held", owned);
      // kcp's garbage collector says why in kcp's log, an operator's view.
      const line = garbageCollectorErrors(await kcpLogSince(kcp, offset))
        .find((l) =>
          projectDenial({
            resource: "virtualmachines",
            name: owned.vms[0]!.name,
          }, "held").test(l)
        )!;
      assert.match(line, /admission webhook .*denied the request/);
      // Everything it owns is still there, not even marked.
      const objects = JSON.parse(
        await kcp.kubectlOk([
          "get",
          "vpcs,subnets,virtualmachines",
          "-n",
          "held",
          "-o",
          "json",
        ], { workspace: w.heldC1.workspace }),
      ) as { items: { metadata: { deletionTimestamp?: string } }[] };
      assert.equal(objects.items.length, ownedCount(owned));
      assert.ok(
        objects.items.every((o) => o.metadata.deletionTimestamp === undefined),
        "no owned object is being deleted",
      );
      // The Project waits with its deletionTimestamp and kcp's
      // foregroundDeletion finalizer; it shows no reason.
      const project = JSON.parse(
        await kcp.kubectlOk(
          ["get", "project", "held", "-n", "held", "-o", "json"],
          { workspace: w.heldC1.workspace },
        ),
      ) as {
        metadata: { deletionTimestamp?: string; finalizers?: string[] };
        status?: unknown;
      };
      assert.ok(project.metadata.deletionTimestamp !== undefined);
      assert.deepEqual(project.metadata.finalizers, ["foregroundDeletion"]);
      assert.equal(project.status, undefined);
      // kcp's garbage collector records no Event about it.
      const events = await kcp.kubectlOk(
        ["get", "events", "-A", "-o", "json"],
        { workspace: w.heldC1.workspace },
      );
      assert.doesNotMatch(events, /belongs to Project/);
      // A user sees the reason by deleting an owned object.
      for (
        const [resource, name] of [
          ["virtualmachines", owned.vms[0]!.name],
          ["subnets", owned.subnets[0]!.name],
          ["vpcs", owned.vpcs[0]!],
        ] as [TeardownResource, string][]
      ) {
        const r = await w.heldC1.delete({
          resource,
          namespace: "held",
          name,
        });
        assert.notEqual(r.code, 0, `a user's delete of ${name}`);
        assert.match(
          r.stderr,
          projectDenial({ resource, name }, "held"),
        );
        assert.match(r.stderr, /Error from server \(Conflict\)/);
      }
      const after = await teardownDenials(w.webhook);
      const denial = /denied the request: (.*?)"(?: [a-z]+=|$)/.exec(
        line,
      )?.[1] ?? line;
      console.log(
        `foreground, owner rule Exists: held; kcp's garbage collector was denied all ${
          ownedCount(owned)
        } owned objects within ${held.toFixed(2)} s of the delete; ${
          after.owned - before.owned
        } denied_owned and ${
          after.referenced - before.referenced
        } denied_referenced reviews so far\n  kcp's log (garbagecollector.go, "error syncing item"): ${denial}`,
      );
    },
  );

  await step(
    "switching the owner rule to Active releases the held teardown, which completes in dependency order",
    async () => {
      const owned = heldOwned!;
      const watches = await w.heldC1.recordTeardown();
      const before = await teardownDenials(w.webhook);
      const from = performance.now();
      await kcp.kubectlOk([
        "patch",
        "dependencyrule",
        PROJECT_OWNER_RULE,
        "--type=merge",
        "-p",
        '{"spec":{"protectWhile":"Active"}}',
      ], { workspace: w.held.network });
      await w.heldC1.waitForEmpty("held");
      const t = await watches.stop({ namespace: "held", from });
      const after = await teardownDenials(w.webhook);
      // The Project was marked before the watches started: only the
      // deletions are seen, the Project's last.
      assertDependencyOrder(t, owned);
      assert.equal(projectPlace(t, "held"), "last");
      reportDeletionOrder(
        "foreground, owner rule Exists, after the release (switched to Active)",
        t,
        {
          extra: `${after.owned - before.owned} denied_owned, ${
            after.referenced - before.referenced
          } denied_referenced after the release`,
          since: "the release",
        },
      );
      // The probe goes too once our finalizer lets it.
      await w.heldC1.releaseProbe();
    },
  );
}
