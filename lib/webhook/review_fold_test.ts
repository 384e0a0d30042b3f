import assert from "node:assert/strict";
import type { AdmissionRequest } from "./admission_review.ts";
import {
  type PlanContext,
  planReview,
  type ReviewPlan,
} from "./review_plan.ts";
import { asksTeardown, foldReview, foldTeardown } from "./review_fold.ts";
import {
  type Blockers,
  Forbidden,
  type ReviewReadings,
  UnknownWorkspace,
} from "./review_reads.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { LockIndex } from "../locks/mod.ts";
import {
  dependency,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

const SKIP = "dependencies.opendefense.cloud/skip-protection";

function plan(
  options: { locked?: boolean; skip?: boolean; authorized?: boolean } = {},
): ReviewPlan {
  const rules = new RuleRegistry();
  rules.replace([{
    cluster: "provider1",
    rule: validRule("vm-vpc", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
  }]);
  const locks = new LockIndex();
  locks.replace(
    options.locked
      ? [{
        cluster: "consumer1",
        lock: validLock("prod", "default", {
          target: { ...VPCS, name: "vpc-a" },
          reason: "production",
        }),
      }]
      : [],
  );
  const context: PlanContext = {
    loaded: true,
    protectionsOf: (resource) => rules.find(resource),
    locks,
    authorizedBypass: options.authorized ?? false,
  };
  const step = planReview({
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
        uid: "uid-a",
        annotations: {
          "kcp.io/cluster": "consumer1",
          ...(options.skip ? { [SKIP]: "true" } : {}),
        },
      },
    },
  } as AdmissionRequest, context);
  assert.ok("plan" in step, "a plan");
  return step.plan;
}

const OK = { status: "fulfilled", value: true } as const;
const GONE = { status: "fulfilled", value: false } as const;
const fail = (reason: unknown) => ({ status: "rejected", reason }) as const;
const found = (total: number): PromiseSettledResult<Blockers> => ({
  status: "fulfilled",
  value: {
    named: total === 0 ? [] : [{
      kind: "VirtualMachine",
      namespace: "default",
      name: "vm-1",
      paths: [".spec.vpcRef.name"],
    }],
    total,
  },
});
const FORBIDDEN_GET = new Forbidden("get", VPCS);
const FORBIDDEN_LIST = new Forbidden("list", VIRTUAL_MACHINES);

Deno.test("foldReview() folds the readings into the verdict, case by case", () => {
  const cases: [string, ReviewPlan, ReviewReadings, string, RegExp?][] = [
    [
      "references: none refer",
      plan(),
      { confirmed: OK, blockers: found(0) },
      "allowed",
    ],
    [
      "references: one refers",
      plan(),
      { confirmed: OK, blockers: found(1) },
      "denied_referenced",
      /still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\)/,
    ],
    [
      "references: the object is another",
      plan(),
      { confirmed: GONE, blockers: found(1) },
      "denied_unconfirmed",
      /cannot confirm the object/,
    ],
    [
      "references: the object unreadable",
      plan(),
      { confirmed: fail(new Error("etcd down")), blockers: found(1) },
      "denied_error",
      /cannot read the object itself \(etcd down\)/,
    ],
    [
      "references: not granted the object",
      plan(),
      { confirmed: fail(FORBIDDEN_GET) },
      "denied_error",
      /may not get vpcs\.network\.example\.com/,
    ],
    [
      "references: an unknown workspace",
      plan(),
      { confirmed: fail(new UnknownWorkspace("zzz")) },
      "denied_error",
      /cannot read the workspace "zzz"/,
    ],
    [
      "references: a list not granted",
      plan(),
      { confirmed: OK, blockers: fail(FORBIDDEN_LIST) },
      "denied_error",
      /may not list virtualmachines.*until it may/,
    ],
    [
      "references: a list failed",
      plan(),
      { confirmed: OK, blockers: fail(new Error("boom")) },
      "denied_error",
      /cannot check whether other objects still refer to it \(boom\)/,
    ],
    [
      "locked: confirmed",
      plan({ locked: true }),
      { confirmed: OK, blockers: found(0) },
      "denied_locked",
      /locked by Lock default\/prod \("production"\): deleting the Lock unlocks it; the skip-protection annotation does not$/,
    ],
    [
      "locked: and referenced",
      plan({ locked: true }),
      { confirmed: OK, blockers: found(1) },
      "denied_locked",
      /locked by Lock default\/prod \("production"\): deleting the Lock unlocks it; the skip-protection annotation does not; also still referenced by VirtualMachine\/vm-1/,
    ],
    ["locked: a failed list does not matter", plan({ locked: true }), {
      confirmed: OK,
      blockers: fail(new Error("boom")),
    }, "denied_locked"],
    ["locked: forged", plan({ locked: true }), {
      confirmed: GONE,
      blockers: found(1),
    }, "denied_unconfirmed"],
    [
      "locked: unreadable type",
      plan({ locked: true }),
      { confirmed: fail(FORBIDDEN_GET) },
      "denied_locked",
      /a Lock may hold it/,
    ],
    ["bypass: allowed", plan({ skip: true, authorized: true }), {
      confirmed: OK,
      bypass: OK,
    }, "allowed_skip"],
    [
      "bypass: refused",
      plan({ skip: true, authorized: true }),
      { confirmed: OK, bypass: GONE },
      "denied_skip_unauthorized",
      /"alice" is not/,
    ],
    ["bypass: forged", plan({ skip: true, authorized: true }), {
      confirmed: GONE,
      bypass: OK,
    }, "denied_unconfirmed"],
    [
      "bypass: cannot ask",
      plan({ skip: true, authorized: true }),
      { confirmed: OK, bypass: fail(new Error("503")) },
      "denied_error",
      /cannot check whether you may bypass its protection \(503\)/,
    ],
  ];
  for (const [name, p, readings, outcome, message] of cases) {
    const verdict = foldReview(p, readings);
    assert.equal(verdict.outcome, outcome, name);
    if (message !== undefined) {
      assert.match(verdict.response.status?.message ?? "", message, name);
    }
  }
});

Deno.test("foldReview() carries the refused permission for metrics and logs", () => {
  const verdict = foldReview(plan(), {
    confirmed: OK,
    blockers: fail(FORBIDDEN_LIST),
  });
  assert.deepEqual(verdict.forbidden, {
    verb: "list",
    group: VIRTUAL_MACHINES.group,
    resource: VIRTUAL_MACHINES.resource,
  });
});

Deno.test("foldTeardown() releases Locks in a workspace being deleted and references after the order window", () => {
  const now = Date.parse("2026-01-01T00:10:00Z");
  const markedAgo = (ms: number) => new Date(now - ms);
  const locked = plan({ locked: true });
  const lockedFree = { confirmed: OK, blockers: found(0) } as ReviewReadings;
  const lockedReferenced = {
    confirmed: OK,
    blockers: found(1),
  } as ReviewReadings;
  const fold = (p: ReviewPlan, r: ReviewReadings, deletedAt?: Date) =>
    foldTeardown(p, r, {
      verdict: foldReview(p, r),
      deletedAt,
      now,
      teardownOrderMs: 120_000,
    }).outcome;
  assert.equal(fold(locked, lockedFree), "denied_locked", "not being deleted");
  assert.equal(
    fold(locked, lockedFree, markedAgo(1_000)),
    "allowed_workspace_deleting",
  );
  assert.equal(
    fold(locked, lockedReferenced, markedAgo(1_000)),
    "denied_referenced",
    "references still order the teardown",
  );
  assert.equal(
    fold(locked, lockedReferenced, markedAgo(120_000)),
    "allowed_workspace_deleting",
  );
  assert.equal(
    fold(plan(), lockedReferenced, markedAgo(1_000)),
    "denied_referenced",
  );
  assert.equal(
    fold(plan(), { confirmed: OK, blockers: found(0) }, markedAgo(1_000)),
    "allowed",
    "an allowed review stays allowed",
  );
  assert.equal(asksTeardown(foldReview(locked, lockedFree)), true);
  assert.equal(
    asksTeardown(foldReview(plan(), { confirmed: GONE })),
    false,
  );
});
