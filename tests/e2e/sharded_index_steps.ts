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
  createWorkspace,
  grantWebhookReads,
  indexMetrics,
  namespaceObject,
  type ShardedKcp,
  type Step,
  targetsOf,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  workspaceShard,
  type WorldPaths,
} from "../../testing/mod.ts";
import { applyIndexManifest } from "../../testing/index_world.ts";
import {
  shardedIndexWorld,
  shardsOfUrls,
} from "../../testing/sharded_world.ts";

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
  const w = shardedIndexWorld(kcp, paths);
  const { front } = w;
  try {
    await step(
      "consumers on both shards; the webhook with --dependents-index through the front-proxy; the grants on every shard",
      async () => {
        for (const [path, shard] of w.placement) {
          await createWorkspace(front, path, { shard });
        }
        await buildTopology(front, {
          networkPath: w.network,
          computePath: w.compute,
          consumerPaths: w.consumers,
        });
        for (const [path, shard] of w.placement) {
          assert.equal(await workspaceShard(front, path), shard, path);
        }
        for (const consumer of w.consumers) {
          await applyObjects(front, consumer, [namespaceObject(w.namespace)]);
        }
        // As shardAdmin, the front applies it in system:admin of every shard.
        await applyIndexManifest(front);
        await w.startComponents();
        await applyObjects(front, w.compute, [vmVpcRule(w.network)]);
        const role = await grantWebhookReads(front, {
          dependentsIndex: true,
        });
        assert.match(role, /apiexports\/content/);
        await waitForRuleEnforced(front, {
          workspace: w.compute,
          name: "vm-vpc",
        });
      },
    );

    await step(
      "the index syncs from the compute export's virtual workspace on each shard",
      async () => {
        const synced = await waitFor("a synced feed per shard", async () => {
          const { feeds } = await indexMetrics(w.webhook());
          return ((feeds.synced ?? 0) >= 2 && (feeds.failed ?? 0) === 0)
            ? feeds
            : undefined;
        }, { timeoutMs: 120_000, intervalMs: 500 });
        console.log("index feeds:", JSON.stringify(synced));
        const slice = await front.request<
          { status?: { endpoints?: { url: string }[] } }
        >(
          "GET",
          `/clusters/${w.compute}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/compute.example.com`,
        );
        const urls = (slice.status?.endpoints ?? []).map((e) => e.url);
        assert.deepEqual(
          shardsOfUrls(kcp.shards, urls),
          ["root", "shard-1"],
          urls.join(", "),
        );
        assert.equal(synced.synced, urls.length);
      },
    );

    await step(
      "a denial through kubectl names the VM, in a consumer on each shard",
      async () => {
        for (const consumer of [w.onRoot[0]!, w.onShard1[0]!]) {
          await applyObjects(front, consumer, [
            vpcManifest("vpc-a", { namespace: w.namespace }),
            vmManifest("vm-1", { namespace: w.namespace, vpc: "vpc-a" }),
          ]);
          const vpc = targetsOf(consumer, "vpc")(w.namespace, "vpc-a");
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
      `${w.rounds} times in each of ${w.consumers.length} consumers on two shards at once: a VM created, then its VPC deleted at once, is denied; the index answered`,
      async () => {
        const before = (await indexMetrics(w.webhook())).answers;
        const started = performance.now();
        const tally = await backToBackDeletes(front, {
          consumers: w.consumers,
          namespace: w.namespace,
          prefix: "race",
          rounds: w.rounds,
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
        assert.equal(tally.denied, w.consumers.length * w.rounds);
        const { answers, feeds, lines } = await indexMetrics(w.webhook());
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
    w.passed();
  } finally {
    await w.stop();
  }
}
