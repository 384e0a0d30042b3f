/**
 * The webhook's fast path (a DELETE review of a type no rule protects,
 * parsed and allowed without reading kcp) against a controller-runtime
 * webhook that allows every review, side by side in one run.
 *
 * Both servers share one CPU; the load generator runs on another, so it is
 * not what limits the figures (its own CPU use is printed to show it). The
 * peer and the load generator are one Go binary, `bench/crpeer`, built into
 * the per-user cache the first time (`go` on PATH; a cold build takes
 * minutes). Needs Linux, `taskset` (util-linux) and at least two CPUs.
 *
 * Run directly, it checks the harness without kcp and measures the floors:
 * the peer against `_echo_server.ts`, a bare `Deno.serve` and a bare
 * `node:https` TLS server answering a fixed review.
 *
 * ```sh
 * deno run --allow-all bench/fast_path.ts
 * ```
 *
 * @module
 */
import {
  createServingCert,
  freePorts,
  pathExists,
  runCommand,
  stopProcess,
} from "../testing/mod.ts";
import { formatSpread, median, spread } from "./_stats.ts";
import { deleteReview, type LiveVpc } from "./_webhook_fixtures.ts";

/** The Go module of the peer webhook and the load generator. */
const CRPEER_DIR = new URL("./crpeer/", import.meta.url).pathname;

/** The webhook under test, already serving. */
export interface FastPathTarget {
  /** Where to POST reviews, e.g. `https://127.0.0.1:PORT/validate`. */
  url: string;
  /** Its certificate directory (`tls.crt`, `tls.key`); the peer serves the same. */
  certDir: string;
  /** The CA certificate that signed it, PEM. */
  caPem: string;
  /** The AdmissionReview every request carries, as JSON text. */
  body: string;
  /**
   * Its process id. When given, all its threads are pinned to the peer's
   * CPU for the comparison and get their own affinity back afterwards, and
   * its CPU use is measured.
   */
  pid?: number;
}

/** Options for {@linkcode fastPathComparison}. */
export interface FastPathOptions {
  /** Rounds, each measuring both servers once, in alternating order. @default {3} */
  rounds?: number;
  /** Measured seconds per server and round. @default {5} */
  seconds?: number;
  /** Seconds of load before each measurement, not counted. @default {1} */
  warmupSeconds?: number;
  /** Keep-alive connections, one request in flight on each. @default {16} */
  connections?: number;
  /** How the figures name the target. @default {"webhook"} */
  label?: string;
}

/** What the load generator reports for one server in one round. */
export interface LoadReport {
  /** The URL it sent to. */
  url: string;
  /** Keep-alive connections. */
  connections: number;
  /** The measured window, seconds. */
  seconds: number;
  /** Requests measured in the window. */
  requests: number;
  /** Requests per second in the window. */
  requestsPerSecond: number;
  /** Latency percentiles, ms. */
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** Answers that were not 200 with `"allowed":true`, warm-up included. */
  failures: number;
  /** The first of them. */
  firstFailure?: string;
  /** Connections opened again after one was closed. */
  reconnects: number;
  /** The load generator's CPU time per second of the window. */
  loadCpu: number;
  /** The server's CPU time per second of the window, when its pid is known. */
  serverCpu?: number;
}

/** The figures of {@linkcode fastPathComparison}. */
export interface FastPathResult {
  /** The target's name in the figures. */
  label: string;
  /** The peer's name, with the controller-runtime version. */
  peerLabel: string;
  /** The target's report per round. */
  ours: LoadReport[];
  /** The peer's report per round. */
  peer: LoadReport[];
  /** Median requests/s of the target over the peer's. */
  ratio: number;
}

/**
 * Measures the fast path of `target` against controller-runtime's
 * `admission.Webhook` with a handler that allows everything, served by
 * controller-runtime's webhook server with the same certificate. Both
 * servers are pinned to the first CPU this process may use (`taskset`; the
 * target only when its pid is given) and the load generator to the second.
 * The two are measured in alternating order over `rounds` rounds; prints
 * min / median / max requests/s of each, median p50 and p99 latency, the
 * CPU each side used, and the ratio of the medians (target / peer).
 *
 * Builds `bench/crpeer` into
 * `${XDG_CACHE_HOME:-$HOME/.cache}/dependency-controller/bench-crpeer-<digest>`
 * when it is not there.
 *
 * @throws {Error} If the platform lacks Linux, `taskset` or a second CPU,
 *   if the build fails, or if any answer is not a 200 allowing the review.
 */
export async function fastPathComparison(
  target: FastPathTarget,
  options: FastPathOptions = {},
): Promise<FastPathResult> {
  const {
    rounds = 3,
    seconds = 5,
    warmupSeconds = 1,
    connections = 16,
    label = "webhook",
  } = options;
  if (!Number.isInteger(rounds) || rounds < 3) {
    throw new RangeError(
      `The rounds must be an integer of at least 3: current value is ${rounds}`,
    );
  }
  if (!(seconds > 0) || !(warmupSeconds >= 0)) {
    throw new RangeError(
      `The seconds must be positive and the warm-up not negative: current values are ${seconds} and ${warmupSeconds}`,
    );
  }
  if (!Number.isInteger(connections) || connections < 1) {
    throw new RangeError(
      `The connections must be a positive integer: current value is ${connections}`,
    );
  }
  const [serverCpu, loadCpu] = await benchCpus();
  const binary = await crpeerBinary();
  const peerLabel = `controller-runtime ${await controllerRuntimeVersion()}`;
  const scratch = await Deno.makeTempDir({ prefix: "fast-path-" });
  const caFile = `${scratch}/ca.crt`;
  const bodyFile = `${scratch}/review.json`;
  await Deno.writeTextFile(caFile, target.caPem);
  await Deno.writeTextFile(bodyFile, target.body);
  let peer: Peer | undefined;
  let restoreAffinity: (() => Promise<void>) | undefined;
  try {
    peer = await startPeer(binary, target.certDir, serverCpu);
    if (target.pid !== undefined) {
      restoreAffinity = await pinProcess(target.pid, serverCpu);
    }
    const servers: { label: string; url: string; pid: number | undefined }[] = [
      { label, url: target.url, pid: target.pid },
      { label: peerLabel, url: peer.url, pid: peer.pid },
    ];
    const reports: [LoadReport[], LoadReport[]] = [[], []];
    for (let round = 0; round < rounds; round++) {
      // Alternating which goes first cancels what one leaves the other.
      for (const index of round % 2 === 0 ? [0, 1] as const : [1, 0] as const) {
        const server = servers[index]!;
        reports[index].push(
          await runLoad(binary, loadCpu, {
            ...server,
            caFile,
            bodyFile,
            connections,
            seconds,
            warmupSeconds,
          }),
        );
      }
    }
    const [ours, theirs] = reports;
    const ratio = median(ours.map((r) => r.requestsPerSecond)) /
      median(theirs.map((r) => r.requestsPerSecond));
    printFigures(
      [{ label, reports: ours }, { label: peerLabel, reports: theirs }],
      { rounds, seconds, warmupSeconds, connections, serverCpu, loadCpu },
    );
    console.log(
      `   ratio of medians (${label} / ${peerLabel}): ${ratio.toFixed(2)}`,
    );
    return { label, peerLabel, ours, peer: theirs, ratio };
  } finally {
    await restoreAffinity?.();
    await peer?.stop();
    await Deno.remove(scratch, { recursive: true });
  }
}

function printFigures(
  rows: { label: string; reports: LoadReport[] }[],
  setup: {
    rounds: number;
    seconds: number;
    warmupSeconds: number;
    connections: number;
    serverCpu: number;
    loadCpu: number;
  },
): void {
  console.log(
    `\nFast path vs controller-runtime over TLS keep-alive (HTTP/1.1), ${setup.connections} connections, ${setup.rounds} rounds of ${setup.seconds} s after ${setup.warmupSeconds} s warm-up, alternating`,
  );
  console.log(
    `   servers on CPU ${setup.serverCpu}, load generator (bench/crpeer) on CPU ${setup.loadCpu}; latency and CPU are medians of the rounds; CPU = cores busy over the window;`,
  );
  console.log(
    "   us/req = server CPU time per request, which other load on the machine changes least",
  );
  console.log(
    `   ${"server".padEnd(30)} | ${
      "requests/s min / median / max".padEnd(29)
    } | ${"p50 ms".padStart(6)} | ${"p99 ms".padStart(6)} | ${
      "server CPU".padStart(10)
    } | ${"us/req".padStart(6)} | ${"load CPU".padStart(8)}`,
  );
  for (const { label, reports } of rows) {
    const serverCpus = reports.flatMap((r) =>
      r.serverCpu === undefined ? [] : [r.serverCpu]
    );
    const cpuPerRequest = reports.flatMap((r) =>
      r.serverCpu === undefined ? [] : [r.serverCpu * 1e6 / r.requestsPerSecond]
    );
    console.log(
      `   ${label.slice(0, 30).padEnd(30)} | ${
        formatSpread(spread(reports.map((r) => r.requestsPerSecond)), 0)
          .padEnd(29)
      } | ${
        median(reports.map((r) => r.latencyMs.p50)).toFixed(2).padStart(6)
      } | ${
        median(reports.map((r) => r.latencyMs.p99)).toFixed(2).padStart(6)
      } | ${
        (serverCpus.length === 0 ? "-" : median(serverCpus).toFixed(2))
          .padStart(10)
      } | ${
        (cpuPerRequest.length === 0 ? "-" : median(cpuPerRequest).toFixed(0))
          .padStart(6)
      } | ${median(reports.map((r) => r.loadCpu)).toFixed(2).padStart(8)}`,
    );
  }
}

/**
 * The first two CPUs this process may run on: the servers' and the load
 * generator's.
 *
 * @throws {Error} If this is not Linux, `nproc` or `taskset` is missing,
 *   or fewer than two CPUs are available.
 */
async function benchCpus(): Promise<[number, number]> {
  if (Deno.build.os !== "linux") {
    throw new Error(
      `The fast path comparison needs Linux (taskset, /proc): current OS is ${Deno.build.os}`,
    );
  }
  const nproc = await runRequired("nproc", [], "coreutils");
  const count = Number(nproc.trim());
  if (!Number.isInteger(count) || count < 2) {
    throw new Error(
      `The fast path comparison needs two CPUs, one for the servers and one for the load generator: nproc says ${nproc.trim()}`,
    );
  }
  await runRequired("taskset", ["--version"], "util-linux");
  const status = await Deno.readTextFile("/proc/self/status");
  const allowed = /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1] ?? "";
  const cpus = expandCpuList(allowed);
  if (cpus.length < 2) {
    throw new Error(
      `The fast path comparison needs two CPUs: this process may use '${allowed}'`,
    );
  }
  return [cpus[0]!, cpus[1]!];
}

/** `0-2,5` as `[0, 1, 2, 5]`. */
function expandCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.split(",").filter((p) => p !== "")) {
    const [first, last = first] = part.split("-").map(Number);
    for (let cpu = first!; cpu <= last!; cpu++) cpus.push(cpu);
  }
  return cpus;
}

/** Runs a command that must exist and succeed, and returns its stdout. */
async function runRequired(
  program: string,
  args: readonly string[],
  provider: string,
): Promise<string> {
  let result;
  try {
    result = await runCommand(program, args);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(
        `The fast path comparison needs '${program}', which is not on PATH: install ${provider} (e.g. apt-get install ${provider})`,
      );
    }
    throw error;
  }
  if (result.code !== 0) {
    throw new Error(
      `'${program} ${
        args.join(" ")
      }' exited with ${result.code}: ${result.stderr.trim()}`,
    );
  }
  return result.stdout;
}

/**
 * Pins every thread of process `pid` to `cpu` and returns what gives each
 * thread its affinity back (threads started meanwhile get the main
 * thread's).
 */
async function pinProcess(
  pid: number,
  cpu: number,
): Promise<() => Promise<void>> {
  const before = await threadAffinities(pid);
  const main = before.get(pid);
  if (main === undefined) {
    throw new Error(`Cannot pin process ${pid}: it is not running`);
  }
  await runRequired(
    "taskset",
    ["-a", "-cp", String(cpu), String(pid)],
    "util-linux",
  );
  return async () => {
    for (const tid of (await threadAffinities(pid)).keys()) {
      // A thread that ends meanwhile makes taskset fail: nothing to restore.
      await runCommand("taskset", [
        "-cp",
        before.get(tid) ?? main,
        String(tid),
      ]);
    }
  };
}

/** Each thread of `pid` and its CPU list; empty when the process is gone. */
async function threadAffinities(pid: number): Promise<Map<number, string>> {
  const affinities = new Map<number, string>();
  const tasks = `/proc/${pid}/task`;
  try {
    for await (const entry of Deno.readDir(tasks)) {
      const status = await Deno.readTextFile(`${tasks}/${entry.name}/status`)
        .catch(() => "");
      const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1];
      if (list !== undefined) affinities.set(Number(entry.name), list);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return affinities;
}

/** The running peer webhook. */
interface Peer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the peer webhook on `cpu` and waits until it serves. */
async function startPeer(
  binary: string,
  certDir: string,
  cpu: number,
): Promise<Peer> {
  const [port] = freePorts(1) as [number];
  const child = new Deno.Command("taskset", {
    args: [
      "-c",
      String(cpu),
      binary,
      "webhook",
      "-cert-dir",
      certDir,
      "-port",
      String(port),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Its log is shown only when it fails to start.
  let log = "";
  const logged = (async () => {
    for await (
      const text of child.stderr.pipeThrough(new TextDecoderStream())
    ) {
      log = (log + text).slice(-4000);
    }
  })();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stop = async () => {
    await stopProcess(child, { graceMs: 5000 });
    await stdout.cancel().catch(() => {});
    await logged;
  };
  let printed = "";
  while (!printed.includes("listening\n")) {
    const { value, done } = await stdout.read();
    if (done) {
      await stop();
      throw new Error(`The controller-runtime peer did not start:\n${log}`);
    }
    printed += value;
  }
  return { url: `https://127.0.0.1:${port}/validate`, pid: child.pid, stop };
}

/** Runs the load generator once on `cpu` against one server. */
async function runLoad(
  binary: string,
  cpu: number,
  run: {
    label: string;
    url: string;
    pid: number | undefined;
    caFile: string;
    bodyFile: string;
    connections: number;
    seconds: number;
    warmupSeconds: number;
  },
): Promise<LoadReport> {
  const result = await runCommand("taskset", [
    "-c",
    String(cpu),
    binary,
    "load",
    "-url",
    run.url,
    "-ca",
    run.caFile,
    "-body",
    run.bodyFile,
    "-connections",
    String(run.connections),
    "-warmup",
    `${run.warmupSeconds}s`,
    "-duration",
    `${run.seconds}s`,
    ...(run.pid === undefined ? [] : ["-server-pid", String(run.pid)]),
  ]);
  if (result.code !== 0) {
    throw new Error(
      `The load generator against ${run.label} (${run.url}) exited with ${result.code}: ${result.stderr.trim()}`,
    );
  }
  const report = JSON.parse(result.stdout) as LoadReport;
  if (report.failures > 0) {
    throw new Error(
      `${run.label} (${run.url}): ${report.failures} answers were not a 200 allowing the review; the first: ${report.firstFailure}`,
    );
  }
  return report;
}

/**
 * The cached `crpeer` binary, built from `bench/crpeer` when the cache has
 * none for the current sources.
 *
 * @throws {Error} If `go` is not on PATH or the build fails.
 */
async function crpeerBinary(): Promise<string> {
  const home = Deno.env.get("HOME");
  const base = Deno.env.get("XDG_CACHE_HOME") ??
    (home === undefined ? undefined : `${home}/.cache`);
  if (base === undefined) {
    throw new Error(
      "Cannot build bench/crpeer: set XDG_CACHE_HOME or HOME for its cache",
    );
  }
  const dir =
    `${base}/dependency-controller/bench-crpeer-${await crpeerDigest()}`;
  const binary = `${dir}/crpeer`;
  if (await pathExists(binary)) return binary;
  await Deno.mkdir(dir, { recursive: true });
  // Built beside its final name and renamed when complete, so the cache
  // never holds a partial binary under that name.
  const staging = `${binary}.partial-${Deno.pid}`;
  console.log(
    `fast path: building bench/crpeer into ${dir}; a cold build takes minutes`,
  );
  const args = ["build", "-trimpath", "-o", staging, "."];
  let child;
  try {
    child = new Deno.Command("go", {
      args,
      cwd: CRPEER_DIR,
      env: {
        CGO_ENABLED: "0",
        GOFLAGS: "-mod=readonly -buildvcs=false",
        GOTOOLCHAIN: "auto",
      },
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(
        "Cannot build bench/crpeer: 'go' is not on PATH (install Go)",
      );
    }
    throw error;
  }
  const status = await child.status;
  if (!status.success) {
    await Deno.remove(staging).catch(() => {});
    throw new Error(
      `Cannot build bench/crpeer: 'go ${
        args.join(" ")
      }' exited with ${status.code}`,
    );
  }
  await Deno.rename(staging, binary);
  return binary;
}

/** The digest of `bench/crpeer`'s go.mod, go.sum and Go files. */
async function crpeerDigest(): Promise<string> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(CRPEER_DIR)) {
    if (
      entry.isFile &&
      (entry.name === "go.mod" || entry.name === "go.sum" ||
        entry.name.endsWith(".go"))
    ) {
      files.push(entry.name);
    }
  }
  const parts: string[] = [];
  for (const file of files.sort()) {
    parts.push(file, await Deno.readTextFile(`${CRPEER_DIR}${file}`));
  }
  const bytes = new TextEncoder().encode(parts.join("\0"));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.slice(0, 6), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** The controller-runtime version `bench/crpeer/go.mod` requires. */
async function controllerRuntimeVersion(): Promise<string> {
  const goMod = await Deno.readTextFile(`${CRPEER_DIR}go.mod`);
  return /sigs\.k8s\.io\/controller-runtime (v\S+)/.exec(goMod)?.[1] ??
    "(unknown version)";
}

/** A VPC as kcp serves it, for the self-test's review. */
const SELF_TEST_VPC: LiveVpc = {
  apiVersion: "network.example.com/v1alpha1",
  kind: "VPC",
  metadata: {
    name: "vpc-target",
    namespace: "bench-1",
    uid: "0b9f5c3e-8f0e-4d5a-9a43-5d2f2b1c7e10",
    resourceVersion: "1234",
    generation: 1,
    creationTimestamp: "2025-01-01T00:00:00Z",
    annotations: { "kcp.io/cluster": "2x8s7ojzh3clqm1k" },
    managedFields: [{
      apiVersion: "network.example.com/v1alpha1",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:spec": { ".": {}, "f:cidr": {} } },
      manager: "deno",
      operation: "Update",
      time: "2025-01-01T00:00:00Z",
    }],
  },
  spec: { cidr: "10.0.0.0/16" },
};

/**
 * The self-test: the peer against `_echo_server.ts`, which this starts
 * unpinned so that the comparison pins it by its pid: once as `Deno.serve`,
 * once as a bare `node:https` server (the floor of the webhook's listener).
 */
async function selfTest(): Promise<void> {
  for (
    const [label, flags] of [
      ["bare Deno.serve TLS server", []],
      ["bare node:https server", ["--node"]],
    ] as const
  ) {
    await echoComparison(label, flags);
  }
}

/** One comparison of the peer with `_echo_server.ts` started with `flags`. */
async function echoComparison(
  label: string,
  flags: readonly string[],
): Promise<void> {
  const scratch = await Deno.makeTempDir({ prefix: "fast-path-self-test-" });
  try {
    const cert = await createServingCert(`${scratch}/tls`);
    const [port] = freePorts(1) as [number];
    const echo = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-net",
        "--allow-read",
        new URL("./_echo_server.ts", import.meta.url).pathname,
        cert.dir,
        String(port),
        ...flags,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const stdout = echo.stdout.pipeThrough(new TextDecoderStream()).getReader();
    try {
      const { done } = await stdout.read();
      if (done) throw new Error("The echo server did not start");
      await fastPathComparison({
        url: `https://127.0.0.1:${port}/validate`,
        certDir: cert.dir,
        caPem: cert.caPem,
        body: deleteReview(SELF_TEST_VPC, { resource: "subnets", uid: "fast" }),
        pid: echo.pid,
      }, { label });
    } finally {
      await stopProcess(echo, { graceMs: 5000 });
      await stdout.cancel().catch(() => {});
    }
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}

if (import.meta.main) {
  try {
    await selfTest();
  } catch (error) {
    console.error(
      `fast_path: ${error instanceof Error ? error.message : error}`,
    );
    Deno.exit(1);
  }
}
