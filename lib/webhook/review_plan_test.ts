import assert from "node:assert/strict";
import type { AdmissionRequest } from "./admission_review.ts";
import { type PlanContext, planReads, planReview } from "./review_plan.ts";
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

function locks(
  target: string | undefined,
  operations: ("Delete" | "Update")[] = ["Delete"],
): LockIndex {
  const index = new LockIndex();
  index.replace(
    target === undefined ? [] : [{
      cluster: "consumer1",
      lock: validLock("prod", "default", {
        target: { ...VPCS, name: target },
        reason: "production",
        operations,
      }),
    }],
  );
  return index;
}

function request(
  options: {
    operation?: string;
    annotations?: Record<string, string>;
    oldObject?: unknown;
  } = {},
): AdmissionRequest {
  return {
    uid: "u1",
    kind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
    resource: { ...VPCS },
    name: "vpc-a",
    namespace: "default",
    operation: options.operation ?? "DELETE",
    userInfo: { username: "alice" },
    oldObject: "oldObject" in options ? options.oldObject : {
      metadata: {
        name: "vpc-a",
        namespace: "default",
        uid: "uid-a",
        annotations: { "kcp.io/cluster": "consumer1", ...options.annotations },
      },
    },
  } as AdmissionRequest;
}

function context(overrides: Partial<PlanContext> = {}): PlanContext {
  const rules = registry();
  return {
    loaded: true,
    protectionsOf: (resource) => rules.find(resource),
    authorizedBypass: false,
    ...overrides,
  };
}

/** The outcome of an answer, or a summary of the plan: what it reads. */
function summary(
  req: AdmissionRequest,
  ctx: PlanContext,
): string {
  const step = planReview(req, ctx);
  if ("verdict" in step) return `answer ${step.verdict.outcome}`;
  const { plan } = step;
  const reads = planReads(plan);
  return [
    `plan ${plan.verb}`,
    `holds=${plan.holds.length}`,
    `lists=${reads.lists.length}`,
    `unlocked=${plan.unlocked.kind}`,
    `covered=${plan.covered}`,
    `bypass=${reads.bypass?.username ?? "-"}`,
  ].join(" ");
}

Deno.test("planReview() answers or plans the reads, case by case", () => {
  const skip = { [SKIP]: "true" };
  const cases: [string, AdmissionRequest, PlanContext, string][] = [
    [
      "a CREATE is allowed",
      request({ operation: "CREATE" }),
      context(),
      "answer allowed",
    ],
    [
      "an UPDATE without Locks is allowed",
      request({ operation: "UPDATE" }),
      context(),
      "answer allowed",
    ],
    [
      "not loaded: 503",
      request(),
      context({ loaded: false }),
      "answer denied_not_ready",
    ],
    [
      "no oldObject: 400",
      request({ oldObject: undefined }),
      context(),
      "answer denied_invalid",
    ],
    [
      "annotation, no Locks, annotation mode: allowed at once",
      request({ annotations: skip }),
      context(),
      "answer allowed_skip",
    ],
    [
      "a bad cluster annotation: 400",
      request({ annotations: { "kcp.io/cluster": "../x" } }),
      context(),
      "answer denied_invalid",
    ],
    [
      "a protected VPC: list the VMs",
      request(),
      context(),
      "plan delete holds=0 lists=1 unlocked=references covered=false bypass=-",
    ],
    [
      "another provider's configuration: nothing applies",
      request(),
      context({ provider: "root:other" }),
      "answer allowed",
    ],
    [
      "its provider's configuration: the rule applies",
      request(),
      context({ provider: "root:providers:network" }),
      "plan delete holds=0 lists=1 unlocked=references covered=false bypass=-",
    ],
    [
      "annotation in authorized mode: ask about bypass, list nothing",
      request({ annotations: skip }),
      context({ authorizedBypass: true }),
      "plan delete holds=0 lists=0 unlocked=bypass covered=false bypass=alice",
    ],
    [
      "locked: confirm, and list the references to name them",
      request(),
      context({ locks: locks("vpc-a") }),
      "plan delete holds=1 lists=1 unlocked=references covered=true bypass=-",
    ],
    [
      "locked, annotation: held anyway, references not listed",
      request({ annotations: skip }),
      context({ locks: locks("vpc-a") }),
      "plan delete holds=1 lists=0 unlocked=verdict covered=true bypass=-",
    ],
    [
      "locked, annotation, authorized mode: bypass asked for a teardown",
      request({ annotations: skip }),
      context({ locks: locks("vpc-a"), authorizedBypass: true }),
      "plan delete holds=1 lists=0 unlocked=bypass covered=true bypass=alice",
    ],
    [
      "a free VPC of a type Locks cover: confirmed first",
      request({ annotations: skip }),
      context({ locks: locks("vpc-b") }),
      "plan delete holds=0 lists=0 unlocked=verdict covered=true bypass=-",
    ],
    [
      "no Lock on the type, annotation: allowed",
      request({ annotations: skip }),
      context({ locks: locks(undefined) }),
      "answer allowed_skip",
    ],
    [
      "an UPDATE of a Lock on updates: held, nothing listed",
      request({ operation: "UPDATE" }),
      context({ locks: locks("vpc-a", ["Delete", "Update"]) }),
      "plan update holds=1 lists=0 unlocked=verdict covered=true bypass=-",
    ],
    [
      "an UPDATE of a Lock on deletes only: confirmed, allowed after",
      request({ operation: "UPDATE" }),
      context({ locks: locks("vpc-a") }),
      "plan update holds=0 lists=0 unlocked=verdict covered=true bypass=-",
    ],
  ];
  for (const [name, req, ctx, want] of cases) {
    assert.equal(summary(req, ctx), want, name);
  }
});

Deno.test("planReview() checks the target before any read is planned", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["no uid", {
      name: "vpc-a",
      annotations: { "kcp.io/cluster": "consumer1" },
    }, /no metadata\.uid/],
    ["a name that is no DNS subdomain", {
      name: "a/b",
      uid: "u",
      annotations: { "kcp.io/cluster": "consumer1" },
    }, /not a DNS-1123 subdomain/],
    [
      "no cluster annotation",
      { name: "vpc-a", uid: "u" },
      /no kcp\.io\/cluster annotation/,
    ],
  ];
  for (const [name, metadata, message] of cases) {
    const step = planReview(
      { ...request(), name: "", oldObject: { metadata } } as AdmissionRequest,
      context(),
    );
    assert.ok("verdict" in step, name);
    assert.equal(step.verdict.outcome, "denied_invalid", name);
    assert.match(step.verdict.response.status?.message ?? "", message, name);
  }
});

Deno.test("planReads() asks for bound identities only when a rule knows its export's identity", () => {
  const step = planReview(request(), context());
  assert.ok("plan" in step);
  assert.equal(planReads(step.plan).confirm, true);
  const withIdentity = {
    ...step.plan,
    protections: step.plan.protections.map((p) => ({
      ...p,
      dependentIdentity: "abc",
    })),
  };
  assert.equal(planReads(step.plan).boundIdentities, false);
  assert.equal(planReads(withIdentity).boundIdentities, true);
});
