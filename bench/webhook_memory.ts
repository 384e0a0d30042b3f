/**
 * `deno task bench memory`: the webhook's resident memory under the loads
 * its bounds are meant to hold, each measured on a fresh process so that no
 * peak carries over, over several runs (min / median / max):
 *
 * (a) waves of 16 DELETE reviews at once whose `oldObject` is a live VPC
 *     padded to 1.4 MiB (`spec.padding`), of a protected type: every review
 *     is parsed, confirmed and listed;
 * (b) waves of 8 reviews at once of a protected VPC in a namespace with
 *     10 000 VirtualMachines: the lists are the memory;
 * (c) resident memory after 30 s idle that follow (a) and (b) on one process.
 *
 * The peak is the kernel's high-water mark (`VmHWM`) of the fresh process,
 * cross-checked by sampling `VmRSS` every 10 ms from here. Every answer is
 * counted: under load the bounds turn reviews away (a 503 denial "busy", or
 * HTTP 503 while too many body bytes are being read), and a figure without
 * those counts would flatter.
 *
 * Variants run side by side in each round: the webhook as the harness
 * starts it, and any given with `--variant` (extra webhook flags; V8 flags as
 * `--v8-flags=...`; environment variables as `NAME=value`; another
 * checkout as `--checkout=DIR`) or
 * `--old=<checkout>` (another checkout's `webhook.ts` with the same flags,
 * e.g. a `git worktree` of an older commit).
 *
 * @module
 */
import {
  appendTo,
  createServingCert,
  DENO_RUN_FLAGS,
  freePorts,
  type KcpServer,
  type ServingCert,
  stopProcess,
  waitFor,
  WEBHOOK_RUN,
} from "../testing/mod.ts";
import {
  ANSWER_KINDS,
  type AnswerKind,
  deleteReview,
  type LiveVpc,
  sendReview,
} from "./_webhook_fixtures.ts";
import { formatSpread, median, type Spread, spread } from "./_stats.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const MIB = 1024 * 1024;

/** The loads, as the issue sets them. */
const BIG_REVIEWS = 16;
const BIG_OBJECT_BYTES = Math.round(1.4 * MIB);
const BIG_WAVES = 5;
const LIST_REVIEWS = 8;
const LIST_WAVES = 3;
const IDLE_MS = 30_000;

/** The targets, in MiB. */
const PEAK_TARGET_MIB = 256;
const IDLE_TARGET_MIB = 200;

/** How one webhook process is started. */
export interface Variant {
  /** How the tables name it. */
  label: string;
  /** The checkout whose `webhook.ts` runs. */
  root: string;
  /** V8 flags added to the harness's. */
  v8Flags: string[];
  /** `deno run` flags added to the harness's. */
  denoFlags: string[];
  /** Flags added to the webhook's. */
  args: string[];
  /** Environment variables set for the process (e.g. glibc malloc's). */
  env: Record<string, string>;
}

/** The webhook of this checkout, with the harness's flags. */
export const CURRENT: Variant = {
  label: "current",
  root: ROOT,
  // As the image and the Deployment run it (testing/components.ts WEBHOOK_RUN).
  v8Flags: WEBHOOK_RUN.flags[0].slice("--v8-flags=".length).split(",")
    .filter((f) => !f.startsWith("--max-semi-space-size")),
  denoFlags: [],
  args: [],
  env: { ...WEBHOOK_RUN.env },
};

/**
 * A variant from its command-line text, whitespace-separated words:
 * `--checkout=DIR` runs another checkout's `webhook.ts` (as
 * {@linkcode checkoutVariant}), `--v8-flags=a,b` go to V8, `NAME=value` to
 * the environment, and every other word to the webhook.
 */
export function parseVariant(text: string): Variant {
  const words = text.split(/\s+/).filter((w) => w !== "");
  const isV8 = (w: string) => w.startsWith("--v8-flags=");
  const isEnv = (w: string) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(w);
  const isCheckout = (w: string) => w.startsWith("--checkout=");
  const checkout = words.findLast(isCheckout)?.slice("--checkout=".length);
  const base = checkout === undefined ? CURRENT : checkoutVariant(checkout);
  return {
    label: text,
    root: base.root,
    denoFlags: base.denoFlags,
    v8Flags: [
      ...base.v8Flags,
      ...words.filter(isV8).flatMap((w) =>
        w.slice("--v8-flags=".length).split(",")
      ),
    ],
    args: words.filter((w) => !isV8(w) && !isEnv(w) && !isCheckout(w)),
    env: {
      ...base.env,
      ...Object.fromEntries(
        words.filter(isEnv).map((w) => {
          const at = w.indexOf("=");
          return [w.slice(0, at), w.slice(at + 1)];
        }),
      ),
    },
  };
}

/**
 * Another checkout's `webhook.ts`, started with the same flags, and with
 * `--unstable-net`, which older checkouts' TLS listeners (`reusePort`) need.
 */
export function checkoutVariant(root: string): Variant {
  return {
    label: `checkout ${root}`,
    root: root.endsWith("/") ? root : `${root}/`,
    v8Flags: [],
    denoFlags: ["--unstable-net"],
    args: [],
    env: {},
  };
}

/** The loads' targets: live VPCs, one in a small namespace, one among 10 000 VMs. */
export interface MemoryTargets {
  /** `vpc-target` in a namespace with one VirtualMachine. */
  small: LiveVpc;
  /** `vpc-target` in the namespace with 10 000 VirtualMachines. */
  large: LiveVpc;
}

/** A webhook process started by {@linkcode startVariant}. */
export interface Spawned {
  /** The process id. */
  pid: number;
  /** `https://127.0.0.1:<port>/validate`. */
  url: string;
  /** Where its `/metrics` answers (plain HTTP on loopback). */
  metricsPort: number;
  /** SIGTERM, then waits for it to exit and its logs to be written. */
  stop(): Promise<void>;
}

/** The harness's `deno run` flags with `extra` V8 flags merged into its `--v8-flags`. */
function denoFlags(extra: readonly string[]): string[] {
  if (extra.length === 0) return [...DENO_RUN_FLAGS];
  const prefix = "--v8-flags=";
  const given = DENO_RUN_FLAGS.find((f) => f.startsWith(prefix));
  const merged = `${prefix}${
    [...(given === undefined ? [] : [given.slice(prefix.length)]), ...extra]
      .join(",")
  }`;
  return [...DENO_RUN_FLAGS.filter((f) => !f.startsWith(prefix)), merged];
}

/**
 * Starts `webhook.ts` of `variant.root` as the harness's `startWebhook`
 * does (same identity, kubeconfig and flags), and waits until it is ready
 * with the rules loaded.
 */
export async function startVariant(
  kcp: KcpServer,
  variant: Variant,
  cert: ServingCert,
): Promise<Spawned> {
  const [port, healthPort, metricsPort] = freePorts(3) as [
    number,
    number,
    number,
  ];
  const kubeconfig = await kcp.kubeconfig("webhook", "root:dep-ctrl");
  const logFile = `${kcp.rootDir}/bench-webhook-${Date.now()}.log`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...denoFlags(variant.v8Flags),
      ...variant.denoFlags,
      `${variant.root}webhook.ts`,
      `--kubeconfig=${kubeconfig}`,
      `--tls-cert-dir=${cert.dir}`,
      `--webhook-bind-address=127.0.0.1:${port}`,
      `--health-probe-bind-address=127.0.0.1:${healthPort}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--log-level=info",
      ...variant.args,
    ],
    cwd: variant.root,
    env: variant.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const piped = Promise.all([
    appendTo(child.stdout, logFile),
    appendTo(child.stderr, logFile),
  ]);
  let exited = false;
  const status = child.status.then(() => exited = true);
  const spawned: Spawned = {
    pid: child.pid,
    url: `https://127.0.0.1:${port}/validate`,
    metricsPort,
    async stop() {
      if (!exited) await stopProcess(child);
      await status;
      await piped;
    },
  };
  try {
    await waitFor(`the webhook (${variant.label}) with its rule`, async () => {
      if (exited) {
        throw new Error(
          `the webhook exited: ${
            (await Deno.readTextFile(logFile)).slice(-2000)
          }`,
        );
      }
      const text = await (await fetch(
        `http://127.0.0.1:${metricsPort}/metrics`,
        { signal: AbortSignal.timeout(5000) },
      )).text();
      const valid = /^dependency_webhook_rules\{state="valid"\} (\d+)$/m
        .exec(text);
      return Number(valid?.[1] ?? 0) >= 1 || undefined;
    }, { timeoutMs: 60_000, intervalMs: 100 });
  } catch (error) {
    await spawned.stop();
    throw error;
  }
  return spawned;
}

/** A field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in MiB. */
function statusMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1];
  if (kb === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(kb) / 1024;
}

/** Samples a process's `VmRSS` every `intervalMs` until stopped; keeps the largest. */
class RssSampler {
  #max = 0;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(pid: number, intervalMs = 10) {
    const sample = () => {
      try {
        this.#max = Math.max(this.#max, statusMiB(pid, "VmRSS"));
      } catch {
        // the process is gone
      }
    };
    sample();
    this.#timer = setInterval(sample, intervalMs);
  }

  /** Stops sampling and returns the largest sample, MiB. */
  stop(): number {
    clearInterval(this.#timer);
    return this.#max;
  }
}

/** The V8 heap of a webhook from its metrics (MiB), or NaN where it has none. */
async function heapMiB(webhook: Spawned): Promise<Heap> {
  const text = await (await fetch(
    `http://127.0.0.1:${webhook.metricsPort}/metrics`,
    { signal: AbortSignal.timeout(5000) },
  )).text();
  const kind = (k: string) =>
    Number(
      new RegExp(`^deno_heap_bytes\\{kind="${k}"\\} (\\S+)$`, "m").exec(text)
        ?.[1] ?? NaN,
    ) / MIB;
  return {
    used: kind("used"),
    total: kind("total"),
    external: kind("external"),
  };
}

/** The V8 heap, MiB: in use, reserved, and outside it (array buffers). */
interface Heap {
  used: number;
  total: number;
  external: number;
}

type Counts = Record<AnswerKind, number>;

function noAnswers(): Counts {
  return Object.fromEntries(ANSWER_KINDS.map((k) => [k, 0])) as Counts;
}

/**
 * Sends `count` waves of `bodies` at once each, counting the answers into
 * `counts`; returns the process's `VmHWM` after each wave.
 */
async function waves(
  webhook: Spawned,
  client: Deno.HttpClient,
  bodies: readonly string[],
  count: number,
  counts: Counts,
  details: Set<string>,
): Promise<number[]> {
  const highWater: number[] = [];
  for (let wave = 0; wave < count; wave++) {
    const answers = await Promise.all(
      bodies.map((body) => sendReview(webhook.url, body, client)),
    );
    for (const answer of answers) {
      counts[answer.kind]++;
      if (answer.detail !== undefined && details.size < 5) {
        details.add(`${answer.kind}: ${answer.detail.slice(0, 300)}`);
      }
    }
    highWater.push(statusMiB(webhook.pid, "VmHWM"));
  }
  return highWater;
}

/** `object` with `spec.padding` making its JSON `bytes` long. */
function padded(object: LiveVpc, bytes: number): LiveVpc {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  const bare = { ...object, spec: { ...spec, padding: "" } };
  const fill = bytes - JSON.stringify(bare).length;
  return { ...object, spec: { ...spec, padding: "x".repeat(fill) } };
}

/** What one variant measured over the runs. */
interface VariantFigures {
  start: number[];
  peakA: number[];
  sampledA: number[];
  peakB: number[];
  sampledB: number[];
  peakAB: number[];
  wavesA: number[][];
  wavesB: number[][];
  idle: number[];
  heapAfterA: Heap[];
  heapAfterB: Heap[];
  heapIdle: Heap[];
  belowIdleTargetAfter: (number | undefined)[];
  answers: Record<"a" | "b" | "ab", Counts>;
  details: Set<string>;
}

/** One run of one variant: a fresh process for (a) then (b) then idle, another for (b). */
async function runOnce(
  kcp: KcpServer,
  variant: Variant,
  cert: ServingCert,
  bodies: { big: string[]; lists: string[] },
  figures: VariantFigures,
): Promise<void> {
  const client = Deno.createHttpClient({ caCerts: [cert.caPem] });
  try {
    const first = await startVariant(kcp, variant, cert);
    try {
      figures.start.push(statusMiB(first.pid, "VmRSS"));
      const sampler = new RssSampler(first.pid);
      figures.wavesA.push(
        await waves(
          first,
          client,
          bodies.big,
          BIG_WAVES,
          figures.answers.a,
          figures.details,
        ),
      );
      figures.sampledA.push(sampler.stop());
      figures.peakA.push(statusMiB(first.pid, "VmHWM"));
      figures.heapAfterA.push(await heapMiB(first));
      await waves(
        first,
        client,
        bodies.lists,
        LIST_WAVES,
        figures.answers.ab,
        figures.details,
      );
      figures.peakAB.push(statusMiB(first.pid, "VmHWM"));
      const idleFrom = performance.now();
      let below: number | undefined;
      while (performance.now() - idleFrom < IDLE_MS) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        if (
          below === undefined &&
          statusMiB(first.pid, "VmRSS") < IDLE_TARGET_MIB
        ) {
          below = (performance.now() - idleFrom) / 1000;
        }
      }
      figures.idle.push(statusMiB(first.pid, "VmRSS"));
      figures.belowIdleTargetAfter.push(below);
      figures.heapIdle.push(await heapMiB(first));
    } finally {
      await first.stop();
    }
    const second = await startVariant(kcp, variant, cert);
    try {
      const sampler = new RssSampler(second.pid);
      figures.wavesB.push(
        await waves(
          second,
          client,
          bodies.lists,
          LIST_WAVES,
          figures.answers.b,
          figures.details,
        ),
      );
      figures.sampledB.push(sampler.stop());
      figures.peakB.push(statusMiB(second.pid, "VmHWM"));
      figures.heapAfterB.push(await heapMiB(second));
    } finally {
      await second.stop();
    }
  } finally {
    client.close();
  }
}

function cell(values: readonly number[]): string {
  const finite = values.filter(Number.isFinite);
  return finite.length === 0 ? "n/a" : formatSpread(spread(finite), 0);
}

/** The median high-water mark after each wave. */
function wavesCell(runs: readonly number[][]): string {
  const count = Math.max(0, ...runs.map((r) => r.length));
  return `${
    Array.from(
      { length: count },
      (_, w) => median(runs.map((r) => r[w]!)).toFixed(0),
    ).join(", ")
  } (medians)`;
}

/** Medians of the heap's parts. */
function heapCell(heaps: readonly Heap[]): string {
  const part = (k: keyof Heap) => {
    const finite = heaps.map((h) => h[k]).filter(Number.isFinite);
    return finite.length === 0 ? "n/a" : median(finite).toFixed(0);
  };
  return `${part("used")} / ${part("total")} / ${part("external")} (medians)`;
}

function verdict(s: Spread, target: number, strict: boolean): string {
  const met = strict ? s.max < target : s.max <= target;
  return `${met ? "met" : "NOT met"} (largest ${s.max.toFixed(0)} MiB)`;
}

/**
 * Runs the memory scenarios `runs` times for each variant, side by side,
 * and prints the tables.
 */
export async function memoryBench(
  kcp: KcpServer,
  targets: MemoryTargets,
  options: { runs: number; variants: readonly Variant[] },
): Promise<void> {
  const { runs, variants } = options;
  const cert = await createServingCert(`${kcp.rootDir}/bench-webhook-tls`);
  const big = padded(targets.small, BIG_OBJECT_BYTES);
  const bodies = {
    big: Array.from({ length: BIG_REVIEWS }, () => deleteReview(big)),
    lists: Array.from(
      { length: LIST_REVIEWS },
      () => deleteReview(targets.large),
    ),
  };
  const figures = new Map<Variant, VariantFigures>(variants.map((v) => [v, {
    start: [],
    peakA: [],
    sampledA: [],
    peakB: [],
    sampledB: [],
    peakAB: [],
    wavesA: [],
    wavesB: [],
    idle: [],
    heapAfterA: [],
    heapAfterB: [],
    heapIdle: [],
    belowIdleTargetAfter: [],
    answers: { a: noAnswers(), b: noAnswers(), ab: noAnswers() },
    details: new Set<string>(),
  }]));
  console.log(
    `\nMemory: ${runs} runs of ${variants.length} variant(s); review bodies of (a): ${
      (bodies.big[0]!.length / MIB).toFixed(2)
    } MiB`,
  );
  for (let run = 0; run < runs; run++) {
    for (const variant of variants) {
      const t0 = performance.now();
      await runOnce(kcp, variant, cert, bodies, figures.get(variant)!);
      console.log(
        `   run ${run + 1}/${runs} ${variant.label}: ${
          ((performance.now() - t0) / 1000).toFixed(0)
        } s`,
      );
    }
  }
  printFigures(variants, figures, runs);
}

function printFigures(
  variants: readonly Variant[],
  figures: Map<Variant, VariantFigures>,
  runs: number,
): void {
  console.log(
    `\nWebhook resident memory, MiB, min / median / max over ${runs} runs (fresh process each)`,
  );
  console.log(
    `   (a) ${BIG_WAVES} waves of ${BIG_REVIEWS} reviews at once, oldObject ${
      (BIG_OBJECT_BYTES / MIB).toFixed(1)
    } MiB, protected type, 1 dependent`,
  );
  console.log(
    `   (b) ${LIST_WAVES} waves of ${LIST_REVIEWS} reviews at once, 10 000 dependents`,
  );
  console.log(
    `   (c) ${IDLE_MS / 1000} s idle after (a) then (b) on one process`,
  );
  console.log(
    "   peak = VmHWM of the process; sampled = largest VmRSS read every 10 ms",
  );
  for (const variant of variants) {
    const f = figures.get(variant)!;
    console.log(`\n   ${variant.label}`);
    const rows: [string, string][] = [
      ["ready, before any review", cell(f.start)],
      ["(a) peak", cell(f.peakA)],
      ["(a) sampled", cell(f.sampledA)],
      ["(a) VmHWM after each wave", wavesCell(f.wavesA)],
      ["(b) peak", cell(f.peakB)],
      ["(b) sampled", cell(f.sampledB)],
      ["(b) VmHWM after each wave", wavesCell(f.wavesB)],
      ["(a) then (b): peak", cell(f.peakAB)],
      [`(c) after ${IDLE_MS / 1000} s idle`, cell(f.idle)],
      ["V8 heap used/total/external:", ""],
      ["  right after (a)", heapCell(f.heapAfterA)],
      ["  right after (b)", heapCell(f.heapAfterB)],
      ["  (c) after idle", heapCell(f.heapIdle)],
      [
        `(c) under ${IDLE_TARGET_MIB} MiB after (s)`,
        f.belowIdleTargetAfter.map((s) =>
          s === undefined ? "never" : s.toFixed(1)
        ).join(", "),
      ],
    ];
    for (const [name, value] of rows) {
      console.log(`   ${name.padEnd(30)} | ${value}`);
    }
    console.log(
      `   ${"answers".padEnd(30)} | ${
        ANSWER_KINDS.map((k) => k.padStart(12)).join(" ")
      }`,
    );
    for (
      const [name, counts] of [
        ["(a)", f.answers.a],
        ["(b)", f.answers.b],
        ["(b) after (a), before (c)", f.answers.ab],
      ] as const
    ) {
      console.log(
        `   ${name.padEnd(30)} | ${
          ANSWER_KINDS.map((k) => String(counts[k]).padStart(12)).join(" ")
        }`,
      );
    }
    for (const detail of f.details) console.log(`   e.g. ${detail}`);
    console.log(
      `   targets: (a) peak <= ${PEAK_TARGET_MIB} MiB: ${
        verdict(spread(f.peakA), PEAK_TARGET_MIB, false)
      }; (b) peak <= ${PEAK_TARGET_MIB} MiB: ${
        verdict(spread(f.peakB), PEAK_TARGET_MIB, false)
      }; (c) idle < ${IDLE_TARGET_MIB} MiB within ${IDLE_MS / 1000} s: ${
        verdict(spread(f.idle), IDLE_TARGET_MIB, true)
      }`,
    );
  }
}
