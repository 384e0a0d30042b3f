import assert from "node:assert/strict";
import type { BypassQuery } from "./access_review.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import { DeletionValidator } from "./deletion_validator.ts";
import type { OwnerFindings, OwnerHold } from "./review_owners.ts";
import {
  type Blockers,
  type DependentQuery,
  type DependentSource,
  Forbidden,
  type ObjectQuery,
  ReviewReader,
  UnknownWorkspace,
} from "./review_reads.ts";
import type { LockIndex } from "../locks/mod.ts";
import { DependentsIndex } from "../dependents/mod.ts";
import { indexSpecs } from "./index_plan.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { SlowLists } from "./slow_lists.ts";
import { KubeApiError } from "../kcp/mod.ts";
import { Deadline, DeadlineExceeded } from "../runtime/mod.ts";
import type { ClusterRule } from "../rules/mod.ts";
import {
  clusterScopedDeleteRequest,
  deleteRequest,
  dependency,
  dependentRule,
  FakeBypass,
  FakeDependentSource,
  gvrOf,
  LABEL_OWNER_RULE,
  lb,
  lbBlocker,
  type Listing,
  type Live,
  LOAD_BALANCERS,
  NAMESPACE_OWNER_RULE,
  namespaceDeleteRequest,
  namespaceLock,
  network,
  NETWORKS,
  OTHER_PROVIDER_RULE,
  OWNER_LABEL,
  OWNER_LABEL_PATH,
  type OwnerAnswer,
  planOf,
  registryOf,
  TWELVE_VMS as TWELVE,
  underRule,
  untilAborted,
  validRule,
  VIRTUAL_MACHINES,
  vm,
  VM_RULE,
  vmBlocker,
  vpc,
  vpcLock,
  VPCS,
} from "../../testing/fakes.ts";

/** The reads `source` was asked for, counted by kind. */
function reads(source: FakeDependentSource): Record<string, number> {
  const counts: Record<string, number> = {};
  const add = (key: string) => counts[key] = (counts[key] ?? 0) + 1;
  for (const q of source.objectQueries) {
    add(`get ${q.resource.resource}/${q.name}`);
  }
  for (const q of source.queries) add(`list ${q.dependent.resource}`);
  for (const c of source.workspaceQueries) add(`get logicalcluster ${c}`);
  for (let i = 0; i < source.boundReads; i++) add("list apibindings");
  return counts;
}

/** VirtualMachine vm-1 refers to vpc-a. */
const VM_ON_A = vm("vm-1", "vpc-a");

/** Fails the test if `work` has not settled within `ms`: a liveness guard, not a timing assertion. */
async function settlesWithin<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`did not settle within ${ms} ms`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** An index of VM_RULE's dependents holding `objects`, synced on "shard" at "9". */
function identifiedIndex(objects: readonly unknown[] = []) {
  const identified = new RuleRegistry();
  identified.replace([VM_RULE], {
    identities: new Map([[
      `${VM_RULE.cluster}/${VM_RULE.rule.metadata.name}`,
      "id1",
    ]]),
  });
  const [spec] = indexSpecs(identified.find(VPCS)).values();
  const index = new DependentsIndex(spec!.paths, { maxDependents: 10 });
  index.startResync("shard");
  for (const object of objects) index.upsert("shard", object);
  index.finishResync("shard", "9");
  return { identified, spec: spec!, index };
}

Deno.test("a review reads each object and list at most once, also when a Lock holds the object in a workspace being deleted", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[VM_ON_A]] },
  });
  source.deletedAt = new Date(Date.now() - 1_000);
  const verdict = await new DeletionValidator(registryOf(VM_RULE), source, {
    locks: vpcLock("vpc-a"),
  }).validate(deleteRequest());
  // Locks go with the workspace; references still order its teardown.
  assert.equal(verdict.outcome, "denied_referenced");
  assert.match(verdict.response.status?.message ?? "", /VirtualMachine\/vm-1/);
  assert.deepEqual(reads(source), {
    "get vpcs/vpc-a": 1,
    "list virtualmachines": 1,
    "get logicalcluster consumer1": 1,
  });
});

Deno.test("a denial from the index reads the workspace beside the dependent it confirms, not after it", async () => {
  const indexed = vm("vm-1", "vpc-a");
  (indexed.metadata as Record<string, unknown>).annotations = {
    "kcp.io/cluster": "consumer1",
  };
  (indexed.metadata as Record<string, unknown>).uid = "uid-vm-1";
  (indexed.metadata as Record<string, unknown>).resourceVersion = "5";
  const { identified, spec, index } = identifiedIndex([indexed]);
  /** How many workspace reads had begun when the dependent was read. */
  const begunAtConfirm: number[] = [];
  const source = new class extends FakeDependentSource {
    override ownerObject(query: ObjectQuery, signal: AbortSignal) {
      begunAtConfirm.push(this.workspaceQueries.length);
      return super.ownerObject(query, signal);
    }
  }({ virtualmachines: { pages: [[]] } });
  source.owners.set("virtualmachines/vm-1", indexed);
  const verdict = await new DeletionValidator(identified, source, {
    indexes: {
      ready: () => ({
        index,
        sources: ["shard"],
        pathKeys: spec.pathKeys,
        probe: () => new Promise(() => {}),
        changed: () => new Promise(() => {}),
        idleMs: () => 0,
      }),
    },
  }).validate(deleteRequest());
  assert.equal(verdict.outcome, "denied_referenced");
  assert.match(verdict.response.status?.message ?? "", /VirtualMachine\/vm-1/);
  assert.deepEqual(begunAtConfirm, [1]);
  assert.deepEqual(reads(source), {
    "get vpcs/vpc-a": 1,
    "get logicalcluster consumer1": 1,
    "list apibindings": 1,
  });
});

/**
 * Reviews of deleting vpc-a over an idle, empty index whose quiet proof
 * answers yes or no, or hangs until aborted, each with its own list; what the
 * proof and the list saw is in `seen`.
 */
function idleIndexReviews(slowLists?: SlowLists) {
  const { identified, spec, index } = identifiedIndex();
  const seen = {
    listAborted: false,
    quietAborted: false,
    quietCalls: 0,
    lists: 0,
    /** Resolves at the next call of the proof. */
    quietCalled: () => {},
  };
  const review = async (
    options: { quiet: "yes" | "no" | "hang"; listing: Listing },
  ) => {
    seen.listAborted = seen.quietAborted = false;
    seen.quietCalls = 0;
    seen.lists = 0;
    const source = new class extends FakeDependentSource {
      override pages(query: DependentQuery, signal: AbortSignal) {
        seen.lists++;
        return super.pages(query, signal);
      }
    }({ virtualmachines: options.listing });
    source.bound = new Map([[
      `${VIRTUAL_MACHINES.group}/${VIRTUAL_MACHINES.resource}`,
      "id1",
    ]]);
    const outcomes: string[] = [];
    const verdict = await new DeletionValidator(identified, source, {
      indexes: {
        ready: () => ({
          index,
          sources: ["shard"],
          pathKeys: spec.pathKeys,
          probe: () => Promise.resolve(new Map([["shard", "12"]])),
          changed: () => new Promise(() => {}),
          idleMs: () => 60_000,
          quiet: (_cluster, { signal }) => {
            seen.quietCalls++;
            seen.quietCalled();
            return options.quiet !== "hang"
              ? Promise.resolve(options.quiet === "yes")
              : new Promise(
                (_, reject) =>
                  signal.addEventListener("abort", () => {
                    seen.quietAborted = true;
                    reject(signal.reason);
                  }),
              );
          },
        }),
        observe: (o) => outcomes.push(o),
        ...(slowLists === undefined ? {} : { slowLists }),
      },
      indexFreshnessMs: 10,
    }).validate(deleteRequest());
    return { verdict, outcomes };
  };
  /** A list that never ends until aborted. */
  const endless: Listing = {
    run: (_query, signal) => ({
      async *[Symbol.asyncIterator]() {
        await new Promise((resolve) =>
          signal.addEventListener("abort", () => {
            seen.listAborted = true;
            resolve(undefined);
          })
        );
        // Stopped: no page.
        yield* [];
      },
    }),
  };
  return { review, seen, endless };
}

Deno.test("an idle index races a list slower than the freshness budget: the first to answer decides, and the other is stopped", async () => {
  const { review, seen, endless } = idleIndexReviews();
  // A list that would never end: the index shows the workspace quiet and
  // allows; the list is stopped.
  const quiet = await settlesWithin(
    review({ quiet: "yes", listing: endless }),
    5_000,
  );
  assert.equal(quiet.verdict.outcome, "allowed");
  assert.deepEqual(quiet.outcomes, ["quiet_none"]);
  assert.equal(seen.listAborted, true);
  // A list that answers within the budget decides: no watch is made.
  const quick = await settlesWithin(
    review({ quiet: "hang", listing: { pages: [[VM_ON_A]] } }),
    5_000,
  );
  assert.equal(quick.verdict.outcome, "denied_referenced");
  assert.equal(seen.quietCalls, 0);
  assert.deepEqual(quick.outcomes, ["idle"]);
  // A slower list (its page comes once the watch has begun) still answers
  // first: it decides, the watch stops.
  const listed = await settlesWithin(
    review({
      quiet: "hang",
      listing: {
        run: () => ({
          async *[Symbol.asyncIterator]() {
            await new Promise<void>((resolve) => seen.quietCalled = resolve);
            yield [VM_ON_A];
          },
        }),
      },
    }),
    5_000,
  );
  assert.equal(listed.verdict.outcome, "denied_referenced");
  assert.match(
    listed.verdict.response.status?.message ?? "",
    /VirtualMachine\/vm-1/,
  );
  assert.equal(seen.quietCalls, 1);
  assert.equal(seen.quietAborted, true);
  assert.deepEqual(listed.outcomes, ["idle"]);
});

Deno.test("an idle index proves first where the last list was slow, and lists only when the proof fails", async () => {
  const { review, seen, endless } = idleIndexReviews(new SlowLists());
  // The first review lists (nothing known yet); the list outruns the
  // budget, the proof answers and the scope is marked slow.
  const first = await settlesWithin(
    review({ quiet: "yes", listing: endless }),
    5_000,
  );
  assert.equal(first.verdict.outcome, "allowed");
  assert.equal(seen.lists, 1);
  assert.equal(seen.listAborted, true);
  // The next review of the scope proves first: no list is made at all.
  const second = await settlesWithin(
    review({ quiet: "yes", listing: { pages: [[VM_ON_A]] } }),
    5_000,
  );
  assert.equal(second.verdict.outcome, "allowed");
  assert.deepEqual(second.outcomes, ["quiet_none"]);
  assert.equal(seen.lists, 0);
  assert.equal(seen.quietCalls, 1);
  // A proof that fails leaves it to the list, which still decides; its
  // quick answer clears the mark, so the next review lists first again.
  const failed = await settlesWithin(
    review({ quiet: "no", listing: { pages: [[VM_ON_A]] } }),
    5_000,
  );
  assert.equal(failed.verdict.outcome, "denied_referenced");
  assert.match(
    failed.verdict.response.status?.message ?? "",
    /VirtualMachine\/vm-1/,
  );
  assert.equal(seen.lists, 1);
  const quick = await settlesWithin(
    review({ quiet: "hang", listing: { pages: [[VM_ON_A]] } }),
    5_000,
  );
  assert.equal(quick.verdict.outcome, "denied_referenced");
  assert.equal(seen.quietCalls, 0);
});

Deno.test("a 403 on the live object reads the workspace once, for the 403 and the teardown alike", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[]] },
  }, { error: new KubeApiError("forbidden", { status: 403 }) });
  const verdict = await new DeletionValidator(registryOf(VM_RULE), source, {
    locks: vpcLock("vpc-a"),
  }).validate(deleteRequest());
  assert.equal(verdict.outcome, "denied_locked");
  assert.match(verdict.response.status?.message ?? "", /a Lock may hold it/);
  assert.equal(reads(source)["get logicalcluster consumer1"], 1);
  assert.equal(reads(source)["list virtualmachines"], 1);
});

Deno.test("an allowed review reads no workspace: the teardown check is only for denials", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[]] },
  });
  const verdict = await new DeletionValidator(registryOf(VM_RULE), source)
    .validate(deleteRequest());
  assert.equal(verdict.outcome, "allowed");
  assert.deepEqual(reads(source), {
    "get vpcs/vpc-a": 1,
    "list virtualmachines": 1,
  });
});

Deno.test("a review against a source that hangs, ignoring its signals, answers at its one deadline, failing closed", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { hang: true },
  }, { hang: true });
  source.ignoreSignals = true;
  const verdict = await settlesWithin(
    new DeletionValidator(registryOf(VM_RULE), source, {
      timeoutMs: 50,
      locks: vpcLock("vpc-b"),
    }).validate(deleteRequest()),
    10_000,
  );
  assert.equal(verdict.outcome, "denied_error");
  assert.equal(verdict.response.status?.code, 503);
  assert.match(
    verdict.response.status?.message ?? "",
    /cannot read the object itself \(no answer within 50 ms\)/,
  );
  // The list was told to stop too.
  assert.equal(source.signals.length, 1);
  assert.ok(source.signals.every((s) => s.aborted));
});

Deno.test("a denial whose workspace check hangs answers within the same deadline, the denial standing", async () => {
  // Reads answer at once, but the LogicalCluster never, ignoring signals.
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[VM_ON_A]] },
  });
  source.deletedAt = { hang: true };
  source.ignoreSignals = true;
  const verdict = await settlesWithin(
    new DeletionValidator(registryOf(VM_RULE), source, { timeoutMs: 200 })
      .validate(deleteRequest()),
    10_000,
  );
  assert.equal(verdict.outcome, "denied_referenced");
  assert.equal(reads(source)["get logicalcluster consumer1"], 1);
});

// ---------------------------------------------------------------------------
// ReviewReader.read(): what a plan reads, and the readings it gives

/** A rule whose dependency has a namespace path beside its path. */
function crossNamespaceRule(path: string, namespacePath: string): ClusterRule {
  return {
    cluster: "provider1",
    rule: validRule("cross", VIRTUAL_MACHINES, [{
      ...dependency(VPCS, path),
      fieldRef: { path, namespacePath },
    }]),
  };
}

/** LoadBalancers depend on VPCs via `.spec.vpcRef.name`. */
const LB_RULE = dependentRule("lb-needs-vpc", LOAD_BALANCERS);

/**
 * The provider's rule (its export has identity `real`) and a tenant's
 * look-alike: the same dependent group and resource from an export of its
 * own (identity `fake`), naming the VPC through `.metadata.name`.
 */
const LOOK_ALIKE: Pick<ReadCase, "rules" | "identities"> = {
  rules: [VM_RULE, {
    ...dependentRule("look-alike", VIRTUAL_MACHINES, [".metadata.name"]),
    cluster: "tenant1",
  }],
  identities: new Map([
    ["provider1/vm-needs-vpc", "real"],
    ["tenant1/look-alike", "fake"],
  ]),
};

/** vm-1 referring through the other provider's field, under its rule. */
const OTHER_PROVIDER_VM = underRule(
  "provider1/other-provider",
  vmBlocker("vm-1", "default", ".spec.altVpcRef.name"),
);

/** A VM in `namespace` whose NICs refer to `refs` (`name` or `namespace/name`). */
function vmWithNics(
  name: string,
  refs: readonly string[],
  namespace: string | null = "default",
): Record<string, unknown> {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: { name, ...(namespace === null ? {} : { namespace }) },
    spec: {
      nics: refs.map((ref) => {
        const [first, second] = ref.split("/");
        return {
          subnetRef: second === undefined
            ? { name: first }
            : { namespace: first, name: second },
        };
      }),
    },
  };
}

/** A source of VirtualMachines answering `pages`, then set up by `setup`. */
function vms(
  pages: readonly (readonly unknown[])[],
  setup: (source: FakeDependentSource) => void = () => {},
): () => FakeDependentSource {
  return () => {
    const source = new FakeDependentSource({ virtualmachines: { pages } });
    setup(source);
    return source;
  };
}

/** The live vpc-a's metadata naming its owner net-a by a label. */
const LABELLED = { labels: { [OWNER_LABEL]: "net-a" } };

/**
 * A source whose live vpc-a is `live` (naming net-a by a label unless it
 * says otherwise) and whose owners and Namespaces answer `owners`, by
 * `<resource>/<name>`; then set up by `setup`.
 */
function owning(
  owners: Record<string, OwnerAnswer>,
  options: {
    live?: Live;
    listings?: Record<string, Listing>;
    setup?: (source: FakeDependentSource) => void;
  } = {},
): () => FakeDependentSource {
  return () => {
    const source = new FakeDependentSource(
      options.listings ?? {},
      options.live ?? { uid: "uid-vpc-a", metadata: LABELLED },
    );
    for (const [key, answer] of Object.entries(owners)) {
      source.owners.set(key, answer);
    }
    options.setup?.(source);
    return source;
  };
}

/** The Network net-a, in vpc-a's namespace. */
const NET_A = { "networks/net-a": network("net-a", { namespace: "default" }) };
/** How net-a holds vpc-a when its label names it. */
const NET_A_HOLDS: OwnerHold = {
  kind: "Network",
  type: gvrOf(NETWORKS),
  rule: "provider1/owned",
  namespace: "default",
  name: "net-a",
  field: OWNER_LABEL_PATH,
};

/**
 * `source`, recording every read of one object (`<method>
 * <resource>/<name>`, with the namespace of an owner) in `calls`.
 */
function recording(
  source: DependentSource,
): { source: DependentSource; calls: string[] } {
  const calls: string[] = [];
  const record = (method: string, q: ObjectQuery) =>
    calls.push(
      `${method} ${q.resource.resource}/${
        method === "ownerObject" ? `${q.namespace ?? "-"}/` : ""
      }${q.name}`,
    );
  return {
    calls,
    source: {
      pages: (query, signal) => source.pages(query, signal),
      liveUid: (query, signal) => {
        record("liveUid", query);
        return source.liveUid(query, signal);
      },
      liveMetadata: (query, signal) => {
        record("liveMetadata", query);
        return source.liveMetadata(query, signal);
      },
      ownerObject: (query, signal) => {
        record("ownerObject", query);
        return source.ownerObject(query, signal);
      },
      workspaceDeletedAt: (cluster, signal) =>
        source.workspaceDeletedAt(cluster, signal),
      boundIdentities: (cluster, signal, options) =>
        source.boundIdentities(cluster, signal, options),
    },
  };
}

const VM_TYPE = {
  group: "compute.example.com",
  version: "v1alpha1",
  resource: "virtualmachines",
};
/** What vpc-a's review reads of the live object. */
const VPC_A_QUERY: ObjectQuery = {
  cluster: "consumer1",
  namespace: "default",
  resource: { ...VPCS },
  name: "vpc-a",
};
const FORBIDDEN = new KubeApiError("forbidden", { status: 403 });
const NOT_FOUND = new KubeApiError("not found", {
  status: 404,
  reason: "NotFound",
});
const BOUND_REAL = new Map([["compute.example.com/virtualmachines", "real"]]);

interface ReadCase {
  name: string;
  /** The rules. @default {[VM_RULE]} */
  rules?: readonly ClusterRule[];
  /** The identity of each rule's dependent export, by rule key. */
  identities?: ReadonlyMap<string, string>;
  /** @default {deleteRequest()} */
  request?: AdmissionRequest;
  /** The provider whose configuration kcp called. */
  provider?: string;
  locks?: LockIndex;
  /** A fresh source for the case. */
  source: () => DependentSource;
  /** What kcp answers about `bypass`; set, the annotation needs it. */
  bypass?: boolean | { error: unknown };
  maxNamed?: number;
  /** The review's one deadline. @default {10_000} */
  timeoutMs?: number;
  want: {
    /** Whether the live object confirms the review, or the error it failed with. */
    confirmed?: boolean | Error;
    /** The dependents kept, the error the lists failed with, or `none` when nothing was listed. */
    blockers?: Blockers | Error | "none";
    /** The owners that hold the object, the error their reads failed with, or `none` when none was read. */
    owners?: OwnerFindings | Error | "none";
    /** kcp's answer about bypass, or the error it failed with. */
    bypass?: boolean | Error;
    /** The lists, as plain data. */
    queries?: DependentQuery[];
    /** The dependent types listed, sorted. */
    listed?: string[];
    /** The logical clusters listed in, distinct. */
    clusters?: string[];
    objectQueries?: ObjectQuery[];
    /**
     * The reads of one object, in order: `liveUid vpcs/vpc-a`,
     * `liveMetadata namespaces/default`, `ownerObject networks/default/net-a`.
     */
    calls?: string[];
    workspaceQueries?: string[];
    bypassQueries?: BypassQuery[];
    boundFresh?: boolean[];
    boundReads?: number;
  };
}

/**
 * A meeting of `parties` reads: each call waits (until its signal aborts)
 * until all of them called, so reads made one after the other never meet.
 */
function meeting(parties: number): (signal: AbortSignal) => Promise<void> {
  let arrived = 0;
  let all!: () => void;
  const met = new Promise<void>((resolve) => all = resolve);
  return (signal) => {
    arrived++;
    if (arrived === parties) all();
    return untilAborted(met, signal);
  };
}

/** Parallel lists: each waits until both were requested. */
function parallelSource(): DependentSource {
  const meet = meeting(2);
  const waitForBoth = (items: readonly unknown[]): Listing => ({
    run: async function* (_query, signal) {
      await meet(signal);
      yield items;
    },
  });
  return new FakeDependentSource({
    virtualmachines: waitForBoth([vm("vm-1", "vpc-a")]),
    loadbalancers: waitForBoth([lb("lb-1", "vpc-a")]),
  });
}

/** A list and an owner lookup that each wait until both were requested. */
function listAndOwnerSource(): FakeDependentSource {
  const meet = meeting(2);
  return owning(NET_A, {
    listings: {
      virtualmachines: {
        run: async function* (_query, signal) {
          await meet(signal);
          yield [vm("vm-1", "vpc-a")];
        },
      },
    },
    setup: (source) => {
      const lookUp = source.ownerObject.bind(source);
      source.ownerObject = async (query, signal) => {
        await meet(signal);
        return await lookUp(query, signal);
      };
    },
  })();
}

const READ_CASES: ReadCase[] = [
  // Where the reads go.
  {
    name: "the live object in the consumer's cluster, beside the list",
    source: vms([[]]),
    want: {
      confirmed: true,
      blockers: { named: [], total: 0 },
      owners: "none",
      objectQueries: [VPC_A_QUERY],
      // Its uid alone: no owner rule needs more of it.
      calls: ["liveUid vpcs/vpc-a"],
      listed: ["virtualmachines"],
    },
  },
  {
    name: "a DELETECOLLECTION item: the list in its cluster and namespace",
    request: deleteRequest({ name: "" }),
    source: vms([[vm("vm-1", "vpc-a"), vm("vm-2", "vpc-b")]]),
    want: {
      confirmed: true,
      blockers: { named: [vmBlocker("vm-1")], total: 1 },
      queries: [{
        cluster: "consumer1",
        namespace: "default",
        dependent: VM_TYPE,
      }],
    },
  },
  {
    name: "the list in another cluster and namespace",
    request: deleteRequest({
      namespace: "team-a",
      oldObject: vpc("vpc-a", { namespace: "team-a", cluster: "2x5jd0ws3r7t" }),
    }),
    source: vms([]),
    want: {
      confirmed: true,
      blockers: { named: [], total: 0 },
      queries: [{
        cluster: "2x5jd0ws3r7t",
        namespace: "team-a",
        dependent: VM_TYPE,
      }],
    },
  },
  ...[clusterScopedDeleteRequest(), {
    ...clusterScopedDeleteRequest(),
    namespace: "",
  }].map((request, i): ReadCase => ({
    name: `a cluster-scoped target (${
      i === 0 ? "no namespace" : 'namespace ""'
    }): every namespace listed, blockers kept with theirs`,
    request,
    source: vms([[
      vm("vm-1", "vpc-a", "team-b"),
      vm("vm-1", "vpc-a", "team-a"),
    ]]),
    want: {
      blockers: {
        named: [vmBlocker("vm-1", "team-a"), vmBlocker("vm-1", "team-b")],
        total: 2,
      },
      queries: [{ cluster: "consumer1", dependent: VM_TYPE }],
    },
  })),
  {
    name: "a cluster-scoped target: a cluster-scoped blocker has no namespace",
    request: clusterScopedDeleteRequest(),
    source: vms([[vm("vm-1", "vpc-a", null)]]),
    want: { blockers: { named: [vmBlocker("vm-1", "")], total: 1 } },
  },
  // What refers.
  {
    name: "a namespaced target: its blocker in its namespace",
    source: vms([[vm("vm-1", "vpc-a", "default")]]),
    want: { blockers: { named: [vmBlocker("vm-1")], total: 1 } },
  },
  {
    name: "VirtualMachines of other VPCs do not refer",
    source: vms([[
      vm("vm-1", "vpc-b"),
      vm("vm-2", "vpc-a-2"),
      vm("vm-3", "VPC-A"),
    ]]),
    want: { blockers: { named: [], total: 0 }, listed: ["virtualmachines"] },
  },
  {
    name: "items that do not refer are ignored",
    source: () => {
      const noSpec = vm("vm-no-spec", "vpc-a");
      delete noSpec.spec;
      return new FakeDependentSource({
        virtualmachines: {
          pages: [[
            vm("vm-2", "vpc-a"),
            vm("vm-other", "vpc-b"),
            noSpec,
            vm("vm-number", 42),
            vm("vm-null", null),
            vm("vm-object", { name: "vpc-a" }),
            vm("vm-array", ["vpc-a"]),
            { metadata: { name: "vm-ref-string" }, spec: { vpcRef: "vpc-a" } },
            {
              metadata: { name: "vm-spec-array" },
              spec: [{ vpcRef: "vpc-a" }],
            },
            null,
            "vpc-a",
            42,
            ["vpc-a"],
            vm("vm-1", "vpc-a"),
          ]],
        },
      });
    },
    want: {
      blockers: { named: [vmBlocker("vm-1"), vmBlocker("vm-2")], total: 2 },
    },
  },
  {
    name: "a list without referring items",
    source: vms([[
      null,
      "vpc-a",
      vm("vm-number", 1),
      vm("vm-missing", undefined),
    ]]),
    want: { blockers: { named: [], total: 0 } },
  },
  {
    name: "twelve across pages: the first ten kept, all counted",
    source: vms([
      [...TWELVE.slice(0, 5).map((n) => vm(n, "vpc-a")), vm("vm-x", "vpc-b")],
      [vm("vm-y", "vpc-b"), ...TWELVE.slice(5, 10).map((n) => vm(n, "vpc-a"))],
      [],
      TWELVE.slice(10).map((n) => vm(n, "vpc-a")),
    ]),
    want: {
      blockers: {
        named: TWELVE.slice(0, 10).map((n) => vmBlocker(n)),
        total: 12,
      },
    },
  },
  {
    name: "blockers kept sorted by kind, namespace and name",
    rules: [VM_RULE, LB_RULE],
    request: clusterScopedDeleteRequest(),
    source: () => {
      const shuffled = ["vm-07", "vm-03", "vm-12", "vm-01", "vm-09", "vm-05"];
      return new FakeDependentSource({
        virtualmachines: {
          pages: [
            shuffled.slice(0, 3).map((n) => vm(n, "vpc-a", "team-b")),
            shuffled.slice(3).map((n) => vm(n, "vpc-a", "team-a")),
          ],
        },
        loadbalancers: { pages: [[lb("lb-2", "vpc-a", "team-z")]] },
      });
    },
    want: {
      blockers: {
        named: [
          lbBlocker("lb-2", "team-z"),
          ...["vm-01", "vm-05", "vm-09"].map((n) => vmBlocker(n, "team-a")),
          ...["vm-03", "vm-07", "vm-12"].map((n) => vmBlocker(n, "team-b")),
        ],
        total: 7,
      },
    },
  },
  ...[TWELVE, [...TWELVE].reverse()].map((order, i): ReadCase => ({
    name: `the same blockers kept whatever order the list returns (${
      i === 0 ? "ascending" : "descending"
    })`,
    source: vms([
      order.slice(0, 6).map((n) => vm(n, "vpc-a")),
      order.slice(6).map((n) => vm(n, "vpc-a")),
    ]),
    want: {
      blockers: {
        named: TWELVE.slice(0, 10).map((n) => vmBlocker(n)),
        total: 12,
      },
    },
  })),
  {
    name: "as many kept as maxNamed says",
    maxNamed: 2,
    source: vms([[
      vm("vm-1", "vpc-a"),
      vm("vm-2", "vpc-a"),
      vm("vm-3", "vpc-a"),
    ]]),
    want: {
      blockers: { named: [vmBlocker("vm-1"), vmBlocker("vm-2")], total: 3 },
    },
  },
  {
    name:
      "one dependent through two field paths: kept once with both, one list",
    rules: [
      dependentRule("vm-needs-vpc", VIRTUAL_MACHINES, [
        ".spec.vpcRef.name",
        ".spec.backupVpcRef.name",
      ]),
    ],
    source: () => {
      const both = vm("vm-1", "vpc-a");
      (both.spec as Record<string, unknown>).backupVpcRef = { name: "vpc-a" };
      const backupOnly = vm("vm-2", "vpc-b");
      (backupOnly.spec as Record<string, unknown>).backupVpcRef = {
        name: "vpc-a",
      };
      return new FakeDependentSource({
        virtualmachines: { pages: [[both, backupOnly]] },
      });
    },
    want: {
      blockers: {
        named: [
          vmBlocker(
            "vm-1",
            "default",
            ".spec.vpcRef.name",
            ".spec.backupVpcRef.name",
          ),
          vmBlocker("vm-2", "default", ".spec.backupVpcRef.name"),
        ],
        total: 2,
      },
      listed: ["virtualmachines"],
    },
  },
  {
    name: "two rules through the same field path: kept once, one list",
    rules: [
      VM_RULE,
      dependentRule("vm-needs-vpc-too", VIRTUAL_MACHINES, ["spec.vpcRef.name"]),
    ],
    source: vms([[vm("vm-1", "vpc-a")]]),
    want: {
      blockers: { named: [vmBlocker("vm-1")], total: 1 },
      listed: ["virtualmachines"],
    },
  },
  {
    name: "two dependent types listed in parallel",
    rules: [VM_RULE, LB_RULE],
    source: parallelSource,
    want: {
      blockers: { named: [lbBlocker("lb-1"), vmBlocker("vm-1")], total: 2 },
      listed: ["loadbalancers", "virtualmachines"],
      clusters: ["consumer1"],
    },
  },
  // A type the workspace does not serve, and lists that fail.
  {
    name: "a dependent type the workspace does not serve: nothing refers",
    source: () =>
      new FakeDependentSource({
        virtualmachines: {
          error: new KubeApiError("virtualmachines not found", {
            status: 404,
            reason: "NotFound",
          }),
        },
      }),
    want: {
      blockers: { named: [], total: 0 },
      listed: ["virtualmachines"],
    },
  },
  {
    name: "a second dependent type still counts when the first is not served",
    rules: [VM_RULE, LB_RULE],
    source: () =>
      new FakeDependentSource({
        virtualmachines: { error: NOT_FOUND },
        loadbalancers: { pages: [[lb("lb-1", "vpc-a")]] },
      }),
    want: {
      blockers: { named: [lbBlocker("lb-1")], total: 1 },
      listed: ["loadbalancers", "virtualmachines"],
    },
  },
  {
    name: "a list not granted: the permission named",
    source: () =>
      new FakeDependentSource({
        virtualmachines: {
          error: new KubeApiError(
            'virtualmachines.compute.example.com is forbidden: User "webhook" cannot list resource',
            { status: 403, reason: "Forbidden" },
          ),
        },
      }),
    want: { blockers: new Forbidden("list", VIRTUAL_MACHINES) },
  },
  {
    name: "a transport error",
    source: () =>
      new FakeDependentSource({
        virtualmachines: {
          error: new KubeApiError("connection refused (os error 111)", {
            status: 0,
          }),
        },
      }),
    want: {
      blockers: new Error(
        "listing virtualmachines.compute.example.com failed: connection refused (os error 111)",
      ),
    },
  },
  {
    name: "a later page fails, even after blockers were found",
    source: () =>
      new FakeDependentSource({
        virtualmachines: {
          pages: [[vm("vm-1", "vpc-a")]],
          thenThrow: new KubeApiError(
            "the server is currently unable to handle the request",
            { status: 503, reason: "ServiceUnavailable" },
          ),
        },
      }),
    want: {
      blockers: new Error(
        "listing virtualmachines.compute.example.com failed: the server is currently unable to handle the request",
      ),
    },
  },
  {
    name: "one of two dependent types fails",
    rules: [VM_RULE, LB_RULE],
    source: () =>
      new FakeDependentSource({
        virtualmachines: { pages: [[]] },
        loadbalancers: {
          error: new KubeApiError("unavailable", { status: 500 }),
        },
      }),
    want: {
      blockers: new Error(
        "listing loadbalancers.lb.example.com failed: unavailable",
      ),
    },
  },
  {
    name: "the source throws something other than an Error",
    source: () =>
      new FakeDependentSource({ virtualmachines: { error: "boom" } }),
    want: {
      blockers: new Error(
        "listing virtualmachines.compute.example.com failed: boom",
      ),
    },
  },
  {
    name: "the source throws before returning pages",
    source: () => ({
      pages() {
        throw new TypeError("bad URL");
      },
      liveUid: (query) => Promise.resolve(`uid-${query.name}`),
      liveMetadata: (query) => Promise.resolve({ uid: `uid-${query.name}` }),
      ownerObject: () => Promise.resolve(undefined),
      workspaceDeletedAt: () => Promise.resolve(undefined),
      boundIdentities: () => Promise.resolve(new Map()),
    }),
    want: {
      blockers: new Error(
        "listing virtualmachines.compute.example.com failed: bad URL",
      ),
    },
  },
  {
    name: "a list that does not finish within the deadline",
    timeoutMs: 50,
    source: () => new FakeDependentSource({ virtualmachines: { hang: true } }),
    want: {
      blockers: new DeadlineExceeded(
        "listing virtualmachines.compute.example.com",
        50,
      ),
      listed: ["virtualmachines"],
    },
  },
  // The live object.
  ...([
    ["a live object with another uid", { uid: "uid-of-another-vpc-a" }],
    ["no live object", { uid: undefined }],
  ] as const).map(([label, live]): ReadCase => ({
    name: `${label}: not confirmed`,
    source: () =>
      new FakeDependentSource({
        virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
      }, live),
    want: { confirmed: false },
  })),
  {
    name: "not confirmed: the lists end at once",
    timeoutMs: 60_000,
    source: () =>
      new FakeDependentSource({ virtualmachines: { hang: true } }, {
        uid: undefined,
      }),
    want: {
      confirmed: false,
      blockers: new Error(
        "listing virtualmachines.compute.example.com failed: review not confirmed",
      ),
    },
  },
  {
    name: "the live object cannot be read",
    source: () =>
      new FakeDependentSource({
        virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
      }, {
        error: new KubeApiError("GET vpcs/vpc-a: 500: etcd down", {
          status: 500,
        }),
      }),
    want: {
      confirmed: new KubeApiError("GET vpcs/vpc-a: 500: etcd down", {
        status: 500,
      }),
    },
  },
  {
    name: "the live object does not answer within the deadline",
    timeoutMs: 50,
    source: () =>
      new FakeDependentSource({ virtualmachines: { pages: [[]] } }, {
        hang: true,
      }),
    want: { confirmed: new Error("no answer within 50 ms") },
  },
  {
    name:
      "a 403 on the live object of a workspace that can be read: a missing grant",
    source: () =>
      new FakeDependentSource({ virtualmachines: { pages: [[]] } }, {
        error: FORBIDDEN,
      }),
    want: {
      confirmed: new Forbidden("get", VPCS),
      workspaceQueries: ["consumer1"],
    },
  },
  {
    name:
      "a 403 on the live object of a workspace that cannot be read: an unknown workspace",
    source: () => {
      const denied = new KubeApiError("403", {
        status: 403,
        reason: "Forbidden",
      });
      const source = new FakeDependentSource({
        virtualmachines: { pages: [[]] },
      }, { error: denied });
      source.deletedAt = { error: denied };
      return source;
    },
    want: {
      confirmed: new UnknownWorkspace("consumer1"),
      workspaceQueries: ["consumer1"],
    },
  },
  // The annotation in authorized mode.
  {
    name: "bypass: asked in the consumer's cluster, nothing listed",
    request: deleteRequest({
      oldObject: vpc("vpc-a", { namespace: "default", skip: "true" }),
    }),
    bypass: true,
    source: vms([[vm("vm-1", "vpc-a")]]),
    want: {
      confirmed: true,
      bypass: true,
      blockers: "none",
      queries: [],
      bypassQueries: [{
        cluster: "consumer1",
        namespace: "default",
        user: { username: "alice", groups: ["system:authenticated"] },
      }],
    },
  },
  {
    name: "bypass: kcp cannot answer",
    request: deleteRequest({
      oldObject: vpc("vpc-a", { namespace: "default", skip: "true" }),
    }),
    bypass: {
      error: new KubeApiError("POST subjectaccessreviews: 500", {
        status: 500,
      }),
    },
    source: vms([]),
    want: {
      bypass: new KubeApiError("POST subjectaccessreviews: 500", {
        status: 500,
      }),
    },
  },
  // List paths and namespace paths.
  {
    name: "the list elements that refer, in the object's namespace only",
    rules: [
      dependentRule("nics", VIRTUAL_MACHINES, [".spec.nics[*].subnetRef.name"]),
    ],
    source: vms([[
      vmWithNics("vm-1", ["other", "vpc-a", "other"]),
      vmWithNics("vm-2", ["other"]),
      vmWithNics("vm-3", ["vpc-a", "x", "vpc-a"]),
    ]]),
    want: {
      blockers: {
        named: [
          underRule(
            "provider1/nics",
            vmBlocker("vm-1", "default", ".spec.nics[1].subnetRef.name"),
          ),
          underRule(
            "provider1/nics",
            vmBlocker(
              "vm-3",
              "default",
              ".spec.nics[0].subnetRef.name",
              ".spec.nics[2].subnetRef.name",
            ),
          ),
        ],
        total: 2,
      },
      queries: [{
        cluster: "consumer1",
        namespace: "default",
        dependent: VM_TYPE,
      }],
    },
  },
  {
    name: "at most three fields of one dependent, and the rest counted",
    rules: [
      dependentRule("nics", VIRTUAL_MACHINES, [".spec.nics[*].subnetRef.name"]),
    ],
    source: vms([[vmWithNics("vm-1", Array(1000).fill("vpc-a"))]]),
    want: {
      blockers: {
        named: [underRule(
          "provider1/nics",
          {
            ...vmBlocker(
              "vm-1",
              "default",
              ".spec.nics[0].subnetRef.name",
              ".spec.nics[1].subnetRef.name",
              ".spec.nics[2].subnetRef.name",
            ),
            pathsNotShown: 997,
          },
        )],
        total: 1,
      },
    },
  },
  {
    name:
      "a namespace path: every namespace listed, only references to the object's namespace kept",
    rules: [
      crossNamespaceRule(
        ".spec.nics[*].subnetRef.name",
        ".spec.nics[*].subnetRef.namespace",
      ),
    ],
    source: vms([[
      // Refers to default/vpc-a from team-a: blocks.
      vmWithNics("from-a", ["team-a/vpc-a", "default/vpc-a"], "team-a"),
      // Refers to team-a/vpc-a (its own namespace): does not block.
      vmWithNics("own-a", ["vpc-a"], "team-a"),
      // Refers to vpc-a in its own namespace, default: blocks.
      vmWithNics("own-default", ["x", "vpc-a"], "default"),
      // An empty namespace means the dependent's own.
      vmWithNics("empty-ns", ["/vpc-a"], "team-b"),
    ]]),
    want: {
      blockers: {
        named: [
          underRule(
            "provider1/cross",
            vmBlocker("own-default", "default", ".spec.nics[1].subnetRef.name"),
          ),
          underRule(
            "provider1/cross",
            vmBlocker("from-a", "team-a", ".spec.nics[1].subnetRef.name"),
          ),
        ],
        total: 2,
      },
      queries: [{ cluster: "consumer1", dependent: VM_TYPE }],
    },
  },
  ...[true, false].map((withPath): ReadCase => ({
    name: `a cluster-scoped dependent of a namespaced object, ${
      withPath ? "with" : "without"
    } a namespace path`,
    rules: withPath
      ? [
        crossNamespaceRule(".spec.vpcRef.name", ".spec.vpcRef.namespace"),
      ]
      : [VM_RULE],
    source: () => {
      const attachment = (name: string, ref: Record<string, unknown>) => ({
        apiVersion: "compute.example.com/v1alpha1",
        kind: "VirtualMachine",
        metadata: { name },
        spec: { vpcRef: ref },
      });
      return new FakeDependentSource({
        virtualmachines: {
          pages: [[
            attachment("named-in-default", {
              name: "vpc-a",
              namespace: "default",
            }),
            attachment("no-namespace", { name: "vpc-a" }),
            attachment("other-namespace", {
              name: "vpc-a",
              namespace: "team-a",
            }),
          ]],
        },
      });
    },
    want: withPath
      ? {
        blockers: {
          named: [
            underRule("provider1/cross", vmBlocker("named-in-default", "")),
          ],
          total: 1,
        },
        queries: [{ cluster: "consumer1", dependent: VM_TYPE }],
      }
      : {
        // The listing stays in the object's namespace, and a
        // cluster-scoped item found there still refers to no namespace.
        blockers: { named: [], total: 0 },
        queries: [{
          cluster: "consumer1",
          namespace: "default",
          dependent: VM_TYPE,
        }],
      },
  })),
  {
    name: "a cluster-scoped object: the namespace path does not matter",
    rules: [
      crossNamespaceRule(".spec.vpcRef.name", ".spec.vpcRef.namespace"),
    ],
    request: clusterScopedDeleteRequest(),
    source: vms([[{
      ...vm("vm-1", "vpc-a", "team-a"),
      spec: { vpcRef: { name: "vpc-a", namespace: "elsewhere" } },
    }]]),
    want: {
      blockers: {
        named: [underRule("provider1/cross", vmBlocker("vm-1", "team-a"))],
        total: 1,
      },
    },
  },
  {
    name:
      "one rule of a type with a namespace path: one list of every namespace, the other rule kept to its own",
    rules: [
      VM_RULE,
      crossNamespaceRule(".spec.altVpcRef.name", ".spec.altVpcRef.namespace"),
    ],
    source: vms([[
      // .spec.vpcRef.name has no namespace path: team-a/vpc-a, no block.
      vm("own-path", "vpc-a", "team-a"),
      {
        ...vm("alt-path", "x", "team-a"),
        spec: { altVpcRef: { name: "vpc-a", namespace: "default" } },
      },
    ]]),
    want: {
      blockers: {
        named: [
          underRule(
            "provider1/cross",
            vmBlocker("alt-path", "team-a", ".spec.altVpcRef.name"),
          ),
        ],
        total: 1,
      },
      queries: [{ cluster: "consumer1", dependent: VM_TYPE }],
    },
  },
  // The provider whose configuration kcp called.
  ...([
    [undefined, [OTHER_PROVIDER_VM]],
    ["root:providers:network", []],
    ["root:providers:network2", [OTHER_PROVIDER_VM]],
  ] as const).map(([provider, named]): ReadCase => ({
    name: `provider ${provider ?? "unset"}: the dependents of its rules`,
    rules: [VM_RULE, OTHER_PROVIDER_RULE],
    ...(provider === undefined ? {} : { provider }),
    source: vms([[{
      ...vm("vm-1", "x"),
      spec: { vpcRef: { name: "x" }, altVpcRef: { name: "vpc-a" } },
    }]]),
    want: { blockers: { named: [...named], total: named.length } },
  })),
  // Locks.
  {
    name: "locked, no rule: the live object read, nothing listed",
    rules: [],
    locks: vpcLock(),
    source: () => new FakeDependentSource({}),
    want: {
      confirmed: true,
      blockers: "none",
      objectQueries: [VPC_A_QUERY],
      queries: [],
    },
  },
  {
    name: "locked, annotation: nothing listed",
    request: deleteRequest({
      oldObject: vpc("vpc-a", { namespace: "default", skip: "true" }),
    }),
    locks: vpcLock(),
    source: vms([[vm("vm-1", "vpc-a")]]),
    want: { confirmed: true, blockers: "none", queries: [] },
  },
  {
    name: "a free object of a type Locks cover: the live object read",
    rules: [],
    locks: vpcLock("other"),
    source: () => new FakeDependentSource({}),
    want: { confirmed: true, objectQueries: [VPC_A_QUERY], queries: [] },
  },
  {
    name: "a locked Namespace: read as the cluster-scoped object it is",
    rules: [],
    locks: namespaceLock(),
    request: namespaceDeleteRequest(),
    source: () => new FakeDependentSource({}),
    want: {
      confirmed: true,
      objectQueries: [{
        cluster: "consumer1",
        resource: { group: "", version: "v1", resource: "namespaces" },
        name: "team-a",
      }],
    },
  },
  // A rule counts only the dependents bound from its own dependent export.
  {
    name:
      "bound from the provider's export: the look-alike's rule dropped on a fresh read",
    ...LOOK_ALIKE,
    // vm "vpc-a" refers to nothing, but its name matches the look-alike's path.
    source: vms([[vm("vpc-a", "other")]], (s) => s.bound = BOUND_REAL),
    want: { blockers: { named: [], total: 0 }, boundFresh: [false, true] },
  },
  {
    name: "bound from the provider's export: its rule still counts",
    ...LOOK_ALIKE,
    source: vms([[vm("vm-1", "vpc-a")]], (s) => s.bound = BOUND_REAL),
    want: { blockers: { named: [vmBlocker("vm-1")], total: 1 } },
  },
  {
    name:
      "bound from the tenant's export: only the tenant's rule speaks of them",
    ...LOOK_ALIKE,
    source: vms(
      [[vm("vm-1", "vpc-a")]],
      (s) =>
        s.bound = new Map([["compute.example.com/virtualmachines", "fake"]]),
    ),
    want: { blockers: { named: [], total: 0 } },
  },
  {
    name:
      "a kept answer without the binding: a rule dropped only on a fresh read",
    ...LOOK_ALIKE,
    source: vms([[vm("vm-1", "vpc-a")]], (s) => {
      s.keptBound = new Map();
      s.bound = BOUND_REAL;
    }),
    want: {
      blockers: { named: [vmBlocker("vm-1")], total: 1 },
      boundFresh: [false, true],
    },
  },
  {
    name: "a kept answer with the rule's export: no second read",
    rules: [VM_RULE],
    identities: new Map([["provider1/vm-needs-vpc", "real"]]),
    source: vms([[vm("vm-1", "vpc-a")]], (s) => s.bound = BOUND_REAL),
    want: {
      blockers: { named: [vmBlocker("vm-1")], total: 1 },
      boundFresh: [false],
    },
  },
  {
    name: "bindings that cannot be read: every rule counts (fail closed)",
    ...LOOK_ALIKE,
    source: vms(
      [[vm("vpc-a", "other")]],
      (s) => s.bound = { error: new Error("403 Forbidden") },
    ),
    want: {
      blockers: {
        named: [
          underRule(
            "tenant1/look-alike",
            vmBlocker("vpc-a", "default", ".metadata.name"),
          ),
        ],
        total: 1,
      },
    },
  },
  {
    name: "rules without a known export identity: no bindings read",
    source: vms([[]]),
    want: { blockers: { named: [], total: 0 }, boundReads: 0 },
  },
  // Owner rules: the owners the live object (or its Namespace) names.
  {
    name:
      "an owner rule: the live object's metadata read, then the owner it names; nothing listed",
    rules: [LABEL_OWNER_RULE],
    source: owning(NET_A),
    want: {
      confirmed: true,
      blockers: "none",
      owners: { holding: [NET_A_HOLDS], unchecked: 0 },
      calls: ["liveMetadata vpcs/vpc-a", "ownerObject networks/default/net-a"],
      queries: [],
    },
  },
  {
    name: "an owner rule: an owner that is gone holds nothing",
    rules: [LABEL_OWNER_RULE],
    source: owning({}),
    want: {
      confirmed: true,
      owners: { holding: [], unchecked: 0 },
      calls: ["liveMetadata vpcs/vpc-a", "ownerObject networks/default/net-a"],
    },
  },
  {
    name: "an owner rule, a live object that names none: nothing looked up",
    rules: [LABEL_OWNER_RULE],
    source: owning(NET_A, { live: { uid: "uid-vpc-a" } }),
    want: {
      confirmed: true,
      owners: { holding: [], unchecked: 0 },
      calls: ["liveMetadata vpcs/vpc-a"],
    },
  },
  ...([
    ["a live object with another uid", { uid: "another", metadata: LABELLED }],
    ["no live object", { uid: undefined }],
  ] as const).map(([label, live]): ReadCase => ({
    name: `an owner rule, ${label}: not confirmed, no owner looked up`,
    rules: [LABEL_OWNER_RULE, NAMESPACE_OWNER_RULE],
    source: owning({
      ...NET_A,
      "namespaces/default": { metadata: { name: "default", ...LABELLED } },
    }, { live }),
    want: {
      confirmed: false,
      owners: { holding: [], unchecked: 0 },
      calls: ["liveMetadata vpcs/vpc-a"],
    },
  })),
  {
    name:
      "an owner rule, the live object cannot be read: the owners fail alike, none looked up",
    rules: [LABEL_OWNER_RULE],
    source: owning(NET_A, {
      live: {
        error: new KubeApiError("GET vpcs/vpc-a: 500: etcd down", {
          status: 500,
        }),
      },
    }),
    want: {
      confirmed: new KubeApiError("GET vpcs/vpc-a: 500: etcd down", {
        status: 500,
      }),
      owners: new KubeApiError("GET vpcs/vpc-a: 500: etcd down", {
        status: 500,
      }),
      calls: ["liveMetadata vpcs/vpc-a"],
    },
  },
  {
    name:
      "from TargetNamespace: the Namespace's metadata read, then the owner it names",
    rules: [NAMESPACE_OWNER_RULE],
    source: owning({
      ...NET_A,
      "namespaces/default": { metadata: { name: "default", ...LABELLED } },
    }, { live: { uid: "uid-vpc-a" } }),
    want: {
      confirmed: true,
      owners: {
        holding: [{
          ...NET_A_HOLDS,
          rule: "provider1/owned-via-namespace",
          viaNamespace: "default",
        }],
        unchecked: 0,
      },
      objectQueries: [VPC_A_QUERY, {
        cluster: "consumer1",
        resource: { group: "", version: "v1", resource: "namespaces" },
        name: "default",
      }],
      calls: [
        "liveMetadata vpcs/vpc-a",
        "liveMetadata namespaces/default",
        "ownerObject networks/default/net-a",
      ],
    },
  },
  {
    name:
      "a dependent rule and an owner rule: the live object read once, its metadata",
    rules: [VM_RULE, LABEL_OWNER_RULE],
    source: owning(NET_A, {
      listings: { virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] } },
    }),
    want: {
      confirmed: true,
      blockers: { named: [vmBlocker("vm-1")], total: 1 },
      owners: { holding: [NET_A_HOLDS], unchecked: 0 },
      calls: ["liveMetadata vpcs/vpc-a", "ownerObject networks/default/net-a"],
      listed: ["virtualmachines"],
    },
  },
  {
    name: "an owner and a list read at once: neither waits for the other",
    rules: [VM_RULE, LABEL_OWNER_RULE],
    source: listAndOwnerSource,
    want: {
      confirmed: true,
      blockers: { named: [vmBlocker("vm-1")], total: 1 },
      owners: { holding: [NET_A_HOLDS], unchecked: 0 },
    },
  },
  {
    name: "an owner not granted: the permission named, get on its type",
    rules: [LABEL_OWNER_RULE],
    source: owning({ "networks/net-a": { error: FORBIDDEN } }),
    want: { confirmed: true, owners: new Forbidden("get", NETWORKS) },
  },
  {
    name: "the Namespace not granted: the permission named, get on namespaces",
    rules: [NAMESPACE_OWNER_RULE],
    source: owning({ ...NET_A, "namespaces/default": { error: FORBIDDEN } }),
    want: {
      confirmed: true,
      owners: new Forbidden("get", { group: "", resource: "namespaces" }),
      calls: ["liveMetadata vpcs/vpc-a", "liveMetadata namespaces/default"],
    },
  },
  {
    name: "an owner that cannot be read: the read named",
    rules: [LABEL_OWNER_RULE],
    source: owning({
      "networks/net-a": {
        error: new KubeApiError("unavailable", { status: 500 }),
      },
    }),
    want: {
      confirmed: true,
      owners: new Error("reading Network/net-a failed: unavailable"),
    },
  },
  ...[false, true].map((ignoreSignals): ReadCase => ({
    name: `an owner read that hangs${
      ignoreSignals ? ", ignoring its signal" : ""
    }: ended at the deadline, the read named`,
    rules: [LABEL_OWNER_RULE],
    timeoutMs: 50,
    source: owning({ "networks/net-a": { hang: true } }, {
      setup: (source) => source.ignoreSignals = ignoreSignals,
    }),
    want: {
      confirmed: true,
      owners: new DeadlineExceeded("reading Network/net-a", 50),
    },
  })),
  {
    name:
      "a Namespace read that hangs: ended at the deadline, the Namespace named",
    rules: [NAMESPACE_OWNER_RULE],
    timeoutMs: 50,
    source: owning({ "namespaces/default": { hang: true } }),
    want: {
      confirmed: true,
      owners: new DeadlineExceeded("reading the namespace default", 50),
      calls: ["liveMetadata vpcs/vpc-a", "liveMetadata namespaces/default"],
    },
  },
];

/** `settled` failed with an error of `want`'s class and message (and permission). */
function assertRejected(settled: PromiseSettledResult<unknown>, want: Error) {
  assert.equal(settled.status, "rejected");
  const reason = (settled as PromiseRejectedResult).reason;
  assert.ok(
    reason instanceof (want.constructor as ErrorConstructor),
    `${reason} is a ${want.name}`,
  );
  assert.equal(reason.message, want.message);
  if (want instanceof Forbidden) {
    assert.deepEqual((reason as Forbidden).permission, want.permission);
  }
}

function assertFulfilled<T>(settled: PromiseSettledResult<T>, want: T) {
  assert.deepEqual(settled, { status: "fulfilled", value: want });
}

Deno.test("ReviewReader.read() makes the reads of a plan and settles each, case by case", async (t) => {
  for (const c of READ_CASES) {
    await t.step(c.name, async () => {
      const plan = planOf(c.request ?? deleteRequest(), {
        rules: c.rules,
        identities: c.identities,
        locks: c.locks,
        provider: c.provider,
        authorized: c.bypass !== undefined,
      });
      const source = c.source();
      const recorded = recording(source);
      const bypass = c.bypass === undefined
        ? undefined
        : new FakeBypass(c.bypass);
      const deadline = new Deadline(c.timeoutMs ?? 10_000, {
        what: "the review's reads",
      });
      const readings = await new ReviewReader(recorded.source, {
        deadline,
        bypass,
        ...(c.maxNamed === undefined ? {} : { maxNamed: c.maxNamed }),
      }).read(plan).finally(() => deadline.close());
      const { want } = c;
      if (want.confirmed instanceof Error) {
        assertRejected(readings.confirmed, want.confirmed);
      } else if (want.confirmed !== undefined) {
        assertFulfilled(readings.confirmed, want.confirmed);
      }
      if (want.blockers === "none") {
        assert.equal(readings.blockers, undefined, "nothing listed");
      } else if (want.blockers instanceof Error) {
        assert.ok(readings.blockers !== undefined, "listed");
        assertRejected(readings.blockers, want.blockers);
      } else if (want.blockers !== undefined) {
        assert.ok(readings.blockers !== undefined, "listed");
        assertFulfilled(readings.blockers, want.blockers);
      }
      if (want.owners === "none") {
        assert.equal(readings.owners, undefined, "no owner read");
      } else if (want.owners instanceof Error) {
        assert.ok(readings.owners !== undefined, "owners read");
        assertRejected(readings.owners, want.owners);
      } else if (want.owners !== undefined) {
        assert.ok(readings.owners !== undefined, "owners read");
        assertFulfilled(readings.owners, want.owners);
      }
      if (want.calls !== undefined) {
        assert.deepEqual(recorded.calls, want.calls);
      }
      if (want.bypass instanceof Error) {
        assert.ok(readings.bypass !== undefined, "asked");
        assertRejected(readings.bypass, want.bypass);
      } else if (want.bypass !== undefined) {
        assert.ok(readings.bypass !== undefined, "asked");
        assertFulfilled(readings.bypass, want.bypass);
      }
      if (want.bypassQueries !== undefined) {
        assert.deepEqual(bypass?.queries, want.bypassQueries);
      }
      if (!(source instanceof FakeDependentSource)) return;
      // No list runs on once the readings are in.
      assert.ok(
        source.signals.every((s) => s instanceof AbortSignal && s.aborted),
        "lists stopped",
      );
      if (want.queries !== undefined) {
        assert.deepEqual(source.plainQueries, want.queries);
      }
      if (want.listed !== undefined) {
        assert.deepEqual(source.listed.sort(), want.listed);
      }
      if (want.clusters !== undefined) {
        assert.deepEqual([
          ...new Set(source.queries.map((q) => q.cluster)),
        ], want.clusters);
      }
      if (want.objectQueries !== undefined) {
        assert.deepEqual(source.objectQueries, want.objectQueries);
      }
      if (want.workspaceQueries !== undefined) {
        assert.deepEqual(source.workspaceQueries, want.workspaceQueries);
      }
      if (want.boundFresh !== undefined) {
        assert.deepEqual(source.boundFresh, want.boundFresh);
      }
      if (want.boundReads !== undefined) {
        assert.equal(source.boundReads, want.boundReads);
      }
    });
  }
});

Deno.test("a Lock held while one dependent type may not be listed: the denial names the Lock, what the other list found, and the type not read", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[VM_ON_A]] },
    loadbalancers: { error: FORBIDDEN },
  });
  const verdict = await new DeletionValidator(
    registryOf(VM_RULE, LB_RULE),
    source,
    { locks: vpcLock("vpc-a") },
  ).validate(deleteRequest());
  assert.equal(verdict.outcome, "denied_locked");
  assert.equal(verdict.response.status?.code, 409);
  const message = verdict.response.status?.message ?? "";
  assert.match(message, /locked by Lock default\/prod/);
  assert.match(message, /also still referenced by VirtualMachine\/vm-1/);
  assert.match(
    message,
    /could not list loadbalancers\.lb\.example\.com, which may refer to it too \(the webhook's identity may not list/,
  );
  assert.deepEqual(verdict.causes?.map((c) => c.type), [
    "Lock",
    "Reference",
    "NotRead",
  ]);
  assert.deepEqual(verdict.forbidden, {
    verb: "list",
    group: "lb.example.com",
    resource: "loadbalancers",
  });
});

Deno.test("ReviewReader.read(): a failed list does not end the others; the types not read are named, and what the others found kept", async () => {
  const plan = planOf(deleteRequest(), { rules: [VM_RULE, LB_RULE] });
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[VM_ON_A]] },
    loadbalancers: { error: FORBIDDEN },
  });
  const deadline = new Deadline(10_000, { what: "the review's reads" });
  const readings = await new ReviewReader(source, { deadline }).read(plan)
    .finally(() => deadline.close());
  assert.equal(readings.blockers?.status, "rejected");
  assert.deepEqual(readings.partial, {
    named: [vmBlocker("vm-1")],
    total: 1,
  });
  assert.deepEqual(readings.unread?.map((u) => [u.verb, u.type.resource]), [
    ["list", "loadbalancers"],
  ]);
  assert.ok(readings.unread?.[0]?.forbidden !== undefined);
});

Deno.test("ReviewReader.read(): a list cut by the deadline is named as not read, with the deadline", async () => {
  const plan = planOf(deleteRequest(), { rules: [VM_RULE, LB_RULE] });
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[VM_ON_A]] },
    loadbalancers: { hang: true },
  });
  const deadline = new Deadline(50, { what: "the review's reads" });
  const readings = await new ReviewReader(source, { deadline }).read(plan)
    .finally(() => deadline.close());
  assert.equal(readings.blockers?.status, "rejected");
  assert.equal(readings.partial?.total, 1);
  assert.deepEqual(readings.unread, [{
    verb: "list",
    type: { group: "lb.example.com", resource: "loadbalancers" },
    why: "no answer within 50 ms",
  }]);
});
