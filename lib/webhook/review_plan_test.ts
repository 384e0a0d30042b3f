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
import type { Protection } from "./rule_registry.ts";
import { NOT_INITIALIZED_MESSAGE, type Verdict } from "./verdicts.ts";
import { type ClusterRule, enforcedRules } from "../rules/mod.ts";
import {
  allowedVerdict,
  clusterScopedDeleteRequest,
  deleteRequest,
  deniedVerdict,
  dependentRule,
  expiringVpcLock,
  LABEL_OWNER_RULE,
  NAMESPACE_OWNER_RULE,
  namespaceDeleteRequest,
  namespaceLock,
  noLocks,
  NOT_READY_VERDICT,
  OTHER_PROVIDER_RULE,
  OWNER_LABEL_PATH,
  PLAN_NOW,
  planContext,
  type PlanSetup,
  registryOf,
  SKIP_ANNOTATION,
  SUBNETS,
  VIRTUAL_MACHINES,
  VM_RULE,
  vpc,
  VPC_TYPE,
  vpcLock,
  VPCS,
} from "../../testing/fakes.ts";

// ---------------------------------------------------------------------------
// Rules and requests

/** VPCs refer to VPCs: a SelfDependency, which the controller rejects. */
const PEER_RULE = dependentRule("vpc-peers-vpc", VPC_TYPE, [
  ".spec.peerRef.name",
]);

/** The DELETE of vpc-a with the skip-protection annotation set to `value`. */
function skipRequest(
  value: unknown = "true",
  overrides: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  return deleteRequest({
    oldObject: vpc("vpc-a", { namespace: "default", skip: value }),
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

/** What a validator hands {@linkcode planReview}, built from rules as it does. */
interface Setup extends PlanSetup {
  /**
   * The protections of every type, in place of the rules': a Namespace
   * cannot be a rule's protected type, yet a plan must read one right.
   */
  protections?: readonly Protection[];
}

function context(setup: Setup = {}): PlanContext {
  const { protections } = setup;
  const built = planContext(setup);
  return protections === undefined
    ? built
    : { ...built, protectionsOf: () => protections };
}

// ---------------------------------------------------------------------------
// What a step is expected to be

const ALLOWED = allowedVerdict();
const ALLOWED_SKIP = allowedVerdict("allowed_skip");
const NOT_READY = NOT_READY_VERDICT;

/** The exact 400 answer with `message`. */
function invalid(message: string): { verdict: Verdict } {
  return {
    verdict: deniedVerdict(400, "BadRequest", message, "denied_invalid"),
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
  /** The protections whose owners the object names, `resource from fieldPath`. */
  owners: string[];
  /** The protections whose owners its Namespace names, `resource from fieldPath`. */
  namespaceOwners: string[];
  /** Whether the workspace's bindings are read. */
  bound: boolean;
  /** How the review ends without a Lock: `references`, `bypass`, or the outcome of the answer. */
  unlocked: string;
  /** The user asked about bypass, if any. */
  bypass: ReviewUser | undefined;
  covered: boolean;
}

function view(plan: ReviewPlan): PlanView {
  const reads = planReads(plan);
  assert.equal(reads.confirm, true, "every plan reads the live object");
  const owner = (p: Protection) =>
    `${p.dependent.resource} ${p.from} ${p.fieldPathText}`;
  return {
    verb: plan.verb,
    target: plan.target,
    holds: plan.holds.map((h) => `${h.namespace}/${h.name}`),
    lists: reads.lists.map((p) => `${p.dependent.resource} ${p.fieldPathText}`),
    owners: reads.owners.map(owner),
    namespaceOwners: reads.namespaceOwners.map(owner),
    bound: reads.boundIdentities,
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
/** The Namespace team-a: the cluster-scoped object it is. */
const NAMESPACE_TARGET: ReviewTarget = {
  cluster: "consumer1",
  name: "team-a",
  uid: "uid-team-a",
  resource: { group: "", version: "v1", resource: "namespaces" },
};
const VM_LIST = "virtualmachines .spec.vpcRef.name";
const TARGET_OWNER = `networks Target ${OWNER_LABEL_PATH}`;
const NAMESPACE_OWNER = `networks TargetNamespace ${OWNER_LABEL_PATH}`;
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
      owners: [],
      namespaceOwners: [],
      bound: false,
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
        cluster: "consumer2",
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
        annotations: { [SKIP_ANNOTATION]: "true" },
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
        cluster: "2x5jd0ws3r7t",
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
        dependentRule("vm-needs-subnet", VIRTUAL_MACHINES, [
          ".spec.subnetRef.name",
        ], { target: SUBNETS }),
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
        dependentRule("vm-needs-vpc-too", VIRTUAL_MACHINES, [
          "spec.vpcRef.name",
        ]),
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
    name: "a Lock before its expiresAt: held",
    request: deleteRequest(),
    setup: { rules: [], locks: expiringVpcLock("2026-01-01T00:00:10Z") },
    want: plans({
      holds: ["default/window"],
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name:
      "a Lock past its expiresAt, within the skew allowance: held (a clock ahead never lets go early)",
    request: deleteRequest(),
    setup: {
      rules: [],
      locks: expiringVpcLock("2026-01-01T00:00:00Z"),
      now: PLAN_NOW + 4_999,
    },
    want: plans({
      holds: ["default/window"],
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name:
      "a Lock past its expiresAt and the allowance: holds nothing, the type still confirmed first",
    request: deleteRequest(),
    setup: {
      rules: [],
      locks: expiringVpcLock("2026-01-01T00:00:00Z"),
      now: PLAN_NOW + 5_000,
    },
    want: plans({ holds: [], unlocked: "allowed", covered: true }),
  },
  {
    name: "locked, no rule: confirm, list nothing",
    request: deleteRequest(),
    setup: { rules: [], locks: vpcLock("vpc-a") },
    want: plans({
      holds: ["default/prod"],
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name: "locked: confirm, and list the references to name them",
    request: deleteRequest(),
    setup: { locks: vpcLock("vpc-a") },
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
    setup: { locks: vpcLock("vpc-a") },
    want: plans({
      holds: ["default/prod"],
      unlocked: "allowed_skip",
      covered: true,
    }),
  },
  {
    name: "locked, annotation, authorized mode: bypass asked for a teardown",
    request: skipRequest(),
    setup: { locks: vpcLock("vpc-a"), authorized: true },
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
    setup: { rules: [], locks: vpcLock("other") },
    want: plans({ unlocked: "allowed", covered: true }),
  },
  {
    name: "a free VPC of a type Locks cover: confirmed first",
    request: skipRequest(),
    setup: { locks: vpcLock("vpc-b") },
    want: plans({ unlocked: "allowed_skip", covered: true }),
  },
  {
    name: "another object than the locked one: confirmed, held by nothing",
    request: deleteRequest({
      name: "vpc-b",
      oldObject: vpc("vpc-b", { namespace: "default" }),
    }),
    setup: { rules: [], locks: vpcLock("vpc-a") },
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
        cluster: "consumer2",
      }),
    }),
    setup: { rules: [], locks: vpcLock("vpc-a") },
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
    request: namespaceDeleteRequest(),
    setup: { rules: [], locks: namespaceLock() },
    want: plans({
      target: NAMESPACE_TARGET,
      holds: ["team-a/home"],
      unlocked: "allowed",
      covered: true,
    }),
  },
  {
    name: "an UPDATE of a Lock on updates: held, nothing listed",
    request: deleteRequest({ operation: "UPDATE" }),
    setup: { locks: vpcLock("vpc-a", ["Delete", "Update"]) },
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
    setup: { locks: vpcLock("vpc-a") },
    want: plans({ verb: "update", unlocked: "allowed", covered: true }),
  },
  // Owner rules: where each reads the reference.
  {
    name: "from Target: the owners the object names looked up, nothing listed",
    request: deleteRequest(),
    setup: { rules: [LABEL_OWNER_RULE] },
    want: plans({ owners: [TARGET_OWNER], unlocked: "references" }),
  },
  {
    name: "from Target, a cluster-scoped object: its owners looked up",
    request: clusterScopedDeleteRequest(),
    setup: { rules: [LABEL_OWNER_RULE] },
    want: plans({
      target: CLUSTER_SCOPED_TARGET,
      owners: [TARGET_OWNER],
      unlocked: "references",
    }),
  },
  {
    name: "from TargetNamespace, a namespaced object: its Namespace read",
    request: deleteRequest(),
    setup: { rules: [NAMESPACE_OWNER_RULE] },
    want: plans({ namespaceOwners: [NAMESPACE_OWNER], unlocked: "references" }),
  },
  {
    name:
      "from TargetNamespace, a cluster-scoped object that is no Namespace: nothing to read",
    request: clusterScopedDeleteRequest(),
    setup: { rules: [NAMESPACE_OWNER_RULE] },
    want: plans({ target: CLUSTER_SCOPED_TARGET, unlocked: "references" }),
  },
  {
    name:
      "from TargetNamespace, a Namespace: read on the Namespace itself, beside Target",
    request: namespaceDeleteRequest(),
    setup: {
      protections: registryOf(LABEL_OWNER_RULE, NAMESPACE_OWNER_RULE).find(
        VPCS,
      ),
    },
    want: plans({
      target: NAMESPACE_TARGET,
      owners: [TARGET_OWNER, NAMESPACE_OWNER],
      unlocked: "references",
    }),
  },
  {
    name: "a rule of each source: each read its own way",
    request: deleteRequest(),
    setup: { rules: [VM_RULE, LABEL_OWNER_RULE, NAMESPACE_OWNER_RULE] },
    want: plans({
      lists: [VM_LIST],
      owners: [TARGET_OWNER],
      namespaceOwners: [NAMESPACE_OWNER],
      unlocked: "references",
    }),
  },
  // Which export a rule's dependent comes from.
  ...([
    ["a dependent rule", VM_RULE, { lists: [VM_LIST] }],
    ["an owner rule from Target", LABEL_OWNER_RULE, { owners: [TARGET_OWNER] }],
    ["an owner rule from TargetNamespace", NAMESPACE_OWNER_RULE, {
      namespaceOwners: [NAMESPACE_OWNER],
    }],
  ] as [string, ClusterRule, Partial<PlanView>][]).map((
    [label, rule, reads],
  ): PlanCase => ({
    name: `${label} with its export's identity: the bindings read`,
    request: deleteRequest(),
    setup: {
      rules: [rule],
      identities: new Map([[`provider1/${rule.rule.metadata.name}`, "real"]]),
    },
    want: plans({ ...reads, bound: true, unlocked: "references" }),
  })),
  {
    name:
      "a dependent rule with its identity beside an owner rule without: the bindings read",
    request: deleteRequest(),
    setup: {
      rules: [VM_RULE, LABEL_OWNER_RULE],
      identities: new Map([["provider1/vm-needs-vpc", "real"]]),
    },
    want: plans({
      lists: [VM_LIST],
      owners: [TARGET_OWNER],
      bound: true,
      unlocked: "references",
    }),
  },
  // Owner rules, the annotation and Locks: as for dependent rules.
  {
    name: "owner rule, annotation, no Locks, annotation mode: allowed at once",
    request: skipRequest(),
    setup: { rules: [LABEL_OWNER_RULE, NAMESPACE_OWNER_RULE] },
    want: { verdict: ALLOWED_SKIP },
  },
  {
    name: "owner rule, annotation in authorized mode: bypass asked, no owner",
    request: skipRequest(),
    setup: {
      rules: [LABEL_OWNER_RULE, NAMESPACE_OWNER_RULE],
      authorized: true,
    },
    want: plans({ unlocked: "bypass", bypass: ALICE }),
  },
  {
    name: "owner rule, no Lock on the type, annotation: allowed",
    request: skipRequest(),
    setup: { rules: [LABEL_OWNER_RULE], locks: noLocks() },
    want: { verdict: ALLOWED_SKIP },
  },
  {
    name: "owner rule, locked: confirm, and look up the owners for a teardown",
    request: deleteRequest(),
    setup: {
      rules: [LABEL_OWNER_RULE, NAMESPACE_OWNER_RULE],
      locks: vpcLock("vpc-a"),
    },
    want: plans({
      holds: ["default/prod"],
      owners: [TARGET_OWNER],
      namespaceOwners: [NAMESPACE_OWNER],
      unlocked: "references",
      covered: true,
    }),
  },
  {
    name: "owner rule, locked, annotation: held anyway, no owner looked up",
    request: skipRequest(),
    setup: { rules: [LABEL_OWNER_RULE], locks: vpcLock("vpc-a") },
    want: plans({
      holds: ["default/prod"],
      unlocked: "allowed_skip",
      covered: true,
    }),
  },
  {
    name:
      "owner rule, a free VPC of a type Locks cover, annotation: confirmed first, no owner",
    request: skipRequest(),
    setup: { rules: [LABEL_OWNER_RULE], locks: vpcLock("vpc-b") },
    want: plans({ unlocked: "allowed_skip", covered: true }),
  },
  {
    name: "owner rule, an UPDATE of a Lock on deletes only: no owner looked up",
    request: deleteRequest({ operation: "UPDATE" }),
    setup: { rules: [LABEL_OWNER_RULE], locks: vpcLock("vpc-a") },
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
