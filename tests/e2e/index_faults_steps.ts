/**
 * The dependents index where things go wrong, on one real kcp: the webhook
 * runs with `--dependents-index` while tenants create a VM and delete the
 * VPC it names back to back (every such delete must be denied).
 *
 * - **Watch not granted**: the webhook is granted as without the index
 *   (`controller grants` without `--dependents-index`: no `watch`, no
 *   `apiexports/content`). Its feeds fail with 403 and never sync; every
 *   review lists, as before the index, and denies with the same message;
 *   the metrics say the feeds failed and count `not_synced` answers.
 * - **Granted**: the feeds sync and the index answers (`confirmed`).
 * - **kcp restarted under the running race**: every watch of the index
 *   breaks; while kcp is away and while the feeds list again, no delete is
 *   allowed (the list path, or a refusal, takes over), and once kcp is back
 *   the index answers again by itself.
 *
 * It restarts kcp, so it runs last on its kcp. Other worlds' rules on that
 * kcp may have been granted the index's watch: the grants without it are
 * applied before the webhook starts, so that it never has the watch until
 * the step that grants it, and the metrics (summed over every index) are
 * those of a webhook that could not watch.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertDeleteDenied,
  backToBackDeletes,
  buildTopology,
  type ComponentWorld,
  emptyTally,
  grantWebhookReads,
  indexMetrics,
  namespaceObject,
  type Step,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  type WorldPaths,
} from "../../testing/mod.ts";
import { applyIndexManifest, indexWorld } from "../../testing/index_world.ts";

/**
 * The steps of "the dependents index under faults: no watch granted, kcp
 * restarted mid-race; never a wrong allow", in the world at `paths` (two
 * consumers). Its first step starts the components (the webhook with
 * `--dependents-index`); the caller stops them afterwards. Its last step
 * restarts kcp.
 */
export async function indexFaultsSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const w = indexWorld(world, paths, { consumers: ["c1", "c2"], rounds: 15 });
  const { kcp } = w;

  await step(
    "providers, two consumers; the webhook with --dependents-index, granted WITHOUT the index's watch",
    async () => {
      await buildTopology(kcp, {
        networkPath: paths.network,
        computePath: paths.compute,
        consumerPaths: w.consumers,
      });
      for (const consumer of w.consumers) {
        await applyObjects(kcp, consumer, [namespaceObject(w.namespace)]);
      }
      await applyIndexManifest(kcp);
      // The other worlds' rules lose the index's watch an earlier suite
      // may have granted: no index of this webhook's is ever fed.
      assert.doesNotMatch(await grantWebhookReads(kcp), /watch/);
      await world.startComponents({
        webhook: { args: ["--dependents-index"] },
      });
      await applyObjects(kcp, paths.compute, [vmVpcRule(paths.network)]);
      const role = await grantWebhookReads(kcp);
      assert.doesNotMatch(role, /apiexports\/content/);
      assert.doesNotMatch(role, /watch/);
      await waitForRuleEnforced(kcp, {
        workspace: paths.compute,
        name: "vm-vpc",
      });
    },
  );

  await step(
    "no watch granted: the feeds fail and never sync; deletes are denied through the list path, with the same message",
    async () => {
      await waitFor("an index feed to fail", async () => {
        const { feeds } = await indexMetrics(w.webhook());
        return (feeds.failed ?? 0) > 0 || undefined;
      }, { timeoutMs: 60_000, intervalMs: 500 });
      await applyObjects(kcp, w.c1, [
        vpcManifest("vpc-a", { namespace: w.namespace }),
        vmManifest("vm-1", { namespace: w.namespace, vpc: "vpc-a" }),
      ]);
      await waitForDeleteDenial(kcp, w.vpc, w.denial);
      assert.equal(await assertDeleteDenied(kcp, w.vpc, w.denial), w.denial);
      const tally = await backToBackDeletes(kcp, {
        consumers: w.consumers,
        namespace: w.namespace,
        prefix: "nowatch",
        rounds: w.rounds,
      });
      console.log("no watch granted:", JSON.stringify(tally));
      assert.deepEqual(tally.wrongAllows, [], "deletes the list would deny");
      assert.equal(tally.denied, w.consumers.length * w.rounds);
      const { answers, feeds, lines } = await indexMetrics(w.webhook());
      console.log(lines.join("\n"));
      assert.equal(feeds.synced ?? 0, 0, lines.join("\n"));
      assert.ok((feeds.failed ?? 0) + (feeds.syncing ?? 0) > 0);
      assert.ok(
        (answers.not_synced ?? 0) >= w.consumers.length * w.rounds,
        lines.join("\n"),
      );
      assert.equal(answers.confirmed ?? 0, 0, lines.join("\n"));
      assert.match(
        await w.webhook().log(),
        /dependents index feed failed, listing again.*403/,
      );
    },
  );

  await step(
    "granted with the index's watch: the feeds sync and the index answers",
    async () => {
      const role = await grantWebhookReads(kcp, { dependentsIndex: true });
      assert.match(role, /apiexports\/content/);
      await waitFor("the index feeds to sync", async () => {
        const { feeds } = await indexMetrics(w.webhook());
        return ((feeds.synced ?? 0) > 0 && (feeds.failed ?? 0) === 0) ||
          undefined;
      }, { timeoutMs: 90_000, intervalMs: 500 });
      const before = (await indexMetrics(w.webhook())).answers;
      const tally = await backToBackDeletes(kcp, {
        consumers: w.consumers,
        namespace: w.namespace,
        prefix: "granted",
        rounds: w.rounds,
      });
      console.log("granted:", JSON.stringify(tally));
      assert.deepEqual(tally.wrongAllows, [], "deletes the list would deny");
      assert.equal(tally.denied, w.consumers.length * w.rounds);
      const { answers, lines } = await indexMetrics(w.webhook());
      console.log(lines.join("\n"));
      // Under load a VM may reach the index later than the freshness
      // wait: that review lists (not_fresh), and still denies.
      assert.ok(
        (answers.confirmed ?? 0) > (before.confirmed ?? 0),
        lines.join("\n"),
      );
      assert.equal(await assertDeleteDenied(kcp, w.vpc, w.denial), w.denial);
    },
  );

  await step(
    "kcp restarted under the running race: never an allow, and the index answers again by itself",
    async () => {
      let away = false;
      const race = new AbortController();
      const tally = emptyTally();
      const running = backToBackDeletes(kcp, {
        consumers: w.consumers,
        namespace: w.namespace,
        prefix: "restart",
        signal: race.signal,
        outage: () => away,
        tally,
      });
      running.catch(() => {});
      try {
        await waitFor("the race to run", () => {
          return Promise.resolve(tally.rounds >= 10 || undefined);
        }, { timeoutMs: 60_000, intervalMs: 200 });
        const logBefore = (await w.webhook().log()).length;
        away = true;
        const atStop = { ...tally };
        await kcp.stop({ keepRootDir: true });
        await kcp.start();
        console.log(`kcp back after ${kcp.lastStartupMs.toFixed(0)} ms`);
        const back = performance.now();
        const atStart = (await indexMetrics(w.webhook())).answers;
        // Back: the race goes on, and the index answers it again.
        await waitFor("the index feeds to sync again", async () => {
          const { feeds } = await indexMetrics(w.webhook());
          return ((feeds.synced ?? 0) > 0 && (feeds.failed ?? 0) === 0) ||
            undefined;
        }, { timeoutMs: 120_000, intervalMs: 250 });
        console.log(
          `the index synced again ${
            ((performance.now() - back) / 1000).toFixed(1)
          } s after kcp was back`,
        );
        await waitFor("the index to confirm dependents again", async () => {
          const { answers, feeds } = await indexMetrics(w.webhook());
          return ((answers.confirmed ?? 0) >= (atStart.confirmed ?? 0) + 20 &&
            (feeds.synced ?? 0) > 0 && (feeds.failed ?? 0) === 0) ||
            undefined;
        }, { timeoutMs: 120_000, intervalMs: 500 });
        away = false;
        const settled = tally.rounds;
        await waitFor("more rounds with kcp settled", () => {
          return Promise.resolve(tally.rounds >= settled + 10 || undefined);
        }, { timeoutMs: 60_000, intervalMs: 200 });
        race.abort();
        await running;
        console.log(
          `restart: ${atStop.rounds} rounds before the stop, ${tally.rounds} in all`,
          JSON.stringify({ ...tally, refused: tally.refused.length }),
        );
        for (const refusal of tally.refused.slice(0, 5)) {
          console.log(`refused: ${refusal}`);
        }
        assert.deepEqual(
          tally.wrongAllows,
          [],
          "deletes the list would deny",
        );
        assert.ok(tally.denied >= tally.rounds, JSON.stringify(tally));
        const { answers, feeds, lines } = await indexMetrics(w.webhook());
        console.log(lines.join("\n"));
        assert.ok((answers.confirmed ?? 0) > (atStart.confirmed ?? 0));
        console.log(
          `since kcp was back: ${
            (answers.not_synced ?? 0) - (atStart.not_synced ?? 0)
          } reviews listed (index not synced), ${
            (answers.confirmed ?? 0) - (atStart.confirmed ?? 0)
          } confirmed by the index`,
        );
        assert.equal(feeds.failed ?? 0, 0);
        const log = (await w.webhook().log()).slice(logBefore);
        // The restart broke the index's watches: each feed listed again.
        assert.match(
          log,
          /dependents index feed failed, listing again|resource version expired, listing again|listed into the dependents index/,
        );
        assert.equal(await assertDeleteDenied(kcp, w.vpc, w.denial), w.denial);
      } finally {
        race.abort();
        await running.catch(() => {});
      }
    },
  );
}
