/**
 * `deno task bench:teardown`: how long kcp takes to delete a namespace full
 * of protected objects and their dependents, with the webhook guarding them
 * against the same teardown where no webhook is installed, side by side.
 *
 * One kcp, two worlds (`testing/` `worldPaths`): `root:guarded` with the
 * VM -> VPC rule `Enforced` (its provider's ValidatingWebhookConfiguration
 * sends every VPC delete to the webhook) and `root:bare` with the same
 * exports and no rule (kcp calls no webhook for them). Both components run
 * as their own processes with the Deployment's flags and, unless
 * `--no-index`, the webhook's `--dependents-index` with its grants. Each
 * round fills one namespace in each world with `--targets` VPCs and
 * `--dependents` VMs (each VM names one VPC, in turn), waits for the index
 * to hold every VM, then deletes both namespaces one after the other (the
 * order alternates by round) and times each from the DELETE to the
 * Namespace being gone. kcp's namespace controller deletes VMs and VPCs
 * together; a VPC delete is denied while a VM names it, and the controller
 * retries until the VMs are gone.
 *
 * ```sh
 * deno task bench:teardown [--targets=1000] [--dependents=10000] [--rounds=3] [--no-index]
 * ```
 *
 * Prints min / median / max of each and of the per-round ratio
 * guarded / bare, and the index's answers during the teardowns.
 *
 * @module
 */
import {
  buildTopology,
  type ComponentProcess,
  grantWebhookReads,
  startController,
  startKcp,
  startWebhook,
  vmVpcRule,
  waitFor,
  waitForRuleEnforced,
  type WebhookProcess,
  worldPaths,
} from "../testing/mod.ts";
import { formatSpread, spread } from "./_stats.ts";
import {
  createParallel,
  namespaceObject,
  vmObject,
  vmsPath,
  vpcObject,
  vpcsPath,
} from "./_tenant_fixtures.ts";

const flags = new Map(
  Deno.args.map((a) => a.replace(/^--/, "").split("=")).map((
    [k, v],
  ) => [k!, v ?? "true"]),
);
const TARGETS = Number(flags.get("targets") ?? "1000");
const DEPENDENTS = Number(flags.get("dependents") ?? "10000");
const ROUNDS = Number(flags.get("rounds") ?? "3");
const INDEX = !flags.has("no-index");
const CREATE_PARALLEL = 16;
const ROOT = new URL("../", import.meta.url).pathname;

const guarded = worldPaths("root:guarded");
const bare = worldPaths("root:bare");
const CONSUMER = "c1";

const kcp = await startKcp();
let webhook: WebhookProcess | undefined;
let controller: ComponentProcess | undefined;
try {
  for (const world of [guarded, bare]) {
    await buildTopology(kcp, {
      networkPath: world.network,
      computePath: world.compute,
      consumerPaths: [world.consumer(CONSUMER)],
    });
  }
  if (INDEX) {
    await kcp.kubectlOk(
      ["apply", "-k", `${ROOT}manifests/kcp/system-admin/dependents-index`],
      { workspace: "system:admin", identity: "shardAdmin" },
    );
  }
  webhook = await startWebhook(kcp, {
    args: INDEX ? ["--dependents-index", "--log-level=info"] : [
      "--log-level=info",
    ],
  });
  controller = await startController(kcp, {
    webhook,
    args: ["--log-level=info"],
  });
  await kcp.request(
    "POST",
    `/clusters/${guarded.compute}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`,
    {
      body: vmVpcRule(guarded.network),
    },
  );
  await grantWebhookReads(kcp, { dependentsIndex: INDEX });
  await waitForRuleEnforced(kcp, {
    workspace: guarded.compute,
    name: "vm-vpc",
  });

  const metrics = async () =>
    await (await fetch(`http://127.0.0.1:${webhook!.metricsPort}/metrics`))
      .text();
  const indexed = async () => {
    const match = (await metrics()).match(
      /^dependency_webhook_index_dependents\{[^}]*\} (\d+)$/m,
    );
    return match === null ? 0 : Number(match[1]);
  };

  const times = { guarded: [] as number[], bare: [] as number[] };
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const namespace = `teardown-${round}`;
    for (const world of [guarded, bare]) {
      const consumer = world.consumer(CONSUMER);
      await kcp.request("POST", `/clusters/${consumer}/api/v1/namespaces`, {
        body: namespaceObject(namespace),
      });
      await createParallel(
        kcp,
        vpcsPath(consumer, namespace),
        TARGETS,
        (i) => vpcObject(`vpc-${i}`),
        CREATE_PARALLEL,
      );
      await createParallel(
        kcp,
        vmsPath(consumer, namespace),
        DEPENDENTS,
        (i) => vmObject(`vm-${i}`, `vpc-${i % TARGETS}`),
        CREATE_PARALLEL,
      );
    }
    if (INDEX) {
      await waitFor(
        "the index to hold every VM",
        async () => (await indexed()) >= DEPENDENTS || undefined,
        {
          timeoutMs: 600_000,
          intervalMs: 500,
        },
      );
    }
    const order = round % 2 === 0 ? [guarded, bare] : [bare, guarded];
    const took = new Map<string, number>();
    for (const world of order) {
      const consumer = world.consumer(CONSUMER);
      const started = performance.now();
      await kcp.request(
        "DELETE",
        `/clusters/${consumer}/api/v1/namespaces/${namespace}`,
      );
      await waitFor(
        `namespace ${namespace} in ${consumer} to be gone`,
        async () => {
          try {
            await kcp.request(
              "GET",
              `/clusters/${consumer}/api/v1/namespaces/${namespace}`,
            );
            return undefined;
          } catch {
            return true;
          }
        },
        { timeoutMs: 1_800_000, intervalMs: 100 },
      );
      took.set(world.prefix, performance.now() - started);
    }
    const g = took.get(guarded.prefix)!;
    const b = took.get(bare.prefix)!;
    times.guarded.push(g);
    times.bare.push(b);
    ratios.push(g / b);
    console.log(
      `round ${round + 1}: guarded ${(g / 1000).toFixed(1)} s, bare ${
        (b / 1000).toFixed(1)
      } s, ratio ${(g / b).toFixed(2)}`,
    );
  }
  console.log(
    `\n| ${TARGETS} VPCs, ${DEPENDENTS} VMs, ${ROUNDS} rounds${
      INDEX ? ", --dependents-index" : ""
    } | min / median / max |`,
  );
  console.log("| --- | --- |");
  console.log(
    `| with the webhook (s) | ${
      formatSpread(spread(times.guarded.map((t) => t / 1000)))
    } |`,
  );
  console.log(
    `| without (s) | ${
      formatSpread(spread(times.bare.map((t) => t / 1000)))
    } |`,
  );
  console.log(`| ratio | ${formatSpread(spread(ratios), 2)} |`);
  console.log(
    (await metrics()).split("\n").filter((l) =>
      l.startsWith("dependency_webhook_index_answers_total{") ||
      l.startsWith('dependency_webhook_admission_reviews_total{outcome="') ||
      // The webhook's own time per review, beside the teardown's.
      /^dependency_webhook_admission_review_duration_seconds_(sum|count)\{/
        .test(l)
    ).join("\n"),
  );
} finally {
  for (const process of [controller, webhook]) await process?.stop();
  await kcp.stop();
}
