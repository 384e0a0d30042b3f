/**
 * The kcp of `deno task dev`, one process or sharded behind
 * kcp-front-proxy, and everything the walk-through starts, stopped in
 * reverse order at the end.
 *
 * @module
 */
import { basename } from "node:path";
import type { KcpVersion } from "../../testing/kcp/binaries.ts";
import {
  type ComponentProcess,
  createWorkspace,
  DEP_CTRL_EXPORT,
  type KcpApi,
  SHARD_NAMES,
  type ShardedKcp,
  type ShardName,
  startKcp,
  startShardedKcp,
  type Topology,
  waitFor,
  waitForEndpointUrls,
} from "../../testing/mod.ts";
import { note, secondsOf, shown, step } from "./output.ts";
import { waitingFor } from "./waiting.ts";

/**
 * The kcp the walk-through runs on: one kcp process, or a sharded kcp
 * whose front-proxy is what everything talks to.
 */
export interface DevKcp {
  /** What the helpers, the components and kubectl talk to. */
  api: KcpApi;
  /** The sharded kcp with `--shards 2`. */
  sharded: ShardedKcp | undefined;
  /** Stops every kcp process. */
  stop(): Promise<void>;
  /** The last lines of every kcp process's log, for a failure. */
  logTails(lines: number): Promise<string>;
}

/**
 * Everything started so far, stopped in reverse order, and the directory
 * removed. What starts after {@linkcode Running.stop} (a walk-through cut
 * short by Ctrl-C) is stopped as soon as it is added.
 */
export class Running {
  /** The kcp, once started. */
  kcp: DevKcp | undefined;
  /** The directory to remove at the end, once it is ours. */
  dir: string | undefined;
  readonly #components = new Map<ComponentProcess, string>();
  #stopped = false;

  /** The components started, in order, with their names. */
  get components(): ReadonlyMap<ComponentProcess, string> {
    return this.#components;
  }

  /** Records the kcp (stopping it at once if everything is stopping). */
  async addKcp(kcp: DevKcp): Promise<DevKcp> {
    this.kcp = kcp;
    if (this.#stopped) await kcp.stop();
    return kcp;
  }

  /** Records a component (stopping it at once if everything is stopping). */
  async add<T extends ComponentProcess>(
    name: string,
    component: T,
  ): Promise<T> {
    this.#components.set(component, name);
    if (this.#stopped) await component.stop();
    return component;
  }

  /** Stops the components, then kcp, and removes the directory. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const component of [...this.#components.keys()].reverse()) {
      await component.stop().catch(() => {});
    }
    await this.kcp?.stop().catch(() => {});
    if (this.dir !== undefined) {
      await Deno.remove(this.dir, { recursive: true }).catch(() => {});
    }
  }
}

/**
 * Where `--shards 2` places the topology's workspaces. They are created on
 * their shard before `buildTopology`, which reuses existing workspaces.
 */
export const PLACEMENT = {
  depCtrl: { path: "root:dep-ctrl", shard: "root" },
  network: { path: "root:providers:network", shard: "root" },
  compute: { path: "root:providers:compute", shard: "shard-1" },
  consumers: [
    { path: "root:consumers:c1", shard: "root" },
    { path: "root:consumers:c2", shard: "shard-1" },
  ],
} as const satisfies Record<
  string,
  | { path: string; shard: ShardName }
  | readonly { path: string; shard: ShardName }[]
>;

/** Starts one kcp in `<dir>/kcp` (step 1). */
export async function startSingle(
  running: Running,
  options: { dir: string; kcpVersion: KcpVersion },
): Promise<KcpApi> {
  const { dir, kcpVersion } = options;
  step("Starting kcp on loopback");
  const kcp = await waitingFor(
    "kcp to answer /readyz",
    startKcp({ rootDir: `${dir}/kcp`, version: kcpVersion }),
    { hint: "(a first start takes about half a minute)" },
  );
  await running.addKcp({
    api: kcp,
    sharded: undefined,
    stop: () => kcp.stop(),
    logTails: async (lines) =>
      `last lines of the kcp log:\n${await kcp.logTail(lines)}`,
  });
  note(`kcp is ready at ${kcp.baseUrl} after ${secondsOf(kcp.lastStartupMs)}`);
  note(`kubectl:   ${kcp.binaries.kubectl}`);
  note(`kcp log:   ${shown(`${kcp.rootDir}/kcp.log`)}`);
  return kcp;
}

/** Starts a sharded kcp in `<dir>/kcp` (step 1). */
export async function startSharded(
  running: Running,
  options: { dir: string; kcpVersion: KcpVersion },
): Promise<KcpApi> {
  const { dir, kcpVersion } = options;
  step(
    "Starting a sharded kcp on loopback: a cache server, shards root and shard-1, kcp-front-proxy",
  );
  const sharded = await waitingFor(
    "the cache server, both shards and kcp-front-proxy to answer /readyz",
    startShardedKcp({ rootDir: `${dir}/kcp`, version: kcpVersion }),
    { hint: "(about a minute)" },
  );
  await running.addKcp({
    api: sharded.front,
    sharded,
    stop: () => sharded.stop(),
    logTails: async (lines) =>
      `last lines of the kcp logs:\n${await sharded.logTails(lines)}`,
  });
  const front = sharded.front;
  const times = sharded.startupMs;
  note(
    `kcp-front-proxy is ready at ${front.baseUrl} after ${
      secondsOf(times.total)
    } (cache server ${secondsOf(times.cacheServer)}, ${
      SHARD_NAMES.map((name) =>
        `shard ${name} ${secondsOf(times.shards[name])}`
      ).join(", ")
    }, front-proxy ${secondsOf(times.frontProxy)})`,
  );
  for (const name of SHARD_NAMES) {
    note(`${`shard ${name}:`.padEnd(15)} ${sharded.shards[name].baseUrl}`);
  }
  note(`kubectl:   ${front.binaries.kubectl}`);
  const logs = sharded.processes().map((p) => basename(p.logFile, ".log"));
  note(`kcp logs:  ${shown(sharded.rootDir)}/{${logs.join(",")}}.log`);
  return front;
}

/**
 * Creates the workspaces of {@linkcode PLACEMENT} on their shards (their
 * parents go where kcp schedules them).
 */
export async function placeWorkspaces(kcp: KcpApi): Promise<void> {
  const { depCtrl, network, compute, consumers } = PLACEMENT;
  await Promise.all(
    [depCtrl, network, compute, ...consumers].map(({ path, shard }) =>
      createWorkspace(kcp, path, { shard })
    ),
  );
}

/** The dep-ctrl export's virtual-workspace URLs, once there are `count`. */
export function waitForDepCtrlUrls(
  kcp: KcpApi,
  topology: Topology,
  options: { count: number },
): Promise<string[]> {
  const { count } = options;
  return waitFor(
    `${count} endpoint URLs of ${topology.depCtrl.path}/${DEP_CTRL_EXPORT}`,
    async () => {
      const urls = await waitForEndpointUrls(
        kcp,
        topology.depCtrl.path,
        DEP_CTRL_EXPORT,
      );
      return urls.length >= count ? urls : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 250 },
  );
}
