import assert from "node:assert/strict";
import type { BypassAuthorizer, BypassQuery } from "./access_review.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import {
  DeletionValidator,
  type DeletionValidatorOptions,
  type DependentSource,
  NOT_INITIALIZED_MESSAGE,
  type ValidateOptions,
  type Verdict,
} from "./deletion_validator.ts";
import { KubeApiError } from "../kcp/mod.ts";
import { FairQueue } from "../runtime/mod.ts";
import { type ClusterRule, type GroupVersionResource } from "../rules/mod.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { LockIndex } from "../locks/mod.ts";
import {
  dependency,
  type DependentType,
  FakeDependentSource,
  SUBNETS,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

// The decisions themselves are table tests of their steps: the plan
// (review_plan_test.ts), the reads (review_reads_test.ts) and the fold
// (review_fold_test.ts). What is left here is the validator's own part: the
// readiness it derives, the options it hands each step, and the permits.

const UID = "705ab4f5-6393-11e8-b7cc-42010a800002";
const SKIP = "dependencies.opendefense.cloud/skip-protection";

// ---------------------------------------------------------------------------
// Rules, Locks and objects

/** A validated rule in cluster `provider1`: `dependent` refers to `target` at `paths`. */
function rule(
  name: string,
  dependent: DependentType,
  paths: readonly string[] = [".spec.vpcRef.name"],
  target: GroupVersionResource = VPCS,
): ClusterRule {
  return {
    cluster: "provider1",
    rule: validRule(
      name,
      dependent,
      paths.map((path) => dependency(target, path)),
    ),
  };
}

/** VirtualMachines depend on VPCs via `.spec.vpcRef.name`. */
const VM_RULE = rule("vm-needs-vpc", VIRTUAL_MACHINES);

/** A loaded registry holding `rules`. */
function registryOf(...rules: ClusterRule[]): RuleRegistry {
  const registry = new RuleRegistry();
  registry.replace(rules);
  return registry;
}

/** An index holding one Lock `prod` in `default` on vpcs/vpc-a of `consumer1`. */
function lockIndex(): LockIndex {
  const index = new LockIndex();
  index.replace([{
    cluster: "consumer1",
    lock: validLock("prod", "default", {
      target: { ...VPCS, name: "vpc-a" },
      reason: "production VPC",
    }),
  }]);
  return index;
}

/** A VPC as the API server stores it, in logical cluster `consumer1`. */
function vpc(
  name: string,
  options: { namespace?: string; annotations?: Record<string, unknown> } = {},
): Record<string, unknown> {
  const { namespace, annotations = { "kcp.io/cluster": "consumer1" } } =
    options;
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: "VPC",
    metadata: {
      name,
      ...(namespace === undefined ? {} : { namespace }),
      uid: `uid-${name}`,
      annotations,
    },
    spec: { cidr: "10.0.0.0/16" },
  };
}

/** A VirtualMachine in `default` whose `.spec.vpcRef.name` is `vpcName`. */
function vm(name: string, vpcName: string): Record<string, unknown> {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: { name, namespace: "default" },
    spec: { vpcRef: { name: vpcName } },
  };
}

/** The admission request of a DELETE of `vpcs/vpc-a` in namespace `default`. */
function deleteRequest(
  overrides: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  return {
    uid: UID,
    kind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
    resource: { ...VPCS },
    name: "vpc-a",
    namespace: "default",
    operation: "DELETE",
    userInfo: { username: "alice", groups: ["system:authenticated"] },
    oldObject: vpc("vpc-a", { namespace: "default" }),
    dryRun: false,
    options: { kind: "DeleteOptions", apiVersion: "meta.k8s.io/v1" },
    ...overrides,
  };
}

/** Validates `request` with a fresh validator. */
function validate(
  registry: RuleRegistry,
  source: DependentSource,
  request: AdmissionRequest,
  options: DeletionValidatorOptions = {},
): Promise<Verdict> {
  return new DeletionValidator(registry, source, options).validate(request);
}

/** The verdict of a 409 denial naming blockers. */
function referenced(message: string, blockers: number): Verdict {
  return {
    response: {
      uid: UID,
      allowed: false,
      status: { code: 409, reason: "Conflict", message },
    },
    outcome: "denied_referenced",
    blockers,
  };
}

const ALLOWED: Verdict = {
  response: { uid: UID, allowed: true },
  outcome: "allowed",
};
const LOCKED =
  'cannot delete vpcs/vpc-a: locked by Lock default/prod ("production VPC"): deleting the Lock unlocks it; the skip-protection annotation does not';

// ---------------------------------------------------------------------------
// Readiness: the rules and the Locks

Deno.test("DeletionValidator.validate() is not ready, with the exact message, until the rules and the Locks are loaded", async () => {
  assert.equal(
    NOT_INITIALIZED_MESSAGE,
    "dependency webhook not yet initialized, retry later",
  );
  const want: Verdict = {
    response: {
      uid: UID,
      allowed: false,
      status: {
        code: 503,
        reason: "ServiceUnavailable",
        message: "dependency webhook not yet initialized, retry later",
      },
    },
    outcome: "denied_not_ready",
  };
  const source = new FakeDependentSource({ virtualmachines: { pages: [] } });
  // Loaded only by replace(), which the webhook calls once the rules are complete.
  const cases: [string, RuleRegistry, DeletionValidatorOptions][] = [
    ["rules not loaded", new RuleRegistry(), {}],
    ["Locks not loaded", registryOf(), { locks: new LockIndex() }],
  ];
  for (const [label, registry, options] of cases) {
    assert.deepEqual(
      await validate(registry, source, deleteRequest(), options),
      want,
      label,
    );
  }
  assert.deepEqual(source.queries, []);
  assert.deepEqual(source.objectQueries, []);
  // Not loaded, a CREATE is still allowed.
  assert.deepEqual(
    await validate(
      new RuleRegistry(),
      source,
      deleteRequest({ operation: "CREATE" }),
    ),
    ALLOWED,
  );
});

Deno.test("DeletionValidator.validate() follows rule edits made in the registry between reviews", async () => {
  const registry = registryOf(VM_RULE);
  const items = [vm("vm-1", "vpc-a")];
  (items[0]!.spec as Record<string, unknown>).network = { vpc: "vpc-b" };
  const source = new FakeDependentSource({
    virtualmachines: { pages: [items] },
  });
  const validator = new DeletionValidator(registry, source);
  assert.equal(
    (await validator.validate(deleteRequest())).outcome,
    "denied_referenced",
  );
  registry.replace([
    rule("vm-needs-vpc", VIRTUAL_MACHINES, [".spec.network.vpc"]),
  ]);
  assert.deepEqual(await validator.validate(deleteRequest()), ALLOWED);
  registry.replace([]);
  assert.deepEqual(await validator.validate(deleteRequest()), ALLOWED);
  assert.equal(source.queries.length, 2);
});

// ---------------------------------------------------------------------------
// The options each step is handed

/** Answers SubjectAccessReviews with `answer`, recording each query. */
class FakeBypass implements BypassAuthorizer {
  readonly queries: BypassQuery[] = [];
  constructor(readonly answer: boolean) {}
  mayBypass(query: BypassQuery): Promise<boolean> {
    this.queries.push(query);
    return Promise.resolve(this.answer);
  }
}

/** `vm-01` ... `vm-12`. */
const TWELVE = Array.from(
  { length: 12 },
  (_, i) => `vm-${String(i + 1).padStart(2, "0")}`,
);
const MARKED = new Date("2026-11-24T22:00:00Z");
/** A clock `ms` after the workspace was marked for deletion. */
function after(ms: number): () => number {
  return () => MARKED.getTime() + ms;
}
const VM_1_BLOCKS =
  "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";

interface OptionCase {
  name: string;
  registry?: RuleRegistry;
  request?: AdmissionRequest;
  /** A fresh source for the case. */
  source: () => FakeDependentSource;
  options?: DeletionValidatorOptions;
  validateOptions?: ValidateOptions;
  want: Verdict;
  /** What the source must have been asked, when checked. */
  reads?: { lists: string[]; objects: number; workspaces: string[] };
}

/** VirtualMachines answering `items`, in a workspace kcp marked for deletion when `marked`. */
function vms(
  items: readonly unknown[],
  marked = false,
): () => FakeDependentSource {
  return () => {
    const source = new FakeDependentSource({
      virtualmachines: { pages: [items] },
    });
    if (marked) source.deletedAt = MARKED;
    return source;
  };
}

const bypass = new FakeBypass(true);

const OPTION_CASES: OptionCase[] = [
  {
    name: "maxNamed: as many named as it says",
    source: vms([
      vm("vm-1", "vpc-a"),
      vm("vm-2", "vpc-a"),
      vm("vm-3", "vpc-a"),
    ]),
    options: { maxNamed: 2 },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.vpcRef.name) and 1 more",
      3,
    ),
  },
  {
    name: "maxNamed unset: ten named",
    source: vms(TWELVE.map((n) => vm(n, "vpc-a"))),
    want: referenced(
      `cannot delete vpcs/vpc-a: still referenced by ${
        TWELVE.slice(0, 10).map((n) =>
          `VirtualMachine/${n} (.spec.vpcRef.name)`
        ).join(", ")
      } and 2 more`,
      12,
    ),
  },
  {
    name: "provider: only its rules apply",
    registry: registryOf(VM_RULE, {
      cluster: "provider1",
      rule: validRule("other-provider", VIRTUAL_MACHINES, [{
        ...dependency(VPCS, ".spec.altVpcRef.name"),
        apiExportRef: { path: "root:providers:network2", name: VPCS.group },
      }]),
    }),
    source: vms([{
      ...vm("vm-1", "x"),
      spec: { vpcRef: { name: "x" }, altVpcRef: { name: "vpc-a" } },
    }]),
    validateOptions: { provider: "root:providers:network2" },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.altVpcRef.name)",
      1,
    ),
  },
  {
    name: "provider no rule is about: allowed without reading kcp",
    source: vms([vm("vm-1", "vpc-a")]),
    validateOptions: { provider: "root:elsewhere" },
    want: ALLOWED,
    reads: { lists: [], objects: 0, workspaces: [] },
  },
  {
    name: "bypass: the annotation counts for a user kcp allows, nothing listed",
    request: deleteRequest({
      oldObject: vpc("vpc-a", {
        namespace: "default",
        annotations: { "kcp.io/cluster": "consumer1", [SKIP]: "true" },
      }),
    }),
    source: vms([vm("vm-1", "vpc-a")]),
    options: { bypass },
    want: { response: { uid: UID, allowed: true }, outcome: "allowed_skip" },
    reads: { lists: [], objects: 1, workspaces: [] },
  },
  {
    name:
      "teardownOrderMs and now: references order a teardown within the window",
    source: vms([vm("vm-1", "vpc-a")], true),
    options: { teardownOrderMs: 60_000, now: after(59_999) },
    want: referenced(VM_1_BLOCKS, 1),
    reads: {
      lists: ["virtualmachines"],
      objects: 1,
      workspaces: ["consumer1"],
    },
  },
  {
    name: "teardownOrderMs and now: past the window nothing holds",
    source: vms([vm("vm-1", "vpc-a")], true),
    options: { teardownOrderMs: 60_000, now: after(60_000) },
    want: {
      response: { uid: UID, allowed: true },
      outcome: "allowed_workspace_deleting",
    },
  },
  {
    name: "teardownOrderMs unset: no Lock holds in a workspace being deleted",
    registry: registryOf(),
    source: vms([], true),
    options: { locks: lockIndex(), now: after(0) },
    want: {
      response: { uid: UID, allowed: true },
      outcome: "allowed_workspace_deleting",
    },
  },
];

Deno.test("DeletionValidator.validate() hands its options to the plan, the reads and the fold", async (t) => {
  for (const c of OPTION_CASES) {
    await t.step(c.name, async () => {
      const source = c.source();
      const verdict = await new DeletionValidator(
        c.registry ?? registryOf(VM_RULE),
        source,
        c.options,
      ).validate(c.request ?? deleteRequest(), c.validateOptions);
      assert.deepEqual(verdict, c.want);
      if (c.reads !== undefined) {
        assert.deepEqual({
          lists: source.listed,
          objects: source.objectQueries.length,
          workspaces: source.workspaceQueries,
        }, c.reads);
      }
    });
  }
  assert.deepEqual(bypass.queries, [{
    cluster: "consumer1",
    namespace: "default",
    user: { username: "alice", groups: ["system:authenticated"] },
  }]);
});

Deno.test("DeletionValidator.validate() keeps the denial while the workspace is not being deleted or cannot be read in time", async () => {
  const answers: FakeDependentSource["deletedAt"][] = [
    undefined,
    { error: new KubeApiError("forbidden", { status: 403 }) },
    { hang: true },
  ];
  for (const deletedAt of answers) {
    const source = new FakeDependentSource({
      virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
    });
    source.deletedAt = deletedAt;
    assert.deepEqual(
      await validate(registryOf(VM_RULE), source, deleteRequest(), {
        timeoutMs: 50,
        locks: lockIndex(),
        teardownOrderMs: 0,
      }),
      {
        response: {
          uid: UID,
          allowed: false,
          status: {
            code: 409,
            reason: "Conflict",
            message:
              `${LOCKED}; also still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
          },
        },
        outcome: "denied_locked",
      },
    );
    assert.deepEqual(source.workspaceQueries, ["consumer1"]);
  }
  // Nor does an unconfirmed review ever ask.
  const forged = new FakeDependentSource({}, { uid: "someone-else" });
  forged.deletedAt = MARKED;
  assert.equal(
    (await validate(registryOf(), forged, deleteRequest(), {
      locks: lockIndex(),
      teardownOrderMs: 0,
    })).outcome,
    "denied_unconfirmed",
  );
  assert.deepEqual(forged.workspaceQueries, []);
});

// ---------------------------------------------------------------------------
// A bound on the reviews that read kcp at once

Deno.test("DeletionValidator.validate() lets a review wait for a permit, then reads kcp", async () => {
  const reviews = new FairQueue({ capacity: 1 });
  const held = (await reviews.acquire("consumer1", { timeoutMs: 0 }))!;
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } });
  const verdict = validate(registryOf(VM_RULE), source, deleteRequest(), {
    reviews,
    queueTimeoutMs: 60_000,
  });
  await Promise.resolve();
  assert.deepEqual(source.queries, []);
  held();
  assert.deepEqual(await verdict, ALLOWED);
  assert.deepEqual(source.listed, ["virtualmachines"]);
  assert.equal(reviews.used, 0);
});

Deno.test("DeletionValidator.validate() denies 503 busy without reading kcp when no permit comes in time", async () => {
  const reviews = new FairQueue({ capacity: 4 });
  const held = [
    (await reviews.acquire("consumer1", { timeoutMs: 0 }))!,
    (await reviews.acquire("consumer1", { timeoutMs: 0 }))!,
  ];
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
    { reviews, queueTimeoutMs: 10 },
  );
  for (const release of held) release();
  assert.deepEqual(verdict, {
    response: {
      uid: UID,
      allowed: false,
      status: {
        code: 503,
        reason: "ServiceUnavailable",
        message:
          "cannot delete vpcs/vpc-a: the dependency webhook is busy with this workspace's deletes " +
          "(at most 2 of a workspace's 4 reviews read kcp at once, and more wait); retry the delete",
      },
    },
    outcome: "denied_busy",
  });
  assert.deepEqual(source.queries, []);
  assert.deepEqual(source.objectQueries, []);
});

Deno.test("DeletionValidator.validate() needs no permit for a type no rule protects", async () => {
  const reviews = new FairQueue({ capacity: 1 });
  const held = (await reviews.acquire("consumer1", { timeoutMs: 0 }))!;
  const verdict = await validate(
    registryOf(VM_RULE),
    new FakeDependentSource(),
    deleteRequest({ resource: { ...SUBNETS } }),
    { reviews, queueTimeoutMs: 0 },
  );
  held();
  assert.equal(verdict.outcome, "allowed");
});

Deno.test("DeletionValidator.validate() gives the permit back when the review fails", async () => {
  const reviews = new FairQueue({ capacity: 1 });
  const source = new FakeDependentSource({
    virtualmachines: { error: "boom" },
  });
  const verdict = await validate(registryOf(VM_RULE), source, deleteRequest(), {
    reviews,
  });
  assert.equal(verdict.outcome, "denied_error");
  assert.equal(reviews.used, 0);
});

Deno.test("DeletionValidator.validate() lets another workspace's review through while one workspace's fill their share", async () => {
  // Two permits, at most one per workspace.
  const reviews = new FairQueue({ capacity: 2 });
  const heavy = [(await reviews.acquire("heavy", { timeoutMs: 0 }))!];
  // The heavy workspace's next review waits behind its own, though a permit is free.
  const waiting = reviews.acquire("heavy", { timeoutMs: 60_000 });
  assert.equal(reviews.waiting, 1);
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } });
  const verdict = await validate(registryOf(VM_RULE), source, deleteRequest(), {
    reviews,
    queueTimeoutMs: 0,
  });
  assert.deepEqual(verdict, ALLOWED);
  for (const release of heavy) release();
  (await waiting)!();
  assert.equal(reviews.used, 0);
});
