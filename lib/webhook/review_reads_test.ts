import assert from "node:assert/strict";
import type { AdmissionRequest } from "./admission_review.ts";
import { DeletionValidator } from "./deletion_validator.ts";
import type {
  DependentQuery,
  DependentSource,
  ObjectQuery,
} from "./review_reads.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { LockIndex } from "../locks/mod.ts";
import { KubeApiError } from "../kcp/mod.ts";
import {
  dependency,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

/** Counts every read, by kind and target, and answers as configured. */
class CountingSource implements DependentSource {
  readonly reads = new Map<string, number>();
  readonly signals: AbortSignal[] = [];
  constructor(
    readonly options: {
      hang?: boolean;
      deletedAt?: Date;
      items?: unknown[];
      forbidGet?: boolean;
    } = {},
  ) {}
  #count(key: string, signal: AbortSignal): void {
    this.reads.set(key, (this.reads.get(key) ?? 0) + 1);
    this.signals.push(signal);
  }
  #answer<T>(value: T, signal: AbortSignal): Promise<T> {
    if (!this.options.hang) return Promise.resolve(value);
    // Hangs, ignoring the signal: only the deadline's race can end it.
    void signal;
    return new Promise<T>(() => {});
  }
  async *pages(
    query: DependentQuery,
    signal: AbortSignal,
  ): AsyncIterable<readonly unknown[]> {
    this.#count(`list ${query.dependent.resource}`, signal);
    yield await this.#answer(this.options.items ?? [], signal);
  }
  liveUid(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    this.#count(`get ${query.resource.resource}/${query.name}`, signal);
    if (this.options.forbidGet) {
      return Promise.reject(new KubeApiError("forbidden", { status: 403 }));
    }
    return this.#answer(`uid-${query.name}`, signal);
  }
  workspaceDeletedAt(
    cluster: string,
    signal: AbortSignal,
  ): Promise<Date | undefined> {
    this.#count(`get logicalcluster ${cluster}`, signal);
    return this.#answer(this.options.deletedAt, signal);
  }
  boundIdentities(
    cluster: string,
    signal: AbortSignal,
  ): Promise<ReadonlyMap<string, string>> {
    this.#count(`list apibindings ${cluster}`, signal);
    return this.#answer(new Map(), signal);
  }
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
  const source = new CountingSource({
    items: [VM_ON_A],
    deletedAt: new Date(Date.now() - 1_000),
  });
  const verdict = await new DeletionValidator(registry(), source, {
    locks: lockOn("vpc-a"),
  }).validate(REQUEST);
  // Locks go with the workspace; references still order its teardown.
  assert.equal(verdict.outcome, "denied_referenced");
  assert.match(verdict.response.status?.message ?? "", /VirtualMachine\/vm-1/);
  assert.deepEqual(Object.fromEntries(source.reads), {
    "get vpcs/vpc-a": 1,
    "list virtualmachines": 1,
    "get logicalcluster consumer1": 1,
  });
});

Deno.test("a 403 on the live object reads the workspace once, for the 403 and the teardown alike", async () => {
  const source = new CountingSource({ forbidGet: true });
  const verdict = await new DeletionValidator(registry(), source, {
    locks: lockOn("vpc-a"),
  }).validate(REQUEST);
  assert.equal(verdict.outcome, "denied_locked");
  assert.match(verdict.response.status?.message ?? "", /a Lock may hold it/);
  assert.equal(source.reads.get("get logicalcluster consumer1"), 1);
  assert.equal(source.reads.get("list virtualmachines"), 1);
});

Deno.test("an allowed review reads no workspace: the teardown check is only for denials", async () => {
  const source = new CountingSource({ items: [] });
  const verdict = await new DeletionValidator(registry(), source).validate(
    REQUEST,
  );
  assert.equal(verdict.outcome, "allowed");
  assert.equal(source.reads.get("get logicalcluster consumer1"), undefined);
  assert.equal(source.reads.get("get vpcs/vpc-a"), 1);
  assert.equal(source.reads.get("list virtualmachines"), 1);
});

Deno.test("a review against a source that hangs, ignoring its signals, answers at its one deadline, failing closed", async () => {
  const source = new CountingSource({ hang: true });
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
  // Every read was told to stop.
  assert.ok(source.signals.length >= 2);
  assert.ok(source.signals.every((s) => s.aborted));
});

Deno.test("a denial whose workspace check hangs answers within the same deadline, the denial standing", async () => {
  /** Answers reads at once, but the LogicalCluster never. */
  class SlowWorkspace extends CountingSource {
    override workspaceDeletedAt(
      cluster: string,
      signal: AbortSignal,
    ): Promise<Date | undefined> {
      super.workspaceDeletedAt(cluster, signal);
      return new Promise(() => {});
    }
  }
  const source = new SlowWorkspace({ items: [VM_ON_A] });
  const verdict = await settlesWithin(
    new DeletionValidator(registry(), source, { timeoutMs: 200 }).validate(
      REQUEST,
    ),
    10_000,
  );
  assert.equal(verdict.outcome, "denied_referenced");
  assert.equal(source.reads.get("get logicalcluster consumer1"), 1);
});
