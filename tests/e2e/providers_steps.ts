/**
 * Two providers export the same group/resource (`vpcs.network.example.com`)
 * to different consumers; a rule about one provider's VPCs must neither
 * protect nor block the other's. kcp calls, for a bound type, only the
 * webhook configurations of the workspace that exports it to the consumer,
 * so both configurations reach the same webhook: it must tell them apart.
 * Components run as their own processes and identities; users act with
 * kubectl.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  applySystemAdminOverlay,
  assertStatusTruth,
  bindExport,
  buildTopology,
  type ComponentWorld,
  createWorkspace,
  dependencyRule,
  dryRunDelete,
  networkProvider,
  type Step,
  vmManifest,
  vpcManifest,
  waitFor,
  type WorldPaths,
} from "../../testing/mod.ts";
import { providersWorld } from "../../testing/provider_rules_world.ts";

/**
 * The steps of "providers: a rule about one provider's type neither protects
 * nor blocks another provider's type of the same name", in the world under
 * `paths` (the second network provider at `<prefix>:providers:network2`),
 * ending with status truth.
 */
export async function providersSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = providersWorld(world, paths);
  await step(
    "two network providers export vpcs.network.example.com; c1 binds the first, c3 the second",
    async () => {
      w.topo = await buildTopology(kcp, {
        networkPath: w.network,
        computePath: w.compute,
        consumerPaths: [w.c1],
      });
      await networkProvider(kcp, w.network2);
      await createWorkspace(kcp, w.c3);
      await bindExport(kcp, w.c3, {
        exportPath: w.network2,
        exportName: "network.example.com",
      });
      await bindExport(kcp, w.c3, {
        exportPath: w.compute,
        exportName: "compute.example.com",
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
          verbs: ["get", "list"],
        },
      ]);
      await world.startComponents();
      assert.equal(w.topo.consumers[0]!.path, w.c1);
    },
  );

  await step(
    "one rule per provider: .spec.vpcRef.name names the first's VPCs, .spec.altVpcRef.name the second's",
    async () => {
      await applyObjects(kcp, w.compute, [
        dependencyRule("vm-network", {
          dependencies: [{
            path: w.network,
            resource: "vpcs",
            field: ".spec.vpcRef.name",
          }],
        }),
        dependencyRule("vm-network2", {
          dependencies: [{
            path: w.network2,
            resource: "vpcs",
            field: ".spec.altVpcRef.name",
          }],
        }),
      ]);
      for (const ws of [w.c1, w.c3]) {
        await applyObjects(kcp, ws, [
          vpcManifest("by-own-rule"),
          vpcManifest("by-other-rule"),
          vmManifest("vm-1", {
            spec: {
              vpcRef: { name: ws === w.c1 ? "by-own-rule" : "by-other-rule" },
              altVpcRef: {
                name: ws === w.c1 ? "by-other-rule" : "by-own-rule",
              },
            },
          }),
        ]);
      }
      // Each provider's own rule protects its consumers' VPCs.
      for (const ws of [w.c1, w.c3]) {
        const field = ws === w.c1
          ? ".spec.vpcRef.name"
          : ".spec.altVpcRef.name";
        await waitFor(
          `protection in ${ws}`,
          async () =>
            (await dryRunDelete(kcp, {
              workspace: ws,
              type: "vpc",
              namespace: "default",
              name: "by-own-rule",
            })).includes(
              `still referenced by VirtualMachine/vm-1 (${field})`,
            ) || undefined,
          { timeoutMs: 60_000, intervalMs: 300 },
        );
      }
    },
  );

  await step(
    "the other provider's rule does not block: a VPC named only through it can be deleted",
    async () => {
      for (const ws of [w.c1, w.c3]) {
        assert.equal(
          await dryRunDelete(kcp, {
            workspace: ws,
            type: "vpc",
            namespace: "default",
            name: "by-other-rule",
          }),
          "",
          `${ws}: a rule about the other provider's VPCs blocked this one`,
        );
      }
      const r = await kcp.kubectl(
        ["delete", "vpc", "by-other-rule", "-n", "default"],
        { workspace: w.c3 },
      );
      assert.equal(r.code, 0, r.stderr);
      const gone = await kcp.kubectl(
        ["get", "vpc", "by-other-rule", "-n", "default"],
        { workspace: w.c3 },
      );
      assert.notEqual(gone.code, 0);
      assert.match(gone.stderr, /NotFound|not found/);
    },
  );

  await step(
    "each provider's configuration calls the webhook for its own workspace",
    async () => {
      for (const path of [w.network, w.network2]) {
        const config = await kcp.request<{
          webhooks: { clientConfig: { url: string } }[];
        }>(
          "GET",
          `/clusters/${path}/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/dependency-controller`,
        );
        assert.equal(
          config.webhooks[0]!.clientConfig.url,
          `${w.webhook.url}/${path}`,
        );
      }
    },
  );

  await step(
    "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
    async () => {
      // Each rule is proven where its provider's VPCs are bound: c1
      // for the first, c3 for the second.
      const truth = await assertStatusTruth(kcp, {
        workspaces: [
          w.topo.depCtrl.path,
          w.network,
          w.network2,
          w.compute,
          w.c1,
          w.c3,
        ],
        minimum: { rules: 2 },
      });
      assert.deepEqual(truth.rulesProven.sort(), [
        `${w.compute}/vm-network`,
        `${w.compute}/vm-network2`,
      ]);
    },
  );
}
