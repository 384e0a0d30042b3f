/**
 * The controller's cold start at scale, on a real kcp: 2 000 DependencyRules
 * protecting types in 200 provider workspaces (10 each). Each round starts
 * the controller as its own process with no webhook configuration and no
 * rule status in kcp, and measures from the spawn until every rule is
 * `Ready=True/Enforced` and no write is pending: the time, the passes, the
 * CPU time and peak resident memory of the process, and the largest number
 * of writes in flight it reported (sampled every 20 ms from its metrics).
 * Between rounds the configurations are deleted and the statuses cleared.
 *
 * @module
 */
import {
  bindExport,
  buildTopology,
  createWorkspace,
  DEP_CTRL_EXPORT,
  dependencyRule,
  type KcpServer,
  MANIFESTS,
  sample,
  startController,
  startWebhook,
  VWC_CLAIM,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";
import { formatSpread, spread } from "./_stats.ts";
import { createMany } from "./_webhook_fixtures.ts";

/** The scale of the figure, as the issue sets it. */
export interface ScaleOptions {
  /** Provider workspaces. @default {200} */
  providers?: number;
  /** Rules per provider. @default {10} */
  rulesPerProvider?: number;
  /** Cold starts measured. @default {3} */
  rounds?: number;
  /**
   * `--max-writes-in-flight` values to compare, each cold-started in every
   * round. @default {[8]}
   */
  writesInFlight?: number[];
}

/** One cold start. */
interface Round {
  seconds: number;
  passes: number;
  cpuSeconds: number;
  peakRssMb: number;
  peakInFlight: number;
}

const RULES_PATH =
  "apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules";
const VWC_PATH =
  "apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const PARENT = "root:scale";

/** Runs `work` over `items` with `concurrency` at a time. */
async function eachLimited<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

/** A series' value from metrics text, 0 while it is not there yet. */
function metric(text: string, series: string): number {
  return sample(text, series) ?? 0;
}

/** utime + stime of a process, seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of stat(5), counted after the command name (field 2).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function peakRssMb(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
}

/** Creates the providers, their bindings and the rules; returns the provider paths. */
async function setUp(
  kcp: KcpServer,
  options: Required<ScaleOptions>,
): Promise<{ providers: string[]; rulesWorkspace: string }> {
  const topo = await buildTopology(kcp, { consumerPaths: [] });
  await createWorkspace(kcp, PARENT);
  await kcp.kubectlOk(["apply", "-k", `${MANIFESTS}kcp/workspace-reader`], {
    workspace: PARENT,
  });
  const providers = Array.from(
    { length: options.providers },
    (_, i) => `${PARENT}:p${String(i).padStart(3, "0")}`,
  );
  await eachLimited(providers, 8, async (path) => {
    await createWorkspace(kcp, path);
    await bindExport(kcp, path, {
      exportPath: topo.depCtrl.path,
      exportName: DEP_CTRL_EXPORT,
      acceptClaims: [VWC_CLAIM],
    });
  });
  const total = options.providers * options.rulesPerProvider;
  await createMany(
    kcp,
    `/clusters/${topo.compute.path}/${RULES_PATH}`,
    total,
    (i) =>
      dependencyRule(`scale-${i}`, {
        dependencies: [{
          path: providers[i % providers.length]!,
          group: `g${i}.network.example.com`,
          resource: "vpcs",
          field: `.spec.ref${i}.name`,
        }],
      }),
  );
  return { providers, rulesWorkspace: topo.compute.path };
}

/** Deletes every configuration and clears every rule's status. */
async function reset(
  kcp: KcpServer,
  setup: { providers: string[]; rulesWorkspace: string },
  total: number,
): Promise<void> {
  await eachLimited(setup.providers, 16, async (path) => {
    await kcp.request("DELETE", `/clusters/${path}/${VWC_PATH}`);
  });
  const names = Array.from({ length: total }, (_, i) => `scale-${i}`);
  await eachLimited(names, 24, async (name) => {
    await kcp.request(
      "PATCH",
      `/clusters/${setup.rulesWorkspace}/${RULES_PATH}/${name}/status`,
      {
        body: { status: null },
        contentType: "application/merge-patch+json",
      },
    );
  });
}

async function coldStart(
  kcp: KcpServer,
  webhook: WebhookProcess,
  options: { total: number; writesInFlight: number },
): Promise<Round> {
  const { total } = options;
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
  let converged: { seconds: number; passes: number } | undefined;
  try {
    await waitFor("the controller to converge", async () => {
      let text: string;
      try {
        text = (await controller.get(controller.metricsPort, "/metrics")).text;
      } catch {
        return undefined; // not listening yet
      }
      peakInFlight = Math.max(
        peakInFlight,
        metric(text, "dependency_controller_writes_in_flight"),
      );
      const enforced = metric(
        text,
        'dependency_controller_rules{status="True",reason="Enforced"}',
      );
      const pending = metric(text, "dependency_controller_pending_writes");
      if (enforced !== total || pending !== 0) return undefined;
      converged = {
        seconds: (performance.now() - started) / 1000,
        passes: metric(
          text,
          'dependency_controller_reconciles_total{result="synced"}',
        ),
      };
      return true;
    }, { timeoutMs: 600_000, intervalMs: 20 });
    return {
      ...converged!,
      cpuSeconds: await cpuSeconds(controller.pid),
      peakRssMb: await peakRssMb(controller.pid),
      peakInFlight,
    };
  } finally {
    await controller.stop();
  }
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
  };
  const total = settings.providers * settings.rulesPerProvider;
  const t0 = performance.now();
  const setup = await setUp(kcp, settings);
  console.log(
    `\nController cold start: ${total} rules over ${settings.providers} provider workspaces (set up in ${
      ((performance.now() - t0) / 1000).toFixed(0)
    } s)`,
  );
  const webhook = await startWebhook(kcp);
  const rounds = new Map<number, Round[]>(
    settings.writesInFlight.map((n) => [n, []]),
  );
  let fresh = true;
  try {
    for (let round = 0; round < settings.rounds; round++) {
      for (const writesInFlight of settings.writesInFlight) {
        if (!fresh) await reset(kcp, setup, total);
        fresh = false;
        const result = await coldStart(kcp, webhook, { total, writesInFlight });
        rounds.get(writesInFlight)!.push(result);
        console.log(
          `   round ${
            round + 1
          }, --max-writes-in-flight=${writesInFlight}: converged in ${
            result.seconds.toFixed(1)
          } s, ${result.passes} passes, CPU ${
            result.cpuSeconds.toFixed(1)
          } s, peak RSS ${
            result.peakRssMb.toFixed(0)
          } MB, peak writes in flight ${result.peakInFlight}`,
        );
      }
    }
  } finally {
    await webhook.stop();
  }
  const row = (name: string, values: number[], digits = 1) =>
    console.log(
      `      ${name.padEnd(30)} ${formatSpread(spread(values), digits)}`,
    );
  console.log(
    `   min / median / max over ${settings.rounds} rounds (spawn to every rule Ready=True/Enforced, nothing pending)`,
  );
  for (const [writesInFlight, results] of rounds) {
    console.log(`   --max-writes-in-flight=${writesInFlight}`);
    row("convergence, s", results.map((r) => r.seconds));
    row("reconcile passes", results.map((r) => r.passes), 0);
    row("controller CPU, s", results.map((r) => r.cpuSeconds));
    row("controller peak RSS, MB", results.map((r) => r.peakRssMb), 0);
    row("peak writes in flight", results.map((r) => r.peakInFlight), 0);
  }
}
