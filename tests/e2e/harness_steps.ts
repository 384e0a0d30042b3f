/**
 * Proves the harness against a real kcp: nested workspaces, an export bound
 * by a consumer, an object created with kubectl and read back by workspace
 * path and by logical cluster name, carrying its logical cluster annotation.
 */
import assert from "node:assert/strict";
import {
  applyFiles,
  bindExport,
  createWorkspace,
  type KcpServer,
  type Step,
  waitFor,
  waitForEndpointUrls,
  waitForExportIdentity,
  type WorkspaceRef,
  type WorldPaths,
} from "../../testing/mod.ts";
import {
  getVpc,
  NETWORK_FIXTURES,
  type Vpc,
} from "../../testing/harness_world.ts";

/**
 * The steps of "harness: a consumer creates a provider's VPC and reads it by
 * path and by name", with a provider and a consumer at `paths.network` and
 * `paths.consumer("c1")`. Its last step restarts kcp.
 */
export async function harnessSteps(
  kcp: KcpServer,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  let network: WorkspaceRef | undefined;
  let consumer: WorkspaceRef | undefined;

  await step(
    "nested workspaces are Ready and reachable by path and by name",
    async () => {
      network = await createWorkspace(kcp, paths.network);
      consumer = await createWorkspace(kcp, paths.consumer("c1"));
      for (const ws of [network, consumer]) {
        assert.notEqual(ws.cluster, ws.path);
        assert.match(ws.cluster, /^[a-z0-9]+$/);
      }
      assert.notEqual(network.cluster, consumer.cluster);
    },
  );
  assert.ok(network && consumer);

  await step(
    "the provider exports VPCs from the files users apply",
    async () => {
      const out = await applyFiles(kcp, network!.path, [
        `${NETWORK_FIXTURES}apiresourceschema-vpcs.yaml`,
        `${NETWORK_FIXTURES}apiresourceschema-subnets.yaml`,
        `${NETWORK_FIXTURES}apiexport.yaml`,
      ]);
      assert.match(out, /apiexport.apis.kcp.io\/network.example.com created/);
      assert.match(
        await waitForExportIdentity(
          kcp,
          network!.path,
          "network.example.com",
        ),
        /^[0-9a-f]{64}$/,
      );
    },
  );

  await step(
    "the consumer binds the export and the endpoint slice publishes a URL",
    async () => {
      await bindExport(kcp, consumer!.path, {
        exportPath: network!.path,
        exportName: "network.example.com",
      });
      const urls = await waitForEndpointUrls(
        kcp,
        network!.path,
        "network.example.com",
      );
      assert.equal(urls.length, 1);
      assert.equal(
        urls[0],
        `${kcp.baseUrl}/services/apiexport/${
          network!.cluster
        }/network.example.com`,
      );
    },
  );

  await step("kubectl creates a VPC in the consumer", async () => {
    await waitFor("vpcs to be served in the consumer", async () => {
      const r = await kcp.kubectl(["get", "vpcs", "-A"], {
        workspace: consumer!.path,
      });
      return r.code === 0 || undefined;
    });
    const out = await kcp.kubectlOk(
      ["create", "-f", `${NETWORK_FIXTURES}vpc-a.yaml`],
      {
        workspace: consumer!.path,
      },
    );
    assert.match(out, /vpc.network.example.com\/vpc-a created/);
  });

  await step(
    "the VPC reads back by path and by logical cluster name, annotated with the cluster",
    async () => {
      const byPath = await getVpc(kcp, consumer!.path, "vpc-a");
      const byName = await kcp.request<Vpc>(
        "GET",
        `/clusters/${
          consumer!.cluster
        }/apis/network.example.com/v1alpha1/namespaces/default/vpcs/vpc-a`,
      );
      assert.equal(byPath.spec.cidr, "10.0.0.0/16");
      assert.deepEqual(byName.spec, byPath.spec);
      assert.equal(
        byPath.metadata.annotations?.["kcp.io/cluster"],
        consumer!.cluster,
      );
      assert.equal(
        byName.metadata.annotations?.["kcp.io/cluster"],
        consumer!.cluster,
      );
    },
  );

  await step(
    "an identity without RBAC is refused in the consumer",
    async () => {
      const r = await kcp.kubectl(["get", "vpcs", "-A"], {
        workspace: consumer!.path,
        identity: "webhook",
      });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /forbidden/i);
    },
  );

  await step(
    "kcp restarts on the same root directory with its data and identities",
    async () => {
      const before = kcp.pid;
      await kcp.stop({ keepRootDir: true });
      await kcp.start();
      assert.notEqual(kcp.pid, before);
      const vpc = await getVpc(kcp, consumer!.path, "vpc-a");
      assert.equal(
        vpc.metadata.annotations?.["kcp.io/cluster"],
        consumer!.cluster,
      );
    },
  );
}
