/**
 * Tenancy on a real kcp, acted on with kubectl as tenants and providers do:
 * what a tenant writes reaches only its own objects, and every status that
 * says `Enforced` is true. A Lock's target is checked by the controller (a
 * cluster-scoped type is refused and not held; a Lock without
 * `apiExportRef` on a bound type names the ref to set, and once fixed in
 * place holds). A Lock on a Secret holds it without the webhook ever being
 * granted Secrets, so its denial names no reason. A tenant that bound the
 * dep-ctrl export to write Locks cannot write DependencyRules that reach
 * other tenants: a rule about an export it does not have is
 * `APIExportNotFound` and blocks nothing anywhere, and one naming a dependent
 * the webhook may not list makes no delete fail. Last, every rule and Lock
 * of the test's workspaces whose `Ready` is `True`/`Enforced` is made to
 * prove it: a dry-run delete of what it covers is denied. Components run as
 * their own processes and identities.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  applySystemAdminOverlay,
  assertStatusTruth,
  attempt,
  bindExport,
  buildTopology,
  type ComponentWorld,
  DEP_CTRL_EXPORT,
  grantWebhookReads,
  KcpRequestError,
  lockManifest,
  type Step,
  type Topology,
  vmManifest,
  vpcManifest,
  VWC_CLAIM,
  waitFor,
  waitForDenial,
  type WebhookProcess,
} from "../../testing/mod.ts";
import { waitForReadyCondition } from "../../testing/ready_condition.ts";
import {
  C1,
  C2,
  COMPUTE,
  COMPUTE_REF,
  deleteSucceeds,
  KEPT_REASON,
  NETWORK,
  NETWORK_REF,
  NS,
  RULE_FILE,
  SECRET_REASON,
  TENANCY_WAIT,
  tenantRule,
  waitForWebhookToJudge,
} from "../../testing/tenancy_world.ts";

/**
 * The steps of "tenancy: a tenant's Locks and rules reach only its own
 * objects, and every Enforced status is true", in the world at `root`
 * (`root:providers:network`, which its rule fixture names). First on its
 * kcp: it waits for the webhook to judge every rule there is.
 */
export async function tenancySteps(
  world: ComponentWorld,
  step: Step,
): Promise<void> {
  const { kcp } = world;
  let topo!: Topology;
  let webhook!: WebhookProcess;
  await step(
    "the topology, a provider's rule and the components; tenant A binds the dep-ctrl export to write Locks",
    async () => {
      topo = await buildTopology(kcp, {
        networkPath: NETWORK,
        computePath: COMPUTE,
        consumerPaths: [C1, C2],
      });
      await bindExport(kcp, C1, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      await applySystemAdminOverlay(kcp, [
        {
          group: "compute.example.com",
          resources: ["virtualmachines"],
          verbs: ["get", "list"],
        },
        {
          group: "network.example.com",
          resources: ["vpcs"],
          verbs: ["get"],
        },
      ]);
      await kcp.kubectlOk(["apply", "-f", RULE_FILE], {
        workspace: COMPUTE,
      });
      ({ webhook } = await world.startComponents());
      for (const workspace of [C1, C2]) {
        await kcp.kubectlOk(["create", "namespace", NS], { workspace });
      }
      await waitForReadyCondition(kcp, {
        workspace: COMPUTE,
        resource: "dependencyrule",
        name: "vm-dependencies",
      }, { status: "True", reason: "Enforced" });
    },
  );

  await step(
    "a Lock on a cluster-scoped type is ClusterScopedTarget and holds nothing: the VPCAttachment and the ClusterRole it names can be deleted",
    async () => {
      await applyObjects(kcp, C1, [{
        apiVersion: "compute.example.com/v1alpha1",
        kind: "VPCAttachment",
        metadata: { name: "attachment" },
        spec: { vpcRef: { name: "core", namespace: NS } },
      }]);
      await kcp.kubectlOk([
        "create",
        "clusterrole",
        "tenant-role",
        "--verb=get",
        "--resource=configmaps",
      ], { workspace: C1 });
      await applyObjects(kcp, C1, [
        lockManifest("attachment", {
          namespace: NS,
          target: {
            apiExportRef: COMPUTE_REF,
            group: "compute.example.com",
            version: "v1alpha1",
            resource: "vpcattachments",
            name: "attachment",
          },
          reason: KEPT_REASON,
        }),
        lockManifest("role", {
          namespace: NS,
          target: {
            group: "rbac.authorization.k8s.io",
            version: "v1",
            resource: "clusterroles",
            name: "tenant-role",
          },
          reason: KEPT_REASON,
        }),
      ]);
      for (
        const [name, type] of [
          ["attachment", "vpcattachments.compute.example.com"],
          ["role", "clusterroles.rbac.authorization.k8s.io"],
        ] as const
      ) {
        const ready = await waitForReadyCondition(
          kcp,
          { workspace: C1, resource: "lock", name, namespace: NS },
          { status: "False", reason: "ClusterScopedTarget" },
        );
        assert.match(
          ready.message ?? "",
          new RegExp(`${type}.*cluster-scoped`),
        );
      }
      // The status is honest: nothing holds either object.
      for (
        const [type, name] of [
          ["vpcattachment", "attachment"],
          ["clusterrole", "tenant-role"],
        ] as const
      ) {
        const r = await kcp.kubectl(["delete", type, name], {
          workspace: C1,
        });
        assert.equal(r.code, 0, `deleting ${type}/${name}: ${r.stderr}`);
        const gone = await kcp.kubectl(["get", type, name], {
          workspace: C1,
        });
        assert.match(gone.stderr, /NotFound|not found/);
      }
    },
  );

  await step(
    "a Lock without apiExportRef on a bound type a rule already sends to the webhook is Enforced (it denies), saying it is not placed and naming the ref to set; fixed in place it is Enforced as placed",
    async () => {
      await applyObjects(kcp, C1, [
        vpcManifest("core", { namespace: NS }),
        lockManifest("prod", {
          namespace: NS,
          target: {
            group: "network.example.com",
            version: "v1alpha1",
            resource: "vpcs",
            name: "core",
          },
          reason: KEPT_REASON,
        }),
      ]);
      const mismatch = await waitForReadyCondition(
        kcp,
        { workspace: C1, resource: "lock", name: "prod", namespace: NS },
        { status: "True", reason: "Enforced" },
      );
      assert.ok(
        (mismatch.message ?? "").includes(
          "set spec.target.apiExportRef to {path: root:providers:network, name: network.example.com}",
        ),
        String(mismatch.message),
      );
      // Not placed, but the provider's configuration covers VPCs for the
      // rule, and the webhook honours every Lock: the status says so.
      assert.ok(
        (mismatch.message ?? "").includes(
          "this Lock is not placed there itself",
        ),
        String(mismatch.message),
      );
      await applyObjects(kcp, C1, [
        lockManifest("prod", {
          namespace: NS,
          target: {
            apiExportRef: NETWORK_REF,
            group: "network.example.com",
            version: "v1alpha1",
            resource: "vpcs",
            name: "core",
          },
          reason: KEPT_REASON,
        }),
      ]);
      await waitForReadyCondition(
        kcp,
        { workspace: C1, resource: "lock", name: "prod", namespace: NS },
        { status: "True", reason: "Enforced" },
      );
      await waitForDenial(kcp, {
        workspace: C1,
        args: ["delete", "vpc", "core", "-n", NS, "--dry-run=server"],
        expected: /locked by Lock team-a\/prod/,
      }, TENANCY_WAIT);
      const r = await kcp.kubectl(["delete", "vpc", "core", "-n", NS], {
        workspace: C1,
      });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /\(Conflict\)/);
      assert.match(
        r.stderr,
        /cannot delete vpcs\/core: locked by Lock team-a\/prod/,
      );
      await kcp.kubectlOk(["get", "vpc", "core", "-n", NS], {
        workspace: C1,
      });
    },
  );

  await step(
    "a Lock on a Secret holds it, naming no reason; controller grants grants no Secrets or ConfigMaps; the webhook cannot read a tenant's Secret; deleting the Lock unlocks",
    async () => {
      for (const workspace of [C1, C2]) {
        await kcp.kubectlOk([
          "create",
          "secret",
          "generic",
          "db",
          "-n",
          NS,
          "--from-literal=password=s3cret",
        ], { workspace });
      }
      await applyObjects(kcp, C1, [
        lockManifest("db", {
          namespace: NS,
          target: {
            group: "",
            version: "v1",
            resource: "secrets",
            name: "db",
          },
          reason: SECRET_REASON,
        }),
      ]);
      await waitForReadyCondition(
        kcp,
        { workspace: C1, resource: "lock", name: "db", namespace: NS },
        { status: "True", reason: "Enforced" },
      );
      await waitForDenial(kcp, {
        workspace: C1,
        args: ["delete", "secret", "db", "-n", NS, "--dry-run=server"],
        expected: /a Lock may hold it/,
      }, TENANCY_WAIT);
      const r = await kcp.kubectl(["delete", "secret", "db", "-n", NS], {
        workspace: C1,
      });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /\(Conflict\)/);
      assert.match(r.stderr, /a Lock may hold it/);
      assert.ok(
        r.stderr.includes("kubectl get locks -n team-a"),
        r.stderr,
      );
      assert.ok(!r.stderr.includes(SECRET_REASON), r.stderr);
      assert.doesNotMatch(r.stderr, /locked by Lock|team-a\/db/);
      await kcp.kubectlOk(["get", "secret", "db", "-n", NS], {
        workspace: C1,
      });

      const role = await grantWebhookReads(kcp);
      assert.match(role, /kind: ClusterRole/);
      assert.match(role, /virtualmachines/);
      assert.doesNotMatch(role, /secrets/);
      assert.doesNotMatch(role, /configmaps/);

      for (const ws of topo.consumers) {
        const error = await kcp.request(
          "GET",
          `/clusters/${ws.cluster}/api/v1/namespaces/${NS}/secrets/db`,
          { identity: "webhook" },
        ).then(() => undefined, (e: unknown) => e);
        assert.ok(
          error instanceof KcpRequestError,
          `the webhook read the Secret in ${ws.path}`,
        );
        assert.equal(error.status, 403, `${ws.path}: ${error.message}`);
      }

      await kcp.kubectlOk(["delete", "lock", "db", "-n", NS], {
        workspace: C1,
      });
      await waitFor(
        "the Secret to be deleted",
        async () =>
          await attempt(kcp, C1, ["delete", "secret", "db", "-n", NS]) ===
            "" || undefined,
        TENANCY_WAIT,
      );
      const gone = await kcp.kubectl(["get", "secret", "db", "-n", NS], {
        workspace: C1,
      });
      assert.match(gone.stderr, /NotFound|not found/);
    },
  );

  await step(
    "a tenant's rule about an export it does not have is APIExportNotFound and blocks no delete, in another tenant's workspace or its own",
    async () => {
      // The provider's rule is live in tenant B: a VM naming a VPC in
      // .spec.vpcRef.name holds it, so the webhook is called for VPCs.
      await applyObjects(kcp, C2, [
        vpcManifest("used", { namespace: NS }),
        vmManifest("user", { namespace: NS, vpc: "used" }),
        vpcManifest("shared", { namespace: NS }),
        vmManifest("shared", { namespace: NS }),
      ]);
      await waitForDenial(kcp, {
        workspace: C2,
        args: ["delete", "vpc", "used", "-n", NS, "--dry-run=server"],
        expected:
          /still referenced by VirtualMachine\/user \(\.spec\.vpcRef\.name\)/,
      }, TENANCY_WAIT);
      await applyObjects(kcp, C1, [
        vpcManifest("own", { namespace: NS }),
        vmManifest("own", { namespace: NS }),
      ]);

      await applyObjects(kcp, C1, [
        tenantRule("reach-vpcs", {
          apiExportName: "compute.example.com",
          group: "compute.example.com",
          version: "v1alpha1",
          kind: "VirtualMachine",
          resource: "virtualmachines",
        }),
      ]);
      const ready = await waitForReadyCondition(kcp, {
        workspace: C1,
        resource: "dependencyrule",
        name: "reach-vpcs",
      }, { status: "False", reason: "APIExportNotFound" });
      assert.match(
        ready.message ?? "",
        /no APIExport compute\.example\.com in the rule's workspace/,
      );
      await waitForWebhookToJudge(webhook!, 2);

      // Tenant B's VM names its VPC only through .metadata.name.
      await deleteSucceeds(kcp, webhook!, {
        workspace: C2,
        type: "vpc",
        name: "shared",
        namespace: NS,
      });
      await deleteSucceeds(kcp, webhook!, {
        workspace: C1,
        type: "vpc",
        name: "own",
        namespace: NS,
      });
    },
  );

  await step(
    "a tenant's rule naming a dependent the webhook may not list makes no delete fail with 503, in either tenant",
    async () => {
      await applyObjects(kcp, C1, [
        tenantRule("reach-roles", {
          apiExportName: "rbac.authorization.k8s.io",
          group: "rbac.authorization.k8s.io",
          version: "v1",
          kind: "ClusterRole",
          resource: "clusterroles",
        }),
      ]);
      await waitForReadyCondition(kcp, {
        workspace: C1,
        resource: "dependencyrule",
        name: "reach-roles",
      }, { status: "False", reason: "APIExportNotFound" });
      for (const workspace of [C1, C2]) {
        await applyObjects(kcp, workspace, [
          vpcManifest("spare", { namespace: NS }),
        ]);
      }
      await waitForWebhookToJudge(webhook!, 3);
      for (const workspace of [C1, C2]) {
        await deleteSucceeds(kcp, webhook!, {
          workspace,
          type: "vpc",
          name: "spare",
          namespace: NS,
        });
      }
      // Re-running controller grants with the tenant's rules live grants
      // the webhook no RBAC type either.
      const role = await grantWebhookReads(kcp);
      assert.doesNotMatch(role, /clusterroles/);
    },
  );

  await step(
    "every rule and Lock whose Ready is True/Enforced in the test's workspaces denies a delete of what it covers",
    async () => {
      // Not vacuous: the provider's rule and the VPC Lock are Enforced.
      await assertStatusTruth(kcp, {
        workspaces: [
          topo.depCtrl.path,
          NETWORK,
          COMPUTE,
          ...topo.consumers.map((c) => c.path),
        ],
        minimum: { rules: 1, locks: 1 },
      });
    },
  );
}
