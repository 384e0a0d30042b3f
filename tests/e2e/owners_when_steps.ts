/**
 * Owners under `when` and `protectWhile`, end to end on a real kcp: an owner
 * rule (`fieldRef.from: Target`, a label on the Subnet) with a `when` switch
 * on the owner (`object.spec.deletionProtection`), failing closed when it
 * cannot be evaluated or does not compile; and `protectWhile: Active`,
 * under which an owner being deleted lets go, beside the default `Exists`,
 * under which it holds. Then every rule that says `Enforced` proves it
 * (`assertStatusTruth` builds a Network for which the `when` is true), and
 * the one whose condition does not compile is listed as not Enforced.
 * `owners_steps.ts` has the reference sources and tenancy. `controller.ts`
 * and `webhook.ts` run as separate processes, users act with kubectl.
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
  grantWebhookReads,
  labelPath,
  namespaceObject,
  networkObject,
  ownerRule,
  ownersProvider,
  type Step,
  subnetObject,
  subnetOwnedBy,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  waitForRuleReady,
  type WorldPaths,
} from "../../testing/mod.ts";
import {
  ACTIVE_OWNER_LABEL,
  BADLY_GUARDED_BY_LABEL,
  escape,
  GUARDED_BY_LABEL,
  OWNER_LABEL,
  ownerWorld,
  PROTECTION_SWITCH,
} from "../../testing/owner_world.ts";

/**
 * The steps of "owners: `when` on the owner switches its protection, failing
 * closed; under protectWhile: Active an owner being deleted lets go", in the
 * world under `paths` (its owners provider at `<prefix>:providers:owners`),
 * ending with status truth.
 */
export async function ownersWhenSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = ownerWorld(world, paths);

  await step(
    "topology, an owners provider exporting Networks and Projects bound by a consumer, webhook and controller",
    async () => {
      const [topo] = await Promise.all([
        buildTopology(kcp, {
          networkPath: w.network,
          computePath: w.compute,
          consumerPaths: [w.c1],
        }),
        ownersProvider(kcp, w.owners),
      ]);
      w.depCtrl = topo.depCtrl.path;
      await bindOwners(kcp, { consumer: w.c1, ownersPath: w.owners });
      await applyObjects(kcp, w.c1, [namespaceObject("team-a")]);
      await world.startComponents();
    },
  );

  await step(
    "an owner rule by a label without when or protectWhile (Exists), which the protectWhile step compares with",
    async () => {
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-owner", {
          networkPath: w.network,
          owner: "Network",
          fieldRef: { from: "Target", path: labelPath(OWNER_LABEL) },
        }),
      ]);
      const role = await grantWebhookReads(kcp);
      assert.match(role, /- networks\n\s+verbs:\n\s+- get\n/);
      await waitForRuleEnforced(kcp, {
        workspace: w.owners,
        name: "subnet-owner",
      });
    },
  );

  await step(
    "when: a Network with deletionProtection on holds its Subnets, off lets go, on again holds; one the condition cannot evaluate holds, saying so",
    async () => {
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-guard", {
          networkPath: w.network,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(GUARDED_BY_LABEL),
          },
          when: PROTECTION_SWITCH,
        }),
      ]);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: w.owners,
        name: "subnet-guard",
      });
      assert.match(
        ready.message,
        /^deleting subnets\.network\.example\.com is denied while the Network it names exists \(counting only one for which spec\.when is true\)/,
      );
      await applyObjects(kcp, w.c1, [
        networkObject("team-a", "net-g", { deletionProtection: true }),
        subnetObject("team-a", "s-g1", {
          labels: { [GUARDED_BY_LABEL]: "net-g" },
        }),
        subnetObject("team-a", "s-g2", {
          labels: { [GUARDED_BY_LABEL]: "net-g" },
        }),
      ]);
      const on = (name: string) =>
        subnetOwnedBy(name, {
          owner: "Network/net-g",
          field: `${labelPath(GUARDED_BY_LABEL)}, with ${PROTECTION_SWITCH}`,
        });
      await waitForDeleteDenial(kcp, w.subnet("team-a", "s-g1"), on("s-g1"));
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-g1"), on("s-g1"));
      const flip = (value: boolean) =>
        kcp.kubectlOk([
          "patch",
          "network",
          "net-g",
          "-n",
          "team-a",
          "--type=merge",
          "-p",
          JSON.stringify({ spec: { deletionProtection: value } }),
        ], { workspace: w.c1 });
      // The owner is read live at every delete: the switch acts at once.
      await flip(false);
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-g1"));
      await flip(true);
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-g2"), on("s-g2"));

      // A Network without the switch: object.spec.deletionProtection
      // cannot be read, so the condition cannot say, and the Network
      // holds (fail closed).
      await applyObjects(kcp, w.c1, [
        networkObject("team-a", "net-u"),
        subnetObject("team-a", "s-u", {
          labels: { [GUARDED_BY_LABEL]: "net-u" },
        }),
      ]);
      const unevaluated = new RegExp(
        `^cannot delete subnets/s-u: it belongs to Network/net-u \\(${
          escape(labelPath(GUARDED_BY_LABEL))
        }; the rule's condition ${
          escape(PROTECTION_SWITCH)
        } could not be evaluated \\(.+\\), so it protects\\), which still exists$`,
      );
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-u"), unevaluated);
      await flip(false);
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-g2"));
    },
  );

  await step(
    "when that does not compile: the rule is Ready=False InvalidCondition and still holds, the denial says the condition does not compile",
    async () => {
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-bad-guard", {
          networkPath: w.network,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(BADLY_GUARDED_BY_LABEL),
          },
          when: "object.spec.deletionProtection ==",
        }),
      ]);
      const ready = await waitForRuleReady(kcp, {
        workspace: w.owners,
        name: "subnet-bad-guard",
      }, {
        test: (ready) => ready.reason === "InvalidCondition",
        description: "InvalidCondition",
      });
      assert.equal(ready.status, "False");
      assert.match(
        ready.message,
        /^spec\.when: .+; until it compiles, the webhook counts it as true for every Network/,
      );
      const shownReason = await kcp.kubectlOk([
        "get",
        "dependencyrule",
        "subnet-bad-guard",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}',
      ], { workspace: w.owners });
      assert.equal(shownReason, "False/InvalidCondition");
      // Its switch is off, and still it holds: the condition cannot say.
      await applyObjects(kcp, w.c1, [
        networkObject("team-a", "net-b", { deletionProtection: false }),
        subnetObject("team-a", "s-b", {
          labels: { [BADLY_GUARDED_BY_LABEL]: "net-b" },
        }),
      ]);
      const doesNotCompile = new RegExp(
        `^cannot delete subnets/s-b: it belongs to Network/net-b \\(${
          escape(labelPath(BADLY_GUARDED_BY_LABEL))
        }; the rule's condition does not compile \\(.+\\), so it protects\\), which still exists$`,
      );
      await waitForDeleteDenial(
        kcp,
        w.subnet("team-a", "s-b"),
        doesNotCompile,
      );
      await assertDeleteDenied(
        kcp,
        w.subnet("team-a", "s-b"),
        doesNotCompile,
      );
      await kcp.kubectlOk(["delete", "network", "net-b", "-n", "team-a"], {
        workspace: w.c1,
      });
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-b"));
    },
  );

  await step(
    "protectWhile: a Network being deleted (held by a finalizer) lets go of its Subnets under Active and holds them under Exists",
    async () => {
      await applyObjects(kcp, w.owners, [
        ownerRule("subnet-active-owner", {
          networkPath: w.network,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(ACTIVE_OWNER_LABEL),
          },
          protectWhile: "Active",
        }),
      ]);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: w.owners,
        name: "subnet-active-owner",
      });
      assert.match(
        ready.message,
        /^deleting subnets\.network\.example\.com is denied while the Network it names exists \(counting only one that is not being deleted\)/,
      );
      await applyObjects(kcp, w.c1, [
        networkObject("team-a", "net-f", {
          finalizers: ["owners.example.com/hold"],
        }),
        subnetObject("team-a", "s-active", {
          labels: { [ACTIVE_OWNER_LABEL]: "net-f" },
        }),
        subnetObject("team-a", "s-exists", {
          labels: { [OWNER_LABEL]: "net-f" },
        }),
      ]);
      const active = subnetOwnedBy("s-active", {
        owner: "Network/net-f",
        field: labelPath(ACTIVE_OWNER_LABEL),
      });
      const existing = subnetOwnedBy("s-exists", {
        owner: "Network/net-f",
        field: labelPath(OWNER_LABEL),
      });
      // While the Network is active, both rules hold.
      await waitForDeleteDenial(kcp, w.subnet("team-a", "s-active"), active);
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-exists"), existing);

      await kcp.kubectlOk([
        "delete",
        "network",
        "net-f",
        "-n",
        "team-a",
        "--wait=false",
      ], { workspace: w.c1 });
      const stamp = await kcp.kubectlOk([
        "get",
        "network",
        "net-f",
        "-n",
        "team-a",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
      ], { workspace: w.c1 });
      assert.notEqual(stamp, "", "net-f has no deletionTimestamp");
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-active"));
      await assertDeleteDenied(kcp, w.subnet("team-a", "s-exists"), existing);

      await kcp.kubectlOk([
        "patch",
        "network",
        "net-f",
        "-n",
        "team-a",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
      ], { workspace: w.c1 });
      await waitFor("net-f to be gone", async () => {
        const r = await kcp.kubectl(
          ["get", "network", "net-f", "-n", "team-a"],
          { workspace: w.c1 },
        );
        return /NotFound|not found/.test(r.stderr) || undefined;
      }, { timeoutMs: 30_000, intervalMs: 250 });
      await assertDeleteAllowed(kcp, w.subnet("team-a", "s-exists"));
    },
  );

  await step(
    "status truth: every rule that says Ready=True Enforced denies a delete of what it covers, the one with a when through a Network for which it is true",
    async () => {
      const truth = await assertStatusTruth(kcp, {
        workspaces: [w.depCtrl, w.network, w.compute, w.owners, w.c1],
        minimum: { rules: 3 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${w.owners}/subnet-active-owner`,
        `${w.owners}/subnet-guard`,
        `${w.owners}/subnet-owner`,
      ]);
      assert.deepEqual(truth.notEnforced, [
        `${w.owners}/subnet-bad-guard (False/InvalidCondition)`,
      ]);
      assert.deepEqual(truth.leftBehind, []);
    },
  );
}
