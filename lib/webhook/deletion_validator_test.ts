import assert from "node:assert/strict";
import type { BypassAuthorizer, BypassQuery } from "./access_review.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import {
  DeletionValidator,
  type DeletionValidatorOptions,
  type DependentSource,
  NOT_INITIALIZED_MESSAGE,
  UNCONFIRMED_MESSAGE,
  type Verdict,
} from "./deletion_validator.ts";
import { KubeApiError } from "../kcp/mod.ts";
import { FairQueue } from "../runtime/mod.ts";
import {
  type ClusterRule,
  enforcedRules,
  type GroupVersionResource,
} from "../rules/mod.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { LockIndex } from "../locks/mod.ts";
import {
  dependency,
  type DependentType,
  FakeDependentSource,
  type Listing,
  LOAD_BALANCERS,
  SUBNETS,
  untilAborted,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

const UID = "705ab4f5-6393-11e8-b7cc-42010a800002";
const SKIP = "dependencies.opendefense.cloud/skip-protection";

const VPC_TYPE: DependentType = { ...VPCS, kind: "VPC" };

// ---------------------------------------------------------------------------
// Rules and registry

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
/** LoadBalancers depend on VPCs via `.spec.vpcRef.name`. */
const LB_RULE = rule("lb-needs-vpc", LOAD_BALANCERS);

/** A loaded registry holding `rules`. */
function registryOf(...rules: ClusterRule[]): RuleRegistry {
  const registry = new RuleRegistry();
  registry.replace(rules);
  return registry;
}

// ---------------------------------------------------------------------------
// Objects

/** A VPC as the API server stores it, in logical cluster `consumer1`. */
function vpc(
  name: string,
  options: {
    namespace?: string;
    annotations?: Record<string, unknown>;
    peer?: string;
  } = {},
): Record<string, unknown> {
  const {
    namespace,
    annotations = { "kcp.io/cluster": "consumer1" },
    peer,
  } = options;
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: "VPC",
    metadata: {
      name,
      ...(namespace === undefined ? {} : { namespace }),
      uid: `uid-${name}`,
      annotations,
    },
    spec: {
      cidr: "10.0.0.0/16",
      ...(peer === undefined ? {} : { peerRef: { name: peer } }),
    },
  };
}

/**
 * A dependent of `type` named `name` whose `.spec.vpcRef.name` is `vpcName`,
 * in `namespace` (`null`: cluster-scoped).
 */
function dependent(
  type: DependentType,
  name: string,
  vpcName: unknown,
  namespace: string | null = "default",
): Record<string, unknown> {
  return {
    apiVersion: `${type.group}/${type.version}`,
    kind: type.kind,
    metadata: {
      name,
      ...(namespace === null ? {} : { namespace }),
    },
    spec: { vpcRef: { name: vpcName } },
  };
}

function vm(
  name: string,
  vpcName: unknown,
  namespace: string | null = "default",
): Record<string, unknown> {
  return dependent(VIRTUAL_MACHINES, name, vpcName, namespace);
}

function lb(
  name: string,
  vpcName: unknown,
  namespace: string | null = "default",
): Record<string, unknown> {
  return dependent(LOAD_BALANCERS, name, vpcName, namespace);
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

// ---------------------------------------------------------------------------
// A fake DependentSource

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

/** The names in a `still referenced by` message, in order. */
function namesIn(message: string): string[] {
  const list = message.split("still referenced by ")[1] ?? "";
  return [...list.matchAll(/([A-Za-z]+(?:\/[^/\s(]+)+) \(/g)].map((m) => m[1]!);
}

// ---------------------------------------------------------------------------
// 1. Operations other than DELETE

for (const operation of ["CREATE", "UPDATE", "CONNECT"] as const) {
  Deno.test(`DeletionValidator.validate() allows ${operation} without listing, even before the rules are loaded`, async () => {
    const source = new FakeDependentSource();
    const notLoaded = new RuleRegistry();
    assert.deepEqual(
      await validate(notLoaded, source, deleteRequest({ operation })),
      ALLOWED,
    );
    const loaded = registryOf(VM_RULE);
    assert.deepEqual(
      await validate(loaded, source, deleteRequest({ operation })),
      ALLOWED,
    );
    assert.deepEqual(source.queries, []);
  });
}

// ---------------------------------------------------------------------------
// 2. Rules not loaded

Deno.test("DeletionValidator.validate() denies a DELETE with the exact not-initialized message while rules are not loaded", async () => {
  const source = new FakeDependentSource({ virtualmachines: { pages: [] } });
  // Loaded only by replace(), which the webhook calls once the rules are complete.
  const registry = new RuleRegistry();
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
  assert.equal(
    NOT_INITIALIZED_MESSAGE,
    "dependency webhook not yet initialized, retry later",
  );
  assert.deepEqual(await validate(registry, source, deleteRequest()), want);
  // Not ready comes before reading the object.
  assert.deepEqual(
    await validate(
      registry,
      source,
      deleteRequest({ oldObject: undefined, object: undefined }),
    ),
    want,
  );
  assert.deepEqual(source.queries, []);
});

// ---------------------------------------------------------------------------
// 3. Skip-protection annotation

Deno.test('DeletionValidator.validate() allows without listing when skip-protection is exactly "true"', async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const request = deleteRequest({
    oldObject: vpc("vpc-a", {
      namespace: "default",
      annotations: { "kcp.io/cluster": "consumer1", [SKIP]: "true" },
    }),
  });
  assert.deepEqual(await validate(registryOf(VM_RULE), source, request), {
    response: { uid: UID, allowed: true },
    outcome: "allowed_skip",
  });
  assert.deepEqual(source.queries, []);
});

Deno.test("DeletionValidator.validate() honours skip-protection even without a kcp.io/cluster annotation", async () => {
  const source = new FakeDependentSource();
  const request = deleteRequest({
    oldObject: vpc("vpc-a", {
      namespace: "default",
      annotations: { [SKIP]: "true" },
    }),
  });
  assert.deepEqual(await validate(registryOf(VM_RULE), source, request), {
    response: { uid: UID, allowed: true },
    outcome: "allowed_skip",
  });
  assert.deepEqual(source.queries, []);
});

for (const value of ["True", "TRUE", "yes", "1", "", " true", true]) {
  Deno.test(
    `DeletionValidator.validate() does not skip protection for the annotation value ${
      JSON.stringify(value)
    }`,
    async () => {
      const source = new FakeDependentSource({
        virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
      });
      const request = deleteRequest({
        oldObject: vpc("vpc-a", {
          namespace: "default",
          annotations: { "kcp.io/cluster": "consumer1", [SKIP]: value },
        }),
      });
      assert.deepEqual(
        await validate(registryOf(VM_RULE), source, request),
        referenced(
          "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
          1,
        ),
      );
      assert.deepEqual(source.listed, ["virtualmachines"]);
    },
  );
}

// ---------------------------------------------------------------------------
// 4. Malformed requests

Deno.test("DeletionValidator.validate() answers 400 when the review carries neither oldObject nor object", async () => {
  const source = new FakeDependentSource();
  for (
    const overrides of [
      { oldObject: undefined, object: undefined },
      { oldObject: null, object: null },
      { oldObject: [vpc("vpc-a")], object: "vpc-a" },
    ] satisfies Partial<AdmissionRequest>[]
  ) {
    const request = deleteRequest(overrides);
    assert.deepEqual(
      await validate(registryOf(VM_RULE), source, request),
      {
        response: {
          uid: UID,
          allowed: false,
          status: {
            code: 400,
            reason: "BadRequest",
            message:
              "cannot read the object being deleted: the review carries no oldObject",
          },
        },
        outcome: "denied_invalid",
      },
      JSON.stringify(overrides),
    );
  }
  assert.deepEqual(source.queries, []);
});

Deno.test("DeletionValidator.validate() falls back to object when oldObject is missing", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const request = deleteRequest({
    oldObject: null,
    object: vpc("vpc-a", {
      namespace: "default",
      annotations: { "kcp.io/cluster": "consumer2" },
    }),
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, request),
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
      1,
    ),
  );
  assert.deepEqual(source.queries.map((q) => q.cluster), ["consumer2"]);
});

for (
  const [label, annotations] of [
    ["no kcp.io/cluster annotation", { other: "x" }],
    ["an empty kcp.io/cluster annotation", { "kcp.io/cluster": "" }],
    ["a non-string kcp.io/cluster annotation", { "kcp.io/cluster": 7 }],
    ["no annotations at all", undefined],
  ] as const
) {
  Deno.test(`DeletionValidator.validate() answers 400 naming the annotation for ${label}`, async () => {
    const source = new FakeDependentSource();
    const oldObject = vpc("vpc-a", { namespace: "default" });
    const metadata = oldObject.metadata as Record<string, unknown>;
    if (annotations === undefined) delete metadata.annotations;
    else metadata.annotations = annotations;
    const verdict = await validate(
      registryOf(VM_RULE),
      source,
      deleteRequest({ oldObject }),
    );
    assert.deepEqual(verdict, {
      response: {
        uid: UID,
        allowed: false,
        status: {
          code: 400,
          reason: "BadRequest",
          message:
            "cannot tell the workspace of the object being deleted: it has no kcp.io/cluster annotation",
        },
      },
      outcome: "denied_invalid",
    });
    assert.match(verdict.response.status!.message, /kcp\.io\/cluster/);
    assert.deepEqual(source.queries, []);
  });
}

Deno.test("DeletionValidator.validate() answers 400 when neither request.name nor metadata.name names the object", async () => {
  const source = new FakeDependentSource();
  const oldObject = vpc("", { namespace: "default" });
  assert.deepEqual(
    await validate(
      registryOf(VM_RULE),
      source,
      deleteRequest({ name: "", oldObject }),
    ),
    {
      response: {
        uid: UID,
        allowed: false,
        status: {
          code: 400,
          reason: "BadRequest",
          message: "cannot tell the name of the object being deleted",
        },
      },
      outcome: "denied_invalid",
    },
  );
  assert.deepEqual(source.queries, []);
});

// ---------------------------------------------------------------------------
// 5. DELETECOLLECTION items and the query

Deno.test("DeletionValidator.validate() takes the name from oldObject.metadata.name when request.name is empty", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[vm("vm-1", "vpc-a"), vm("vm-2", "vpc-b")]],
    },
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest({ name: "" }),
  );
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
      1,
    ),
  );
  assert.deepEqual(source.plainQueries, [{
    cluster: "consumer1",
    namespace: "default",
    dependent: {
      group: "compute.example.com",
      version: "v1alpha1",
      resource: "virtualmachines",
    },
  }]);
  assert.ok(source.signals[0] instanceof AbortSignal);
});

Deno.test("DeletionValidator.validate() lists the dependent type in the consumer's cluster and the request's namespace", async () => {
  const source = new FakeDependentSource({ virtualmachines: { pages: [] } });
  const request = deleteRequest({
    namespace: "team-a",
    oldObject: vpc("vpc-a", {
      namespace: "team-a",
      annotations: { "kcp.io/cluster": "2x5jd0ws3r7t" },
    }),
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, request),
    ALLOWED,
  );
  assert.deepEqual(source.plainQueries, [{
    cluster: "2x5jd0ws3r7t",
    namespace: "team-a",
    dependent: {
      group: "compute.example.com",
      version: "v1alpha1",
      resource: "virtualmachines",
    },
  }]);
});

// ---------------------------------------------------------------------------
// 6. Cluster-scoped and namespaced targets

Deno.test("DeletionValidator.validate() lists all namespaces and qualifies blockers by namespace for a cluster-scoped target", async () => {
  for (
    const request of [clusterScopedDeleteRequest(), {
      ...clusterScopedDeleteRequest(),
      namespace: "",
    }]
  ) {
    const source = new FakeDependentSource({
      virtualmachines: {
        pages: [[vm("vm-1", "vpc-a", "team-b"), vm("vm-1", "vpc-a", "team-a")]],
      },
    });
    assert.deepEqual(
      await validate(registryOf(VM_RULE), source, request),
      referenced(
        "cannot delete vpcs/vpc-a: still referenced by " +
          "VirtualMachine/team-a/vm-1 (.spec.vpcRef.name), " +
          "VirtualMachine/team-b/vm-1 (.spec.vpcRef.name)",
        2,
      ),
    );
    assert.equal(source.queries.length, 1);
    assert.equal(Object.hasOwn(source.queries[0]!, "namespace"), false);
    assert.equal(source.queries[0]!.namespace, undefined);
    assert.equal(source.queries[0]!.cluster, "consumer1");
  }
});

Deno.test("DeletionValidator.validate() names cluster-scoped blockers of a cluster-scoped target without a namespace", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a", null)]] },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, clusterScopedDeleteRequest()),
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
      1,
    ),
  );
});

Deno.test("DeletionValidator.validate() names blockers of a namespaced target without their namespace", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a", "default")]] },
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
  );
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
      1,
    ),
  );
  assert.doesNotMatch(verdict.response.status!.message, /default/);
});

// ---------------------------------------------------------------------------
// 7. No protecting rule

Deno.test("DeletionValidator.validate() allows without listing when no rule protects the type", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const subnetRule = rule("vm-needs-subnet", VIRTUAL_MACHINES, [
    ".spec.subnetRef.name",
  ], SUBNETS);
  for (const registry of [registryOf(), registryOf(subnetRule)]) {
    assert.deepEqual(
      await validate(registry, source, deleteRequest()),
      ALLOWED,
    );
  }
  // Another version of the protected type is not protected.
  assert.deepEqual(
    await validate(
      registryOf(VM_RULE),
      source,
      deleteRequest({ resource: { ...VPCS, version: "v1beta1" } }),
    ),
    ALLOWED,
  );
  assert.deepEqual(source.queries, []);
});

// ---------------------------------------------------------------------------
// 8-9. Blockers

Deno.test("DeletionValidator.validate() denies 409 naming the one VirtualMachine that refers to the VPC", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
  );
  assert.deepEqual(verdict, {
    response: {
      uid: UID,
      allowed: false,
      status: {
        code: 409,
        reason: "Conflict",
        message:
          "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
      },
    },
    outcome: "denied_referenced",
    blockers: 1,
  });
  assert.ok(
    verdict.response.status!.message.includes("still referenced by"),
  );
});

Deno.test("DeletionValidator.validate() allows when the listed VirtualMachines refer to other VPCs", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[
        vm("vm-1", "vpc-b"),
        vm("vm-2", "vpc-a-2"),
        vm("vm-3", "VPC-A"),
      ]],
    },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    ALLOWED,
  );
  assert.deepEqual(source.listed, ["virtualmachines"]);
});

Deno.test("DeletionValidator.validate() names every referring VirtualMachine and ignores items that do not refer", async () => {
  const noSpec = vm("vm-no-spec", "vpc-a");
  delete noSpec.spec;
  const source = new FakeDependentSource({
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
        { metadata: { name: "vm-spec-array" }, spec: [{ vpcRef: "vpc-a" }] },
        null,
        "vpc-a",
        42,
        ["vpc-a"],
        vm("vm-1", "vpc-a"),
      ]],
    },
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
  );
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.vpcRef.name)",
      2,
    ),
  );
});

Deno.test("DeletionValidator.validate() allows a VirtualMachine list without referring items", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[null, "vpc-a", vm("vm-number", 1), vm("vm-missing", undefined)]],
    },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    ALLOWED,
  );
});

// ---------------------------------------------------------------------------
// 10. Many blockers

/** `vm-01` ... `vm-12`. */
const TWELVE = Array.from(
  { length: 12 },
  (_, i) => `vm-${String(i + 1).padStart(2, "0")}`,
);

Deno.test("DeletionValidator.validate() names 10 of 12 blockers across pages, then says how many more", async () => {
  const [a, b, c] = [TWELVE.slice(0, 5), TWELVE.slice(5, 10), TWELVE.slice(10)];
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [
        [...a.map((n) => vm(n, "vpc-a")), vm("vm-x", "vpc-b")],
        [vm("vm-y", "vpc-b"), ...b.map((n) => vm(n, "vpc-a"))],
        [],
        c.map((n) => vm(n, "vpc-a")),
      ],
    },
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
  );
  const named = TWELVE.slice(0, 10).map((n) =>
    `VirtualMachine/${n} (.spec.vpcRef.name)`
  );
  assert.deepEqual(
    verdict,
    referenced(
      `cannot delete vpcs/vpc-a: still referenced by ${
        named.join(", ")
      } and 2 more`,
      12,
    ),
  );
  assert.ok(verdict.response.status!.message.endsWith(" and 2 more"));
  assert.equal(verdict.blockers, 12);
});

Deno.test("DeletionValidator.validate() lists the named blockers sorted by kind, namespace and name", async () => {
  const shuffled = ["vm-07", "vm-03", "vm-12", "vm-01", "vm-09", "vm-05"];
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [
        shuffled.slice(0, 3).map((n) => vm(n, "vpc-a", "team-b")),
        shuffled.slice(3).map((n) => vm(n, "vpc-a", "team-a")),
      ],
    },
    loadbalancers: { pages: [[lb("lb-2", "vpc-a", "team-z")]] },
  });
  const verdict = await validate(
    registryOf(VM_RULE, LB_RULE),
    source,
    clusterScopedDeleteRequest(),
  );
  assert.equal(verdict.outcome, "denied_referenced");
  assert.equal(verdict.blockers, 7);
  assert.deepEqual(namesIn(verdict.response.status!.message), [
    "LoadBalancer/team-z/lb-2",
    "VirtualMachine/team-a/vm-01",
    "VirtualMachine/team-a/vm-05",
    "VirtualMachine/team-a/vm-09",
    "VirtualMachine/team-b/vm-03",
    "VirtualMachine/team-b/vm-07",
    "VirtualMachine/team-b/vm-12",
  ]);
});

Deno.test("DeletionValidator.validate() names the same blockers whatever order the list returns them in", async () => {
  const messages: string[] = [];
  for (const order of [TWELVE, [...TWELVE].reverse()]) {
    const source = new FakeDependentSource({
      virtualmachines: {
        pages: [
          order.slice(0, 6).map((n) => vm(n, "vpc-a")),
          order.slice(6).map((n) => vm(n, "vpc-a")),
        ],
      },
    });
    const verdict = await validate(
      registryOf(VM_RULE),
      source,
      deleteRequest(),
    );
    assert.equal(verdict.blockers, 12);
    messages.push(verdict.response.status!.message);
  }
  // The same objects must give the same message: the first 10 in sorted
  // order, not the first 10 the list happened to return.
  assert.equal(messages[1], messages[0]);
  assert.deepEqual(
    namesIn(messages[0]!),
    TWELVE.slice(0, 10).map((n) => `VirtualMachine/${n}`),
  );
});

Deno.test("DeletionValidator.validate() names as many blockers as maxNamed says", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[vm("vm-1", "vpc-a"), vm("vm-2", "vpc-a"), vm("vm-3", "vpc-a")]],
    },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest(), {
      maxNamed: 2,
    }),
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.vpcRef.name) and 1 more",
      3,
    ),
  );
});

// ---------------------------------------------------------------------------
// 11. One dependent through two protections

Deno.test("DeletionValidator.validate() names a dependent that refers through two field paths once, with both paths", async () => {
  const twoPaths = rule("vm-needs-vpc", VIRTUAL_MACHINES, [
    ".spec.vpcRef.name",
    ".spec.backupVpcRef.name",
  ]);
  const both = vm("vm-1", "vpc-a");
  (both.spec as Record<string, unknown>).backupVpcRef = { name: "vpc-a" };
  const backupOnly = vm("vm-2", "vpc-b");
  (backupOnly.spec as Record<string, unknown>).backupVpcRef = {
    name: "vpc-a",
  };
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[both, backupOnly]] },
  });
  assert.deepEqual(
    await validate(registryOf(twoPaths), source, deleteRequest()),
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name, .spec.backupVpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.backupVpcRef.name)",
      2,
    ),
  );
  // One list for the dependent type, not one per field path.
  assert.deepEqual(source.listed, ["virtualmachines"]);
});

Deno.test("DeletionValidator.validate() names a dependent once when two rules protect through the same field path", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const twin = rule("vm-needs-vpc-too", VIRTUAL_MACHINES, ["spec.vpcRef.name"]);
  assert.deepEqual(
    await validate(registryOf(VM_RULE, twin), source, deleteRequest()),
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
      1,
    ),
  );
  assert.deepEqual(source.listed, ["virtualmachines"]);
});

// ---------------------------------------------------------------------------
// 12. Dependent types are listed in parallel

Deno.test("DeletionValidator.validate() lists two dependent types in parallel", async () => {
  // Each list waits until both have been requested: a validator that lists
  // one type after the other never requests the second and runs into its
  // own deadline instead.
  let requested = 0;
  let bothRequested!: () => void;
  const barrier = new Promise<void>((resolve) => bothRequested = resolve);
  const waitForBoth = (items: readonly unknown[]): Listing => ({
    run: async function* (_query, signal) {
      requested++;
      if (requested === 2) bothRequested();
      await untilAborted(barrier, signal);
      yield items;
    },
  });
  const source = new FakeDependentSource({
    virtualmachines: waitForBoth([vm("vm-1", "vpc-a")]),
    loadbalancers: waitForBoth([lb("lb-1", "vpc-a")]),
  });
  const verdict = await validate(
    registryOf(VM_RULE, LB_RULE),
    source,
    deleteRequest(),
    { timeoutMs: 1_000 },
  );
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "LoadBalancer/lb-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name)",
      2,
    ),
  );
  assert.deepEqual(source.listed.sort(), ["loadbalancers", "virtualmachines"]);
  assert.deepEqual(
    new Set(source.queries.map((q) => q.cluster)),
    new Set(["consumer1"]),
  );
});

// ---------------------------------------------------------------------------
// 13. NotFound

Deno.test("DeletionValidator.validate() allows when the consumer's workspace does not serve the dependent type", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      error: new KubeApiError("virtualmachines not found", {
        status: 404,
        reason: "NotFound",
      }),
    },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    ALLOWED,
  );
  assert.deepEqual(source.listed, ["virtualmachines"]);
});

Deno.test("DeletionValidator.validate() still denies for a second dependent type when the first is not found", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      error: new KubeApiError("not found", { status: 404, reason: "NotFound" }),
    },
    loadbalancers: { pages: [[lb("lb-1", "vpc-a")]] },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE, LB_RULE), source, deleteRequest()),
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by LoadBalancer/lb-1 (.spec.vpcRef.name)",
      1,
    ),
  );
  assert.deepEqual(source.listed.sort(), ["loadbalancers", "virtualmachines"]);
});

// ---------------------------------------------------------------------------
// 14. Other list errors fail closed

/** The 503 verdict for a failed check whose detail is `detail`. */
function failedCheck(detail: string): Verdict {
  return {
    response: {
      uid: UID,
      allowed: false,
      status: {
        code: 503,
        reason: "ServiceUnavailable",
        message:
          `cannot delete vpcs/vpc-a: cannot check whether other objects still refer to it (${detail}); ` +
          "the delete is denied until they can be checked: retry later, or set the annotation " +
          "dependencies.opendefense.cloud/skip-protection=true on the object to delete it anyway",
      },
    },
    outcome: "denied_error",
  };
}

/** The 503 verdict when kcp refuses our identity `verb` on `type`. */
function forbidden(
  verb: "get" | "list",
  type: { group: string; resource: string },
): Verdict {
  const shown = `${type.resource}.${type.group}`;
  return {
    response: {
      uid: UID,
      allowed: false,
      status: {
        code: 503,
        reason: "ServiceUnavailable",
        message:
          `cannot delete vpcs/vpc-a: the webhook's identity may not ${verb} ${shown} in this workspace (403 Forbidden): ` +
          `grant "${verb}" on ${shown} to it in system:admin of every shard (controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -); ` +
          "the delete is denied until it may: retry later, or set the annotation " +
          "dependencies.opendefense.cloud/skip-protection=true on the object to delete it anyway",
      },
    },
    outcome: "denied_error",
    forbidden: { verb, group: type.group, resource: type.resource },
  };
}

Deno.test("DeletionValidator.validate() denies 503 naming the permission when listing is forbidden", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      error: new KubeApiError(
        'virtualmachines.compute.example.com is forbidden: User "webhook" cannot list resource',
        { status: 403, reason: "Forbidden" },
      ),
    },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    forbidden("list", VIRTUAL_MACHINES),
  );
});

Deno.test("DeletionValidator.validate() denies 503 naming the permission when reading the object is forbidden", async () => {
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } }, {
    error: new KubeApiError("forbidden", { status: 403 }),
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    forbidden("get", VPCS),
  );
});

Deno.test("DeletionValidator.validate() denies 503 on a transport error", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      error: new KubeApiError("connection refused (os error 111)", {
        status: 0,
      }),
    },
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
  );
  assert.deepEqual(
    verdict,
    failedCheck(
      "listing virtualmachines.compute.example.com failed: connection refused (os error 111)",
    ),
  );
  assert.ok(verdict.response.status!.message.includes("skip-protection"));
});

Deno.test("DeletionValidator.validate() denies 503 when a later page fails, even after blockers were found", async () => {
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[vm("vm-1", "vpc-a")]],
      thenThrow: new KubeApiError(
        "the server is currently unable to handle the request",
        {
          status: 503,
          reason: "ServiceUnavailable",
        },
      ),
    },
  });
  const verdict = await validate(registryOf(VM_RULE), source, deleteRequest());
  assert.equal(verdict.outcome, "denied_error");
  assert.equal(verdict.response.status?.code, 503);
  assert.match(
    verdict.response.status!.message,
    /^cannot delete vpcs\/vpc-a: .*the server is currently unable to handle the request.*skip-protection/,
  );
});

Deno.test("DeletionValidator.validate() denies 503 when one of two dependent types fails", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[]] },
    loadbalancers: { error: new KubeApiError("unavailable", { status: 500 }) },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE, LB_RULE), source, deleteRequest()),
    failedCheck("listing loadbalancers.lb.example.com failed: unavailable"),
  );
});

Deno.test("DeletionValidator.validate() denies 503 instead of throwing when the source throws something other than an Error", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { error: "boom" },
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    failedCheck("listing virtualmachines.compute.example.com failed: boom"),
  );
});

Deno.test("DeletionValidator.validate() denies 503 when the source throws before returning pages", async () => {
  const source: DependentSource = {
    pages() {
      throw new TypeError("bad URL");
    },
    liveUid: (query) => Promise.resolve(`uid-${query.name}`),
    workspaceDeletedAt: () => Promise.resolve(undefined),
    boundIdentities: () => Promise.resolve(new Map()),
  };
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    failedCheck(
      "listing virtualmachines.compute.example.com failed: bad URL",
    ),
  );
});

// ---------------------------------------------------------------------------
// 15. Deadline

Deno.test("DeletionValidator.validate() denies 503 when listing does not finish within timeoutMs", async () => {
  const source = new FakeDependentSource({ virtualmachines: { hang: true } });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
    { timeoutMs: 50 },
  );
  assert.deepEqual(
    verdict,
    failedCheck(
      "listing virtualmachines.compute.example.com did not finish within 50 ms",
    ),
  );
  assert.match(verdict.response.status!.message, /did not finish within 50 ms/);
  // The source was told to stop.
  assert.equal(source.signals.length, 1);
  assert.equal(source.signals[0]!.aborted, true);
});

// ---------------------------------------------------------------------------
// 16. Self-reference

/** VPCs refer to VPCs: a SelfDependency, which the controller rejects. */
const PEER_RULE = rule("vpc-peers-vpc", VPC_TYPE, [".spec.peerRef.name"]);

Deno.test("DeletionValidator.validate() never lists the protected type itself: the registry is loaded without self-dependent rules", async () => {
  const requests: [string, AdmissionRequest][] = [
    ["namespaced", deleteRequest()],
    ["cluster-scoped", clusterScopedDeleteRequest()],
  ];
  for (const [label, request] of requests) {
    const source = new FakeDependentSource({
      vpcs: {
        pages: [[
          vpc("vpc-a", { namespace: "default", peer: "vpc-a" }),
          vpc("vpc-b", { namespace: "default", peer: "vpc-a" }),
        ]],
      },
      virtualmachines: { pages: [[vm("vm-1", "vpc-b")]] },
    });
    // As webhook.ts loads it.
    const registry = registryOf(...enforcedRules([PEER_RULE, VM_RULE]));
    assert.deepEqual(await validate(registry, source, request), ALLOWED, label);
    assert.deepEqual(
      source.plainQueries.map((q) => q.dependent.resource),
      ["virtualmachines"],
      label,
    );
  }
});

// ---------------------------------------------------------------------------
// 17. dryRun

Deno.test("DeletionValidator.validate() answers a dry-run DELETE exactly like a real one", async () => {
  const cases: [string, () => FakeDependentSource][] = [
    ["referenced", () =>
      new FakeDependentSource({
        virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
      })],
    ["unreferenced", () =>
      new FakeDependentSource({
        virtualmachines: { pages: [[vm("vm-1", "vpc-b")]] },
      })],
    ["failing", () =>
      new FakeDependentSource({
        virtualmachines: {
          error: new KubeApiError("forbidden", { status: 403 }),
        },
      })],
  ];
  for (const [label, makeSource] of cases) {
    const real = makeSource();
    const dry = makeSource();
    const realVerdict = await validate(
      registryOf(VM_RULE),
      real,
      deleteRequest({ dryRun: false }),
    );
    const dryVerdict = await validate(
      registryOf(VM_RULE),
      dry,
      deleteRequest({ dryRun: true }),
    );
    assert.deepEqual(dryVerdict, realVerdict, label);
    assert.deepEqual(dry.plainQueries, real.plainQueries, label);
    assert.equal(real.queries.length, 1, label);
  }
});

// ---------------------------------------------------------------------------
// Registry changes between reviews

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
// 18. The live object confirms the review before anything is named

const UNCONFIRMED: Verdict = {
  response: {
    uid: UID,
    allowed: false,
    status: { code: 409, reason: "Conflict", message: UNCONFIRMED_MESSAGE },
  },
  outcome: "denied_unconfirmed",
};

Deno.test("DeletionValidator.validate() reads the live object under review in the consumer's cluster, beside the lists", async () => {
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest()),
    ALLOWED,
  );
  assert.deepEqual(source.objectQueries, [{
    cluster: "consumer1",
    namespace: "default",
    resource: { ...VPCS },
    name: "vpc-a",
  }]);
  assert.deepEqual(source.listed, ["virtualmachines"]);
});

for (
  const [label, live] of [
    ["a live object with another uid", { uid: "uid-of-another-vpc-a" }],
    ["no live object", { uid: undefined }],
  ] as const
) {
  Deno.test(`DeletionValidator.validate() names no blocker and gives the one generic denial for ${label}`, async () => {
    const source = new FakeDependentSource({
      virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
    }, live);
    const verdict = await validate(
      registryOf(VM_RULE),
      source,
      deleteRequest(),
    );
    assert.deepEqual(verdict, UNCONFIRMED);
    assert.doesNotMatch(UNCONFIRMED_MESSAGE, /vm-1|vpc-a|consumer1/);
  });
}

Deno.test("DeletionValidator.validate() ends the lists once the live object does not confirm the review", async () => {
  const source = new FakeDependentSource({ virtualmachines: { hang: true } }, {
    uid: undefined,
  });
  assert.deepEqual(
    await validate(registryOf(VM_RULE), source, deleteRequest(), {
      timeoutMs: 60_000,
    }),
    UNCONFIRMED,
  );
  assert.equal(source.signals[0]?.aborted, true);
});

Deno.test("DeletionValidator.validate() denies 503 without naming blockers when the live object cannot be read", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  }, {
    error: new KubeApiError("GET vpcs/vpc-a: 500: etcd down", { status: 500 }),
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
  );
  assert.equal(verdict.outcome, "denied_error");
  assert.equal(verdict.response.status?.code, 503);
  assert.match(
    verdict.response.status?.message ?? "",
    /^cannot delete vpcs\/vpc-a: cannot read the object itself \(GET vpcs\/vpc-a: 500: etcd down\); the delete is denied until it can be read/,
  );
  assert.doesNotMatch(verdict.response.status?.message ?? "", /vm-1/);
});

Deno.test("DeletionValidator.validate() denies 503 when the live object does not answer within timeoutMs", async () => {
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } }, {
    hang: true,
  });
  const verdict = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
    { timeoutMs: 50 },
  );
  assert.equal(verdict.outcome, "denied_error");
  assert.match(
    verdict.response.status?.message ?? "",
    /cannot read the object itself \(no answer within 50 ms\)/,
  );
});

// ---------------------------------------------------------------------------
// 19. Strict inputs: nothing invalid reaches kcp

for (
  const [label, request, problem] of [
    [
      "a kcp.io/cluster annotation that is a path",
      deleteRequest({
        oldObject: vpc("vpc-a", {
          namespace: "default",
          annotations: {
            "kcp.io/cluster":
              "root/api/v1/namespaces/kube-system/secrets?labelSelector=x#",
          },
        }),
      }),
      /its kcp\.io\/cluster annotation is not a logical cluster name: current value is "root\/api/,
    ],
    [
      "a kcp.io/cluster annotation that is a workspace path",
      deleteRequest({
        oldObject: vpc("vpc-a", {
          namespace: "default",
          annotations: { "kcp.io/cluster": "root:org" },
        }),
      }),
      /not a logical cluster name/,
    ],
    [
      "a name with a slash",
      deleteRequest({
        name: "",
        oldObject: vpc("../../secrets", { namespace: "default" }),
      }),
      /not a DNS-1123 subdomain: current value is "..\/..\/secrets"/,
    ],
    [
      "a namespace with a query",
      deleteRequest({ namespace: "default?watch=true" }),
      /not a DNS-1123 label: current value is "default\?watch=true"/,
    ],
    [
      "a request.name other than the object's name",
      deleteRequest({ name: "vpc-b" }),
      /the review names "vpc-b" but carries the object "vpc-a"/,
    ],
    [
      "an object without a uid",
      deleteRequest({
        oldObject: {
          metadata: {
            name: "vpc-a",
            namespace: "default",
            annotations: { "kcp.io/cluster": "consumer1" },
          },
        },
      }),
      /it has no metadata\.uid/,
    ],
  ] as const
) {
  Deno.test(`DeletionValidator.validate() answers 400 and asks kcp nothing for ${label}`, async () => {
    const source = new FakeDependentSource({
      virtualmachines: { pages: [[]] },
    });
    const verdict = await validate(registryOf(VM_RULE), source, request);
    assert.equal(verdict.outcome, "denied_invalid");
    assert.equal(verdict.response.status?.code, 400);
    assert.match(verdict.response.status?.message ?? "", problem);
    assert.deepEqual(source.queries, []);
    assert.deepEqual(source.objectQueries, []);
  });
}

// ---------------------------------------------------------------------------
// 20. A bound on the reviews that read kcp at once

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

// ---------------------------------------------------------------------------
// 21. Authorised break-glass: the annotation counts only for allowed users

/** Answers SubjectAccessReviews from `allowed`, recording each query. */
class FakeBypass implements BypassAuthorizer {
  readonly queries: BypassQuery[] = [];
  constructor(readonly answer: boolean | { error: unknown }) {}
  mayBypass(query: BypassQuery): Promise<boolean> {
    this.queries.push(query);
    return typeof this.answer === "boolean"
      ? Promise.resolve(this.answer)
      : Promise.reject(this.answer.error);
  }
}

/** The DELETE of vpc-a, annotated to skip protection. */
function skipRequest(uid = "uid-vpc-a"): AdmissionRequest {
  const oldObject = vpc("vpc-a", {
    namespace: "default",
    annotations: { "kcp.io/cluster": "consumer1", [SKIP]: "true" },
  });
  (oldObject.metadata as Record<string, unknown>).uid = uid;
  return deleteRequest({ oldObject });
}

Deno.test("DeletionValidator.validate() with a bypass authorizer lets the annotation through for an allowed user, asking in the consumer's cluster", async () => {
  const bypass = new FakeBypass(true);
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const verdict = await validate(registryOf(VM_RULE), source, skipRequest(), {
    bypass,
  });
  assert.deepEqual(verdict, {
    response: { uid: UID, allowed: true },
    outcome: "allowed_skip",
  });
  assert.deepEqual(bypass.queries, [{
    cluster: "consumer1",
    namespace: "default",
    user: { username: "alice", groups: ["system:authenticated"] },
  }]);
  assert.deepEqual(source.queries, [], "no dependents are listed");
});

Deno.test("DeletionValidator.validate() with a bypass authorizer denies 403 naming the permission for a user kcp does not allow", async () => {
  const verdict = await validate(
    registryOf(VM_RULE),
    new FakeDependentSource(),
    skipRequest(),
    { bypass: new FakeBypass(false) },
  );
  assert.deepEqual(verdict, {
    response: {
      uid: UID,
      allowed: false,
      status: {
        code: 403,
        reason: "Forbidden",
        message:
          'cannot delete vpcs/vpc-a: the dependencies.opendefense.cloud/skip-protection annotation lets a delete through only for users allowed "bypass" on protections.dependencies.opendefense.cloud in this workspace, and "alice" is not: ask for that permission, or delete what still refers to the object first',
      },
    },
    outcome: "denied_skip_unauthorized",
  });
});

Deno.test("DeletionValidator.validate() with a bypass authorizer answers a forged skip review with the generic denial", async () => {
  const verdict = await validate(
    registryOf(VM_RULE),
    new FakeDependentSource(),
    skipRequest("uid-guessed"),
    { bypass: new FakeBypass(false) },
  );
  assert.equal(verdict.outcome, "denied_unconfirmed");
});

Deno.test("DeletionValidator.validate() with a bypass authorizer fails closed when kcp cannot answer", async () => {
  const verdict = await validate(
    registryOf(VM_RULE),
    new FakeDependentSource(),
    skipRequest(),
    {
      bypass: new FakeBypass({
        error: new KubeApiError("POST subjectaccessreviews: 500", {
          status: 500,
        }),
      }),
    },
  );
  assert.equal(verdict.outcome, "denied_error");
  assert.equal(verdict.response.status?.code, 503);
  assert.match(
    verdict.response.status?.message ?? "",
    /cannot check whether you may bypass its protection \(POST subjectaccessreviews: 500\)/,
  );
});

Deno.test("DeletionValidator.validate() with a bypass authorizer asks nothing for a type no rule protects", async () => {
  const bypass = new FakeBypass(false);
  const request = skipRequest();
  const verdict = await validate(
    registryOf(VM_RULE),
    new FakeDependentSource(),
    {
      ...request,
      resource: { ...SUBNETS },
    },
    { bypass },
  );
  assert.equal(verdict.outcome, "allowed");
  assert.deepEqual(bypass.queries, []);
});

// ---------------------------------------------------------------------------
// List paths and namespace paths

/** A rule whose dependency has a namespace path beside its path. */
function crossNamespaceRule(
  name: string,
  type: DependentType,
  path: string,
  namespacePath: string,
  target: GroupVersionResource = VPCS,
): ClusterRule {
  return {
    cluster: "provider1",
    rule: validRule(name, type, [{
      ...dependency(target, path),
      fieldRef: { path, namespacePath },
    }]),
  };
}

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

Deno.test("DeletionValidator.validate() names the list element that refers to the object", async () => {
  const registry = registryOf(
    rule("nics", VIRTUAL_MACHINES, [".spec.nics[*].subnetRef.name"]),
  );
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[
        vmWithNics("vm-1", ["other", "vpc-a", "other"]),
        vmWithNics("vm-2", ["other"]),
        vmWithNics("vm-3", ["vpc-a", "x", "vpc-a"]),
      ]],
    },
  });
  const verdict = await validate(registry, source, deleteRequest());
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.nics[1].subnetRef.name), VirtualMachine/vm-3 (.spec.nics[0].subnetRef.name, .spec.nics[2].subnetRef.name)",
      2,
    ),
  );
  // Without a namespace path only the object's namespace is listed.
  assert.deepEqual(source.plainQueries.map((q) => q.namespace), ["default"]);
});

Deno.test("DeletionValidator.validate() names at most three fields of one dependent and counts the rest", async () => {
  const registry = registryOf(
    rule("nics", VIRTUAL_MACHINES, [".spec.nics[*].subnetRef.name"]),
  );
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[vmWithNics("vm-1", Array(1000).fill("vpc-a"))]],
    },
  });
  const verdict = await validate(registry, source, deleteRequest());
  assert.equal(
    verdict.response.status?.message,
    "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.nics[0].subnetRef.name, .spec.nics[1].subnetRef.name, .spec.nics[2].subnetRef.name, and 997 more)",
  );
});

Deno.test("DeletionValidator.validate() lists every namespace for a namespace path and blocks only references to the object's namespace", async () => {
  const registry = registryOf(
    crossNamespaceRule(
      "cross",
      VIRTUAL_MACHINES,
      ".spec.nics[*].subnetRef.name",
      ".spec.nics[*].subnetRef.namespace",
    ),
  );
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[
        // Refers to default/vpc-a from team-a: blocks.
        vmWithNics("from-a", ["team-a/vpc-a", "default/vpc-a"], "team-a"),
        // Refers to team-a/vpc-a (its own namespace): does not block.
        vmWithNics("own-a", ["vpc-a"], "team-a"),
        // Refers to vpc-a in its own namespace, default: blocks.
        vmWithNics("own-default", ["x", "vpc-a"], "default"),
        // An empty namespace means the dependent's own.
        vmWithNics("empty-ns", ["/vpc-a"], "team-b"),
      ]],
    },
  });
  const verdict = await validate(registry, source, deleteRequest());
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/own-default (.spec.nics[1].subnetRef.name), VirtualMachine/team-a/from-a (.spec.nics[1].subnetRef.name)",
      2,
    ),
  );
  assert.deepEqual(source.plainQueries.map((q) => q.namespace), [undefined]);
});

Deno.test("DeletionValidator.validate() lets a cluster-scoped dependent protect a namespaced object only with a namespace path", async () => {
  const attachment = (name: string, ref: Record<string, unknown>) => ({
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: { name },
    spec: { vpcRef: ref },
  });
  const items = [
    attachment("named-in-default", { name: "vpc-a", namespace: "default" }),
    attachment("no-namespace", { name: "vpc-a" }),
    attachment("other-namespace", { name: "vpc-a", namespace: "team-a" }),
  ];
  const withPath = await validate(
    registryOf(
      crossNamespaceRule(
        "cross",
        VIRTUAL_MACHINES,
        ".spec.vpcRef.name",
        ".spec.vpcRef.namespace",
      ),
    ),
    new FakeDependentSource({ virtualmachines: { pages: [items] } }),
    deleteRequest(),
  );
  assert.deepEqual(
    withPath,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/named-in-default (.spec.vpcRef.name)",
      1,
    ),
  );
  // Without a namespace path the listing stays in the object's namespace,
  // and a cluster-scoped item found there still refers to no namespace.
  const source = new FakeDependentSource({
    virtualmachines: { pages: [items] },
  });
  const without = await validate(
    registryOf(VM_RULE),
    source,
    deleteRequest(),
  );
  assert.deepEqual(without, ALLOWED);
  assert.deepEqual(source.plainQueries.map((q) => q.namespace), ["default"]);
});

Deno.test("DeletionValidator.validate() ignores namespaces for a cluster-scoped object", async () => {
  const registry = registryOf(
    crossNamespaceRule(
      "cross",
      VIRTUAL_MACHINES,
      ".spec.vpcRef.name",
      ".spec.vpcRef.namespace",
    ),
  );
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[{
        ...vm("vm-1", "vpc-a", "team-a"),
        spec: { vpcRef: { name: "vpc-a", namespace: "elsewhere" } },
      }]],
    },
  });
  const verdict = await validate(
    registry,
    source,
    clusterScopedDeleteRequest(),
  );
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/team-a/vm-1 (.spec.vpcRef.name)",
      1,
    ),
  );
});

Deno.test("DeletionValidator.validate() lists a type once when only one of its rules has a namespace path, and keeps the other to its namespace", async () => {
  const registry = registryOf(
    VM_RULE,
    crossNamespaceRule(
      "cross",
      VIRTUAL_MACHINES,
      ".spec.altVpcRef.name",
      ".spec.altVpcRef.namespace",
    ),
  );
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[
        // .spec.vpcRef.name has no namespace path: team-a/vpc-a, no block.
        vm("own-path", "vpc-a", "team-a"),
        {
          ...vm("alt-path", "x", "team-a"),
          spec: { altVpcRef: { name: "vpc-a", namespace: "default" } },
        },
      ]],
    },
  });
  const verdict = await validate(registry, source, deleteRequest());
  assert.deepEqual(
    verdict,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/team-a/alt-path (.spec.altVpcRef.name)",
      1,
    ),
  );
  assert.deepEqual(source.listed, ["virtualmachines"]);
  assert.deepEqual(source.plainQueries.map((q) => q.namespace), [undefined]);
});

Deno.test("DeletionValidator.validate() with a provider applies only the rules about that provider's export", async () => {
  const other: ClusterRule = {
    cluster: "provider1",
    rule: validRule("other-provider", VIRTUAL_MACHINES, [{
      ...dependency(VPCS, ".spec.altVpcRef.name"),
      apiExportRef: { path: "root:providers:network2", name: VPCS.group },
    }]),
  };
  const registry = registryOf(VM_RULE, other);
  const items = [{
    ...vm("vm-1", "x"),
    spec: { vpcRef: { name: "x" }, altVpcRef: { name: "vpc-a" } },
  }];
  // Every rule applies without a provider: the other provider's rule blocks.
  const all = await validate(
    registry,
    new FakeDependentSource({ virtualmachines: { pages: [items] } }),
    deleteRequest(),
  );
  assert.equal(all.outcome, "denied_referenced");
  // The first provider's configuration: only VM_RULE, which finds nothing.
  const source = new FakeDependentSource({
    virtualmachines: { pages: [items] },
  });
  const own = await new DeletionValidator(registry, source).validate(
    deleteRequest(),
    { provider: "root:providers:network" },
  );
  assert.deepEqual(own, ALLOWED);
  // The second provider's: its rule blocks.
  const second = await new DeletionValidator(
    registry,
    new FakeDependentSource({ virtualmachines: { pages: [items] } }),
  ).validate(deleteRequest(), { provider: "root:providers:network2" });
  assert.deepEqual(
    second,
    referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.altVpcRef.name)",
      1,
    ),
  );
  // A provider no rule is about: allowed without reading kcp.
  const none = new FakeDependentSource({});
  assert.deepEqual(
    await new DeletionValidator(registry, none).validate(deleteRequest(), {
      provider: "root:elsewhere",
    }),
    ALLOWED,
  );
  assert.deepEqual(none.queries, []);
  assert.deepEqual(none.objectQueries, []);
});

// ---------------------------------------------------------------------------
// Locks

/** An index holding one Lock `prod` in `default` on vpcs/vpc-a of `consumer1`. */
function lockIndex(
  operations: ("Delete" | "Update")[] = ["Delete"],
  reason = "production VPC",
): LockIndex {
  const index = new LockIndex();
  index.replace([{
    cluster: "consumer1",
    lock: validLock("prod", "default", {
      target: { ...VPCS, name: "vpc-a" },
      reason,
      operations,
    }),
  }]);
  return index;
}

const LOCKED =
  'cannot delete vpcs/vpc-a: locked by Lock default/prod ("production VPC"): deleting the Lock unlocks it; the skip-protection annotation does not';

Deno.test("DeletionValidator.validate() denies the delete of a locked object with the Lock's reason, after confirming it", async () => {
  const source = new FakeDependentSource({});
  const verdict = await validate(registryOf(), source, deleteRequest(), {
    locks: lockIndex(),
  });
  assert.deepEqual(verdict, {
    response: {
      uid: UID,
      allowed: false,
      status: { code: 409, reason: "Conflict", message: LOCKED },
    },
    outcome: "denied_locked",
  });
  assert.equal(source.objectQueries.length, 1);
  assert.deepEqual(source.queries, []);
});

Deno.test("DeletionValidator.validate() names both the Lock and the references", async () => {
  const verdict = await validate(
    registryOf(VM_RULE),
    new FakeDependentSource({
      virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
    }),
    deleteRequest(),
    { locks: lockIndex() },
  );
  assert.equal(verdict.outcome, "denied_locked");
  assert.equal(
    verdict.response.status?.message,
    `${LOCKED}; also still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
  );
});

Deno.test("DeletionValidator.validate() does not let the skip-protection annotation override a Lock", async () => {
  const skipping = deleteRequest({
    oldObject: vpc("vpc-a", {
      namespace: "default",
      annotations: { "kcp.io/cluster": "consumer1", [SKIP]: "true" },
    }),
  });
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  const verdict = await validate(registryOf(VM_RULE), source, skipping, {
    locks: lockIndex(),
  });
  // The references are let through by the annotation, the Lock is not.
  assert.equal(verdict.outcome, "denied_locked");
  assert.equal(verdict.response.status?.message, LOCKED);
  assert.deepEqual(source.queries, []);
  // Without the Lock the annotation lets the delete through.
  const unlocked = new LockIndex();
  unlocked.replace([]);
  assert.equal(
    (await validate(
      registryOf(VM_RULE),
      new FakeDependentSource({}),
      skipping,
      {
        locks: unlocked,
      },
    )).outcome,
    "allowed_skip",
  );
});

Deno.test("DeletionValidator.validate() learns nothing of a Lock from a review the live object does not confirm", async () => {
  const verdict = await validate(
    registryOf(),
    new FakeDependentSource({}, { uid: "someone-else" }),
    deleteRequest(),
    { locks: lockIndex() },
  );
  assert.equal(verdict.outcome, "denied_unconfirmed");
  assert.doesNotMatch(verdict.response.status?.message ?? "", /production/);
});

Deno.test("DeletionValidator.validate() denies an UPDATE only of an object locked for Update", async () => {
  const update = deleteRequest({ operation: "UPDATE" });
  const forDelete = await validate(
    registryOf(),
    new FakeDependentSource({}),
    update,
    {
      locks: lockIndex(["Delete"]),
    },
  );
  assert.deepEqual(forDelete, ALLOWED);
  const forUpdate = await validate(
    registryOf(),
    new FakeDependentSource({}),
    update,
    {
      locks: lockIndex(["Delete", "Update"]),
    },
  );
  assert.equal(forUpdate.outcome, "denied_locked");
  assert.match(
    forUpdate.response.status?.message ?? "",
    /^cannot update vpcs\/vpc-a: locked by Lock default\/prod/,
  );
  // Without Locks an UPDATE is never looked at.
  assert.deepEqual(
    await validate(registryOf(), new FakeDependentSource({}), update),
    ALLOWED,
  );
});

Deno.test("DeletionValidator.validate() denies as not ready until the Locks are loaded", async () => {
  const verdict = await validate(
    registryOf(),
    new FakeDependentSource({}),
    deleteRequest(),
    {
      locks: new LockIndex(),
    },
  );
  assert.equal(verdict.outcome, "denied_not_ready");
});

Deno.test("DeletionValidator.validate() applies no Lock of another workspace or object", async () => {
  const locks = lockIndex();
  for (
    const request of [
      deleteRequest({
        name: "vpc-b",
        oldObject: vpc("vpc-b", { namespace: "default" }),
      }),
      deleteRequest({
        oldObject: vpc("vpc-a", {
          namespace: "default",
          annotations: { "kcp.io/cluster": "consumer2" },
        }),
      }),
    ]
  ) {
    assert.deepEqual(
      await validate(registryOf(), new FakeDependentSource({}), request, {
        locks,
      }),
      ALLOWED,
    );
  }
});

Deno.test("DeletionValidator.validate() reads a locked Namespace as the cluster-scoped object it is", async () => {
  const locks = new LockIndex();
  locks.replace([{
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
  const source = new FakeDependentSource({});
  const verdict = await validate(registryOf(), source, {
    ...deleteRequest(),
    kind: { group: "", version: "v1", kind: "Namespace" },
    resource: { group: "", version: "v1", resource: "namespaces" },
    name: "team-a",
    // The API server names a Namespace's own name as the request's namespace.
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
  }, { locks });
  assert.equal(verdict.outcome, "denied_locked");
  assert.match(
    verdict.response.status?.message ?? "",
    /^cannot delete namespaces\/team-a: locked by Lock team-a\/home \("tenant home"\)/,
  );
  // The live object is read as cluster-scoped.
  assert.equal(source.objectQueries[0]?.namespace, undefined);
  assert.equal(source.objectQueries[0]?.name, "team-a");
});

// ---------------------------------------------------------------------------
// A workspace kcp is deleting

const WORKSPACE_DELETING: Verdict = {
  response: { uid: UID, allowed: true },
  outcome: "allowed_workspace_deleting",
};
const MARKED = new Date("2026-11-24T22:00:00Z");
/** A clock `ms` after the workspace was marked for deletion. */
function after(ms: number): () => number {
  return () => MARKED.getTime() + ms;
}
const VM_1_BLOCKS =
  "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";

Deno.test("DeletionValidator.validate() keeps references ordering a workspace's teardown until teardownOrderMs after kcp marked it, then lets go", async () => {
  const within = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  within.deletedAt = MARKED;
  assert.deepEqual(
    await validate(registryOf(VM_RULE), within, deleteRequest(), {
      teardownOrderMs: 60_000,
      now: after(59_999),
    }),
    referenced(VM_1_BLOCKS, 1),
  );
  assert.deepEqual(within.workspaceQueries, ["consumer1"]);
  const past = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  past.deletedAt = MARKED;
  assert.deepEqual(
    await validate(registryOf(VM_RULE), past, deleteRequest(), {
      teardownOrderMs: 60_000,
      now: after(60_000),
    }),
    WORKSPACE_DELETING,
  );
  // 0: nothing in a workspace being deleted is protected at all.
  const zero = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  zero.deletedAt = MARKED;
  assert.deepEqual(
    await validate(registryOf(VM_RULE), zero, deleteRequest(), {
      teardownOrderMs: 0,
      now: after(0),
    }),
    WORKSPACE_DELETING,
  );
  // Nothing refers to it: allowed without asking about the workspace.
  const free = new FakeDependentSource({ virtualmachines: { pages: [[]] } });
  free.deletedAt = MARKED;
  assert.deepEqual(
    await validate(registryOf(VM_RULE), free, deleteRequest()),
    ALLOWED,
  );
  assert.deepEqual(free.workspaceQueries, []);
});

Deno.test("DeletionValidator.validate() lets no Lock hold in a workspace being deleted, while references still order it", async () => {
  const lockedOnly = new FakeDependentSource({});
  lockedOnly.deletedAt = MARKED;
  assert.deepEqual(
    await validate(registryOf(), lockedOnly, deleteRequest(), {
      locks: lockIndex(),
      now: after(0),
    }),
    WORKSPACE_DELETING,
  );
  const lockedAndReferenced = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  lockedAndReferenced.deletedAt = MARKED;
  assert.deepEqual(
    await validate(registryOf(VM_RULE), lockedAndReferenced, deleteRequest(), {
      locks: lockIndex(),
      now: after(0),
    }),
    referenced(VM_1_BLOCKS, 1),
  );
  const beyond = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  beyond.deletedAt = MARKED;
  assert.deepEqual(
    await validate(registryOf(VM_RULE), beyond, deleteRequest(), {
      locks: lockIndex(),
      teardownOrderMs: 1_000,
      now: after(1_000),
    }),
    WORKSPACE_DELETING,
  );
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

/** An index holding one Lock `prod` in `default` on vpcs/other of `consumer1`: it covers the type, not vpc-a. */
function otherLocked(): LockIndex {
  const index = new LockIndex();
  index.replace([{
    cluster: "consumer1",
    lock: validLock("prod", "default", {
      target: { ...VPCS, name: "other" },
      reason: "production VPC",
    }),
  }]);
  return index;
}

Deno.test("DeletionValidator.validate() answers a forged review of a type Locks cover alike, held or not", async () => {
  const forged = { uid: "someone-else" };
  const held = await validate(
    registryOf(),
    new FakeDependentSource({}, forged),
    deleteRequest(),
    { locks: lockIndex() },
  );
  const free = await validate(
    registryOf(),
    new FakeDependentSource({}, forged),
    deleteRequest(),
    { locks: otherLocked() },
  );
  assert.equal(held.outcome, "denied_unconfirmed");
  assert.deepEqual(free, held);
  // With the skip-protection annotation too.
  const skipping = deleteRequest({
    oldObject: vpc("vpc-a", {
      namespace: "default",
      annotations: { "kcp.io/cluster": "consumer1", [SKIP]: "true" },
    }),
  });
  assert.deepEqual(
    await validate(
      registryOf(),
      new FakeDependentSource({}, forged),
      skipping,
      {
        locks: otherLocked(),
      },
    ),
    held,
  );
  // A real review of the free object is allowed after the one read.
  const source = new FakeDependentSource({});
  assert.deepEqual(
    await validate(registryOf(), source, deleteRequest(), {
      locks: otherLocked(),
    }),
    ALLOWED,
  );
  assert.equal(source.objectQueries.length, 1);
});

Deno.test("DeletionValidator.validate() holds a locked object it may not read, naming no Lock and no reason", async () => {
  const cannotRead = {
    error: new KubeApiError("GET vpcs/vpc-a: 403", {
      status: 403,
      reason: "Forbidden",
    }),
  };
  const verdict = await validate(
    registryOf(),
    new FakeDependentSource({}, cannotRead),
    deleteRequest(),
    { locks: lockIndex() },
  );
  assert.deepEqual(verdict, {
    response: {
      uid: UID,
      allowed: false,
      status: {
        code: 409,
        reason: "Conflict",
        message:
          "cannot delete vpcs/vpc-a: a Lock may hold it, and the dependency webhook may not read vpcs to say which: " +
          "see the Locks in its namespace (kubectl get locks -n default); deleting the Lock unlocks it",
      },
    },
    outcome: "denied_locked",
  });
  // A free object of that type is let through: reading it is not ours to grant.
  assert.deepEqual(
    await validate(
      registryOf(),
      new FakeDependentSource({}, cannotRead),
      deleteRequest(),
      { locks: otherLocked() },
    ),
    ALLOWED,
  );
});

Deno.test("DeletionValidator.validate() does not report a workspace it cannot read at all as a missing grant", async () => {
  const denied = new KubeApiError("403", { status: 403, reason: "Forbidden" });
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } }, {
    error: denied,
  });
  // The LogicalCluster is refused too: the workspace does not exist (kcp
  // answers 403 for it), or the webhook has no access on its shard.
  source.deletedAt = { error: denied };
  const verdict = await validate(registryOf(VM_RULE), source, deleteRequest());
  assert.equal(verdict.outcome, "denied_error");
  assert.equal(verdict.forbidden, undefined);
  assert.equal(
    verdict.response.status?.message,
    'cannot delete vpcs/vpc-a: the dependency webhook cannot read the workspace "consumer1": ' +
      "it does not exist, or the webhook's access is not granted on its shard " +
      "(manifests/kcp/system-admin in that shard's system:admin); the delete is denied until it may: " +
      "retry later, or set the annotation dependencies.opendefense.cloud/skip-protection=true on the object to delete it anyway",
  );
  assert.deepEqual(source.workspaceQueries, ["consumer1"]);
  // When the workspace can be read, the 403 is the missing grant it says.
  const granted = new FakeDependentSource(
    { virtualmachines: { pages: [[]] } },
    {
      error: denied,
    },
  );
  assert.deepEqual(
    await validate(registryOf(VM_RULE), granted, deleteRequest()),
    forbidden("get", VPCS),
  );
});

// ---------------------------------------------------------------------------
// A rule counts only the dependents bound from its own dependent export

/**
 * The provider's rule (its export has identity `real`) and a tenant's
 * look-alike: the same dependent group and resource from an export of its
 * own (identity `fake`), naming the VPC through `.metadata.name`.
 */
function lookAlikeRegistry(): RuleRegistry {
  const tenant: ClusterRule = {
    ...rule("look-alike", VIRTUAL_MACHINES, [".metadata.name"]),
    cluster: "tenant1",
  };
  const registry = new RuleRegistry();
  registry.replace([VM_RULE, tenant], {
    identities: new Map([
      ["provider1/vm-needs-vpc", "real"],
      ["tenant1/look-alike", "fake"],
    ]),
  });
  return registry;
}

Deno.test("DeletionValidator.validate() applies a rule only to dependents bound from its own dependent export", async () => {
  // vm "vpc-a" refers to nothing, but its name matches the look-alike's path.
  const pages = { virtualmachines: { pages: [[vm("vpc-a", "other")]] } };
  const source = new FakeDependentSource(pages);
  source.bound = new Map([["compute.example.com/virtualmachines", "real"]]);
  assert.deepEqual(
    await validate(lookAlikeRegistry(), source, deleteRequest()),
    ALLOWED,
  );
  // Dropping the look-alike's rule takes a fresh read of the bindings.
  assert.deepEqual(source.boundFresh, [false, true]);
  // A VM that does refer through the provider's field still blocks.
  const referring = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  referring.bound = new Map([["compute.example.com/virtualmachines", "real"]]);
  assert.equal(
    (await validate(lookAlikeRegistry(), referring, deleteRequest())).outcome,
    "denied_referenced",
  );
  // A workspace that binds VirtualMachines from the tenant's export: only
  // the tenant's rule speaks of them.
  const tenants = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  tenants.bound = new Map([["compute.example.com/virtualmachines", "fake"]]);
  assert.deepEqual(
    await validate(lookAlikeRegistry(), tenants, deleteRequest()),
    ALLOWED,
  );
});

Deno.test("DeletionValidator.validate() drops a rule only on a fresh read of the bindings: a kept answer may only make it count", async () => {
  // The kept answer predates the consumer's binding of VirtualMachines;
  // the fresh one has it, from the provider's export.
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  source.keptBound = new Map();
  source.bound = new Map([["compute.example.com/virtualmachines", "real"]]);
  const verdict = await validate(lookAlikeRegistry(), source, deleteRequest());
  assert.equal(verdict.outcome, "denied_referenced");
  assert.match(verdict.response.status?.message ?? "", /VirtualMachine\/vm-1/);
  assert.deepEqual(source.boundFresh, [false, true]);
  // A kept answer that has the rule's export: no second read.
  const kept = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vm-1", "vpc-a")]] },
  });
  kept.bound = new Map([["compute.example.com/virtualmachines", "real"]]);
  const registry = new RuleRegistry();
  registry.replace([VM_RULE], {
    identities: new Map([["provider1/vm-needs-vpc", "real"]]),
  });
  assert.equal(
    (await validate(registry, kept, deleteRequest())).outcome,
    "denied_referenced",
  );
  assert.deepEqual(kept.boundFresh, [false]);
});

Deno.test("DeletionValidator.validate() counts every rule when the workspace's bindings cannot be read (fail closed)", async () => {
  const source = new FakeDependentSource({
    virtualmachines: { pages: [[vm("vpc-a", "other")]] },
  });
  source.bound = { error: new Error("403 Forbidden") };
  const verdict = await validate(lookAlikeRegistry(), source, deleteRequest());
  assert.equal(verdict.outcome, "denied_referenced");
  assert.match(
    verdict.response.status?.message ?? "",
    /VirtualMachine\/vpc-a \(\.metadata\.name\)/,
  );
});

Deno.test("DeletionValidator.validate() reads no bindings for rules without a known export identity", async () => {
  const source = new FakeDependentSource({ virtualmachines: { pages: [[]] } });
  await validate(registryOf(VM_RULE), source, deleteRequest());
  assert.equal(source.boundReads, 0);
});
