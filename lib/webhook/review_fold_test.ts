import assert from "node:assert/strict";
import type { ReviewPlan } from "./review_plan.ts";
import { asksTeardown, foldReview, foldTeardown } from "./review_fold.ts";
import type { OwnerFindings, OwnerHold } from "./review_owners.ts";
import {
  type Blockers,
  Forbidden,
  type ReviewReadings,
  UnknownWorkspace,
} from "./review_reads.ts";
import {
  type Blocker,
  type Outcome,
  UNCONFIRMED_MESSAGE,
  type Verdict,
} from "./verdicts.ts";
import { KubeApiError } from "../kcp/mod.ts";
import { DeadlineExceeded } from "../runtime/mod.ts";
import type { ClusterRule } from "../rules/mod.ts";
import {
  allowedVerdict,
  assertCausesAgree,
  clusterScopedDeleteRequest,
  deleteRequest,
  deniedVerdict,
  gvrOf,
  LABEL_OWNER_RULE,
  lbBlocker,
  LOAD_BALANCERS,
  LOCKED_MESSAGE as LOCKED,
  NAMESPACE_OWNER_RULE,
  namespaceDeleteRequest,
  namespaceLock,
  networkOwnerRule,
  NETWORKS,
  noLocks,
  OWNER_LABEL_PATH,
  OWNER_REFS_PATH,
  planOf,
  referencedVerdict as referenced,
  REVIEW_UID,
  TWELVE_VMS as TWELVE,
  VIRTUAL_MACHINES,
  VM_1_BLOCKS,
  VM_RULE,
  vmBlocker,
  vpc,
  vpcLock,
  VPCS,
  withoutCauses,
} from "../../testing/fakes.ts";

// ---------------------------------------------------------------------------
// Plans, built by planReview from a request as a validator does

/** Networks own VPCs, which name theirs in their ownerReferences. */
const OWNED_BY_REFERENCE = networkOwnerRule("owned-by-reference", {
  from: "Target",
  path: OWNER_REFS_PATH,
});

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
  /** The rules that protect VPCs. @default {[VM_RULE]} */
  rules?: readonly ClusterRule[];
  /** The object carries the skip-protection annotation. */
  skip?: boolean;
  /** The annotation counts only for users kcp allows `bypass`. */
  authorized?: boolean;
  /** The VPC is cluster-scoped. */
  clusterScoped?: boolean;
}

function plan(options: PlanOptions = {}): ReviewPlan {
  const namespace = options.clusterScoped ? {} : { namespace: "default" };
  const request = options.clusterScoped
    ? clusterScopedDeleteRequest
    : deleteRequest;
  return planOf(
    request({
      operation: options.update ? "UPDATE" : "DELETE",
      oldObject: vpc("vpc-a", {
        ...namespace,
        ...(options.skip ? { skip: "true" } : {}),
      }),
    }),
    {
      rules: options.noRules ? [] : options.rules ?? [VM_RULE],
      locks: options.lock === undefined
        ? noLocks()
        : vpcLock(options.lock, options.operations),
      authorized: options.authorized ?? false,
    },
  );
}

/** The DELETE of the Namespace team-a, held by the Lock team-a/home. */
function namespacePlan(): ReviewPlan {
  return planOf(namespaceDeleteRequest(), {
    rules: [],
    locks: namespaceLock(),
  });
}

/** vpc-a with an owner rule that reads it on the object. */
const OWNED = plan({ rules: [LABEL_OWNER_RULE] });
/** vpc-a with an owner rule that reads it on its Namespace. */
const OWNED_VIA_NS = plan({ rules: [NAMESPACE_OWNER_RULE] });
/** vpc-a with a dependent rule and an owner rule. */
const OWNED_AND_REFERRED = plan({ rules: [VM_RULE, LABEL_OWNER_RULE] });

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

/** The owners `holding` the object, and `unchecked` more named and not looked up. */
function owned(
  unchecked: number,
  ...holding: OwnerHold[]
): PromiseSettledResult<OwnerFindings> {
  return { status: "fulfilled", value: { holding, unchecked } };
}

/** The Network `name` in `default` holds the object through its label. */
function net(name: string, more: Partial<OwnerHold> = {}): OwnerHold {
  return {
    kind: "Network",
    type: gvrOf(NETWORKS),
    rule: "provider1/owned",
    namespace: "default",
    name,
    field: OWNER_LABEL_PATH,
    ...more,
  };
}

const FORBIDDEN_GET = new Forbidden("get", VPCS);
const FORBIDDEN_LIST = new Forbidden("list", VIRTUAL_MACHINES);

// ---------------------------------------------------------------------------
// Verdicts

const ALLOWED = allowedVerdict();
const ALLOWED_SKIP = allowedVerdict("allowed_skip");
const WORKSPACE_DELETING = allowedVerdict("allowed_workspace_deleting");
const UNCONFIRMED: Verdict = {
  response: {
    uid: REVIEW_UID,
    allowed: false,
    status: { code: 409, reason: "Conflict", message: UNCONFIRMED_MESSAGE },
  },
  outcome: "denied_unconfirmed",
};

const denied = deniedVerdict;

function locked(message: string): Verdict {
  return denied(409, "Conflict", message, "denied_locked");
}

/** The 409 denial naming owners (and no dependent). */
function ownedBy(message: string): Verdict {
  return denied(409, "Conflict", message, "denied_owned");
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

/**
 * The 503 for owners that could not be checked, with `detail`; the owner
 * type not read is named (`networks.network.example.com`).
 */
function failedOwners(
  detail: string,
  type: string | null = "networks.network.example.com",
): Verdict {
  return unavailable(
    `cannot check whether the owners it names still hold it (${detail})${
      type === null ? "" : `; ${ownersNotRead(type, detail)}`
    }`,
    "they can be checked",
  );
}

/** What a denial says of owners of `type` it could not look up. */
function ownersNotRead(type: string, detail: string): string {
  return `the dependency webhook could not look up its owners of type ${type}, which may hold it too (${detail})`;
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

/** How the denial of vpc-a reads while net-a holds it through its label. */
const NET_A_OWNS =
  'cannot delete vpcs/vpc-a: it belongs to Network/net-a (.metadata.labels["network.example.com/owner"]), which still exists';

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
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    want: referenced(VM_1_BLOCKS, 1),
    unsaid: /default/,
  },
  {
    name: "references: two refer, named in the order kept",
    plan: plan(),
    readings: {
      confirmed: OK,
      blockers: found(2, vmBlocker("vm-1"), vmBlocker("vm-2")),
    },
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
      blockers: found(12, ...TWELVE.slice(0, 10).map((n) => vmBlocker(n))),
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
    readings: {
      confirmed: OK,
      blockers: found(3, vmBlocker("vm-1"), vmBlocker("vm-2")),
    },
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
        vmBlocker(
          "vm-1",
          "default",
          ".spec.vpcRef.name",
          ".spec.backupVpcRef.name",
        ),
        vmBlocker("vm-2", "default", ".spec.backupVpcRef.name"),
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
    readings: {
      confirmed: OK,
      blockers: found(2, lbBlocker("lb-1"), vmBlocker("vm-1")),
    },
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
    readings: { confirmed: OK, blockers: found(1, lbBlocker("lb-1")) },
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
        vmBlocker("vm-1", "default", ".spec.nics[1].subnetRef.name"),
        vmBlocker(
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
        {
          ...vmBlocker(
            "vm-1",
            "default",
            ".spec.nics[0].subnetRef.name",
            ".spec.nics[1].subnetRef.name",
            ".spec.nics[2].subnetRef.name",
          ),
          pathsNotShown: 997,
        },
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
        vmBlocker("own-default", "default", ".spec.nics[1].subnetRef.name"),
        vmBlocker("from-a", "team-a", ".spec.nics[1].subnetRef.name"),
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
      blockers: found(1, vmBlocker("named-in-default", "")),
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
      blockers: found(
        1,
        vmBlocker("alt-path", "team-a", ".spec.altVpcRef.name"),
      ),
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
      blockers: found(1, vmBlocker("vm-1", "default", ".spec.altVpcRef.name")),
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
      blockers: found(1, vmBlocker("vpc-a", "default", ".metadata.name")),
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
      blockers: found(
        2,
        vmBlocker("vm-1", "team-a"),
        vmBlocker("vm-1", "team-b"),
      ),
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
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1", "")) },
    want: referenced(VM_1_BLOCKS, 1),
  },
  {
    name: "cluster-scoped: one blocker in a namespace",
    plan: plan({ clusterScoped: true }),
    readings: {
      confirmed: OK,
      blockers: found(1, vmBlocker("vm-1", "team-a")),
    },
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
        lbBlocker("lb-2", "team-z"),
        ...["vm-01", "vm-05", "vm-09"].map((n) => vmBlocker(n, "team-a")),
        ...["vm-03", "vm-07", "vm-12"].map((n) => vmBlocker(n, "team-b")),
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
    readings: { confirmed: GONE, blockers: found(1, vmBlocker("vm-1")) },
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
      blockers: found(1, vmBlocker("vm-1")),
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
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
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
    readings: { confirmed: GONE, blockers: found(1, vmBlocker("vm-1")) },
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
    name:
      "locked, the live read fails: 503 naming the delete, no annotation offered",
    plan: plan({ lock: "vpc-a" }),
    readings: {
      confirmed: fail(new Error("connection reset")),
      blockers: found(0),
    },
    want: denied(
      503,
      "ServiceUnavailable",
      "cannot delete vpcs/vpc-a: cannot read the object itself (connection reset); " +
        "the delete is denied until it can be read: retry later",
      "denied_error",
    ),
    unsaid: /skip-protection|production|Lock/,
  },
  {
    name:
      "an UPDATE of an object locked for Update, the live read fails: 503 naming the update, no annotation offered",
    plan: plan({
      lock: "vpc-a",
      operations: ["Delete", "Update"],
      update: true,
      noRules: true,
    }),
    readings: {
      confirmed: fail(
        new DeadlineExceeded("reading vpcs.network.example.com", 50),
      ),
    },
    want: denied(
      503,
      "ServiceUnavailable",
      "cannot update vpcs/vpc-a: cannot read the object itself (reading vpcs.network.example.com did not finish within 50 ms); " +
        "the update is denied until it can be read: retry later",
      "denied_error",
    ),
    unsaid: /skip-protection|delete|production|Lock/,
  },
  {
    name:
      "an UPDATE of an object locked for Update, forged: unconfirmed, naming the update",
    plan: plan({
      lock: "vpc-a",
      operations: ["Delete", "Update"],
      update: true,
      noRules: true,
    }),
    readings: { confirmed: GONE },
    want: denied(
      409,
      "Conflict",
      "cannot confirm the object being updated: it no longer exists as the review describes it " +
        "(deleted or recreated meanwhile); retry the update",
      "denied_unconfirmed",
    ),
    unsaid: /production|Lock/,
  },
  {
    name:
      "a free object of a type Locks cover, the live read fails: as a held one",
    plan: plan({ lock: "other" }),
    readings: {
      confirmed: fail(new Error("connection reset")),
      blockers: found(0),
    },
    want: denied(
      503,
      "ServiceUnavailable",
      "cannot delete vpcs/vpc-a: cannot read the object itself (connection reset); " +
        "the delete is denied until it can be read: retry later",
      "denied_error",
    ),
  },
  {
    name:
      "no Lock covers the type, the live read fails: 503 offering the annotation",
    plan: plan(),
    readings: {
      confirmed: fail(new Error("connection reset")),
      blockers: found(0),
    },
    want: unavailable(
      "cannot read the object itself (connection reset)",
      "it can be read",
    ),
  },
  {
    name: "a locked Namespace",
    plan: namespacePlan(),
    readings: { confirmed: OK },
    want: locked(
      'cannot delete namespaces/team-a: locked by Lock team-a/home ("tenant home"): deleting the Lock unlocks it; the skip-protection annotation does not',
    ),
  },
  // Owner rules: the owners the object (or its Namespace) names.
  {
    name: "owners: one holds: denied, naming it and the field",
    plan: OWNED,
    readings: { confirmed: OK, owners: owned(0, net("net-a")) },
    want: ownedBy(NET_A_OWNS),
  },
  {
    name: "owners: none holds: allowed",
    plan: OWNED,
    readings: { confirmed: OK, owners: owned(0) },
    want: ALLOWED,
  },
  {
    name: "owners: two hold, one in another namespace, with a `when`",
    plan: OWNED,
    readings: {
      confirmed: OK,
      owners: owned(
        0,
        net("net-a"),
        net("net-b", {
          namespace: "team-a",
          when: "object.spec.deletionProtection == true",
        }),
      ),
    },
    want: ownedBy(
      'cannot delete vpcs/vpc-a: it belongs to Network/net-a (.metadata.labels["network.example.com/owner"]), ' +
        'Network/team-a/net-b (.metadata.labels["network.example.com/owner"], with object.spec.deletionProtection == true), ' +
        "which still exist",
    ),
  },
  {
    name: "owners: named on the Namespace",
    plan: OWNED_VIA_NS,
    readings: {
      confirmed: OK,
      owners: owned(0, net("net-a", { viaNamespace: "default" })),
    },
    want: ownedBy(
      'cannot delete vpcs/vpc-a: it belongs to Network/net-a (.metadata.labels["network.example.com/owner"] of namespace default), which still exists',
    ),
  },
  {
    name: "owners and references: denied as referenced, naming both",
    plan: OWNED_AND_REFERRED,
    readings: {
      confirmed: OK,
      blockers: found(1, vmBlocker("vm-1")),
      owners: owned(0, net("net-a")),
    },
    want: referenced(
      `${NET_A_OWNS}; still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
      1,
    ),
  },
  {
    name: "owners and references: none holds, only the references named",
    plan: OWNED_AND_REFERRED,
    readings: {
      confirmed: OK,
      blockers: found(1, vmBlocker("vm-1")),
      owners: owned(0),
    },
    want: referenced(VM_1_BLOCKS, 1),
  },
  {
    name: "owners and references: neither holds: allowed",
    plan: OWNED_AND_REFERRED,
    readings: { confirmed: OK, blockers: found(0), owners: owned(0) },
    want: ALLOWED,
  },
  {
    name: "owners: more named than read, one holding",
    plan: plan({ rules: [OWNED_BY_REFERENCE] }),
    readings: {
      confirmed: OK,
      owners: owned(
        2,
        net("net-0", { field: ".metadata.ownerReferences[0].name" }),
      ),
    },
    want: ownedBy(
      "cannot delete vpcs/vpc-a: it belongs to Network/net-0 (.metadata.ownerReferences[0].name), " +
        "which still exists, and it names 2 more owners not read (at most 100000 per delete)",
    ),
  },
  {
    name: "owners: more named than read, none holding: denied (fail closed)",
    plan: plan({ rules: [OWNED_BY_REFERENCE] }),
    readings: { confirmed: OK, owners: owned(3) },
    want: ownedBy(
      "cannot delete vpcs/vpc-a: it names 100003 owners, more than the 100000 the dependency webhook reads per delete: " +
        "none of those it read holds it, and the other 3 were not read; " +
        "remove the surplus owner references and retry",
    ),
  },
  {
    name: "owners: the object is another (or gone): the one generic denial",
    plan: OWNED,
    readings: { confirmed: GONE, owners: owned(0, net("net-a")) },
    want: UNCONFIRMED,
    unsaid: /net-a|vpc-a/,
  },
  {
    name: "owners: the object unreadable, no owner named",
    plan: OWNED,
    readings: {
      confirmed: fail(new Error("no answer within 50 ms")),
      owners: fail(new Error("no answer within 50 ms")),
    },
    want: unavailable(
      "cannot read the object itself (no answer within 50 ms)",
      "it can be read",
    ),
  },
  {
    name: "owners: a read failed",
    plan: OWNED,
    readings: {
      confirmed: OK,
      owners: fail(new Error("reading Network/net-a failed: unavailable")),
    },
    want: failedOwners("reading Network/net-a failed: unavailable"),
  },
  {
    name: "owners: a read out of time",
    plan: OWNED,
    readings: {
      confirmed: OK,
      owners: fail(new DeadlineExceeded("reading Network/net-a", 50)),
    },
    want: failedOwners("reading Network/net-a did not finish within 50 ms"),
  },
  {
    name: "owners: the Namespace read out of time",
    plan: OWNED_VIA_NS,
    readings: {
      confirmed: OK,
      owners: fail(new DeadlineExceeded("reading the namespace default", 50)),
    },
    want: failedOwners(
      "reading the namespace default did not finish within 50 ms",
    ),
  },
  {
    name: "owners: planned but not read: denied (fail closed)",
    plan: OWNED,
    readings: { confirmed: OK },
    want: failedOwners("no owner was read", null),
  },
  {
    name: "owners: an owner not granted, the permission carried",
    plan: OWNED,
    readings: { confirmed: OK, owners: fail(new Forbidden("get", NETWORKS)) },
    want: forbidden("get", NETWORKS),
  },
  {
    name: "owners: the Namespace not granted, the permission carried",
    plan: OWNED_VIA_NS,
    readings: {
      confirmed: OK,
      owners: fail(new Forbidden("get", { group: "", resource: "namespaces" })),
    },
    want: {
      ...unavailable(
        "the webhook's identity may not get namespaces in this workspace (403 Forbidden): " +
          'grant "get" on namespaces to it in system:admin of every shard (controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -)',
        "it may",
      ),
      forbidden: { verb: "get", group: "", resource: "namespaces" },
    },
  },
  {
    name: "owners and references: a failed list named before the owners",
    plan: OWNED_AND_REFERRED,
    readings: {
      confirmed: OK,
      blockers: fail(new Error("boom")),
      owners: fail(new Error("reading Network/net-a failed: unavailable")),
    },
    want: unavailable(
      `cannot check whether other objects still refer to it (boom); ${
        ownersNotRead(
          "networks.network.example.com",
          "reading Network/net-a failed: unavailable",
        )
      }`,
      "they can be checked",
    ),
  },
  {
    name: "owners and references: owners unreadable though the list is fine",
    plan: OWNED_AND_REFERRED,
    readings: {
      confirmed: OK,
      blockers: found(1, vmBlocker("vm-1")),
      owners: fail(new Error("reading Network/net-a failed: unavailable")),
    },
    // What was read holds it: named, with what could not be read.
    want: {
      blockers: 1,
      ...denied(
        409,
        "Conflict",
        `cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name); ${
          ownersNotRead(
            "networks.network.example.com",
            "reading Network/net-a failed: unavailable",
          )
        }`,
        "denied_referenced",
      ),
    },
  },
  {
    name: "owners, locked: the Lock named, not the owners",
    plan: plan({ lock: "vpc-a", rules: [LABEL_OWNER_RULE] }),
    readings: { confirmed: OK, owners: owned(0, net("net-a")) },
    want: locked(LOCKED),
  },
  {
    name: "owners, annotation in authorized mode, allowed: no owner matters",
    plan: plan({ rules: [LABEL_OWNER_RULE], skip: true, authorized: true }),
    readings: { confirmed: OK, bypass: OK },
    want: ALLOWED_SKIP,
  },
];

Deno.test("foldReview() folds the readings into the verdict, case by case", async (t) => {
  for (const c of FOLD_CASES) {
    await t.step(c.name, () => {
      const verdict = foldReview(c.plan, c.readings);
      assertCausesAgree(verdict);
      if ("response" in c.want) {
        assert.deepEqual(withoutCauses(verdict), c.want);
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
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
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
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 0,
    teardownOrderMs: 120_000,
    want: referenced(VM_1_BLOCKS, 1),
  },
  {
    name:
      "locked and referenced, marked 1 s ago: references still order the teardown",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 1_000,
    teardownOrderMs: 120_000,
    want: "denied_referenced",
  },
  {
    name: "locked and referenced, at the end of the order window: let go",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 120_000,
    teardownOrderMs: 120_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "locked and referenced, at the end of a short order window: let go",
    plan: plan({ lock: "vpc-a" }),
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 1_000,
    teardownOrderMs: 1_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "referenced, within the order window: the denial stands",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 59_999,
    teardownOrderMs: 60_000,
    want: referenced(VM_1_BLOCKS, 1),
  },
  {
    name: "referenced, marked 1 s ago: the denial stands",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 1_000,
    teardownOrderMs: 120_000,
    want: "denied_referenced",
  },
  {
    name: "referenced, at the end of the order window: let go",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 60_000,
    teardownOrderMs: 60_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "referenced, no order window: nothing protected at all",
    plan: plan(),
    readings: { confirmed: OK, blockers: found(1, vmBlocker("vm-1")) },
    markedAgo: 0,
    teardownOrderMs: 0,
    want: WORKSPACE_DELETING,
  },
  {
    name: "owned, not being deleted: the denial stands",
    plan: OWNED,
    readings: { confirmed: OK, owners: owned(0, net("net-a")) },
    teardownOrderMs: 0,
    want: ownedBy(NET_A_OWNS),
  },
  {
    name: "owned, within the order window: owners still order the teardown",
    plan: OWNED,
    readings: { confirmed: OK, owners: owned(0, net("net-a")) },
    markedAgo: 59_999,
    teardownOrderMs: 60_000,
    want: ownedBy(NET_A_OWNS),
  },
  {
    name: "owned, at the end of the order window: let go",
    plan: OWNED,
    readings: { confirmed: OK, owners: owned(0, net("net-a")) },
    markedAgo: 60_000,
    teardownOrderMs: 60_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "owned past the bound, none holding, after the order window: let go",
    plan: plan({ rules: [OWNED_BY_REFERENCE] }),
    readings: { confirmed: OK, owners: owned(3) },
    markedAgo: 60_000,
    teardownOrderMs: 60_000,
    want: WORKSPACE_DELETING,
  },
  {
    name: "owned and referenced, within the order window: the denial stands",
    plan: OWNED_AND_REFERRED,
    readings: {
      confirmed: OK,
      blockers: found(1, vmBlocker("vm-1")),
      owners: owned(0, net("net-a")),
    },
    markedAgo: 1_000,
    teardownOrderMs: 120_000,
    want: referenced(
      `${NET_A_OWNS}; still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
      1,
    ),
  },
  {
    name: "locked and owned, marked now: owners still order the teardown",
    plan: plan({ lock: "vpc-a", rules: [LABEL_OWNER_RULE] }),
    readings: { confirmed: OK, owners: owned(0, net("net-a")) },
    markedAgo: 0,
    teardownOrderMs: 120_000,
    want: ownedBy(NET_A_OWNS),
  },
  {
    name: "locked, owners none holding, marked now: no Lock holds",
    plan: plan({ lock: "vpc-a", rules: [LABEL_OWNER_RULE] }),
    readings: { confirmed: OK, owners: owned(0) },
    markedAgo: 0,
    teardownOrderMs: 120_000,
    want: WORKSPACE_DELETING,
  },
  {
    name:
      "locked, owners unreadable, marked now: denied until they can be read",
    plan: plan({ lock: "vpc-a", rules: [LABEL_OWNER_RULE] }),
    readings: { confirmed: OK, owners: fail(new Error("boom")) },
    markedAgo: 0,
    teardownOrderMs: 120_000,
    want: failedOwners("boom"),
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
      assertCausesAgree(verdict);
      if (typeof c.want === "string") assert.equal(verdict.outcome, c.want);
      else assert.deepEqual(withoutCauses(verdict), c.want);
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
      blockers: found(1, vmBlocker("vm-1")),
    }, true],
    ["allowed", plan(), { confirmed: OK, blockers: found(0) }, false],
    ["owned", OWNED, { confirmed: OK, owners: owned(0, net("net-a")) }, true],
    ["owned past the bound", OWNED, { confirmed: OK, owners: owned(3) }, true],
    ["owned and referenced", OWNED_AND_REFERRED, {
      confirmed: OK,
      blockers: found(1, vmBlocker("vm-1")),
      owners: owned(0, net("net-a")),
    }, true],
    ["not owned", OWNED, { confirmed: OK, owners: owned(0) }, false],
    ["owners unreadable", OWNED, {
      confirmed: OK,
      owners: fail(new Error("boom")),
    }, false],
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

Deno.test("a Lock's denial says what else it could not read: the Lock, what the other lists found, and each type not listed", () => {
  const refused = new Forbidden("list", LOAD_BALANCERS);
  const readings: ReviewReadings = {
    confirmed: OK,
    blockers: fail(refused),
    unread: [{
      verb: "list",
      type: { group: LOAD_BALANCERS.group, resource: LOAD_BALANCERS.resource },
      why: refused.message,
      forbidden: refused.permission,
    }],
    partial: { named: [vmBlocker("vm-1")], total: 1 },
  };
  const verdict = foldReview(plan({ lock: "vpc-a" }), readings);
  assertCausesAgree(verdict);
  assert.equal(verdict.outcome, "denied_locked");
  assert.equal(verdict.response.status?.code, 409);
  assert.equal(
    verdict.response.status?.message,
    `${LOCKED}; also still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name); ` +
      `the dependency webhook could not list loadbalancers.lb.example.com, which may refer to it too (${refused.message})`,
  );
  assert.deepEqual(verdict.causes?.map((c) => c.type), [
    "Lock",
    "Reference",
    "NotRead",
  ]);
  assert.deepEqual(verdict.causes?.at(-1), {
    type: "NotRead",
    group: "lb.example.com",
    resource: "loadbalancers",
    verb: "list",
    why: refused.message,
  });
  // The operator's part is counted as for any 403.
  assert.deepEqual(verdict.forbidden, refused.permission);
});

Deno.test("without a Lock, what the lists found is named with each type not listed; with nothing found, 503 naming every type not read", async (t) => {
  const refused = new Forbidden("list", LOAD_BALANCERS);
  const unread = [{
    verb: "list" as const,
    type: { group: LOAD_BALANCERS.group, resource: LOAD_BALANCERS.resource },
    why: refused.message,
    forbidden: refused.permission,
  }, {
    verb: "list" as const,
    type: {
      group: VIRTUAL_MACHINES.group,
      resource: VIRTUAL_MACHINES.resource,
    },
    why: "no answer within 50 ms",
  }];
  await t.step("found: 409 naming vm-1 and what was not read", () => {
    const verdict = foldReview(plan(), {
      confirmed: OK,
      blockers: fail(refused),
      unread: unread.slice(0, 1),
      partial: { named: [vmBlocker("vm-1")], total: 1 },
    });
    assertCausesAgree(verdict);
    assert.equal(verdict.outcome, "denied_referenced");
    assert.equal(verdict.response.status?.code, 409);
    assert.match(
      verdict.response.status?.message ?? "",
      /still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\); the dependency webhook could not list loadbalancers\.lb\.example\.com, which may refer to it too/,
    );
    assert.deepEqual(verdict.forbidden, refused.permission);
  });
  await t.step(
    "nothing found: 503, every type not read named and a cause",
    () => {
      const verdict = foldReview(plan(), {
        confirmed: OK,
        blockers: fail(refused),
        unread,
        partial: { named: [], total: 0 },
      });
      assertCausesAgree(verdict);
      assert.equal(verdict.outcome, "denied_error");
      assert.equal(verdict.response.status?.code, 503);
      const message = verdict.response.status?.message ?? "";
      assert.ok(
        message.startsWith(
          `cannot delete vpcs/vpc-a: ${refused.message}; the dependency webhook could not list virtualmachines.compute.example.com, which may refer to it too (no answer within 50 ms); the delete is denied until it may`,
        ),
        message,
      );
      assert.deepEqual(
        verdict.causes?.map((c) => c.type === "NotRead" ? c.resource : c.type),
        ["loadbalancers", "virtualmachines"],
      );
    },
  );
});
