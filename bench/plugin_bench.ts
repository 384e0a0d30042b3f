/**
 * How long `kubectl dependencies why --recursive` takes as a tenant runs
 * it, on a real kcp with the webhook and the controller: the whole process
 * (`kubectl dependencies why <type>/<name> -n <ns>
 * --recursive -o json --kubeconfig=<the tenant's>`), spawn to exit, wall
 * time. Side by side in every sample, in turn: the same without
 * `--recursive` (one object asked), and the floor a user knows, one
 * `kubectl delete --dry-run=server` of the same object with the same
 * kubeconfig (kubectl as built for the tests).
 *
 * The cases (see `_plugin_fixtures.ts`):
 *
 * - the demo of `deno task dev`: the VPC `core` (held by the VirtualMachine
 *   `vm-1`, which a Lock holds) and the Subnet `s-1` (held by its Network
 *   `net-a`, which nothing holds): two objects asked each;
 * - a chain of 50 objects, VirtualMachines and VPCs in turn, each held by
 *   the one before it: `why --recursive` on the last walks all 50;
 * - a namespace of 1 000 objects, 10 of them held (five VPCs by
 *   VirtualMachines, five by Locks): `why namespace/held -o json` (every
 *   object asked about, plus the namespace itself) beside
 *   `kubectl get vpcs,virtualmachines -n held -o name` of the same objects
 *   with the same kubeconfig, {@linkcode NAMESPACE_SAMPLES} samples of each
 *   per round, in turn.
 *
 * Every answer is checked, outside the time measured: the exit code, and
 * for `--recursive` the objects the JSON names as asked (all 50 for the
 * chain); kubectl's answer must be the webhook's denial.
 *
 * `plugin_bench.ts [rounds]` (3 by default); each round takes
 * {@linkcode SAMPLES} samples of each command per case, after one sample
 * per case that is not counted (Deno's module cache, kubectl's discovery
 * cache, kcp's and the webhook's caches).
 *
 * @module
 */
import { nodesOf, type ScopeReport, type WhyNode } from "../lib/plugin/mod.ts";
import {
  type CommandResult,
  isDenial,
  type KcpServer,
  runCommand,
  startKcp,
} from "../testing/mod.ts";
import {
  type BenchTarget,
  CHAIN_LENGTH,
  CHAIN_NAMESPACE,
  chainNames,
  DEMO_NAMESPACE,
  HELD_COUNT,
  HELD_NAMESPACE,
  HELD_OBJECTS,
  type PluginWorld,
  setUpChain,
  setUpDemo,
  setUpHeldNamespace,
  setUpWorld,
  stopWorld,
} from "./_plugin_fixtures.ts";
import { formatSpread, median, runCount, spread } from "./_stats.ts";
import { installedPlugin, runPlugin } from "../testing/plugin.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** Samples of each command per round and case. */
const SAMPLES = 5;
/** Samples of each command per round for the namespace of many objects. */
const NAMESPACE_SAMPLES = 3;
/** The orders of a sample's commands (0: why -R, 1: why, 2: kubectl). */
const ORDERS = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1], [2, 1, 0], [
  1,
  0,
  2,
]];
/** The states of a node whose object was asked about. */
const ASKED = new Set(["free", "held", "denied"]);

/** One figure: an object, what its walk must ask, and its denial. */
interface Case {
  /** The row's label. */
  label: string;
  /** The object `why` is asked about. */
  target: BenchTarget;
  /** The objects the recursive walk must ask about, as `<Kind> <ns>/<name>`. */
  objects: string[];
  /** The webhook's denial of a delete of the object, as kubectl prints it. */
  denial: RegExp;
}

/** A command's wall time and what it printed. */
interface Timed {
  ms: number;
  result: CommandResult;
}

async function timedRun(
  program: string,
  args: readonly string[],
): Promise<Timed> {
  const started = performance.now();
  const result = await runCommand(program, args, {
    cwd: ROOT,
    env: { NO_COLOR: "1" },
  });
  return { ms: performance.now() - started, result };
}

/**
 * `kubectl dependencies why ...` with the tenant's kubeconfig, through real
 * kubectl and the plugin as `deno task plugin:install` installs it.
 */
async function why(
  world: PluginWorld,
  target: BenchTarget,
  options: { recursive: boolean },
): Promise<Timed> {
  const started = performance.now();
  const result = await runPlugin([
    "why",
    `${target.type}/${target.name}`,
    "-n",
    target.namespace,
    ...(options.recursive ? ["--recursive"] : []),
    "-o",
    "json",
  ], { kubeconfig: world.tenant });
  return { ms: performance.now() - started, result };
}

/** `kubectl delete --dry-run=server` of the object, with the same kubeconfig. */
function kubectlDryRun(
  kcp: KcpServer,
  world: PluginWorld,
  target: BenchTarget,
): Promise<Timed> {
  return timedRun(kcp.binaries.kubectl, [
    `--kubeconfig=${world.tenant}`,
    "delete",
    target.type,
    target.name,
    "-n",
    target.namespace,
    "--dry-run=server",
  ]);
}

function shown(result: CommandResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}--- stderr\n${result.stderr}`;
}

/** The JSON of a `why` that must say the object is held. */
function heldAnswer(result: CommandResult, what: string): WhyNode {
  if (result.code !== 1) {
    throw new Error(`${what}: want exit 1 (held): ${shown(result)}`);
  }
  const node = JSON.parse(result.stdout) as WhyNode;
  if (node.state !== "held") {
    throw new Error(`${what}: want state held: ${shown(result)}`);
  }
  return node;
}

/**
 * Checks the recursive answer: held, no error anywhere, and the objects
 * asked about exactly those of the case.
 */
function checkRecursive(result: CommandResult, c: Case): void {
  const root = heldAnswer(result, `why -R ${c.label}`);
  const asked = new Set<string>();
  for (const node of nodesOf(root)) {
    if (node.state === "error" || node.state === "cut") {
      throw new Error(
        `why -R ${c.label}: ${node.state} at ${node.object.kind} ${node.object.name}: ${
          node.error ?? ""
        }`,
      );
    }
    if (ASKED.has(node.state)) {
      const o = node.object;
      asked.add(`${o.kind} ${o.namespace}/${o.name}`);
    }
  }
  const got = [...asked].sort();
  const want = [...c.objects].sort();
  if (got.join("\n") !== want.join("\n")) {
    throw new Error(
      `why -R ${c.label}: asked about ${got.length} objects, want ${want.length}: ${
        got.join(", ")
      }`,
    );
  }
}

function checkOne(result: CommandResult, c: Case): void {
  const node = heldAnswer(result, `why ${c.label}`);
  if (node.children !== undefined) {
    throw new Error(`why ${c.label}: children without --recursive`);
  }
}

function checkKubectl(result: CommandResult, c: Case): void {
  if (result.code === 0 || !isDenial(result.stderr, c.denial)) {
    throw new Error(
      `kubectl delete --dry-run=server ${c.label}: want ${c.denial}: ${
        shown(result)
      }`,
    );
  }
}

/** One round's samples of each command. */
interface Round {
  recursive: number[];
  one: number[];
  kubectl: number[];
}

/** Measures one case over `rounds` rounds and prints its row. */
async function measureCase(
  kcp: KcpServer,
  world: PluginWorld,
  c: Case,
  rounds: number,
): Promise<void> {
  const commands: (() => Promise<number>)[] = [
    async () => {
      const { ms, result } = await why(world, c.target, { recursive: true });
      checkRecursive(result, c);
      return ms;
    },
    async () => {
      const { ms, result } = await why(world, c.target, { recursive: false });
      checkOne(result, c);
      return ms;
    },
    async () => {
      const { ms, result } = await kubectlDryRun(kcp, world, c.target);
      checkKubectl(result, c);
      return ms;
    },
  ];
  // Not counted: the first run of each warms the caches.
  for (const command of commands) await command();
  const measured: Round[] = [];
  for (let r = 0; r < rounds; r++) {
    const round: Round = { recursive: [], one: [], kubectl: [] };
    for (let i = 0; i < SAMPLES; i++) {
      for (const slot of ORDERS[(r * SAMPLES + i) % ORDERS.length]!) {
        const ms = await commands[slot]!();
        [round.recursive, round.one, round.kubectl][slot]!.push(ms);
      }
    }
    measured.push(round);
  }
  const all = (pick: (r: Round) => number[]) =>
    formatSpread(spread(measured.flatMap(pick)), 0).padEnd(20);
  const ratio = (over: (r: Round) => number[]) =>
    formatSpread(
      spread(measured.map((r) => median(r.recursive) / median(over(r)))),
      2,
    ).padEnd(21);
  // With two objects the difference of two noisy medians says nothing.
  const further = c.objects.length - 1;
  const perObject = further < 2 ? "-" : formatSpread(
    spread(
      measured.map((r) => (median(r.recursive) - median(r.one)) / further),
    ),
    1,
  );
  console.log(
    `   ${c.label.padEnd(36)} | ${String(c.objects.length).padStart(7)} | ${
      all((r) => r.recursive)
    } | ${all((r) => r.one)} | ${all((r) => r.kubectl)} | ${
      ratio((r) => r.one)
    } | ${ratio((r) => r.kubectl)} | ${perObject}`,
  );
}

function printHeader(rounds: number): void {
  console.log(
    `\nkubectl dependencies why, as a tenant runs it: a process, spawn to exit, ms, min / median / max over ${rounds} rounds of ${SAMPLES} samples`,
  );
  console.log(
    "   why -R = kubectl dependencies why <type>/<name> -n <ns> --recursive -o json --kubeconfig=<the tenant's> (the plugin installed by deno task plugin:install);",
  );
  console.log(
    "   why = the same without --recursive (one object asked: one dry-run delete);",
  );
  console.log(
    "   kubectl = kubectl delete <type> <name> -n <ns> --dry-run=server with the same kubeconfig (denied by the webhook);",
  );
  console.log(
    "   the three in turn in every sample, each order in turn; the first sample of each is not counted;",
  );
  console.log(
    "   ratios = of the medians in each round, min / median / max; per further object = (why -R - why) / (objects - 1), ms, from 3 objects on;",
  );
  console.log(
    "   objects = those the recursive walk asked about, checked in its JSON on every run (not timed)",
  );
  console.log(
    `   ${"case".padEnd(36)} | ${"objects".padStart(7)} | ${
      "why -R".padEnd(20)
    } | ${"why".padEnd(20)} | ${"kubectl".padEnd(20)} | ${
      "why -R / why".padEnd(21)
    } | ${"why -R / kubectl".padEnd(21)} | per further object`,
  );
}

/** `why namespace/held -o json`, checked: held, every object asked, ten held. */
async function whyNamespace(world: PluginWorld): Promise<number> {
  const started = performance.now();
  const result = await runPlugin(
    ["why", `namespace/${HELD_NAMESPACE}`, "-o", "json"],
    { kubeconfig: world.tenant },
  );
  const ms = performance.now() - started;
  if (result.code !== 1) {
    throw new Error(`why namespace: want exit 1: ${shown(result)}`);
  }
  const report = JSON.parse(result.stdout) as ScopeReport;
  if (
    report.heldCount !== HELD_COUNT || report.asked !== HELD_OBJECTS + 1 ||
    !report.complete
  ) {
    throw new Error(
      `why namespace: want ${HELD_COUNT} held of ${
        HELD_OBJECTS + 1
      } asked, complete: held ${report.heldCount} of ${report.asked}, complete ${report.complete}`,
    );
  }
  return ms;
}

/** `kubectl get vpcs,virtualmachines -n held -o name`, checked: every object. */
async function kubectlGet(kcp: KcpServer, world: PluginWorld): Promise<number> {
  const { ms, result } = await timedRun(kcp.binaries.kubectl, [
    `--kubeconfig=${world.tenant}`,
    "get",
    "vpcs,virtualmachines",
    "-n",
    HELD_NAMESPACE,
    "-o",
    "name",
  ]);
  const lines = result.stdout.split("\n").filter((l) => l !== "").length;
  if (result.code !== 0 || lines !== HELD_OBJECTS) {
    throw new Error(
      `kubectl get: want ${HELD_OBJECTS} objects, got ${lines}: exit ${result.code} ${result.stderr}`,
    );
  }
  return ms;
}

/** Measures `why namespace/held` beside `kubectl get` and prints the row. */
async function measureNamespace(
  kcp: KcpServer,
  world: PluginWorld,
  rounds: number,
): Promise<void> {
  const commands = [() => whyNamespace(world), () => kubectlGet(kcp, world)];
  for (const command of commands) await command();
  const measured: { why: number[]; get: number[] }[] = [];
  for (let r = 0; r < rounds; r++) {
    const round = { why: [] as number[], get: [] as number[] };
    for (let i = 0; i < NAMESPACE_SAMPLES; i++) {
      const order = (r * NAMESPACE_SAMPLES + i) % 2 === 0 ? [0, 1] : [1, 0];
      for (const slot of order) {
        const ms = await commands[slot]!();
        (slot === 0 ? round.why : round.get).push(ms);
      }
    }
    measured.push(round);
  }
  console.log(
    `\nkubectl dependencies why namespace/${HELD_NAMESPACE}: ${HELD_OBJECTS} objects, ${HELD_COUNT} held; a process, spawn to exit, ms, min / median / max over ${rounds} rounds of ${NAMESPACE_SAMPLES} samples`,
  );
  console.log(
    `   why ns = kubectl dependencies why namespace/${HELD_NAMESPACE} -o json --kubeconfig=<the tenant's> (${
      HELD_OBJECTS + 1
    } dry-run deletes, the namespace's included; checked: ${HELD_COUNT} held, all asked);`,
  );
  console.log(
    `   kubectl get = kubectl get vpcs,virtualmachines -n ${HELD_NAMESPACE} -o name with the same kubeconfig (checked: ${HELD_OBJECTS} names); the two in turn`,
  );
  console.log(
    `   ${"why ns".padEnd(20)} | ${
      "kubectl get".padEnd(20)
    } | why ns / kubectl get`,
  );
  console.log(
    `   ${
      formatSpread(spread(measured.flatMap((r) => r.why)), 0).padEnd(20)
    } | ${
      formatSpread(spread(measured.flatMap((r) => r.get)), 0).padEnd(20)
    } | ${
      formatSpread(
        spread(measured.map((r) => median(r.why) / median(r.get))),
        1,
      )
    }`,
  );
}

if (import.meta.main) {
  const rounds = runCount(Deno.args, { program: "plugin_bench", fallback: 3 });
  const kcp = await startKcp();
  try {
    const t0 = performance.now();
    const world = await setUpWorld(kcp);
    // Installed once, before any sample.
    await installedPlugin();
    try {
      const demo = await setUpDemo(kcp);
      console.log(
        `kcp, the topology, webhook, controller and the demo set up in ${
          ((performance.now() - t0) / 1000).toFixed(0)
        } s`,
      );
      printHeader(rounds);
      const ns = DEMO_NAMESPACE;
      await measureCase(kcp, world, {
        label: "demo: vpc/core (<- VM <- Lock)",
        target: demo.vpc,
        objects: [`VPC ${ns}/core`, `VirtualMachine ${ns}/vm-1`],
        denial: /still referenced by VirtualMachine\/vm-1 /,
      }, rounds);
      await measureCase(kcp, world, {
        label: "demo: subnet/s-1 (<- Network owner)",
        target: demo.subnet,
        objects: [`Subnet ${ns}/s-1`, `Network ${ns}/net-a`],
        denial: /it belongs to Network\/net-a /,
      }, rounds);
      const last = await setUpChain(kcp);
      const names = chainNames();
      await measureCase(kcp, world, {
        label: `chain of ${CHAIN_LENGTH}: vpc/${last.name}`,
        target: last,
        objects: names.map((o) => `${o.kind} ${CHAIN_NAMESPACE}/${o.name}`),
        denial: new RegExp(
          `still referenced by VirtualMachine/${names.at(-2)!.name} `,
        ),
      }, rounds);
      const t1 = performance.now();
      await setUpHeldNamespace(kcp);
      console.log(
        `\n${HELD_OBJECTS} objects in namespace ${HELD_NAMESPACE} set up in ${
          ((performance.now() - t1) / 1000).toFixed(0)
        } s`,
      );
      await measureNamespace(kcp, world, rounds);
    } finally {
      await stopWorld(world);
    }
  } finally {
    await kcp.stop();
  }
}
