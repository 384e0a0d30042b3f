/**
 * Proves the sharded harness against real processes: a cache server, two
 * shards and the front-proxy; workspaces placed on each shard and served by
 * it; identities accepted alike by the front-proxy and each shard; the
 * front-proxy stripping `system:masters`; a shard stopped and started again
 * with its data; and an export bound from both shards publishing one
 * endpoint URL per shard.
 */
import assert from "node:assert/strict";
import {
  applyFiles,
  bindExport,
  createWorkspace,
  SHARD_NAME_LABEL,
  SHARD_NAMES,
  type ShardedKcp,
  type Step,
  waitFor,
  waitForEndpointUrls,
  waitForExportIdentity,
  workspaceShard,
} from "../../testing/mod.ts";
import {
  type ConfigMapObject,
  CONFIGMAPS,
  failureStatus,
  type NamedObject,
  NETWORK_FIXTURES,
  type SelfSubjectReview,
  shardedHarnessWorld,
  type ShardObject,
  THIS_CLUSTER,
  whoAmI,
} from "../../testing/sharded_harness_world.ts";

/**
 * The steps of "sharded harness: placement, identities, a shard down and
 * back, one endpoint URL per shard", on a fresh `kcp`: its first step counts
 * the processes and the shards it started.
 */
export async function shardedHarnessSteps(
  kcp: ShardedKcp,
  step: Step,
): Promise<void> {
  const w = shardedHarnessWorld(kcp);
  const { front, shards, placed } = w;
  try {
    await step(
      "four processes run; the shards register with the front-proxy's URL",
      async () => {
        const processes = kcp.processes();
        assert.deepEqual(processes.map((p) => p.name), [
          "cache-server",
          "shard-root",
          "shard-shard-1",
          "front-proxy",
        ]);
        for (const p of processes) {
          assert.ok(p.pid, `${p.name} has a pid`);
          const status = await Deno.readTextFile(`/proc/${p.pid}/status`);
          const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
          console.log(
            `  ${p.name}: pid ${p.pid}, RSS ${Math.round(rss / 1024)} MB`,
          );
        }
        for (const name of SHARD_NAMES) {
          assert.equal(await shards[name].request("GET", "/readyz"), "ok");
        }
        const list = await front.request<{ items: ShardObject[] }>(
          "GET",
          "/clusters/root/apis/core.kcp.io/v1alpha1/shards",
        );
        const byName = new Map(list.items.map((s) => [s.metadata.name, s]));
        assert.deepEqual([...byName.keys()].sort(), [...SHARD_NAMES]);
        for (const name of SHARD_NAMES) {
          const shard = byName.get(name)!;
          assert.equal(shard.spec.baseURL, shards[name].baseUrl);
          assert.equal(shard.spec.externalURL, front.baseUrl);
          assert.equal(shard.metadata.labels?.[SHARD_NAME_LABEL], name);
        }
        assert.notEqual(shards.root.baseUrl, shards["shard-1"].baseUrl);
        assert.notEqual(front.baseUrl, shards.root.baseUrl);
      },
    );

    await step(
      "admin places a workspace on each shard through the front-proxy, and that shard serves it",
      async () => {
        for (const name of SHARD_NAMES) {
          const ws = await createWorkspace(front, `root:on-${name}`, {
            shard: name,
          });
          placed[name] = ws;
          assert.equal(await workspaceShard(front, ws.path), name);
          const other = SHARD_NAMES.find((n) => n !== name)!;
          const here = await shards[name].request<NamedObject>(
            "GET",
            `/clusters/${ws.cluster}/${THIS_CLUSTER}`,
          );
          assert.equal(here.metadata.annotations?.["kcp.io/path"], ws.path);
          const elsewhere = await failureStatus(
            shards[other].request(
              "GET",
              `/clusters/${ws.cluster}/${THIS_CLUSTER}`,
            ),
          );
          console.log(
            `  ${name}'s cluster asked of shard ${other}: ${elsewhere}`,
          );
          assert.ok(elsewhere >= 400, `shard ${other}: ${elsewhere}`);
          await front.request("POST", `/clusters/${ws.path}/${CONFIGMAPS}`, {
            body: {
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: "placed" },
              data: { shard: name },
            },
          });
          for (
            const [via, api, address] of [
              ["the front-proxy by path", front, ws.path],
              ["the front-proxy by name", front, ws.cluster],
              [`shard ${name} by name`, shards[name], ws.cluster],
            ] as const
          ) {
            const cm = await api.request<ConfigMapObject>(
              "GET",
              `/clusters/${address}/${CONFIGMAPS}/placed`,
            );
            assert.equal(cm.data?.shard, name, via);
          }
        }
      },
    );
    const onRoot = placed.root!;
    const onShard1 = placed["shard-1"]!;

    await step(
      "an identity without rights gets 403 through the front-proxy",
      async () => {
        for (const ws of [onRoot, onShard1]) {
          for (const identity of ["user", "controller"] as const) {
            assert.equal(
              await failureStatus(
                front.request("GET", `/clusters/${ws.path}/${CONFIGMAPS}`, {
                  identity,
                }),
              ),
              403,
              `${identity} in ${ws.path}`,
            );
          }
        }
      },
    );

    await step(
      "the components' tokens authenticate on both shards directly and through the front-proxy",
      async () => {
        for (
          const [identity, user] of [
            ["controller", "dependency-controller"],
            ["webhook", "dependency-webhook"],
          ] as const
        ) {
          for (const api of [front, shards.root, shards["shard-1"]]) {
            const me = await whoAmI(api, identity);
            assert.equal(me.username, user, api.baseUrl);
            assert.ok(me.groups.includes("system:authenticated"));
          }
        }
        const admin = await whoAmI(front, "admin");
        assert.equal(admin.username, "admin");
        assert.ok(admin.groups.includes("system:kcp:admin"));
      },
    );

    await step(
      "the front-proxy drops system:masters; shardAdmin works on each shard directly",
      async () => {
        // A raw call: front.request sends shardAdmin to the shards.
        const client = Deno.createHttpClient({ caCerts: [front.caPem] });
        try {
          const response = await fetch(
            `${front.baseUrl}/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews`,
            {
              method: "POST",
              client,
              headers: {
                authorization: `Bearer ${front.identity("shardAdmin").token}`,
                "content-type": "application/json",
              },
              body: JSON.stringify({
                apiVersion: "authentication.k8s.io/v1",
                kind: "SelfSubjectReview",
              }),
            },
          );
          const review = await response.json() as SelfSubjectReview;
          assert.equal(response.status, 201);
          assert.equal(review.status.userInfo.username, "shard-admin");
          assert.ok(
            !(review.status.userInfo.groups ?? []).includes("system:masters"),
          );
        } finally {
          client.close();
        }
        const role = {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "sharded-harness-probe" },
          rules: [{
            apiGroups: [""],
            resources: ["configmaps"],
            verbs: ["get"],
          }],
        };
        const out = await front.kubectlOk(["apply", "-f", "-"], {
          identity: "shardAdmin",
          workspace: "system:admin",
          stdin: JSON.stringify(role),
        });
        assert.equal(
          out.match(/sharded-harness-probe created/g)?.length,
          2,
          out,
        );
        for (const name of SHARD_NAMES) {
          const got = await shards[name].request<NamedObject>(
            "GET",
            "/clusters/system:admin/apis/rbac.authorization.k8s.io/v1/clusterroles/sharded-harness-probe",
            { identity: "shardAdmin" },
          );
          assert.equal(got.metadata.name, "sharded-harness-probe");
          assert.equal(
            await failureStatus(
              shards[name].request(
                "GET",
                "/clusters/system:admin/apis/rbac.authorization.k8s.io/v1/clusterroles",
              ),
            ),
            403,
            `admin in system:admin of ${name}`,
          );
        }
        await assert.rejects(
          front.request("GET", `/clusters/${onRoot.path}/${CONFIGMAPS}`, {
            identity: "shardAdmin",
          }),
          RangeError,
        );
      },
    );

    await step(
      "an export on the root shard bound from both shards has one endpoint URL per shard",
      async () => {
        const provider = await createWorkspace(front, "root:provider", {
          shard: "root",
        });
        await applyFiles(front, provider.path, [
          `${NETWORK_FIXTURES}apiresourceschema-vpcs.yaml`,
          `${NETWORK_FIXTURES}apiresourceschema-subnets.yaml`,
          `${NETWORK_FIXTURES}apiexport.yaml`,
        ]);
        await waitForExportIdentity(
          front,
          provider.path,
          "network.example.com",
        );
        // Each shard installs the bound API and establishes it 5 s later:
        // the two bind side by side.
        await Promise.all(
          [onRoot, onShard1].map((ws) =>
            bindExport(front, ws.path, {
              exportPath: provider.path,
              exportName: "network.example.com",
            })
          ),
        );
        const urls = await waitFor("two endpoint URLs", async () => {
          const found = await waitForEndpointUrls(
            front,
            provider.path,
            "network.example.com",
          );
          return found.length >= 2 ? found : undefined;
        }, { timeoutMs: 90_000 });
        assert.deepEqual(
          [...urls].sort(),
          SHARD_NAMES.map((name) =>
            `${
              shards[name].baseUrl
            }/services/apiexport/${provider.cluster}/network.example.com`
          ).sort(),
        );
        // A VPC per consumer, each listed by its own shard's URL.
        for (
          const [name, ws] of [["root", onRoot], [
            "shard-1",
            onShard1,
          ]] as const
        ) {
          await waitFor(`vpcs to be served in ${ws.path}`, async () => {
            const r = await front.kubectl(["get", "vpcs", "-A"], {
              workspace: ws.path,
            });
            return r.code === 0 || undefined;
          });
          await front.request(
            "POST",
            `/clusters/${ws.path}/apis/network.example.com/v1alpha1/namespaces/default/vpcs`,
            {
              body: {
                apiVersion: "network.example.com/v1alpha1",
                kind: "VPC",
                metadata: { name: `vpc-${name}` },
                spec: { cidr: "10.0.0.0/16" },
              },
            },
          );
        }
        for (const name of SHARD_NAMES) {
          const url = urls.find((u) => u.startsWith(shards[name].baseUrl))!;
          const listed = await waitFor(
            `the VPC of ${name} in its virtual workspace`,
            async () => {
              const list = await shards[name].request<{ items: NamedObject[] }>(
                "GET",
                `${
                  url.slice(shards[name].baseUrl.length)
                }/clusters/*/apis/network.example.com/v1alpha1/vpcs`,
              );
              const names = list.items.map((i) => i.metadata.name);
              return names.length > 0 ? names : undefined;
            },
          );
          assert.deepEqual(listed, [`vpc-${name}`]);
        }
      },
    );

    await step(
      "with shard-1 stopped its workspaces fail through the front-proxy, root's still work; back up, its data is intact",
      async () => {
        const before = shards["shard-1"].pid;
        await shards["shard-1"].stop();
        assert.equal(shards["shard-1"].pid, undefined);
        const status = await failureStatus(
          front.request(
            "GET",
            `/clusters/${onShard1.path}/${CONFIGMAPS}/placed`,
          ),
        );
        assert.equal(status, 502, "the front-proxy's Bad Gateway");
        const onRootCm = await front.request<ConfigMapObject>(
          "GET",
          `/clusters/${onRoot.path}/${CONFIGMAPS}/placed`,
        );
        assert.equal(onRootCm.data?.shard, "root");
        await createWorkspace(front, "root:while-shard-1-down", {
          shard: "root",
        });

        await shards["shard-1"].start();
        assert.notEqual(shards["shard-1"].pid, before);
        const cm = await waitFor(
          "shard-1's workspace through the front-proxy again",
          () =>
            front.request<ConfigMapObject>(
              "GET",
              `/clusters/${onShard1.path}/${CONFIGMAPS}/placed`,
            ),
        );
        assert.equal(cm.data?.shard, "shard-1");
        const vpc = await front.request<NamedObject>(
          "GET",
          `/clusters/${onShard1.path}/apis/network.example.com/v1alpha1/namespaces/default/vpcs/vpc-shard-1`,
        );
        assert.equal(
          vpc.metadata.annotations?.["kcp.io/cluster"],
          onShard1.cluster,
        );
        assert.equal(await workspaceShard(front, onShard1.path), "shard-1");
      },
    );
  } finally {
    w.done();
  }
}
