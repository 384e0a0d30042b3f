import assert from "node:assert/strict";
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
import { RuleRegistry } from "./rule_registry.ts";
import { LockIndex } from "../locks/mod.ts";
import {
  allowedVerdict,
  assertCausesAgree,
  deleteRequest,
  deniedVerdict,
  dependentRule,
  expiringVpcLock,
  FakeBypass,
  FakeDependentSource,
  LOCKED_MESSAGE as LOCKED,
  NOT_READY_VERDICT,
  OTHER_PROVIDER_RULE,
  referencedVerdict as referenced,
  registryOf,
  SUBNETS,
  TWELVE_VMS as TWELVE,
  VIRTUAL_MACHINES,
  vm,
  VM_1_BLOCKS,
  VM_RULE,
  vpc,
  vpcLock,
  withoutCauses,
} from "../../testing/fakes.ts";

// The decisions themselves are table tests of their steps: the plan
// (review_plan_test.ts), the reads (review_reads_test.ts) and the fold
// (review_fold_test.ts). What is left here is the validator's own part: the
// readiness it derives, the options it hands each step, and the permits.

/** Validates `request` with a fresh validator. */
function validate(
  registry: RuleRegistry,
  source: DependentSource,
  request: AdmissionRequest,
  options: DeletionValidatorOptions = {},
): Promise<Verdict> {
  return new DeletionValidator(registry, source, options).validate(request);
}

const ALLOWED = allowedVerdict();

// ---------------------------------------------------------------------------
// Readiness: the rules and the Locks

Deno.test("DeletionValidator.validate() is not ready, with the exact message, until the rules and the Locks are loaded", async () => {
  assert.equal(
    NOT_INITIALIZED_MESSAGE,
    "dependency webhook not yet initialized, retry later",
  );
  const want = NOT_READY_VERDICT;
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
    dependentRule("vm-needs-vpc", VIRTUAL_MACHINES, [".spec.network.vpc"]),
  ]);
  assert.deepEqual(await validator.validate(deleteRequest()), ALLOWED);
  registry.replace([]);
  assert.deepEqual(await validator.validate(deleteRequest()), ALLOWED);
  assert.equal(source.queries.length, 2);
});

// ---------------------------------------------------------------------------
// The options each step is handed

const MARKED = new Date("2026-11-24T22:00:00Z");
/** A clock `ms` after the workspace was marked for deletion. */
function after(ms: number): () => number {
  return () => MARKED.getTime() + ms;
}

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

/** `verdict` as the validator answers a denial the live object confirmed. */
function confirmed(verdict: Verdict): Verdict {
  return { ...verdict, confirmed: true };
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
    want: confirmed(referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.vpcRef.name) and 1 more",
      3,
    )),
  },
  {
    name: "maxNamed unset: ten named",
    source: vms(TWELVE.map((n) => vm(n, "vpc-a"))),
    want: confirmed(referenced(
      `cannot delete vpcs/vpc-a: still referenced by ${
        TWELVE.slice(0, 10).map((n) =>
          `VirtualMachine/${n} (.spec.vpcRef.name)`
        ).join(", ")
      } and 2 more`,
      12,
    )),
  },
  {
    name: "provider: only its rules apply",
    registry: registryOf(VM_RULE, OTHER_PROVIDER_RULE),
    source: vms([{
      ...vm("vm-1", "x"),
      spec: { vpcRef: { name: "x" }, altVpcRef: { name: "vpc-a" } },
    }]),
    validateOptions: { provider: "root:providers:network2" },
    want: confirmed(referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.altVpcRef.name)",
      1,
    )),
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
      oldObject: vpc("vpc-a", { namespace: "default", skip: "true" }),
    }),
    source: vms([vm("vm-1", "vpc-a")]),
    options: { bypass },
    want: allowedVerdict("allowed_skip"),
    reads: { lists: [], objects: 1, workspaces: [] },
  },
  {
    name:
      "teardownOrderMs and now: references order a teardown within the window",
    source: vms([vm("vm-1", "vpc-a")], true),
    options: { teardownOrderMs: 60_000, now: after(59_999) },
    want: confirmed(referenced(VM_1_BLOCKS, 1)),
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
    want: allowedVerdict("allowed_workspace_deleting"),
  },
  {
    name: "teardownOrderMs unset: no Lock holds in a workspace being deleted",
    registry: registryOf(),
    source: vms([], true),
    options: { locks: vpcLock(), now: after(0) },
    want: allowedVerdict("allowed_workspace_deleting"),
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
      assertCausesAgree(verdict);
      assert.deepEqual(withoutCauses(verdict), c.want);
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
    const verdict = await validate(
      registryOf(VM_RULE),
      source,
      deleteRequest(),
      { timeoutMs: 50, locks: vpcLock(), teardownOrderMs: 0 },
    );
    assertCausesAgree(verdict);
    assert.deepEqual(verdict.causes?.map((c) => c.type), ["Lock", "Reference"]);
    assert.deepEqual(
      withoutCauses(verdict),
      confirmed(deniedVerdict(
        409,
        "Conflict",
        `${LOCKED}; also still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
        "denied_locked",
      )),
    );
    assert.deepEqual(source.workspaceQueries, ["consumer1"]);
  }
  // Nor does an unconfirmed review ever ask.
  const forged = new FakeDependentSource({}, { uid: "someone-else" });
  forged.deletedAt = MARKED;
  assert.equal(
    (await validate(registryOf(), forged, deleteRequest(), {
      locks: vpcLock(),
      teardownOrderMs: 0,
    })).outcome,
    "denied_unconfirmed",
  );
  assert.deepEqual(forged.workspaceQueries, []);
});

Deno.test("DeletionValidator.validate() marks confirmed only the holding denials the live object confirmed", async () => {
  const registry = registryOf(VM_RULE);
  const blocked = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const held = await validate(registry, blocked, deleteRequest());
  assert.equal(held.outcome, "denied_referenced");
  assert.equal(held.confirmed, true);
  // A Lock on a type the webhook may not read: denied, but unconfirmed.
  const unreadable = new FakeDependentSource({}, {
    error: new KubeApiError("forbidden", { status: 403 }),
  });
  const locked = await validate(registryOf(), unreadable, deleteRequest(), {
    locks: vpcLock(),
  });
  assert.equal(locked.outcome, "denied_locked");
  assert.equal(locked.confirmed, undefined);
  // Another uid: the one generic denial, unconfirmed.
  const forged = new FakeDependentSource({}, { uid: "someone-else" });
  const other = await validate(registry, forged, deleteRequest());
  assert.equal(other.outcome, "denied_unconfirmed");
  assert.equal(other.confirmed, undefined);
  // Allowed and failed reviews carry no mark either.
  const free = new FakeDependentSource({ virtualmachines: { pages: [[]] } });
  assert.equal(
    (await validate(registry, free, deleteRequest())).confirmed,
    undefined,
  );
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
  assert.deepEqual(
    verdict,
    deniedVerdict(
      503,
      "ServiceUnavailable",
      "cannot delete vpcs/vpc-a: the dependency webhook is busy with this workspace's deletes " +
        "(at most 2 of a workspace's 4 reviews read kcp at once, and more wait); retry the delete",
      "denied_busy",
    ),
  );
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

Deno.test("DeletionValidator.validate() lets an expiring Lock go by its now option, after the skew allowance", async () => {
  const expiresAt = Date.parse("2026-01-01T00:00:00Z");
  const decide = (now: number) =>
    validate(
      registryOf(),
      new FakeDependentSource({ virtualmachines: { pages: [] } }),
      deleteRequest(),
      { locks: expiringVpcLock("2026-01-01T00:00:00Z"), now: () => now },
    );
  const held = await decide(expiresAt + 4_999);
  assert.equal(held.outcome, "denied_locked");
  assert.deepEqual(held.causes, [{
    type: "Lock",
    lock: { namespace: "default", name: "window" },
    reason: "maintenance window",
    expiresAt: "2026-01-01T00:00:00Z",
  }]);
  assert.match(
    held.response.status?.message ?? "",
    /Lock default\/window \("maintenance window", until 2026-01-01T00:00:00Z\)/,
  );
  assert.equal((await decide(expiresAt + 5_000)).outcome, "allowed");
});
