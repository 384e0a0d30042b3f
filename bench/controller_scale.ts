/**
 * The controller's cold start at scale, on a real kcp: 2 000 DependencyRules
 * protecting types in 200 provider workspaces (10 each), each provider
 * exporting its types in an APIExport of its own (see
 * `_scale_fixtures.ts`), against a floor measured beside it.
 *
 * Each round starts the controller as its own process with no webhook
 * configuration and no rule status in kcp, and measures from the spawn
 * until every rule is `Ready=True/Enforced` and no write is pending: the
 * time, the passes, the CPU time and peak resident memory of the process,
 * the largest number of writes in flight it reported (sampled every 50 ms
 * from its metrics, whose CPU cost is estimated and shown), and its writes from `dependency_controller_writes_total`
 * (at convergence and again after a quiet second, to catch late ones). In
 * the same round, the floor (`_scale_floor.ts`) makes the same writes as a
 * bare client with the same concurrency; the rounds alternate which goes
 * first (`directFloor`: also the same writes straight to the workspaces).
 * Before each run the configurations are deleted and the statuses cleared.
 * Beside each run, kcp's CPU time and its own count of the requests it
 * served (`apiserver_request_total`, by verb and resource).
 *
 * @module
 */
import {
  type ComponentProcess,
  type KcpServer,
  sample,
  startController,
  startWebhook,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";
import { formatSpread, spread } from "./_stats.ts";
import {
  captureWrites,
  checkWrites,
  floorRound,
  type FloorRoute,
  type Writes,
} from "./_scale_floor.ts";
import { resetScale, type ScaleSetup, setUpScale } from "./_scale_fixtures.ts";
import {
  countsSince,
  cpuSeconds,
  formatCounts,
  kcpRequests,
  peakRssMb,
  type RequestCounts,
  sumOf,
  totalOf,
  WRITE_VERBS,
} from "./_scale_metrics.ts";

/** The scale of the figure, as the issue sets it. */
export interface ScaleOptions {
  /** Provider workspaces. @default {200} */
  providers?: number;
  /** Rules per provider. @default {10} */
  rulesPerProvider?: number;
  /** Rounds measured (each: a controller cold start and a floor). @default {3} */
  rounds?: number;
  /**
   * `--max-writes-in-flight` values to compare, each cold-started (and its
   * floor run at that concurrency) in every round. @default {[8]}
   */
  writesInFlight?: number[];
  /**
   * Also run, in every round, the floor's writes straight to the
   * workspaces as kcp-admin, past the virtual workspace. @default {false}
   */
  directFloor?: boolean;
}

/** The controller's writes as its metrics count them. */
interface WriteCounts {
  statuses: number;
  statusErrors: number;
  configurations: number;
  configurationErrors: number;
  resolves: number;
}

/** One cold start. */
interface ControllerRound {
  seconds: number;
  /** When its watches were first synced (`dependency_controller_synced`), s after the spawn. */
  syncedAt: number;
  /** When its metrics first counted a write, s after the spawn. */
  firstWriteAt: number;
  passes: number;
  cpuSeconds: number;
  /**
   * The part of `cpuSeconds` the bench's own metrics scrapes cost: the
   * scrapes made, times the CPU of one (measured after convergence).
   */
  scrapeCpuSeconds: number;
  peakRssMb: number;
  peakInFlight: number;
  /** At convergence. */
  writes: WriteCounts;
  /** Writes made after convergence, within a quiet second. */
  lateWrites: number;
  kcpCpuSeconds: number;
  kcpRequests: RequestCounts | undefined;
}

/** One floor run, with kcp's side. */
interface FloorResult {
  seconds: number;
  cpuSeconds: number;
  configurations: number;
  statuses: number;
  kcpCpuSeconds: number;
  kcpRequests: RequestCounts | undefined;
}

/** How often the bench reads the controller's metrics while it starts. */
const SCRAPE_INTERVAL_MS = 50;
/** How many scrapes measure what one costs the controller. */
const COST_SCRAPES = 100;

/** The controller's CPU time for one metrics scrape, seconds. */
async function scrapeCost(controller: ComponentProcess): Promise<number> {
  const before = await cpuSeconds(controller.pid);
  for (let i = 0; i < COST_SCRAPES; i++) {
    await controller.get(controller.metricsPort, "/metrics");
  }
  return (await cpuSeconds(controller.pid) - before) / COST_SCRAPES;
}

/** How long after convergence the controller's writes are counted again. */
const QUIET_MS = 1_000;
/** How long after a reset the next run starts (kcp and the webhook settle). */
const AFTER_RESET_MS = 2_000;

const WRITES = "dependency_controller_writes_total";

function writeCounts(text: string): WriteCounts {
  const of = (kind: string, result: string) =>
    sumOf(text, WRITES, { kind, result });
  return {
    statuses: of("status", "success"),
    statusErrors: of("status", "error"),
    configurations: of("configuration", "success"),
    configurationErrors: of("configuration", "error"),
    resolves: of("resolve", "success") + of("resolve", "error"),
  };
}

function writesOf(w: WriteCounts): number {
  return w.statuses + w.statusErrors + w.configurations + w.configurationErrors;
}

/** kcp's request counts now, and its CPU time. */
async function kcpMark(
  kcp: KcpServer,
): Promise<{ requests: RequestCounts | undefined; cpu: number }> {
  return {
    requests: await kcpRequests(kcp),
    cpu: kcp.pid === undefined ? 0 : await cpuSeconds(kcp.pid),
  };
}

async function kcpSince(
  kcp: KcpServer,
  before: { requests: RequestCounts | undefined; cpu: number },
): Promise<{ requests: RequestCounts | undefined; cpu: number }> {
  const cpu = kcp.pid === undefined ? 0 : await cpuSeconds(kcp.pid);
  const requests = await kcpRequests(kcp);
  return {
    cpu: cpu - before.cpu,
    requests: requests === undefined || before.requests === undefined
      ? undefined
      : countsSince(before.requests, requests),
  };
}

async function coldStart(
  kcp: KcpServer,
  webhook: WebhookProcess,
  options: { total: number; writesInFlight: number },
): Promise<ControllerRound> {
  const { total } = options;
  const kcpBefore = await kcpMark(kcp);
  const started = performance.now();
  const controller = await startController(kcp, {
    webhook,
    args: [
      "--log-level=info",
      `--max-writes-in-flight=${options.writesInFlight}`,
    ],
    waitReady: false,
  });
  let peakInFlight = 0;
  let scrapes = 0;
  let syncedAt: number | undefined;
  let firstWriteAt: number | undefined;
  let last = "";
  let converged: { seconds: number; text: string } | undefined;
  try {
    await waitFor("the controller to converge", async () => {
      let text: string;
      try {
        text = (await controller.get(controller.metricsPort, "/metrics")).text;
      } catch {
        return undefined; // not listening yet
      }
      last = text;
      scrapes++;
      const now = (performance.now() - started) / 1000;
      if (sample(text, "dependency_controller_synced") === 1) syncedAt ??= now;
      if (writesOf(writeCounts(text)) > 0) firstWriteAt ??= now;
      peakInFlight = Math.max(
        peakInFlight,
        sample(text, "dependency_controller_writes_in_flight") ?? 0,
      );
      const enforced = sumOf(text, "dependency_controller_rules", {
        status: "True",
        reason: "Enforced",
      });
      const pending = sample(text, "dependency_controller_pending_writes") ??
        0;
      if (enforced !== total || pending !== 0) return undefined;
      converged = { seconds: (performance.now() - started) / 1000, text };
      return true;
    }, {
      timeoutMs: Math.max(120_000, total * 300),
      intervalMs: SCRAPE_INTERVAL_MS,
    });
  } catch (error) {
    const states = last.split("\n").filter((l) =>
      l.startsWith("dependency_controller_rules{") ||
      l.startsWith(`${WRITES}{`)
    );
    await controller.stop();
    throw new Error(
      `${error}\nlast metrics:\n${states.join("\n")}\nlog tail:\n${
        (await controller.log()).slice(-3000)
      }`,
    );
  }
  try {
    const cpu = await cpuSeconds(controller.pid);
    const rss = await peakRssMb(controller.pid);
    const kcpSide = await kcpSince(kcp, kcpBefore);
    const writes = writeCounts(converged!.text);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    const after = writeCounts(
      (await controller.get(controller.metricsPort, "/metrics")).text,
    );
    return {
      scrapeCpuSeconds: scrapes * await scrapeCost(controller),
      seconds: converged!.seconds,
      syncedAt: syncedAt ?? converged!.seconds,
      firstWriteAt: firstWriteAt ?? converged!.seconds,
      passes: sumOf(converged!.text, "dependency_controller_reconciles_total", {
        result: "synced",
      }),
      cpuSeconds: cpu,
      peakRssMb: rss,
      peakInFlight,
      writes,
      lateWrites: writesOf(after) - writesOf(writes),
      kcpCpuSeconds: kcpSide.cpu,
      kcpRequests: kcpSide.requests,
    };
  } finally {
    await controller.stop();
  }
}

async function floor(
  kcp: KcpServer,
  setup: ScaleSetup,
  writes: Writes,
  options: { concurrency: number; route: FloorRoute },
): Promise<FloorResult> {
  const kcpBefore = await kcpMark(kcp);
  const result = await floorRound(kcp, setup, writes, options);
  const kcpSide = await kcpSince(kcp, kcpBefore);
  return {
    ...result,
    kcpCpuSeconds: kcpSide.cpu,
    kcpRequests: kcpSide.requests,
  };
}

/**
 * Writes kcp counted (POST, PUT, PATCH, DELETE; access reviews, which are
 * POSTs, apart), or "?" when unread.
 */
function kcpWrites(counts: RequestCounts | undefined): string {
  if (counts === undefined) return "?";
  const reviews = reviewsOf(counts);
  return `${
    totalOf(counts, (verb) => WRITE_VERBS.has(verb)) - reviews
  } writes, ${reviews} access reviews`;
}

/** SubjectAccessReviews (and other reviews) kcp counted. */
function reviewsOf(counts: RequestCounts): number {
  let reviews = 0;
  for (const [key, value] of counts) {
    if (/^POST \S*reviews$/.test(key)) reviews += value;
  }
  return reviews;
}

function describeController(c: ControllerRound): string {
  const w = c.writes;
  const failed = w.statusErrors + w.configurationErrors;
  return [
    `${c.seconds.toFixed(1)} s (first write at ${c.firstWriteAt.toFixed(1)} s`,
    `CPU ${c.cpuSeconds.toFixed(1)} s`,
    `${c.passes} passes`,
    `${w.statuses} statuses + ${w.configurations} configurations` +
    (failed > 0 ? ` + ${failed} failed` : "") +
    (c.lateWrites > 0 ? ` + ${c.lateWrites} after convergence` : ""),
    `kcp CPU ${c.kcpCpuSeconds.toFixed(1)} s`,
    `kcp saw ${kcpWrites(c.kcpRequests)})`,
  ].join(", ");
}

function describeFloor(f: FloorResult): string {
  return [
    `${f.seconds.toFixed(1)} s (kcp CPU ${f.kcpCpuSeconds.toFixed(1)} s`,
    `kcp saw ${kcpWrites(f.kcpRequests)})`,
  ].join(", ");
}

/** Sets up the providers and rules on `kcp` and prints the cold-start figures. */
export async function controllerScaleBench(
  kcp: KcpServer,
  options: ScaleOptions = {},
): Promise<void> {
  const settings: Required<ScaleOptions> = {
    providers: options.providers ?? 200,
    rulesPerProvider: options.rulesPerProvider ?? 10,
    rounds: options.rounds ?? 3,
    writesInFlight: options.writesInFlight ?? [8],
    directFloor: options.directFloor ?? false,
  };
  const total = settings.providers * settings.rulesPerProvider;
  const t0 = performance.now();
  const setup = await setUpScale(kcp, settings);
  console.log(
    `\nController cold start: ${total} rules over ${settings.providers} provider workspaces, each with its own APIExport (set up in ${
      ((performance.now() - t0) / 1000).toFixed(0)
    } s)`,
  );
  console.log(
    "   floor: the same writes by a bare client (one webhook configuration create per provider, one status merge-patch per rule), through the dep-ctrl virtual workspace as the controller's identity, as many at once as --max-writes-in-flight",
  );
  if (settings.directFloor) {
    console.log(
      "   direct floor: the same writes straight to the workspaces as kcp-admin",
    );
  }
  const webhook = await startWebhook(kcp, { args: ["--log-level=info"] });
  const results = new Map<number, Results>(
    settings.writesInFlight.map((
      n,
    ) => [n, { controller: [], floor: [], direct: [] }]),
  );
  let writes: Writes | undefined;
  let fresh = true;
  const prepare = async () => {
    if (!fresh) {
      await resetScale(kcp, setup);
      await new Promise((resolve) => setTimeout(resolve, AFTER_RESET_MS));
    }
    fresh = false;
  };
  try {
    for (let round = 0; round < settings.rounds; round++) {
      for (const concurrency of settings.writesInFlight) {
        const into = results.get(concurrency)!;
        // The first run is the controller's: the floors replay its writes.
        // Then the order alternates, so neither always runs on a kcp the
        // other has just loaded.
        const steps: Step[] = [
          "controller",
          "floor",
          ...(settings.directFloor ? ["direct" as const] : []),
        ];
        if (round % 2 === 1) steps.reverse();
        for (const step of steps) {
          await prepare();
          if (step === "controller") {
            into.controller.push(
              await coldStart(kcp, webhook, {
                total,
                writesInFlight: concurrency,
              }),
            );
            const written = await captureWrites(kcp, setup);
            checkWrites(written, setup);
            writes ??= written;
          } else {
            into[step].push(
              await floor(kcp, setup, writes!, {
                concurrency,
                route: step === "direct" ? "direct" : "virtual-workspace",
              }),
            );
          }
        }
        const c = into.controller.at(-1)!;
        const f = into.floor.at(-1)!;
        const d = into.direct.at(-1);
        console.log(
          `   round ${round + 1}, --max-writes-in-flight=${concurrency}: ` +
            `controller ${describeController(c)} / floor ${
              describeFloor(f)
            } = ${(c.seconds / f.seconds).toFixed(2)}${
              d === undefined ? "" : `; direct floor ${describeFloor(d)}`
            }`,
        );
      }
    }
  } finally {
    await webhook.stop();
  }
  for (const [concurrency, r] of results) {
    printSummary(r, { ...settings, total, concurrency });
  }
}

/** The runs of one `--max-writes-in-flight` setting. */
interface Results {
  controller: ControllerRound[];
  floor: FloorResult[];
  direct: FloorResult[];
}

type Step = "controller" | "floor" | "direct";

function printSummary(
  { controller, floor, direct }: Results,
  options: {
    rounds: number;
    providers: number;
    total: number;
    concurrency: number;
  },
): void {
  const row = (name: string, values: number[], digits = 1, note = "") =>
    console.log(
      `      ${name.padEnd(38)} ${formatSpread(spread(values), digits)}${note}`,
    );
  const ratios = controller.map((c, i) => c.seconds / floor[i]!.seconds);
  console.log(
    `   min / median / max over ${options.rounds} rounds (controller: spawn to every rule Ready=True/Enforced, nothing pending; floor: first write to last answer)`,
  );
  console.log(`   --max-writes-in-flight=${options.concurrency}`);
  row("controller, s", controller.map((c) => c.seconds));
  row("  of which: watches synced at, s", controller.map((c) => c.syncedAt));
  row("  first write answered at, s", controller.map((c) => c.firstWriteAt));
  row("floor, s", floor.map((f) => f.seconds));
  row(
    "ratio controller / floor",
    ratios,
    2,
    `   per round: ${
      ratios.map((r) => r.toFixed(2)).join(", ")
    } (target <= 1.2)`,
  );
  row(
    "ratio from its first write / floor",
    controller.map((c, i) => (c.seconds - c.firstWriteAt) / floor[i]!.seconds),
    2,
  );
  if (direct.length > 0) row("direct floor, s", direct.map((d) => d.seconds));
  row(
    "controller CPU, s",
    controller.map((c) => c.cpuSeconds),
    1,
    "   (target <= 5)",
  );
  row(
    "  of which the bench's scrapes (est.)",
    controller.map((c) => c.scrapeCpuSeconds),
    2,
  );
  row("floor client CPU, s", floor.map((f) => f.cpuSeconds), 2);
  row(
    "status writes per rule",
    controller.map((c) =>
      (c.writes.statuses + c.writes.statusErrors) / options.total
    ),
    2,
    "   (at most 1)",
  );
  row(
    "configuration writes per provider",
    controller.map((c) =>
      (c.writes.configurations + c.writes.configurationErrors) /
      options.providers
    ),
    2,
    "   (at most 1)",
  );
  row(
    "failed writes",
    controller.map((c) => c.writes.statusErrors + c.writes.configurationErrors),
    0,
  );
  row("writes after convergence", controller.map((c) => c.lateWrites), 0);
  row(
    "path resolutions per provider",
    controller.map((c) => c.writes.resolves / options.providers),
    2,
  );
  row("kcp CPU in controller run, s", controller.map((c) => c.kcpCpuSeconds));
  row("kcp CPU in floor run, s", floor.map((f) => f.kcpCpuSeconds));
  if (direct.length > 0) {
    row("kcp CPU in direct floor run, s", direct.map((d) => d.kcpCpuSeconds));
  }
  row("reconcile passes", controller.map((c) => c.passes), 0);
  row("controller peak RSS, MB", controller.map((c) => c.peakRssMb), 0);
  row("peak writes in flight", controller.map((c) => c.peakInFlight), 0);
  const last: [string, RequestCounts | undefined][] = [
    ["controller run", controller.at(-1)?.kcpRequests],
    ["floor run", floor.at(-1)?.kcpRequests],
    ["direct floor run", direct.at(-1)?.kcpRequests],
  ];
  for (const [name, counts] of last) {
    if (counts === undefined) continue;
    console.log(
      `      requests kcp served in the last ${name}: ${formatCounts(counts)}`,
    );
  }
}
