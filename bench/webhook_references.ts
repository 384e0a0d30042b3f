/**
 * Figure 1b of `deno task bench`: what references beyond a dot path cost. A
 * DELETE review as kcp sees it against a bare LIST of the same dependents,
 * side by side, for
 *
 * - a `[*]` path: 1 000 VirtualMachines with 5 NICs each, rule path
 *   `.spec.nics[*].subnetRef.name`, the review about an unreferenced Subnet;
 * - a namespace path: 1 000 VirtualMachines in 10 namespaces, rule path
 *   `.spec.vpcRef.name` with `namespacePath: .spec.vpcRef.namespace`, the
 *   review about an unreferenced VPC in the first namespace; the webhook
 *   lists every namespace, and so does the bare LIST.
 *
 * Each row's consumer workspace holds only its own dependents. Before a row
 * is measured, a probe object that one dependent refers to (through the
 * fourth NIC; from another namespace) must be denied: the rule is loaded and
 * does what it says.
 *
 * @module
 */
import {
  dependencyRule,
  grantWebhookReads,
  type KcpServer,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";
import { formatSpread, median, spread } from "./_stats.ts";
import {
  createMany,
  deleteReview,
  type LiveVpc,
  sendReview,
} from "./_webhook_fixtures.ts";

/** Rounds; each round's ratio of medians is one figure. */
const ROUNDS = 3;
/** Samples per round. */
const SAMPLES = 10;
/** Dependents per row. */
const DEPENDENTS = 1_000;

/** Where the rows run: the compute provider and two empty consumers. */
export interface ReferencesSetup {
  /** The compute provider's workspace path, where rules go. */
  computePath: string;
  /** A consumer for the `[*]` row: path and logical cluster. */
  lists: { path: string; cluster: string };
  /** A consumer for the namespace-path row: path and logical cluster. */
  namespaces: { path: string; cluster: string };
}

/** One row: what to review, what to list, and how many items the list has. */
interface Row {
  label: string;
  target: LiveVpc;
  resource: string;
  listUrl: string;
  items: number;
}

/** Runs figure 1b against `webhook` and prints its rows. */
export async function referencesBench(
  kcp: KcpServer,
  webhook: WebhookProcess,
  setup: ReferencesSetup,
): Promise<void> {
  console.log(
    "\n1b. References beyond a dot path: review vs bare LIST of the same dependents, ms, min / median / max",
  );
  console.log(
    `   ${"row".padEnd(38)} | ${"items".padStart(5)} | ${
      "review".padEnd(23)
    } | ${"bare LIST".padEnd(23)} | review/LIST per round`,
  );
  const lists = await listsRow(kcp, webhook, setup);
  await measure(kcp, webhook, lists);
  const namespaces = await namespacesRow(kcp, webhook, setup);
  await measure(kcp, webhook, namespaces);
}

async function listsRow(
  kcp: KcpServer,
  webhook: WebhookProcess,
  setup: ReferencesSetup,
): Promise<Row> {
  const { path, cluster } = setup.lists;
  const ns = "nics";
  await createNamespace(kcp, path, ns);
  await createMany(kcp, vmsUrl(path, ns), DEPENDENTS, (i) =>
    vm(`vm-${i}`, {
      nics: Array.from({ length: 5 }, (_, k) => ({
        subnetRef: { name: `subnet-${i}-${k}` },
      })),
    }));
  await createMany(kcp, vmsUrl(path, ns), 1, () =>
    vm("vm-probe", {
      nics: Array.from({ length: 5 }, (_, k) => ({
        subnetRef: { name: k === 3 ? "subnet-probe" : `other-${k}` },
      })),
    }));
  const subnets = networkUrl(path, ns, "subnets");
  const target = await createLive(kcp, subnets, "Subnet", "subnet-target");
  const probe = await createLive(kcp, subnets, "Subnet", "subnet-probe");
  await applyRule(kcp, setup.computePath, "bench-nics", {
    resource: "subnets",
    fieldRef: { path: ".spec.nics[*].subnetRef.name" },
  });
  await waitForDenial(webhook, probe, "subnets", ".spec.nics[3].subnetRef");
  return {
    label: `[*] path, ${DEPENDENTS} dependents x 5`,
    target,
    resource: "subnets",
    listUrl: `${
      kcp.clusterUrl(cluster)
    }/apis/compute.example.com/v1alpha1/namespaces/${ns}/virtualmachines?limit=10000`,
    items: DEPENDENTS + 1,
  };
}

async function namespacesRow(
  kcp: KcpServer,
  webhook: WebhookProcess,
  setup: ReferencesSetup,
): Promise<Row> {
  const { path, cluster } = setup.namespaces;
  const namespaces = Array.from({ length: 10 }, (_, k) => `ns-${k}`);
  for (const ns of namespaces) await createNamespace(kcp, path, ns);
  const perNamespace = DEPENDENTS / namespaces.length;
  // Every dependent names a VPC in the next namespace; none names the target.
  for (const [k, ns] of namespaces.entries()) {
    await createMany(kcp, vmsUrl(path, ns), perNamespace, (i) =>
      vm(`vm-${i}`, {
        vpcRef: { name: `vpc-${i}`, namespace: namespaces[(k + 1) % 10] },
      }));
  }
  await createMany(
    kcp,
    vmsUrl(path, "ns-1"),
    1,
    () => vm("vm-probe", { vpcRef: { name: "vpc-probe", namespace: "ns-0" } }),
  );
  const vpcs = networkUrl(path, "ns-0", "vpcs");
  const target = await createLive(kcp, vpcs, "VPC", "vpc-target");
  const probe = await createLive(kcp, vpcs, "VPC", "vpc-probe");
  await applyRule(kcp, setup.computePath, "bench-namespaces", {
    resource: "vpcs",
    fieldRef: {
      path: ".spec.vpcRef.name",
      namespacePath: ".spec.vpcRef.namespace",
    },
  });
  await waitForDenial(webhook, probe, "vpcs", "VirtualMachine/ns-1/vm-probe");
  return {
    label: `namespacePath, ${DEPENDENTS} in 10 namespaces`,
    target,
    resource: "vpcs",
    listUrl: `${
      kcp.clusterUrl(cluster)
    }/apis/compute.example.com/v1alpha1/virtualmachines?limit=10000`,
    items: DEPENDENTS + 1,
  };
}

/** Measures one row: review and bare LIST alternating, the first sample dropped. */
async function measure(
  kcp: KcpServer,
  webhook: WebhookProcess,
  row: Row,
): Promise<void> {
  const client = Deno.createHttpClient({ caCerts: [webhook.cert.caPem] });
  const kcpClient = Deno.createHttpClient({ caCerts: [kcp.caPem] });
  const token = kcp.identity("webhook").token;
  const review = () =>
    timed(async () => {
      const answer = await sendReview(
        webhook.url,
        deleteReview(row.target, { resource: row.resource }),
        client,
      );
      if (answer.kind !== "allowed") {
        throw new Error(
          `${row.label}: review unexpectedly ${answer.kind}: ${
            answer.detail ?? ""
          }`,
        );
      }
    });
  const list = () =>
    timed(async () => {
      const response = await fetch(row.listUrl, {
        headers: {
          accept: "application/json",
          authorization: `Bearer ${token}`,
        },
        client: kcpClient,
      });
      const body = await response.json() as { items?: unknown[] };
      if (body.items?.length !== row.items) {
        throw new Error(`listed ${body.items?.length}, want ${row.items}`);
      }
    });
  const reviews: number[][] = Array.from({ length: ROUNDS }, () => []);
  const lists: number[][] = Array.from({ length: ROUNDS }, () => []);
  try {
    for (let i = 0; i < SAMPLES * ROUNDS + 1; i++) {
      // Alternating which goes first cancels what one leaves the other.
      let r: number;
      let l: number;
      if (i % 2 === 0) {
        r = await review();
        l = await list();
      } else {
        l = await list();
        r = await review();
      }
      if (i === 0) continue;
      const round = Math.floor((i - 1) / SAMPLES);
      reviews[round]!.push(r);
      lists[round]!.push(l);
    }
  } finally {
    client.close();
    kcpClient.close();
  }
  const ratios = spread(
    reviews.map((samples, k) => median(samples) / median(lists[k]!)),
  );
  console.log(
    `   ${row.label.padEnd(38)} | ${String(row.items).padStart(5)} | ${
      formatSpread(spread(reviews.flat())).padEnd(23)
    } | ${formatSpread(spread(lists.flat())).padEnd(23)} | ${
      formatSpread(ratios, 2)
    }`,
  );
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

function vm(name: string, spec: Record<string, unknown>): unknown {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: { name },
    spec,
  };
}

function vmsUrl(workspace: string, ns: string): string {
  return `/clusters/${workspace}/apis/compute.example.com/v1alpha1/namespaces/${ns}/virtualmachines`;
}

function networkUrl(workspace: string, ns: string, resource: string): string {
  return `/clusters/${workspace}/apis/network.example.com/v1alpha1/namespaces/${ns}/${resource}`;
}

async function createNamespace(
  kcp: KcpServer,
  workspace: string,
  name: string,
): Promise<void> {
  await kcp.request("POST", `/clusters/${workspace}/api/v1/namespaces`, {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
  });
}

/** Creates a network object at `collection` and returns it as kcp serves it. */
async function createLive(
  kcp: KcpServer,
  collection: string,
  kind: string,
  name: string,
): Promise<LiveVpc> {
  await kcp.request("POST", collection, {
    body: {
      apiVersion: "network.example.com/v1alpha1",
      kind,
      metadata: { name },
      spec: kind === "VPC" ? { cidr: "10.0.0.0/16" } : {},
    },
  });
  return await kcp.request<LiveVpc>("GET", `${collection}/${name}`);
}

/** Applies a rule in which VirtualMachines refer to a network type. */
async function applyRule(
  kcp: KcpServer,
  computePath: string,
  name: string,
  dependency: {
    resource: "vpcs" | "subnets";
    fieldRef: Record<string, string>;
  },
): Promise<void> {
  const rule = dependencyRule(name, {
    dependencies: [{
      path: "root:providers:network",
      resource: dependency.resource,
      field: dependency.fieldRef.path!,
    }],
  }) as { spec: { dependencies: Record<string, unknown>[] } };
  rule.spec.dependencies[0]!.fieldRef = dependency.fieldRef;
  await kcp.kubectlOk(["apply", "-f", "-"], {
    workspace: computePath,
    stdin: JSON.stringify(rule),
  });
  // The webhook's identity reads only the rules' types.
  await grantWebhookReads(kcp);
}

/** Waits until a review of `probe` is denied with `expected` in the message. */
async function waitForDenial(
  webhook: WebhookProcess,
  probe: LiveVpc,
  resource: string,
  expected: string,
): Promise<void> {
  const client = Deno.createHttpClient({ caCerts: [webhook.cert.caPem] });
  try {
    await waitFor(
      `the webhook to deny ${resource}/${probe.metadata.name}`,
      async () => {
        const answer = await sendReview(
          webhook.url,
          deleteReview(probe, { resource }),
          client,
        );
        return (answer.kind === "denied_other" &&
          (answer.detail ?? "").includes(expected)) || undefined;
      },
      { timeoutMs: 120_000 },
    );
  } finally {
    client.close();
  }
}
