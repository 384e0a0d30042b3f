/**
 * Figure 1c of `deno task bench`: what an owner review costs. A rule whose
 * reference is read on the protected object (`fieldRef: {from: Target,
 * path: .metadata.ownerReferences[*].name}`, `spec.dependent`
 * VirtualMachine) protects Subnets: a DELETE review of a Subnet lists
 * nothing, the webhook GETs the Subnet's metadata, then the VirtualMachine
 * its ownerReferences name (kind, group and uid matching), and denies while
 * it exists. In each namespace of figure 1 (1, 1 000 and 10 000
 * VirtualMachines), the review of a Subnet owned by `vm-0` is measured side
 * by side with its floor (the same two GETs one after the other, sent by a
 * bare client with the webhook's token), with the floor of a denial (those
 * two, then the workspace's LogicalCluster, which every denial reads: is
 * kcp deleting the workspace?) and with figure 1's review (a VPC no
 * VirtualMachine refers to: every VirtualMachine of the namespace listed);
 * the owner review must stay flat.
 *
 * Each sample runs the LIST-based review, then an owner review and a floor
 * that are not counted, then the owner review and the floor counted, in
 * alternating order: a LIST of 10 000 leaves kcp and the webhook a few ms
 * slower for the next requests (garbage to collect), which would otherwise
 * be charged to whatever comes next. That first owner review after the LIST
 * review is printed too, apart.
 *
 * Before measuring, the owned Subnet must be denied as owned by `vm-0` in
 * every namespace (the rule is loaded and does what it says), and a Subnet
 * whose ownerReferences name a VirtualMachine that does not exist allowed.
 * Every measured owner review is asserted denied, every LIST-based review
 * allowed. The rule is deleted afterwards (and the owned Subnet allowed
 * again), so that later figures see Subnets as they were.
 *
 * @module
 */
import {
  dependencyRule,
  grantWebhookReads,
  type KcpApi,
  waitFor,
} from "../testing/mod.ts";
import { formatSpread, median, spread } from "./_stats.ts";
import {
  type Answer,
  decisionSeconds,
  deleteReview,
  type LiveVpc,
  METADATA_ONLY,
  sendReview,
  timed,
  vmsPath,
} from "./_webhook_fixtures.ts";

/** Rounds per size; each round's ratio of medians is one figure. */
const ROUNDS = 3;
/** Samples per round and size (the LIST-based review is the slow one). */
const SAMPLES: Record<number, number> = { 1: 20, 1_000: 10, 10_000: 5 };
/** The orders of a sample's owner review (0) and floors (1: two GETs, 2: three). */
const ORDERS = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1], [2, 1, 0], [
  1,
  0,
  2,
]];
/** The owner rule's name, in the compute provider. */
const RULE = "bench-owners";
/** The Subnet under review in each namespace, owned by `vm-0`. */
const OWNED = "subnet-owned";
/** A Subnet whose ownerReferences name a VirtualMachine that does not exist. */
const ORPHAN = "subnet-orphan";
/** Where the rule reads the owner's name. */
const OWNER_PATH = ".metadata.ownerReferences[*].name";
/**
 * An ownerReference kcp's garbage collector cannot resolve (no API serves
 * its group): the orphan carries it so that the collector leaves it alone
 * rather than delete it for its dangling VirtualMachine reference. The rule
 * skips it (not of the VirtualMachine's kind and group).
 */
const GC_ANCHOR = {
  apiVersion: "gc-anchor.example.com/v1",
  kind: "Anchor",
  name: "anchor",
  uid: "00000000-0000-4000-8000-00000000a0c4",
} as const;

/** The webhook under measure: where it serves and what its CA is. */
export interface OwnersWebhook {
  /** Its `/validate` URL. */
  url: string;
  /** Its metrics port (the decision's duration). */
  metricsPort: number;
  /** Its serving certificate's CA. */
  cert: { caPem: string };
}

/** Where figure 1c runs: figure 1's namespaces and their VPCs. */
export interface OwnersSetup {
  /** The compute provider's workspace path, where the rule goes. */
  computePath: string;
  /** The consumer of figure 1: path and logical cluster. */
  consumer: { path: string; cluster: string };
  /**
   * Figure 1's VPC in `bench-<n>`, by the VirtualMachines in that
   * namespace (`vm-0`... each referring to another VPC).
   */
  targets: ReadonlyMap<number, LiveVpc>;
}

/** One namespace's objects: what to review and what the floor reads. */
interface Size {
  n: number;
  namespace: string;
  owned: LiveVpc;
  vpc: LiveVpc;
  /** The owner's uid (`vm-0`). */
  ownerUid: string;
}

/** Runs figure 1c against `webhook` and prints its rows. */
export async function ownersBench(
  kcp: KcpApi,
  webhook: OwnersWebhook,
  setup: OwnersSetup,
): Promise<void> {
  const sizes: Size[] = [];
  for (const [n, vpc] of setup.targets) {
    const namespace = vpc.metadata.namespace;
    const owner = await kcp.request<{ metadata: { uid: string } }>(
      "GET",
      `${vmsPath(setup.consumer.path, namespace)}/vm-0`,
    );
    const ownerUid = owner.metadata.uid;
    const owned = await createSubnet(kcp, setup.consumer.path, namespace, {
      name: OWNED,
      ownerReferences: [vmReference("vm-0", ownerUid)],
    });
    await createSubnet(kcp, setup.consumer.path, namespace, {
      name: ORPHAN,
      ownerReferences: [
        vmReference("vm-gone", crypto.randomUUID()),
        GC_ANCHOR,
      ],
    });
    sizes.push({ n, namespace, owned, vpc, ownerUid });
  }
  await applyRule(kcp, setup.computePath);
  const client = Deno.createHttpClient({ caCerts: [webhook.cert.caPem] });
  try {
    // Loaded when the first owned Subnet is denied; then every one must be.
    await waitFor("the webhook to deny subnets/subnet-owned", async () => {
      const answer = await review(webhook, client, sizes[0]!.owned);
      return isOwnedDenial(answer) || undefined;
    }, { timeoutMs: 120_000 });
    for (const size of sizes) {
      expectOwned(await review(webhook, client, size.owned), size);
      const orphan = await kcp.request<LiveVpc>(
        "GET",
        `${
          networkUrl(setup.consumer.path, size.namespace, "subnets")
        }/${ORPHAN}`,
      );
      const answer = await review(webhook, client, orphan);
      if (answer.kind !== "allowed") {
        throw new Error(
          `subnets/${ORPHAN} in ${size.namespace} (owner gone): ${answer.kind}: ${
            answer.detail ?? ""
          }`,
        );
      }
    }
    printHeader();
    for (const size of sizes) {
      await measure(kcp, webhook, client, setup.consumer.cluster, size);
    }
  } finally {
    await kcp.request(
      "DELETE",
      `/clusters/${setup.computePath}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules/${RULE}`,
    );
    // Later figures review Subnets as no rule protects them.
    await waitFor("the webhook to drop the owner rule", async () => {
      const answer = await review(webhook, client, sizes[0]!.owned);
      return answer.kind === "allowed" || undefined;
    }, { timeoutMs: 120_000 });
    client.close();
  }
}

function printHeader(): void {
  console.log(
    `\n1c. Owner review (fieldRef from: Target, ${OWNER_PATH}) vs its bare floor and figure 1's LIST-based review, ms, min / median / max`,
  );
  console.log(
    "   owner review = POST /validate of a DELETE of a Subnet whose ownerReferences name VirtualMachine vm-0, denied (it exists); nothing listed;",
  );
  console.log(
    "   bare GET, GET = the Subnet's metadata GET, then vm-0's GET, with the webhook's token: the least an owner review can take;",
  );
  console.log(
    "   bare GET, GET, GET = the same, then the workspace's LogicalCluster (metadata), as every denial reads it (is kcp deleting it?);",
  );
  console.log(
    "   LIST review = figure 1's review in the same namespace (every VirtualMachine listed, allowed);",
  );
  console.log(
    "   decision = the owner review's duration inside the webhook (its metric); the first sample of each size is dropped;",
  );
  console.log(
    `   ratios (owner/floor, owner/denial floor, owner/LIST review) = of the medians in each of ${ROUNDS} rounds, min / median / max;`,
  );
  console.log(
    "   each sample: the LIST review, then an owner review and a floor not counted (a LIST of thousands leaves kcp and the webhook",
  );
  console.log(
    "   slower for the next few requests; that first owner review is the last column), then the owner review and both floors, each order in turn",
  );
  console.log(
    `   ${"VMs".padStart(6)} | ${"samples".padStart(7)} | ${
      "owner review".padEnd(24)
    } | ${"bare GET, GET".padEnd(24)} | ${"bare GET, GET, GET".padEnd(24)} | ${
      "LIST review".padEnd(24)
    } | ${"decision".padEnd(23)} | ${"owner/floor per round".padEnd(23)} | ${
      "owner/denial floor".padEnd(23)
    } | ${"owner/LIST review".padEnd(23)} | owner review right after LIST`,
  );
}

/**
 * Measures one size: each sample the LIST-based review, then the owner
 * review and its floors in turn; the first sample dropped.
 */
async function measure(
  kcp: KcpApi,
  webhook: OwnersWebhook,
  client: Deno.HttpClient,
  cluster: string,
  size: Size,
): Promise<void> {
  const kcpClient = Deno.createHttpClient({ caCerts: [kcp.caPem] });
  const token = kcp.identity("webhook").token;
  const base = `${kcp.clusterUrl(cluster)}/apis`;
  const subnetUrl =
    `${base}/network.example.com/v1alpha1/namespaces/${size.namespace}/subnets/${OWNED}`;
  const ownerUrl =
    `${base}/compute.example.com/v1alpha1/namespaces/${size.namespace}/virtualmachines/vm-0`;
  const logicalClusterUrl =
    `${base}/core.kcp.io/v1alpha1/logicalclusters/cluster`;
  /** GETs `url`; `uid`: the one it must have, else it must not be deleting. */
  const get = async (url: string, accept: string, uid?: string) => {
    const response = await fetch(url, {
      headers: { accept, authorization: `Bearer ${token}` },
      client: kcpClient,
    });
    const object = await response.json() as {
      metadata?: { uid?: string; deletionTimestamp?: string };
    };
    const metadata = object.metadata;
    if (
      metadata === undefined ||
      (uid === undefined
        ? metadata.deletionTimestamp !== undefined
        : metadata.uid !== uid)
    ) {
      throw new Error(`GET ${url}: ${JSON.stringify(object)}`);
    }
  };
  const floor = () =>
    timed(async () => {
      await get(subnetUrl, METADATA_ONLY, size.owned.metadata.uid);
      await get(ownerUrl, "application/json", size.ownerUid);
    });
  // A denial also asks whether kcp is deleting the workspace.
  const denialFloor = () =>
    timed(async () => {
      await get(subnetUrl, METADATA_ONLY, size.owned.metadata.uid);
      await get(ownerUrl, "application/json", size.ownerUid);
      await get(logicalClusterUrl, METADATA_ONLY);
    });
  const ownerReview = async () => {
    const before = await decisionSeconds(webhook.metricsPort, "denied_owned");
    const body = deleteReview(size.owned, { resource: "subnets" });
    let answer: Answer | undefined;
    const ms = await timed(async () => {
      answer = await sendReview(webhook.url, body, client);
    });
    expectOwned(answer!, size);
    const after = await decisionSeconds(webhook.metricsPort, "denied_owned");
    return { ms, decision: (after - before) * 1000 };
  };
  const listReview = () => {
    const body = deleteReview(size.vpc);
    return timed(async () => {
      const answer = await sendReview(webhook.url, body, client);
      if (answer.kind !== "allowed") {
        throw new Error(
          `LIST review in ${size.namespace} unexpectedly ${answer.kind}: ${
            answer.detail ?? ""
          }`,
        );
      }
    });
  };
  const rounds = Array.from({ length: ROUNDS }, () => ({
    owners: [] as number[],
    floors: [] as number[],
    denialFloors: [] as number[],
    lists: [] as number[],
  }));
  const decisions: number[] = [];
  /** The settling owner reviews: each the first request after a LIST review. */
  const afterList: number[] = [];
  const samples = SAMPLES[size.n] ?? 10;
  try {
    for (let i = 0; i < samples * ROUNDS + 1; i++) {
      const list = await listReview();
      // A LIST of thousands leaves kcp and the webhook slower for the next
      // few requests: an owner review and a floor, not counted, take that.
      const settling = await ownerReview();
      await floor();
      let owner = 0;
      let decision = 0;
      let bare = 0;
      let bareDenial = 0;
      // Every order in turn cancels what one leaves the others.
      for (const slot of ORDERS[i % ORDERS.length]!) {
        if (slot === 0) ({ ms: owner, decision } = await ownerReview());
        else if (slot === 1) bare = await floor();
        else bareDenial = await denialFloor();
      }
      if (i === 0) continue; // the first sample warms connections and caches
      const round = rounds[Math.floor((i - 1) / samples)]!;
      round.owners.push(owner);
      round.floors.push(bare);
      round.denialFloors.push(bareDenial);
      round.lists.push(list);
      decisions.push(decision);
      afterList.push(settling.ms);
    }
  } finally {
    kcpClient.close();
  }
  const all = (pick: (r: (typeof rounds)[number]) => number[]) =>
    formatSpread(spread(rounds.flatMap(pick))).padEnd(24);
  const ratios = (over: (r: (typeof rounds)[number]) => number[], digits = 2) =>
    formatSpread(
      spread(rounds.map((r) => median(r.owners) / median(over(r)))),
      digits,
    );
  console.log(
    `   ${String(size.n).padStart(6)} | ${
      String(decisions.length).padStart(7)
    } | ${all((r) => r.owners)} | ${all((r) => r.floors)} | ${
      all((r) => r.denialFloors)
    } | ${all((r) => r.lists)} | ${
      formatSpread(spread(decisions)).padEnd(23)
    } | ${ratios((r) => r.floors).padEnd(23)} | ${
      ratios((r) => r.denialFloors).padEnd(23)
    } | ${ratios((r) => r.lists, 3).padEnd(23)} | ${
      formatSpread(spread(afterList))
    }`,
  );
}

/** A DELETE review of a Subnet, as kcp sends it, answered by the webhook. */
function review(
  webhook: OwnersWebhook,
  client: Deno.HttpClient,
  subnet: LiveVpc,
): Promise<Answer> {
  return sendReview(
    webhook.url,
    deleteReview(subnet, { resource: "subnets" }),
    client,
  );
}

/** Whether `answer` denies the owned Subnet for its owner `vm-0`. */
function isOwnedDenial(answer: Answer): boolean {
  return answer.kind === "denied_other" &&
    (answer.detail ?? "").includes(
      `it belongs to VirtualMachine/vm-0 (.metadata.ownerReferences[0].name), which still exists`,
    );
}

function expectOwned(answer: Answer, size: Size): void {
  if (!isOwnedDenial(answer)) {
    throw new Error(
      `subnets/${OWNED} in ${size.namespace}: want denied as owned by vm-0, got ${answer.kind}: ${
        answer.detail ?? ""
      }`,
    );
  }
}

/** Applies the owner rule: VirtualMachines own the Subnets that name them. */
async function applyRule(kcp: KcpApi, computePath: string): Promise<void> {
  const rule = dependencyRule(RULE, {
    dependencies: [{
      path: "root:providers:network",
      resource: "subnets",
      field: OWNER_PATH,
    }],
  }) as { spec: { dependencies: Record<string, unknown>[] } };
  rule.spec.dependencies[0]!.fieldRef = { from: "Target", path: OWNER_PATH };
  await kcp.kubectlOk(["apply", "-f", "-"], {
    workspace: computePath,
    stdin: JSON.stringify(rule),
  });
  // The webhook's identity reads only the rules' types: get on the owners'.
  await grantWebhookReads(kcp);
}

function vmReference(name: string, uid: string): Record<string, unknown> {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    name,
    uid,
  };
}

/** Creates a Subnet with `ownerReferences` and returns it as kcp serves it. */
async function createSubnet(
  kcp: KcpApi,
  workspace: string,
  namespace: string,
  subnet: { name: string; ownerReferences: readonly unknown[] },
): Promise<LiveVpc> {
  const collection = networkUrl(workspace, namespace, "subnets");
  await kcp.request("POST", collection, {
    body: {
      apiVersion: "network.example.com/v1alpha1",
      kind: "Subnet",
      metadata: { name: subnet.name, ownerReferences: subnet.ownerReferences },
      spec: {},
    },
  });
  return await kcp.request<LiveVpc>("GET", `${collection}/${subnet.name}`);
}

function networkUrl(
  workspace: string,
  namespace: string,
  resource: string,
): string {
  return `/clusters/${workspace}/apis/network.example.com/v1alpha1/namespaces/${namespace}/${resource}`;
}
