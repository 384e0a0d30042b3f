/**
 * A sharded kcp on loopback for the tests: an external cache server, the
 * root shard, a second shard `shard-1` and `kcp-front-proxy`, each on free
 * ports, in one fresh root directory, with etcd fsync off. The tests'
 * identities ({@linkcode IDENTITY_USERS}) hold the same static bearer tokens
 * on the front-proxy and on every shard, since components follow
 * APIExportEndpointSlice URLs that point straight at the shards.
 *
 * {@linkcode ShardedKcp.front} has the API of a single-shard
 * {@linkcode KcpServer} ({@linkcode KcpApi}) and talks to the front-proxy,
 * so the helpers (`buildTopology`, `createWorkspace`, `startController` and the rest)
 * work unchanged; {@linkcode ShardedKcp.shards} talk to each shard directly.
 *
 * ```ts
 * import { createWorkspace, shardedKcpTest, workspaceShard } from "./mod.ts";
 *
 * shardedKcpTest("a workspace on the second shard", async (kcp, step) => {
 *   await step("create", async () => {
 *     await createWorkspace(kcp.front, "root:team", { shard: "shard-1" });
 *     console.log(await workspaceShard(kcp.front, "root:team")); // shard-1
 *   });
 * });
 * ```
 *
 * @module
 */
import { createHash } from "node:crypto";
import { errorText } from "../lib/runtime/mod.ts";
import {
  type KcpVersion,
  requireShardedKcpBinaries,
  type ShardedKcpBinaries,
} from "./kcp/binaries.ts";
import { type Step, suiteTest } from "./kcp_suite.ts";
import {
  freePorts,
  type Identity,
  type IdentityName,
  KCP_SHUTDOWN_ARGS,
  type KcpApi,
  KcpEndpoint,
  type KcpPorts,
  type KubectlOptions,
  kubectlOutput,
  type KubectlResult,
  readLogTail,
  type RequestOptions,
  tokenFile,
} from "./kcp_server.ts";
import { appendTo, runCommand, stopProcess } from "./process.ts";
import { createServingCert } from "./tls.ts";
import { GiveUp, waitFor } from "./wait.ts";

/** The shards of a sharded test kcp, root first. */
export const SHARD_NAMES = ["root", "shard-1"] as const;

/** The name of one shard (`--shard-name`). */
export type ShardName = (typeof SHARD_NAMES)[number];

/** Options for {@linkcode startShardedKcp}. */
export interface StartShardedKcpOptions {
  /**
   * The kcp release to run, when `binaries` is not given.
   * @default `KCP_VERSION`, or the newest release built
   */
  version?: KcpVersion;
  /** Binaries to run. @default the cached build ({@linkcode requireShardedKcpBinaries}) */
  binaries?: ShardedKcpBinaries;
  /** How long each process may take to become ready. @default {240_000} */
  startTimeoutMs?: number;
  /**
   * Root directory to use instead of a fresh temporary one; it is created,
   * and must be absent or empty.
   */
  rootDir?: string;
}

/** Milliseconds each process took to become ready at the first start. */
export interface ShardedStartupTimes {
  /** The cache server. */
  cacheServer: number;
  /** Each shard, from spawn to `/readyz` 200. */
  shards: Record<ShardName, number>;
  /** The front-proxy, until it routes to the root workspace. */
  frontProxy: number;
  /** From the first spawn until everything is ready. */
  total: number;
}

/** One process of a sharded kcp, as {@linkcode ShardedKcp.processes} lists it. */
export interface ShardedProcess {
  /** `cache-server`, `shard-root`, `shard-shard-1` or `front-proxy`. */
  name: string;
  /** Its process id while it runs. */
  pid: number | undefined;
  /** Its log file (standard output and standard error). */
  logFile: string;
}

/** The group kcp's scheduler uses to create LogicalClusters on other shards. */
const LOGICAL_CLUSTER_ADMIN_GROUP = "system:kcp:logical-cluster-admin";
/** The group kcp's controllers use when they go through the front-proxy. */
const EXTERNAL_LOGICAL_CLUSTER_ADMIN_GROUP =
  "system:kcp:external-logical-cluster-admin";
const READY_PROBE =
  "/clusters/root/apis/core.kcp.io/v1alpha1/logicalclusters/cluster";

/** Options for {@linkcode ManagedProcess}. */
export interface ManagedProcessOptions {
  /** The executable. */
  program: string;
  /** Its arguments. */
  args: readonly string[];
  /** The file its standard output and standard error are appended to. */
  logFile: string;
  /**
   * Resolves once the process is ready; `exited()` tells whether it has
   * exited meanwhile (then give up, e.g. with {@linkcode GiveUp}).
   */
  ready: (exited: () => boolean) => Promise<void>;
}

/**
 * A child process with its log file and a readiness probe, which can be
 * stopped and started again: the cache server, each shard and the
 * front-proxy of a {@linkcode ShardedKcp}. It runs with etcd fsync off
 * (`UNSAFE_E2E_HACK_DISABLE_ETCD_FSYNC=true`).
 */
export class ManagedProcess {
  /** A name for messages, e.g. `cache-server`. */
  readonly name: string;
  /** {@inheritDoc ManagedProcessOptions.logFile} */
  readonly logFile: string;
  readonly #program: string;
  readonly #args: readonly string[];
  readonly #ready: (exited: () => boolean) => Promise<void>;
  #child: Deno.ChildProcess | undefined;
  #logsClosed: Promise<unknown> = Promise.resolve();

  /** Builds the process; it spawns nothing until {@linkcode ManagedProcess.start}. */
  constructor(name: string, options: ManagedProcessOptions) {
    this.name = name;
    this.logFile = options.logFile;
    this.#program = options.program;
    this.#args = options.args;
    this.#ready = options.ready;
  }

  /** The process id while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Spawns the process and waits until it is ready; returns the
   * milliseconds that took.
   *
   * @throws {Error} With the tail of its log if it exits or is not ready in
   * time; it is stopped then.
   */
  async start(): Promise<number> {
    if (this.#child !== undefined) {
      throw new Error(`Cannot start ${this.name}: it is running already`);
    }
    const started = performance.now();
    const child = new Deno.Command(this.#program, {
      args: [...this.#args],
      env: { UNSAFE_E2E_HACK_DISABLE_ETCD_FSYNC: "true" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#child = child;
    this.#logsClosed = Promise.all([
      appendTo(child.stdout, this.logFile),
      appendTo(child.stderr, this.logFile),
    ]);
    let exited = false;
    child.status.then(() => exited = true);
    try {
      await this.#ready(() => exited);
    } catch (error) {
      const tail = await this.logTail(40);
      await this.stop();
      throw new Error(
        `Cannot start ${this.name} (log ${this.logFile}): ${
          errorText(error)
        }\n--- ${this.name} log tail ---\n${tail}`,
      );
    }
    return performance.now() - started;
  }

  /** Stops exactly this process: SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 20_000): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.#child = undefined;
    await stopProcess(child, { graceMs });
    await this.#logsClosed;
  }

  /** The last `lines` lines of its log. */
  async logTail(lines: number): Promise<string> {
    return await readLogTail(this.logFile, lines) ?? `(no ${this.name} log)`;
  }
}

/**
 * Polls `url` until it answers 200, giving up when the process exits.
 */
async function waitForOk(
  url: string,
  options: {
    what: string;
    client: () => Deno.HttpClient;
    token?: string;
    exited: () => boolean;
    timeoutMs: number;
  },
): Promise<void> {
  await waitFor(options.what, async () => {
    if (options.exited()) throw new GiveUp("the process exited");
    const response = await fetch(url, {
      client: options.client(),
      signal: AbortSignal.timeout(5_000),
      ...(options.token === undefined
        ? {}
        : { headers: { authorization: `Bearer ${options.token}` } }),
    });
    await response.body?.cancel();
    if (response.status !== 200) {
      throw new Error(`${url} answered ${response.status}`);
    }
    return true;
  }, { timeoutMs: options.timeoutMs, intervalMs: 250 });
}

/**
 * One shard of a {@linkcode ShardedKcp}: {@linkcode KcpApi} on the shard's
 * own URL (for `shardAdmin` and `system:admin`, and to see what the shard
 * itself serves), and a stop and start of this shard alone, its data kept.
 */
export class KcpShard implements KcpApi {
  /** `root` or `shard-1`. */
  readonly name: ShardName;
  /** The shard's `--root-directory` (etcd data, its kubeconfigs). */
  readonly rootDir: string;
  /** `https://127.0.0.1:<port>` of this shard. */
  readonly baseUrl: string;
  /** Binaries in use. */
  readonly binaries: ShardedKcpBinaries;
  /** The ports this shard listens on. */
  readonly ports: KcpPorts;
  /** Milliseconds from spawn to `/readyz` 200 for the last start. */
  lastStartupMs = 0;

  readonly #process: ManagedProcess;
  readonly #endpoint: KcpEndpoint;
  readonly #caPem: string;

  /** Use {@linkcode startShardedKcp}; the constructor starts nothing. */
  constructor(
    name: ShardName,
    options: {
      rootDir: string;
      ports: KcpPorts;
      binaries: ShardedKcpBinaries;
      tokens: Readonly<Record<IdentityName, string>>;
      caPem: string;
      args: readonly string[];
      logFile: string;
      startTimeoutMs: number;
    },
  ) {
    this.name = name;
    this.rootDir = options.rootDir;
    this.ports = options.ports;
    this.baseUrl = `https://127.0.0.1:${options.ports.secure}`;
    this.binaries = options.binaries;
    this.#caPem = options.caPem;
    this.#endpoint = new KcpEndpoint({
      rootDir: this.rootDir,
      baseUrl: this.baseUrl,
      binaries: this.binaries,
      tokens: options.tokens,
      kubeconfigDir: `${this.rootDir}/kubeconfigs`,
      logTail: (lines) => this.logTail(lines),
    });
    this.#process = new ManagedProcess(`shard ${name}`, {
      program: this.binaries.kcp,
      args: [
        "start",
        `--root-directory=${this.rootDir}`,
        "--bind-address=127.0.0.1",
        `--secure-port=${options.ports.secure}`,
        `--embedded-etcd-client-port=${options.ports.etcdClient}`,
        `--embedded-etcd-peer-port=${options.ports.etcdPeer}`,
        "--embedded-etcd-wal-size-bytes=5000",
        `--shard-name=${name}`,
        ...KCP_SHUTDOWN_ARGS,
        ...options.args,
        "--v=2",
      ],
      logFile: options.logFile,
      ready: (exited) => {
        this.#endpoint.trust(this.#caPem);
        return waitForOk(`${this.baseUrl}/readyz`, {
          what: `shard ${name} /readyz`,
          client: () => this.#endpoint.httpClient(),
          exited,
          timeoutMs: options.startTimeoutMs,
        });
      },
    });
  }

  /** The serving CA, PEM (the same for every process of the sharded kcp). */
  get caPem(): string {
    return this.#caPem;
  }

  /** The process id of the running shard, if any. */
  get pid(): number | undefined {
    return this.#process.pid;
  }

  /** The shard's log file. */
  get logFile(): string {
    return this.#process.logFile;
  }

  /**
   * Starts the shard (first start, or again after {@linkcode KcpShard.stop}
   * on the same data) and waits for its `/readyz`.
   *
   * @throws {Error} With the tail of the shard's log if it exits or is not ready in time.
   */
  async start(): Promise<void> {
    this.lastStartupMs = await this.#process.start();
  }

  /**
   * Stops this shard's process alone (SIGTERM, then SIGKILL after
   * `graceMs`); its root directory, and every other process, stay.
   */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    await this.#process.stop(options.graceMs);
    this.#endpoint.close();
  }

  /** {@inheritDoc KcpApi.identity} */
  identity(name: IdentityName): Identity {
    return this.#endpoint.identity(name);
  }

  /** {@inheritDoc KcpApi.clusterUrl} */
  clusterUrl(workspace: string): string {
    return this.#endpoint.clusterUrl(workspace);
  }

  /** {@inheritDoc KcpApi.request} */
  request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<T> {
    return this.#endpoint.request<T>(method, path, options);
  }

  /** {@inheritDoc KcpApi.kubeconfig} */
  kubeconfig(identity: IdentityName, workspace: string): Promise<string> {
    return this.#endpoint.kubeconfig(identity, workspace);
  }

  /** {@inheritDoc KcpApi.kubectl} */
  kubectl(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<KubectlResult> {
    return this.#endpoint.kubectl(args, options);
  }

  /** {@inheritDoc KcpApi.kubectlOk} */
  kubectlOk(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<string> {
    return this.#endpoint.kubectlOk(args, options);
  }

  /** The last `lines` lines of the shard's log. */
  logTail(lines: number): Promise<string> {
    return this.#process.logTail(lines);
  }
}

/**
 * The front-proxy of a {@linkcode ShardedKcp} as a {@linkcode KcpApi}:
 * every call goes through `kcp-front-proxy`, except those as `shardAdmin`.
 * The front-proxy drops the `system:masters` group, so `shardAdmin` calls
 * (which only `system:*` workspaces such as `system:admin` take) go to every
 * shard directly, root first: per-shard RBAC in `system:admin` is applied
 * to each shard, as an operator must.
 */
export class ShardedFront implements KcpApi {
  /** The sharded kcp's root directory. */
  readonly rootDir: string;
  /** `https://127.0.0.1:<port>` of the front-proxy. */
  readonly baseUrl: string;
  /** Binaries in use. */
  readonly binaries: ShardedKcpBinaries;

  readonly #endpoint: KcpEndpoint;
  readonly #shards: readonly KcpShard[];
  readonly #process: ManagedProcess;

  /** Use {@linkcode startShardedKcp}; the constructor starts nothing. */
  constructor(
    endpoint: KcpEndpoint,
    options: {
      binaries: ShardedKcpBinaries;
      shards: readonly KcpShard[];
      process: ManagedProcess;
    },
  ) {
    this.#endpoint = endpoint;
    this.rootDir = endpoint.rootDir;
    this.baseUrl = endpoint.baseUrl;
    this.binaries = options.binaries;
    this.#shards = options.shards;
    this.#process = options.process;
  }

  /** The serving CA, PEM (the same for every process of the sharded kcp). */
  get caPem(): string {
    return this.#endpoint.caPem;
  }

  /** The process id of the running front-proxy, if any. */
  get pid(): number | undefined {
    return this.#process.pid;
  }

  /** {@inheritDoc KcpApi.identity} */
  identity(name: IdentityName): Identity {
    return this.#endpoint.identity(name);
  }

  /** {@inheritDoc KcpApi.clusterUrl} */
  clusterUrl(workspace: string): string {
    return this.#endpoint.clusterUrl(workspace);
  }

  /**
   * A JSON request through the front-proxy; as `shardAdmin`, to every shard
   * directly (root first), returning the root shard's answer.
   *
   * @throws {KcpRequestError} If an answer has a status other than 2xx.
   * @throws {RangeError} If `shardAdmin` calls a path outside `/clusters/system:*`.
   */
  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<T> {
    if (options.identity !== "shardAdmin") {
      return await this.#endpoint.request<T>(method, path, options);
    }
    const cluster = /^\/clusters\/([^/]+)/.exec(path)?.[1] ?? "";
    requireSystemWorkspace(cluster);
    const answers: T[] = [];
    for (const shard of this.#shards) {
      answers.push(await shard.request<T>(method, path, options));
    }
    return answers[0] as T;
  }

  /**
   * A kubeconfig for `identity` whose server is the front-proxy's
   * `/clusters/<workspace>`.
   *
   * @throws {RangeError} For `shardAdmin`, whom the front-proxy strips of
   * `system:masters`: use a shard's {@linkcode KcpShard.kubeconfig}.
   */
  async kubeconfig(
    identity: IdentityName,
    workspace: string,
  ): Promise<string> {
    if (identity === "shardAdmin") {
      throw new RangeError(
        "Cannot write a front-proxy kubeconfig for shardAdmin: the front-proxy drops system:masters; use shards.<name>.kubeconfig",
      );
    }
    return await this.#endpoint.kubeconfig(identity, workspace);
  }

  /**
   * kubectl through the front-proxy; as `shardAdmin`, against every shard
   * directly (root first): the exit code is the first non-zero one, the
   * outputs are joined, each line of standard error tagged with its shard.
   *
   * @throws {RangeError} If `shardAdmin` names a workspace outside `system:*`.
   */
  async kubectl(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<KubectlResult> {
    if (options.identity !== "shardAdmin") {
      return await this.#endpoint.kubectl(args, options);
    }
    requireSystemWorkspace(options.workspace ?? "root");
    const results: KubectlResult[] = [];
    for (const shard of this.#shards) {
      const result = await shard.kubectl(args, options);
      results.push({
        ...result,
        stderr: result.stderr.split("\n").filter((l) => l !== "").map((l) =>
          `[shard ${shard.name}] ${l}\n`
        ).join(""),
      });
    }
    return {
      code: results.find((r) => r.code !== 0)?.code ?? 0,
      stdout: results.map((r) => r.stdout).join(""),
      stderr: results.map((r) => r.stderr).join(""),
    };
  }

  /** {@inheritDoc ShardedFront.kubectl}, returning standard output. */
  async kubectlOk(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<string> {
    return kubectlOutput(args, await this.kubectl(args, options));
  }

  /** The last `lines` lines of the front-proxy's log. */
  logTail(lines: number): Promise<string> {
    return this.#process.logTail(lines);
  }
}

function requireSystemWorkspace(workspace: string): void {
  if (!workspace.startsWith("system:")) {
    throw new RangeError(
      `Cannot call ${workspace} as shardAdmin through the front-proxy: it drops system:masters; use shards.<name> for workspaces outside system:*`,
    );
  }
}

/** A running (or stopped) sharded kcp; see the module documentation. */
export class ShardedKcp {
  /** The root directory: certificates, kubeconfigs, logs, each shard's data. */
  readonly rootDir: string;
  /** Binaries in use. */
  readonly binaries: ShardedKcpBinaries;
  /** The front-proxy's view: what users and components are given. */
  readonly front: ShardedFront;
  /** Each shard, talked to directly. */
  readonly shards: Readonly<Record<ShardName, KcpShard>>;
  /** The serving CA of every process, PEM. */
  readonly caPem: string;
  /** How long the first start took, per process. */
  startupMs: ShardedStartupTimes = {
    cacheServer: 0,
    shards: { root: 0, "shard-1": 0 },
    frontProxy: 0,
    total: 0,
  };

  readonly #cache: ManagedProcess;
  readonly #frontProcess: ManagedProcess;
  readonly #frontEndpoint: KcpEndpoint;
  readonly #cacheClient: Deno.HttpClient;

  /** Use {@linkcode startShardedKcp}; the constructor starts nothing. */
  constructor(
    rootDir: string,
    parts: {
      binaries: ShardedKcpBinaries;
      caPem: string;
      cache: ManagedProcess;
      cacheClient: Deno.HttpClient;
      shards: Record<ShardName, KcpShard>;
      frontEndpoint: KcpEndpoint;
      frontProcess: ManagedProcess;
    },
  ) {
    this.rootDir = rootDir;
    this.binaries = parts.binaries;
    this.caPem = parts.caPem;
    this.#cache = parts.cache;
    this.#cacheClient = parts.cacheClient;
    this.shards = parts.shards;
    this.#frontEndpoint = parts.frontEndpoint;
    this.#frontProcess = parts.frontProcess;
    this.front = new ShardedFront(parts.frontEndpoint, {
      binaries: parts.binaries,
      shards: SHARD_NAMES.map((name) => parts.shards[name]),
      process: parts.frontProcess,
    });
  }

  /** Every process, in start order, with its pid while it runs. */
  processes(): ShardedProcess[] {
    return [
      this.#cache,
      ...SHARD_NAMES.map((name) => this.shards[name]),
      this.#frontProcess,
    ].map((p) => ({
      name: p instanceof KcpShard ? `shard-${p.name}` : p.name,
      pid: p.pid,
      logFile: p.logFile,
    }));
  }

  /**
   * Starts every process (the cache server, the root shard, shard-1 and
   * the front-proxy), each waiting for the one before; {@linkcode startShardedKcp}
   * calls it once.
   *
   * @throws {Error} With the failing process's log tail, after stopping all
   * and removing the root directory unless `KEEP_KCP_ROOT` is set.
   */
  async start(): Promise<void> {
    const started = performance.now();
    try {
      const cacheServer = await this.#cache.start();
      // One after the other: side by side, shard-1 only waits longer for
      // root while taking CPU from it (measured on 2 cores).
      for (const name of SHARD_NAMES) await this.shards[name].start();
      this.#frontEndpoint.trust(this.caPem);
      const frontProxy = await this.#frontProcess.start();
      this.startupMs = {
        cacheServer,
        shards: {
          root: this.shards.root.lastStartupMs,
          "shard-1": this.shards["shard-1"].lastStartupMs,
        },
        frontProxy,
        total: performance.now() - started,
      };
    } catch (error) {
      const keep = Deno.env.has("KEEP_KCP_ROOT");
      await this.stop({ keepRootDir: keep });
      throw new Error(
        `Cannot start the sharded kcp (root ${this.rootDir}, ${
          keep ? "kept" : "removed; set KEEP_KCP_ROOT to keep it"
        }): ${errorText(error)}`,
      );
    }
  }

  /**
   * Stops every process this object started (front-proxy, shards, cache
   * server), and removes the root directory unless `keepRootDir`.
   */
  async stop(options: { keepRootDir?: boolean } = {}): Promise<void> {
    await this.#frontProcess.stop();
    this.#frontEndpoint.close();
    await Promise.all(SHARD_NAMES.map((name) => this.shards[name].stop()));
    await this.#cache.stop();
    this.#cacheClient.close();
    if (!options.keepRootDir) {
      await Deno.remove(this.rootDir, { recursive: true }).catch(() => {});
    }
  }

  /** The last `lines` lines of every process's log, each under a heading. */
  async logTails(lines: number): Promise<string> {
    const parts: string[] = [];
    for (const p of this.processes()) {
      parts.push(
        `--- ${p.name} (${p.logFile}) ---\n${
          await readLogTail(p.logFile, lines) ?? "(no log)"
        }`,
      );
    }
    return parts.join("\n");
  }
}

/**
 * Starts a sharded kcp on free loopback ports in a fresh temporary root
 * directory (or `options.rootDir`) and waits until every process is ready
 * and the front-proxy routes to the root workspace. Call
 * {@linkcode ShardedKcp.stop} when done.
 *
 * @throws {Error} With the tail of the failing process's log; nothing is left running.
 */
export async function startShardedKcp(
  options: StartShardedKcpOptions = {},
): Promise<ShardedKcp> {
  const binaries = options.binaries ??
    await requireShardedKcpBinaries(
      options.version === undefined ? {} : { version: options.version },
    );
  const timeoutMs = options.startTimeoutMs ?? 240_000;
  const rootDir = options.rootDir ?? await Deno.makeTempDir({
    prefix: "dependency-controller-sharded-kcp-",
  });
  if (options.rootDir !== undefined) {
    await Deno.mkdir(rootDir, { recursive: true });
    for await (const entry of Deno.readDir(rootDir)) {
      throw new Error(
        `Cannot start a sharded kcp in ${rootDir}: it is not empty (${entry.name})`,
      );
    }
  }
  const kcp = await prepare(rootDir, { binaries, timeoutMs }).catch(
    async (error) => {
      await Deno.remove(rootDir, { recursive: true }).catch(() => {});
      throw error;
    },
  );
  await kcp.start();
  return kcp;
}

/** Certificates, tokens, kubeconfigs and the (not yet started) processes. */
async function prepare(
  rootDir: string,
  options: { binaries: ShardedKcpBinaries; timeoutMs: number },
): Promise<ShardedKcp> {
  const { binaries, timeoutMs } = options;
  const ports = freePorts(10);
  const port = (i: number) => ports[i] as number;
  const cachePorts = {
    secure: port(0),
    etcdClient: port(1),
    etcdPeer: port(2),
  };
  const shardPorts: Record<ShardName, KcpPorts> = {
    root: { secure: port(3), etcdClient: port(4), etcdPeer: port(5) },
    "shard-1": { secure: port(6), etcdClient: port(7), etcdPeer: port(8) },
  };
  const frontUrl = `https://127.0.0.1:${port(9)}`;
  const cacheUrl = `https://127.0.0.1:${cachePorts.secure}`;
  const rootShardUrl = `https://127.0.0.1:${shardPorts.root.secure}`;

  // One serving CA for every process, so clients and kcp itself trust each
  // shard, the cache server and the front-proxy alike; and the client
  // certificate the front-proxy presents to shards, from its own CA, that
  // the shards trust to pass on the caller's identity in X-Remote-* headers.
  const serving = await createServingCert(`${rootDir}/pki/serving`, {
    cn: "kcp",
  });
  const proxyClient = await createClientCert(`${rootDir}/pki/requestheader`, {
    cn: "kcp-front-proxy",
  });
  const caPem = serving.caPem;
  const caData = btoa(caPem);

  const tokens: Record<IdentityName, string> = {
    admin: crypto.randomUUID(),
    shardAdmin: crypto.randomUUID(),
    controller: crypto.randomUUID(),
    webhook: crypto.randomUUID(),
    user: crypto.randomUUID(),
  };
  const system: Identity = {
    user: "kcp-system-shard",
    groups: ["system:masters"],
    token: crypto.randomUUID(),
  };
  const logicalClusterAdmin: Identity = {
    user: "logical-cluster-admin",
    groups: [LOGICAL_CLUSTER_ADMIN_GROUP],
    token: crypto.randomUUID(),
  };
  const externalLogicalClusterAdmin: Identity = {
    user: "external-logical-cluster-admin",
    groups: [EXTERNAL_LOGICAL_CLUSTER_ADMIN_GROUP],
    token: crypto.randomUUID(),
  };
  const tokensFile = `${rootDir}/tokens.csv`;
  await Deno.writeTextFile(
    tokensFile,
    tokenFile(tokens, [
      system,
      logicalClusterAdmin,
      externalLogicalClusterAdmin,
    ]),
  );

  const kubeconfigs = `${rootDir}/system-kubeconfigs`;
  await Deno.mkdir(kubeconfigs, { recursive: true });
  const write = async (
    file: string,
    config: {
      server: string;
      token?: string;
      context?: string;
      clientCert?: ClientCert;
    },
  ) => {
    const path = `${kubeconfigs}/${file}`;
    await Deno.writeTextFile(path, kubeconfigText({ ...config, caData }));
    return path;
  };
  // kcp v0.31's cache server authenticates its clients by certificate and
  // lets only system:masters in; v0.28's has no such flag and lets anyone in.
  const cacheClient = await cacheServerAuthenticates(binaries.cacheServer)
    ? await createClientCert(`${rootDir}/pki/cache-client`, {
      cn: "cache-client",
      organization: "system:masters",
    })
    : undefined;
  const cacheKubeconfig = await write("cache.kubeconfig", {
    server: cacheUrl,
    ...(cacheClient === undefined ? {} : { clientCert: cacheClient }),
  });
  // kcp reads the root shard's kubeconfig at context "shard-base".
  const rootShardKubeconfig = await write("root-shard.kubeconfig", {
    server: rootShardUrl,
    token: system.token,
    context: "shard-base",
  });
  const lcaKubeconfig = await write("logical-cluster-admin.kubeconfig", {
    server: rootShardUrl,
    token: logicalClusterAdmin.token,
  });
  const elcaKubeconfig = await write(
    "external-logical-cluster-admin.kubeconfig",
    { server: frontUrl, token: externalLogicalClusterAdmin.token },
  );
  const shardsKubeconfig = await write("shards.kubeconfig", {
    server: rootShardUrl,
    token: system.token,
  });
  const mappingFile = `${rootDir}/front-proxy-mapping.yaml`;
  // JSON is YAML: one mapping, for /clusters/, which the front-proxy routes
  // by its index of shards (the backend is only a fallback).
  await Deno.writeTextFile(
    mappingFile,
    JSON.stringify([{
      path: "/clusters/",
      backend: rootShardUrl,
      backend_server_ca: serving.caFile,
      proxy_client_cert: proxyClient.certFile,
      proxy_client_key: proxyClient.keyFile,
    }]),
  );

  const cacheHttp = Deno.createHttpClient({ caCerts: [caPem] });
  const cache = new ManagedProcess("cache-server", {
    program: binaries.cacheServer,
    args: [
      `--root-directory=${rootDir}/cache`,
      "--bind-address=127.0.0.1",
      `--secure-port=${cachePorts.secure}`,
      `--embedded-etcd-client-port=${cachePorts.etcdClient}`,
      `--embedded-etcd-peer-port=${cachePorts.etcdPeer}`,
      "--embedded-etcd-wal-size-bytes=5000",
      `--tls-cert-file=${serving.dir}/tls.crt`,
      `--tls-private-key-file=${serving.dir}/tls.key`,
      ...(cacheClient === undefined
        ? []
        : [`--client-ca-file=${cacheClient.caFile}`]),
      "--v=2",
    ],
    logFile: `${rootDir}/cache-server.log`,
    ready: (exited) =>
      waitForOk(`${cacheUrl}/readyz`, {
        what: "cache-server /readyz",
        client: () => cacheHttp,
        exited,
        timeoutMs,
      }),
  });

  const shardArgs = [
    `--token-auth-file=${tokensFile}`,
    `--tls-cert-file=${serving.dir}/tls.crt`,
    `--tls-private-key-file=${serving.dir}/tls.key`,
    `--requestheader-client-ca-file=${proxyClient.caFile}`,
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--cache-kubeconfig=${cacheKubeconfig}`,
    `--shard-external-url=${frontUrl}`,
    `--logical-cluster-admin-kubeconfig=${lcaKubeconfig}`,
    `--external-logical-cluster-admin-kubeconfig=${elcaKubeconfig}`,
  ];
  const shards = {} as Record<ShardName, KcpShard>;
  for (const name of SHARD_NAMES) {
    shards[name] = new KcpShard(name, {
      rootDir: `${rootDir}/shards/${name}`,
      ports: shardPorts[name],
      binaries,
      tokens,
      caPem,
      args: name === "root"
        ? shardArgs
        : [...shardArgs, `--root-shard-kubeconfig-file=${rootShardKubeconfig}`],
      logFile: `${rootDir}/shard-${name}.log`,
      startTimeoutMs: timeoutMs,
    });
  }

  const frontEndpoint = new KcpEndpoint({
    rootDir,
    baseUrl: frontUrl,
    binaries,
    tokens,
    kubeconfigDir: `${rootDir}/kubeconfigs`,
    logTail: (lines) =>
      readLogTail(`${rootDir}/front-proxy.log`, lines).then((t) =>
        t ?? "(no front-proxy log)"
      ),
  });
  const frontProcess = new ManagedProcess("front-proxy", {
    program: binaries.kcpFrontProxy,
    args: [
      `--root-directory=${rootDir}/front-proxy`,
      "--bind-address=127.0.0.1",
      `--secure-port=${port(9)}`,
      `--tls-cert-file=${serving.dir}/tls.crt`,
      `--tls-private-key-file=${serving.dir}/tls.key`,
      `--mapping-file=${mappingFile}`,
      `--root-kubeconfig=${shardsKubeconfig}`,
      `--shards-kubeconfig=${shardsKubeconfig}`,
      `--token-auth-file=${tokensFile}`,
      "--v=2",
    ],
    logFile: `${rootDir}/front-proxy.log`,
    // Its /readyz is 200 as soon as it listens; ready means it routes.
    ready: (exited) =>
      waitForOk(`${frontUrl}${READY_PROBE}`, {
        what: "the front-proxy to route /clusters/root",
        client: () => frontEndpoint.httpClient(),
        token: tokens.admin,
        exited,
        timeoutMs,
      }),
  });
  await Deno.mkdir(`${rootDir}/front-proxy`, { recursive: true });
  for (const name of SHARD_NAMES) {
    await Deno.mkdir(shards[name].rootDir, { recursive: true });
  }
  const kcp = new ShardedKcp(rootDir, {
    binaries,
    caPem,
    cache,
    cacheClient: cacheHttp,
    shards,
    frontEndpoint,
    frontProcess,
  });
  return kcp;
}

/** A kubeconfig (JSON) with one cluster, context and optional token user. */
function kubeconfigText(
  config: {
    server: string;
    caData: string;
    token?: string;
    context?: string;
    clientCert?: ClientCert;
  },
): string {
  const context = config.context ?? "default";
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "kcp",
        cluster: {
          server: config.server,
          "certificate-authority-data": config.caData,
        },
      }],
      users: [{
        name: "user",
        user: config.clientCert !== undefined
          ? {
            "client-certificate": config.clientCert.certFile,
            "client-key": config.clientCert.keyFile,
          }
          : config.token === undefined
          ? {}
          : { token: config.token },
      }],
      contexts: [{ name: context, context: { cluster: "kcp", user: "user" } }],
      "current-context": context,
    },
    null,
    2,
  );
}

/** A CA and a client certificate it signed, as files. */
interface ClientCert {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/**
 * Creates a CA and a client certificate (extended key usage `clientAuth`)
 * with common name `cn` in `dir`, with `openssl` as `testing/tls.ts` does.
 */
async function createClientCert(
  dir: string,
  options: { cn: string; organization?: string },
): Promise<ClientCert> {
  await Deno.mkdir(dir, { recursive: true });
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
  await openssl([
    "req",
    "-x509",
    ...key,
    "-nodes",
    "-keyout",
    `${dir}/ca.key`,
    "-out",
    `${dir}/ca.crt`,
    "-days",
    "2",
    "-subj",
    `/CN=${options.cn} CA`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  await Deno.writeTextFile(
    `${dir}/client.ext`,
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
  );
  await openssl([
    "req",
    ...key,
    "-nodes",
    "-keyout",
    `${dir}/client.key`,
    "-out",
    `${dir}/client.csr`,
    "-subj",
    `${
      options.organization === undefined ? "" : `/O=${options.organization}`
    }/CN=${options.cn}`,
  ]);
  await openssl([
    "x509",
    "-req",
    "-in",
    `${dir}/client.csr`,
    "-CA",
    `${dir}/ca.crt`,
    "-CAkey",
    `${dir}/ca.key`,
    "-CAcreateserial",
    "-out",
    `${dir}/client.crt`,
    "-days",
    "2",
    "-extfile",
    `${dir}/client.ext`,
  ]);
  return {
    caFile: `${dir}/ca.crt`,
    certFile: `${dir}/client.crt`,
    keyFile: `${dir}/client.key`,
  };
}

/**
 * Whether a cache server authenticates its clients by certificate (kcp
 * v0.31 and later: `--client-ca-file` is required, and only `system:masters`
 * may read and write), as its `--help` says.
 */
async function cacheServerAuthenticates(program: string): Promise<boolean> {
  const { stdout, stderr } = await runCommand(program, ["--help"]);
  return `${stdout}${stderr}`.includes("--client-ca-file");
}

async function openssl(args: string[]): Promise<void> {
  const { code, stderr } = await runCommand("openssl", args);
  if (code !== 0) throw new Error(`openssl ${args[0]} failed: ${stderr}`);
}

/**
 * The value kcp writes to a Workspace's `internal.tenancy.kcp.io/shard`
 * annotation for the shard it is scheduled to: the first 8 characters of
 * the lower-case base-36 SHA-224 of the shard's name.
 */
export function shardNameHash(shard: string): string {
  const hash = createHash("sha224").update(shard).digest();
  let value = 0n;
  for (const byte of hash) value = value * 256n + BigInt(byte);
  let text = value.toString(36);
  for (const byte of hash) {
    if (byte !== 0) break;
    text = `0${text}`;
  }
  return text.slice(0, 8);
}

interface Workspace {
  metadata?: { annotations?: Record<string, string> };
}

interface ShardList {
  items?: { metadata?: { name?: string } }[];
}

/**
 * The name of the shard a workspace is scheduled on, read (as `admin`)
 * from its Workspace object in the parent and the Shards in `root`.
 *
 * @throws {Error} If the workspace is not scheduled yet, or on no known shard.
 */
export async function workspaceShard(
  kcp: KcpApi,
  path: string,
): Promise<string> {
  const cut = path.lastIndexOf(":");
  if (cut < 0) return "root";
  const parent = path.slice(0, cut);
  const name = path.slice(cut + 1);
  const ws = await kcp.request<Workspace>(
    "GET",
    `/clusters/${parent}/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`,
  );
  const hash = ws.metadata?.annotations?.["internal.tenancy.kcp.io/shard"];
  if (hash === undefined) {
    throw new Error(`Workspace ${path} is not scheduled on a shard yet`);
  }
  const shards = await kcp.request<ShardList>(
    "GET",
    "/clusters/root/apis/core.kcp.io/v1alpha1/shards",
  );
  const names = (shards.items ?? []).map((s) => s.metadata?.name ?? "");
  const shard = names.find((n) => shardNameHash(n) === hash);
  if (shard === undefined) {
    throw new Error(
      `Workspace ${path} is on shard hash ${hash}, which no shard of ${
        names.join(", ")
      } has`,
    );
  }
  return shard;
}

/**
 * Registers a Deno test that runs `body` against a fresh sharded kcp, as
 * {@linkcode kcpTest} does with one kcp: it prints the ready time, and when
 * a step fails the tail of every process's log; the root directory is kept
 * if `KEEP_KCP_ROOT` is set. Everything is stopped afterwards.
 */
export function shardedKcpTest(
  name: string,
  body: (kcp: ShardedKcp, step: Step) => Promise<void>,
  options: StartShardedKcpOptions = {},
): void {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  suiteTest(name, body, {
    start: () => startShardedKcp(options),
    ready: ({ startupMs: times, front }) =>
      `sharded kcp ready in ${s(times.total)} (cache-server ${
        s(times.cacheServer)
      }, shard root ${s(times.shards.root)}, shard shard-1 ${
        s(times.shards["shard-1"])
      }, front-proxy ${s(times.frontProxy)}) at ${front.baseUrl}`,
    logs: async (kcp) =>
      `--- sharded kcp logs (${kcp.rootDir}) ---\n${await kcp.logTails(15)}`,
  });
}
