/**
 * `deno task dev`: the whole system on a local kcp, in one command.
 *
 * Starts kcp on loopback (root directory `.dev/kcp`), builds the demo
 * topology from `manifests/kcp` (the dep-ctrl workspace, a network and a
 * compute provider, two consumers), starts the webhook and the controller as
 * their own processes with their own identities (restarted by `deno run
 * --watch` when their source changes), and walks through the protection once:
 * a VPC and a VirtualMachine that refers to it, the denied delete of the VPC,
 * the VM deleted, the VPC deleted, a Lock that keeps a VPC until it is
 * deleted. Then it keeps everything running and prints how to use it, until
 * Ctrl-C.
 *
 * With `--shards 2` kcp is sharded as in production (`testing/sharded_kcp.ts`):
 * a cache server, the root shard, a second shard `shard-1` and
 * `kcp-front-proxy`. The dep-ctrl workspace, the network provider and the
 * consumer `root:consumers:c1` are placed on the root shard, the compute
 * provider and the consumer `root:consumers:c2` on shard-1. The components,
 * kubectl and the printed kubeconfigs talk to kcp through the front-proxy,
 * and the walk-through runs in both consumers, so protection is shown on
 * each shard. `kcp-front-proxy` and `cache-server` are built first unless
 * they are cached.
 *
 *   deno task dev                # keep running until Ctrl-C
 *   deno task dev --once         # exit after the walk-through (what CI runs)
 *   deno task dev --shards 2     # the same on two shards behind a front-proxy
 *
 * @module
 */
import { basename, relative, resolve } from "node:path";
import { errorText, stopSignal } from "../lib/runtime/mod.ts";
import {
  applyObjects,
  bindExport,
  buildTopology,
  type ComponentProcess,
  createServingCert,
  createWorkspace,
  DEP_CTRL_EXPORT,
  grantWebhookReads,
  type KcpApi,
  type KubectlResult,
  SHARD_NAMES,
  type ShardedKcp,
  type ShardName,
  startController,
  startKcp,
  startShardedKcp,
  startWebhook,
  type Topology,
  VWC_CLAIM,
  waitFor,
  waitForEndpointUrls,
  type WebhookProcess,
  workspaceShard,
} from "../testing/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
let devDir = `${ROOT}.dev`;
let claimed = false;
const FIXTURES = "testing/fixtures";
const STEPS = 10;

/**
 * Where `--shards 2` places the topology's workspaces. They are created on
 * their shard before `buildTopology`, which reuses existing workspaces.
 */
const PLACEMENT = {
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

const HELP = `Usage: deno task dev [--once] [--shards=1|2] [--dir=<path>]

Starts a local kcp with the demo topology, the controller and the webhook
(restarted when their source changes), and shows a delete being denied while
another object refers to it, then allowed once it does not.

  --once          exit after the walk-through instead of running until Ctrl-C
  --shards=<n>    1 (the default): one kcp process; 2: a sharded kcp (a cache
                  server, the root shard, shard-1 and kcp-front-proxy) with
                  the providers and a consumer on each shard, the components
                  and kubectl going through the front-proxy ('--shards 2'
                  works too)
  --dir=<path>    where kcp's root directory, kubeconfigs and logs go
                  (default .dev/ in the project; removed at exit)
  --help, -h      show this help

Needs kcp and kubectl, which 'deno task dev' first builds from Go modules
unless they are cached (KCP_BIN and KUBECTL_BIN name your own), and openssl.
--shards 2 also needs kcp-front-proxy and cache-server, built the same way
(KCP_FRONT_PROXY_BIN and CACHE_SERVER_BIN name your own).
`;

const useColor = !Deno.noColor && Deno.stdout.isTerminal();

function paint(code: string, text: string): string {
  return useColor ? `\x1b[${code}m${text}\x1b[0m` : text;
}

const bold = (text: string) => paint("1", text);
const dim = (text: string) => paint("2", text);
const green = (text: string) => paint("1;32", text);
const red = (text: string) => paint("1;31", text);
const cyan = (text: string) => paint("36", text);

const started = performance.now();
let stepNumber = 0;

function step(title: string): void {
  stepNumber++;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `\n${bold(`[${stepNumber}/${STEPS}] ${title}`)} ${dim(`(${seconds}s)`)}`,
  );
}

function note(text: string): void {
  console.log(`      ${text}`);
}

function indent(text: string, paintLine = (line: string) => line): string {
  return text.trimEnd().split("\n").map((line) => `        ${paintLine(line)}`)
    .join("\n");
}

function shown(path: string): string {
  const rel = relative(Deno.cwd(), path);
  return rel.startsWith("..") ? path : rel;
}

function secondsOf(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** Runs kubectl as the kcp admin in `workspace`, printing the command a person would type. */
async function kubectl(
  kcp: KcpApi,
  workspace: string,
  args: string[],
): Promise<KubectlResult> {
  const kubeconfig = shown(await kcp.kubeconfig("admin", workspace));
  console.log(
    cyan(`      $ kubectl --kubeconfig=${kubeconfig} ${args.join(" ")}`),
  );
  return await kcp.kubectl(args, { workspace });
}

/** Like {@linkcode kubectl}, printing the output and failing on a non-zero exit. */
async function kubectlOk(
  kcp: KcpApi,
  workspace: string,
  args: string[],
): Promise<string> {
  const result = await kubectl(kcp, workspace, args);
  if (result.code !== 0) {
    throw new Error(
      `kubectl ${
        args.join(" ")
      } failed (${result.code}): ${result.stderr.trim()}`,
    );
  }
  if (result.stdout.trim() !== "") console.log(indent(result.stdout));
  return result.stdout;
}

/**
 * Makes `devDir` ours: absent, empty, or left behind by an earlier run (it
 * holds `dev.pid`) whose process is gone. Anything else is refused, so a
 * mistyped `--dir` never deletes someone's files.
 */
async function claimDevDir(): Promise<void> {
  const pidFile = `${devDir}/dev.pid`;
  const previous = await Deno.readTextFile(pidFile).catch(() => undefined);
  if (previous === undefined) {
    await Deno.mkdir(devDir, { recursive: true });
    for await (const entry of Deno.readDir(devDir)) {
      throw new Error(
        `Cannot use ${shown(devDir)}: it is not empty (${entry.name}) and ` +
          "no earlier 'deno task dev' made it; pick another --dir",
      );
    }
  } else {
    const pid = Number.parseInt(previous, 10);
    if (Number.isInteger(pid) && isAlive(pid)) {
      throw new Error(
        `Cannot start: another 'deno task dev' (pid ${pid}) uses ${
          shown(devDir)
        }; stop it with Ctrl-C first, or pick another --dir`,
      );
    }
    await Deno.remove(devDir, { recursive: true });
    await Deno.mkdir(devDir, { recursive: true });
  }
  await Deno.writeTextFile(pidFile, `${Deno.pid}\n`);
  claimed = true;
}

function isAlive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/**
 * The kcp the walk-through runs on: one kcp process, or a sharded kcp
 * whose front-proxy is what everything talks to.
 */
interface DevKcp {
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
 * Everything started so far, stopped in reverse order. What starts after
 * {@linkcode Running.stop} (a walk-through cut short by Ctrl-C) is stopped
 * as soon as it is added.
 */
class Running {
  kcp: DevKcp | undefined;
  readonly #components = new Map<ComponentProcess, string>();
  #stopped = false;

  /** The components started, in order, with their names. */
  get components(): ReadonlyMap<ComponentProcess, string> {
    return this.#components;
  }

  async addKcp(kcp: DevKcp): Promise<DevKcp> {
    this.kcp = kcp;
    if (this.#stopped) await kcp.stop();
    return kcp;
  }

  async add<T extends ComponentProcess>(
    name: string,
    component: T,
  ): Promise<T> {
    this.#components.set(component, name);
    if (this.#stopped) await component.stop();
    return component;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const component of [...this.#components.keys()].reverse()) {
      await component.stop().catch(() => {});
    }
    await this.kcp?.stop().catch(() => {});
    if (claimed) await Deno.remove(devDir, { recursive: true }).catch(() => {});
  }
}

/** What the walk-through built, for the "how to use it" output. */
interface Walked {
  topology: Topology;
  /** The shard of each workspace, with `--shards 2`. */
  shardOf: ReadonlyMap<string, string>;
}

/** `kcp-front-proxy` and `cache-server` for `--shards 2`, built unless cached. */
async function buildShardedBinaries(): Promise<void> {
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-run",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      `${ROOT}testing/kcp/build.ts`,
      "kcp-front-proxy",
      "cache-server",
    ],
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) {
    throw new Error(
      `Cannot build kcp-front-proxy and cache-server (exit ${code}, see above)`,
    );
  }
}

async function startSingle(running: Running): Promise<KcpApi> {
  step("Starting kcp on loopback");
  const kcp = await startKcp({ rootDir: `${devDir}/kcp` });
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

async function startSharded(running: Running): Promise<KcpApi> {
  await buildShardedBinaries();
  step(
    "Starting a sharded kcp on loopback: a cache server, shards root and shard-1, kcp-front-proxy",
  );
  const sharded = await startShardedKcp({ rootDir: `${devDir}/kcp` });
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
async function placeWorkspaces(kcp: KcpApi): Promise<void> {
  const { depCtrl, network, compute, consumers } = PLACEMENT;
  await Promise.all(
    [depCtrl, network, compute, ...consumers].map(({ path, shard }) =>
      createWorkspace(kcp, path, { shard })
    ),
  );
}

/** The dep-ctrl export's virtual-workspace URLs, once there are `count`. */
function waitForDepCtrlUrls(
  kcp: KcpApi,
  topology: Topology,
  count: number,
): Promise<string[]> {
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

async function walkThrough(
  running: Running,
  shards: Options["shards"],
): Promise<Walked> {
  const sharded = shards > 1;
  const kcp = sharded
    ? await startSharded(running)
    : await startSingle(running);

  const shardOf = new Map<string, string>();
  let topology: Topology;
  if (sharded) {
    step(
      "Placing workspaces on the shards, building the demo topology and applying manifests/kcp",
    );
    await placeWorkspaces(kcp);
    topology = await buildTopology(kcp, {
      networkPath: PLACEMENT.network.path,
      computePath: PLACEMENT.compute.path,
      consumerPaths: PLACEMENT.consumers.map((c) => c.path),
    });
    for (
      const path of [
        "root",
        "root:providers",
        topology.depCtrl.path,
        topology.network.path,
        topology.compute.path,
        ...topology.consumers.map((c) => c.path),
      ]
    ) shardOf.set(path, await workspaceShard(kcp, path));
  } else {
    step("Building the demo topology and applying manifests/kcp");
    topology = await buildTopology(kcp);
  }
  const on = (paths: readonly string[] | "every") =>
    sharded
      ? `${
        cyan(
          (paths === "every"
            ? "every shard"
            : paths.map((p) => shardOf.get(p) ?? "?").join(", ")).padEnd(13),
        )
      } `
      : "";
  for (
    const [path, what, where] of [
      [
        topology.depCtrl.path,
        "manifests/kcp/dep-ctrl: the DependencyRule API, its export, the components' RBAC",
        [topology.depCtrl.path],
      ],
      [
        "system:admin",
        "manifests/kcp/system-admin: the webhook may list dependents on this shard",
        "every",
      ],
      [
        "root, root:providers",
        "manifests/kcp/workspace-reader: the controller may resolve workspace paths",
        ["root", "root:providers"],
      ],
      [
        topology.network.path,
        "network provider: exports VPCs, binds dep-ctrl",
        [topology.network.path],
      ],
      [
        topology.compute.path,
        "compute provider: exports VirtualMachines, binds dep-ctrl",
        [topology.compute.path],
      ],
      ...topology.consumers.map((c) =>
        [c.path, "consumer: binds both providers", [c.path]] as const
      ),
    ] as const
  ) note(`${bold(path.padEnd(24))} ${on(where)}${what}`);
  if (sharded) {
    // Each shard with a binding to the dep-ctrl export (here the providers')
    // gets its own URL; the components list and watch through each.
    const expected = new Set(
      [topology.network.path, topology.compute.path].map((p) => shardOf.get(p)),
    ).size;
    const urls = await waitForDepCtrlUrls(kcp, topology, expected);
    note(
      `The dep-ctrl export's virtual workspace has one URL per shard that binds it:`,
    );
    for (const url of urls) note(`  ${dim(url)}`);
  }

  step("Starting the webhook as user dependency-webhook");
  const cert = await createServingCert(`${kcp.rootDir}/webhook-tls`);
  const webhook: WebhookProcess = await running.add(
    "webhook",
    await startWebhook(kcp, { cert, watch: true }),
  );
  note(`admission: ${webhook.url}`);
  note(
    `probes:    http://127.0.0.1:${webhook.healthPort}/readyz   metrics: http://127.0.0.1:${webhook.metricsPort}/metrics`,
  );
  note(`log:       ${shown(webhook.logFile)}`);

  step("Starting the controller as user dependency-controller");
  const controller = await running.add(
    "controller",
    await startController(kcp, { webhook, watch: true }),
  );
  note(
    `probes:    http://127.0.0.1:${controller.healthPort}/readyz   metrics: http://127.0.0.1:${controller.metricsPort}/metrics`,
  );
  note(`log:       ${shown(controller.logFile)}`);

  const compute = topology.compute.path;
  const network = topology.network.path;
  // One consumer shows it; with shards, one consumer on each shard.
  const consumers = sharded
    ? topology.consumers.map((c) => c.path)
    : [topology.consumers[0]!.path];
  /** With shards, names the consumer (and its shard) the lines below are about. */
  const about = (consumer: string) => {
    if (sharded) {
      note(`${bold(consumer)} ${dim(`(shard ${shardOf.get(consumer)})`)}:`);
    }
  };

  step(
    `The compute provider declares that a VirtualMachine depends on its VPC`,
  );
  await kubectlOk(kcp, compute, [
    "apply",
    "-f",
    `${FIXTURES}/compute/dependencyrule-vm-vpc.yaml`,
  ]);
  note(
    "The webhook may read only what rules name: deno task rbac prints that, applied in system:admin of each shard:",
  );
  const role = await grantWebhookReads(kcp);
  console.log(indent(role.trimEnd(), dim));
  note(
    "The rule is Ready once the webhook is installed and may read what it names:",
  );
  await kubectlOk(kcp, compute, [
    "wait",
    "--for=condition=Ready",
    "dependencyrule/vm-dependencies",
    "--timeout=90s",
  ]);
  await kubectlOk(kcp, compute, ["get", "dependencyrules"]);
  note(
    "The controller installed the webhook in the network provider, where VPCs live:",
  );
  await kubectlOk(kcp, network, ["get", "validatingwebhookconfigurations"]);

  step(
    sharded
      ? "A consumer on each shard creates a VPC and a VirtualMachine in it"
      : `A consumer creates a VPC and a VirtualMachine in it`,
  );
  for (const consumer of consumers) {
    about(consumer);
    await kubectlOk(kcp, consumer, [
      "apply",
      "-f",
      `${FIXTURES}/network/vpc-a.yaml`,
    ]);
    await kubectlOk(kcp, consumer, [
      "apply",
      "-f",
      `${FIXTURES}/compute/vm-1.yaml`,
    ]);
  }

  step("Deleting the VPC while the VM uses it is denied");
  for (const consumer of consumers) {
    about(consumer);
    // kcp's admission sees a new webhook configuration once its cache has
    // it, and the webhook's new grant once RBAC has it, typically within a
    // second: ask with a dry run until the webhook names the VM.
    await waitFor("kcp to call the webhook for VPC deletes", async () => {
      const dry = await kcp.kubectl([
        "delete",
        "vpc",
        "vpc-a",
        "--dry-run=server",
      ], {
        workspace: consumer,
      });
      return /still referenced/.test(dry.stderr) || undefined;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    const denied = await kubectl(kcp, consumer, ["delete", "vpc", "vpc-a"]);
    if (denied.code === 0) {
      throw new Error(
        `The VPC was deleted although vm-1 refers to it: ${denied.stdout}`,
      );
    }
    console.log(indent(denied.stderr, red));
  }
  note(
    `${
      bold("Look:")
    } the webhook names the VirtualMachine that still refers to the VPC${
      sharded ? ", on either shard" : ""
    }.`,
  );

  step("Deleting the VM, then the VPC, succeeds");
  for (const consumer of consumers) {
    about(consumer);
    await kubectlOk(kcp, consumer, ["delete", "virtualmachine", "vm-1"]);
    const allowed = await kubectl(kcp, consumer, ["delete", "vpc", "vpc-a"]);
    if (allowed.code !== 0) {
      throw new Error(
        `Deleting the unused VPC failed: ${allowed.stderr.trim()}`,
      );
    }
    console.log(indent(allowed.stdout, green));
  }
  note(
    `${
      bold("Look:")
    } nothing refers to vpc-a any more, so the delete went through.`,
  );

  step("A Lock with a reason keeps a VPC until the Lock is deleted");
  for (const consumer of consumers) {
    about(consumer);
    await lockWalkThrough(kcp, topology, consumer);
  }
  note(
    `${
      bold("Look:")
    } the Lock's reason is in the denial; deleting the Lock unlocked the VPC.`,
  );
  return { topology, shardOf };
}

/** A Lock on vpc-prod in `consumer`: the delete denied with its reason, then allowed. */
async function lockWalkThrough(
  kcp: KcpApi,
  topology: Topology,
  consumer: string,
): Promise<void> {
  await bindExport(kcp, consumer, {
    exportPath: topology.depCtrl.path,
    exportName: DEP_CTRL_EXPORT,
    acceptClaims: [VWC_CLAIM],
  });
  await applyObjects(kcp, consumer, [
    {
      apiVersion: "network.example.com/v1alpha1",
      kind: "VPC",
      metadata: { name: "vpc-prod", namespace: "default" },
      spec: { cidr: "10.1.0.0/16" },
    },
    {
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "Lock",
      metadata: { name: "prod", namespace: "default" },
      spec: {
        target: {
          apiExportRef: {
            path: topology.network.path,
            name: "network.example.com",
          },
          group: "network.example.com",
          version: "v1alpha1",
          resource: "vpcs",
          name: "vpc-prod",
        },
        reason: "production VPC, ask #netops",
      },
    },
  ]);
  await waitFor("the Lock to be enforced", async () => {
    const dry = await kcp.kubectl(
      ["delete", "vpc", "vpc-prod", "--dry-run=server"],
      { workspace: consumer },
    );
    return /locked by Lock/.test(dry.stderr) || undefined;
  }, { timeoutMs: 60_000, intervalMs: 200 });
  const locked = await kubectl(kcp, consumer, ["delete", "vpc", "vpc-prod"]);
  if (locked.code === 0) {
    throw new Error(`The locked VPC was deleted: ${locked.stdout}`);
  }
  console.log(indent(locked.stderr, red));
  await kubectlOk(kcp, consumer, ["get", "locks"]);
  await kubectlOk(kcp, consumer, ["delete", "lock", "prod"]);
  await waitFor(
    "the VPC to be deleted once unlocked",
    async () =>
      (await kubectl(kcp, consumer, ["delete", "vpc", "vpc-prod"])).code ===
        0 ||
      undefined,
    { timeoutMs: 60_000, intervalMs: 200 },
  );
}

const RESTARTED = /Restarting! File change detected: "([^"]+)"/g;

/**
 * Prints a line whenever `deno run --watch` restarts a component (its log
 * says which file changed), so a person editing the source sees it. Each
 * check reads only what the logs gained since the last one.
 */
function reportRestarts(
  components: ReadonlyMap<ComponentProcess, string>,
): ReturnType<typeof setInterval> {
  const read = new Map<
    ComponentProcess,
    { offset: number; tail: string; decoder: TextDecoder }
  >();
  let checking = false;
  const check = async () => {
    for (const [component, name] of components) {
      const last = read.get(component) ??
        { offset: 0, tail: "", decoder: new TextDecoder() };
      const file = await Deno.open(component.logFile);
      await file.seek(last.offset, Deno.SeekMode.Start);
      const bytes = new Uint8Array(
        await new Response(file.readable).arrayBuffer(),
      );
      // A line cut by the end of the read is completed by the next one.
      const text = last.tail + last.decoder.decode(bytes, { stream: true });
      const cut = text.lastIndexOf("\n") + 1;
      read.set(component, {
        ...last,
        offset: last.offset + bytes.length,
        tail: text.slice(cut),
      });
      for (const match of text.slice(0, cut).matchAll(RESTARTED)) {
        note(`${cyan(name)} restarted: ${shown(match[1]!)} changed`);
      }
    }
  };
  return setInterval(() => {
    if (checking) return;
    checking = true;
    check().catch(() => {}).finally(() => checking = false);
  }, 1000);
}

async function printUsage(kcp: DevKcp, walked: Walked): Promise<void> {
  const { topology, shardOf } = walked;
  const api = kcp.api;
  const sharded = kcp.sharded;
  const shardNote = (path: string) =>
    sharded === undefined ? "" : `, shard ${shardOf.get(path)}`;
  const consumer = topology.consumers[0]!.path;
  const consumerConfig = shown(await api.kubeconfig("admin", consumer));
  const computeConfig = shown(
    await api.kubeconfig("admin", topology.compute.path),
  );
  const rootConfig = shown(await api.kubeconfig("admin", "root"));
  const kubectlDir = api.binaries.kubectl.replace(/\/[^/]+$/, "");
  let other = "";
  if (sharded !== undefined) {
    const second = topology.consumers[1]!.path;
    const secondConfig = shown(await api.kubeconfig("admin", second));
    other = `
  ${dim(`# the consumer ${second}${shardNote(second)}, protected alike`)}
  ${
      cyan(
        `kubectl --kubeconfig=${secondConfig} apply -f ${FIXTURES}/network/vpc-a.yaml -f ${FIXTURES}/compute/vm-1.yaml`,
      )
    }
  ${
      cyan(
        `kubectl --kubeconfig=${secondConfig} delete vpc vpc-a --dry-run=server`,
      )
    }   ${dim("# denied, naming vm-1")}
`;
  }
  const where = sharded === undefined
    ? "Try it yourself (kcp admin kubeconfigs, one per workspace):"
    : `kcp-front-proxy: ${api.baseUrl}  (${
      SHARD_NAMES.map((name) =>
        `shard ${name}: ${sharded.shards[name].baseUrl}`
      ).join(", ")
    })
Try it yourself (kcp admin kubeconfigs through the front-proxy, one per workspace):`;
  console.log(`
${green("The system is running.")} ${where}

  ${cyan(`export PATH=${kubectlDir}:$PATH`)}
  ${cyan(`export KUBECONFIG=${consumerConfig}`)}   ${
    dim(`# ${consumer}${shardNote(consumer)}`)
  }
  ${
    cyan(
      `kubectl apply -f ${FIXTURES}/network/vpc-a.yaml -f ${FIXTURES}/compute/vm-1.yaml`,
    )
  }
  ${cyan("kubectl delete vpc vpc-a --dry-run=server")}   ${
    dim("# denied, naming vm-1")
  }
  ${
    cyan(
      "kubectl annotate vpc vpc-a dependencies.opendefense.cloud/skip-protection=true",
    )
  }   ${dim("# break glass")}
${other}
  ${
    dim(
      `# the rules and their status, in the compute provider${
        shardNote(topology.compute.path)
      }`,
    )
  }
  ${cyan(`kubectl --kubeconfig=${computeConfig} get dependencyrules -o yaml`)}
  ${dim("# all workspaces")}
  ${cyan(`kubectl --kubeconfig=${rootConfig} get workspaces`)}

Kubeconfigs for every identity and workspace${
    sharded === undefined ? "" : " (through the front-proxy)"
  }: ${shown(`${api.rootDir}/kubeconfigs/`)}
Component logs (JSON lines): ${shown(api.rootDir)}/{webhook,controller}-*.log
Edit controller.ts, webhook.ts or lib/: the component restarts by itself.
${
    bold("Press Ctrl-C to stop")
  } (kcp, both components, and .dev/ are removed).`);
}

interface Options {
  once: boolean;
  shards: 1 | 2;
}

/** The options, or the message of a usage error. */
function parseArgs(args: readonly string[]): Options | string {
  const options: Options = { once: false, shards: 1 };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--once") {
      options.once = true;
    } else if (arg.startsWith("--dir=")) {
      devDir = resolve(arg.slice("--dir=".length));
    } else if (arg === "--shards" || arg.startsWith("--shards=")) {
      const value = arg === "--shards"
        ? args[++i]
        : arg.slice("--shards=".length);
      if (value !== "1" && value !== "2") {
        return value === undefined
          ? "--shards needs a value: 1 or 2"
          : `--shards must be 1 or 2, not '${value}'`;
      }
      options.shards = value === "1" ? 1 : 2;
    } else {
      return `Unknown argument ${arg}`;
    }
  }
  return options;
}

async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  const options = parseArgs(args);
  if (typeof options === "string") {
    console.error(`${options}\n\n${HELP}`);
    return 2;
  }
  const running = new Running();
  const signal = stopSignal();
  try {
    await claimDevDir();
    const outcome = await Promise.race([
      walkThrough(running, options.shards).then((walked) => ({ walked })),
      signal.then((name) => ({ name })),
    ]);
    if ("name" in outcome) {
      console.log(
        `\n${bold(`${outcome.name}: stopping`)} the components and kcp ...`,
      );
      return 130;
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`\n${green(`Walk-through done in ${seconds}s.`)}`);
    if (options.once) {
      step("Stopping the components and kcp (--once)");
      return 0;
    }
    step("Running until Ctrl-C");
    await printUsage(running.kcp!, outcome.walked);
    const reporting = reportRestarts(running.components);
    const name = await signal;
    clearInterval(reporting);
    console.log(`\n${bold(`${name}: stopping`)} the components and kcp ...`);
    return 0;
  } catch (error) {
    console.error(`\n${red("dev failed:")} ${errorText(error)}`);
    if (running.kcp !== undefined) {
      console.error(dim(await running.kcp.logTails(20)));
    }
    return 1;
  } finally {
    const stopping = performance.now();
    await running.stop();
    if (running.kcp !== undefined) {
      const seconds = ((performance.now() - stopping) / 1000).toFixed(1);
      note(dim(`stopped in ${seconds}s`));
    }
  }
}

Deno.exit(await main(Deno.args));
