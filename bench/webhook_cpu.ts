/**
 * The webhook's CPU per slow-path review at one dependent, on a real kcp,
 * beside its floor: a bare Deno client sending the same GET and LIST
 * (`_cpu_client.ts`). Both CPU figures are of the process that does the
 * work (the webhook's from `/proc/<pid>/stat`, the client's from its own
 * `process.cpuUsage()`), per review or per GET+LIST pair, alternating in
 * each round; the ratio is the webhook's over the floor's, per round.
 * Variants (`--variant='FLAGS'`, `--old=DIR`, as for the other figures)
 * are measured in the same rounds, each beside the same floors.
 *
 * @module
 */
import {
  buildTopology,
  createServingCert,
  grantWebhookReads,
  type KcpServer,
  startKcp,
  startWebhook,
} from "../testing/mod.ts";
import { type Spawned, startVariant, type Variant } from "./webhook_memory.ts";
import { formatSpread, median, spread } from "./_stats.ts";
import { cpuSeconds } from "./_scale_metrics.ts";
import {
  createBenchNamespace,
  deleteReview,
  type LiveVpc,
  sendReview,
} from "./_webhook_fixtures.ts";

/**
 * The webhook's CPU for `count` reviews, ms per review: of `target`, or
 * with `fast` of a type no rule protects (allowed without a read: what a
 * review costs the webhook before it reads kcp).
 */
async function webhookCpu(
  webhook: Measured,
  target: LiveVpc,
  options: { count: number; fast?: boolean },
): Promise<number> {
  const { count, fast = false } = options;
  const review = () =>
    deleteReview(target, fast ? { resource: "subnets" } : {});
  const client = Deno.createHttpClient({ caCerts: [webhook.caPem] });
  try {
    for (let i = 0; i < 5; i++) {
      await sendReview(webhook.url, review(), client);
    }
    const before = await cpuSeconds(webhook.pid);
    for (let i = 0; i < count; i++) {
      const answer = await sendReview(webhook.url, review(), client);
      if (answer.kind !== "allowed") {
        throw new Error(`review ${answer.kind}: ${answer.detail ?? ""}`);
      }
    }
    return (await cpuSeconds(webhook.pid) - before) * 1000 / count;
  } finally {
    client.close();
  }
}

/** The bare client's CPU for `count` GET and LISTs sent at once, ms per set. */
async function floorCpu(
  kcp: KcpServer,
  urls: { get: string; lists: readonly string[] },
  count: number,
): Promise<number> {
  const caFile = `${kcp.rootDir}/bench-ca.pem`;
  await Deno.writeTextFile(caFile, kcp.caPem);
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-read",
      "--allow-env",
      new URL("./_cpu_client.ts", import.meta.url).pathname,
      caFile,
      String(count),
      urls.get,
      ...urls.lists,
    ],
    env: { BENCH_TOKEN: kcp.identity("webhook").token },
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error("the floor client failed");
  const spent = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    user: number;
    system: number;
  };
  return (spent.user + spent.system) / 1000 / count;
}

/** A webhook process to measure. */
interface Measured {
  /** How the figures name it. */
  label: string;
  /** Its process id. */
  pid: number;
  /** Where reviews go. */
  url: string;
  /** The CA of its serving certificate. */
  caPem: string;
}

/** Options of {@linkcode cpuBench}. */
export interface CpuBenchOptions {
  /** Other webhooks measured beside this checkout's. @default {[]} */
  variants?: readonly Variant[];
  /** Rounds. @default {5} */
  rounds?: number;
  /** Reviews (and pairs) per round. @default {300} */
  count?: number;
}

/** Runs the figure on its own kcp and prints it. */
export async function cpuBench(options: CpuBenchOptions = {}): Promise<void> {
  const rounds = options.rounds ?? 5;
  const count = options.count ?? 300;
  const kcp = await startKcp();
  try {
    const topo = await buildTopology(kcp, {
      consumerPaths: ["root:consumers:bench"],
    });
    const consumer = topo.consumers[0]!;
    await kcp.kubectlOk([
      "apply",
      "-f",
      new URL(
        "../testing/fixtures/compute/dependencyrule-vm-vpc.yaml",
        import.meta.url,
      ).pathname,
    ], { workspace: topo.compute.path });
    await grantWebhookReads(kcp);
    const target = await createBenchNamespace(
      kcp,
      consumer.path,
      "bench-1",
      1,
    );
    const base = kcp.clusterUrl(consumer.cluster);
    const get =
      `${base}/apis/network.example.com/v1alpha1/namespaces/bench-1/vpcs/${target.metadata.name}`;
    const list =
      `${base}/apis/compute.example.com/v1alpha1/namespaces/bench-1/virtualmachines?limit=500`;
    // The identity check's read: which export each type is bound from.
    const bindings = `${base}/apis/apis.kcp.io/v1alpha2/apibindings`;
    const pair = { get, lists: [list] };
    const triple = { get, lists: [list, bindings] };
    const webhook = await startWebhook(kcp, { args: ["--log-level=warn"] });
    const others: Spawned[] = [];
    try {
      const cert = await createServingCert(`${kcp.rootDir}/bench-cpu-tls`);
      for (const variant of options.variants ?? []) {
        others.push(
          await startVariant(kcp, {
            ...variant,
            args: ["--log-level=warn", ...variant.args],
          }, cert),
        );
      }
      const hooks: Measured[] = [
        { label: "current", ...webhook, caPem: webhook.cert.caPem },
        ...others.map((spawned, i) => ({
          label: options.variants![i]!.label,
          pid: spawned.pid,
          url: spawned.url,
          caPem: cert.caPem,
        })),
      ];
      console.log(
        `\nCPU per slow-path review at one dependent (${count} per round, ${rounds} rounds, alternating):`,
      );
      console.log(
        "   webhook = its process's CPU per review; floor = a bare Deno client's CPU per set of reads sent at once",
      );
      const spent = hooks.map(() => [] as number[]);
      const fastSpent = hooks.map(() => [] as number[]);
      const pairs: number[] = [];
      const triples: number[] = [];
      for (let r = 0; r < rounds; r++) {
        // Which runs first alternates from round to round.
        const order = [
          "pair",
          "triple",
          ...hooks.map((_, i) => i),
        ];
        for (const which of r % 2 === 0 ? order : order.toReversed()) {
          if (which === "pair") pairs.push(await floorCpu(kcp, pair, count));
          else if (which === "triple") {
            triples.push(await floorCpu(kcp, triple, count));
          } else {
            const hook = hooks[which as number]!;
            spent[which as number]!.push(
              await webhookCpu(hook, target, { count }),
            );
            fastSpent[which as number]!.push(
              await webhookCpu(hook, target, { count, fast: true }),
            );
          }
        }
        console.log(
          `   round ${r + 1}: GET+LIST ${pairs[r]!.toFixed(3)} ms; ${
            hooks.map((h, i) =>
              `${h.label} ${spent[i]![r]!.toFixed(3)} ms (ratio ${
                (spent[i]![r]! / pairs[r]!).toFixed(2)
              })`
            ).join("; ")
          }`,
        );
      }
      console.log(
        `   floor GET+LIST ms ${
          formatSpread(spread(pairs), 3)
        }; GET+LIST+APIBindings LIST (the identity check's read) ms ${
          formatSpread(spread(triples), 3)
        }`,
      );
      hooks.forEach((hook, i) => {
        const ratios = (floor: number[]) =>
          spent[i]!.map((h, r) => h / floor[r]!);
        console.log(
          `   ${hook.label}: ms/review ${
            formatSpread(spread(spent[i]!), 3)
          }; ratio to GET+LIST ${
            formatSpread(spread(ratios(pairs)), 2)
          } (median ${
            median(ratios(pairs)).toFixed(2)
          }, target <= 1.5); to GET+LIST+bindings ${
            formatSpread(spread(ratios(triples)), 2)
          }; a fast-path review (no read) ms ${
            formatSpread(spread(fastSpent[i]!), 3)
          }`,
        );
      });
    } finally {
      for (const spawned of others) await spawned.stop();
      await webhook.stop();
    }
  } finally {
    await kcp.stop();
  }
}

if (import.meta.main) await cpuBench();
