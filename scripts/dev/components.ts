/**
 * The webhook and the controller as `deno task dev` runs them: each as its
 * own process and identity, with the flags of `testing/components.ts`, under
 * `deno run --watch` so an edit restarts it. Their log files are JSON lines
 * only: the component's own records as they are, and every other line (the
 * watcher's `Watcher Process started.`, an uncaught error's trace) wrapped
 * as `{"time":...,"level":"info","msg":"Process started.","source":"watcher"}`.
 * The watcher runs with `NO_COLOR=1`, and colour codes are removed anyway.
 *
 * @module
 */
import {
  type ComponentProcess,
  DENO_RUN_FLAGS,
  freePorts,
  GiveUp,
  type KcpApi,
  type ServingCert,
  stopProcess,
  waitFor,
  WEBHOOK_RUN,
  type WebhookProcess,
} from "../../testing/mod.ts";
import { readLines } from "../../testing/kcp/build_progress.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Terminal colour and cursor codes. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");

/** Which output of the process a line came from. */
export type LogStream = "stdout" | "stderr";

/** Options for {@linkcode jsonLogLine}. */
export interface JsonLogLineOptions {
  /** Where the line came from. */
  stream: LogStream;
  /** The clock for a wrapped line's `time`. @default {() => new Date()} */
  now?: () => Date;
}

/**
 * One line of a component's output as a JSON log line: a JSON object as it
 * is (without colour codes), anything else wrapped as `{"time",
 * "level", "msg", "source"}`, where the source is `watcher` for `deno run
 * --watch`'s own lines (`Watcher ` dropped from the message; level `error`
 * when a run failed) and otherwise the stream (level `error` on standard
 * error, `warn` for a `Warning`, `info` on standard output). A blank line
 * is `undefined`.
 */
export function jsonLogLine(
  line: string,
  options: JsonLogLineOptions,
): string | undefined {
  const text = line.replace(ANSI, "").trimEnd();
  if (text.trim() === "") return undefined;
  if (text.startsWith("{")) {
    try {
      const value = JSON.parse(text);
      if (value !== null && typeof value === "object") return text;
    } catch {
      // not JSON after all: wrapped below
    }
  }
  const time = (options.now?.() ?? new Date()).toISOString();
  const watcher = /^Watcher (.*)$/.exec(text);
  if (watcher !== null) {
    const msg = watcher[1]!;
    const level = /failed/i.test(msg) ? "error" : "info";
    return JSON.stringify({ time, level, msg, source: "watcher" });
  }
  const level = options.stream === "stdout"
    ? "info"
    : /^warning\b/i.test(text)
    ? "warn"
    : "error";
  return JSON.stringify({ time, level, msg: text, source: options.stream });
}

/** What a log line says about the watched run. */
export type WatcherEvent =
  | { kind: "started" }
  | { kind: "ended" }
  | { kind: "restarting"; path: string };

/**
 * The watched run's start, its end (the watcher's `Process finished.` or
 * `Process failed.`, or the component's own `stopped`) or a restart for a
 * changed file (which starts the next run: the watcher says `Process
 * started.` only for the first), from a line {@linkcode jsonLogLine} wrote;
 * `undefined` for any other line. The component logs on standard error, as
 * the watcher does, so the two come in order.
 */
export function watcherEvent(jsonLine: string): WatcherEvent | undefined {
  let record: { msg?: unknown; source?: unknown };
  try {
    record = JSON.parse(jsonLine);
  } catch {
    return undefined;
  }
  const msg = typeof record.msg === "string" ? record.msg : "";
  if (record.source !== "watcher") {
    return msg === "stopped" ? { kind: "ended" } : undefined;
  }
  if (msg.startsWith("Process started")) return { kind: "started" };
  if (/^Process (finished|failed)/.test(msg)) return { kind: "ended" };
  const restart = /^Restarting! File change detected: "(.*)"/.exec(msg);
  return restart === null
    ? undefined
    : { kind: "restarting", path: restart[1]! };
}

/** A `deno run --watch` process whose output goes to its log file as JSON lines. */
export interface WatchedProcess {
  /** The watcher's process id. */
  pid: number;
  /** The log file (JSON lines). */
  logFile: string;
  /** Whether the script runs: the watcher started it and it has not ended. */
  readonly running: boolean;
  /** The watcher's exit code, once it has exited. */
  readonly exited: number | undefined;
  /**
   * Stops the run with `signal` (it exits gracefully) and then the watcher,
   * which would wait for a change to run it again; returns the exit code.
   */
  stop(signal?: Deno.Signal): Promise<number>;
  /** The log as text. */
  log(): Promise<string>;
}

/** Options for {@linkcode spawnWatched}. */
export interface SpawnWatchedOptions {
  /** `deno run` flags before the script (permissions, V8 flags). */
  flags: readonly string[];
  /** The script's arguments. */
  args: readonly string[];
  /** Where the JSON lines go (appended). */
  logFile: string;
  /** Environment variables added to the inherited ones and `NO_COLOR=1`. */
  env?: Record<string, string>;
  /** Called with the changed file when the watcher restarts the script. */
  onRestart?: (path: string) => void;
}

/**
 * Runs `deno run --watch <flags> <script> <args>`, writing every line it
 * prints to the log file as a JSON line ({@linkcode jsonLogLine}).
 */
export function spawnWatched(
  script: string,
  options: SpawnWatchedOptions,
): WatchedProcess {
  const { logFile, onRestart } = options;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--watch", ...options.flags, script, ...options.args],
    env: { NO_COLOR: "1", ...options.env },
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const file = Deno.openSync(logFile, {
    create: true,
    append: true,
  });
  const encoder = new TextEncoder();
  let running = false;
  let exited: number | undefined;
  const record = (line: string, stream: LogStream) => {
    const json = jsonLogLine(line, { stream });
    if (json === undefined) return;
    const bytes = encoder.encode(`${json}\n`);
    for (let done = 0; done < bytes.length;) {
      done += file.writeSync(bytes.subarray(done));
    }
    const event = watcherEvent(json);
    if (event?.kind === "ended") running = false;
    else if (event !== undefined) running = true;
    if (event?.kind === "restarting") onRestart?.(event.path);
  };
  const pump = async (stream: ReadableStream<Uint8Array>, name: LogStream) => {
    try {
      for await (const line of readLines(stream)) record(line, name);
    } catch {
      // the process is gone: keep what was written
    }
  };
  const piped = Promise.all([
    pump(child.stdout, "stdout"),
    pump(child.stderr, "stderr"),
  ]).finally(() => file.close());
  const status = child.status.then((s) => exited = s.code);
  return {
    pid: child.pid,
    logFile,
    get running() {
      return running;
    },
    get exited() {
      return exited;
    },
    log: () => Deno.readTextFile(logFile).catch(() => ""),
    async stop(signal: Deno.Signal = "SIGTERM") {
      if (exited === undefined && running) {
        // A run that already ended (Ctrl-C reaches the whole process
        // group) is not signalled again.
        try {
          child.kill(signal);
          await waitFor(
            "the watched run to finish",
            () =>
              Promise.resolve(!running || exited !== undefined || undefined),
            { timeoutMs: 20_000, intervalMs: 50 },
          );
        } catch {
          // exited meanwhile, or did not finish in time: kill the watcher
        }
      }
      if (exited === undefined) await stopProcess(child, { signal: "SIGKILL" });
      await status;
      await piped;
      return exited ?? -1;
    },
  };
}

/** Options shared by {@linkcode startDevWebhook} and {@linkcode startDevController}. */
export interface DevComponentOptions {
  /** Called with the changed file when the component restarts. */
  onRestart?: (path: string) => void;
}

/** Options for {@linkcode startDevWebhook}. */
export interface StartDevWebhookOptions extends DevComponentOptions {
  /** Its serving certificate. */
  cert: ServingCert;
}

/**
 * Starts `webhook.ts` under `deno run --watch` as the `webhook` identity
 * with a kubeconfig pointing at `root:dep-ctrl`, its log in
 * `<kcp root>/webhook.log`. Does not wait for it to be ready.
 */
export function startDevWebhook(
  kcp: KcpApi,
  options: StartDevWebhookOptions,
): Promise<WebhookProcess> {
  return startComponent("webhook", kcp, options, (ports) => [
    `--tls-cert-dir=${options.cert.dir}`,
    `--webhook-bind-address=127.0.0.1:${ports.admission}`,
    "--holds",
  ]).then(({ process, admission }) => ({
    ...process,
    port: admission,
    url: `https://127.0.0.1:${admission}/validate`,
    cert: options.cert,
  }));
}

/** Options for {@linkcode startDevController}. */
export interface StartDevControllerOptions extends DevComponentOptions {
  /** The webhook kcp must call (its URL and CA), and its metrics port. */
  webhook: { url: string; cert: ServingCert; metricsPort: number };
}

/**
 * Starts `controller.ts` under `deno run --watch` as the `controller`
 * identity with a kubeconfig pointing at `root:dep-ctrl` and the webhook's
 * URL and CA bundle, its log in `<kcp root>/controller.log`. Does not wait
 * for it to be ready.
 */
export async function startDevController(
  kcp: KcpApi,
  options: StartDevControllerOptions,
): Promise<ComponentProcess> {
  const { process } = await startComponent("controller", kcp, options, () => [
    `--webhook-url=${options.webhook.url}`,
    `--webhook-ca-bundle-path=${options.webhook.cert.caFile}`,
    "--graph",
    `--graph-holds-url=http://127.0.0.1:${options.webhook.metricsPort}/holds.json`,
  ]);
  return process;
}

async function startComponent(
  name: "webhook" | "controller",
  kcp: KcpApi,
  options: DevComponentOptions,
  flags: (ports: { admission: number }) => string[],
): Promise<{ process: ComponentProcess; admission: number }> {
  const [admission, healthPort, metricsPort] = freePorts(3) as [
    number,
    number,
    number,
  ];
  const kubeconfig = await kcp.kubeconfig(name, "root:dep-ctrl");
  const watched = spawnWatched(`${ROOT}${name}.ts`, {
    flags: name === "webhook" ? WEBHOOK_RUN.flags : DENO_RUN_FLAGS,
    args: [
      `--kubeconfig=${kubeconfig}`,
      ...flags({ admission }),
      `--health-probe-bind-address=127.0.0.1:${healthPort}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--log-level=debug",
    ],
    logFile: `${kcp.rootDir}/${name}.log`,
    ...(name === "webhook" ? { env: { ...WEBHOOK_RUN.env } } : {}),
    ...(options.onRestart === undefined
      ? {}
      : { onRestart: options.onRestart }),
  });
  const get = async (port: number, path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      signal: AbortSignal.timeout(5000),
    });
    return { status: response.status, text: await response.text() };
  };
  const process: ComponentProcess = {
    pid: watched.pid,
    healthPort,
    metricsPort,
    logFile: watched.logFile,
    get,
    log: () => watched.log(),
    stop: (signal) => watched.stop(signal),
    async waitReady(timeoutMs = 60_000) {
      await waitFor(`${name} to be ready`, async () => {
        if (watched.exited !== undefined) {
          throw new GiveUp(
            `${name} exited with ${watched.exited}: ${
              (await watched.log()).slice(-2000)
            }`,
          );
        }
        return (await get(healthPort, "/readyz")).status === 200 ||
          undefined;
      }, { timeoutMs, intervalMs: 100 });
    },
  };
  return { process, admission };
}
