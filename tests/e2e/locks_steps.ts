/**
 * Locks on a real kcp, acted on with kubectl as tenants do: a consumer binds
 * the dep-ctrl export (accepting its claim), locks a VPC with a reason, and
 * the delete is denied naming the Lock and quoting the reason, whatever the
 * skip-protection annotation says; a Lock for Update denies updates too;
 * deleting the Lock unlocks. A Lock on a type of the workspace's own (a
 * ConfigMap) gets a configuration in that workspace. Components run as
 * their own processes and identities.
 */
import assert from "node:assert/strict";
import {
  applyLockEditor,
  applyObjects,
  applySystemAdminOverlay,
  assertStatusTruth,
  attempt,
  bindExport,
  buildTopology,
  type ComponentProcess,
  type ComponentWorld,
  DEP_CTRL_EXPORT,
  lockManifest,
  startController,
  type Step,
  VWC_CLAIM,
  waitFor,
  waitForDenial,
  waitForEndpointUrls,
  type WebhookProcess,
  workspaceCluster,
  type WorldPaths,
} from "../../testing/mod.ts";

import { locksWorld, relabel, TEAM_A_LOCK } from "../../testing/locks_world.ts";

/**
 * The steps of "locks: a Lock denies the delete (and, if asked, the update)
 * of its object with its reason until the Lock is deleted", in the world
 * under `paths`, with status truth.
 */
export async function locksSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp, network, c1, c2, vpcTarget } = locksWorld(world, paths);
  let webhook!: WebhookProcess;
  let controller!: ComponentProcess;
  await step(
    "a consumer binds the dep-ctrl export to write Locks; the components start",
    async () => {
      await buildTopology(kcp, {
        networkPath: network,
        computePath: paths.compute,
        consumerPaths: [c1, c2],
      });
      await bindExport(kcp, c1, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      await applySystemAdminOverlay(kcp, [
        {
          group: "network.example.com",
          resources: ["vpcs"],
          verbs: ["get"],
        },
        {
          group: "",
          resources: ["configmaps", "namespaces"],
          verbs: ["get"],
        },
      ]);
      ({ webhook, controller } = await world.startComponents());
      for (const ns of ["team-a", "team-b"]) {
        await kcp.kubectlOk(["create", "namespace", ns], { workspace: c1 });
      }
      await kcp.kubectlOk(["create", "namespace", "team-a"], {
        workspace: c2,
      });
      await applyObjects(kcp, c2, [{
        apiVersion: "network.example.com/v1alpha1",
        kind: "VPC",
        metadata: { name: "core", namespace: "team-a" },
        spec: {},
      }]);
      await applyObjects(kcp, c1, [
        {
          apiVersion: "network.example.com/v1alpha1",
          kind: "VPC",
          metadata: { name: "core", namespace: "team-a" },
          spec: {},
        },
        {
          apiVersion: "network.example.com/v1alpha1",
          kind: "VPC",
          metadata: { name: "core", namespace: "team-b" },
          spec: {},
        },
      ]);
    },
  );

  await step(
    "a Lock denies the delete with its reason; a dry run explains; the same name in another namespace or another tenant's workspace is not locked",
    async () => {
      await applyObjects(kcp, c1, [
        lockManifest("prod", { ...TEAM_A_LOCK, target: vpcTarget }),
      ]);
      const error = await waitForDenial(kcp, {
        workspace: c1,
        args: [
          "delete",
          "vpc",
          "core",
          "-n",
          "team-a",
          "--dry-run=server",
        ],
        expected: /locked by Lock/,
      });
      assert.match(
        error,
        /cannot delete vpcs\/core: locked by Lock team-a\/prod \("production VPC, ask #netops"\): deleting the Lock unlocks it; the skip-protection annotation does not/,
      );
      assert.notEqual(
        await attempt(kcp, c1, ["delete", "vpc", "core", "-n", "team-a"]),
        "",
      );
      // Tenant B: the same type, namespace and name in another workspace.
      const other = await kcp.kubectl([
        "delete",
        "vpc",
        "core",
        "-n",
        "team-a",
        "--dry-run=server",
      ], { workspace: c2 });
      assert.equal(other.code, 0, other.stderr);
      await kcp.kubectlOk(["get", "vpc", "core", "-n", "team-a"], {
        workspace: c1,
      });
      assert.equal(
        await attempt(kcp, c1, [
          "delete",
          "vpc",
          "core",
          "-n",
          "team-b",
          "--dry-run=server",
        ]),
        "",
      );
    },
  );

  await step(
    "a Lock reports Ready in its status and printer columns; one naming a type its export does not serve says TargetTypeUnknown",
    async () => {
      await waitFor("the Lock to be Ready", async () => {
        const out = await kcp.kubectlOk(["get", "locks", "-n", "team-a"], {
          workspace: c1,
        });
        return /prod\s+core\s+vpcs\s+production VPC, ask #netops\s+True/
          .test(out) || undefined;
      }, { timeoutMs: 60_000, intervalMs: 250 });
      await applyObjects(kcp, c1, [
        lockManifest("typo", {
          ...TEAM_A_LOCK,
          target: { ...vpcTarget, resource: "vpcz" },
        }),
      ]);
      const message = await waitFor("the typo Lock's status", async () => {
        const r = await kcp.kubectl([
          "get",
          "lock",
          "typo",
          "-n",
          "team-a",
          "-o",
          "jsonpath={.status.conditions[0].reason}|{.status.conditions[0].message}",
        ], { workspace: c1 });
        return r.stdout.startsWith("TargetTypeUnknown|") ? r.stdout : undefined;
      }, { timeoutMs: 60_000, intervalMs: 250 }) as string;
      assert.match(
        message,
        /does not export vpcz\.network\.example\.com: it exports subnets\.network\.example\.com \(v1alpha1\), vpcs\.network\.example\.com \(v1alpha1\)/,
      );
      await kcp.kubectlOk(["delete", "lock", "typo", "-n", "team-a"], {
        workspace: c1,
      });
    },
  );

  await step(
    "the skip-protection annotation does not override a Lock",
    async () => {
      await kcp.kubectlOk([
        "annotate",
        "vpc",
        "core",
        "-n",
        "team-a",
        "dependencies.opendefense.cloud/skip-protection=true",
      ], { workspace: c1 });
      assert.match(
        await attempt(kcp, c1, ["delete", "vpc", "core", "-n", "team-a"]),
        /locked by Lock team-a\/prod/,
      );
    },
  );

  await step(
    "a Lock for Update denies updates of the object, and only while it says so",
    async () => {
      assert.equal(
        await attempt(kcp, c1, [
          "label",
          "vpc",
          "core",
          "-n",
          "team-a",
          "tier=gold",
        ]),
        "",
      );
      await applyObjects(kcp, c1, [
        lockManifest("prod", {
          ...TEAM_A_LOCK,
          target: vpcTarget,
          operations: ["Delete", "Update"],
        }),
      ]);
      const error = await waitForDenial(kcp, {
        workspace: c1,
        args: relabel("team-a"),
        expected: /locked by Lock/,
      });
      assert.match(
        error,
        /cannot update vpcs\/core: locked by Lock team-a\/prod/,
      );
      // The provider writes status through its virtual workspace, as
      // its controller does: never blocked by a Lock.
      const [vw] = await waitForEndpointUrls(
        kcp,
        network,
        "network.example.com",
      );
      const cluster = await workspaceCluster(kcp, c1);
      await kcp.request(
        "PATCH",
        `${
          new URL(vw!).pathname
        }/clusters/${cluster}/apis/network.example.com/v1alpha1/namespaces/team-a/vpcs/core/status`,
        {
          body: { status: { phase: "Ready" } },
          contentType: "application/merge-patch+json",
        },
      );
      assert.equal(
        await kcp.kubectlOk([
          "get",
          "vpc",
          "core",
          "-n",
          "team-a",
          "-o",
          "jsonpath={.status.phase}",
        ], { workspace: c1 }),
        "Ready",
      );
      await applyObjects(kcp, c1, [
        lockManifest("prod", { ...TEAM_A_LOCK, target: vpcTarget }),
      ]);
      await waitFor(
        "updates to be allowed again",
        async () =>
          await attempt(kcp, c1, relabel("team-a")()) === "" || undefined,
        { timeoutMs: 60_000, intervalMs: 250 },
      );
    },
  );

  await step(
    "a Lock on a ConfigMap, a type of the workspace's own, is enforced through a configuration in that workspace",
    async () => {
      await kcp.kubectlOk([
        "create",
        "configmap",
        "settings",
        "-n",
        "team-a",
        "--from-literal=a=b",
      ], { workspace: c1 });
      await applyObjects(kcp, c1, [
        lockManifest("cfg", {
          ...TEAM_A_LOCK,
          target: {
            group: "",
            version: "v1",
            resource: "configmaps",
            name: "settings",
          },
        }),
      ]);
      const error = await waitForDenial(kcp, {
        workspace: c1,
        args: [
          "delete",
          "configmap",
          "settings",
          "-n",
          "team-a",
          "--dry-run=server",
        ],
        expected: /locked by Lock/,
      });
      assert.match(
        error,
        /cannot delete configmaps\/settings: locked by Lock team-a\/cfg/,
      );
    },
  );

  await step(
    "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
    async () => {
      // Placed where the most Locks are alive: prod and cfg (later
      // steps delete cfg, and the Locks they create go again).
      const truth = await assertStatusTruth(kcp, {
        workspaces: [
          "root:dep-ctrl",
          network,
          paths.compute,
          c1,
          c2,
        ],
        minimum: { locks: 2 },
      });
      assert.deepEqual(truth.locksProven.sort(), [
        `${c1}/team-a/cfg`,
        `${c1}/team-a/prod`,
      ]);
      assert.deepEqual(truth.leftBehind, []);
    },
  );

  await step(
    "a tenant without RBAC on Locks can neither create nor delete one; lock-editor in a namespace allows exactly that namespace",
    async () => {
      await applyLockEditor(kcp, c1);
      const asUser = (args: string[], stdin?: string) =>
        kcp.kubectl(args, {
          workspace: c1,
          identity: "user",
          ...(stdin === undefined ? {} : { stdin }),
        });
      const mine = JSON.stringify(
        lockManifest("mine", { ...TEAM_A_LOCK, target: vpcTarget }),
      );
      const denied = await asUser(["create", "-f", "-"], mine);
      assert.notEqual(denied.code, 0);
      assert.match(denied.stderr, /forbidden/i);
      const unlock = await asUser([
        "delete",
        "lock",
        "prod",
        "-n",
        "team-a",
      ]);
      assert.notEqual(unlock.code, 0);
      assert.match(unlock.stderr, /forbidden/i);
      await kcp.kubectlOk([
        "create",
        "rolebinding",
        "lock-editors",
        "-n",
        "team-a",
        "--clusterrole=dependencies:lock-editor",
        "--user=user-1",
      ], { workspace: c1 });
      await waitFor(
        "user-1 to create a Lock in team-a",
        async () =>
          (await asUser(["create", "-f", "-"], mine)).code === 0 ||
          undefined,
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      const elsewhere = await asUser(
        ["create", "-f", "-"],
        JSON.stringify({
          ...lockManifest("theirs", { ...TEAM_A_LOCK, target: vpcTarget }),
          metadata: { name: "theirs", namespace: "team-b" },
        }),
      );
      assert.notEqual(elsewhere.code, 0);
      assert.match(elsewhere.stderr, /forbidden/i);
      const removed = await asUser([
        "delete",
        "lock",
        "mine",
        "-n",
        "team-a",
      ]);
      assert.equal(removed.code, 0, removed.stderr);
    },
  );

  await step(
    "a Lock created and one deleted while the controller is down converge when it is back",
    async () => {
      await controller.stop();
      await applyObjects(kcp, c1, [{
        apiVersion: "dependencies.opendefense.cloud/v1alpha1",
        kind: "Lock",
        metadata: { name: "later", namespace: "team-b" },
        spec: {
          target: vpcTarget,
          reason: "locked while the controller was down",
          operations: ["Delete", "Update"],
        },
      }]);
      await kcp.kubectlOk(["delete", "lock", "cfg", "-n", "team-a"], {
        workspace: c1,
      });
      assert.equal(
        await kcp.kubectlOk([
          "get",
          "lock",
          "later",
          "-n",
          "team-b",
          "-o",
          "jsonpath={.status.conditions}",
        ], { workspace: c1 }),
        "",
        "no status without the controller",
      );
      controller = await startController(kcp, { webhook });
      world.keep({ webhook, controller });
      await waitFor("the new Lock to be Ready", async () => {
        const out = await kcp.kubectlOk([
          "get",
          "lock",
          "later",
          "-n",
          "team-b",
          "-o",
          "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
        ], { workspace: c1 });
        return out === "True" || undefined;
      }, { timeoutMs: 60_000, intervalMs: 250 });
      // Its Update is enforced: the configuration gained UPDATE.
      const error = await waitForDenial(kcp, {
        workspace: c1,
        args: relabel("team-b"),
        expected: /locked by Lock/,
      });
      assert.match(
        error,
        /cannot update vpcs\/core: locked by Lock team-b\/later/,
      );
      // The Lock deleted meanwhile: the ConfigMap configuration in the
      // consumer is removed, and the ConfigMap can go.
      await waitFor(
        "the consumer's own configuration to be removed",
        async () => {
          const r = await kcp.kubectl(
            ["get", "validatingwebhookconfigurations", "-o", "name"],
            { workspace: c1 },
          );
          return r.code === 0 && r.stdout.trim() === "" || undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      await controller.stop();
      await kcp.kubectlOk(["delete", "lock", "later", "-n", "team-b"], {
        workspace: c1,
      });
      controller = await startController(kcp, { webhook });
      world.keep({ webhook, controller });
      await waitFor(
        "UPDATE to leave the provider's configuration",
        async () => {
          const config = await kcp.request<{
            webhooks: { rules: { operations: string[] }[] }[];
          }>(
            "GET",
            `/clusters/${network}/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/dependency-controller`,
          );
          const operations = config.webhooks.flatMap((w) =>
            w.rules.flatMap((r) => r.operations)
          );
          return !operations.includes("UPDATE") &&
              operations.includes("DELETE") ||
            undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      assert.equal(
        await attempt(kcp, c1, relabel("team-b")()),
        "",
      );
    },
  );

  await step(
    "a Lock on a Namespace keeps the whole namespace; deleting the Lock lets it go",
    async () => {
      await applyObjects(kcp, c1, [{
        apiVersion: "dependencies.opendefense.cloud/v1alpha1",
        kind: "Lock",
        metadata: { name: "home", namespace: "team-b" },
        spec: {
          target: {
            group: "",
            version: "v1",
            resource: "namespaces",
            name: "team-b",
          },
          reason: "tenant home",
        },
      }]);
      const error = await waitForDenial(kcp, {
        workspace: c1,
        args: [
          "delete",
          "namespace",
          "team-b",
          "--dry-run=server",
        ],
        expected: /locked by Lock/,
      });
      assert.match(
        error,
        /cannot delete namespaces\/team-b: locked by Lock team-b\/home \("tenant home"\)/,
      );
      await kcp.kubectlOk(["delete", "lock", "home", "-n", "team-b"], {
        workspace: c1,
      });
      await waitFor(
        "the namespace delete to be accepted",
        async () =>
          await attempt(kcp, c1, [
              "delete",
              "namespace",
              "team-b",
              "--wait=false",
            ]) ===
            "" || undefined,
        { timeoutMs: 60_000, intervalMs: 250 },
      );
    },
  );

  await step(
    "deleting a namespace takes its Locks with it: the locked object goes once its Lock has gone",
    async () => {
      await kcp.kubectlOk(["create", "namespace", "team-c"], {
        workspace: c1,
      });
      await applyObjects(kcp, c1, [
        {
          apiVersion: "network.example.com/v1alpha1",
          kind: "VPC",
          metadata: { name: "core", namespace: "team-c" },
          spec: {},
        },
        {
          apiVersion: "dependencies.opendefense.cloud/v1alpha1",
          kind: "Lock",
          metadata: { name: "prod", namespace: "team-c" },
          spec: { target: vpcTarget, reason: "teardown test" },
        },
      ]);
      await waitForDenial(kcp, {
        workspace: c1,
        args: [
          "delete",
          "vpc",
          "core",
          "-n",
          "team-c",
          "--dry-run=server",
        ],
        expected: /locked by Lock team-c\/prod/,
      });
      const started = performance.now();
      await kcp.kubectlOk(
        ["delete", "namespace", "team-c", "--wait=false"],
        {
          workspace: c1,
        },
      );
      await waitFor("namespace team-c to be gone", async () => {
        const r = await kcp.kubectl(["get", "namespace", "team-c"], {
          workspace: c1,
        });
        return (r.code !== 0 && /not found/i.test(r.stderr)) || undefined;
      }, { timeoutMs: 180_000, intervalMs: 500 });
      console.log(
        `namespace teardown with a Lock took ${
          ((performance.now() - started) / 1000).toFixed(1)
        } s`,
      );
    },
  );

  await step("deleting the Locks unlocks", async () => {
    await kcp.kubectlOk(
      ["delete", "locks", "prod", "-n", "team-a"],
      {
        workspace: c1,
      },
    );
    await waitFor(
      "the VPC to be deleted",
      async () =>
        await attempt(kcp, c1, ["delete", "vpc", "core", "-n", "team-a"]) ===
          "" ||
        undefined,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    await waitFor(
      "the ConfigMap to be deleted",
      async () =>
        await attempt(kcp, c1, [
            "delete",
            "configmap",
            "settings",
            "-n",
            "team-a",
          ]) === "" || undefined,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    assert.notEqual(
      await attempt(kcp, c1, ["get", "vpc", "core", "-n", "team-a"]),
      "",
    );
  });
}
