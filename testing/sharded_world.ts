/**
 * The worlds of the product on a sharded kcp (a cache server, the root
 * shard, `shard-1` and kcp-front-proxy), as the sharded e2e suites build
 * them: {@linkcode shardedWorld}, the product as production runs it
 * (dep-ctrl and the network provider on the root shard, the compute
 * provider on shard-1, one consumer on each, the components through the
 * front-proxy), and {@linkcode shardedIndexWorld}, the webhook with
 * `--dependents-index` over consumers on both shards.
 *
 * ```ts
 * import { shardedKcpTest } from "./mod.ts";
 * import { shardedWorld } from "./sharded_world.ts";
 *
 * shardedKcpTest("a denial through the front-proxy", async (kcp, step) => {
 *   const w = shardedWorld(kcp);
 *   try {
 *     await step("denied", async () => {
 *       await w.waitForDenial(w.onShard1, ["vpc", "core"], /still referenced/);
 *     });
 *   } finally {
 *     await w.stop();
 *   }
 * });
 * ```
 *
 * @module
 */
import type { WorldPaths } from "./component_suite.ts";
import {
  type ComponentProcess,
  startController,
  startWebhook,
  stopComponents,
  type WebhookProcess,
} from "./components.ts";
import { dryRunDelete, waitForDenial } from "./expect.ts";
import type { KcpApi } from "./kcp_server.ts";
import { sample } from "./metrics_text.ts";
import type {
  KcpShard,
  ShardedFront,
  ShardedKcp,
  ShardName,
} from "./sharded_kcp.ts";

/** A workspace (path) and the shard it is placed on. */
export type Placement = readonly [path: string, shard: ShardName];

/** The running components of a world, started in its first step. */
interface Running {
  webhook?: WebhookProcess;
  controller?: ComponentProcess;
}

/** The webhook of `running`, or an error if it was not started. */
function startedWebhook(running: Running): WebhookProcess {
  if (running.webhook === undefined) {
    throw new Error("the webhook was not started");
  }
  return running.webhook;
}

/** The controller of `running`, or an error if it was not started. */
function startedController(running: Running): ComponentProcess {
  if (running.controller === undefined) {
    throw new Error("the controller was not started");
  }
  return running.controller;
}

/**
 * The shard each URL points at (`undefined` for one at no shard), sorted:
 * whom an endpoint slice sends components to.
 */
export function shardsOfUrls(
  shards: Readonly<Record<ShardName, Pick<KcpShard, "name" | "baseUrl">>>,
  urls: readonly string[],
): (ShardName | undefined)[] {
  return urls.map((u) =>
    Object.values(shards).find((s) => u.startsWith(s.baseUrl))?.name
  ).sort();
}

/** The product on a sharded kcp; see {@linkcode shardedWorld}. */
export interface ShardedWorld {
  /** The front-proxy's view: what users and components are given. */
  readonly front: ShardedFront;
  /** Each shard, talked to directly. */
  readonly shards: Readonly<Record<ShardName, KcpShard>>;
  /** `root:dep-ctrl`, on the root shard. */
  readonly depCtrl: string;
  /** `root:providers:network`, on the root shard. */
  readonly network: string;
  /** `root:providers:compute`, on shard-1: the rules live here. */
  readonly compute: string;
  /** `root:consumers:on-root`, on the root shard. */
  readonly onRoot: string;
  /** `root:consumers:on-shard-1`, on shard-1. */
  readonly onShard1: string;
  /** Every workspace above and its shard, dep-ctrl first. */
  readonly placement: readonly Placement[];
  /** Starts the webhook, then the controller, both through the front-proxy. */
  startComponents(): Promise<void>;
  /**
   * The running webhook.
   *
   * @throws {Error} If it was not started.
   */
  webhook(): WebhookProcess;
  /**
   * The running controller.
   *
   * @throws {Error} If it was not started.
   */
  controller(): ComponentProcess;
  /**
   * `kubectl delete <what> -n team --dry-run=server` in a consumer: its
   * error text, `""` if allowed.
   */
  dryRunDelete(workspace: string, what: readonly string[]): Promise<string>;
  /**
   * Polls that dry-run delete (for 120 s, every 500 ms) until it fails with
   * an error matching `expected`, and returns the error text.
   */
  waitForDenial(
    workspace: string,
    what: readonly string[],
    expected: RegExp,
  ): Promise<string>;
  /** The webhook's value of a metric series, or NaN. */
  metric(series: string): Promise<number>;
  /**
   * The `clientConfig.url`s of our ValidatingWebhookConfiguration in a
   * provider workspace; `undefined` while there is none.
   */
  configurationUrls(workspace: string): Promise<string[] | undefined>;
  /** Stops the components started, and prints the world's wall time. */
  stop(): Promise<void>;
}

/**
 * The product as production runs it on `kcp`: its workspaces (created by
 * the first step), components started through the front-proxy, and what
 * the steps ask of it. Objects in the consumers are in namespace `team`.
 */
export function shardedWorld(kcp: ShardedKcp): ShardedWorld {
  const started = performance.now();
  const { front, shards } = kcp;
  const depCtrl = "root:dep-ctrl";
  const network = "root:providers:network";
  const compute = "root:providers:compute";
  const onRoot = "root:consumers:on-root";
  const onShard1 = "root:consumers:on-shard-1";
  const running: Running = {};
  const target = (workspace: string, what: readonly string[]) => ({
    workspace,
    type: what[0]!,
    name: what[1]!,
    namespace: "team",
  });
  return {
    front,
    shards,
    depCtrl,
    network,
    compute,
    onRoot,
    onShard1,
    placement: [
      [depCtrl, "root"],
      [network, "root"],
      [compute, "shard-1"],
      [onRoot, "root"],
      [onShard1, "shard-1"],
    ],
    async startComponents() {
      running.webhook = await startWebhook(front);
      running.controller = await startController(front, {
        webhook: running.webhook,
      });
    },
    webhook: () => startedWebhook(running),
    controller: () => startedController(running),
    dryRunDelete: (workspace, what) =>
      dryRunDelete(front, target(workspace, what)),
    waitForDenial: (workspace, what, expected) =>
      waitForDenial(front, {
        workspace,
        args: ["delete", ...what, "-n", "team", "--dry-run=server"],
        expected,
      }, { timeoutMs: 120_000, intervalMs: 500 }),
    async metric(series) {
      const webhook = startedWebhook(running);
      const { text } = await webhook.get(webhook.metricsPort, "/metrics");
      return sample(text, series) ?? NaN;
    },
    configurationUrls: (workspace) => configurationUrls(front, workspace),
    async stop() {
      await running.controller?.stop();
      await running.webhook?.stop();
      console.log(
        `sharded e2e wall time: ${
          ((performance.now() - started) / 1000).toFixed(1)
        } s`,
      );
    },
  };
}

/** The `clientConfig.url`s of our configuration in a provider workspace. */
async function configurationUrls(
  kcp: KcpApi,
  workspace: string,
): Promise<string[] | undefined> {
  const r = await kcp.kubectl([
    "get",
    "validatingwebhookconfigurations",
    "dependency-controller",
    "-o",
    "jsonpath={.webhooks[*].clientConfig.url}",
  ], { workspace });
  return r.code === 0 ? r.stdout.split(" ").filter((u) => u !== "") : undefined;
}

/** The dependents index on a sharded kcp; see {@linkcode shardedIndexWorld}. */
export interface ShardedIndexWorld {
  /** The front-proxy's view: what users and components are given. */
  readonly front: ShardedFront;
  /** The network provider, on the root shard. */
  readonly network: string;
  /** The compute provider, on shard-1: its rule lives here. */
  readonly compute: string;
  /** Consumers `r1` and `r2`, on the root shard. */
  readonly onRoot: string[];
  /** Consumers `s1` and `s2`, on shard-1. */
  readonly onShard1: string[];
  /** Every consumer, those on the root shard first. */
  readonly consumers: string[];
  /** Every workspace of the world (`root:dep-ctrl` first) and its shard. */
  readonly placement: readonly Placement[];
  /** The namespace of the consumers' objects, `team-a`. */
  readonly namespace: string;
  /** Back-to-back rounds per consumer, 250. */
  readonly rounds: number;
  /**
   * Starts the webhook with `--dependents-index`, then the controller,
   * both through the front-proxy.
   */
  startComponents(): Promise<void>;
  /**
   * The running webhook.
   *
   * @throws {Error} If it was not started.
   */
  webhook(): WebhookProcess;
  /** Says the steps passed: {@linkcode stop} shows no logs. */
  passed(): void;
  /** Stops the components started, printing their logs unless passed. */
  stop(): Promise<void>;
}

/**
 * The dependents index on `kcp` in the world at `paths`: dep-ctrl and the
 * network provider on the root shard, the compute provider on shard-1,
 * consumers `r1` and `r2` on the root shard, `s1` and `s2` on shard-1.
 */
export function shardedIndexWorld(
  kcp: ShardedKcp,
  paths: WorldPaths,
): ShardedIndexWorld {
  const { front } = kcp;
  const onRoot = [paths.consumer("r1"), paths.consumer("r2")];
  const onShard1 = [paths.consumer("s1"), paths.consumer("s2")];
  const running: Running = {};
  let failed = true;
  return {
    front,
    network: paths.network,
    compute: paths.compute,
    onRoot,
    onShard1,
    consumers: [...onRoot, ...onShard1],
    placement: [
      ["root:dep-ctrl", "root"],
      [paths.network, "root"],
      [paths.compute, "shard-1"],
      ...onRoot.map((c): Placement => [c, "root"]),
      ...onShard1.map((c): Placement => [c, "shard-1"]),
    ],
    namespace: "team-a",
    rounds: 250,
    async startComponents() {
      running.webhook = await startWebhook(front, {
        args: ["--dependents-index"],
      });
      running.controller = await startController(front, {
        webhook: running.webhook,
      });
    },
    webhook: () => startedWebhook(running),
    passed() {
      failed = false;
    },
    async stop() {
      await stopComponents([running.controller, running.webhook], {
        showLogs: failed,
      });
    },
  };
}
