/**
 * The system's components as separate processes, started with the flags a
 * Deployment uses and each with its own identity's kubeconfig.
 *
 * @module
 */
import { freePorts, type KcpApi } from "./kcp_server.ts";
import { appendTo, runCommand, stopProcess } from "./process.ts";
import { createServingCert, type ServingCert } from "./tls.ts";
import { GiveUp, waitFor } from "./wait.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/**
 * How the components run, as in the image: permissions for network, reading
 * kubeconfigs and certificates, environment; and a 2 MB young generation,
 * which keeps resident memory near the heap in use (measured by
 * `deno task bench`).
 */
export const DENO_RUN_FLAGS = [
  "--v8-flags=--max-semi-space-size=2",
  "--allow-net",
  "--allow-read",
  "--allow-env",
];

/**
 * The webhook as the image and its Deployment run it: its V8 flags (an old
 * generation of 128 MB, so garbage is collected before it piles up) and the
 * glibc tunables of `manifests/deploy/webhook.yaml` (freed memory goes back
 * to the system). Measured by `deno task bench memory`.
 */
export const WEBHOOK_RUN = {
  flags: [
    "--v8-flags=--max-semi-space-size=2,--max-old-space-size=128",
    ...DENO_RUN_FLAGS.slice(1),
  ],
  env: {
    GLIBC_TUNABLES:
      "glibc.malloc.mmap_threshold=32768:glibc.malloc.arena_max=2",
  },
} as const;

/** A running component process. */
export interface ComponentProcess {
  /** Process id. */
  pid: number;
  /** Health probe port (`/healthz`, `/readyz`). */
  healthPort: number;
  /** Metrics port. */
  metricsPort: number;
  /** The process's log file (JSON lines). */
  logFile: string;
  /** Sends `signal` and waits for the exit code (SIGKILL after 20 s). */
  stop(signal?: Deno.Signal): Promise<number>;
  /** Waits until `/readyz` answers 200. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** GETs a path on the health or metrics port and returns status and text. */
  get(port: number, path: string): Promise<{ status: number; text: string }>;
  /** The log as text. */
  log(): Promise<string>;
}

/** The webhook process plus what a webhook configuration needs to reach it. */
export interface WebhookProcess extends ComponentProcess {
  /** Admission port. */
  port: number;
  /** `https://127.0.0.1:<port>/validate`. */
  url: string;
  /** Its serving certificate. */
  cert: ServingCert;
}

/**
 * `dependency_webhook_rules{state="valid"}`: how many rules the webhook
 * holds; `NaN` when its metrics do not say.
 */
export async function validRules(webhook: WebhookProcess): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  const match = /^dependency_webhook_rules\{state="valid"\} (\d+)$/m.exec(text);
  return Number(match?.[1] ?? NaN);
}

/** Options for {@linkcode startWebhook}. */
export interface StartWebhookOptions {
  /** Extra flags. */
  args?: string[];
  /** Reuse a certificate directory (restarts keep their URL's trust). */
  cert?: ServingCert;
  /** Reuse an admission port. */
  port?: number;
  /** Wait until `/readyz` answers 200. @default {true} */
  waitReady?: boolean;
  /** Restart the process when its source changes (`deno run --watch`). */
  watch?: boolean;
}

/**
 * Starts `webhook.ts` as its own process, as the `webhook` identity, with
 * a kubeconfig pointing at `root:dep-ctrl`, and waits until it is ready.
 */
export async function startWebhook(
  kcp: KcpApi,
  options: StartWebhookOptions = {},
): Promise<WebhookProcess> {
  const [port, healthPort, metricsPort] = freePorts(3) as [
    number,
    number,
    number,
  ];
  const admissionPort = options.port ?? port;
  const cert = options.cert ??
    await createServingCert(`${kcp.rootDir}/webhook-tls`);
  const kubeconfig = await kcp.kubeconfig("webhook", "root:dep-ctrl");
  const process = spawnComponent("webhook", kcp, [
    `--kubeconfig=${kubeconfig}`,
    `--tls-cert-dir=${cert.dir}`,
    `--webhook-bind-address=127.0.0.1:${admissionPort}`,
    `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    "--log-level=debug",
    ...(options.args ?? []),
  ], { healthPort, metricsPort, watch: options.watch ?? false });
  const webhook = {
    ...process,
    port: admissionPort,
    url: `https://127.0.0.1:${admissionPort}/validate`,
    cert,
  };
  if (options.waitReady ?? true) await webhook.waitReady();
  return webhook;
}

/** Options for {@linkcode startController}. */
export interface StartControllerOptions {
  /** The webhook kcp must call (its URL and CA). */
  webhook: { url: string; cert: ServingCert };
  /** Extra flags. */
  args?: string[];
  /** Wait until `/readyz` answers 200. @default {true} */
  waitReady?: boolean;
  /** Restart the process when its source changes (`deno run --watch`). */
  watch?: boolean;
}

/**
 * Starts `controller.ts` as its own process, as the `controller` identity,
 * with a kubeconfig pointing at `root:dep-ctrl`, the webhook's URL and CA
 * bundle, and waits until it is ready.
 */
export async function startController(
  kcp: KcpApi,
  options: StartControllerOptions,
): Promise<ComponentProcess> {
  const [healthPort, metricsPort] = freePorts(2) as [number, number];
  const kubeconfig = await kcp.kubeconfig("controller", "root:dep-ctrl");
  const process = spawnComponent("controller", kcp, [
    `--kubeconfig=${kubeconfig}`,
    `--webhook-url=${options.webhook.url}`,
    `--webhook-ca-bundle-path=${options.webhook.cert.caFile}`,
    `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    "--log-level=debug",
    ...(options.args ?? []),
  ], { healthPort, metricsPort, watch: options.watch ?? false });
  if (options.waitReady ?? true) await process.waitReady();
  return process;
}

/** Options for {@linkcode spawnComponent}. */
export interface SpawnComponentOptions {
  /** Health probe port, as the flags set it. */
  healthPort: number;
  /** Metrics port, as the flags set it. */
  metricsPort: number;
  /** Restart the process when its source changes (`deno run --watch`). */
  watch?: boolean;
}

/** Runs `<name>.ts` from the project root with the permissions its image grants. */
export function spawnComponent(
  name: "webhook" | "controller",
  kcp: KcpApi,
  args: string[],
  options: SpawnComponentOptions,
): ComponentProcess {
  const { watch = false, ...ports } = options;
  const logFile = `${kcp.rootDir}/${name}-${Date.now()}.log`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(watch ? ["--watch"] : []),
      ...(name === "webhook" ? WEBHOOK_RUN.flags : DENO_RUN_FLAGS),
      `${ROOT}${name}.ts`,
      ...args,
    ],
    ...(name === "webhook" ? { env: { ...WEBHOOK_RUN.env } } : {}),
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const piped = Promise.all([
    appendTo(child.stdout, logFile),
    appendTo(child.stderr, logFile),
  ]);
  let exited: number | undefined;
  const status = child.status.then((s) => exited = s.code);
  const get = async (port: number, path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      signal: AbortSignal.timeout(5000),
    });
    return { status: response.status, text: await response.text() };
  };
  const log = () => Deno.readTextFile(logFile).catch(() => "");
  return {
    pid: child.pid,
    ...ports,
    logFile,
    get,
    log,
    async waitReady(timeoutMs = 60_000) {
      await waitFor(`${name} to be ready`, async () => {
        if (exited !== undefined) {
          throw new GiveUp(
            `${name} exited with ${exited}: ${(await log()).slice(-2000)}`,
          );
        }
        return (await get(ports.healthPort, "/readyz")).status === 200 ||
          undefined;
      }, { timeoutMs, intervalMs: 100 });
    },
    async stop(signal: Deno.Signal = "SIGTERM") {
      if (exited === undefined && watch) {
        await stopWatched(child, signal, log);
      } else if (exited === undefined) {
        await stopProcess(child, { signal });
      }
      await status;
      await piped;
      return exited ?? -1;
    },
  };
}

const WATCHED_RUN_STARTED = "Process started.";
/** What the watcher, or the component itself, logs when a run has ended. */
const WATCHED_RUN_ENDED = ["Process finished.", '"msg":"stopped"'];

/**
 * Stops a `deno run --watch` process. Its script exits gracefully on
 * `signal`, but the watcher itself stays, waiting for a change to run it
 * again: once the log says the run ended (the watcher's "Process finished",
 * or the component's own "stopped"; or after 20 s), the watcher is killed. A
 * run that already ended (a Ctrl-C reaches the whole process group) is not
 * signalled again.
 */
async function stopWatched(
  child: Deno.ChildProcess,
  signal: Deno.Signal,
  log: () => Promise<string>,
): Promise<void> {
  const finished = async () => {
    const text = await log();
    const started = text.lastIndexOf(WATCHED_RUN_STARTED);
    return WATCHED_RUN_ENDED.some((end) => text.lastIndexOf(end) > started);
  };
  try {
    if (!await finished()) {
      child.kill(signal);
      await waitFor(
        "the watched run to finish",
        async () => await finished() || undefined,
        { timeoutMs: 20_000, intervalMs: 50 },
      );
    }
  } catch {
    // exited meanwhile, or did not finish in time: kill the watcher anyway
  }
  await stopProcess(child, { signal: "SIGKILL" });
}

/**
 * Grants the webhook's reads for the live DependencyRules as an operator
 * does, with the shipped tool: `controller grants` with the webhook's
 * kubeconfig, its output applied in `system:admin` as a `system:masters`
 * identity. Returns the ClusterRole applied (YAML). `options.lockTypes` is
 * `--lock-types`: the Lock target types the operator lets the webhook read.
 */
export async function grantWebhookReads(
  kcp: KcpApi,
  options: {
    lockTypes?: readonly string[];
    /** For a webhook run with `--dependents-index`: watch, export content. */
    dependentsIndex?: boolean;
  } = {},
): Promise<string> {
  const kubeconfig = await kcp.kubeconfig("webhook", "root:dep-ctrl");
  const printed = await runCommand(Deno.execPath(), [
    "run",
    "--allow-net",
    "--allow-read",
    "--allow-env",
    `${ROOT}controller.ts`,
    "grants",
    `--kubeconfig=${kubeconfig}`,
    ...(options.lockTypes === undefined
      ? []
      : [`--lock-types=${options.lockTypes.join(",")}`]),
    ...(options.dependentsIndex ? ["--dependents-index"] : []),
  ], { cwd: ROOT });
  if (printed.code !== 0) {
    throw new Error(`controller grants failed: ${printed.stderr}`);
  }
  await kcp.kubectlOk(["apply", "-f", "-"], {
    workspace: "system:admin",
    identity: "shardAdmin",
    stdin: printed.stdout,
  });
  return printed.stdout;
}

/**
 * Stops every process given (`undefined` ones are skipped), in order; with
 * `showLogs` (a test that failed), first prints the last 4 000 characters
 * of each one's log to stderr.
 */
export async function stopComponents(
  processes: readonly (ComponentProcess | undefined)[],
  options: { showLogs: boolean },
): Promise<void> {
  for (const process of processes) {
    if (process === undefined) continue;
    if (options.showLogs) {
      console.error(
        `--- ${process.logFile} ---\n${(await process.log()).slice(-4000)}`,
      );
    }
    await process.stop();
  }
}
