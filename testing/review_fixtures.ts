/**
 * Fixtures of the webhook's review tests: the DELETE reviews they send (of
 * vpcs/vpc-a, a Subnet or a Namespace, as the API server stores each), the
 * rules they load (a dependent names the protected object; the protected
 * object names its owner), the Locks, the plans built from all of these as
 * the validator builds them, the dependents and owners a fake source
 * answers, the blockers and verdicts the tests expect, and a fake bypass
 * authorizer. Only for `*_test.ts` files.
 *
 * ```ts
 * import { deleteRequest, planOf, VM_RULE } from "./mod.ts";
 *
 * const plan = planOf(deleteRequest(), { rules: [VM_RULE] });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type ClusterRule,
  type Dependency,
  type GroupVersionResource,
  parseDependencyRule,
} from "../lib/rules/mod.ts";
import { LockIndex } from "../lib/locks/mod.ts";
import { statusCause } from "../lib/causes/mod.ts";
import {
  type AdmissionRequest,
  type Blocker,
  type BypassAuthorizer,
  type BypassQuery,
  type Outcome,
  type PlanContext,
  planReview,
  type ReviewPlan,
  RuleRegistry,
  type Verdict,
} from "../lib/webhook/mod.ts";
import {
  dependency,
  type DependentType,
  LOAD_BALANCERS,
  SUBNETS,
  validLock,
  VIRTUAL_MACHINES,
  VPCS,
} from "./rule_fixtures.ts";

// ---------------------------------------------------------------------------
// Types and names

/** The uid of every review these fixtures build. */
export const REVIEW_UID = "705ab4f5-6393-11e8-b7cc-42010a800002";

/** The annotation that lets a delete through (literally, not the library's constant). */
export const SKIP_ANNOTATION = "dependencies.opendefense.cloud/skip-protection";

/** VPCs with their kind: the type most reviews are about. */
export const VPC_TYPE: DependentType = { ...VPCS, kind: "VPC" };

/** Subnets with their kind. */
export const SUBNET_TYPE: DependentType = { ...SUBNETS, kind: "Subnet" };

/** Core Namespaces with their kind. */
export const NAMESPACE_TYPE: DependentType = {
  group: "",
  version: "v1",
  resource: "namespaces",
  kind: "Namespace",
};

/** Networks: the owner type (the rule's dependent) of {@linkcode networkOwnerRule}. */
export const NETWORKS: DependentType = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "networks",
  kind: "Network",
};

/** The label a protected object (or its Namespace) names its Network by. */
export const OWNER_LABEL = "network.example.com/owner";

/** The path of {@linkcode OWNER_LABEL}, as an owner rule's `fieldRef.path`. */
export const OWNER_LABEL_PATH = `.metadata.labels["${OWNER_LABEL}"]`;

/** The path over `metadata.ownerReferences`, as an owner rule's `fieldRef.path`. */
export const OWNER_REFS_PATH = ".metadata.ownerReferences[*].name";

// ---------------------------------------------------------------------------
// Objects and reviews

/** How {@linkcode storedObject} builds an object. */
export interface StoredOptions {
  /** Its namespace; absent: cluster-scoped. */
  namespace?: string;
  /** Its logical cluster (the `kcp.io/cluster` annotation). @default {"consumer1"} */
  cluster?: string;
  /** The value of the skip-protection annotation; absent: no such annotation. */
  skip?: unknown;
  /** Its annotations whole, in place of those `cluster` and `skip` make. */
  annotations?: Record<string, unknown>;
  /** More of its metadata (labels, ownerReferences, ...), over the rest. */
  metadata?: Record<string, unknown>;
}

/**
 * An object `name` of `type` as the API server stores it (and a review
 * carries it): uid `uid-<name>`, in logical cluster `consumer1` unless
 * `options` say otherwise.
 */
export function storedObject(
  type: DependentType,
  name: string,
  options: StoredOptions = {},
): Record<string, unknown> {
  const annotations = options.annotations ?? {
    "kcp.io/cluster": options.cluster ?? "consumer1",
    ...(options.skip === undefined ? {} : { [SKIP_ANNOTATION]: options.skip }),
  };
  return {
    apiVersion: type.group === ""
      ? type.version
      : `${type.group}/${type.version}`,
    kind: type.kind,
    metadata: {
      name,
      ...(options.namespace === undefined
        ? {}
        : { namespace: options.namespace }),
      uid: `uid-${name}`,
      annotations,
      ...options.metadata,
    },
  };
}

/** A VPC as the API server stores it: {@linkcode storedObject} of VPCs. */
export function vpc(
  name: string,
  options: StoredOptions = {},
): Record<string, unknown> {
  return storedObject(VPC_TYPE, name, options);
}

/**
 * The admission request of the DELETE of `name` of `type` by alice, in
 * `options.namespace` (absent: cluster-scoped), carrying the object as
 * {@linkcode storedObject} builds it with `options`.
 */
export function deleteReview(
  type: DependentType,
  name: string,
  options: StoredOptions = {},
): AdmissionRequest {
  return {
    uid: REVIEW_UID,
    kind: { group: type.group, version: type.version, kind: type.kind },
    resource: {
      group: type.group,
      version: type.version,
      resource: type.resource,
    },
    name,
    ...(options.namespace === undefined
      ? {}
      : { namespace: options.namespace }),
    operation: "DELETE",
    userInfo: { username: "alice", groups: ["system:authenticated"] },
    oldObject: storedObject(type, name, options),
    dryRun: false,
    options: { kind: "DeleteOptions", apiVersion: "meta.k8s.io/v1" },
  };
}

/** The DELETE of `vpcs/vpc-a` in namespace `default` of `consumer1`, with `overrides`. */
export function deleteRequest(
  overrides: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  return {
    ...deleteReview(VPC_TYPE, "vpc-a", { namespace: "default" }),
    ...overrides,
  };
}

/** The DELETE of the cluster-scoped `vpcs/vpc-a` (no namespace), with `overrides`. */
export function clusterScopedDeleteRequest(
  overrides: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  return { ...deleteReview(VPC_TYPE, "vpc-a"), ...overrides };
}

/**
 * The DELETE of the Namespace `team-a`: cluster-scoped, though the API
 * server names it as the request's namespace too.
 */
export function namespaceDeleteRequest(): AdmissionRequest {
  return { ...deleteReview(NAMESPACE_TYPE, "team-a"), namespace: "team-a" };
}

/**
 * A dependent of `type` whose `.spec.vpcRef.name` is `vpcName`, in
 * `namespace` (`null`: cluster-scoped).
 */
function referring(
  type: DependentType,
  name: string,
  vpcName: unknown,
  namespace: string | null,
): Record<string, unknown> {
  return {
    apiVersion: `${type.group}/${type.version}`,
    kind: type.kind,
    metadata: { name, ...(namespace === null ? {} : { namespace }) },
    spec: { vpcRef: { name: vpcName } },
  };
}

/** A VirtualMachine whose `.spec.vpcRef.name` is `vpcName`, in `namespace` (`null`: cluster-scoped). */
export function vm(
  name: string,
  vpcName: unknown,
  namespace: string | null = "default",
): Record<string, unknown> {
  return referring(VIRTUAL_MACHINES, name, vpcName, namespace);
}

/** A LoadBalancer whose `.spec.vpcRef.name` is `vpcName`, in `namespace` (`null`: cluster-scoped). */
export function lb(
  name: string,
  vpcName: unknown,
  namespace: string | null = "default",
): Record<string, unknown> {
  return referring(LOAD_BALANCERS, name, vpcName, namespace);
}

/** `vm-01` ... `vm-12`. */
export const TWELVE_VMS: readonly string[] = Array.from(
  { length: 12 },
  (_, i) => `vm-${String(i + 1).padStart(2, "0")}`,
);

/** How {@linkcode network} builds a Network. */
export interface NetworkFixtureOptions {
  /** Its uid. @default {`uid-<name>`} */
  uid?: string;
  /** It is being deleted (it has a `deletionTimestamp`). */
  deleting?: boolean;
  /** Its `spec.deletionProtection`; absent: no such field. */
  protection?: unknown;
  /** Its namespace; absent: none in its metadata. */
  namespace?: string;
}

/** A Network (an owner) as kcp answers it. */
export function network(
  name: string,
  options: NetworkFixtureOptions = {},
): Record<string, unknown> {
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: "Network",
    metadata: {
      name,
      uid: options.uid ?? `uid-${name}`,
      ...(options.namespace === undefined
        ? {}
        : { namespace: options.namespace }),
      ...(options.deleting
        ? { deletionTimestamp: "2026-11-26T07:00:00Z" }
        : {}),
    },
    spec: options.protection === undefined
      ? {}
      : { deletionProtection: options.protection },
  };
}

/** An ownerReference to the Network `name` (of `options.kind`, with `options.uid`). */
export function ownerRef(
  name: string,
  options: { kind?: string; uid?: string } = {},
): Record<string, unknown> {
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: options.kind ?? "Network",
    name,
    uid: options.uid ?? `uid-${name}`,
  };
}

// ---------------------------------------------------------------------------
// Rules and Locks

/** What a rule says beside its dependencies. */
export interface RuleSpecOptions {
  /** `spec.when`: CEL over the dependent. */
  when?: string;
  /** `spec.protectWhile`. */
  protectWhile?: string;
}

/** A DependencyRule in cluster `provider1`, run through the real validation (which must accept it). */
function parsedRule(
  name: string,
  dependent: DependentType,
  dependencies: readonly Dependency[],
  spec: RuleSpecOptions,
): ClusterRule {
  const parsed = parseDependencyRule({
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent: { apiExportName: dependent.group, ...dependent },
      ...spec,
      dependencies,
    },
  });
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
  return { cluster: "provider1", rule: parsed.rule };
}

/** Options of {@linkcode dependentRule}. */
export interface DependentRuleOptions extends RuleSpecOptions {
  /** The protected type. @default {VPCS} */
  target?: GroupVersionResource;
}

/**
 * A validated rule in cluster `provider1`: `dependent` refers to
 * `options.target` (VPCs) at `paths`.
 */
export function dependentRule(
  name: string,
  dependent: DependentType,
  paths: readonly string[] = [".spec.vpcRef.name"],
  options: DependentRuleOptions = {},
): ClusterRule {
  const { target = VPCS, ...spec } = options;
  return parsedRule(
    name,
    dependent,
    paths.map((path) => dependency(target, path)),
    spec,
  );
}

/** VirtualMachines depend on VPCs via `.spec.vpcRef.name`. */
export const VM_RULE: ClusterRule = dependentRule(
  "vm-needs-vpc",
  VIRTUAL_MACHINES,
);

/** VirtualMachines depend on VPCs of another provider's export via `.spec.altVpcRef.name`. */
export const OTHER_PROVIDER_RULE: ClusterRule = parsedRule(
  "other-provider",
  VIRTUAL_MACHINES,
  [{
    ...dependency(VPCS, ".spec.altVpcRef.name"),
    apiExportRef: { path: "root:providers:network2", name: VPCS.group },
  }],
  {},
);

/** Options of {@linkcode networkOwnerRule}. */
export interface NetworkOwnerRuleOptions extends RuleSpecOptions {
  /** The protected type. @default {VPCS} */
  protects?: GroupVersionResource;
}

/**
 * A validated owner rule `name` in cluster `provider1`: Networks (the
 * dependent) own `options.protects` (VPCs), which (or whose Namespace)
 * name them at `fieldRef` (`from` and `path`).
 */
export function networkOwnerRule(
  name: string,
  fieldRef: { from: "Target" | "TargetNamespace"; path: string },
  options: NetworkOwnerRuleOptions = {},
): ClusterRule {
  const { protects = VPCS, ...spec } = options;
  const owned: Dependency = {
    ...dependency(protects, fieldRef.path),
    fieldRef,
  };
  return parsedRule(name, NETWORKS, [owned], spec);
}

/** Networks own VPCs, which name theirs by {@linkcode OWNER_LABEL} (`from: Target`). */
export const LABEL_OWNER_RULE: ClusterRule = networkOwnerRule("owned", {
  from: "Target",
  path: OWNER_LABEL_PATH,
});

/** Networks own VPCs, whose Namespace names theirs by {@linkcode OWNER_LABEL} (`from: TargetNamespace`). */
export const NAMESPACE_OWNER_RULE: ClusterRule = networkOwnerRule(
  "owned-via-namespace",
  { from: "TargetNamespace", path: OWNER_LABEL_PATH },
);

/** A loaded registry holding `rules`. */
export function registryOf(...rules: ClusterRule[]): RuleRegistry {
  const registry = new RuleRegistry();
  registry.replace(rules);
  return registry;
}

/** A loaded index of `locks`, each in logical cluster `consumer1`. */
function lockIndexOf(locks: Parameters<typeof validLock>[]): LockIndex {
  const index = new LockIndex();
  index.replace(
    locks.map((args) => ({ cluster: "consumer1", lock: validLock(...args) })),
  );
  return index;
}

/**
 * A loaded index of one Lock `prod` in `default` of `consumer1` on
 * vpcs/`name`, "production VPC", for `operations`.
 */
export function vpcLock(
  name = "vpc-a",
  operations: ("Delete" | "Update")[] = ["Delete"],
): LockIndex {
  return lockIndexOf([["prod", "default", {
    target: { ...VPCS, name },
    reason: "production VPC",
    operations,
  }]]);
}

/**
 * A loaded index of one Lock `window` in `default` of `consumer1` on
 * vpcs/vpc-a, "maintenance window", until `expiresAt` (with the default
 * skew allowance of 5 s).
 */
export function expiringVpcLock(expiresAt: string): LockIndex {
  return lockIndexOf([["window", "default", {
    target: { ...VPCS, name: "vpc-a" },
    reason: "maintenance window",
    expiresAt,
  }]]);
}

/** A loaded index of the Lock `home` in `team-a` on the Namespace team-a, "tenant home". */
export function namespaceLock(): LockIndex {
  return lockIndexOf([["home", "team-a", {
    target: {
      group: "",
      version: "v1",
      resource: "namespaces",
      name: "team-a",
    },
    reason: "tenant home",
  }]]);
}

/** A loaded index without any Lock. */
export function noLocks(): LockIndex {
  return lockIndexOf([]);
}

// ---------------------------------------------------------------------------
// Plans

/** What a validator hands {@linkcode planReview}. */
export interface PlanSetup {
  /** The rules, loaded into a registry. @default {[VM_RULE]} */
  rules?: readonly ClusterRule[] | undefined;
  /** The identity of each rule's dependent export, by rule key. */
  identities?: ReadonlyMap<string, string> | undefined;
  /** Whether the rules are loaded. @default {true} */
  loaded?: boolean | undefined;
  /** The Locks. */
  locks?: LockIndex | undefined;
  /** The provider whose configuration kcp called. */
  provider?: string | undefined;
  /** Whether the annotation counts only for users kcp allows `bypass`. @default {false} */
  authorized?: boolean | undefined;
  /** The webhook's clock, ms since the epoch. @default {PLAN_NOW} */
  now?: number | undefined;
}

/** The clock of {@linkcode planContext} unless a setup says otherwise: 2026-01-01T00:00:00Z. */
export const PLAN_NOW: number = Date.parse("2026-01-01T00:00:00Z");

/** The context of {@linkcode planReview}, built from `setup` as the validator builds it. */
export function planContext(setup: PlanSetup = {}): PlanContext {
  const registry = new RuleRegistry();
  registry.replace(
    setup.rules ?? [VM_RULE],
    setup.identities === undefined ? {} : { identities: setup.identities },
  );
  return {
    loaded: setup.loaded ?? true,
    protectionsOf: (resource) => registry.find(resource),
    locks: setup.locks,
    provider: setup.provider,
    authorizedBypass: setup.authorized ?? false,
    now: setup.now ?? PLAN_NOW,
  };
}

/** The plan of `request` under `setup`; asserts that it needs reads. */
export function planOf(
  request: AdmissionRequest,
  setup: PlanSetup = {},
): ReviewPlan {
  const step = planReview(request, planContext(setup));
  assert.ok("plan" in step, "a plan");
  return step.plan;
}

// ---------------------------------------------------------------------------
// What the tests expect

/** A VirtualMachine blocker referring through `paths` (`.spec.vpcRef.name` by default). */
export function vmBlocker(
  name: string,
  namespace = "default",
  ...paths: string[]
): Blocker {
  return {
    kind: "VirtualMachine",
    type: gvrOf(VIRTUAL_MACHINES),
    namespace,
    name,
    paths: paths.length === 0 ? [".spec.vpcRef.name"] : paths,
    rules: ["provider1/vm-needs-vpc"],
  };
}

/** `blocker` referring under the rule `key` (`<cluster>/<name>`) instead. */
export function underRule(key: string, blocker: Blocker): Blocker {
  return { ...blocker, rules: [key] };
}

/** A LoadBalancer blocker referring through `.spec.vpcRef.name` under the rule `rule`. */
export function lbBlocker(
  name: string,
  namespace = "default",
  rule = "provider1/lb-needs-vpc",
): Blocker {
  return {
    kind: "LoadBalancer",
    type: gvrOf(LOAD_BALANCERS),
    namespace,
    name,
    paths: [".spec.vpcRef.name"],
    rules: [rule],
  };
}

/** The group, version and resource of `type`, without its kind. */
export function gvrOf(type: GroupVersionResource): GroupVersionResource {
  return { group: type.group, version: type.version, resource: type.resource };
}

/** The verdict that allows the review, with `outcome`. */
export function allowedVerdict(outcome: Outcome = "allowed"): Verdict {
  return { response: { uid: REVIEW_UID, allowed: true }, outcome };
}

/** The verdict that denies the review with `code`, `reason` and `message`. */
export function deniedVerdict(
  code: number,
  reason: string,
  message: string,
  outcome: Outcome,
): Verdict {
  return {
    response: {
      uid: REVIEW_UID,
      allowed: false,
      status: { code, reason, message },
    },
    outcome,
  };
}

/**
 * `verdict` without what it says machine-readably (`causes`, and
 * `status.details` in its response), for tables that pin the message; each
 * such table also runs {@linkcode assertCausesAgree}.
 */
export function withoutCauses(verdict: Verdict): Verdict {
  const { causes: _causes, ...rest } = verdict;
  const status = rest.response.status;
  if (status?.details === undefined) return rest;
  const { details: _details, ...plain } = status;
  return { ...rest, response: { ...rest.response, status: plain } };
}

/**
 * Asserts that a denial's causes are the ones its response carries, and
 * that each object or Lock they name is named in its message too.
 */
export function assertCausesAgree(verdict: Verdict): void {
  const causes = verdict.causes ?? [];
  const carried = verdict.response.status?.details?.causes ?? [];
  assert.deepEqual(carried, causes.map(statusCause));
  if (causes.length > 0) assert.equal(verdict.response.allowed, false);
  const message = verdict.response.status?.message ?? "";
  for (const cause of causes) {
    const named = cause.type === "Lock"
      ? `Lock ${cause.lock.namespace}/${cause.lock.name}`
      : cause.type === "More"
      ? `${cause.count}`
      : cause.type === "NotRead"
      ? cause.group === "" ? cause.resource : `${cause.resource}.${cause.group}`
      : `${cause.object.kind}/`;
    assert.ok(message.includes(named), `${named} not in: ${message}`);
    if (cause.type === "Reference" || cause.type === "Owner") {
      assert.ok(message.includes(cause.object.name), message);
    }
  }
}

/** The 409 denial naming `blockers` dependents with `message`. */
export function referencedVerdict(message: string, blockers: number): Verdict {
  return {
    ...deniedVerdict(409, "Conflict", message, "denied_referenced"),
    blockers,
  };
}

/** The 503 while the rules (or Locks) are not loaded, with the exact message. */
export const NOT_READY_VERDICT: Verdict = deniedVerdict(
  503,
  "ServiceUnavailable",
  "dependency webhook not yet initialized, retry later",
  "denied_not_ready",
);

/** How the denial of vpcs/vpc-a held by {@linkcode vpcLock} reads. */
export const LOCKED_MESSAGE =
  'cannot delete vpcs/vpc-a: locked by Lock default/prod ("production VPC"): deleting the Lock unlocks it; the skip-protection annotation does not';

/** How the denial of vpcs/vpc-a referred to by VirtualMachine vm-1 reads. */
export const VM_1_BLOCKS =
  "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";

// ---------------------------------------------------------------------------
// Bypass

/** Answers SubjectAccessReviews with `answer`, recording each query. */
export class FakeBypass implements BypassAuthorizer {
  /** Every query asked, in order. */
  readonly queries: BypassQuery[] = [];

  /** Answers `answer`: whether the user may, or an error to fail with. */
  constructor(readonly answer: boolean | { error: unknown }) {}

  /** Records `query` and answers it. */
  mayBypass(query: BypassQuery): Promise<boolean> {
    this.queries.push(query);
    return typeof this.answer === "boolean"
      ? Promise.resolve(this.answer)
      : Promise.reject(this.answer.error);
  }
}
