/**
 * `deno task bench:tenants`: whether one tenant's heavy deletes leave
 * another tenant's delete its real verdict, on a real kcp, from the
 * client's side.
 *
 * One kcp with the standard topology (network and compute providers,
 * consumers `root:consumers:c1`, the heavy tenant, and `root:consumers:c2`,
 * the light one); the webhook and the controller as their own processes
 * with the production flags (`--max-concurrent-reviews=4` and the other
 * defaults; info logs); the VM -> VPC rule of the fixtures, the webhook's
 * reads granted with `deno task rbac`'s output once it exists, and the rule
 * `Enforced`.
 *
 * - Heavy tenant: 1 000 VirtualMachines of about 27 KB each (an annotation
 *   of incompressible padding) in one namespace, all referring to VPC
 *   `heavy`; a second VPC `heavy-2` none refers to. Every review of
 *   deleting either lists all 1 000 (about 27 MB).
 * - Light tenant: VPC `light`, referred to by one VM.
 *
 * The measured request is a `DELETE ?dryRun=All` of VPC `light` sent to kcp
 * with the admin's token over a keep-alive connection, timed from sending
 * to having read the answer; its real verdict is 409 "still referenced by
 * VirtualMachine/vm-light", and every other answer (503 busy above all) is
 * counted and reported, and makes the run exit 1. Three series, measured
 * side by side: the light delete alone, and while the heavy tenant keeps 4
 * (then 8) dry-run DELETEs of `heavy` and `heavy-2` running in a loop,
 * each worker sending the next as soon as the last is answered; the light
 * delete is sent once each worker has had an answer (the load is steady)
 * and the load stops after it. Each round takes `SAMPLES` of each series,
 * interleaved in an order that rotates from sample to sample, so drift hits
 * all alike; the ratio of the medians (with heavy / alone) is given per
 * round. A fourth series is the machine's floor: as many workers as the
 * largest heavy series keep dry-run DELETEs of the heavy tenant's VMs in
 * flight, which no rule protects, so kcp answers them without the
 * webhook; the light delete under that load shows what so many busy
 * clients cost it on this machine, and the ratio of the largest heavy
 * series to it what the webhook adds. The heavy deletes' own latency and
 * verdicts are reported, and the webhook's resident memory (`VmRSS`, sampled every 100 ms) in each phase.
 *
 * `deno task bench:tenants --dependents-index` runs the webhook with the
 * dependents index (its grants: `manifests/kcp/system-admin/
 * dependents-index` and `controller grants --dependents-index`) and measures
 * once its feeds are synced with every VM in them; the index's answers
 * (`dependency_webhook_index_answers_total`) are reported.
 *
 * @module
 */
import {
  buildTopology,
  type ComponentProcess,
  grantWebhookReads,
  startController,
  startKcp,
  startWebhook,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";
import { formatSpread, median, spread } from "./_stats.ts";
import {
  createParallel,
  type DeleteAnswer,
  type DeleteKind,
  type DeleteTarget,
  dryRunDelete,
  namespaceObject,
  RssSampler,
  vmObject,
  vmsPath,
  vpcObject,
  vpcsPath,
} from "./_tenant_fixtures.ts";

const COMPUTE = "root:providers:compute";
const HEAVY = "root:consumers:c1";
const LIGHT = "root:consumers:c2";
const NAMESPACE = "bench";
const RULE = "vm-dependencies";
/** The heavy tenant's VMs, all referring to VPC `heavy`. */
const DEPENDENTS = 1_000;
/** Characters of padding per heavy VM: about 27 KB objects. */
const PADDING_CHARS = 27_000;
/** Heavy VMs created at once. */
const CREATE_PARALLEL = 8;
/** Rounds; each gives one ratio of medians per heavy series. */
const ROUNDS = 3;
/** Samples of each series per round. */
const SAMPLES = 5;
/** The heavy tenant's concurrent deletes in each "with heavy" series. */
const HEAVY_SERIES = [4, 8] as const;
/** How long a heavy load may take to become steady before the light delete. */
const STEADY_TIMEOUT_MS = 20_000;
/** Requests one heavy worker sends in one sample at most. */
const MAX_REQUESTS_PER_WORKER = 200;
/** Pause after a sample, so the next starts on a quiet webhook. */
const SETTLE_MS = 500;
/** Samples are no longer started after this long of measuring. */
const MEASURE_BUDGET_MS = 11 * 60_000;

for (const arg of Deno.args) {
  if (arg !== "--dependents-index") {
    console.error(
      `tenant_fairness: cannot use the argument: current value is '${arg}'\nusage: tenant_fairness.ts [--dependents-index]`,
    );
    Deno.exit(2);
  }
}
/** The webhook with `--dependents-index`. */
const WITH_INDEX = Deno.args.includes("--dependents-index");
const WEBHOOK_ARGS = [
  "--log-level=info",
  ...(WITH_INDEX ? ["--dependents-index"] : []),
];

const light: DeleteTarget = {
  workspace: LIGHT,
  namespace: NAMESPACE,
  name: "light",
};
const heavyTargets: readonly DeleteTarget[] = [
  { workspace: HEAVY, namespace: NAMESPACE, name: "heavy" },
  { workspace: HEAVY, namespace: NAMESPACE, name: "heavy-2" },
];

/**
 * The floor: as many workers as the largest heavy series, sending dry-run
 * DELETEs of the heavy tenant's VMs, which no rule protects, so kcp
 * answers them without calling the webhook: what that many busy clients
 * cost the light delete on this machine, the webhook aside.
 */
const BARE_WORKERS = Math.max(...HEAVY_SERIES);
/** The VMs the floor's workers delete (dry run), in turn. */
const BARE_TARGETS: readonly DeleteTarget[] = Array.from(
  { length: 16 },
  (_, i) => ({
    workspace: HEAVY,
    namespace: NAMESPACE,
    name: `vm-${String(i).padStart(4, "0")}`,
    resource: "virtualmachines",
  }),
);

type Series =
  | "alone"
  | `heavy-${(typeof HEAVY_SERIES)[number]}`
  | "bare";
const SERIES: readonly Series[] = [
  "alone",
  ...HEAVY_SERIES.map((n) => `heavy-${n}` as const),
  "bare",
];
/** The series with the heavy tenant's protected deletes. */
const HEAVY_ONLY = SERIES.filter((s) => s.startsWith("heavy-"));

function seriesLabel(series: Series): string {
  return series === "alone"
    ? "alone"
    : series === "bare"
    ? `with ${BARE_WORKERS} unreviewed`
    : `with ${series.slice("heavy-".length)} heavy`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The heavy tenant's deletes: `workers` loops, each sending the next
 * dry-run DELETE (of `heavy` and `heavy-2` in turn, or of the floor's VMs)
 * as soon as the last is answered, until stopped.
 */
class HeavyLoad {
  /** Every answer, in the order they came. */
  readonly answers: DeleteAnswer[] = [];
  /** Requests sent and not answered yet. */
  inFlight = 0;
  #stopped = false;
  readonly #workers: Promise<void>[];

  constructor(
    workers: number,
    options: {
      targets: readonly DeleteTarget[];
      send: (target: DeleteTarget, worker: number) => Promise<DeleteAnswer>;
    },
  ) {
    const { targets, send } = options;
    this.#workers = Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; i < MAX_REQUESTS_PER_WORKER && !this.#stopped; i++) {
        this.inFlight++;
        const answer = await send(targets[(w + i) % targets.length]!, w);
        this.inFlight--;
        this.answers.push(answer);
      }
    });
  }

  /** Sends no more and waits for the answers of the requests in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#workers);
  }
}

/** Waits until `ready()` or `timeoutMs`; whether it became ready. */
async function until(ready: () => boolean, timeoutMs: number) {
  const deadline = performance.now() + timeoutMs;
  while (!ready()) {
    if (performance.now() >= deadline) return false;
    await sleep(20);
  }
  return true;
}

/** The webhook's `dependency_webhook_admission_reviews_total` by outcome. */
async function reviewOutcomes(
  webhook: WebhookProcess,
): Promise<Map<string, number>> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  const outcomes = new Map<string, number>();
  for (
    const match of text.matchAll(
      /^dependency_webhook_admission_reviews_total\{outcome="([^"]+)"\} (\S+)$/gm,
    )
  ) {
    outcomes.set(match[1]!, Number(match[2]));
  }
  return outcomes;
}

/** Index answers by outcome (`dependency_webhook_index_answers_total`). */
async function indexOutcomes(webhook: WebhookProcess): Promise<string> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return [
    ...text.matchAll(
      /^dependency_webhook_index_answers_total\{outcome="([^"]+)"\} (\S+)$/gm,
    ),
  ].map((m) => `${m[1]} ${m[2]}`).join(", ");
}

/**
 * Waits until the index feeds are all synced and hold every VM created;
 * returns the dependents indexed.
 */
async function waitForIndex(webhook: WebhookProcess): Promise<number> {
  return await waitFor("the index feeds to sync", async () => {
    const { text } = await webhook.get(webhook.metricsPort, "/metrics");
    const lines = text.split("\n");
    const feeds = lines.filter((l) =>
      l.startsWith("dependency_webhook_index_feeds{") && !l.endsWith(" 0")
    );
    const indexed = lines
      .filter((l) => l.startsWith("dependency_webhook_index_dependents{"))
      .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
    return feeds.length > 0 &&
        feeds.every((l) => l.includes('state="synced"')) &&
        indexed >= DEPENDENTS + 1
      ? indexed
      : undefined;
  }, { timeoutMs: 300_000, intervalMs: 200 });
}

async function waitForEnforced(timeoutMs: number): Promise<void> {
  interface Condition {
    type: string;
    status: string;
    reason: string;
  }
  await waitFor(`rule ${RULE} to be Enforced`, async () => {
    const rule = await kcp.request<{
      metadata: { generation: number };
      status?: { observedGeneration?: number; conditions?: Condition[] };
    }>(
      "GET",
      `/clusters/${COMPUTE}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules/${RULE}`,
    );
    const ready = rule.status?.conditions?.find((c) => c.type === "Ready");
    return (ready?.status === "True" && ready.reason === "Enforced" &&
      rule.status?.observedGeneration === rule.metadata.generation) ||
      undefined;
  }, { timeoutMs, intervalMs: 200 });
}

async function createTenants(): Promise<{ vmBytes: number }> {
  for (const workspace of [HEAVY, LIGHT]) {
    await kcp.request("POST", `/clusters/${workspace}/api/v1/namespaces`, {
      body: namespaceObject(NAMESPACE),
    });
  }
  for (const name of ["heavy", "heavy-2"]) {
    await kcp.request("POST", vpcsPath(HEAVY, NAMESPACE), {
      body: vpcObject(name),
    });
  }
  await kcp.request("POST", vpcsPath(LIGHT, NAMESPACE), {
    body: vpcObject("light"),
  });
  await kcp.request("POST", vmsPath(LIGHT, NAMESPACE), {
    body: vmObject("vm-light", "light"),
  });
  const vmBytes = JSON.stringify(vmObject("vm-0000", "heavy", PADDING_CHARS))
    .length;
  await createParallel(
    kcp,
    vmsPath(HEAVY, NAMESPACE),
    DEPENDENTS,
    (i) => vmObject(`vm-${String(i).padStart(4, "0")}`, "heavy", PADDING_CHARS),
    CREATE_PARALLEL,
  );
  return { vmBytes };
}

/** One bare LIST of the heavy namespace as the admin: its size and time. */
async function bareList(
  client: Deno.HttpClient,
): Promise<{ mb: number; ms: number; items: number }> {
  const started = performance.now();
  const response = await fetch(
    `${kcp.baseUrl}${vmsPath(HEAVY, NAMESPACE)}`,
    {
      headers: { authorization: `Bearer ${token}` },
      client,
      signal: AbortSignal.timeout(60_000),
    },
  );
  const text = await response.text();
  const ms = performance.now() - started;
  const items = (JSON.parse(text) as { items: unknown[] }).items.length;
  return { mb: text.length / 1024 / 1024, ms, items };
}

function counts(answers: readonly DeleteAnswer[]): Record<DeleteKind, number> {
  const c: Record<DeleteKind, number> = {
    referenced: 0,
    allowed: 0,
    busy: 0,
    other: 0,
  };
  for (const a of answers) c[a.kind]++;
  return c;
}

function spreadOf(answers: readonly DeleteAnswer[]): string {
  return answers.length === 0
    ? "-"
    : formatSpread(spread(answers.map((a) => a.ms)));
}

/** Distinct answers other than the expected, at most `max`, for the notes. */
function unexpected(
  answers: readonly DeleteAnswer[],
  expected: readonly DeleteKind[],
  max = 3,
): string[] {
  const seen = new Map<string, number>();
  for (const a of answers) {
    if (expected.includes(a.kind)) continue;
    const key = `${a.status}: ${a.message.slice(0, 300)}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen].slice(0, max).map(([key, n]) => `${n} x ${key}`);
}

const kcp = await startKcp();
const token = kcp.identity("admin").token;
let webhook: WebhookProcess | undefined;
let controller: ComponentProcess | undefined;
let rss: RssSampler | undefined;
const clients: Deno.HttpClient[] = [];
const newClient = () => {
  const client = Deno.createHttpClient({ caCerts: [kcp.caPem] });
  clients.push(client);
  return client;
};
let lightFailures = 0;
try {
  const topo = await buildTopology(kcp);
  console.log(
    `kcp ready in ${
      (kcp.lastStartupMs / 1000).toFixed(1)
    } s; heavy tenant ${HEAVY}, light tenant ${LIGHT}`,
  );
  if (WITH_INDEX) {
    await kcp.kubectlOk([
      "apply",
      "-k",
      new URL("../manifests/kcp/system-admin/dependents-index", import.meta.url)
        .pathname,
    ], { workspace: "system:admin", identity: "shardAdmin" });
  }
  webhook = await startWebhook(kcp, { args: WEBHOOK_ARGS });
  controller = await startController(kcp, {
    webhook,
    args: ["--log-level=info"],
  });
  await kcp.kubectlOk([
    "apply",
    "-f",
    new URL(
      "../testing/fixtures/compute/dependencyrule-vm-vpc.yaml",
      import.meta.url,
    ).pathname,
  ], { workspace: topo.compute.path });
  // The webhook's identity reads only the rules' types, once they exist.
  await grantWebhookReads(kcp, { dependentsIndex: WITH_INDEX });
  await waitForEnforced(30_000).catch(async () => {
    // The grant may have raced the rule's first reads: grant again.
    await grantWebhookReads(kcp, { dependentsIndex: WITH_INDEX });
    await waitForEnforced(60_000);
  });

  const setupStarted = performance.now();
  const { vmBytes } = await createTenants();
  const listClient = newClient();
  const listed = await bareList(listClient);
  if (listed.items !== DEPENDENTS) {
    throw new Error(`listed ${listed.items} heavy VMs, want ${DEPENDENTS}`);
  }
  console.log(
    `created ${DEPENDENTS} VMs of ${
      (vmBytes / 1024).toFixed(1)
    } KB (as sent) in ${
      ((performance.now() - setupStarted) / 1000).toFixed(1)
    } s, ${CREATE_PARALLEL} at a time; a bare LIST of them: ${
      listed.mb.toFixed(1)
    } MB in ${listed.ms.toFixed(0)} ms`,
  );

  if (WITH_INDEX) {
    const synced = performance.now();
    const indexed = await waitForIndex(webhook);
    console.log(
      `the dependents index: feeds synced with ${indexed} dependents, ${
        ((performance.now() - synced) / 1000).toFixed(1)
      } s after the VMs were created`,
    );
  }
  const lightClient = newClient();
  const heavyClients = Array.from(
    { length: Math.max(...HEAVY_SERIES) },
    newClient,
  );
  const lightDelete = () =>
    dryRunDelete(kcp, lightClient, token, light, { referrer: "vm-light" });
  const heavyDelete = (target: DeleteTarget, worker: number) =>
    dryRunDelete(kcp, heavyClients[worker]!, token, target);
  await waitFor("the light delete to get its verdict", async () => {
    return (await lightDelete()).kind === "referenced" || undefined;
  }, { timeoutMs: 60_000, intervalMs: 200 });

  rss = new RssSampler(webhook.pid);
  const idleMb = await rss.rssMb();
  const lights = new Map<Series, DeleteAnswer[][]>(
    SERIES.map((s) => [s, Array.from({ length: ROUNDS }, () => [])]),
  );
  const heavies = new Map<Series, DeleteAnswer[]>(
    SERIES.map((s) => [s, []]),
  );
  const warmups: DeleteAnswer[] = [];
  /** The fewest heavy deletes in flight while a light one was. */
  const fewestInFlight = new Map<Series, number>();
  let unsteady = 0;

  /** One light delete of `series`; with heavy, under the heavy load. */
  const sample = async (
    series: Series,
  ): Promise<{ light: DeleteAnswer; heavy: DeleteAnswer[] }> => {
    rss!.phase = series;
    try {
      if (series === "alone") return { light: await lightDelete(), heavy: [] };
      const load = series === "bare"
        ? new HeavyLoad(BARE_WORKERS, {
          targets: BARE_TARGETS,
          send: heavyDelete,
        })
        : new HeavyLoad(Number(series.slice("heavy-".length)), {
          targets: heavyTargets,
          send: heavyDelete,
        });
      const workers = series === "bare"
        ? BARE_WORKERS
        : Number(series.slice("heavy-".length));
      let light: DeleteAnswer;
      try {
        // Steady: every worker's first request answered (a permit held or
        // turned away), the next ones sent at once.
        if (
          !await until(() => load.answers.length >= workers, STEADY_TIMEOUT_MS)
        ) unsteady++;
        const atSend = load.inFlight;
        light = await lightDelete();
        fewestInFlight.set(
          series,
          Math.min(
            fewestInFlight.get(series) ?? Infinity,
            atSend,
            load.inFlight,
          ),
        );
      } finally {
        await load.stop();
      }
      return { light, heavy: load.answers };
    } finally {
      rss!.phase = undefined;
      await sleep(SETTLE_MS);
    }
  };

  // Warm-up: one of each, not counted (connections, kcp's and the
  // webhook's first large lists).
  for (const series of SERIES) {
    const { light } = await sample(series);
    warmups.push(light);
  }
  const before = await reviewOutcomes(webhook);
  const measureStarted = performance.now();
  let taken = 0;
  let stoppedEarly = false;
  rounds: for (let round = 0; round < ROUNDS; round++) {
    for (let s = 0; s < SAMPLES; s++) {
      if (performance.now() - measureStarted > MEASURE_BUDGET_MS) {
        stoppedEarly = true;
        break rounds;
      }
      for (let k = 0; k < SERIES.length; k++) {
        const series = SERIES[(taken + k) % SERIES.length]!;
        const { light, heavy } = await sample(series);
        lights.get(series)![round]!.push(light);
        heavies.get(series)!.push(...heavy);
      }
      taken++;
    }
  }
  const measuredMs = performance.now() - measureStarted;
  const after = await reviewOutcomes(webhook);
  rss.stop();

  // The report.
  const all = (series: Series) => lights.get(series)!.flat();
  console.log(
    `\nLight tenant's dry-run DELETE of VPC light (1 referring VM) in ${LIGHT}, as the client sees it, ms, min / median / max;`,
  );
  console.log(
    `   ${ROUNDS} rounds x ${SAMPLES} samples per series, interleaved (order rotating per sample); the real verdict is 409 "still referenced by VirtualMachine/vm-light";`,
  );
  console.log(
    `   "with N heavy": ${HEAVY} keeps N dry-run DELETEs of VPCs heavy (409) and heavy-2 (200), each reviewed over ${DEPENDENTS} VMs, in flight the whole time`,
  );
  console.log(
    `   ${"series".padEnd(13)} | ${"samples".padStart(7)} | ${
      "409 verdict".padStart(11)
    } | ${"busy".padStart(4)} | ${"other".padStart(5)} | ${
      "latency".padEnd(23)
    } | with/alone, ratio of medians per round`,
  );
  for (const series of SERIES) {
    const answers = all(series);
    const c = counts(answers);
    const others = answers.length - c.referenced - c.busy;
    lightFailures += answers.length - c.referenced;
    const ratios = series === "alone" ? "" : lights.get(series)!
      .map((round, i) => {
        const alone = lights.get("alone")![i]!;
        return round.length === 0 || alone.length === 0
          ? "-"
          : (median(round.map((a) => a.ms)) / median(alone.map((a) => a.ms)))
            .toFixed(2);
      }).join(", ");
    console.log(
      `   ${seriesLabel(series).padEnd(13)} | ${
        String(answers.length).padStart(7)
      } | ${String(c.referenced).padStart(11)} | ${
        String(c.busy).padStart(4)
      } | ${String(others).padStart(5)} | ${
        spreadOf(answers).padEnd(23)
      } | ${ratios}`,
    );
  }

  const heaviest = `heavy-${BARE_WORKERS}` as Series;
  const overFloor = lights.get(heaviest)!.map((round, i) => {
    const bare = lights.get("bare")![i]!;
    return round.length === 0 || bare.length === 0
      ? "-"
      : (median(round.map((a) => a.ms)) / median(bare.map((a) => a.ms)))
        .toFixed(2);
  }).join(", ");
  console.log(
    `   floor: "${
      seriesLabel("bare")
    }" keeps ${BARE_WORKERS} dry-run DELETEs of ${HEAVY}'s VMs in flight, which kcp answers without the webhook; ${
      seriesLabel(heaviest)
    } / ${seriesLabel("bare")}, ratio of medians per round: ${overFloor}`,
  );
  console.log(
    `\nHeavy tenant's dry-run DELETEs in ${HEAVY} during the "with heavy" samples, ms, min / median / max`,
  );
  console.log(
    `   ${"series".padEnd(13)} | ${"answers".padStart(7)} | ${
      "409 heavy".padStart(9)
    } | ${"200 heavy-2".padStart(11)} | ${"busy".padStart(8)} | ${
      "other".padStart(5)
    } | ${"409 latency".padEnd(23)} | ${"200 latency".padEnd(23)} | ${
      "busy latency".padEnd(23)
    } | webhook peak RSS, MB`,
  );
  for (const series of HEAVY_ONLY) {
    const answers = heavies.get(series)!;
    const c = counts(answers);
    const of = (kind: DeleteKind) => answers.filter((a) => a.kind === kind);
    console.log(
      `   ${seriesLabel(series).padEnd(13)} | ${
        String(answers.length).padStart(7)
      } | ${String(c.referenced).padStart(9)} | ${
        String(c.allowed).padStart(11)
      } | ${String(c.busy).padStart(8)} | ${String(c.other).padStart(5)} | ${
        spreadOf(of("referenced")).padEnd(23)
      } | ${spreadOf(of("allowed")).padEnd(23)} | ${
        spreadOf(of("busy")).padEnd(23)
      } | ${rss.peak(series)?.toFixed(1) ?? "-"}`,
    );
  }
  console.log(
    `\nWebhook resident memory (VmRSS, sampled every 100 ms), MB: ${
      idleMb.toFixed(1)
    } idle before the samples; peak ${
      rss.peak("alone")?.toFixed(1) ?? "-"
    } during "alone", ${
      HEAVY_SERIES.map((n) =>
        `${rss!.peak(`heavy-${n}`)?.toFixed(1) ?? "-"} with ${n} heavy`
      ).join(", ")
    } (warm-up included)`,
  );
  const outcomes = [...after].map(([outcome, n]) =>
    `${outcome} ${n - (before.get(outcome) ?? 0)}`
  ).filter((s) => !s.endsWith(" 0"));
  console.log(
    `Webhook's reviews by outcome during the samples (its metric): ${
      outcomes.join(", ")
    }`,
  );
  console.log(
    `Measured in ${
      (measuredMs / 1000).toFixed(0)
    } s; fewest heavy deletes in flight while a light one was: ${
      HEAVY_SERIES.map((n) =>
        `${fewestInFlight.get(`heavy-${n}`) ?? "-"} of ${n}`
      ).join(", ")
    }${unsteady > 0 ? `; ${unsteady} loads not steady in time` : ""}${
      stoppedEarly ? "; stopped early at the time budget" : ""
    }`,
  );
  const notes = [
    ...SERIES.flatMap((series) =>
      unexpected(all(series), ["referenced"]).map((n) =>
        `light, ${seriesLabel(series)}: ${n}`
      )
    ),
    ...unexpected(warmups, ["referenced"]).map((n) => `light, warm-up: ${n}`),
    ...SERIES.slice(1).flatMap((series) =>
      unexpected(
        heavies.get(series)!,
        series === "bare" ? ["allowed"] : ["referenced", "allowed"],
      ).map((n) => `heavy, ${seriesLabel(series)}: ${n}`)
    ),
  ];
  if (WITH_INDEX) {
    console.log(
      `The index's answers since the webhook started (its metric): ${await indexOutcomes(
        webhook,
      )}`,
    );
  }
  for (const note of notes) console.log(`   ${note}`);
  if (lightFailures > 0) {
    console.log(
      `\nFAIL: ${lightFailures} light deletes did not get their real verdict`,
    );
  }
} finally {
  rss?.stop();
  for (const client of clients) client.close();
  await controller?.stop();
  await webhook?.stop();
  await kcp.stop();
}
if (lightFailures > 0) Deno.exit(1);
