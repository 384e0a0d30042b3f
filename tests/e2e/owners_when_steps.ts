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
  targetsOf,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  waitForRuleReady,
  type WorldPaths,
} from "../../testing/mod.ts";

/** The labels the rules read, one per rule so that each is seen alone. */
const OWNER = "network.example.com/owner";
const GUARDED_BY = "network.example.com/guarded-by";
const BADLY_GUARDED_BY = "network.example.com/badly-guarded-by";
const ACTIVE_OWNER = "network.example.com/active-owner";

const SWITCH = "object.spec.deletionProtection == true";

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

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
  const NETWORK = paths.network;
  const COMPUTE = paths.compute;
  /** The owners provider: exports Networks and Projects, holds the owner rules. */
  const OWNERS = `${paths.prefix}:providers:owners`;
  const C1 = paths.consumer("c1");
  /** The Subnet `name` in `namespace` of C1. */
  const subnet = targetsOf(C1, "subnet");
  let depCtrl = "";

  await step(
    "topology, an owners provider exporting Networks and Projects bound by a consumer, webhook and controller",
    async () => {
      const [topo] = await Promise.all([
        buildTopology(kcp, {
          networkPath: NETWORK,
          computePath: COMPUTE,
          consumerPaths: [C1],
        }),
        ownersProvider(kcp, OWNERS),
      ]);
      depCtrl = topo.depCtrl.path;
      await bindOwners(kcp, { consumer: C1, ownersPath: OWNERS });
      await applyObjects(kcp, C1, [namespaceObject("team-a")]);
      await world.startComponents();
    },
  );

  await step(
    "an owner rule by a label without when or protectWhile (Exists), which the protectWhile step compares with",
    async () => {
      await applyObjects(kcp, OWNERS, [
        ownerRule("subnet-owner", {
          networkPath: NETWORK,
          owner: "Network",
          fieldRef: { from: "Target", path: labelPath(OWNER) },
        }),
      ]);
      const role = await grantWebhookReads(kcp);
      assert.match(role, /- networks\n\s+verbs:\n\s+- get\n/);
      await waitForRuleEnforced(kcp, {
        workspace: OWNERS,
        name: "subnet-owner",
      });
    },
  );

  await step(
    "when: a Network with deletionProtection on holds its Subnets, off lets go, on again holds; one the condition cannot evaluate holds, saying so",
    async () => {
      await applyObjects(kcp, OWNERS, [
        ownerRule("subnet-guard", {
          networkPath: NETWORK,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(GUARDED_BY),
          },
          when: SWITCH,
        }),
      ]);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: OWNERS,
        name: "subnet-guard",
      });
      assert.match(
        ready.message,
        /^deleting subnets\.network\.example\.com is denied while the Network it names exists \(counting only one for which spec\.when is true\)/,
      );
      await applyObjects(kcp, C1, [
        networkObject("team-a", "net-g", { deletionProtection: true }),
        subnetObject("team-a", "s-g1", {
          labels: { [GUARDED_BY]: "net-g" },
        }),
        subnetObject("team-a", "s-g2", {
          labels: { [GUARDED_BY]: "net-g" },
        }),
      ]);
      const on = (name: string) =>
        subnetOwnedBy(name, {
          owner: "Network/net-g",
          field: `${labelPath(GUARDED_BY)}, with ${SWITCH}`,
        });
      await waitForDeleteDenial(kcp, subnet("team-a", "s-g1"), on("s-g1"));
      await assertDeleteDenied(kcp, subnet("team-a", "s-g1"), on("s-g1"));
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
        ], { workspace: C1 });
      // The owner is read live at every delete: the switch acts at once.
      await flip(false);
      await assertDeleteAllowed(kcp, subnet("team-a", "s-g1"));
      await flip(true);
      await assertDeleteDenied(kcp, subnet("team-a", "s-g2"), on("s-g2"));

      // A Network without the switch: object.spec.deletionProtection
      // cannot be read, so the condition cannot say, and the Network
      // holds (fail closed).
      await applyObjects(kcp, C1, [
        networkObject("team-a", "net-u"),
        subnetObject("team-a", "s-u", {
          labels: { [GUARDED_BY]: "net-u" },
        }),
      ]);
      const unevaluated = new RegExp(
        `^cannot delete subnets/s-u: it belongs to Network/net-u \\(${
          escape(labelPath(GUARDED_BY))
        }; the rule's condition ${
          escape(SWITCH)
        } could not be evaluated \\(.+\\), so it protects\\), which still exists$`,
      );
      await assertDeleteDenied(kcp, subnet("team-a", "s-u"), unevaluated);
      await flip(false);
      await assertDeleteAllowed(kcp, subnet("team-a", "s-g2"));
    },
  );

  await step(
    "when that does not compile: the rule is Ready=False InvalidCondition and still holds, the denial says the condition does not compile",
    async () => {
      await applyObjects(kcp, OWNERS, [
        ownerRule("subnet-bad-guard", {
          networkPath: NETWORK,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(BADLY_GUARDED_BY),
          },
          when: "object.spec.deletionProtection ==",
        }),
      ]);
      const ready = await waitForRuleReady(kcp, {
        workspace: OWNERS,
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
      ], { workspace: OWNERS });
      assert.equal(shownReason, "False/InvalidCondition");
      // Its switch is off, and still it holds: the condition cannot say.
      await applyObjects(kcp, C1, [
        networkObject("team-a", "net-b", { deletionProtection: false }),
        subnetObject("team-a", "s-b", {
          labels: { [BADLY_GUARDED_BY]: "net-b" },
        }),
      ]);
      const doesNotCompile = new RegExp(
        `^cannot delete subnets/s-b: it belongs to Network/net-b \\(${
          escape(labelPath(BADLY_GUARDED_BY))
        }; the rule's condition does not compile \\(.+\\), so it protects\\), which still exists$`,
      );
      await waitForDeleteDenial(
        kcp,
        subnet("team-a", "s-b"),
        doesNotCompile,
      );
      await assertDeleteDenied(
        kcp,
        subnet("team-a", "s-b"),
        doesNotCompile,
      );
      await kcp.kubectlOk(["delete", "network", "net-b", "-n", "team-a"], {
        workspace: C1,
      });
      await assertDeleteAllowed(kcp, subnet("team-a", "s-b"));
    },
  );

  await step(
    "protectWhile: a Network being deleted (held by a finalizer) lets go of its Subnets under Active and holds them under Exists",
    async () => {
      await applyObjects(kcp, OWNERS, [
        ownerRule("subnet-active-owner", {
          networkPath: NETWORK,
          owner: "Network",
          fieldRef: {
            from: "Target",
            path: labelPath(ACTIVE_OWNER),
          },
          protectWhile: "Active",
        }),
      ]);
      const ready = await waitForRuleEnforced(kcp, {
        workspace: OWNERS,
        name: "subnet-active-owner",
      });
      assert.match(
        ready.message,
        /^deleting subnets\.network\.example\.com is denied while the Network it names exists \(counting only one that is not being deleted\)/,
      );
      await applyObjects(kcp, C1, [
        networkObject("team-a", "net-f", {
          finalizers: ["owners.example.com/hold"],
        }),
        subnetObject("team-a", "s-active", {
          labels: { [ACTIVE_OWNER]: "net-f" },
        }),
        subnetObject("team-a", "s-exists", {
          labels: { [OWNER]: "net-f" },
        }),
      ]);
      const active = subnetOwnedBy("s-active", {
        owner: "Network/net-f",
        field: labelPath(ACTIVE_OWNER),
      });
      const existing = subnetOwnedBy("s-exists", {
        owner: "Network/net-f",
        field: labelPath(OWNER),
      });
      // While the Network is active, both rules hold.
      await waitForDeleteDenial(kcp, subnet("team-a", "s-active"), active);
      await assertDeleteDenied(kcp, subnet("team-a", "s-exists"), existing);

      await kcp.kubectlOk([
        "delete",
        "network",
        "net-f",
        "-n",
        "team-a",
        "--wait=false",
      ], { workspace: C1 });
      const stamp = await kcp.kubectlOk([
        "get",
        "network",
        "net-f",
        "-n",
        "team-a",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
      ], { workspace: C1 });
      assert.notEqual(stamp, "", "net-f has no deletionTimestamp");
      await assertDeleteAllowed(kcp, subnet("team-a", "s-active"));
      await assertDeleteDenied(kcp, subnet("team-a", "s-exists"), existing);

      await kcp.kubectlOk([
        "patch",
        "network",
        "net-f",
        "-n",
        "team-a",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
      ], { workspace: C1 });
      await waitFor("net-f to be gone", async () => {
        const r = await kcp.kubectl(
          ["get", "network", "net-f", "-n", "team-a"],
          { workspace: C1 },
        );
        return /NotFound|not found/.test(r.stderr) || undefined;
      }, { timeoutMs: 30_000, intervalMs: 250 });
      await assertDeleteAllowed(kcp, subnet("team-a", "s-exists"));
    },
  );

  await step(
    "status truth: every rule that says Ready=True Enforced denies a delete of what it covers, the one with a when through a Network for which it is true",
    async () => {
      const truth = await assertStatusTruth(kcp, {
        workspaces: [depCtrl, NETWORK, COMPUTE, OWNERS, C1],
        minimum: { rules: 3 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${OWNERS}/subnet-active-owner`,
        `${OWNERS}/subnet-guard`,
        `${OWNERS}/subnet-owner`,
      ]);
      assert.deepEqual(truth.notEnforced, [
        `${OWNERS}/subnet-bad-guard (False/InvalidCondition)`,
      ]);
      assert.deepEqual(truth.leftBehind, []);
    },
  );
}
