/**
 * How soon the webhook answers correctly after kcp restarts under it.
 *
 * ```sh
 * bash scripts/deno.sh run --allow-all bench/kcp_restart.ts [--rounds=5]
 * ```
 *
 * It starts one kcp, the test topology, the webhook (its reads granted with
 * `controller grants`), the rule vm-vpc, the webhook's configuration in the
 * network provider, and VPC `vpc-a` with VM `vm-1` naming it in consumer
 * c1. Each round stops kcp (keeping its data), starts it again and, from the
 * moment kcp's `/readyz` answers 200, asks three things at once:
 *
 * - **review**: the DELETE AdmissionReview of `vpc-a`, POSTed straight to
 *   the webhook (what the webhook itself answers), again until it is the
 *   right answer (a denial naming `VirtualMachine/vm-1`);
 * - **delete**: a server-side dry-run DELETE of `vpc-a` through kcp as
 *   admin (kcp calling the webhook, as a user meets it), again until it is
 *   denied with that message;
 * - **kcp alone**: the reads the review makes (the VPC, the VMs of its
 *   namespace, the consumer's APIBindings, its LogicalCluster), each once,
 *   as the webhook's identity on a new connection, with no webhook taking
 *   part: when kcp itself answers them again (the slowest, and each).
 *
 * and then waits for the webhook's `dependency_webhook_watches_failing` to
 * be 0 (its list+watches reconnected). It prints each round's times (ms
 * after ready) and what came before the right answer, then min / median /
 * max over the rounds. The review is right as soon as kcp answers its
 * reads: what it takes beyond "kcp alone" is the webhook's own part.
 *
 * Found with kcp v0.31.2 on two shared cores, 5 rounds each: kcp answers
 * `/readyz` before it serves the types consumers bind through APIBindings.
 * The first read of the VPC and of the VMs, as the webhook, came 518 /
 * 1 258 / 1 514 ms after ready (the APIBindings and the LogicalCluster in
 * 90 to 246 ms); kcp's log shows the storage of the bound types created
 * only once its own caches have initialized, that long after ready. The
 * review was right 519 / 1 263 / 1 520 ms after ready: 1 / 6 / 12 ms
 * after kcp answered its reads, so that wait is kcp's. The webhook's
 * watches reconnected 13 142 / 21 188 / 28 216 ms after ready while every
 * failed attempt, answered or not, grew one backoff to 30 s; with a failure
 * that got no answer retried within 2 s and kcp's first answer starting the
 * backoff over (`ReconnectBackoff`), 2 358 / 3 791 / 4 964 ms.
 *
 * @module
 */
import {
  applyObjects,
  buildTopology,
  grantWebhookReads,
  installWebhookConfig,
  KcpRequestError,
  startKcp,
  startWebhook,
  vmManifest,
  vpcManifest,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";
import { formatSpread, spread } from "./_stats.ts";

const flags = new Map(
  Deno.args.map((a) => a.replace(/^--/, "").split("=")).map((
    [k, v],
  ) => [k!, v ?? "true"]),
);
const rounds = Number(flags.get("rounds") ?? 5);
const RULE = new URL(
  "../testing/fixtures/compute/dependencyrule-vm-vpc.yaml",
  import.meta.url,
).pathname;
const RIGHT = /still referenced by VirtualMachine\/vm-1/;
const VPC_PATH = "apis/network.example.com/v1alpha1/namespaces/default/vpcs";
const VM_PATH =
  "apis/compute.example.com/v1alpha1/namespaces/default/virtualmachines";

/** One poll's outcome: the answer's text, shortened. */
type Outcome = { atMs: number; text: string };

/** POSTs the DELETE review of `object` to the webhook; its message or "allowed". */
async function review(
  webhook: WebhookProcess,
  client: Deno.HttpClient,
  object: unknown,
): Promise<string> {
  const response = await fetch(webhook.url, {
    method: "POST",
    client,
    signal: AbortSignal.timeout(15_000),
    body: JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: crypto.randomUUID(),
        kind: {
          group: "network.example.com",
          version: "v1alpha1",
          kind: "VPC",
        },
        resource: {
          group: "network.example.com",
          version: "v1alpha1",
          resource: "vpcs",
        },
        name: "vpc-a",
        namespace: "default",
        operation: "DELETE",
        userInfo: { username: "bench", groups: ["system:authenticated"] },
        oldObject: object,
        dryRun: true,
      },
    }),
  });
  const answer = await response.json() as {
    response?: { allowed: boolean; status?: { message?: string } };
  };
  if (answer.response?.allowed) return "allowed";
  return answer.response?.status?.message ?? `HTTP ${response.status}`;
}

/** Polls `probe` until its text matches {@linkcode RIGHT}; every distinct text seen. */
/** The webhook's list+watch loops whose last attempt failed. */
async function watchesFailing(webhook: WebhookProcess): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  const match = /^dependency_webhook_watches_failing (\d+)$/m.exec(text);
  return Number(match?.[1] ?? NaN);
}

async function until(
  since: number,
  probe: () => Promise<string>,
): Promise<Outcome[]> {
  const seen: Outcome[] = [];
  for (;;) {
    let text: string;
    try {
      text = await probe();
    } catch (error) {
      text = error instanceof Error ? error.message : String(error);
    }
    const atMs = performance.now() - since;
    text = text.replace(/\s+/g, " ").slice(0, 160);
    if (seen.at(-1)?.text !== text) seen.push({ atMs, text });
    if (RIGHT.test(text)) return seen;
    if (atMs > 120_000) throw new Error(`no right answer: ${text}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const kcp = await startKcp();
let webhook: WebhookProcess | undefined;
try {
  const topo = await buildTopology(kcp);
  const c1 = topo.consumers[0]!.path;
  await kcp.kubectlOk(["apply", "-f", RULE], { workspace: topo.compute.path });
  await grantWebhookReads(kcp);
  webhook = await startWebhook(kcp);
  const reviews = Deno.createHttpClient({ caCerts: [webhook.cert.caPem] });
  await installWebhookConfig(kcp, topo.network.path, {
    url: webhook.url,
    caPem: webhook.cert.caPem,
    resources: [{
      group: "network.example.com",
      version: "v1alpha1",
      resource: "vpcs",
    }],
  });
  await applyObjects(kcp, c1, [
    vpcManifest("vpc-a", { cidr: "10.0.0.0/16" }),
    vmManifest("vm-1", { vpc: "vpc-a" }),
  ]);
  const vpc = await kcp.request("GET", `/clusters/${c1}/${VPC_PATH}/vpc-a`);
  const dryRunDelete = async () => {
    try {
      await kcp.request(
        "DELETE",
        `/clusters/${c1}/${VPC_PATH}/vpc-a?dryRun=All`,
      );
      return "allowed";
    } catch (error) {
      if (error instanceof KcpRequestError) {
        const body = error.body as { message?: string } | undefined;
        return body?.message ?? error.message;
      }
      throw error;
    }
  };
  await waitFor("the delete to be denied", async () => {
    return RIGHT.test(await dryRunDelete()) || undefined;
  }, { timeoutMs: 60_000 });

  const times = {
    review: [] as number[],
    delete: [] as number[],
    kcp: [] as number[],
    watches: [] as number[],
  };
  const reads = {
    vpc: `/clusters/${c1}/${VPC_PATH}/vpc-a`,
    vms: `/clusters/${c1}/${VM_PATH}?limit=500`,
    bindings: `/clusters/${c1}/apis/apis.kcp.io/v1alpha2/apibindings?limit=500`,
    workspace:
      `/clusters/${c1}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`,
  };
  // A fresh client each round: kcp.request's pool closed with the old kcp.
  const kcpAlone = async (since: number) => {
    const each = await Promise.all(
      Object.entries(reads).map(async ([what, path]) => {
        await kcp.request("GET", path, { identity: "webhook" });
        return `${what} ${(performance.now() - since).toFixed(0)}`;
      }),
    );
    return { ms: performance.now() - since, each: each.join(", ") };
  };
  for (let round = 1; round <= rounds; round++) {
    const stopped = performance.now();
    await kcp.stop({ keepRootDir: true });
    await kcp.start();
    const ready = performance.now();
    const [byReview, byDelete, alone] = await Promise.all([
      until(ready, () => review(webhook!, reviews, vpc)),
      until(ready, dryRunDelete),
      kcpAlone(ready),
    ]);
    await waitFor("the webhook's watches to reconnect", async () => {
      return (await watchesFailing(webhook!)) === 0 || undefined;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    const watches = performance.now() - ready;
    times.review.push(byReview.at(-1)!.atMs);
    times.delete.push(byDelete.at(-1)!.atMs);
    times.kcp.push(alone.ms);
    times.watches.push(watches);
    console.log(
      `round ${round}: kcp away ${
        ((ready - stopped) / 1000).toFixed(1)
      } s; review right after ${
        byReview.at(-1)!.atMs.toFixed(0)
      } ms, delete after ${byDelete.at(-1)!.atMs.toFixed(0)} ms, kcp alone ${
        alone.ms.toFixed(0)
      } ms (${alone.each}), watches back after ${watches.toFixed(0)} ms`,
    );
    for (const [what, seen] of [["review", byReview], ["delete", byDelete]]) {
      for (const o of seen as Outcome[]) {
        console.log(`  ${what} ${o.atMs.toFixed(0).padStart(6)} ms: ${o.text}`);
      }
    }
  }
  reviews.close();
  console.log(`ms after kcp ready, min / median / max over ${rounds}:`);
  for (
    const [what, values] of [
      ["review answered right (webhook)", times.review],
      ["delete denied right (through kcp)", times.delete],
      ["kcp alone: the review's reads as the webhook", times.kcp],
      [
        "review minus kcp alone",
        times.review.map((t, i) => t - times.kcp[i]!),
      ],
      ["webhook's watches reconnected", times.watches],
    ] as const
  ) console.log(`  ${what}: ${formatSpread(spread(values), 0)}`);
  console.log(`webhook log: ${webhook.logFile}`);
  if (flags.has("keep-log")) {
    await Deno.copyFile(webhook.logFile, flags.get("keep-log")!);
  }
} finally {
  await webhook?.stop();
  await kcp.stop();
}
