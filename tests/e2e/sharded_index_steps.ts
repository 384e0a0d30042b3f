/**
 * The dependents index on a sharded kcp (two shards behind kcp-front-proxy),
 * as production runs it: the webhook with `--dependents-index` talks to kcp
 * through the front-proxy, and its index is fed through the virtual
 * workspace of the compute export on each shard (one feed per URL of the
 * export's endpoint slice). The operator's grants are applied in
 * `system:admin` of every shard. Tenants in consumers on both shards create
 * a VM and delete the VPC it names back to back: every such delete is
 * denied (a wrong allow fails the test), a denial through kubectl names the
 * VM on each shard, and the index answered (its `confirmed` answers grew).
 *
 * It counts the index's feeds over every index: no other rule may be live
 * on the kcp while it runs (its own rule stays afterwards).
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertDeleteDenied,
  backToBackDeletes,
  buildTopology,
  type ComponentProcess,
  createWorkspace,
  grantWebhookReads,
  indexMetrics,
  MANIFESTS,
  namespaceObject,
  type ShardedKcp,
  startController,
  startWebhook,
  type Step,
  stopComponents,
  targetsOf,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  type WebhookProcess,
  workspaceShard,
  type WorldPaths,
} from "../../testing/mod.ts";

const NAMESPACE = "team-a";
/** Back-to-back rounds per consumer. */
const ROUNDS = 250;

/**
 * The steps of "the dependents index on two shards behind the front-proxy:
 * a VM created and its VPC deleted back to back is always denied", in the
 * world at `paths`: dep-ctrl and the network provider on the root shard,
 * the compute provider on shard-1, consumers `r1` and `r2` on the root
 * shard, `s1` and `s2` on shard-1. It starts its own webhook and controller
 * and stops them at its end.
 */
export async function shardedIndexSteps(
  kcp: ShardedKcp,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const NETWORK = paths.network;
  const COMPUTE = paths.compute;
  const ON_ROOT = [paths.consumer("r1"), paths.consumer("r2")];
  const ON_ONE = [paths.consumer("s1"), paths.consumer("s2")];
  const CONSUMERS = [...ON_ROOT, ...ON_ONE];
  const PLACEMENT: readonly [string, "root" | "shard-1"][] = [
    ["root:dep-ctrl", "root"],
    [NETWORK, "root"],
    [COMPUTE, "shard-1"],
    ...ON_ROOT.map((c) => [c, "root"] as [string, "root"]),
    ...ON_ONE.map((c) => [c, "shard-1"] as [string, "shard-1"]),
  ];
  const { front } = kcp;
  let webhook: WebhookProcess | undefined;
  let controller: ComponentProcess | undefined;
  let failed = true;
  try {
    await step(
      "consumers on both shards; the webhook with --dependents-index through the front-proxy; the grants on every shard",
      async () => {
        for (const [path, shard] of PLACEMENT) {
          await createWorkspace(front, path, { shard });
        }
        await buildTopology(front, {
          networkPath: NETWORK,
          computePath: COMPUTE,
          consumerPaths: CONSUMERS,
        });
        for (const [path, shard] of PLACEMENT) {
          assert.equal(await workspaceShard(front, path), shard, path);
        }
        for (const consumer of CONSUMERS) {
          await applyObjects(front, consumer, [namespaceObject(NAMESPACE)]);
        }
        // As shardAdmin, the front applies it in system:admin of every shard.
        await front.kubectlOk(
          ["apply", "-k", `${MANIFESTS}kcp/system-admin/dependents-index`],
          { workspace: "system:admin", identity: "shardAdmin" },
        );
        webhook = await startWebhook(front, { args: ["--dependents-index"] });
        controller = await startController(front, { webhook });
        await applyObjects(front, COMPUTE, [vmVpcRule(NETWORK)]);
        const role = await grantWebhookReads(front, {
          dependentsIndex: true,
        });
        assert.match(role, /apiexports\/content/);
        await waitForRuleEnforced(front, {
          workspace: COMPUTE,
          name: "vm-vpc",
        });
      },
    );

    await step(
      "the index syncs from the compute export's virtual workspace on each shard",
      async () => {
        const synced = await waitFor("a synced feed per shard", async () => {
          const { feeds } = await indexMetrics(webhook!);
          return ((feeds.synced ?? 0) >= 2 && (feeds.failed ?? 0) === 0)
            ? feeds
            : undefined;
        }, { timeoutMs: 120_000, intervalMs: 500 });
        console.log("index feeds:", JSON.stringify(synced));
        const slice = await front.request<
          { status?: { endpoints?: { url: string }[] } }
        >(
          "GET",
          `/clusters/${COMPUTE}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/compute.example.com`,
        );
        const urls = (slice.status?.endpoints ?? []).map((e) => e.url);
        assert.deepEqual(
          urls.map((u) =>
            Object.values(kcp.shards).find((s) => u.startsWith(s.baseUrl))
              ?.name
          ).sort(),
          ["root", "shard-1"],
          urls.join(", "),
        );
        assert.equal(synced.synced, urls.length);
      },
    );

    await step(
      "a denial through kubectl names the VM, in a consumer on each shard",
      async () => {
        for (const consumer of [ON_ROOT[0]!, ON_ONE[0]!]) {
          await applyObjects(front, consumer, [
            vpcManifest("vpc-a", { namespace: NAMESPACE }),
            vmManifest("vm-1", { namespace: NAMESPACE, vpc: "vpc-a" }),
          ]);
          const vpc = targetsOf(consumer, "vpc")(NAMESPACE, "vpc-a");
          const message =
            "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";
          await waitForDeleteDenial(front, vpc, message);
          assert.equal(
            await assertDeleteDenied(front, vpc, message),
            message,
          );
        }
      },
    );

    await step(
      `${ROUNDS} times in each of ${CONSUMERS.length} consumers on two shards at once: a VM created, then its VPC deleted at once, is denied; the index answered`,
      async () => {
        const before = (await indexMetrics(webhook!)).answers;
        const started = performance.now();
        const tally = await backToBackDeletes(front, {
          consumers: CONSUMERS,
          namespace: NAMESPACE,
          prefix: "race",
          rounds: ROUNDS,
        });
        console.log(
          `${tally.rounds} rounds in ${
            ((performance.now() - started) / 1000).toFixed(1)
          } s:`,
          JSON.stringify(tally),
        );
        assert.deepEqual(
          tally.wrongAllows,
          [],
          "deletes the list would deny",
        );
        assert.equal(tally.denied, CONSUMERS.length * ROUNDS);
        const { answers, feeds, lines } = await indexMetrics(webhook!);
        console.log(lines.join("\n"));
        // Under load a VM may reach the index later than the freshness
        // wait: that review lists (not_fresh), and still denies.
        assert.ok(
          (answers.confirmed ?? 0) > (before.confirmed ?? 0),
          lines.join("\n"),
        );
        console.log(
          `index answers during the race: ${
            JSON.stringify(
              Object.fromEntries(
                Object.entries(answers).map((
                  [k, v],
                ) => [k, v - (before[k] ?? 0)]),
              ),
            )
          }`,
        );
        assert.equal(feeds.failed ?? 0, 0);
      },
    );
    failed = false;
  } finally {
    await stopComponents([controller, webhook], { showLogs: failed });
  }
}
