/**
 * `deno task bench index-memory [--sizes=100000,1000000] [--rounds=3]`:
 * what the dependents index keeps in memory, fed from synthetic watch
 * events (no kcp: the events kcp would send, generated one at a time and
 * dropped once applied).
 *
 * Each round of each size runs in a fresh process with the webhook's glibc
 * tunables and a V8 old space large enough for the biggest size, feeds
 * that many `ADDED` events of VirtualMachines (one reference each, to their
 * own VPC) into one {@linkcode DependentsIndex} with the fixture rule's
 * path, and reports, after a full collection: the V8 heap the index holds
 * (`heapUsed` after, less before), the process's `VmRSS` and `VmHWM`, and
 * how long the feeding took. Two shapes: 1 000 clusters of 5 namespaces
 * (tenants with many objects each), and the worst case, every dependent in
 * its own cluster (nothing to share).
 *
 * @module
 */
import { DependentsIndex } from "../lib/dependents/mod.ts";
import { parseFieldPath } from "../lib/rules/mod.ts";
import { formatSpread, spread } from "./_stats.ts";

const MIB = 1024 * 1024;

/** What one child process measured. */
interface Measured {
  /** V8 heap the index holds, MiB. */
  heapMiB: number;
  /** Resident set after, MiB. */
  rssMiB: number;
  /** Peak resident set, MiB. */
  hwmMiB: number;
  /** Feeding time, ms. */
  feedMs: number;
}

type Shape = "shared" | "own";

/** A watch event of VirtualMachine `i` as kcp sends it, with one reference. */
function event(i: number, shape: Shape): unknown {
  const cluster = shape === "shared"
    ? `2abcdef${String(i % 1000).padStart(9, "0")}`
    : `2${i.toString(36).padStart(15, "0")}`;
  return {
    type: "ADDED",
    object: {
      apiVersion: "compute.example.com/v1alpha1",
      kind: "VirtualMachine",
      metadata: {
        name: `vm-${i}`,
        namespace: `ns-${i % 5}`,
        uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        resourceVersion: String(1_000_000 + i),
        creationTimestamp: "2026-11-29T12:00:00Z",
        annotations: { "kcp.io/cluster": cluster },
      },
      spec: { vpcRef: { name: `vpc-${i}` }, cpu: 2, memory: "4Gi" },
    },
  };
}

function statusMiB(field: string): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1]) /
    1024;
}

/** The child: feeds `count` events of `shape` and prints what it measured. */
function child(count: number, shape: Shape): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with --v8-flags=--expose-gc");
  gc();
  const before = Deno.memoryUsage().heapUsed;
  const index = new DependentsIndex([{
    fieldPath: parseFieldPath(".spec.vpcRef.name"),
  }], { maxDependents: count });
  const t0 = performance.now();
  index.startResync("shard");
  index.finishResync("shard", "1000000");
  for (let i = 0; i < count; i++) {
    index.apply("shard", event(i, shape) as never);
  }
  const feedMs = performance.now() - t0;
  if (index.size !== count || index.overflowed) {
    throw new Error(`kept ${index.size} of ${count}`);
  }
  gc();
  const measured: Measured = {
    heapMiB: (Deno.memoryUsage().heapUsed - before) / MIB,
    rssMiB: statusMiB("VmRSS"),
    hwmMiB: statusMiB("VmHWM"),
    feedMs,
  };
  console.log(JSON.stringify(measured));
  // Keeps the index alive up to the measurement.
  if (index.size < 0) console.log(index.size);
}

async function runChild(count: number, shape: Shape): Promise<Measured> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--v8-flags=--expose-gc,--max-old-space-size=2048",
      new URL(import.meta.url).pathname,
      `--child=${count}`,
      `--shape=${shape}`,
    ],
    env: {
      GLIBC_TUNABLES:
        "glibc.malloc.mmap_threshold=32768:glibc.malloc.arena_max=2",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(
      `child failed: ${new TextDecoder().decode(out.stderr).slice(-2000)}`,
    );
  }
  return JSON.parse(text.split("\n").at(-1)!) as Measured;
}

/** The bench: every size and shape, `rounds` fresh processes each. */
export async function indexMemoryBench(args: readonly string[]): Promise<void> {
  const sizes = (args.find((a) => a.startsWith("--sizes="))?.slice(8) ??
    "100000,1000000").split(",").map(Number);
  const rounds = Number(
    args.find((a) => a.startsWith("--rounds="))?.slice(9) ?? 3,
  );
  console.log(
    `The dependents index fed from synthetic watch events, one reference each; ${rounds} fresh processes per row; min / median / max`,
  );
  console.log(
    "dependents | clusters | index heap MiB | per 100 000 MiB | VmRSS MiB | VmHWM MiB | feed s",
  );
  for (const shape of ["shared", "own"] as const) {
    for (const size of sizes) {
      const runs: Measured[] = [];
      for (let r = 0; r < rounds; r++) runs.push(await runChild(size, shape));
      const f = (pick: (m: Measured) => number, digits = 1) =>
        formatSpread(spread(runs.map(pick)), digits);
      console.log(
        `${size} | ${
          shape === "shared" ? "1 000 x 5 namespaces" : "one each"
        } | ${f((m) => m.heapMiB)} | ${
          f((m) => m.heapMiB / size * 100_000)
        } | ${f((m) => m.rssMiB)} | ${f((m) => m.hwmMiB)} | ${
          f((m) => m.feedMs / 1000, 2)
        }`,
      );
    }
  }
}

if (import.meta.main) {
  const count = Deno.args.find((a) => a.startsWith("--child="));
  if (count !== undefined) {
    const shape = Deno.args.find((a) => a.startsWith("--shape="))?.slice(8);
    child(Number(count.slice(8)), shape === "own" ? "own" : "shared");
  } else {
    await indexMemoryBench(Deno.args);
  }
}
