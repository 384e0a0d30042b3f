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
 * its main thread's CPU time, the largest number of writes in flight it
 * reported (sampled every 200 ms from its metrics, whose CPU cost is
 * estimated and shown), and its writes from
 * `dependency_controller_writes_total` (at convergence and again after a
 * quiet second, to catch late ones). In
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
  kcpRequests,
  peakRssMb,
  type RequestCounts,
  sumOf,
  threadCpuSeconds,
} from "./_scale_metrics.ts";
import {
  type ControllerRound,
  describeController,
  describeFloor,
  type FloorResult,
  printSummary,
  type Results,
  type WriteCounts,
} from "./_scale_report.ts";

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
  /**
   * A directory where each cold start's controller writes a V8 tick log
   * (`controller-r<round>-w<writes in flight>.v8.log`, read with
   * `node --prof-process <file>`), through `DENO_V8_FLAGS`; the profiler
   * costs CPU, so the figures of such a run are not comparable.
   * @default {no profile}
   */
  profileDir?: string;
}

/**
 * How often the bench reads the controller's metrics while it starts: often
 * enough to time convergence to a fraction of a second, seldom enough that
 * serving the bench is not a sizeable part of the CPU measured (a scrape
 * every 50 ms cost the controller about a third of a second per start;
 * Prometheus scrapes every 15 s or so).
 */
const SCRAPE_INTERVAL_MS = 200;
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
  options: { total: number; writesInFlight: number; profile?: string },
): Promise<ControllerRound> {
  const { total } = options;
  const kcpBefore = await kcpMark(kcp);
  const started = performance.now();
  const controller = await withV8Flags(
    options.profile === undefined ? [] : [
      "--prof",
      "--no-logfile-per-isolate",
      `--logfile=${options.profile}`,
    ],
    () =>
      startController(kcp, {
        webhook,
        args: [
          "--log-level=info",
          `--max-writes-in-flight=${options.writesInFlight}`,
        ],
        waitReady: false,
      }),
  );
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
    const threads = await threadCpuSeconds(controller.pid);
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
      mainThreadCpuSeconds: threads.main,
      threadCpuSeconds: threads.byName,
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

/**
 * Runs `spawn` with `flags` added to `DENO_V8_FLAGS`, which the processes
 * it starts read at their start, and restores the variable after it.
 */
async function withV8Flags<T>(
  flags: readonly string[],
  spawn: () => Promise<T>,
): Promise<T> {
  if (flags.length === 0) return await spawn();
  const before = Deno.env.get("DENO_V8_FLAGS");
  Deno.env.set(
    "DENO_V8_FLAGS",
    [...(before === undefined ? [] : [before]), ...flags].join(","),
  );
  try {
    return await spawn();
  } finally {
    if (before === undefined) Deno.env.delete("DENO_V8_FLAGS");
    else Deno.env.set("DENO_V8_FLAGS", before);
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
    profileDir: options.profileDir ?? "",
  };
  if (settings.profileDir !== "") {
    // Absolute: the controller runs in the project's root directory.
    await Deno.mkdir(settings.profileDir, { recursive: true });
    settings.profileDir = await Deno.realPath(settings.profileDir);
  }
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
        const steps: ("controller" | "floor" | "direct")[] = [
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
                ...(settings.profileDir === "" ? {} : {
                  profile: `${settings.profileDir}/controller-r${
                    round + 1
                  }-w${concurrency}.v8.log`,
                }),
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
