/**
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
 * The unheld teardowns and `protectWhile: Active` are in
 * `owner_teardown_test.ts`. A probe Project that our own finalizer keeps
 * deleting shows when the webhook has taken `Exists`. Every teardown prints
 * its order and times.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  applyOrderRules,
  assertDependencyOrder,
  type ComponentProcess,
  garbageCollectorErrors,
  grantWebhookReads,
  kcpLogOffset,
  kcpLogSince,
  kcpTest,
  ownedCount,
  type OwnedTree,
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
  waitFor,
  waitForRuleEnforced,
  type WebhookProcess,
} from "../../testing/mod.ts";

const NETWORK = "root:providers:network";
const COMPUTE = "root:providers:compute";
const C1 = "root:consumers:c1";

kcpTest(
  "owner teardown held: an Exists owner rule holds a Project's foreground delete; a second delete with --cascade=background, the namespace's delete, or switching the rule to Active lets it go in dependency order",
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
        "an owner rule (from: Target, protectWhile: Exists): a Project being deleted still protects what it owns",
        async () => {
          await applyObjects(kcp, NETWORK, [
            projectOwnerRule({
              networkPath: NETWORK,
              computePath: COMPUTE,
              protectWhile: "Exists",
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
          // Exists: the probe, now being deleted, still protects.
          await c1.waitForProbe(true);
        },
      );

      await step(
        "with protectWhile: Exists, a user lets a held Project go by deleting it again with --cascade=background",
        async () => {
          const owned = ownedTree("rebg");
          const held = await c1.holdTeardown("rebg", owned);
          // The apiserver takes the latest propagation policy: Background
          // drops kcp's foregroundDeletion finalizer, the Project goes, and
          // with it what held its objects.
          const watches = await c1.recordTeardown();
          const before = await teardownDenials(webhook!);
          const from = performance.now();
          await kcp.kubectlOk([
            "delete",
            "project",
            "rebg",
            "-n",
            "rebg",
            "--cascade=background",
            "--wait=false",
          ], { workspace: C1 });
          await c1.waitForEmpty("rebg");
          const t = await watches.stop({ namespace: "rebg", from });
          const after = await teardownDenials(webhook!);
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
          const held = await c1.holdTeardown("nsdel", owned);
          const watches = await c1.recordTeardown();
          const before = await teardownDenials(webhook!);
          const from = performance.now();
          await kcp.kubectlOk(
            ["delete", "namespace", "nsdel", "--wait=false"],
            {
              workspace: C1,
            },
          );
          // What the Namespace says meanwhile, as a user reads it.
          const messages = new Set<string>();
          await waitFor("namespace nsdel to be gone", async () => {
            const r = await kcp.kubectl(
              ["get", "namespace", "nsdel", "-o", "json"],
              { workspace: C1 },
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
          const after = await teardownDenials(webhook!);
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
          const before = await teardownDenials(webhook!);
          const offset = await kcpLogOffset(kcp);
          const held = await c1.holdTeardown("held", owned);
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
            ], { workspace: C1 }),
          ) as { items: { metadata: { deletionTimestamp?: string } }[] };
          assert.equal(objects.items.length, ownedCount(owned));
          assert.ok(
            objects.items.every((o) =>
              o.metadata.deletionTimestamp === undefined
            ),
            "no owned object is being deleted",
          );
          // The Project waits with its deletionTimestamp and kcp's
          // foregroundDeletion finalizer; it shows no reason.
          const project = JSON.parse(
            await kcp.kubectlOk(
              ["get", "project", "held", "-n", "held", "-o", "json"],
              { workspace: C1 },
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
            { workspace: C1 },
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
            const r = await c1.delete({
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
          const after = await teardownDenials(webhook!);
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
          const watches = await c1.recordTeardown();
          const before = await teardownDenials(webhook!);
          const from = performance.now();
          await kcp.kubectlOk([
            "patch",
            "dependencyrule",
            PROJECT_OWNER_RULE,
            "--type=merge",
            "-p",
            '{"spec":{"protectWhile":"Active"}}',
          ], { workspace: NETWORK });
          await c1.waitForEmpty("held");
          const t = await watches.stop({ namespace: "held", from });
          const after = await teardownDenials(webhook!);
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
          await c1.releaseProbe();
        },
      );
    } finally {
      await controller?.stop();
      await webhook?.stop();
    }
  },
);
