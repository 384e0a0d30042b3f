/**
 * `deno task bench index`: the webhook with the dependents index
 * (`--dependents-index`) against the same webhook without it (it lists),
 * on one real kcp, from the client's side, side by side in the same
 * samples.
 *
 * Set up as an operator does: the VM -> VPC rule of the fixtures, the
 * dependents-index grants (`manifests/kcp/system-admin/dependents-index`
 * in `system:admin`, and `controller grants --dependents-index`), and every
 * index-backed webhook measured only once its feeds say `synced`
 * (`dependency_webhook_index_feeds{state="synced"}`).
 *
 * 1. Cold sync and memory: a fresh webhook with the index, from its start
 *    to its feeds synced, and its resident memory (`VmRSS`, `VmHWM`,
 *    `RssAnon` of `/proc/<pid>/status`; the V8 heap from its metrics) then,
 *    beside a fresh webhook without the index started at the same time; once
 *    with the small namespaces (11 001 dependents), once more after the
 *    large ones (and once more with 100 000 in one namespace, `--large`).
 * 2. A denial (VPC `vpc-0`, which one VM among N refers to): the review
 *    with the index, without it (listing), and the floors of the reads a
 *    denial from the index still makes: the VPC's metadata GET; that GET,
 *    then the VM's GET; the three GETs it makes at once (the VPC, the VM,
 *    the workspace's LogicalCluster); and the webhook's answer to a review
 *    that reads nothing (a type no rule protects). N = 1, 1 000, 10 000 small VMs, 10 000 VMs of
 *    about 27 KB, and with `--large` as many small VMs as the machine
 *    creates in `--large-minutes` (100 000 at most). Rounds of samples, min /
 *    median / max and per round the ratio of the medians.
 * 3. An allowed delete (`vpc-target`, nothing refers) with the index and
 *    without, and the outcomes the index counted
 *    (`dependency_webhook_index_answers_total`).
 * 4. 8 denials at once over the 10 000 large VMs, with the index (3 waves)
 *    and without it (1 wave): every verdict counted, latencies.
 * 5. What stays resident after heavy list reviews: a fresh webhook without
 *    the index per environment (the Deployment's glibc tunables, none,
 *    `MALLOC_ARENA_MAX=2`, the tunables with `trim_threshold`), a wave of 8
 *    list reviews over the large VMs, then 20 s idle: `VmRSS`, `RssAnon`,
 *    `RssFile`, the V8 heap (used / reserved / external), resident
 *    anonymous memory by kind of mapping,
 *    and all that again after 1 000 small reviews (garbage for V8).
 *    `--resident` runs this figure alone.
 *
 * @module
 */
import {
  buildTopology,
  createServingCert,
  grantWebhookReads,
  type KcpServer,
  type ServingCert,
  startKcp,
  waitFor,
} from "../testing/mod.ts";
import { formatSpread, median, spread } from "./_stats.ts";
import {
  createBenchNamespace,
  deleteReview,
  type LiveVpc,
  METADATA_ONLY,
  sendReview,
  timed,
} from "./_webhook_fixtures.ts";
import {
  createParallel,
  namespaceObject,
  vmObject,
  vmsPath,
  vpcObject,
  vpcsPath,
} from "./_tenant_fixtures.ts";
import {
  CURRENT,
  parseVariant,
  type Spawned,
  startVariant,
  type Variant,
} from "./webhook_memory.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const MIB = 1024 * 1024;
const ROUNDS = 3;
/** Characters of padding per large VM: about 27 KB objects. */
const PADDING_CHARS = 27_000;
const LARGE_MAX = 100_000;
/** Small reviews sent after the heavy ones in figure 5. */
const CHURN = 1_000;

const LIST: Variant = { ...CURRENT, label: "list (no index)" };
const INDEX: Variant = {
  ...CURRENT,
  label: "index",
  args: ["--dependents-index"],
};
/**
 * The index webhook for `--large` (up to 121 001 dependents, past the
 * default bound): the bound and the heap raised together, as the
 * webhook asks an operator to.
 */
const LARGE_INDEX: Variant = {
  ...INDEX,
  v8Flags: [
    ...INDEX.v8Flags.filter((f) => !f.startsWith("--max-old-space-size")),
    "--max-old-space-size=256",
  ],
  args: [...INDEX.args, "--index-max-dependents=240000"],
};

/** One namespace of the bench: its dependents and the two VPCs reviewed. */
interface Namespace {
  label: string;
  name: string;
  dependents: number;
  samples: number;
  /** `vpc-0`, which `vm-0` refers to. */
  referred: LiveVpc;
  /** `vpc-target`, which none refers to. */
  unreferred: LiveVpc;
}

async function metrics(port: number): Promise<string> {
  return await (await fetch(`http://127.0.0.1:${port}/metrics`, {
    signal: AbortSignal.timeout(10_000),
  })).text();
}

function sampleSum(text: string, prefix: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(prefix)) sum += Number(line.split(" ").at(-1));
  }
  return sum;
}

/** Waits until every index feed is synced; returns the dependents indexed. */
async function waitSynced(port: number, timeoutMs: number): Promise<number> {
  return await waitFor("the index feeds to sync", async () => {
    const text = await metrics(port);
    const notSynced = text.split("\n").filter((l) =>
      l.startsWith("dependency_webhook_index_feeds{") &&
      !l.includes('state="synced"') && !l.endsWith(" 0")
    );
    return notSynced.length === 0 &&
        /^dependency_webhook_index_feeds\{[^}]*state="synced"\} [1-9]/m
          .test(text)
      ? sampleSum(text, "dependency_webhook_index_dependents{")
      : undefined;
  }, { timeoutMs, intervalMs: 100 });
}

async function outcomes(port: number): Promise<Record<string, number>> {
  const text = await metrics(port);
  const out: Record<string, number> = {};
  for (
    const m of text.matchAll(
      /^dependency_webhook_index_answers_total\{outcome="(\w+)"\} (\S+)$/gm,
    )
  ) out[m[1]!] = Number(m[2]);
  return out;
}

interface Memory {
  rss: number;
  hwm: number;
  anon: number;
  file: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

async function memory(spawned: Spawned): Promise<Memory> {
  const status = await Deno.readTextFile(`/proc/${spawned.pid}/status`);
  const field = (f: string) =>
    Number(new RegExp(`^${f}:\\s+(\\d+) kB$`, "m").exec(status)?.[1]) / 1024;
  const text = await metrics(spawned.metricsPort);
  const heap = (k: string) =>
    Number(
      new RegExp(`^deno_heap_bytes\\{kind="${k}"\\} (\\S+)$`, "m").exec(text)
        ?.[1] ?? NaN,
    ) / MIB;
  return {
    rss: field("VmRSS"),
    hwm: field("VmHWM"),
    anon: field("RssAnon"),
    file: field("RssFile"),
    heapUsed: heap("used"),
    heapTotal: heap("total"),
    external: heap("external"),
  };
}

function formatMemory(m: Memory): string {
  const f = (n: number) => n.toFixed(0);
  return `VmRSS ${f(m.rss)}, VmHWM ${f(m.hwm)}, RssAnon ${f(m.anon)}, RssFile ${
    f(m.file)
  }; heap used ${f(m.heapUsed)} / reserved ${f(m.heapTotal)} / external ${
    f(m.external)
  } MiB`;
}

/** Figure 1: a fresh index webhook's cold sync and memory, beside a list one. */
async function coldSync(
  kcp: KcpServer,
  cert: ServingCert,
  label: string,
  variant: Variant = INDEX,
): Promise<void> {
  const started = performance.now();
  const index = await startVariant(kcp, variant, cert);
  const list = await startVariant(kcp, LIST, cert);
  try {
    const count = await waitSynced(index.metricsPort, 15 * 60_000);
    const syncMs = performance.now() - started;
    // Let the collector settle what the sync left.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    console.log(
      `\n1. Cold sync and memory, ${label}: index of ${count} dependents synced ${
        (syncMs / 1000).toFixed(1)
      } s after the start`,
    );
    console.log(`   index: ${formatMemory(await memory(index))}`);
    console.log(`   list:  ${formatMemory(await memory(list))}`);
  } finally {
    await index.stop();
    await list.stop();
  }
}

/** Runs `run(k)` for every contender `k` once per sample, order rotating. */
async function sideBySide(
  contenders: number,
  samples: number,
  run: (k: number) => Promise<number>,
): Promise<number[][][]> {
  /** rounds[r][k]: the samples of contender k in round r. */
  const rounds = Array.from(
    { length: ROUNDS },
    () => Array.from({ length: contenders }, (): number[] => []),
  );
  for (let i = 0; i < samples * ROUNDS + 1; i++) {
    for (let j = 0; j < contenders; j++) {
      const k = (i + j) % contenders;
      const ms = await run(k);
      if (i > 0) rounds[Math.floor((i - 1) / samples)]![k]!.push(ms);
    }
  }
  return rounds;
}

function table(
  names: readonly string[],
  rounds: number[][][],
  ratios: readonly [number, number][],
): void {
  names.forEach((name, k) => {
    const all = rounds.flatMap((r) => r[k]!);
    console.log(
      `   ${name.padEnd(30)} | ${String(all.length).padStart(3)} | ${
        formatSpread(spread(all))
      }`,
    );
  });
  for (const [a, b] of ratios) {
    console.log(
      `   ${names[a]} / ${names[b]} per round: ${
        formatSpread(
          spread(rounds.map((r) => median(r[a]!) / median(r[b]!))),
          3,
        )
      }`,
    );
  }
}

/** Figures 2 and 3 for one namespace. */
async function latency(
  kcp: KcpServer,
  cluster: string,
  webhooks: { list: Spawned; index: Spawned },
  caPem: string,
  ns: Namespace,
): Promise<void> {
  const hooks = Deno.createHttpClient({ caCerts: [caPem] });
  const kcpClient = Deno.createHttpClient({ caCerts: [kcp.caPem] });
  const token = kcp.identity("webhook").token;
  const base = kcp.clusterUrl(cluster);
  const get = async (url: string, accept: string, name: string) => {
    const response = await fetch(url, {
      headers: { accept, authorization: `Bearer ${token}` },
      client: kcpClient,
    });
    const object = await response.json() as { metadata?: { name?: string } };
    if (object.metadata?.name !== name) {
      throw new Error(`GET ${url}: ${JSON.stringify(object).slice(0, 300)}`);
    }
  };
  const vpcUrl = (vpc: string) =>
    `${base}/apis/network.example.com/v1alpha1/namespaces/${ns.name}/vpcs/${vpc}`;
  /** Answers other than the real verdict, by webhook and kind. */
  const unexpected = new Map<string, number>();
  const vmUrl =
    `${base}/apis/compute.example.com/v1alpha1/namespaces/${ns.name}/virtualmachines/vm-0`;
  const workspaceUrl =
    `${base}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`;
  /** A review of a type no rule protects: the webhook answers, reading nothing. */
  const unprotected = deleteReview(ns.referred, { resource: "subnets" });
  const review = async (
    webhook: Spawned,
    target: LiveVpc,
    want: "denied" | "allowed",
  ) => {
    const body = deleteReview(target);
    let answer;
    const ms = await timed(async () => {
      answer = await sendReview(webhook.url, body, hooks);
    });
    const ok = want === "allowed"
      ? answer!.kind === "allowed"
      : answer!.kind === "denied_other" &&
        /still referenced by VirtualMachine\/vm-0 /.test(answer!.detail ?? "");
    if (!ok) {
      // Counted and reported, the sample kept: what the client saw.
      const key = `${
        webhook === webhooks.index ? "index" : "list"
      }, ${target.metadata.name}: ${answer!.kind} ${
        (answer!.detail ?? "").slice(0, 160)
      }`;
      unexpected.set(key, (unexpected.get(key) ?? 0) + 1);
    }
    return ms;
  };
  try {
    console.log(
      `\n2. Denial (vpc-0, which vm-0 refers to) among ${ns.label}, ms, min / median / max over ${ROUNDS} rounds of ${ns.samples}`,
    );
    const denials = await sideBySide(6, ns.samples, async (k) => {
      switch (k) {
        case 0:
          return await review(webhooks.index, ns.referred, "denied");
        case 1:
          return await review(webhooks.list, ns.referred, "denied");
        case 2:
          return await timed(() =>
            get(vpcUrl("vpc-0"), METADATA_ONLY, "vpc-0")
          );
        case 3:
          return await timed(async () => {
            await get(vpcUrl("vpc-0"), METADATA_ONLY, "vpc-0");
            await get(vmUrl, "application/json", "vm-0");
          });
        case 4:
          // The reads a denial from the index makes, all at once.
          return await timed(async () => {
            await Promise.all([
              get(vpcUrl("vpc-0"), METADATA_ONLY, "vpc-0"),
              get(vmUrl, "application/json", "vm-0"),
              get(workspaceUrl, METADATA_ONLY, "cluster"),
            ]);
          });
        default:
          return await timed(async () => {
            const answer = await sendReview(
              webhooks.index.url,
              unprotected,
              hooks,
            );
            if (answer.kind !== "allowed") {
              throw new Error(`unprotected type: ${JSON.stringify(answer)}`);
            }
          });
      }
    });
    table(
      [
        "index review",
        "list review",
        "bare metadata GET",
        "bare GET, then the VM's GET",
        "its three GETs at once",
        "review reading nothing",
      ],
      denials,
      [[0, 1], [0, 2], [0, 3], [0, 4]],
    );
    console.log(
      `   index review / (review reading nothing + its three GETs at once) per round: ${
        formatSpread(
          spread(
            denials.map((r) => median(r[0]!) / (median(r[5]!) + median(r[4]!))),
          ),
          3,
        )
      }`,
    );

    const before = await outcomes(webhooks.index.metricsPort);
    console.log(
      `\n3. Allowed delete (vpc-target, none refers) among ${ns.label}, ms`,
    );
    const allowed = await sideBySide(3, ns.samples, async (k) => {
      switch (k) {
        case 0:
          return await review(webhooks.index, ns.unreferred, "allowed");
        case 1:
          return await review(webhooks.list, ns.unreferred, "allowed");
        default:
          return await timed(() =>
            get(vpcUrl("vpc-target"), METADATA_ONLY, "vpc-target")
          );
      }
    });
    table(
      ["index review", "list review", "bare metadata GET"],
      allowed,
      [[0, 1], [0, 2]],
    );
    const after = await outcomes(webhooks.index.metricsPort);
    const seen = Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k} ${v}`);
    console.log(
      `   index outcomes of these ${
        allowed.flat(2).length / 3 + 1
      } allowed reviews (with the warm-up): ${seen.join(", ") || "none"}`,
    );
    for (const [key, n] of unexpected) {
      console.log(`   NOT the real verdict, ${n} x ${key}`);
    }
  } finally {
    hooks.close();
    kcpClient.close();
  }
}

/** Figure 4: waves of 8 denials at once over the large VMs. */
async function concurrent(
  webhook: Spawned,
  label: string,
  caPem: string,
  target: LiveVpc,
  waves: number,
): Promise<void> {
  const client = Deno.createHttpClient({ caCerts: [caPem] });
  const latencies: number[] = [];
  const verdicts: Record<string, number> = {};
  const details = new Set<string>();
  try {
    for (let w = 0; w < waves; w++) {
      await Promise.all(Array.from({ length: 8 }, async () => {
        let answer;
        const ms = await timed(async () => {
          answer = await sendReview(webhook.url, deleteReview(target), client);
        });
        const real = answer!.kind === "denied_other" &&
          /still referenced by VirtualMachine\/vm-0 /.test(
            answer!.detail ?? "",
          );
        const kind = real ? "real verdict (denied, vm-0)" : answer!.kind;
        verdicts[kind] = (verdicts[kind] ?? 0) + 1;
        if (!real && answer!.detail !== undefined && details.size < 3) {
          details.add(answer!.detail.slice(0, 200));
        }
        latencies.push(ms);
      }));
    }
  } finally {
    client.close();
  }
  console.log(
    `   ${label.padEnd(16)} | ${waves} x 8 | ${
      formatSpread(spread(latencies), 0)
    } ms | ${
      Object.entries(verdicts).map(([k, v]) => `${k}: ${v}`).join(", ")
    }${details.size > 0 ? ` | ${[...details].join(" / ")}` : ""}`,
  );
}

/**
 * Resident anonymous memory of `pid` by kind of mapping (`/proc/<pid>/smaps`),
 * MiB: the main heap (`[heap]`, brk), glibc's other arenas (64 MiB-aligned
 * heaps of up to 64 MiB), and every other anonymous mapping (V8's pages,
 * chunks mmap'd on their own, thread stacks).
 */
async function anonByKind(pid: number): Promise<string> {
  const text = await Deno.readTextFile(`/proc/${pid}/smaps`);
  const ARENA = 64 * MIB;
  interface Mapping {
    start: number;
    end: number;
    perms: string;
    anon: boolean;
    brk: boolean;
    rssKb: number;
  }
  const maps: Mapping[] = [];
  for (const line of text.split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/
      .exec(line);
    if (header !== null) {
      const path = header[5]!;
      maps.push({
        start: parseInt(header[1]!, 16),
        end: parseInt(header[2]!, 16),
        perms: header[3]!,
        anon: header[4] === "0" &&
          (path === "" || path === "[heap]" || path.startsWith("[anon")),
        brk: path === "[heap]",
        rssKb: 0,
      });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB$/.exec(line);
    if (rss !== null && maps.length > 0) maps.at(-1)!.rssKb = Number(rss[1]);
  }
  let brk = 0, arenas = 0, other = 0;
  maps.forEach((m, i) => {
    if (!m.anon) return;
    const next = maps[i + 1];
    const arena = m.start % ARENA === 0 && m.perms.startsWith("rw") &&
      (m.end - m.start === ARENA ||
        (next !== undefined && next.start === m.end &&
          next.perms.startsWith("---") && next.end === m.start + ARENA));
    if (m.brk) brk += m.rssKb;
    else if (arena) arenas += m.rssKb;
    else other += m.rssKb;
  });
  const f = (kb: number) => (kb / 1024).toFixed(0);
  return `anon by mapping: brk heap ${f(brk)}, glibc arenas ${
    f(arenas)
  }, other ${f(other)} MiB`;
}

/** Figure 5: what stays resident after heavy list reviews, per environment. */
async function resident(
  kcp: KcpServer,
  cert: ServingCert,
  target: LiveVpc,
  small: LiveVpc,
  given: readonly Variant[],
): Promise<void> {
  console.log(
    "\n5. Resident memory after a wave of 8 list reviews over 10 000 x 27 KB VMs (no index), fresh process each, MiB;",
  );
  console.log(
    `   then 20 s idle; then ${CHURN} allowed reviews of a namespace with 1 VM, one at a time (garbage for V8 to collect)`,
  );
  const variants: Variant[] = given.length > 0
    ? [{ ...LIST, label: "Deployment's GLIBC_TUNABLES" }, ...given]
    : [
      { ...LIST, label: "Deployment's GLIBC_TUNABLES" },
      { ...LIST, label: "no glibc tunables", env: {} },
      { ...LIST, label: "MALLOC_ARENA_MAX=2", env: { MALLOC_ARENA_MAX: "2" } },
      {
        ...LIST,
        label: "tunables + trim_threshold",
        env: {
          GLIBC_TUNABLES:
            "glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072",
        },
      },
    ];
  const client = Deno.createHttpClient({ caCerts: [cert.caPem] });
  try {
    for (const variant of variants) {
      const spawned = await startVariant(kcp, variant, cert);
      try {
        const start = await memory(spawned);
        await concurrent(spawned, variant.label, cert.caPem, target, 1);
        const loaded = await memory(spawned);
        const loadedKinds = await anonByKind(spawned.pid);
        await new Promise((resolve) => setTimeout(resolve, 20_000));
        const idle = await memory(spawned);
        const body = deleteReview(small);
        for (let i = 0; i < CHURN; i++) {
          await sendReview(spawned.url, body, client);
        }
        const churned = await memory(spawned);
        console.log(`     fresh: ${formatMemory(start)}`);
        console.log(`     after: ${formatMemory(loaded)}; ${loadedKinds}`);
        console.log(`     +20 s: ${formatMemory(idle)}`);
        console.log(
          `     +${CHURN} small reviews: ${
            formatMemory(churned)
          }; ${await anonByKind(
            spawned.pid,
          )}`,
        );
      } finally {
        await spawned.stop();
      }
    }
  } finally {
    client.close();
  }
}

async function addVpcs(
  kcp: KcpServer,
  workspace: string,
  namespace: string,
): Promise<{ referred: LiveVpc; unreferred: LiveVpc }> {
  const vpcs = vpcsPath(workspace, namespace);
  await kcp.request("POST", vpcs, { body: vpcObject("vpc-0") });
  const referred = await kcp.request<LiveVpc>("GET", `${vpcs}/vpc-0`);
  const unreferred = await kcp.request<LiveVpc>("GET", `${vpcs}/vpc-target`)
    .catch(async () => {
      await kcp.request("POST", vpcs, { body: vpcObject("vpc-target") });
      return await kcp.request<LiveVpc>("GET", `${vpcs}/vpc-target`);
    });
  return { referred, unreferred };
}

/** Creates up to `count` small VMs in `namespace` until `deadline`; returns how many. */
async function createUntil(
  kcp: KcpServer,
  workspace: string,
  namespace: string,
  count: number,
  deadline: number,
): Promise<number> {
  const url = vmsPath(workspace, namespace);
  let next = 0;
  let created = 0;
  await Promise.all(Array.from({ length: 24 }, async () => {
    while (next < count && performance.now() < deadline) {
      const i = next++;
      await kcp.request("POST", url, {
        body: vmObject(`vm-${i}`, `vpc-${i}`),
        timeoutMs: 60_000,
      });
      created++;
    }
  }));
  return created;
}

/**
 * `deno task bench index [--large] [--large-minutes=N] [--resident]
 * [--no-resident] [--variant='NAME=value ...']...` (variants replace
 * figure 5's own environments, after the Deployment's; `--no-resident`
 * leaves figure 5 out).
 */
export async function indexBench(args: readonly string[]): Promise<void> {
  const large = args.includes("--large");
  /** Figure 5 alone. */
  const residentOnly = args.includes("--resident");
  /** Every figure but 5. */
  const noResident = args.includes("--no-resident");
  /** Figure 5's environments instead of its own (after the Deployment's). */
  const given = args.filter((a) => a.startsWith("--variant="))
    .map((a) => parseVariant(a.slice("--variant=".length)));
  const largeMinutes = Number(
    args.find((a) => a.startsWith("--large-minutes="))?.split("=")[1] ?? 10,
  );
  const kcp = await startKcp();
  try {
    const topo = await buildTopology(kcp, {
      consumerPaths: ["root:consumers:bench"],
    });
    const consumer = topo.consumers[0]!;
    await kcp.kubectlOk([
      "apply",
      "-f",
      `${ROOT}testing/fixtures/compute/dependencyrule-vm-vpc.yaml`,
    ], { workspace: topo.compute.path });
    await kcp.kubectlOk(
      ["apply", "-k", `${ROOT}manifests/kcp/system-admin/dependents-index`],
      { workspace: "system:admin", identity: "shardAdmin" },
    );
    await grantWebhookReads(kcp, { dependentsIndex: true });
    const cert = await createServingCert(`${kcp.rootDir}/bench-index-tls`);
    console.log(
      `kcp ready in ${
        (kcp.lastStartupMs / 1000).toFixed(1)
      } s (a shared machine)`,
    );

    const namespaces: Namespace[] = [];
    const samples: Record<number, number> = { 1: 15, 1_000: 8, 10_000: 3 };
    for (const n of residentOnly ? [1] : [1, 1_000, 10_000]) {
      const name = `bench-${n}`;
      const t0 = performance.now();
      await createBenchNamespace(kcp, consumer.path, name, n);
      console.log(
        `created ${n} small VMs in ${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s`,
      );
      namespaces.push({
        label: `${n} small VMs`,
        name,
        dependents: n,
        samples: samples[n]!,
        ...await addVpcs(kcp, consumer.path, name),
      });
    }
    if (!residentOnly) await coldSync(kcp, cert, "11 001 small VMs");

    const bigName = "bench-large";
    await kcp.request(
      "POST",
      `/clusters/${consumer.path}/api/v1/namespaces`,
      { body: namespaceObject(bigName) },
    );
    let t0 = performance.now();
    await createParallel(
      kcp,
      vmsPath(consumer.path, bigName),
      10_000,
      (i) => vmObject(`vm-${i}`, `vpc-${i}`, PADDING_CHARS),
      8,
    );
    console.log(
      `created 10000 VMs of about 27 KB in ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s`,
    );
    const big: Namespace = {
      label: "10 000 VMs of 27 KB",
      name: bigName,
      dependents: 10_000,
      samples: 3,
      ...await addVpcs(kcp, consumer.path, bigName),
    };
    namespaces.push(big);
    if (residentOnly) {
      await resident(
        kcp,
        cert,
        big.referred,
        namespaces[0]!.unreferred,
        given,
      );
      return;
    }
    await coldSync(kcp, cert, "11 001 small and 10 000 large VMs");

    const index = await startVariant(kcp, INDEX, cert);
    const list = await startVariant(kcp, LIST, cert);
    try {
      await waitSynced(index.metricsPort, 15 * 60_000);
      for (const ns of namespaces) {
        await latency(kcp, consumer.cluster, { list, index }, cert.caPem, ns);
      }
      console.log(
        "\n4. 8 denials at once over 10 000 VMs of 27 KB (vpc-0), client side",
      );
      await concurrent(index, "index", cert.caPem, big.referred, 3);
      await concurrent(list, "list (no index)", cert.caPem, big.referred, 1);
      console.log(
        `   index outcomes so far: ${
          JSON.stringify(await outcomes(index.metricsPort))
        }`,
      );
      console.log(`   list webhook now: ${formatMemory(await memory(list))}`);
      console.log(`   index webhook now: ${formatMemory(await memory(index))}`);
    } finally {
      await index.stop();
      await list.stop();
    }

    if (!noResident) {
      await resident(
        kcp,
        cert,
        big.referred,
        namespaces[0]!.unreferred,
        given,
      );
    }

    if (large) {
      const name = "bench-100000";
      await kcp.request(
        "POST",
        `/clusters/${consumer.path}/api/v1/namespaces`,
        { body: namespaceObject(name) },
      );
      t0 = performance.now();
      const created = await createUntil(
        kcp,
        consumer.path,
        name,
        LARGE_MAX,
        t0 + largeMinutes * 60_000,
      );
      console.log(
        `\ncreated ${created} small VMs in ${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s (at most ${LARGE_MAX} within ${largeMinutes} min)`,
      );
      await kcp.request("POST", vpcsPath(consumer.path, name), {
        body: vpcObject("vpc-target"),
      });
      const ns: Namespace = {
        label: `${created} small VMs`,
        name,
        dependents: created,
        samples: 2,
        ...await addVpcs(kcp, consumer.path, name),
      };
      await coldSync(
        kcp,
        cert,
        `${created} more small VMs in one namespace`,
        LARGE_INDEX,
      );
      const index = await startVariant(kcp, LARGE_INDEX, cert);
      const list = await startVariant(kcp, LIST, cert);
      try {
        await waitSynced(index.metricsPort, 15 * 60_000);
        await latency(kcp, consumer.cluster, { list, index }, cert.caPem, ns);
      } finally {
        await index.stop();
        await list.stop();
      }
    }
  } finally {
    await kcp.stop();
  }
}
