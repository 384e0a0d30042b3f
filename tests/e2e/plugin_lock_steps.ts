/**
 * `kubectl dependencies lock` and `unlock` on a real kcp, as a tenant with
 * the rights the docs grant: access to the workspace, `lock-editor` per
 * namespace, and list on APIBindings (which the plugin reads to learn the
 * APIExport a type is bound from). The tenant locks a bound VPC without
 * naming its export, the Lock becomes Ready, a delete is denied with the
 * reason, `unlock` lets it go; a Namespace is locked the same way; a Lock
 * written with `--for 45s` holds a VPC until then and no longer, and then
 * shows `Ready False Expired`; an unknown type and a missing permission
 * exit 2 naming what is wrong.
 * Components run as their own processes and identities.
 */
import assert from "node:assert/strict";
import {
  applyLockEditor,
  applyObjects,
  applySystemAdminOverlay,
  assertExit,
  bindExport,
  buildTopology,
  type CommandResult,
  type ComponentWorld,
  DEP_CTRL_EXPORT,
  type Step,
  VWC_CLAIM,
  waitFor,
  waitForDenial,
  type WorldPaths,
} from "../../testing/mod.ts";
import { runPlugin } from "../../testing/plugin.ts";
import {
  LOCK_REASON,
  type PluginLockWorld,
  pluginLockWorld,
  waitForAllowed,
} from "../../testing/plugin_lock_world.ts";

/**
 * The steps of "plugin lock: a tenant locks and unlocks a bound VPC and a
 * Namespace by what it types after kubectl", in the world under `paths`.
 */
export async function pluginLockSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = pluginLockWorld(world, paths);
  await step(
    "a consumer binds the network provider and the dep-ctrl export; the components start",
    async () => {
      await buildTopology(kcp, {
        networkPath: w.network,
        computePath: w.compute,
        consumerPaths: [w.c1],
      });
      await bindExport(kcp, w.c1, {
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
        { group: "", resources: ["namespaces"], verbs: ["get"] },
      ]);
      await world.startComponents();
      for (const ns of ["team-a", "team-b", "team-c"]) {
        await kcp.kubectlOk(["create", "namespace", ns], { workspace: w.c1 });
      }
      await applyObjects(
        kcp,
        w.c1,
        ["team-a", "team-c"].map((ns) => ({
          apiVersion: "network.example.com/v1alpha1",
          kind: "VPC",
          metadata: { name: "core", namespace: ns },
          spec: {},
        })),
      );
    },
  );

  await step(
    "the tenant gets access, lock-editor in team-a and team-b, lock-viewer in team-c",
    async () => {
      await applyLockEditor(kcp, w.c1);
      for (const ns of ["team-a", "team-b"]) {
        await kcp.kubectlOk([
          "create",
          "rolebinding",
          "lock-editors",
          "-n",
          ns,
          "--clusterrole=dependencies:lock-editor",
          "--user=user-1",
        ], { workspace: w.c1 });
      }
      await kcp.kubectlOk([
        "create",
        "rolebinding",
        "lock-viewers",
        "-n",
        "team-c",
        "--clusterrole=dependencies:lock-viewer",
        "--user=user-1",
      ], { workspace: w.c1 });
      w.tenant = await kcp.kubeconfig("user", w.c1);
    },
  );

  await step(
    "without list on APIBindings the plugin cannot tell the export: exit 2 naming the permission; nothing is written",
    async () => {
      const r = await w.plugin([
        "lock",
        "vpc/core",
        "-n",
        "team-a",
        "--reason",
        LOCK_REASON,
      ]);
      assertExit(r, 2);
      assert.ok(
        r.stderr.includes(
          `you may not list apibindings.apis.kcp.io in workspace ${w.c1} (read to learn which APIExport vpcs.network.example.com is bound from)`,
        ),
        r.stderr,
      );
      assert.equal(
        await kcp.kubectlOk(["get", "locks", "-A", "-o", "name"], {
          workspace: w.c1,
        }),
        "",
      );
      // The docs' grant for `lock`: manifests/kcp/lock-editor's
      // dependencies:binding-reader, bound workspace-wide.
      await kcp.kubectlOk([
        "create",
        "clusterrolebinding",
        "user-1-binding-reader",
        "--clusterrole=dependencies:binding-reader",
        "--user=user-1",
      ], { workspace: w.c1 });
    },
  );

  await step(
    "lock vpc/core: the Lock names the export, becomes Ready, and the delete is denied with the reason",
    async () => {
      const r = await waitFor("the tenant to lock vpc/core", async () => {
        const r = await w.plugin([
          "lock",
          "vpc/core",
          "-n",
          "team-a",
          "--reason",
          LOCK_REASON,
        ]);
        // RBAC just granted may take a moment to reach the authorizer.
        if (/you may not list apibindings/.test(r.stderr)) return undefined;
        return r;
      }, { timeoutMs: 30_000, intervalMs: 500 }) as CommandResult;
      assertExit(r, 0);
      assert.match(
        r.stdout,
        /^lock\.dependencies\.opendefense\.cloud\/vpcs-core created\nlock\.dependencies\.opendefense\.cloud\/vpcs-core is Ready: deleting vpcs\/core is denied while this Lock exists/,
      );
      const target = JSON.parse(
        await kcp.kubectlOk([
          "get",
          "lock",
          "vpcs-core",
          "-n",
          "team-a",
          "-o",
          "jsonpath={.spec.target}",
        ], { workspace: w.c1 }),
      );
      assert.deepEqual(target, {
        apiExportRef: { path: w.network, name: "network.example.com" },
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        name: "core",
      });
      const error = await waitForDenial(kcp, {
        workspace: w.c1,
        args: ["delete", "vpc", "core", "-n", "team-a"],
        expected: /locked by Lock/,
      });
      assert.match(
        error,
        /cannot delete vpcs\/core: locked by Lock team-a\/vpcs-core \("production VPC, ask #netops"\)/,
      );
    },
  );

  await step(
    "locking it again needs --update, which replaces the reason and operations",
    async () => {
      const again = await w.plugin([
        "lock",
        "vpcs.network.example.com/core",
        "-n",
        "team-a",
        "--reason",
        "another reason",
      ]);
      assertExit(again, 2);
      assert.match(
        again.stderr,
        /vpcs\.network\.example\.com\/core is already locked in namespace team-a by Lock vpcs-core \("production VPC, ask #netops"\): use --update/,
      );
      const updated = await w.plugin([
        "lock",
        "vpcs.v1alpha1.network.example.com",
        "core",
        "-n",
        "team-a",
        "--reason",
        "frozen for the audit",
        "--operations",
        "Delete,Update",
        "--update",
        "-o",
        "json",
      ]);
      assertExit(updated, 0);
      const lock = JSON.parse(updated.stdout);
      assert.equal(lock.spec.reason, "frozen for the audit");
      assert.deepEqual(lock.spec.operations, ["Delete", "Update"]);
      assert.equal(lock.status.conditions[0].status, "True");
      await waitForDenial(kcp, {
        workspace: w.c1,
        args: ["delete", "vpc", "core", "-n", "team-a"],
        expected: /locked by Lock team-a\/vpcs-core \("frozen for the audit"\)/,
      });
    },
  );

  await step(
    "unlock vpc/core: the Lock goes and so can the VPC",
    async () => {
      const r = await w.plugin(["unlock", "vpc/core", "-n", "team-a"]);
      assertExit(r, 0);
      assert.equal(
        r.stdout,
        "lock.dependencies.opendefense.cloud/vpcs-core deleted\n",
      );
      const none = await w.plugin(["unlock", "vpc/core", "-n", "team-a"]);
      assertExit(none, 1);
      assert.match(
        none.stderr,
        /nothing locks vpcs\.network\.example\.com\/core in namespace team-a/,
      );
      await waitForAllowed(kcp, w.c1, [
        "delete",
        "vpc",
        "core",
        "-n",
        "team-a",
      ]);
    },
  );

  await step(
    "lock namespace/team-b: the Lock lives in that namespace and keeps it; unlock lets it go",
    async () => {
      const r = await w.plugin([
        "lock",
        "namespace/team-b",
        "--reason",
        "tenant home",
        "-o",
        "name",
      ]);
      assertExit(r, 0);
      assert.equal(
        r.stdout,
        "lock.dependencies.opendefense.cloud/namespaces-team-b\n",
      );
      const error = await waitForDenial(kcp, {
        workspace: w.c1,
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
        /cannot delete namespaces\/team-b: locked by Lock team-b\/namespaces-team-b \("tenant home"\)/,
      );
      assertExit(await w.plugin(["unlock", "ns/team-b"]), 0);
      await waitForAllowed(kcp, w.c1, [
        "delete",
        "namespace",
        "team-b",
        "--dry-run=server",
      ]);
    },
  );

  await lockForSteps(world, step, w);

  await step(
    "an unknown type and a namespace where the tenant may not write Locks exit 2 naming why",
    async () => {
      const unknown = await w.plugin([
        "lock",
        "vpcz/core",
        "-n",
        "team-a",
        "--reason",
        "r",
      ]);
      assertExit(unknown, 2);
      assert.match(
        unknown.stderr,
        /the server doesn't have a resource type "vpcz"/,
      );
      const forbidden = await w.plugin([
        "lock",
        "vpc/core",
        "-n",
        "team-c",
        "--reason",
        "r",
      ]);
      assertExit(forbidden, 2);
      assert.match(
        forbidden.stderr,
        /you may not create locks\.dependencies\.opendefense\.cloud in namespace team-c/,
      );
      assert.equal(
        await kcp.kubectlOk(["get", "locks", "-A", "-o", "name"], {
          workspace: w.c1,
        }),
        "",
      );
    },
  );
}

/**
 * A Lock that expires, as a tenant writes it: `lock vpc/window --for 45s`
 * holds the VPC (a delete is denied naming the Lock and its time; `kubectl
 * get locks` shows it Ready with its end), then, once the time has passed,
 * the delete goes through and the Lock shows `Ready False Expired`. A past
 * `--until` is refused before anything is written. `unlock` removes the
 * expired Lock. In the lock world's consumer, as its tenant.
 */
export async function lockForSteps(
  world: ComponentWorld,
  step: Step,
  w: PluginLockWorld,
): Promise<void> {
  const { kcp } = world;
  await step(
    "lock vpc/window --for 45s: Ready until its time, shown by kubectl get locks; the delete is denied naming the Lock and its time",
    async () => {
      await applyObjects(kcp, w.c1, [{
        apiVersion: "network.example.com/v1alpha1",
        kind: "VPC",
        metadata: { name: "window", namespace: "team-a" },
        spec: {},
      }]);
      const past = await w.plugin([
        "lock",
        "vpc/window",
        "-n",
        "team-a",
        "--reason",
        "migration window",
        "--until",
        "2020-01-01T00:00:00Z",
      ]);
      assertExit(past, 2);
      assert.match(past.stderr, /--until 2020-01-01T00:00:00Z has passed/);
      const r = await w.plugin([
        "lock",
        "vpc/window",
        "-n",
        "team-a",
        "--reason",
        "migration window",
        "--for",
        "45s",
      ]);
      assertExit(r, 0);
      const ready = /vpcs-window is Ready until (\S+Z): /.exec(r.stdout);
      assert.ok(ready, r.stdout);
      const expiresAt = w.expiresAt = ready[1]!;
      assert.equal(
        await kcp.kubectlOk([
          "get",
          "lock",
          "vpcs-window",
          "-n",
          "team-a",
          "-o",
          "jsonpath={.spec.expiresAt}",
        ], { workspace: w.c1 }),
        expiresAt,
      );
      const table = await w.locksInTeamA();
      assert.match(table.split("\n")[0]!, /\bREADY\s+STATUS\s+EXPIRES\s+AGE$/);
      assert.match(
        table,
        new RegExp(`vpcs-window\\s.*\\sTrue\\s+Enforced\\s+${expiresAt}\\s`),
      );
      const error = await waitForDenial(kcp, {
        workspace: w.c1,
        args: ["delete", "vpc", "window", "-n", "team-a", "--dry-run=server"],
        expected: /locked by Lock/,
      });
      assert.match(
        error,
        new RegExp(
          `cannot delete vpcs/window: locked by Lock team-a/vpcs-window \\("migration window", until ${expiresAt}\\)`,
        ),
      );
      // why, as the workspace's admin, names the Lock with its time.
      const why = await runPlugin(
        ["why", "vpc/window", "-n", "team-a", "-o", "json"],
        { kubeconfig: await kcp.kubeconfig("admin", w.c1) },
      );
      assertExit(why, 1);
      const lockCause = JSON.parse(why.stdout).causes?.find((
        c: { type?: string },
      ) => c.type === "Lock");
      assert.deepEqual(lockCause?.expiresAt, expiresAt, why.stdout);
    },
  );

  await step(
    "after its time the Lock holds no more: the delete goes through, and the Lock is Ready False Expired until unlocked",
    async () => {
      const { expiresAt } = w;
      await waitFor("the Lock to show Expired", async () => {
        const reason = await kcp.kubectlOk([
          "get",
          "lock",
          "vpcs-window",
          "-n",
          "team-a",
          "-o",
          'jsonpath={.status.conditions[?(@.type=="Ready")].reason}',
        ], { workspace: w.c1 });
        return reason === "Expired" ? true : undefined;
      }, { timeoutMs: 90_000, intervalMs: 500 });
      // The controller reports by its clock; the webhook lets go up to its
      // --lock-expiry-skew (5s) later, by its own.
      await waitForAllowed(kcp, w.c1, [
        "delete",
        "vpc",
        "window",
        "-n",
        "team-a",
      ]);
      assert.ok(
        Date.now() >= Date.parse(expiresAt),
        `the delete went through before the Lock's time ${expiresAt}`,
      );
      assert.match(
        await w.locksInTeamA(),
        new RegExp(`vpcs-window\\s.*\\sFalse\\s+Expired\\s+${expiresAt}\\s`),
      );
      const r = await w.plugin(["unlock", "vpc/window", "-n", "team-a"]);
      assertExit(r, 0);
    },
  );
}
