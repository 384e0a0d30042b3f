/**
 * `deno task bench`: the webhook's figures on a real kcp, each as a ratio
 * measured side by side in one run.
 *
 * 1. Decision time of a DELETE review (POST /validate to the webhook
 *    process, which lists the dependents through kcp) against a bare LIST of
 *    the same dependents through kcp, with 1, 1 000 and 10 000 dependents in
 *    the namespace; alternating, median of each.
 * 2. Fast path (a DELETE no rule protects) over TLS keep-alive: reviews per
 *    second, against a bare Deno TLS server answering a fixed review.
 * 3. Resident memory of a fresh webhook with 1 000 rules registered, against
 *    the same process with one rule.
 *
 * @module
 */
import {
  buildTopology,
  dependencyRule,
  type KcpServer,
  startKcp,
  startWebhook,
  waitFor,
  type WebhookProcess,
} from "../tests/harness/mod.ts";
import { median } from "./_stats.ts";

const SIZES = [1, 1_000, 10_000];
const SAMPLES: Record<number, number> = { 1: 41, 1_000: 21, 10_000: 9 };
const FAST_REQUESTS = 20_000;
const CONCURRENCY = 16;

function vm(name: string, vpc: string): unknown {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: { name },
    spec: { vpcRef: { name: vpc } },
  };
}

async function createMany(
  kcp: KcpServer,
  url: string,
  count: number,
  make: (i: number) => unknown,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: 24 }, async () => {
    while (next < count) {
      const i = next++;
      await kcp.request("POST", url, { body: make(i) });
    }
  }));
}

function review(
  uid: string,
  resource: string,
  namespace: string,
  cluster: string,
): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "network.example.com", version: "v1alpha1", kind: "VPC" },
      resource: { group: "network.example.com", version: "v1alpha1", resource },
      name: "vpc-target",
      namespace,
      operation: "DELETE",
      userInfo: { username: "bench" },
      oldObject: {
        apiVersion: "network.example.com/v1alpha1",
        kind: "VPC",
        metadata: {
          name: "vpc-target",
          namespace,
          annotations: { "kcp.io/cluster": cluster },
        },
      },
      dryRun: false,
    },
  });
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function rss(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
}

async function heapUsedMb(webhook: WebhookProcess): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return Number(/^deno_heap_bytes\{kind="used"\} (\S+)$/m.exec(text)?.[1]) /
    1024 / 1024;
}

async function decisionSeconds(webhook: WebhookProcess): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  const match =
    /^dependency_webhook_admission_review_duration_seconds_sum\{outcome="allowed"\} (\S+)$/m
      .exec(text);
  return Number(match?.[1] ?? 0);
}

async function decisionBench(
  kcp: KcpServer,
  webhook: WebhookProcess,
  cluster: string,
): Promise<void> {
  const tls = Deno.createHttpClient({ caCerts: [webhook.cert.caPem] });
  const kcpClient = Deno.createHttpClient({ caCerts: [kcp.caPem] });
  const token = kcp.identity("webhook").token;
  console.log(
    "\n1. DELETE review vs bare LIST of the same dependents through kcp (median ms)",
  );
  console.log(
    "   decision = measured inside the webhook (parse, list, decide); review = as the client sees it",
  );
  console.log(
    "   dependents | decision | review | bare LIST | decision/LIST | review/LIST",
  );
  for (const n of SIZES) {
    const ns = `bench-${n}`;
    const listUrl = `${
      kcp.clusterUrl(cluster)
    }/apis/compute.example.com/v1alpha1/namespaces/${ns}/virtualmachines`;
    const decisions: number[] = [];
    const reviews: number[] = [];
    const lists: number[] = [];
    for (let i = 0; i < SAMPLES[n]!; i++) {
      const before = await decisionSeconds(webhook);
      const r = await timed(async () => {
        const response = await fetch(webhook.url, {
          method: "POST",
          body: review(`r-${n}-${i}`, "vpcs", ns, cluster),
          client: tls,
        });
        const answer = await response.json() as {
          response: { allowed: boolean };
        };
        if (!answer.response.allowed) {
          throw new Error(
            `review unexpectedly denied: ${JSON.stringify(answer)}`,
          );
        }
      });
      const decision = (await decisionSeconds(webhook) - before) * 1000;
      const l = await timed(async () => {
        const response = await fetch(listUrl, {
          headers: { authorization: `Bearer ${token}` },
          client: kcpClient,
        });
        const list = await response.json() as { items: unknown[] };
        if (list.items.length !== n) {
          throw new Error(`listed ${list.items.length}, want ${n}`);
        }
      });
      if (i > 0) { // the first round warms connections and caches
        decisions.push(decision);
        reviews.push(r);
        lists.push(l);
      }
    }
    const [md, mr, ml] = [median(decisions), median(reviews), median(lists)];
    console.log(
      `   ${String(n).padStart(10)} | ${md.toFixed(1).padStart(8)} | ${
        mr.toFixed(1).padStart(6)
      } | ${ml.toFixed(1).padStart(9)} | ${
        (md / ml).toFixed(2).padStart(13)
      } | ${(mr / ml).toFixed(2)}`,
    );
  }
  tls.close();
  kcpClient.close();
}

async function throughput(
  url: string,
  caPem: string,
  cluster: string,
): Promise<number> {
  const client = Deno.createHttpClient({ caCerts: [caPem] });
  const body = review("fast", "subnets", "default", cluster);
  let sent = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (sent < FAST_REQUESTS) {
      sent++;
      const response = await fetch(url, { method: "POST", body, client });
      await response.arrayBuffer();
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  client.close();
  return FAST_REQUESTS / seconds;
}

async function fastPathBench(
  webhook: WebhookProcess,
  cluster: string,
): Promise<void> {
  const port = webhook.port + 1;
  const echo = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-read",
      new URL("./_echo_server.ts", import.meta.url).pathname,
      webhook.cert.dir,
      String(port),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = echo.stdout.pipeThrough(new TextDecoderStream()).getReader();
  await reader.read();
  reader.releaseLock();
  await throughput(webhook.url, webhook.cert.caPem, cluster); // warm up both
  const echoUrl = `https://127.0.0.1:${port}/validate`;
  await throughput(echoUrl, webhook.cert.caPem, cluster);
  const ours = await throughput(webhook.url, webhook.cert.caPem, cluster);
  const bare = await throughput(echoUrl, webhook.cert.caPem, cluster);
  echo.kill("SIGTERM");
  await echo.status;
  await echo.stdout.cancel().catch(() => {});
  console.log(
    `\n2. Fast path (no matching rule) over TLS keep-alive, ${FAST_REQUESTS} reviews, ${CONCURRENCY} in flight`,
  );
  console.log(
    `   webhook: ${ours.toFixed(0)} reviews/s; bare TLS server: ${
      bare.toFixed(0)
    } reviews/s; ratio ${(ours / bare).toFixed(2)}`,
  );
}

async function waitForRules(
  webhook: WebhookProcess,
  count: number,
): Promise<void> {
  await waitFor(`${count} rules in the webhook`, async () => {
    const { text } = await webhook.get(webhook.metricsPort, "/metrics");
    return new RegExp(
      `^dependency_webhook_rules\\{state="valid"\\} ${count}$`,
      "m",
    ).test(text) || undefined;
  }, { timeoutMs: 120_000 });
}

async function memoryBench(
  kcp: KcpServer,
  computePath: string,
  webhook: WebhookProcess,
): Promise<void> {
  const oneRule = await rss(webhook.pid);
  const oneRuleHeap = await heapUsedMb(webhook);
  const url =
    `/clusters/${computePath}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`;
  await createMany(kcp, url, 999, (i) =>
    dependencyRule(`bench-rule-${i}`, {
      dependencies: [{
        path: "root:providers:network",
        group: `g${i}.network.example.com`,
        resource: "vpcs",
        field: `.spec.ref${i}.name`,
      }],
    }));
  await waitForRules(webhook, 1000);
  const thousand = await rss(webhook.pid);
  const thousandHeap = await heapUsedMb(webhook);
  console.log("\n3. Webhook resident memory (V8 heap in use)");
  console.log(
    `   1 rule: ${oneRule.toFixed(1)} MB (${
      oneRuleHeap.toFixed(1)
    }); 1000 rules: ${thousand.toFixed(1)} MB (${
      thousandHeap.toFixed(1)
    }); ratio ${(thousand / oneRule).toFixed(2)}`,
  );
}

/** `memory` runs only the memory figure (no 11 000 dependents to create). */
const only = Deno.args[0];
if (only !== undefined && only !== "memory") {
  console.error(
    `webhook_bench: the only mode is 'memory': current value is '${only}'`,
  );
  Deno.exit(2);
}

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
      "../tests/fixtures/compute/dependencyrule-vm-vpc.yaml",
      import.meta.url,
    ).pathname,
  ], {
    workspace: topo.compute.path,
  });
  console.log(
    `kcp ready in ${(kcp.lastStartupMs / 1000).toFixed(1)} s; creating ${
      SIZES.reduce((a, b) => a + b)
    } VMs`,
  );
  for (const n of only === "memory" ? [] : SIZES) {
    const ns = `bench-${n}`;
    await kcp.request("POST", `/clusters/${consumer.path}/api/v1/namespaces`, {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
    });
    await createMany(
      kcp,
      `/clusters/${consumer.path}/apis/compute.example.com/v1alpha1/namespaces/${ns}/virtualmachines`,
      n,
      (i) => vm(`vm-${i}`, `vpc-${i}`),
    );
  }
  // Memory first, on a fresh process: nothing but the rules in its heap.
  const fresh = await startWebhook(kcp, { args: ["--log-level=info"] });
  try {
    await waitForRules(fresh, 1);
    await memoryBench(kcp, topo.compute.path, fresh);
  } finally {
    await fresh.stop();
  }
  if (only !== "memory") {
    const webhook = await startWebhook(kcp, { args: ["--log-level=info"] });
    try {
      await waitForRules(webhook, 1000);
      await decisionBench(kcp, webhook, consumer.cluster);
      await fastPathBench(webhook, consumer.cluster);
    } finally {
      await webhook.stop();
    }
  }
} finally {
  await kcp.stop();
}
