/**
 * One owner's delete removes everything it owns, in dependency order (seed
 * 003, "GlobalOwner"), on a real kcp with nothing but kcp's own garbage
 * collector and DependencyRules: no controller of ours deletes anything.
 *
 * The network provider also exports an owner type, Project
 * (`testing/fixtures/projects/`: its export replaces the shared one before a
 * consumer binds it, and its Subnets name their VPC in `.spec.vpcRef.name`).
 * In a consumer, a Project owns VPCs, Subnets and VirtualMachines through
 * `metadata.ownerReferences` (blockOwnerDeletion), and two rules of the
 * default kind (`from: Dependent`) order them: a VirtualMachine refers to its
 * Subnet, a Subnet to its VPC.
 *
 * - `kubectl delete project --cascade=foreground`: kcp's garbage collector
 *   deletes the owned objects, the webhook denies each Subnet and VPC while
 *   something still refers to it (the collector retries), and the Project
 *   goes last. `--cascade=background`: the Project goes first, then the same
 *   order. Watches on the four types, started before the delete, record the
 *   order (kcp's resourceVersion of each DELETED event) and the times.
 * - The owner rule (issue 23): dependent Project, dependencies VPC, Subnet
 *   and VirtualMachine with `fieldRef: {from: Target, path:
 *   .metadata.ownerReferences[*].name}`. With `protectWhile: Active` a
 *   foreground delete of the owner still completes (the Project has a
 *   deletionTimestamp, so it no longer protects what it owns). With
 *   `protectWhile: Exists` it is held: every owned object stays, the Project
 *   stays with its deletionTimestamp, kcp's garbage collector logs our
 *   denial (kcp's log, an operator's view: the collector records no Event,
 *   and the Project shows only its deletionTimestamp and kcp's
 *   foregroundDeletion finalizer), and a user sees the reason only by
 *   deleting an owned object. Three ways out, each completing the teardown
 *   in dependency order: the user deletes the Project again with
 *   `--cascade=background` (the apiserver takes the latest policy and drops
 *   foregroundDeletion, so the owner is gone at once); the user deletes the
 *   namespace (kcp's namespace controller deletes with Background too); the
 *   provider switches the rule to Active.
 *
 * A probe Project that our own finalizer keeps deleting shows when the
 * webhook has taken each `protectWhile`. Every teardown prints its order and
 * times.
 */
import assert from "node:assert/strict";
import {
  applyFiles,
  applyObjects,
  bindExport,
  buildTopology,
  type ComponentProcess,
  createWorkspace,
  dependencyRule,
  grantWebhookReads,
  type KcpServer,
  kcpTest,
  sample,
  startController,
  startWebhook,
  waitFor,
  waitForExportIdentity,
  type WebhookProcess,
} from "../../testing/mod.ts";

const NETWORK = "root:providers:network";
const COMPUTE = "root:providers:compute";
const C1 = "root:consumers:c1";
const FIXTURES =
  new URL("../../testing/fixtures/projects/", import.meta.url).pathname;

/** The rule that makes Projects protect what they own. */
const OWNER_RULE = "project-owns";
/** Our finalizer on the probe Project: it stays deleting until we let it go. */
const HOLD = "owner-teardown.example.com/hold";

/** VPCs per Project, Subnets per VPC, VirtualMachines per Subnet. */
const SHAPE = { vpcs: 3, subnetsPerVpc: 2, vmsPerSubnet: 2 } as const;

/** The four types of a teardown, as a watch names them. */
const TYPES = {
  projects: { group: "network.example.com", kind: "Project" },
  vpcs: { group: "network.example.com", kind: "VPC" },
  subnets: { group: "network.example.com", kind: "Subnet" },
  virtualmachines: { group: "compute.example.com", kind: "VirtualMachine" },
} as const;
type Resource = keyof typeof TYPES;

/** What a Project owns, named with its key (`<key>-vpc-0`, ...). */
interface Owned {
  vpcs: string[];
  /** Each Subnet and the VPC it names. */
  subnets: { name: string; vpc: string }[];
  /** Each VirtualMachine and the Subnet it names. */
  vms: { name: string; subnet: string }[];
}

function ownedBy(key: string): Owned {
  const owned: Owned = { vpcs: [], subnets: [], vms: [] };
  for (let v = 0; v < SHAPE.vpcs; v++) {
    const vpc = `${key}-vpc-${v}`;
    owned.vpcs.push(vpc);
    for (let s = 0; s < SHAPE.subnetsPerVpc; s++) {
      const subnet = `${key}-subnet-${v}-${s}`;
      owned.subnets.push({ name: subnet, vpc });
      for (let m = 0; m < SHAPE.vmsPerSubnet; m++) {
        owned.vms.push({ name: `${key}-vm-${v}-${s}-${m}`, subnet });
      }
    }
  }
  return owned;
}

function count(owned: Owned): number {
  return owned.vpcs.length + owned.subnets.length + owned.vms.length;
}

/** `metadata.ownerReferences` naming the Project, as a controller writes them. */
function ownerReferences(project: { name: string; uid: string }): unknown[] {
  return [{
    apiVersion: "network.example.com/v1alpha1",
    kind: "Project",
    name: project.name,
    uid: project.uid,
    blockOwnerDeletion: true,
  }];
}

/** The objects a Project owns, each with its owner reference. */
function ownedObjects(
  namespace: string,
  owned: Owned,
  project: { name: string; uid: string },
): unknown[] {
  const metadata = (name: string) => ({
    name,
    namespace,
    ownerReferences: ownerReferences(project),
  });
  return [
    ...owned.vpcs.map((name) => ({
      apiVersion: "network.example.com/v1alpha1",
      kind: "VPC",
      metadata: metadata(name),
      spec: { cidr: "10.0.0.0/16" },
    })),
    ...owned.subnets.map((s) => ({
      apiVersion: "network.example.com/v1alpha1",
      kind: "Subnet",
      metadata: metadata(s.name),
      spec: { cidr: "10.0.1.0/24", vpcRef: { name: s.vpc } },
    })),
    ...owned.vms.map((m) => ({
      apiVersion: "compute.example.com/v1alpha1",
      kind: "VirtualMachine",
      metadata: metadata(m.name),
      spec: { subnetRef: { name: m.subnet } },
    })),
  ];
}

/**
 * Creates the namespace, the Project `key` in it, and what it owns; returns
 * the Project's uid.
 */
async function createProject(
  kcp: KcpServer,
  namespace: string,
  key: string,
  owned: Owned,
): Promise<string> {
  await applyObjects(kcp, C1, [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
    {
      apiVersion: "network.example.com/v1alpha1",
      kind: "Project",
      metadata: { name: key, namespace },
      spec: { description: `owns the network and VMs of ${namespace}` },
    },
  ]);
  const uid = await kcp.kubectlOk([
    "get",
    "project",
    key,
    "-n",
    namespace,
    "-o",
    "jsonpath={.metadata.uid}",
  ], { workspace: C1 });
  assert.match(uid, /^[0-9a-f-]{36}$/);
  await applyObjects(
    kcp,
    C1,
    ownedObjects(namespace, owned, { name: key, uid }),
  );
  return uid;
}

/** The Subnet -> VPC rule in the network provider (dependent Subnet). */
function subnetVpcRule(): unknown {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "subnet-vpc" },
    spec: {
      dependent: {
        apiExportName: "network.example.com",
        group: "network.example.com",
        version: "v1alpha1",
        kind: "Subnet",
        resource: "subnets",
      },
      dependencies: [{
        apiExportRef: { path: NETWORK, name: "network.example.com" },
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpcRef.name" },
      }],
    },
  };
}

/**
 * The owner rule of issue 23 in the network provider: a Project protects the
 * VPCs, Subnets and VirtualMachines whose ownerReferences name it.
 */
function ownerRule(protectWhile: "Active" | "Exists"): unknown {
  const owned = (
    path: string,
    exportName: string,
    resource: string,
  ) => ({
    apiExportRef: { path, name: exportName },
    group: exportName,
    version: "v1alpha1",
    resource,
    fieldRef: { from: "Target", path: ".metadata.ownerReferences[*].name" },
  });
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: OWNER_RULE },
    spec: {
      dependent: {
        apiExportName: "network.example.com",
        group: "network.example.com",
        version: "v1alpha1",
        kind: "Project",
        resource: "projects",
      },
      protectWhile,
      dependencies: [
        owned(NETWORK, "network.example.com", "vpcs"),
        owned(NETWORK, "network.example.com", "subnets"),
        owned(COMPUTE, "compute.example.com", "virtualmachines"),
      ],
    },
  };
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** Waits until a rule is Ready=True (Enforced) for its current generation. */
async function waitForEnforced(
  kcp: KcpServer,
  workspace: string,
  name: string,
): Promise<void> {
  await waitFor(`rule ${workspace}/${name} to be Enforced`, async () => {
    const object = JSON.parse(
      await kcp.kubectlOk(["get", "dependencyrules", name, "-o", "json"], {
        workspace,
      }),
    ) as {
      metadata: { generation: number };
      status?: { observedGeneration?: number; conditions?: Condition[] };
    };
    const ready = object.status?.conditions?.find((c) => c.type === "Ready");
    return (ready?.status === "True" && ready.reason === "Enforced" &&
      object.status?.observedGeneration === object.metadata.generation) ||
      undefined;
  }, { timeoutMs: 60_000, intervalMs: 200 });
}

/** `kubectl delete <resource> <name> -n <namespace>`, maybe as a dry run. */
function deleteObject(
  kcp: KcpServer,
  resource: Resource,
  namespace: string,
  name: string,
  options: { dryRun?: boolean } = {},
) {
  return kcp.kubectl([
    "delete",
    resource,
    name,
    "-n",
    namespace,
    ...(options.dryRun ? ["--dry-run=server"] : []),
  ], { workspace: C1 });
}

/**
 * Polls a server-side dry-run delete until it is denied with a message
 * matching `denial` (or, with `undefined`, allowed); returns the stderr.
 */
function waitForDryRun(
  kcp: KcpServer,
  resource: Resource,
  namespace: string,
  name: string,
  denial: RegExp | undefined,
): Promise<string> {
  return waitFor(
    `a delete of ${resource} ${namespace}/${name} to be ${
      denial === undefined ? "allowed" : `denied matching ${denial}`
    }`,
    async () => {
      const r = await deleteObject(kcp, resource, namespace, name, {
        dryRun: true,
      });
      if (denial === undefined) return r.code === 0 ? r.stdout : undefined;
      return r.code !== 0 && denial.test(r.stderr) ? r.stderr : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** Waits until the rules order what `key` owns in `namespace`. */
async function waitForReferences(
  kcp: KcpServer,
  namespace: string,
  owned: Owned,
): Promise<void> {
  const vm = owned.vms[0]!;
  const subnet = owned.subnets[0]!;
  await waitForDryRun(
    kcp,
    "subnets",
    namespace,
    vm.subnet,
    new RegExp(`still referenced by VirtualMachine/${vm.name} `),
  );
  await waitForDryRun(
    kcp,
    "vpcs",
    namespace,
    subnet.vpc,
    new RegExp(`still referenced by Subnet/${subnet.name} `),
  );
}

/** One event a watch saw for an object of the teardown. */
interface Seen {
  resource: Resource;
  namespace: string;
  name: string;
  /** `deleting`: the first event with a deletionTimestamp; `deleted`: DELETED. */
  event: "deleting" | "deleted";
  /** kcp's resourceVersion of the event (one counter per shard). */
  revision: bigint;
  /** When it arrived (`performance.now()`). */
  at: number;
}

/**
 * A watch on one type in the consumer (all namespaces) that records, per
 * object, when it got its deletionTimestamp and when it was deleted.
 */
class TeardownWatch {
  readonly seen: Seen[] = [];
  /** Resolves once kcp answered the watch: later events are not missed. */
  readonly ready: Promise<void>;
  readonly #stop = new AbortController();
  readonly #client: Deno.HttpClient;
  readonly #deleting = new Set<string>();
  readonly #done: Promise<void>;
  /** Why the stream broke off before it was stopped, if it did. */
  ended: unknown = undefined;

  constructor(kcp: KcpServer, resource: Resource) {
    this.#client = Deno.createHttpClient({ caCerts: [kcp.caPem] });
    const { group } = TYPES[resource];
    const url = `${
      kcp.clusterUrl(C1)
    }/apis/${group}/v1alpha1/${resource}?watch=true`;
    const ready = Promise.withResolvers<void>();
    this.ready = ready.promise;
    this.#done = this.#run(
      url,
      kcp.identity("admin").token,
      resource,
      ready,
    );
  }

  async #run(
    url: string,
    token: string,
    resource: Resource,
    ready: PromiseWithResolvers<void>,
  ): Promise<void> {
    try {
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${token}` },
        client: this.#client,
        signal: this.#stop.signal,
      });
      if (response.status !== 200) {
        throw new Error(`watch ${url}: ${response.status}`);
      }
      ready.resolve();
      let buffer = "";
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        let newline;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          this.#record(resource, line, performance.now());
        }
      }
    } catch (error) {
      ready.reject(error);
      if (!this.#stop.signal.aborted) this.ended = error;
    }
  }

  #record(resource: Resource, line: string, at: number): void {
    const event = JSON.parse(line) as {
      type: string;
      object: {
        metadata: {
          name: string;
          namespace: string;
          resourceVersion: string;
          deletionTimestamp?: string;
        };
      };
    };
    const { name, namespace, resourceVersion, deletionTimestamp } =
      event.object.metadata;
    const key = `${namespace}/${name}`;
    const seen = { resource, namespace, name, revision: 0n, at };
    if (event.type === "ERROR") {
      this.ended = new Error(`watch error: ${line}`);
      return;
    }
    if (
      event.type === "MODIFIED" && deletionTimestamp !== undefined &&
      !this.#deleting.has(key)
    ) {
      this.#deleting.add(key);
      this.seen.push({
        ...seen,
        event: "deleting",
        revision: BigInt(resourceVersion),
      });
    }
    if (event.type === "DELETED") {
      this.seen.push({
        ...seen,
        event: "deleted",
        revision: BigInt(resourceVersion),
      });
    }
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
    this.#client.close();
  }
}

/** Watches on the four types, ready when they all are. */
async function watchTeardown(kcp: KcpServer): Promise<TeardownWatch[]> {
  const watches = (Object.keys(TYPES) as Resource[]).map((r) =>
    new TeardownWatch(kcp, r)
  );
  await Promise.all(watches.map((w) => w.ready));
  return watches;
}

/** What a teardown's watches saw in one namespace. */
interface Teardown {
  /** Every `deleted` event, in kcp's order (resourceVersion). */
  deleted: Seen[];
  /** Every `deleting` event, in kcp's order. */
  deleting: Seen[];
  /** `performance.now()` the times are measured from. */
  from: number;
}

async function stopWatches(
  watches: TeardownWatch[],
  namespace: string,
  from: number,
): Promise<Teardown> {
  for (const w of watches) await w.stop();
  for (const w of watches) {
    assert.equal(w.ended, undefined, `a watch broke off: ${w.ended}`);
  }
  const all = watches.flatMap((w) => w.seen)
    .filter((s) => s.namespace === namespace)
    .sort((a, b) => (a.revision < b.revision ? -1 : 1));
  return {
    deleted: all.filter((s) => s.event === "deleted"),
    deleting: all.filter((s) => s.event === "deleting"),
    from,
  };
}

/** The revision of `name`'s DELETED event; fails if the watch missed it. */
function deletedAt(t: Teardown, resource: Resource, name: string): Seen {
  const seen = t.deleted.find((s) =>
    s.resource === resource && s.name === name
  );
  assert.ok(seen !== undefined, `the watch saw ${resource}/${name} deleted`);
  return seen;
}

/**
 * Asserts that every owned object was deleted, each VirtualMachine before
 * its Subnet and each Subnet before its VPC.
 */
function assertDependencyOrder(t: Teardown, owned: Owned): void {
  assert.equal(
    t.deleted.filter((s) => s.resource !== "projects").length,
    count(owned),
    "every owned object was deleted once",
  );
  for (const vm of owned.vms) {
    const v = deletedAt(t, "virtualmachines", vm.name);
    const s = deletedAt(t, "subnets", vm.subnet);
    assert.ok(
      v.revision < s.revision,
      `VirtualMachine ${vm.name} (${v.revision}) went before Subnet ${vm.subnet} (${s.revision})`,
    );
  }
  for (const subnet of owned.subnets) {
    const s = deletedAt(t, "subnets", subnet.name);
    const v = deletedAt(t, "vpcs", subnet.vpc);
    assert.ok(
      s.revision < v.revision,
      `Subnet ${subnet.name} (${s.revision}) went before VPC ${subnet.vpc} (${v.revision})`,
    );
  }
}

/** Where the Project's DELETED event is among the others: first or last. */
function projectPlace(t: Teardown, key: string): "first" | "last" | "middle" {
  const index = t.deleted.findIndex((s) =>
    s.resource === "projects" && s.name === key
  );
  assert.ok(index >= 0, `the watch saw Project ${key} deleted`);
  return index === 0
    ? "first"
    : index === t.deleted.length - 1
    ? "last"
    : "middle";
}

/** `VirtualMachine x12 -> Subnet x6 -> ...`: runs of one kind in kcp's order. */
function runs(seen: readonly Seen[]): string {
  const parts: { kind: string; n: number }[] = [];
  for (const s of seen) {
    const kind = TYPES[s.resource].kind;
    const last = parts[parts.length - 1];
    if (last?.kind === kind) last.n++;
    else parts.push({ kind, n: 1 });
  }
  return parts.map((p) => p.n === 1 ? p.kind : `${p.kind} x${p.n}`).join(
    " -> ",
  );
}

/** `VirtualMachine 0.31-0.52 s, ...`: per kind, first and last time. */
function times(t: Teardown, seen: readonly Seen[]): string {
  const s = (ms: number) => ((ms - t.from) / 1000).toFixed(2);
  return (Object.keys(TYPES) as Resource[]).flatMap((r) => {
    const at = seen.filter((x) => x.resource === r).map((x) => x.at);
    if (at.length === 0) return [];
    const first = Math.min(...at);
    const last = Math.max(...at);
    return [
      `${TYPES[r].kind}${at.length > 1 ? ` x${at.length}` : ""} ${
        at.length > 1 ? `${s(first)}-${s(last)}` : s(first)
      } s`,
    ];
  }).join(", ");
}

/** Prints a teardown's order and times, measured from `since`. */
function report(
  label: string,
  t: Teardown,
  extra: string,
  since = "the delete",
): void {
  console.log(
    [
      `${label}:`,
      `  deleted, in kcp's order: ${runs(t.deleted)}`,
      `  deleted, s after ${since}: ${times(t, t.deleted)}`,
      ...(t.deleting.length === 0 ? [] : [
        `  deletionTimestamp set, s after ${since}: ${times(t, t.deleting)}`,
      ]),
      `  ${extra}`,
    ].join("\n"),
  );
}

/** The webhook's count of reviews with `outcome`. */
async function reviews(
  webhook: WebhookProcess,
  outcome: string,
): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return sample(
    text,
    `dependency_webhook_admission_reviews_total{outcome="${outcome}"}`,
  ) ?? 0;
}

/** The denial counters the teardowns report. */
async function denials(webhook: WebhookProcess) {
  return {
    referenced: await reviews(webhook, "denied_referenced"),
    owned: await reviews(webhook, "denied_owned"),
  };
}

/** The objects of the four types left in `namespace`. */
async function leftIn(kcp: KcpServer, namespace: string): Promise<string[]> {
  const out = await kcp.kubectlOk([
    "get",
    Object.keys(TYPES).join(","),
    "-n",
    namespace,
    "-o",
    "name",
  ], { workspace: C1 });
  return out.split("\n").filter((l) => l !== "");
}

/** Waits, with a generous bound, until nothing of the four types is left. */
async function waitForEmpty(kcp: KcpServer, namespace: string): Promise<void> {
  await waitFor(
    `every Project, VPC, Subnet and VirtualMachine in ${namespace} to be gone`,
    async () => (await leftIn(kcp, namespace)).length === 0 || undefined,
    { timeoutMs: 300_000, intervalMs: 100 },
  );
}

/**
 * Deletes the Project `key` with `cascade`, waits until it and what it owns
 * are gone, and returns what the watches saw.
 */
async function teardown(
  kcp: KcpServer,
  namespace: string,
  key: string,
  cascade: "foreground" | "background",
): Promise<Teardown> {
  const watches = await watchTeardown(kcp);
  const from = performance.now();
  await kcp.kubectlOk([
    "delete",
    "project",
    key,
    "-n",
    namespace,
    `--cascade=${cascade}`,
    "--wait=false",
  ], { workspace: C1 });
  await waitForEmpty(kcp, namespace);
  return await stopWatches(watches, namespace, from);
}

/** The part of kcp's log written since `offset`. */
async function kcpLogSince(kcp: KcpServer, offset: number): Promise<string> {
  const bytes = await Deno.readFile(`${kcp.rootDir}/kcp.log`);
  return new TextDecoder().decode(bytes.subarray(offset));
}

async function kcpLogSize(kcp: KcpServer): Promise<number> {
  return (await Deno.stat(`${kcp.rootDir}/kcp.log`)).size;
}

/**
 * The lines of kcp's log where its garbage collector gave up on an item
 * for now (it retries): `"Unhandled Error" err="error syncing item ...: <why>"`.
 */
function gcErrors(log: string): string[] {
  return log.split("\n").filter((l) =>
    l.includes("garbagecollector.go") && l.includes("error syncing item")
  );
}

/**
 * Creates the Project `key` (in the namespace `key`) and what it owns,
 * deletes it with `--cascade=foreground`, and waits until kcp's garbage
 * collector was denied every owned object (kcp's log says so). Returns the
 * seconds from the delete until then.
 */
async function holdTeardown(
  kcp: KcpServer,
  key: string,
  owned: Owned,
): Promise<number> {
  await createProject(kcp, key, key, owned);
  await waitForReferences(kcp, key, owned);
  const offset = await kcpLogSize(kcp);
  const from = performance.now();
  await kcp.kubectlOk([
    "delete",
    "project",
    key,
    "-n",
    key,
    "--cascade=foreground",
    "--wait=false",
  ], { workspace: C1 });
  const list = ownedList(owned);
  await waitFor(
    `kcp's garbage collector to be denied every object Project ${key} owns`,
    async () => {
      const lines = gcErrors(await kcpLogSince(kcp, offset));
      return list.every(([resource, name]) =>
        lines.some((l) => ownerDenial(resource, name, key).test(l))
      ) || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  return (performance.now() - from) / 1000;
}

/** `cannot delete <resource>/<name>: it belongs to Project/<key> (...)`. */
function ownerDenial(resource: Resource, name: string, key: string): RegExp {
  return new RegExp(
    `cannot delete ${resource}/${name}: it belongs to Project/${key} \\(\\.metadata\\.ownerReferences\\[0\\]\\.name\\), which still exists`,
  );
}

/** Every owned object as `[resource, name]`. */
function ownedList(owned: Owned): [Resource, string][] {
  return [
    ...owned.vpcs.map((n) => ["vpcs", n] as [Resource, string]),
    ...owned.subnets.map((s) => ["subnets", s.name] as [Resource, string]),
    ...owned.vms.map((m) => ["virtualmachines", m.name] as [Resource, string]),
  ];
}

kcpTest(
  "owner teardown: deleting a Project removes what it owns in dependency order with kcp's garbage collector; an Exists owner rule holds it, Active lets it go",
  async (kcp, step) => {
    let webhook: WebhookProcess | undefined;
    let controller: ComponentProcess | undefined;
    try {
      await step(
        "the network provider exports Projects and Subnets that name their VPC; a consumer binds both providers",
        async () => {
          await buildTopology(kcp, {
            networkPath: NETWORK,
            computePath: COMPUTE,
            consumerPaths: [],
          });
          // Before any consumer binds it: the export's Subnets take this
          // test's schema, and Projects join it.
          await applyFiles(kcp, NETWORK, [
            `${FIXTURES}apiresourceschema-projects.yaml`,
            `${FIXTURES}apiresourceschema-subnets.yaml`,
            `${FIXTURES}apiexport.yaml`,
          ]);
          await waitForExportIdentity(kcp, NETWORK, "network.example.com");
          const schemas = await kcp.kubectlOk([
            "get",
            "apiexport",
            "network.example.com",
            "-o",
            "jsonpath={.spec.resources[*].schema}",
          ], { workspace: NETWORK });
          assert.equal(
            schemas,
            "v1alpha1.vpcs.network.example.com owned.subnets.network.example.com v1alpha1.projects.network.example.com",
          );
          await createWorkspace(kcp, C1);
          await bindExport(kcp, C1, {
            exportPath: NETWORK,
            exportName: "network.example.com",
          });
          await bindExport(kcp, C1, {
            exportPath: COMPUTE,
            exportName: "compute.example.com",
          });
          await waitFor("the four types to be served in c1", async () => {
            const r = await kcp.kubectl(
              ["get", Object.keys(TYPES).join(","), "-A"],
              { workspace: C1 },
            );
            return r.code === 0 || undefined;
          });
          webhook = await startWebhook(kcp);
          controller = await startController(kcp, { webhook });
        },
      );

      await step(
        "rules of the default kind: a VirtualMachine refers to its Subnet, a Subnet to its VPC",
        async () => {
          await applyObjects(kcp, COMPUTE, [
            dependencyRule("vm-subnet", {
              dependencies: [{
                path: NETWORK,
                resource: "subnets",
                field: ".spec.subnetRef.name",
              }],
            }),
          ]);
          await applyObjects(kcp, NETWORK, [subnetVpcRule()]);
          await grantWebhookReads(kcp);
          await waitForEnforced(kcp, COMPUTE, "vm-subnet");
          await waitForEnforced(kcp, NETWORK, "subnet-vpc");
        },
      );

      await step(
        "kubectl delete project --cascade=foreground: VirtualMachines, then Subnets, then VPCs, then the Project",
        async () => {
          const owned = ownedBy("fg");
          await createProject(kcp, "fg", "fg", owned);
          await waitForReferences(kcp, "fg", owned);
          const before = await denials(webhook!);
          const t = await teardown(kcp, "fg", "fg", "foreground");
          const after = await denials(webhook!);
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "fg"), "last");
          // The Project is marked first and waits for what it owns.
          assert.equal(t.deleting[0]?.resource, "projects");
          const denied = after.referenced - before.referenced;
          // The collector queues what the Project owns in the order of a Go
          // map, at random: the webhook's denials are what keep the order.
          // (Three trees of 7 objects: a random order meets every edge by
          // itself about once in 250 000 runs.)
          assert.ok(denied > 0, "the webhook denied some of kcp's deletes");
          report(
            "foreground",
            t,
            `${denied} deletes denied (denied_referenced) and retried by kcp's garbage collector`,
          );
        },
      );

      await step(
        "kubectl delete project --cascade=background: the Project goes at once, then the same order",
        async () => {
          const owned = ownedBy("bg");
          await createProject(kcp, "bg", "bg", owned);
          await waitForReferences(kcp, "bg", owned);
          const before = await denials(webhook!);
          const t = await teardown(kcp, "bg", "bg", "background");
          const after = await denials(webhook!);
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "bg"), "first");
          const denied = after.referenced - before.referenced;
          assert.ok(denied > 0, "the webhook denied some of kcp's deletes");
          report(
            "background",
            t,
            `${denied} deletes denied (denied_referenced) and retried by kcp's garbage collector`,
          );
        },
      );

      await step(
        "an owner rule (from: Target, protectWhile: Active): an active Project protects what it owns, one being deleted does not",
        async () => {
          await applyObjects(kcp, NETWORK, [ownerRule("Active")]);
          const role = await grantWebhookReads(kcp);
          assert.match(role, /- projects\n/);
          await waitForEnforced(kcp, NETWORK, OWNER_RULE);
          // A probe: a Project our own finalizer keeps deleting, owning one
          // VirtualMachine (background: kcp's collector leaves it alone
          // while its owner exists).
          await applyObjects(kcp, C1, [
            {
              apiVersion: "v1",
              kind: "Namespace",
              metadata: { name: "probe" },
            },
            {
              apiVersion: "network.example.com/v1alpha1",
              kind: "Project",
              metadata: {
                name: "probe",
                namespace: "probe",
                finalizers: [HOLD],
              },
              spec: {},
            },
          ]);
          const uid = await kcp.kubectlOk([
            "get",
            "project",
            "probe",
            "-n",
            "probe",
            "-o",
            "jsonpath={.metadata.uid}",
          ], { workspace: C1 });
          await applyObjects(kcp, C1, [{
            apiVersion: "compute.example.com/v1alpha1",
            kind: "VirtualMachine",
            metadata: {
              name: "probe-vm",
              namespace: "probe",
              ownerReferences: ownerReferences({ name: "probe", uid }),
            },
            spec: {},
          }]);
          const denied = await waitForDryRun(
            kcp,
            "virtualmachines",
            "probe",
            "probe-vm",
            ownerDenial("virtualmachines", "probe-vm", "probe"),
          );
          assert.match(denied, /Conflict/);
          await kcp.kubectlOk([
            "delete",
            "project",
            "probe",
            "-n",
            "probe",
            "--wait=false",
          ], { workspace: C1 });
          // Active: the probe, now being deleted, no longer protects.
          await waitForDryRun(
            kcp,
            "virtualmachines",
            "probe",
            "probe-vm",
            undefined,
          );
        },
      );

      await step(
        "with protectWhile: Active, the owner's foreground delete completes in dependency order",
        async () => {
          const owned = ownedBy("active");
          await createProject(kcp, "active", "active", owned);
          await waitForReferences(kcp, "active", owned);
          // The active Project protects each object it owns.
          for (
            const [resource, name] of [
              ["vpcs", owned.vpcs[0]!],
              ["subnets", owned.subnets[0]!.name],
              ["virtualmachines", owned.vms[0]!.name],
            ] as [Resource, string][]
          ) {
            await waitForDryRun(
              kcp,
              resource,
              "active",
              name,
              ownerDenial(resource, name, "active"),
            );
          }
          const r = await deleteObject(
            kcp,
            "virtualmachines",
            "active",
            owned.vms[0]!.name,
          );
          assert.notEqual(r.code, 0, "a user's delete of an owned VM");
          assert.match(
            r.stderr,
            ownerDenial("virtualmachines", owned.vms[0]!.name, "active"),
          );
          const before = await denials(webhook!);
          const t = await teardown(kcp, "active", "active", "foreground");
          const after = await denials(webhook!);
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "active"), "last");
          assert.equal(t.deleting[0]?.resource, "projects");
          report(
            "foreground, owner rule Active",
            t,
            `${after.referenced - before.referenced} denied_referenced, ${
              after.owned - before.owned
            } denied_owned`,
          );
        },
      );

      await step(
        "switching the owner rule to protectWhile: Exists: a Project being deleted protects again",
        async () => {
          await kcp.kubectlOk([
            "patch",
            "dependencyrule",
            OWNER_RULE,
            "--type=merge",
            "-p",
            '{"spec":{"protectWhile":"Exists"}}',
          ], { workspace: NETWORK });
          await waitForEnforced(kcp, NETWORK, OWNER_RULE);
          await waitForDryRun(
            kcp,
            "virtualmachines",
            "probe",
            "probe-vm",
            ownerDenial("virtualmachines", "probe-vm", "probe"),
          );
        },
      );

      await step(
        "with protectWhile: Exists, a user lets a held Project go by deleting it again with --cascade=background",
        async () => {
          const owned = ownedBy("rebg");
          const held = await holdTeardown(kcp, "rebg", owned);
          // The apiserver takes the latest propagation policy: Background
          // drops kcp's foregroundDeletion finalizer, the Project goes, and
          // with it what held its objects.
          const watches = await watchTeardown(kcp);
          const before = await denials(webhook!);
          const from = performance.now();
          await kcp.kubectlOk([
            "delete",
            "project",
            "rebg",
            "-n",
            "rebg",
            "--cascade=background",
            "--wait=false",
          ], { workspace: C1 });
          await waitForEmpty(kcp, "rebg");
          const t = await stopWatches(watches, "rebg", from);
          const after = await denials(webhook!);
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "rebg"), "first");
          report(
            "foreground, owner rule Exists, released by the user's second delete with --cascade=background",
            t,
            `held: kcp's garbage collector denied all ${
              count(owned)
            } owned objects within ${
              held.toFixed(2)
            } s of the first delete; after the second: ${
              after.owned - before.owned
            } denied_owned, ${
              after.referenced - before.referenced
            } denied_referenced`,
            "the second delete",
          );
        },
      );

      await step(
        "with protectWhile: Exists, deleting the held Project's namespace lets it go: kcp's namespace controller deletes with Background",
        async () => {
          const owned = ownedBy("nsdel");
          const held = await holdTeardown(kcp, "nsdel", owned);
          const watches = await watchTeardown(kcp);
          const before = await denials(webhook!);
          const from = performance.now();
          await kcp.kubectlOk(
            ["delete", "namespace", "nsdel", "--wait=false"],
            {
              workspace: C1,
            },
          );
          // What the Namespace says meanwhile, as a user reads it.
          const messages = new Set<string>();
          await waitFor("namespace nsdel to be gone", async () => {
            const r = await kcp.kubectl(
              ["get", "namespace", "nsdel", "-o", "json"],
              { workspace: C1 },
            );
            if (/NotFound/.test(r.stderr)) return true;
            const ns = JSON.parse(r.stdout) as {
              status?: { conditions?: Condition[] };
            };
            for (const c of ns.status?.conditions ?? []) {
              if (c.status === "True") messages.add(`${c.type}: ${c.message}`);
            }
            return undefined;
          }, { timeoutMs: 300_000, intervalMs: 100 });
          const t = await stopWatches(watches, "nsdel", from);
          const after = await denials(webhook!);
          assertDependencyOrder(t, owned);
          report(
            "foreground, owner rule Exists, released by deleting the namespace",
            t,
            `held: kcp's garbage collector denied all ${
              count(owned)
            } owned objects within ${
              held.toFixed(2)
            } s of the Project's delete; after the namespace's delete: ${
              after.owned - before.owned
            } denied_owned, ${
              after.referenced - before.referenced
            } denied_referenced; the Namespace's True conditions seen meanwhile: ${
              messages.size === 0 ? "none" : [...messages].join(" | ")
            }`,
            "the namespace's delete",
          );
        },
      );

      let heldOwned: Owned | undefined;
      await step(
        "with protectWhile: Exists, the owner's foreground delete is held: what it owns stays, the Project stays deleting",
        async () => {
          const owned = heldOwned = ownedBy("held");
          const before = await denials(webhook!);
          const offset = await kcpLogSize(kcp);
          const held = await holdTeardown(kcp, "held", owned);
          // kcp's garbage collector says why in kcp's log, an operator's view.
          const line = gcErrors(await kcpLogSince(kcp, offset)).find((l) =>
            ownerDenial("virtualmachines", owned.vms[0]!.name, "held").test(l)
          )!;
          assert.match(line, /admission webhook .*denied the request/);
          // Everything it owns is still there, not even marked.
          const objects = JSON.parse(
            await kcp.kubectlOk([
              "get",
              "vpcs,subnets,virtualmachines",
              "-n",
              "held",
              "-o",
              "json",
            ], { workspace: C1 }),
          ) as { items: { metadata: { deletionTimestamp?: string } }[] };
          assert.equal(objects.items.length, count(owned));
          assert.ok(
            objects.items.every((o) =>
              o.metadata.deletionTimestamp === undefined
            ),
            "no owned object is being deleted",
          );
          // The Project waits with its deletionTimestamp and kcp's
          // foregroundDeletion finalizer; it shows no reason.
          const project = JSON.parse(
            await kcp.kubectlOk(
              ["get", "project", "held", "-n", "held", "-o", "json"],
              { workspace: C1 },
            ),
          ) as {
            metadata: { deletionTimestamp?: string; finalizers?: string[] };
            status?: unknown;
          };
          assert.ok(project.metadata.deletionTimestamp !== undefined);
          assert.deepEqual(project.metadata.finalizers, ["foregroundDeletion"]);
          assert.equal(project.status, undefined);
          // kcp's garbage collector records no Event about it.
          const events = await kcp.kubectlOk(
            ["get", "events", "-A", "-o", "json"],
            { workspace: C1 },
          );
          assert.doesNotMatch(events, /belongs to Project/);
          // A user sees the reason by deleting an owned object.
          for (
            const [resource, name] of [
              ["virtualmachines", owned.vms[0]!.name],
              ["subnets", owned.subnets[0]!.name],
              ["vpcs", owned.vpcs[0]!],
            ] as [Resource, string][]
          ) {
            const r = await deleteObject(kcp, resource, "held", name);
            assert.notEqual(r.code, 0, `a user's delete of ${name}`);
            assert.match(r.stderr, ownerDenial(resource, name, "held"));
            assert.match(r.stderr, /Error from server \(Conflict\)/);
          }
          const after = await denials(webhook!);
          const denial = /denied the request: (.*?)"(?: [a-z]+=|$)/.exec(
            line,
          )?.[1] ?? line;
          console.log(
            `foreground, owner rule Exists: held; kcp's garbage collector was denied all ${
              count(owned)
            } owned objects within ${held.toFixed(2)} s of the delete; ${
              after.owned - before.owned
            } denied_owned and ${
              after.referenced - before.referenced
            } denied_referenced reviews so far\n  kcp's log (garbagecollector.go, "error syncing item"): ${denial}`,
          );
        },
      );

      await step(
        "switching the owner rule to Active releases the held teardown, which completes in dependency order",
        async () => {
          const owned = heldOwned!;
          const watches = await watchTeardown(kcp);
          const before = await denials(webhook!);
          const from = performance.now();
          await kcp.kubectlOk([
            "patch",
            "dependencyrule",
            OWNER_RULE,
            "--type=merge",
            "-p",
            '{"spec":{"protectWhile":"Active"}}',
          ], { workspace: NETWORK });
          await waitForEmpty(kcp, "held");
          const t = await stopWatches(watches, "held", from);
          const after = await denials(webhook!);
          // The Project was marked before the watches started: only the
          // deletions are seen, the Project's last.
          assertDependencyOrder(t, owned);
          assert.equal(projectPlace(t, "held"), "last");
          report(
            "foreground, owner rule Exists, after the release (switched to Active)",
            t,
            `${after.owned - before.owned} denied_owned, ${
              after.referenced - before.referenced
            } denied_referenced after the release`,
            "the release",
          );
          // The probe goes too once our finalizer lets it.
          await kcp.kubectlOk([
            "patch",
            "project",
            "probe",
            "-n",
            "probe",
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
          ], { workspace: C1 });
          await waitForEmpty(kcp, "probe");
        },
      );
    } finally {
      await controller?.stop();
      await webhook?.stop();
    }
  },
);
