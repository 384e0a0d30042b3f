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
import {
  type Blocker,
  type Outcome,
  UNCONFIRMED_MESSAGE,
  type Verdict,
} from "./verdicts.ts";
import { KubeApiError } from "../kcp/mod.ts";
import { LockIndex } from "../locks/mod.ts";
import { DeadlineExceeded } from "../runtime/mod.ts";
import {
  dependency,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

const UID = "705ab4f5-6393-11e8-b7cc-42010a800002";
const SKIP = "dependencies.opendefense.cloud/skip-protection";

// ---------------------------------------------------------------------------
// Plans, built by planReview from a request as a validator does

/** How the DELETE (or UPDATE) of vpcs/vpc-a is planned. */
interface PlanOptions {
  /** The name of the VPC a Lock `prod` holds (for deletes, and updates with `update`). */
  lock?: string;
  /** What the Lock holds. @default {["Delete"]} */
  operations?: ("Delete" | "Update")[];
  /** The request is an UPDATE. */
  update?: boolean;
  /** No rule protects VPCs (VirtualMachines refer to them otherwise). */
  noRules?: boolean;
  /** The object carries the skip-protection annotation. */
  skip?: boolean;
  /** The annotation counts only for users kcp allows `bypass`. */
  authorized?: boolean;
  /** The VPC is cluster-scoped. */
  clusterScoped?: boolean;
}

function plan(options: PlanOptions = {}): ReviewPlan {
  const rules = new RuleRegistry();
  rules.replace(
    options.noRules ? [] : [{
      cluster: "provider1",
      rule: validRule("vm-needs-vpc", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    }],
  );
  const locks = new LockIndex();
  locks.replace(
    options.lock === undefined ? [] : [{
      cluster: "consumer1",
      lock: validLock("prod", "default", {
        target: { ...VPCS, name: options.lock },
        reason: "production VPC",
        operations: options.operations ?? ["Delete"],
      }),
    }],
  );
  const namespace = options.clusterScoped ? {} : { namespace: "default" };
  return planOf({
    uid: UID,
    kind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
    resource: { ...VPCS },
    name: "vpc-a",
    namespace: options.clusterScoped ? "" : "default",
    operation: options.update ? "UPDATE" : "DELETE",
    userInfo: { username: "alice", groups: ["system:authenticated"] },
    oldObject: {
      metadata: {
        name: "vpc-a",
        ...namespace,
        uid: "uid-vpc-a",
        annotations: {
          "kcp.io/cluster": "consumer1",
          ...(options.skip ? { [SKIP]: "true" } : {}),
        },
      },
    },
  }, {
    loaded: true,
    protectionsOf: (resource) => rules.find(resource),
    locks,
    authorizedBypass: options.authorized ?? false,
  });
}

/** The DELETE of the Namespace team-a, held by the Lock team-a/home. */
function namespacePlan(): ReviewPlan {
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
  return planOf({
    uid: UID,
    kind: { group: "", version: "v1", kind: "Namespace" },
    resource: { group: "", version: "v1", resource: "namespaces" },
    name: "team-a",
    namespace: "team-a",
    operation: "DELETE",
    userInfo: { username: "alice" },
    oldObject: {
      metadata: {
        name: "team-a",
        uid: "uid-team-a",
        annotations: { "kcp.io/cluster": "consumer1" },
      },
    },
  }, { loaded: true, protectionsOf: () => [], locks, authorizedBypass: false });
}

function planOf(request: AdmissionRequest, context: PlanContext): ReviewPlan {
  const step = planReview(request, context);
  assert.ok("plan" in step, "a plan");
  return step.plan;
}

// ---------------------------------------------------------------------------
// Readings, by hand

const OK = { status: "fulfilled", value: true } as const;
const GONE = { status: "fulfilled", value: false } as const;
const fail = (reason: unknown) => ({ status: "rejected", reason }) as const;

/** `total` dependents refer to the object, the first of them `named`. */
function found(
  total: number,
  ...named: Blocker[]
): PromiseSettledResult<Blockers> {
  return { status: "fulfilled", value: { named, total } };
}

/** A VirtualMachine referring through `paths` (`.spec.vpcRef.name` by default). */
function vm(
  name: string,
  namespace = "default",
  ...paths: string[]
): Blocker {
  return {
    kind: "VirtualMachine",
    namespace,
    name,
    paths: paths.length === 0 ? [".spec.vpcRef.name"] : paths,
  };
}

function lb(name: string, namespace = "default"): Blocker {
  return {
    kind: "LoadBalancer",
    namespace,
    name,
    paths: [".spec.vpcRef.name"],
  };
}

const FORBIDDEN_GET = new Forbidden("get", VPCS);
const FORBIDDEN_LIST = new Forbidden("list", VIRTUAL_MACHINES);

// ---------------------------------------------------------------------------
// Verdicts

const ALLOWED: Verdict = {
  response: { uid: UID, allowed: true },
  outcome: "allowed",
};
const ALLOWED_SKIP: Verdict = {
  response: { uid: UID, allowed: true },
  outcome: "allowed_skip",
};
const WORKSPACE_DELETING: Verdict = {
  response: { uid: UID, allowed: true },
  outcome: "allowed_workspace_deleting",
};
const UNCONFIRMED: Verdict = {
  response: {
    uid: UID,
    allowed: false,
    status: { code: 409, reason: "Conflict", message: UNCONFIRMED_MESSAGE },
  },
  outcome: "denied_unconfirmed",
};

function denied(
  code: number,
  reason: string,
  message: string,
  outcome: Outcome,
): Verdict {
  return {
    response: { uid: UID, allowed: false, status: { code, reason, message } },
    outcome,
  };
}

/** The 409 denial naming blockers. */
function referenced(message: string, blockers: number): Verdict {
  return {
    ...denied(409, "Conflict", message, "denied_referenced"),
    blockers,
  };
}

function locked(message: string): Verdict {
  return denied(409, "Conflict", message, "denied_locked");
}

const FAIL_CLOSED =
  "retry later, or set the annotation dependencies.opendefense.cloud/skip-protection=true on the object to delete it anyway";

/** The 503 that fails closed on `what` until `until`. */
function unavailable(what: string, until: string): Verdict {
  return denied(
    503,
    "ServiceUnavailable",
    `cannot delete vpcs/vpc-a: ${what}; the delete is denied until ${until}: ${FAIL_CLOSED}`,
    "denied_error",
  );
}

/** The 503 for a failed check whose detail is `detail`. */
function failedCheck(detail: string): Verdict {
  return unavailable(
    `cannot check whether other objects still refer to it (${detail})`,
    "they can be checked",
  );
}

/** The 503 when kcp refuses our identity `verb` on `type`. */
function forbidden(
  verb: "get" | "list",
  type: { group: string; resource: string },
): Verdict {
  const shown = `${type.resource}.${type.group}`;
  return {
    ...unavailable(
      `the webhook's identity may not ${verb} ${shown} in this workspace (403 Forbidden): ` +
        `grant "${verb}" on ${shown} to it in system:admin of every shard (controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -)`,
      "it may",
    ),
    forbidden: { verb, group: type.group, resource: type.resource },
  };
}

const VM_1_BLOCKS =
  "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";
const LOCKED =
  'cannot delete vpcs/vpc-a: locked by Lock default/prod ("production VPC"): deleting the Lock unlocks it; the skip-protection annotation does not';

/** `vm-01` ... `vm-12`. */
const TWELVE = Array.from(
  { length: 12 },
  (_, i) => `vm-${String(i + 1).padStart(2, "0")}`,
);

// ---------------------------------------------------------------------------
// foldReview

interface FoldCase {
  name: string;
  plan: ReviewPlan;
  readings: ReviewReadings;
  /** The exact verdict, or its outcome and (matching) message. */
  want: Verdict | { outcome: Outcome; code: number; message: RegExp };
  /** What the message must not say. */
  unsaid?: RegExp;
}

const FOLD_CASES: FoldCase[] = [
  // No Lock: the references decide.
  {
    name: "references: none refer",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(0) },
    want: ALLOWED,
  },
  {
    name:
      "references: one refers, named without its namespace (the object's own)",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    want: referenced(VM_1_BLOCKS, 1),
    unsaid: /default/,
  },
  {
    name: "references: two refer, named in the order kept",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(2, vm("vm-1"), vm("vm-2")) },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.vpcRef.name)",
      2,
    ),
  },
  {
    name: "references: ten of twelve named, then how many more",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(12, ...TWELVE.slice(0, 10).map((n) => vm(n))),
    },
    want: referenced(
      `cannot delete vpcs/vpc-a: still referenced by ${
        TWELVE.slice(0, 10).map((n) =>
          `VirtualMachine/${n} (.spec.vpcRef.name)`
        )
          .join(", ")
      } and 2 more`,
      12,
    ),
  },
  {
    name: "references: two of three named",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(3, vm("vm-1"), vm("vm-2")) },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.vpcRef.name) and 1 more",
      3,
    ),
  },
  {
    name: "references: one dependent through two field paths, named once",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(
        2,
        vm("vm-1", "default", ".spec.vpcRef.name", ".spec.backupVpcRef.name"),
        vm("vm-2", "default", ".spec.backupVpcRef.name"),
      ),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name, .spec.backupVpcRef.name), " +
        "VirtualMachine/vm-2 (.spec.backupVpcRef.name)",
      2,
    ),
  },
  {
    name: "references: two dependent types",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(2, lb("lb-1"), vm("vm-1")) },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "LoadBalancer/lb-1 (.spec.vpcRef.name), " +
        "VirtualMachine/vm-1 (.spec.vpcRef.name)",
      2,
    ),
  },
  {
    name: "references: a LoadBalancer",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, lb("lb-1")) },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by LoadBalancer/lb-1 (.spec.vpcRef.name)",
      1,
    ),
  },
  {
    name: "references: the list elements that refer",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(
        2,
        vm("vm-1", "default", ".spec.nics[1].subnetRef.name"),
        vm(
          "vm-3",
          "default",
          ".spec.nics[0].subnetRef.name",
          ".spec.nics[2].subnetRef.name",
        ),
      ),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.nics[1].subnetRef.name), VirtualMachine/vm-3 (.spec.nics[0].subnetRef.name, .spec.nics[2].subnetRef.name)",
      2,
    ),
  },
  {
    name: "references: three fields of one dependent and the rest counted",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(
        1,
        vm(
          "vm-1",
          "default",
          ".spec.nics[0].subnetRef.name",
          ".spec.nics[1].subnetRef.name",
          ".spec.nics[2].subnetRef.name",
          "and 997 more",
        ),
      ),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.nics[0].subnetRef.name, .spec.nics[1].subnetRef.name, .spec.nics[2].subnetRef.name, and 997 more)",
      1,
    ),
  },
  {
    name: "references: a dependent in another namespace named with it",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(
        2,
        vm("own-default", "default", ".spec.nics[1].subnetRef.name"),
        vm("from-a", "team-a", ".spec.nics[1].subnetRef.name"),
      ),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/own-default (.spec.nics[1].subnetRef.name), VirtualMachine/team-a/from-a (.spec.nics[1].subnetRef.name)",
      2,
    ),
  },
  {
    name: "references: a cluster-scoped dependent named alone",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(1, vm("named-in-default", "")),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/named-in-default (.spec.vpcRef.name)",
      1,
    ),
  },
  {
    name:
      "references: through a namespace-path rule's field, from another namespace",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(1, vm("alt-path", "team-a", ".spec.altVpcRef.name")),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/team-a/alt-path (.spec.altVpcRef.name)",
      1,
    ),
  },
  {
    name: "references: through another provider's field",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(1, vm("vm-1", "default", ".spec.altVpcRef.name")),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.altVpcRef.name)",
      1,
    ),
  },
  {
    name: "references: through a look-alike rule's field",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(1, vm("vpc-a", "default", ".metadata.name")),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vpc-a (.metadata.name)",
      1,
    ),
  },
  {
    name: "cluster-scoped: blockers qualified by their namespace",
    plan: plan({ clusterScoped: true }),
    readings: {
      confirmed: OK,
      blockers: found(2, vm("vm-1", "team-a"), vm("vm-1", "team-b")),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by " +
        "VirtualMachine/team-a/vm-1 (.spec.vpcRef.name), " +
        "VirtualMachine/team-b/vm-1 (.spec.vpcRef.name)",
      2,
    ),
  },
  {
    name: "cluster-scoped: a cluster-scoped blocker without a namespace",
    plan: plan({ clusterScoped: true }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1", "")) },
    want: referenced(VM_1_BLOCKS, 1),
  },
  {
    name: "cluster-scoped: one blocker in a namespace",
    plan: plan({ clusterScoped: true }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1", "team-a")) },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/team-a/vm-1 (.spec.vpcRef.name)",
      1,
    ),
  },
  {
    name: "cluster-scoped: blockers of two types in the order kept",
    plan: plan({ clusterScoped: true }),
    readings: {
      confirmed: OK,
      blockers: found(
        7,
        lb("lb-2", "team-z"),
        ...["vm-01", "vm-05", "vm-09"].map((n) => vm(n, "team-a")),
        ...["vm-03", "vm-07", "vm-12"].map((n) => vm(n, "team-b")),
      ),
    },
    want: referenced(
      "cannot delete vpcs/vpc-a: still referenced by " + [
        "LoadBalancer/team-z/lb-2",
        "VirtualMachine/team-a/vm-01",
        "VirtualMachine/team-a/vm-05",
        "VirtualMachine/team-a/vm-09",
        "VirtualMachine/team-b/vm-03",
        "VirtualMachine/team-b/vm-07",
        "VirtualMachine/team-b/vm-12",
      ].map((n) => `${n} (.spec.vpcRef.name)`).join(", "),
      7,
    ),
  },
  // The live object and the lists: read, or fail closed.
  {
    name: "references: the object is another (or gone): the one generic denial",
    plan: plan(),
    readings: { confirmed: GONE, blockers: found(1, vm("vm-1")) },
    want: UNCONFIRMED,
    unsaid: /vm-1|vpc-a|consumer1/,
  },
  {
    name: "references: the object unreadable, no blocker named",
    plan: plan(),
    readings: {
      confirmed: fail(
        new KubeApiError("GET vpcs/vpc-a: 500: etcd down", { status: 500 }),
      ),
      blockers: found(1, vm("vm-1")),
    },
    want: unavailable(
      "cannot read the object itself (GET vpcs/vpc-a: 500: etcd down)",
      "it can be read",
    ),
    unsaid: /vm-1/,
  },
  {
    name: "references: the object does not answer in time",
    plan: plan(),
    readings: {
      confirmed: fail(new Error("no answer within 50 ms")),
      blockers: found(0),
    },
    want: unavailable(
      "cannot read the object itself (no answer within 50 ms)",
      "it can be read",
    ),
  },
  {
    name: "references: not granted the object",
    plan: plan(),
    readings: { confirmed: fail(FORBIDDEN_GET) },
    want: forbidden("get", VPCS),
  },
  {
    name: "references: an unknown workspace, not a missing grant",
    plan: plan(),
    readings: { confirmed: fail(new UnknownWorkspace("consumer1")) },
    want: unavailable(
      'the dependency webhook cannot read the workspace "consumer1": ' +
        "it does not exist, or the webhook's access is not granted on its shard " +
        "(manifests/kcp/system-admin in that shard's system:admin)",
      "it may",
    ),
  },
  {
    name: "references: a list not granted, the permission carried",
    plan: plan(),
    readings: { confirmed: OK, blockers: fail(FORBIDDEN_LIST) },
    want: forbidden("list", VIRTUAL_MACHINES),
  },
  ...[
    "boom",
    "listing virtualmachines.compute.example.com failed: connection refused (os error 111)",
    "listing virtualmachines.compute.example.com failed: the server is currently unable to handle the request",
    "listing loadbalancers.lb.example.com failed: unavailable",
    "listing virtualmachines.compute.example.com failed: boom",
    "listing virtualmachines.compute.example.com failed: bad URL",
  ].map((detail): FoldCase => ({
    name: `references: a list failed (${detail})`,
    plan: plan(),
    readings: { confirmed: OK, blockers: fail(new Error(detail)) },
    want: failedCheck(detail),
  })),
  {
    name: "references: a list out of time",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: fail(
        new DeadlineExceeded("listing virtualmachines.compute.example.com", 50),
      ),
    },
    want: failedCheck(
      "listing virtualmachines.compute.example.com did not finish within 50 ms",
    ),
  },
  // The annotation in authorized mode.
  {
    name: "bypass: allowed",
    plan: plan({ skip: true, authorized: true }),
    readings: { confirmed: OK, bypass: OK },
    want: ALLOWED_SKIP,
  },
  {
    name: "bypass: refused, naming the permission",
    plan: plan({ skip: true, authorized: true }),
    readings: { confirmed: OK, bypass: GONE },
    want: denied(
      403,
      "Forbidden",
      'cannot delete vpcs/vpc-a: the dependencies.opendefense.cloud/skip-protection annotation lets a delete through only for users allowed "bypass" on protections.dependencies.opendefense.cloud in this workspace, and "alice" is not: ask for that permission, or delete what still refers to the object first',
      "denied_skip_unauthorized",
    ),
  },
  {
    name: "bypass: forged, kcp would allow it",
    plan: plan({ skip: true, authorized: true }),
    readings: { confirmed: GONE, bypass: OK },
    want: UNCONFIRMED,
  },
  {
    name: "bypass: forged, kcp would not allow it",
    plan: plan({ skip: true, authorized: true }),
    readings: { confirmed: GONE, bypass: GONE },
    want: UNCONFIRMED,
  },
  {
    name: "bypass: cannot ask",
    plan: plan({ skip: true, authorized: true }),
    readings: { confirmed: OK, bypass: fail(new Error("503")) },
    want: {
      outcome: "denied_error",
      code: 503,
      message: /cannot check whether you may bypass its protection \(503\)/,
    },
  },
  {
    name: "bypass: kcp cannot answer",
    plan: plan({ skip: true, authorized: true }),
    readings: {
      confirmed: OK,
      bypass: fail(
        new KubeApiError("POST subjectaccessreviews: 500", { status: 500 }),
      ),
    },
    want: {
      outcome: "denied_error",
      code: 503,
      message:
        /cannot check whether you may bypass its protection \(POST subjectaccessreviews: 500\)/,
    },
  },
  // Locks.
  {
    name: "locked, no rule: confirmed",
    plan: plan({ lock: "vpc-a", noRules: true }),
    readings: { confirmed: OK },
    want: locked(LOCKED),
  },
  {
    name: "locked: confirmed, none refer",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(0) },
    want: locked(LOCKED),
  },
  {
    name: "locked: and referenced",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    want: locked(
      `${LOCKED}; also still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
    ),
  },
  {
    name: "locked: a failed list does not matter",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: fail(new Error("boom")) },
    want: locked(LOCKED),
  },
  {
    name: "locked, annotation: held anyway",
    plan: plan({ lock: "vpc-a", skip: true }),
    readings: { confirmed: OK },
    want: locked(LOCKED),
  },
  {
    name: "locked: forged, nothing learnt of the Lock",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: GONE, blockers: found(1, vm("vm-1")) },
    want: UNCONFIRMED,
    unsaid: /production/,
  },
  {
    name: "locked: unreadable type, no Lock and no reason named",
    plan: plan({ lock: "vpc-a", noRules: true }),
    readings: { confirmed: fail(FORBIDDEN_GET) },
    want: locked(
      "cannot delete vpcs/vpc-a: a Lock may hold it, and the dependency webhook may not read vpcs to say which: " +
        "see the Locks in its namespace (kubectl get locks -n default); deleting the Lock unlocks it",
    ),
  },
  {
    name: "a free object of a type Locks cover: allowed once confirmed",
    plan: plan({ lock: "other", noRules: true }),
    readings: { confirmed: OK },
    want: ALLOWED,
  },
  {
    name:
      "a free object of a type Locks cover, unreadable: allowed (not ours to grant)",
    plan: plan({ lock: "other", noRules: true }),
    readings: { confirmed: fail(FORBIDDEN_GET) },
    want: ALLOWED,
  },
  {
    name: "a free object of a type Locks cover, forged: as a held one",
    plan: plan({ lock: "other", noRules: true }),
    readings: { confirmed: GONE },
    want: UNCONFIRMED,
  },
  {
    name:
      "a free object of a type Locks cover, annotation, forged: as a held one",
    plan: plan({ lock: "other", noRules: true, skip: true }),
    readings: { confirmed: GONE },
    want: UNCONFIRMED,
  },
  {
    name: "an UPDATE of an object locked for Update",
    plan: plan({
      lock: "vpc-a",
      operations: ["Delete", "Update"],
      update: true,
      noRules: true,
    }),
    readings: { confirmed: OK },
    want: locked(
      'cannot update vpcs/vpc-a: locked by Lock default/prod ("production VPC"): deleting the Lock unlocks it; the skip-protection annotation does not',
    ),
  },
  {
    name:
      "an UPDATE of an object locked for Delete only: allowed once confirmed",
    plan: plan({ lock: "vpc-a", update: true, noRules: true }),
    readings: { confirmed: OK },
    want: ALLOWED,
  },
  {
    name: "a locked Namespace",
    plan: namespacePlan(),
    readings: { confirmed: OK },
    want: locked(
      'cannot delete namespaces/team-a: locked by Lock team-a/home ("tenant home"): deleting the Lock unlocks it; the skip-protection annotation does not',
    ),
  },
];

Deno.test("foldReview() folds the readings into the verdict, case by case", async (t) => {
  for (const c of FOLD_CASES) {
    await t.step(c.name, () => {
      const verdict = foldReview(c.plan, c.readings);
      if ("response" in c.want) {
        assert.deepEqual(verdict, c.want);
      } else {
        assert.equal(verdict.outcome, c.want.outcome);
        assert.equal(verdict.response.status?.code, c.want.code);
        assert.match(verdict.response.status?.message ?? "", c.want.message);
      }
      if (c.unsaid !== undefined) {
        assert.doesNotMatch(verdict.response.status?.message ?? "", c.unsaid);
      }
    });
  }
});

// ---------------------------------------------------------------------------
// foldTeardown

const MARKED = Date.parse("2026-11-24T22:00:00Z");

interface TeardownCase {
  name: string;
  plan: ReviewPlan;
  readings: ReviewReadings;
  /** How long before now kcp marked the workspace; unset, it is not being deleted. */
  markedAgo?: number;
  teardownOrderMs: number;
  /** The exact verdict, or its outcome. */
  want: Verdict | Outcome;
}

const TEARDOWN_CASES: TeardownCase[] = [
  {
    name: "locked, not being deleted: the denial stands",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(0) },
    teardownOrderMs: 120_000,
    want: locked(LOCKED),
  },
  {
    name: "locked and referenced, not being deleted: the denial stands",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    teardownOrderMs: 0,
    want: locked(
      `${LOCKED}; also still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
    ),
  },
  {
    name: "locked, no rule, marked now: no Lock holds",
    plan: plan({ lock: "vpc-a", noRules: true }),
    readings: { confirmed: OK },
    markedAgo: 0,
    teardownOrderMs: 120_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "locked, none refer, marked 1 s ago: no Lock holds",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(0) },
    markedAgo: 1_000,
    teardownOrderMs: 120_000,
    want: WORKSPACE_DELETING,
  },
  {
    name:
      "locked and referenced, marked now: references still order the teardown",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 0,
    teardownOrderMs: 120_000,
    want: referenced(VM_1_BLOCKS, 1),
  },
  {
    name:
      "locked and referenced, marked 1 s ago: references still order the teardown",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 1_000,
    teardownOrderMs: 120_000,
    want: "denied_referenced",
  },
  {
    name: "locked and referenced, at the end of the order window: let go",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 120_000,
    teardownOrderMs: 120_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "locked and referenced, at the end of a short order window: let go",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 1_000,
    teardownOrderMs: 1_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "referenced, within the order window: the denial stands",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 59_999,
    teardownOrderMs: 60_000,
    want: referenced(VM_1_BLOCKS, 1),
  },
  {
    name: "referenced, marked 1 s ago: the denial stands",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 1_000,
    teardownOrderMs: 120_000,
    want: "denied_referenced",
  },
  {
    name: "referenced, at the end of the order window: let go",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 60_000,
    teardownOrderMs: 60_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "referenced, no order window: nothing protected at all",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vm("vm-1")) },
    markedAgo: 0,
    teardownOrderMs: 0,
    want: WORKSPACE_DELETING,
  },
  {
    name: "an allowed review stays allowed",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(0) },
    markedAgo: 1_000,
    teardownOrderMs: 120_000,
    want: ALLOWED,
  },
];

Deno.test("foldTeardown() releases Locks in a workspace being deleted and references after the order window, case by case", async (t) => {
  const now = MARKED + 600_000;
  for (const c of TEARDOWN_CASES) {
    await t.step(c.name, () => {
      const verdict = foldTeardown(c.plan, c.readings, {
        verdict: foldReview(c.plan, c.readings),
        deletedAt: c.markedAgo === undefined
          ? undefined
          : new Date(now - c.markedAgo),
        now,
        teardownOrderMs: c.teardownOrderMs,
      });
      if (typeof c.want === "string") assert.equal(verdict.outcome, c.want);
      else assert.deepEqual(verdict, c.want);
    });
  }
});

Deno.test("asksTeardown() asks about the workspace only for a denial a teardown releases", async (t) => {
  const cases: [string, ReviewPlan, ReviewReadings, boolean][] = [
    ["locked", plan({ lock: "vpc-a" }), {
      confirmed: OK,
      blockers: found(0),
    }, true],
    ["referenced", plan(), {
      confirmed: OK,
      blockers: found(1, vm("vm-1")),
    }, true],
    ["allowed", plan(), { confirmed: OK, blockers: found(0) }, false],
    ["unconfirmed", plan(), { confirmed: GONE }, false],
    [
      "locked, unconfirmed",
      plan({ lock: "vpc-a" }),
      { confirmed: GONE },
      false,
    ],
  ];
  for (const [name, p, readings, want] of cases) {
    await t.step(name, () => {
      assert.equal(asksTeardown(foldReview(p, readings)), want);
    });
  }
});
