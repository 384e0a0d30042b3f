/**
 * `deno task bench`: the webhook's figures on a real kcp, each as a ratio
 * measured side by side in one run.
 *
 * 1. A DELETE review as kcp sees it (POST /validate over TLS keep-alive to
 *    the webhook process, which confirms the live object and lists the
 *    dependents through kcp) against a bare LIST of the same dependents
 *    through kcp with the webhook's token, with 1, 1 000 and 10 000
 *    dependents in the namespace; alternating, min / median / max of each
 *    and the ratio of the medians. Beside it, the object's metadata GET and
 *    the LIST sent at once: what every review must ask of kcp.
 * 1b. The same for a `[*]` path (1 000 dependents with 5 list elements
 *    each) and a namespace path (1 000 dependents in 10 namespaces, listed
 *    across namespaces): see `webhook_references.ts`.
 * 1c. An owner review (`fieldRef.from: Target`, the Subnet's
 *    `.metadata.ownerReferences[*].name` naming a VirtualMachine, denied
 *    while it exists; nothing listed) in the namespaces of figure 1, against
 *    its bare floor (the Subnet's metadata GET, then the owner's GET; and
 *    those, then the LogicalCluster GET every denial makes) and figure 1's
 *    LIST-based review, in the same samples; min / median / max of each,
 *    and per round the ratios of the medians: see `webhook_owners.ts`.
 * 2. Fast path (a DELETE no rule protects): reviews per second against a
 *    controller-runtime webhook with a trivial handler, each pinned to one
 *    core and loaded by a Go generator on the other (`fast_path.ts`).
 * 3. Resident memory of a fresh webhook with 1 000 rules registered, against
 *    the same process with one rule.
 *
 * `--old=DIR` (another checkout, e.g. a `git worktree` of an older commit)
 * and `--variant='FLAGS'` add webhooks to figure 1, measured in the same
 * samples as this checkout's.
 *
 * `deno task bench memory [--runs=N] [--variant='FLAGS']... [--old=DIR]`
 * runs instead the webhook's peak memory under load (see
 * `webhook_memory.ts`), then figure 3.
 *
 * `deno task bench cpu [--variant='FLAGS']... [--old=DIR]` runs instead
 * the webhook's CPU per slow-path review at one dependent beside a bare
 * client's for the same GET and LIST (`webhook_cpu.ts`).
 *
 * `deno task bench index [--large] [--large-minutes=N] [--resident]
 * [--variant='NAME=value']...` runs instead the webhook with the dependents
 * index against the same webhook listing, and what stays resident after
 * heavy list reviews (`webhook_index.ts`).
 *
 * `deno task bench owners` runs instead figure 1c alone (one rule besides
 * its own, not 1 000).
 *
 * `deno task bench front-proxy` runs instead figure 1 on a sharded kcp (two
 * shards, a cache server, kcp-front-proxy) with the consumer on the second
 * shard and everything sent through the front-proxy, as production does;
 * the same LIST sent to the shard itself prices the front-proxy's hop.
 *
 * @module
 */
import {
  buildTopology,
  createServingCert,
  createWorkspace,
  dependencyRule,
  grantWebhookReads,
  type KcpApi,
  type KcpServer,
  startKcp,
  startShardedKcp,
  startWebhook,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";
import { fastPathComparison } from "./fast_path.ts";
import { referencesBench } from "./webhook_references.ts";
import { ownersBench } from "./webhook_owners.ts";
import { cpuBench } from "./webhook_cpu.ts";
import { indexBench } from "./webhook_index.ts";
import { indexMemoryBench } from "./index_memory.ts";
import { formatSpread, median, spread } from "./_stats.ts";
import {
  createBenchNamespace,
  createMany,
  decisionSeconds,
  deleteReview,
  type LiveVpc,
  METADATA_ONLY,
  sendReview,
  timed,
} from "./_webhook_fixtures.ts";
import {
  checkoutVariant,
  CURRENT,
  memoryBench,
  parseVariant,
  type Spawned,
  startVariant,
  type Variant,
} from "./webhook_memory.ts";

const SIZES = [1, 1_000, 10_000];
/** Rounds per size; each round's ratio of medians is one figure. */
const ROUNDS = 3;
/** Samples per round and size. */
const SAMPLES: Record<number, number> = { 1: 20, 1_000: 10, 10_000: 3 };

async function rss(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
}

async function heapUsedMb(webhook: WebhookProcess): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return Number(/^deno_heap_bytes\{kind="used"\} (\S+)$/m.exec(text)?.[1]) /
    1024 / 1024;
}

/** One webhook process under figure 1, and how the table names it. */
interface Reviewed {
  label: string;
  url: string;
  caPem: string;
  metricsPort: number;
}

async function decisionBench(
  kcp: KcpApi,
  webhooks: readonly Reviewed[],
  options: {
    cluster: string;
    targets: ReadonlyMap<number, LiveVpc>;
    /**
     * The shard that holds the consumer, when `kcp` is a front-proxy: the
     * same LIST is also sent to the shard itself, to price the extra hop.
     */
    direct?: KcpApi;
  },
): Promise<void> {
  const kcpClient = Deno.createHttpClient({ caCerts: [kcp.caPem] });
  const token = kcp.identity("webhook").token;
  const clients = webhooks.map((w) =>
    Deno.createHttpClient({ caCerts: [w.caPem] })
  );
  console.log(
    "\n1. DELETE review vs bare LIST of the same dependents through kcp, ms, min / median / max",
  );
  console.log(
    "   review = POST /validate as the client sees it (TLS keep-alive); LIST = GET ?limit=10000 with the webhook's token;",
  );
  console.log(
    "   decision = the review's duration inside the webhook (its metric); the first sample of each size is dropped;",
  );
  console.log(
    `   review/LIST = the ratio of the medians in each of ${ROUNDS} rounds, min / median / max;`,
  );
  console.log(
    "   bare GET+LIST = the object's metadata GET and the LIST at once, as a review must read them: the least a review can take;",
  );
  console.log(
    "   each sample runs every webhook's review, the LIST and GET+LIST once, in an order that rotates from sample to sample",
  );
  console.log(
    `   ${"webhook".padEnd(26)} | ${"dependents".padStart(10)} | ${
      "samples".padStart(7)
    } | ${"review".padEnd(23)} | ${"bare LIST".padEnd(23)} | ${
      "decision".padEnd(23)
    } | review/LIST per round`,
  );
  for (const n of SIZES) {
    const ns = `bench-${n}`;
    const target = options.targets.get(n)!;
    const listUrl = `${
      kcp.clusterUrl(options.cluster)
    }/apis/compute.example.com/v1alpha1/namespaces/${ns}/virtualmachines?limit=10000`;
    const directUrl = options.direct === undefined
      ? undefined
      : `${
        options.direct.clusterUrl(options.cluster)
      }/apis/compute.example.com/v1alpha1/namespaces/${ns}/virtualmachines?limit=10000`;
    const directs: number[] = [];
    const decisions = webhooks.map((): number[] => []);
    const reviews = webhooks.map((): number[] => []);
    const lists: number[] = [];
    const boths: number[] = [];
    /** Per round: the LIST, GET+LIST and each webhook's review samples. */
    const rounds = Array.from({ length: ROUNDS }, () => ({
      lists: [] as number[],
      boths: [] as number[],
      directs: [] as number[],
      reviews: webhooks.map((): number[] => []),
    }));
    const review = async (index: number) => {
      const webhook = webhooks[index]!;
      const before = await decisionSeconds(webhook.metricsPort);
      const body = deleteReview(target);
      let answer;
      const ms = await timed(async () => {
        answer = await sendReview(webhook.url, body, clients[index]!);
      });
      if (answer!.kind !== "allowed") {
        throw new Error(
          `${webhook.label}: review unexpectedly ${answer!.kind}: ${
            answer!.detail ?? ""
          }`,
        );
      }
      return {
        ms,
        decision: (await decisionSeconds(webhook.metricsPort) - before) * 1000,
      };
    };
    const list = (url = listUrl) =>
      timed(async () => {
        const response = await fetch(url, {
          headers: {
            accept: "application/json",
            authorization: `Bearer ${token}`,
          },
          client: kcpClient,
        });
        const list = await response.json() as { items: unknown[] };
        if (list.items.length !== n) {
          throw new Error(`listed ${list.items.length}, want ${n}`);
        }
      });
    const getUrl = `${
      kcp.clusterUrl(options.cluster)
    }/apis/network.example.com/v1alpha1/namespaces/${ns}/vpcs/${target.metadata.name}`;
    const getMetadata = async () => {
      const response = await fetch(getUrl, {
        headers: { accept: METADATA_ONLY, authorization: `Bearer ${token}` },
        client: kcpClient,
      });
      const object = await response.json() as { metadata?: { uid?: string } };
      if (object.metadata?.uid !== target.metadata.uid) {
        throw new Error(`GET ${getUrl}: ${JSON.stringify(object)}`);
      }
    };
    const both = () =>
      timed(async () => {
        await Promise.all([getMetadata(), list()]);
      });
    // After the webhooks: the LIST, GET+LIST and (with a shard) the LIST
    // sent to the shard itself.
    const slots = webhooks.length + (directUrl === undefined ? 2 : 3);
    for (let i = 0; i < SAMPLES[n]! * ROUNDS + 1; i++) {
      const sample = {
        lists: [] as number[],
        boths: [] as number[],
        directs: [] as number[],
        reviews: [] as number[][],
      };
      // Rotating which goes first cancels what one leaves the others.
      for (let k = 0; k < slots; k++) {
        const slot = (i + k) % slots;
        if (slot === webhooks.length) {
          sample.lists.push(await list());
        } else if (slot === webhooks.length + 1) {
          sample.boths.push(await both());
        } else if (slot === webhooks.length + 2) {
          sample.directs.push(await list(directUrl));
        } else {
          const r = await review(slot);
          sample.reviews.push([slot, r.ms, r.decision]);
        }
      }
      if (i === 0) continue; // the first sample warms connections and caches
      const round = rounds[Math.floor((i - 1) / SAMPLES[n]!)]!;
      lists.push(...sample.lists);
      boths.push(...sample.boths);
      round.lists.push(...sample.lists);
      round.boths.push(...sample.boths);
      directs.push(...sample.directs);
      round.directs.push(...sample.directs);
      for (const [slot, ms, decision] of sample.reviews) {
        reviews[slot!]!.push(ms!);
        decisions[slot!]!.push(decision!);
        round.reviews[slot!]!.push(ms!);
      }
    }
    const ratios = (pick: (r: (typeof rounds)[number]) => number[]) =>
      formatSpread(
        spread(rounds.map((r) => median(pick(r)) / median(r.lists))),
        2,
      );
    webhooks.forEach((webhook, index) => {
      const ratio = ratios((r) => r.reviews[index]!);
      console.log(
        `   ${webhook.label.slice(0, 26).padEnd(26)} | ${
          String(n).padStart(10)
        } | ${String(reviews[index]!.length).padStart(7)} | ${
          formatSpread(spread(reviews[index]!)).padEnd(23)
        } | ${formatSpread(spread(lists)).padEnd(23)} | ${
          formatSpread(spread(decisions[index]!)).padEnd(23)
        } | ${ratio}`,
      );
    });
    console.log(
      `   ${"bare GET+LIST".padEnd(26)} | ${String(n).padStart(10)} | ${
        String(boths.length).padStart(7)
      } | ${formatSpread(spread(boths)).padEnd(23)} | ${
        formatSpread(spread(lists)).padEnd(23)
      } | ${"".padEnd(23)} | ${ratios((r) => r.boths)}`,
    );
    if (directUrl !== undefined) {
      const hop = formatSpread(
        spread(rounds.map((r) => median(r.lists) / median(r.directs))),
        2,
      );
      console.log(
        `   ${"bare LIST at the shard".padEnd(26)} | ${
          String(n).padStart(10)
        } | ${String(directs.length).padStart(7)} | ${
          formatSpread(spread(directs)).padEnd(23)
        } | ${formatSpread(spread(lists)).padEnd(23)} | ${"".padEnd(23)} | ${
          ratios((r) => r.directs)
        }; the front-proxy hop, LIST through it / at the shard: ${hop}`,
      );
    }
  }
  for (const client of clients) client.close();
  kcpClient.close();
}

async function fastPathBench(
  webhook: WebhookProcess,
  target: LiveVpc,
): Promise<void> {
  // Subnets are not protected: the review is allowed without reading kcp.
  const body = deleteReview(target, { resource: "subnets", uid: "fast" });
  const check = Deno.createHttpClient({ caCerts: [webhook.cert.caPem] });
  const answer = await sendReview(webhook.url, body, check);
  check.close();
  if (answer.kind !== "allowed") {
    throw new Error(`fast-path review ${answer.kind}: ${answer.detail ?? ""}`);
  }
  console.log(
    "\n2. Fast path (a DELETE no rule protects) against a controller-runtime webhook (bench/crpeer),",
  );
  console.log(
    "   each server pinned to one core, loaded by a Go generator on the other",
  );
  await fastPathComparison({
    url: webhook.url,
    certDir: webhook.cert.dir,
    caPem: webhook.cert.caPem,
    body,
    pid: webhook.pid,
  }, { label: "webhook" });
}

async function waitForRules(
  metricsPort: number,
  count: number,
): Promise<void> {
  await waitFor(`${count} rules in the webhook`, async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
      signal: AbortSignal.timeout(5000),
    })).text();
    return new RegExp(
      `^dependency_webhook_rules\\{state="valid"\\} ${count}$`,
      "m",
    ).test(text) || undefined;
  }, { timeoutMs: 120_000 });
}

/** Figure 3: a fresh webhook with one rule, then with 1 000. */
async function rulesMemoryBench(
  kcp: KcpServer,
  computePath: string,
): Promise<void> {
  const webhook = await startWebhook(kcp, { args: ["--log-level=info"] });
  try {
    await waitForRules(webhook.metricsPort, 1);
    const oneRule = await rss(webhook.pid);
    const oneRuleHeap = await heapUsedMb(webhook);
    const url =
      `/clusters/${computePath}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`;
    await createMany(kcp, url, 999, (i) =>
      dependencyRule(`bench-rule-${i}`, {
        dependencies: [{
          path: "root:providers:network",
          group: `g${i}.network.example.com`,
          resource: "vpcs",
          field: `.spec.ref${i}.name`,
        }],
      }));
    await waitForRules(webhook.metricsPort, 1000);
    const thousand = await rss(webhook.pid);
    const thousandHeap = await heapUsedMb(webhook);
    console.log("\n3. Webhook resident memory, MB (V8 heap in use)");
    console.log(
      `   1 rule: ${oneRule.toFixed(1)} (${
        oneRuleHeap.toFixed(1)
      }); 1000 rules: ${thousand.toFixed(1)} (${
        thousandHeap.toFixed(1)
      }); ratio ${(thousand / oneRule).toFixed(2)}`,
    );
  } finally {
    await webhook.stop();
  }
}

interface Cli {
  memory: boolean;
  /** Figure 1c alone, instead of the rest. */
  owners: boolean;
  /** Figure 1 on a sharded kcp, through kcp-front-proxy, instead of the rest. */
  frontProxy: boolean;
  runs: number;
  /** The webhooks compared; the first is this checkout's. */
  variants: Variant[];
}

function usage(message: string): never {
  console.error(
    `webhook_bench: ${message}\nusage: webhook_bench.ts [memory [--runs=N] | cpu | index [--large] | index-memory | front-proxy | owners] [--variant='FLAGS']... [--old=CHECKOUT]...`,
  );
  Deno.exit(2);
}

function parseCli(args: readonly string[]): Cli {
  const memory = args[0] === "memory";
  const frontProxy = args[0] === "front-proxy";
  const owners = args[0] === "owners";
  const cli: Cli = { memory, owners, frontProxy, runs: 3, variants: [CURRENT] };
  for (const arg of memory || frontProxy || owners ? args.slice(1) : args) {
    const [name, value] = [
      arg.slice(0, Math.max(arg.indexOf("="), 0)),
      arg.slice(arg.indexOf("=") + 1),
    ];
    if (memory && name === "--runs" && /^[1-9][0-9]*$/.test(value)) {
      cli.runs = Number(value);
    } else if (!owners && name === "--variant" && value.trim() !== "") {
      cli.variants.push(parseVariant(value));
    } else if (!owners && name === "--old" && value !== "") {
      cli.variants.push(checkoutVariant(value));
    } else {
      usage(`cannot use the argument: current value is '${arg}'`);
    }
  }
  return cli;
}

/**
 * Figure 1 through kcp-front-proxy: a sharded kcp (root shard, shard-1, a
 * cache server, the front-proxy), the consumer on shard-1, the webhook's
 * kubeconfig naming the front-proxy; the bare LIST goes through the
 * front-proxy too, and once more to shard-1 itself to price the hop.
 */
async function frontProxyBench(): Promise<void> {
  const sharded = await startShardedKcp();
  const { front } = sharded;
  let webhook: WebhookProcess | undefined;
  try {
    console.log(
      `sharded kcp ready in ${
        (sharded.startupMs.total / 1000).toFixed(1)
      } s; the consumer on shard-1, everything through the front-proxy`,
    );
    await createWorkspace(front, "root:consumers:bench", { shard: "shard-1" });
    const topo = await buildTopology(front, {
      consumerPaths: ["root:consumers:bench"],
    });
    await front.kubectlOk([
      "apply",
      "-f",
      new URL(
        "../testing/fixtures/compute/dependencyrule-vm-vpc.yaml",
        import.meta.url,
      ).pathname,
    ], { workspace: topo.compute.path });
    await grantWebhookReads(front);
    const consumer = topo.consumers[0]!;
    const targets = new Map<number, LiveVpc>();
    for (const n of SIZES) {
      targets.set(
        n,
        await createBenchNamespace(front, consumer.path, `bench-${n}`, n),
      );
    }
    webhook = await startWebhook(front, { args: ["--log-level=info"] });
    await waitForRules(webhook.metricsPort, 1);
    await decisionBench(front, [
      { label: "through front-proxy", caPem: webhook.cert.caPem, ...webhook },
    ], {
      cluster: consumer.cluster,
      targets,
      direct: sharded.shards["shard-1"],
    });
  } finally {
    await webhook?.stop();
    await sharded.stop();
  }
}

if (Deno.args[0] === "index-memory") {
  await indexMemoryBench(Deno.args.slice(1));
  Deno.exit(0);
}
if (Deno.args[0] === "index") {
  await indexBench(Deno.args.slice(1));
  Deno.exit(0);
}
if (Deno.args[0] === "cpu") {
  await cpuBench({ variants: parseCli(Deno.args.slice(1)).variants.slice(1) });
  Deno.exit(0);
}
const cli = parseCli(Deno.args);
if (cli.frontProxy) {
  await frontProxyBench();
  Deno.exit(0);
}
/** Namespaces to fill: `memory` needs the small one and the 10 000. */
const sizes = cli.memory ? [1, 10_000] : SIZES;

const kcp = await startKcp();
try {
  const topo = await buildTopology(kcp, {
    consumerPaths: cli.memory || cli.owners ? ["root:consumers:bench"] : [
      "root:consumers:bench",
      "root:consumers:bench-lists",
      "root:consumers:bench-namespaces",
    ],
  });
  const consumer = topo.consumers[0]!;
  await kcp.kubectlOk([
    "apply",
    "-f",
    new URL(
      "../testing/fixtures/compute/dependencyrule-vm-vpc.yaml",
      import.meta.url,
    ).pathname,
  ], {
    workspace: topo.compute.path,
  });
  // The webhook's identity reads only the rules' types, once they exist.
  await grantWebhookReads(kcp);
  console.log(
    `kcp ready in ${(kcp.lastStartupMs / 1000).toFixed(1)} s; creating ${
      sizes.reduce((a, b) => a + b)
    } VMs`,
  );
  const targets = new Map<number, LiveVpc>();
  for (const n of sizes) {
    targets.set(
      n,
      await createBenchNamespace(kcp, consumer.path, `bench-${n}`, n),
    );
  }
  const ownersSetup = {
    computePath: topo.compute.path,
    consumer,
    targets,
  };
  if (cli.owners) {
    const webhook = await startWebhook(kcp, { args: ["--log-level=info"] });
    try {
      await waitForRules(webhook.metricsPort, 1);
      await ownersBench(kcp, webhook, ownersSetup);
    } finally {
      await webhook.stop();
    }
  } else if (cli.memory) {
    await memoryBench(kcp, {
      small: targets.get(1)!,
      large: targets.get(10_000)!,
    }, cli);
    await rulesMemoryBench(kcp, topo.compute.path);
  } else {
    // Memory first, on a fresh process: nothing but the rules in its heap.
    await rulesMemoryBench(kcp, topo.compute.path);
    await grantWebhookReads(kcp);
    const webhook = await startWebhook(kcp, { args: ["--log-level=info"] });
    const others: Spawned[] = [];
    try {
      const cert = await createServingCert(`${kcp.rootDir}/bench-p1-tls`);
      for (const variant of cli.variants.slice(1)) {
        others.push(await startVariant(kcp, variant, cert));
      }
      const compared: Reviewed[] = [
        { label: "current", caPem: webhook.cert.caPem, ...webhook },
        ...others.map((spawned, i) => ({
          label: cli.variants[i + 1]!.label,
          caPem: cert.caPem,
          url: spawned.url,
          metricsPort: spawned.metricsPort,
        })),
      ];
      for (const w of compared) await waitForRules(w.metricsPort, 1000);
      await decisionBench(kcp, compared, {
        cluster: consumer.cluster,
        targets,
      });
      await fastPathBench(webhook, targets.get(1)!);
      // After the fast path, which relies on subnets not being protected:
      // its rule protects them until it ends, and it leaves VPCs to the
      // one rule of figure 1.
      await ownersBench(kcp, webhook, ownersSetup);
      // Last: its rules protect subnets, which the fast path relies on not being.
      await referencesBench(kcp, webhook, {
        computePath: topo.compute.path,
        lists: topo.consumers[1]!,
        namespaces: topo.consumers[2]!,
      });
    } finally {
      for (const spawned of others) await spawned.stop();
      await webhook.stop();
    }
  }
} finally {
  await kcp.stop();
}
