/**
 * What the controller scale bench reports (see `controller_scale.ts`): one
 * line per cold start and per floor run, and the min / median / max of
 * every figure over the rounds.
 *
 * @module
 */
import { formatSpread, spread } from "./_stats.ts";
import {
  formatCounts,
  type RequestCounts,
  totalOf,
  WRITE_VERBS,
} from "./_scale_metrics.ts";

/** The controller's writes as its metrics count them. */
export interface WriteCounts {
  statuses: number;
  statusErrors: number;
  configurations: number;
  configurationErrors: number;
  resolves: number;
}

/** One cold start. */
export interface ControllerRound {
  seconds: number;
  /** When its watches were first synced (`dependency_controller_synced`), s after the spawn. */
  syncedAt: number;
  /** When its metrics first counted a write, s after the spawn. */
  firstWriteAt: number;
  passes: number;
  cpuSeconds: number;
  /** The part of `cpuSeconds` of the main thread, where JavaScript runs. */
  mainThreadCpuSeconds: number;
  /** CPU time by thread name, of the threads still running at convergence. */
  threadCpuSeconds: Map<string, number>;
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
export interface FloorResult {
  seconds: number;
  cpuSeconds: number;
  configurations: number;
  statuses: number;
  kcpCpuSeconds: number;
  kcpRequests: RequestCounts | undefined;
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

/** One cold start, on one line. */
export function describeController(c: ControllerRound): string {
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

/** One floor run, on one line. */
export function describeFloor(f: FloorResult): string {
  return [
    `${f.seconds.toFixed(1)} s (kcp CPU ${f.kcpCpuSeconds.toFixed(1)} s`,
    `kcp saw ${kcpWrites(f.kcpRequests)})`,
  ].join(", ");
}

/** The runs of one `--max-writes-in-flight` setting. */
export interface Results {
  controller: ControllerRound[];
  floor: FloorResult[];
  direct: FloorResult[];
}

/** The min / median / max of every figure over the rounds of one setting. */
export function printSummary(
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
    "  of which the main (JavaScript) thread",
    controller.map((c) => c.mainThreadCpuSeconds),
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
  const threads = controller.at(-1)?.threadCpuSeconds;
  if (threads !== undefined) {
    const shown = [...threads].sort((a, b) => b[1] - a[1])
      .map(([name, seconds]) => `${name} ${seconds.toFixed(2)}`);
    console.log(
      `      controller CPU by thread name in the last run, s: ${
        shown.join(", ")
      }`,
    );
  }
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
