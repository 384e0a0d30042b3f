/**
 * `deno task dev`: the whole system on a local kcp, in one command.
 *
 * Starts kcp on loopback (root directory `.dev/kcp`), builds the demo
 * topology from `manifests/kcp` (the dep-ctrl workspace, a network and a
 * compute provider, two consumers), starts the webhook and the controller as
 * their own processes with their own identities (restarted by `deno run
 * --watch` when their source changes), and walks through the protection once:
 * a VPC and a VirtualMachine that refers to it, the denied delete of the VPC,
 * the VM deleted, the VPC deleted. Then it keeps everything running and
 * prints how to use it, until Ctrl-C.
 *
 *   deno task dev          # keep running until Ctrl-C
 *   deno task dev --once   # exit after the walk-through (what CI runs)
 *
 * @module
 */
import { relative, resolve } from "node:path";
import { errorText, stopSignal } from "../lib/runtime/mod.ts";
import {
  applyObjects,
  bindExport,
  buildTopology,
  type ComponentProcess,
  createServingCert,
  DEP_CTRL_EXPORT,
  grantWebhookReads,
  type KcpServer,
  type KubectlResult,
  startController,
  startKcp,
  startWebhook,
  type Topology,
  VWC_CLAIM,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
let devDir = `${ROOT}.dev`;
let claimed = false;
const FIXTURES = "testing/fixtures";
const STEPS = 10;

const HELP = `Usage: deno task dev [--once] [--dir=<path>]

Starts a local kcp with the demo topology, the controller and the webhook
(restarted when their source changes), and shows a delete being denied while
another object refers to it, then allowed once it does not.

  --once        exit after the walk-through instead of running until Ctrl-C
  --dir=<path>  where kcp's root directory, kubeconfigs and logs go
                (default .dev/ in the project; removed at exit)
  --help, -h    show this help

Needs kcp and kubectl, which 'deno task dev' first builds from Go modules
unless they are cached (KCP_BIN and KUBECTL_BIN name your own), and openssl.
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

/** Runs kubectl as the kcp admin in `workspace`, printing the command a person would type. */
async function kubectl(
  kcp: KcpServer,
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
  kcp: KcpServer,
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
 * Everything started so far, stopped in reverse order. What starts after
 * {@linkcode Running.stop} (a walk-through cut short by Ctrl-C) is stopped
 * as soon as it is added.
 */
class Running {
  kcp: KcpServer | undefined;
  readonly #components = new Map<ComponentProcess, string>();
  #stopped = false;

  /** The components started, in order, with their names. */
  get components(): ReadonlyMap<ComponentProcess, string> {
    return this.#components;
  }

  async addKcp(kcp: KcpServer): Promise<KcpServer> {
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

async function walkThrough(running: Running): Promise<Topology> {
  step("Starting kcp on loopback");
  const kcp = await running.addKcp(
    await startKcp({ rootDir: `${devDir}/kcp` }),
  );
  note(
    `kcp is ready at ${kcp.baseUrl} after ${
      (kcp.lastStartupMs / 1000).toFixed(1)
    }s`,
  );
  note(`kubectl:   ${kcp.binaries.kubectl}`);
  note(`kcp log:   ${shown(`${kcp.rootDir}/kcp.log`)}`);

  step("Building the demo topology and applying manifests/kcp");
  const topology = await buildTopology(kcp);
  for (
    const [path, what] of [
      [
        topology.depCtrl.path,
        "manifests/kcp/dep-ctrl: the DependencyRule API, its export, the components' RBAC",
      ],
      [
        "system:admin",
        "manifests/kcp/system-admin: the webhook may list dependents on this shard",
      ],
      [
        "root, root:providers",
        "manifests/kcp/workspace-reader: the controller may resolve workspace paths",
      ],
      [topology.network.path, "network provider: exports VPCs, binds dep-ctrl"],
      [
        topology.compute.path,
        "compute provider: exports VirtualMachines, binds dep-ctrl",
      ],
      ...topology.consumers.map((c) =>
        [c.path, "consumer: binds both providers"] as const
      ),
    ] as const
  ) note(`${bold(path.padEnd(24))} ${what}`);

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
  const consumer = topology.consumers[0]!.path;

  step(
    `The compute provider declares that a VirtualMachine depends on its VPC`,
  );
  await kubectlOk(kcp, compute, [
    "apply",
    "-f",
    `${FIXTURES}/compute/dependencyrule-vm-vpc.yaml`,
  ]);
  await kubectlOk(kcp, compute, [
    "wait",
    "--for=condition=Ready",
    "dependencyrule/vm-dependencies",
    "--timeout=60s",
  ]);
  await kubectlOk(kcp, compute, ["get", "dependencyrules"]);
  note(
    "The controller installed the webhook in the network provider, where VPCs live:",
  );
  await kubectlOk(kcp, network, ["get", "validatingwebhookconfigurations"]);
  note(
    "The webhook may read only what rules name: deno task rbac prints that, applied in system:admin of each shard:",
  );
  const role = await grantWebhookReads(kcp);
  console.log(indent(role.trimEnd(), dim));

  step(`A consumer creates a VPC and a VirtualMachine in it`);
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

  step("Deleting the VPC while the VM uses it is denied");
  // kcp's admission sees a new webhook configuration once its cache has it,
  // and the webhook's new grant once RBAC has it, typically within a second:
  // ask with a dry run until the webhook names the VM.
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
  note(
    `${
      bold("Look:")
    } the webhook names the VirtualMachine that still refers to the VPC.`,
  );

  step("Deleting the VM, then the VPC, succeeds");
  await kubectlOk(kcp, consumer, ["delete", "virtualmachine", "vm-1"]);
  const allowed = await kubectl(kcp, consumer, ["delete", "vpc", "vpc-a"]);
  if (allowed.code !== 0) {
    throw new Error(`Deleting the unused VPC failed: ${allowed.stderr.trim()}`);
  }
  console.log(indent(allowed.stdout, green));
  note(
    `${
      bold("Look:")
    } nothing refers to vpc-a any more, so the delete went through.`,
  );

  step("A Lock with a reason keeps a VPC until the Lock is deleted");
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
  note(
    `${
      bold("Look:")
    } the Lock's reason is in the denial; deleting the Lock unlocked the VPC.`,
  );
  return topology;
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

async function printUsage(kcp: KcpServer, topology: Topology): Promise<void> {
  const consumer = topology.consumers[0]!.path;
  const consumerConfig = shown(await kcp.kubeconfig("admin", consumer));
  const computeConfig = shown(
    await kcp.kubeconfig("admin", topology.compute.path),
  );
  const rootConfig = shown(await kcp.kubeconfig("admin", "root"));
  const kubectlDir = kcp.binaries.kubectl.replace(/\/[^/]+$/, "");
  console.log(`
${
    green("The system is running.")
  } Try it yourself (kcp admin kubeconfigs, one per workspace):

  ${cyan(`export PATH=${kubectlDir}:$PATH`)}
  ${cyan(`export KUBECONFIG=${consumerConfig}`)}   ${dim(`# ${consumer}`)}
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

  ${dim("# the rules and their status, in the compute provider")}
  ${cyan(`kubectl --kubeconfig=${computeConfig} get dependencyrules -o yaml`)}
  ${dim("# all workspaces")}
  ${cyan(`kubectl --kubeconfig=${rootConfig} get workspaces`)}

Kubeconfigs for every identity and workspace: ${
    shown(`${kcp.rootDir}/kubeconfigs/`)
  }
Component logs (JSON lines): ${shown(kcp.rootDir)}/{webhook,controller}-*.log
Edit controller.ts, webhook.ts or lib/: the component restarts by itself.
${
    bold("Press Ctrl-C to stop")
  } (kcp, both components, and .dev/ are removed).`);
}

async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  for (const arg of args) {
    if (arg.startsWith("--dir=")) devDir = resolve(arg.slice("--dir=".length));
  }
  const unknown = args.filter((a) => a !== "--once" && !a.startsWith("--dir="));
  if (unknown.length > 0) {
    console.error(`Unknown argument ${unknown[0]}\n\n${HELP}`);
    return 2;
  }
  const once = args.includes("--once");
  const running = new Running();
  const signal = stopSignal();
  try {
    await claimDevDir();
    const outcome = await Promise.race([
      walkThrough(running).then((topology) => ({ topology })),
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
    if (once) {
      step("Stopping the components and kcp (--once)");
      return 0;
    }
    step("Running until Ctrl-C");
    await printUsage(running.kcp!, outcome.topology);
    const reporting = reportRestarts(running.components);
    const name = await signal;
    clearInterval(reporting);
    console.log(`\n${bold(`${name}: stopping`)} the components and kcp ...`);
    return 0;
  } catch (error) {
    console.error(`\n${red("dev failed:")} ${errorText(error)}`);
    if (running.kcp !== undefined) {
      console.error(
        dim(`last lines of the kcp log:\n${await running.kcp.logTail(20)}`),
      );
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
