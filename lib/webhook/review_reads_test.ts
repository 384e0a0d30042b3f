import assert from "node:assert/strict";
import type { AdmissionRequest } from "./admission_review.ts";
import { DeletionValidator } from "./deletion_validator.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { LockIndex } from "../locks/mod.ts";
import { KubeApiError } from "../kcp/mod.ts";
import {
  dependency,
  FakeDependentSource,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

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

function registry(): RuleRegistry {
  const r = new RuleRegistry();
  r.replace([{
    cluster: "provider1",
    rule: validRule("vm-vpc", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
  }]);
  return r;
}

function lockOn(name: string): LockIndex {
  const index = new LockIndex();
  index.replace([{
    cluster: "consumer1",
    lock: validLock("prod", "default", {
      target: { ...VPCS, name },
      reason: "production",
    }),
  }]);
  return index;
}

const REQUEST = {
  uid: "u1",
  kind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
  resource: { ...VPCS },
  name: "vpc-a",
  namespace: "default",
  operation: "DELETE",
  userInfo: { username: "alice" },
  oldObject: {
    metadata: {
      name: "vpc-a",
      namespace: "default",
      uid: "uid-vpc-a",
      annotations: { "kcp.io/cluster": "consumer1" },
    },
  },
} as AdmissionRequest;

const VM_ON_A = {
  metadata: { name: "vm-1", namespace: "default" },
  spec: { vpcRef: { name: "vpc-a" } },
};

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

Deno.test("a review reads each object and list at most once, also when a Lock holds the object in a workspace being deleted", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[VM_ON_A]] },
  });
  source.deletedAt = new Date(Date.now() - 1_000);
  const verdict = await new DeletionValidator(registry(), source, {
    locks: lockOn("vpc-a"),
  }).validate(REQUEST);
  // Locks go with the workspace; references still order its teardown.
  assert.equal(verdict.outcome, "denied_referenced");
  assert.match(verdict.response.status?.message ?? "", /VirtualMachine\/vm-1/);
  assert.deepEqual(reads(source), {
    "get vpcs/vpc-a": 1,
    "list virtualmachines": 1,
    "get logicalcluster consumer1": 1,
  });
});

Deno.test("a 403 on the live object reads the workspace once, for the 403 and the teardown alike", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[]] },
  }, { error: new KubeApiError("forbidden", { status: 403 }) });
  const verdict = await new DeletionValidator(registry(), source, {
    locks: lockOn("vpc-a"),
  }).validate(REQUEST);
  assert.equal(verdict.outcome, "denied_locked");
  assert.match(verdict.response.status?.message ?? "", /a Lock may hold it/);
  assert.equal(reads(source)["get logicalcluster consumer1"], 1);
  assert.equal(reads(source)["list virtualmachines"], 1);
});

Deno.test("an allowed review reads no workspace: the teardown check is only for denials", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[]] },
  });
  const verdict = await new DeletionValidator(registry(), source).validate(
    REQUEST,
  );
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
    new DeletionValidator(registry(), source, {
      timeoutMs: 50,
      locks: lockOn("vpc-b"),
    }).validate(REQUEST),
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
    new DeletionValidator(registry(), source, { timeoutMs: 200 }).validate(
      REQUEST,
    ),
    10_000,
  );
  assert.equal(verdict.outcome, "denied_referenced");
  assert.equal(reads(source)["get logicalcluster consumer1"], 1);
});
