/**
 * The sharded suites on one sharded kcp (a cache server, the root shard,
 * `shard-1` and kcp-front-proxy), one after another, each in workspaces of
 * its own:
 *
 * - `sharded_harness_steps.ts` (`root:on-root`, `root:on-shard-1`,
 *   `root:provider`): the harness against real processes. First: it counts
 *   the processes and shards it started and creates the probe ClusterRole
 *   in `system:admin` of each shard.
 * - `sharded_index_steps.ts` (`root:idx`): the webhook with
 *   `--dependents-index` through the front-proxy, its index fed on both
 *   shards, 1 000 back-to-back rounds over consumers on both. Before the
 *   product's suite: it counts the index's feeds, one per shard, so no
 *   other rule may be live yet; its own rule (on shard-1) stays, and the
 *   product's suite reads only its own workspaces.
 * - `sharded_steps.ts` (`root:dep-ctrl`, `root:providers:*`,
 *   `root:consumers:*`): the product as production runs it, the components
 *   through the front-proxy, a shard down and back; status truth.
 *
 * And, with no kcp: a process that fails to start is reported with its log.
 */
import assert from "node:assert/strict";
import { requireShardedKcpBinaries } from "../../testing/kcp/binaries.ts";
import {
  shardedKcpTest,
  startShardedKcp,
  worldPaths,
} from "../../testing/mod.ts";
import { shardedHarnessSteps } from "./sharded_harness_steps.ts";
import { shardedIndexSteps } from "./sharded_index_steps.ts";
import { shardedSteps } from "./sharded_steps.ts";

shardedKcpTest(
  "sharded on one sharded kcp: the harness places workspaces, accepts identities, takes a shard down and back, and publishes one endpoint URL per shard; the dependents index, fed on both shards, denies a VPC's delete right after its VM's create, 1 000 times; the components through the front-proxy protect on both shards, fail closed per shard, and hold through a shard down and back",
  async (kcp, step) => {
    await shardedHarnessSteps(kcp, step);
    await shardedIndexSteps(kcp, step, worldPaths("root:idx"));
    await shardedSteps(kcp, step);
  },
);

Deno.test("sharded harness: a process that fails to start is reported with its log, and nothing is left behind", async () => {
  const binaries = await requireShardedKcpBinaries();
  const rootDir = await Deno.makeTempDir({ prefix: "sharded-start-failure-" });
  const kept = Deno.env.get("KEEP_KCP_ROOT");
  Deno.env.delete("KEEP_KCP_ROOT");
  try {
    // `sh start ...` fails at once, printing why: a shard that exits.
    const error = await startShardedKcp({
      binaries: { ...binaries, kcp: "/bin/sh" },
      rootDir,
    }).then(
      () => assert.fail("the sharded kcp started"),
      (e: unknown) => e as Error,
    );
    assert.match(error.message, /Cannot start the sharded kcp/);
    assert.match(error.message, /Cannot start shard root .*the process exited/);
    assert.match(error.message, /--- shard root log tail ---\n.*start/s);
    assert.equal(
      await Deno.stat(rootDir).then(() => "exists", () => "removed"),
      "removed",
    );
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`)
        .catch(() => "");
      assert.ok(!cmdline.includes(rootDir), `process ${entry.name} is left`);
    }
  } finally {
    if (kept !== undefined) Deno.env.set("KEEP_KCP_ROOT", kept);
    await Deno.remove(rootDir, { recursive: true }).catch(() => {});
  }
});
