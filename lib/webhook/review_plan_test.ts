import assert from "node:assert/strict";
import type { ReviewUser } from "./access_review.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import {
  type PlanContext,
  planReads,
  planReview,
  type ReviewPlan,
} from "./review_plan.ts";
import type { ReviewTarget } from "./review_target.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { NOT_INITIALIZED_MESSAGE, type Verdict } from "./verdicts.ts";
import { LockIndex } from "../locks/mod.ts";
import {
  type ClusterRule,
  enforcedRules,
  type GroupVersionResource,
} from "../rules/mod.ts";
import {
  dependency,
  type DependentType,
  SUBNETS,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

const UID = "705ab4f5-6393-11e8-b7cc-42010a800002";
const SKIP = "dependencies.opendefense.cloud/skip-protection";

// ---------------------------------------------------------------------------
// Rules, Locks and requests

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
/** VirtualMachines depend on VPCs of another provider's export via `.spec.altVpcRef.name`. */
const OTHER_PROVIDER_RULE: ClusterRule = {
  cluster: "provider1",
  rule: validRule("other-provider", VIRTUAL_MACHINES, [{
    ...dependency(VPCS, ".spec.altVpcRef.name"),
    apiExportRef: { path: "root:providers:network2", name: VPCS.group },
  }]),
};
/** VPCs refer to VPCs: a SelfDependency, which the controller rejects. */
const PEER_RULE = rule("vpc-peers-vpc", { ...VPCS, kind: "VPC" }, [
  ".spec.peerRef.name",
]);

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

/** The DELETE of the cluster-scoped `vpcs/vpc-a` (no namespace). */
function clusterScopedDeleteRequest(
  overrides: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  const { namespace: _, ...request } = deleteRequest({
    oldObject: vpc("vpc-a"),
    ...overrides,
  });
  return request;
}

/** The DELETE of vpc-a with the skip-protection annotation set to `value`. */
function skipRequest(
  value: unknown = "true",
  overrides: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  return deleteRequest({
    oldObject: vpc("vpc-a", {
      namespace: "default",
      annotations: { "kcp.io/cluster": "consumer1", [SKIP]: value },
    }),
    ...overrides,
  });
}

/** The DELETE of vpc-a whose object's metadata is `metadata`, request.name empty. */
function withMetadata(metadata: Record<string, unknown>): AdmissionRequest {
  return deleteRequest({ name: "", oldObject: { metadata } });
}

/** The DELETE of vpc-a whose object carries `annotations` (none when undefined). */
function annotated(annotations: unknown): AdmissionRequest {
  const oldObject = vpc("vpc-a", { namespace: "default" });
  const metadata = oldObject.metadata as Record<string, unknown>;
  if (annotations === undefined) delete metadata.annotations;
  else metadata.annotations = annotations;
  return deleteRequest({ oldObject });
}

/** The DELETE of the Namespace `team-a` (the API server names it as the request's namespace). */
const NAMESPACE_DELETE: AdmissionRequest = {
  ...deleteRequest(),
  kind: { group: "", version: "v1", kind: "Namespace" },
  resource: { group: "", version: "v1", resource: "namespaces" },
  name: "team-a",
  namespace: "team-a",
  oldObject: {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: "team-a",
      uid: "uid-team-a",
      annotations: { "kcp.io/cluster": "consumer1" },
    },
  },
};

/** One Lock `prod` in `default` of `consumer1` on vpcs/`target`. */
function lockOn(
  target: string,
  operations: ("Delete" | "Update")[] = ["Delete"],
): LockIndex {
  const index = new LockIndex();
  index.replace([{
    cluster: "consumer1",
    lock: validLock("prod", "default", {
      target: { ...VPCS, name: target },
      reason: "production VPC",
      operations,
    }),
  }]);
  return index;
}

/** Loaded, and no Lock at all. */
function noLocks(): LockIndex {
  const index = new LockIndex();
  index.replace([]);
  return index;
}

/** The Lock `home` in `team-a` on the Namespace team-a. */
function namespaceLock(): LockIndex {
  const index = new LockIndex();
  index.replace([{
    cluster: "consumer1",
    lock: validLock("home", "team-a", {
      target: {
        group: "",
        version: "v1",
        resource: "namespaces",
        name: "team-a",
      },
      reason: "tenant home",
    }),
  }]);
  return index;
}

/** What a validator hands {@linkcode planReview}, built from rules as it does. */
interface Setup {
  rules?: readonly ClusterRule[];
  loaded?: boolean;
  locks?: LockIndex;
  provider?: string;
  authorized?: boolean;
}

function context(setup: Setup = {}): PlanContext {
  const registry = new RuleRegistry();
  registry.replace(setup.rules ?? [VM_RULE]);
  return {
    loaded: setup.loaded ?? true,
    protectionsOf: (resource) => registry.find(resource),
    locks: setup.locks,
    provider: setup.provider,
    authorizedBypass: setup.authorized ?? false,
  };
}

// ---------------------------------------------------------------------------
// What a step is expected to be

const ALLOWED: Verdict = {
  response: { uid: UID, allowed: true },
  outcome: "allowed",
};
const ALLOWED_SKIP: Verdict = {
  response: { uid: UID, allowed: true },
  outcome: "allowed_skip",
};
const NOT_READY: Verdict = {
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

/** The exact 400 answer with `message`. */
function invalid(message: string): { verdict: Verdict } {
  return {
    verdict: {
      response: {
        uid: UID,
        allowed: false,
        status: { code: 400, reason: "BadRequest", message },
      },
      outcome: "denied_invalid",
    },
  };
}

/** The plan of a review, in what a test can compare. */
interface PlanView {
  verb: "delete" | "update";
  /** The object, checked. */
  target: ReviewTarget;
  /** The Locks that hold it, `namespace/name`. */
  holds: string[];
  /** The protections whose dependents are listed, `resource fieldPath`. */
  lists: string[];
  /** How the review ends without a Lock: `references`, `bypass`, or the outcome of the answer. */
  unlocked: string;
  /** The user asked about bypass, if any. */
  bypass: ReviewUser | undefined;
  covered: boolean;
}

function view(plan: ReviewPlan): PlanView {
  const reads = planReads(plan);
  assert.equal(reads.confirm, true, "every plan reads the live object");
  return {
    verb: plan.verb,
    target: plan.target,
    holds: plan.holds.map((h) => `${h.namespace}/${h.name}`),
    lists: reads.lists.map((p) => `${p.dependent.resource} ${p.fieldPathText}`),
    unlocked: plan.unlocked.kind === "verdict"
      ? plan.unlocked.verdict.outcome
      : plan.unlocked.kind,
    bypass: reads.bypass,
    covered: plan.covered,
  };
}

/** vpcs/vpc-a in `default` of `consumer1`, as the default request names it. */
const TARGET: ReviewTarget = {
  cluster: "consumer1",
  namespace: "default",
  name: "vpc-a",
  uid: "uid-vpc-a",
  resource: { ...VPCS },
};
const { namespace: _, ...CLUSTER_SCOPED_TARGET } = TARGET;
const VM_LIST = "virtualmachines .spec.vpcRef.name";
const ALICE: ReviewUser = {
  username: "alice",
  groups: ["system:authenticated"],
};

/** A plan: a DELETE of {@linkcode TARGET} held by nothing, unless `view` says otherwise. */
function plans(
  partial: Partial<PlanView> & Pick<PlanView, "unlocked">,
): { plan: PlanView } {
  return {
    plan: {
      verb: "delete",
      target: TARGET,
      holds: [],
      lists: [],
      bypass: undefined,
      covered: false,
      ...partial,
    },
  };
}

/** The references of vpc-a are listed: the usual plan of a protected VPC. */
const LIST_VMS = plans({ lists: [VM_LIST], unlocked: "references" });

interface PlanCase {
  name: string;
  request: AdmissionRequest;
  setup?: Setup;
  /** The exact answer, a 400 whose message matches, or the plan. */
  want: { verdict: Verdict } | { invalid: RegExp } | { plan: PlanView };
}

const CASES: PlanCase[] = [
  // Operations other than DELETE, and UPDATE without Locks.
  ...(["CREATE", "UPDATE", "CONNECT"] as const).flatMap((operation) =>
    [true, false].map((loaded): PlanCase => ({
      name: `${operation} is allowed without a read, rules ${
        loaded ? "loaded" : "not loaded"
      }`,
      request: deleteRequest({ operation }),
      setup: { loaded },
      want: { verdict: ALLOWED },
    }))
  ),
  // Not loaded.
  {
    name: "not loaded: 503 with the exact message",
    request: deleteRequest(),
    setup: { loaded: false },
    want: { verdict: NOT_READY },
  },
  {
    name: "not loaded: 503 before the object is looked at",
    request: deleteRequest({ oldObject: undefined, object: undefined }),
    setup: { loaded: false },
    want: { verdict: NOT_READY },
  },
  // The object under review.
  ...[
    { oldObject: undefined, object: undefined },
    { oldObject: null, object: null },
    { oldObject: [vpc("vpc-a")], object: "vpc-a" },
  ].map((overrides): PlanCase => ({
    name: `no oldObject nor object (${JSON.stringify(overrides)}): 400`,
    request: deleteRequest(overrides),
    want: invalid(
      "cannot read the object being deleted: the review carries no oldObject",
    ),
  })),
  {
    name: "no oldObject: the object is read instead, in its own cluster",
    request: deleteRequest({
      oldObject: null,
      object: vpc("vpc-a", {
        namespace: "default",
        annotations: { "kcp.io/cluster": "consumer2" },
      }),
    }),
    want: plans({
      target: { ...TARGET, cluster: "consumer2" },
      lists: [VM_LIST],
      unlocked: "references",
    }),
  },
  // The skip-protection annotation, without Locks.
  {
    name:
      'annotation exactly "true", no Locks, annotation mode: allowed at once',
    request: skipRequest(),
    want: { verdict: ALLOWED_SKIP },
  },
  {
    name: "annotation without a kcp.io/cluster annotation: allowed at once",
    request: deleteRequest({
      oldObject: vpc("vpc-a", {
        namespace: "default",
        annotations: { [SKIP]: "true" },
      }),
    }),
    want: { verdict: ALLOWED_SKIP },
  },
  ...["True", "TRUE", "yes", "1", "", " true", true].map((value): PlanCase => ({
    name: `annotation value ${JSON.stringify(value)}: protected as without it`,
    request: skipRequest(value),
    want: LIST_VMS,
  })),
  // The workspace, the name, the namespace and the uid: checked, or 400.
  ...([
    ["no kcp.io/cluster annotation", { other: "x" }],
    ["an empty kcp.io/cluster annotation", { "kcp.io/cluster": "" }],
    ["a non-string kcp.io/cluster annotation", { "kcp.io/cluster": 7 }],
    ["no annotations at all", undefined],
  ] as const).map(([label, annotations]): PlanCase => ({
    name: `${label}: 400 naming the annotation`,
    request: annotated(annotations),
    want: invalid(
      "cannot tell the workspace of the object being deleted: it has no kcp.io/cluster annotation",
    ),
  })),
  {
    name: "a kcp.io/cluster annotation that is a path: 400",
    request: annotated({
      "kcp.io/cluster":
        "root/api/v1/namespaces/kube-system/secrets?labelSelector=x#",
    }),
    want: {
      invalid:
        /its kcp\.io\/cluster annotation is not a logical cluster name: current value is "root\/api/,
    },
  },
  {
    name: "a kcp.io/cluster annotation that is a workspace path: 400",
    request: annotated({ "kcp.io/cluster": "root:org" }),
    want: { invalid: /not a logical cluster name/ },
  },
  {
    name: "a bad cluster annotation: 400",
    request: annotated({ "kcp.io/cluster": "../x" }),
    want: { invalid: /not a logical cluster name/ },
  },
  {
    name: "neither request.name nor metadata.name: 400",
    request: deleteRequest({
      name: "",
      oldObject: vpc("", { namespace: "default" }),
    }),
    want: invalid("cannot tell the name of the object being deleted"),
  },
  {
    name: "a name with a slash: 400",
    request: deleteRequest({
      name: "",
      oldObject: vpc("../../secrets", { namespace: "default" }),
    }),
    want: {
      invalid: /not a DNS-1123 subdomain: current value is "..\/..\/secrets"/,
    },
  },
  {
    name: "a namespace with a query: 400",
    request: deleteRequest({ namespace: "default?watch=true" }),
    want: {
      invalid: /not a DNS-1123 label: current value is "default\?watch=true"/,
    },
  },
  {
    name: "a request.name other than the object's name: 400",
    request: deleteRequest({ name: "vpc-b" }),
    want: {
      invalid: /the review names "vpc-b" but carries the object "vpc-a"/,
    },
  },
  {
    name: "an object without a uid: 400",
    request: deleteRequest({
      oldObject: {
        metadata: {
          name: "vpc-a",
          namespace: "default",
          annotations: { "kcp.io/cluster": "consumer1" },
        },
      },
    }),
    want: { invalid: /it has no metadata\.uid/ },
  },
  {
    name: "no uid and no request.name: 400",
    request: withMetadata({
      name: "vpc-a",
      annotations: { "kcp.io/cluster": "consumer1" },
    }),
    want: { invalid: /no metadata\.uid/ },
  },
  // The target the reads are about.
  {
    name: "a DELETECOLLECTION item: the name from oldObject.metadata.name",
    request: deleteRequest({ name: "" }),
    want: LIST_VMS,
  },
  {
    name: "the consumer's cluster and the request's namespace",
    request: deleteRequest({
      namespace: "team-a",
      oldObject: vpc("vpc-a", {
        namespace: "team-a",
        annotations: { "kcp.io/cluster": "2x5jd0ws3r7t" },
      }),
    }),
    want: plans({
      target: { ...TARGET, cluster: "2x5jd0ws3r7t", namespace: "team-a" },
      lists: [VM_LIST],
      unlocked: "references",
    }),
  },
  {
    name: "a cluster-scoped target: no namespace",
    request: clusterScopedDeleteRequest(),
    want: plans({
      target: CLUSTER_SCOPED_TARGET,
      lists: [VM_LIST],
      unlocked: "references",
    }),
  },
  {
    name: 'a cluster-scoped target with namespace "": no namespace',
    request: { ...clusterScopedDeleteRequest(), namespace: "" },
    want: plans({
      target: CLUSTER_SCOPED_TARGET,
      lists: [VM_LIST],
      unlocked: "references",
    }),
  },
  // Which rules apply.
  {
    name: "a protected VPC: list the VMs",
    request: deleteRequest(),
    want: LIST_VMS,
  },
  {
    name: "no rule at all: allowed without a read",
    request: deleteRequest(),
    setup: { rules: [] },
    want: { verdict: ALLOWED },
  },
  {
    name: "a rule about another type only: allowed without a read",
    request: deleteRequest(),
    setup: {
      rules: [
        rule("vm-needs-subnet", VIRTUAL_MACHINES, [
          ".spec.subnetRef.name",
        ], SUBNETS),
      ],
    },
    want: { verdict: ALLOWED },
  },
  {
    name: "another version of the protected type: allowed without a read",
    request: deleteRequest({ resource: { ...VPCS, version: "v1beta1" } }),
    want: { verdict: ALLOWED },
  },
  {
    name:
      "self-dependent rules dropped as webhook.ts loads them: never list the type itself",
    request: deleteRequest(),
    setup: { rules: enforcedRules([PEER_RULE, VM_RULE]) },
    want: LIST_VMS,
  },
  {
    name:
      "self-dependent rules dropped, cluster-scoped: never list the type itself",
    request: clusterScopedDeleteRequest(),
    setup: { rules: enforcedRules([PEER_RULE, VM_RULE]) },
    want: plans({
      target: CLUSTER_SCOPED_TARGET,
      lists: [VM_LIST],
      unlocked: "references",
    }),
  },
  {
    name: "two rules through the same field path: one protection",
    request: deleteRequest(),
    setup: {
      rules: [
        VM_RULE,
        rule("vm-needs-vpc-too", VIRTUAL_MACHINES, ["spec.vpcRef.name"]),
      ],
    },
    want: LIST_VMS,
  },
  // The provider whose configuration kcp called.
  {
    name: "no provider: every rule about the type applies",
    request: deleteRequest(),
    setup: { rules: [VM_RULE, OTHER_PROVIDER_RULE] },
    want: plans({
      lists: ["virtualmachines .spec.altVpcRef.name", VM_LIST],
      unlocked: "references",
    }),
  },
  {
    name: "its provider's configuration: the rule applies",
    request: deleteRequest(),
    setup: { provider: "root:providers:network" },
    want: LIST_VMS,
  },
  {
    name: "the first provider's configuration: only its rule applies",
    request: deleteRequest(),
    setup: {
      rules: [VM_RULE, OTHER_PROVIDER_RULE],
      provider: "root:providers:network",
    },
    want: LIST_VMS,
  },
  {
    name: "the second provider's configuration: only its rule applies",
    request: deleteRequest(),
    setup: {
      rules: [VM_RULE, OTHER_PROVIDER_RULE],
      provider: "root:providers:network2",
    },
    want: plans({
      lists: ["virtualmachines .spec.altVpcRef.name"],
      unlocked: "references",
    }),
  },
  {
    name: "another provider's configuration: nothing applies",
    request: deleteRequest(),
    setup: { provider: "root:other" },
    want: { verdict: ALLOWED },
  },
  {
    name: "a provider no rule is about: allowed without a read",
    request: deleteRequest(),
    setup: {
      rules: [VM_RULE, OTHER_PROVIDER_RULE],
      provider: "root:elsewhere",
    },
    want: { verdict: ALLOWED },
  },
  // The annotation in authorized mode.
  {
    name:
      "annotation in authorized mode: ask about bypass in the consumer's cluster, list nothing",
    request: skipRequest(),
    setup: { authorized: true },
    want: plans({ unlocked: "bypass", bypass: ALICE }),
  },
  {
    name:
      "annotation in authorized mode, a type no rule protects: allowed, nothing asked",
    request: skipRequest("true", { resource: { ...SUBNETS } }),
    setup: { authorized: true },
    want: { verdict: ALLOWED },
  },
  // Locks.
  {
    name: "locked, no rule: confirm, list nothing",
    request: deleteRequest(),
    setup: { rules: [], locks: lockOn("vpc-a") },
    want: plans({
      holds: ["default/prod"],
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name: "locked: confirm, and list the references to name them",
    request: deleteRequest(),
    setup: { locks: lockOn("vpc-a") },
    want: plans({
      holds: ["default/prod"],
      lists: [VM_LIST],
      unlocked: "references",
      covered: true,
    }),
  },
  {
    name: "locked, annotation: held anyway, references not listed",
    request: skipRequest(),
    setup: { locks: lockOn("vpc-a") },
    want: plans({
      holds: ["default/prod"],
      unlocked: "allowed_skip",
      covered: true,
    }),
  },
  {
    name: "locked, annotation, authorized mode: bypass asked for a teardown",
    request: skipRequest(),
    setup: { locks: lockOn("vpc-a"), authorized: true },
    want: plans({
      holds: ["default/prod"],
      unlocked: "bypass",
      bypass: ALICE,
      covered: true,
    }),
  },
  {
    name: "a free VPC of a type Locks cover, no annotation: confirmed first",
    request: deleteRequest(),
    setup: { rules: [], locks: lockOn("other") },
    want: plans({ unlocked: "allowed", covered: true }),
  },
  {
    name: "a free VPC of a type Locks cover: confirmed first",
    request: skipRequest(),
    setup: { locks: lockOn("vpc-b") },
    want: plans({ unlocked: "allowed_skip", covered: true }),
  },
  {
    name: "another object than the locked one: confirmed, held by nothing",
    request: deleteRequest({
      name: "vpc-b",
      oldObject: vpc("vpc-b", { namespace: "default" }),
    }),
    setup: { rules: [], locks: lockOn("vpc-a") },
    want: plans({
      target: { ...TARGET, name: "vpc-b", uid: "uid-vpc-b" },
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name: "the same object in another workspace: allowed without a read",
    request: deleteRequest({
      oldObject: vpc("vpc-a", {
        namespace: "default",
        annotations: { "kcp.io/cluster": "consumer2" },
      }),
    }),
    setup: { rules: [], locks: lockOn("vpc-a") },
    want: { verdict: ALLOWED },
  },
  {
    name: "no Lock on the type, annotation: allowed",
    request: skipRequest(),
    setup: { locks: noLocks() },
    want: { verdict: ALLOWED_SKIP },
  },
  {
    name: "a locked Namespace: the cluster-scoped object it is",
    request: NAMESPACE_DELETE,
    setup: { rules: [], locks: namespaceLock() },
    want: plans({
      target: {
        cluster: "consumer1",
        name: "team-a",
        uid: "uid-team-a",
        resource: { group: "", version: "v1", resource: "namespaces" },
      },
      holds: ["team-a/home"],
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name: "an UPDATE of a Lock on updates: held, nothing listed",
    request: deleteRequest({ operation: "UPDATE" }),
    setup: { locks: lockOn("vpc-a", ["Delete", "Update"]) },
    want: plans({
      verb: "update",
      holds: ["default/prod"],
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name: "an UPDATE of a Lock on deletes only: confirmed, allowed after",
    request: deleteRequest({ operation: "UPDATE" }),
    setup: { locks: lockOn("vpc-a") },
    want: plans({ verb: "update", unlocked: "allowed", covered: true }),
  },
];

Deno.test("planReview() answers or plans the reads, case by case", async (t) => {
  assert.equal(
    NOT_INITIALIZED_MESSAGE,
    "dependency webhook not yet initialized, retry later",
  );
  for (const c of CASES) {
    await t.step(c.name, () => {
      const step = planReview(c.request, context(c.setup));
      if ("plan" in c.want) {
        assert.ok("plan" in step, "a plan");
        assert.deepEqual(view(step.plan), c.want.plan);
        return;
      }
      assert.ok("verdict" in step, "an answer without a read");
      if ("verdict" in c.want) {
        assert.deepEqual(step.verdict, c.want.verdict);
        return;
      }
      assert.equal(step.verdict.outcome, "denied_invalid");
      assert.equal(step.verdict.response.status?.code, 400);
      assert.equal(step.verdict.response.status?.reason, "BadRequest");
      assert.match(step.verdict.response.status?.message ?? "", c.want.invalid);
    });
  }
});

Deno.test("planReview() plans a dry-run DELETE exactly like a real one", () => {
  const real = planReview(deleteRequest({ dryRun: false }), context());
  const dry = planReview(deleteRequest({ dryRun: true }), context());
  assert.ok("plan" in real);
  assert.deepEqual(dry, real);
});

Deno.test("planReads() asks for bound identities only when a rule knows its export's identity", () => {
  const step = planReview(deleteRequest(), context());
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
