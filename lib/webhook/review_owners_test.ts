import assert from "node:assert/strict";
import fc from "fast-check";
import type { ClusterRule } from "../rules/mod.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import { DeletionValidator } from "./deletion_validator.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { MAX_OWNERS_LOOKED_UP, ownersNamed } from "./review_owners.ts";
import type { Outcome } from "./verdicts.ts";
import { KubeApiError } from "../kcp/mod.ts";
import {
  deleteReview,
  dependentRule,
  FakeDependentSource,
  type Live,
  network,
  networkOwnerRule,
  type NetworkOwnerRuleOptions,
  NETWORKS,
  OWNER_LABEL as LABEL,
  OWNER_LABEL_PATH as LABEL_PATH,
  OWNER_REFS_PATH as OWNER_REFS,
  type OwnerAnswer,
  ownerRef,
  registryOf,
  SUBNET_TYPE,
  SUBNETS,
  VIRTUAL_MACHINES,
} from "../../testing/fakes.ts";

/** An owner rule `name`: Networks (the dependent) own Subnets. */
function ownerRule(
  name: string,
  fieldRef: Parameters<typeof networkOwnerRule>[1],
  options: NetworkOwnerRuleOptions = {},
): ClusterRule {
  return networkOwnerRule(name, fieldRef, { ...options, protects: SUBNETS });
}

/** The DELETE review of subnets/s-1 in team-a of consumer1. */
function deleteSubnet(): AdmissionRequest {
  return deleteReview(SUBNET_TYPE, "s-1", { namespace: "team-a" });
}

/** VirtualMachines depend on Subnets via `.spec.subnetRef.name`, where `when` says. */
function vmNeedsSubnet(when?: string): ClusterRule {
  return dependentRule("vm-needs-subnet", VIRTUAL_MACHINES, [
    ".spec.subnetRef.name",
  ], { target: SUBNETS, ...(when === undefined ? {} : { when }) });
}

interface Row {
  name: string;
  rules: ClusterRule[];
  /** The live subnet's metadata beyond name and uid. */
  metadata?: Record<string, unknown>;
  /** Owners and Namespaces by `<resource>/<name>`. */
  owners?: Record<string, OwnerAnswer>;
  /** Dependents listed, by resource. */
  lists?: Record<string, unknown[]>;
  live?: Live;
  want: { outcome: Outcome; message?: string; messageIncludes?: string[] };
  /** The owners looked up, as `<resource>/<namespace or ->/<name>`. */
  lookups?: string[];
  /** Whether anything was listed. @default {false} */
  listed?: boolean;
}

const OWNED = "cannot delete subnets/s-1: it belongs to";

const ROWS: Row[] = [
  {
    name:
      "a label names a live owner: denied, naming it and the field, with no list",
    rules: [ownerRule("owned", { from: "Target", path: LABEL_PATH })],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a", { namespace: "team-a" }) },
    want: {
      outcome: "denied_owned",
      message:
        `${OWNED} Network/net-a (.metadata.labels["${LABEL}"]), which still exists`,
    },
    lookups: ["networks/team-a/net-a"],
  },
  {
    name: "the owner is gone: allowed",
    rules: [ownerRule("owned", { from: "Target", path: LABEL_PATH })],
    metadata: { labels: { [LABEL]: "net-a" } },
    want: { outcome: "allowed" },
    lookups: ["networks/team-a/net-a"],
  },
  {
    name: "no label: nothing is looked up, allowed",
    rules: [ownerRule("owned", { from: "Target", path: LABEL_PATH })],
    want: { outcome: "allowed" },
    lookups: [],
  },
  {
    name: "a label that cannot be a name is not looked up",
    rules: [ownerRule("owned", { from: "Target", path: LABEL_PATH })],
    metadata: { labels: { [LABEL]: "Net_A" } },
    want: { outcome: "allowed" },
    lookups: [],
  },
  {
    name: "an ownerReference of the dependent's kind and group protects",
    rules: [ownerRule("owned", { from: "Target", path: OWNER_REFS })],
    metadata: {
      ownerReferences: [
        { ...ownerRef("x"), apiVersion: "other.example.com/v1" },
        ownerRef("y", { kind: "Project" }),
        ownerRef("net-a"),
      ],
    },
    owners: {
      "networks/net-a": network("net-a"),
      "networks/x": network("x"),
      "networks/y": network("y"),
    },
    want: {
      outcome: "denied_owned",
      message:
        `${OWNED} Network/net-a (.metadata.ownerReferences[2].name), which still exists`,
    },
    lookups: ["networks/team-a/net-a"],
  },
  {
    name:
      "an ownerReference whose uid is not the live owner's does not protect",
    rules: [ownerRule("owned", { from: "Target", path: OWNER_REFS })],
    metadata: { ownerReferences: [ownerRef("net-a", { uid: "old" })] },
    owners: { "networks/net-a": network("net-a") },
    want: { outcome: "allowed" },
    lookups: ["networks/team-a/net-a"],
  },
  {
    name: "when true: denied, naming the `when`",
    rules: [
      ownerRule("owned", { from: "Target", path: LABEL_PATH }, {
        when: "object.spec.deletionProtection == true",
      }),
    ],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a", { protection: true }) },
    want: {
      outcome: "denied_owned",
      message: `${OWNED} Network/net-a (.metadata.labels["${LABEL}"], ` +
        "with object.spec.deletionProtection == true), which still exists",
    },
  },
  {
    name: "when false: the switch is off, allowed",
    rules: [
      ownerRule("owned", { from: "Target", path: LABEL_PATH }, {
        when: "object.spec.deletionProtection == true",
      }),
    ],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a", { protection: false }) },
    want: { outcome: "allowed" },
  },
  {
    name: "when cannot be evaluated: it protects, and says so",
    rules: [
      ownerRule("owned", { from: "Target", path: LABEL_PATH }, {
        when: "object.spec.deletionProtection == true",
      }),
    ],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a") },
    want: {
      outcome: "denied_owned",
      messageIncludes: [
        "the rule's condition object.spec.deletionProtection == true could not be evaluated",
        "so it protects",
      ],
    },
  },
  {
    name: "when does not compile: it protects, and says so",
    rules: [
      ownerRule("owned", { from: "Target", path: LABEL_PATH }, {
        when: "object.spec.(",
      }),
    ],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a") },
    want: {
      outcome: "denied_owned",
      messageIncludes: ["the rule's condition does not compile"],
    },
  },
  {
    name: "protectWhile Active: an owner being deleted releases",
    rules: [
      ownerRule("owned", { from: "Target", path: LABEL_PATH }, {
        protectWhile: "Active",
      }),
    ],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a", { deleting: true }) },
    want: { outcome: "allowed" },
  },
  {
    name: "protectWhile Exists: an owner being deleted still protects",
    rules: [ownerRule("owned", { from: "Target", path: LABEL_PATH })],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a", { deleting: true }) },
    want: { outcome: "denied_owned" },
  },
  {
    name: "TargetNamespace: the Namespace's label names the owner",
    rules: [ownerRule("owned", { from: "TargetNamespace", path: LABEL_PATH })],
    owners: {
      "namespaces/team-a": {
        metadata: { name: "team-a", labels: { [LABEL]: "net-a" } },
      },
      "networks/net-a": network("net-a"),
    },
    want: {
      outcome: "denied_owned",
      message: `${OWNED} Network/net-a (.metadata.labels["${LABEL}"] ` +
        "of namespace team-a), which still exists",
    },
    lookups: ["networks/team-a/net-a"],
  },
  {
    name: "TargetNamespace: the Namespace names no owner, allowed",
    rules: [ownerRule("owned", { from: "TargetNamespace", path: LABEL_PATH })],
    owners: { "namespaces/team-a": { metadata: { name: "team-a" } } },
    want: { outcome: "allowed" },
    lookups: [],
  },
  {
    name:
      "reading the owner is forbidden: denied until it may, naming the grant",
    rules: [ownerRule("owned", { from: "Target", path: LABEL_PATH })],
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: {
      "networks/net-a": {
        error: new KubeApiError("forbidden", { status: 403 }),
      },
    },
    want: {
      outcome: "denied_error",
      messageIncludes: [
        `the webhook's identity may not get networks.network.example.com`,
      ],
    },
  },
  ...[MAX_OWNERS_LOOKED_UP + 1, 100].flatMap((count): Row[] => [
    {
      name:
        `${count} owners, more than are looked up, none alive: one list of the owner type, allowed`,
      rules: [ownerRule("owned", { from: "Target", path: OWNER_REFS })],
      metadata: {
        ownerReferences: Array.from(
          { length: count },
          (_, i) => ownerRef(`net-${i}`),
        ),
      },
      lists: { networks: [network("other")] },
      want: { outcome: "allowed" },
      lookups: [],
      listed: true,
    },
    {
      name:
        `${count} owners, more than are looked up, one alive: denied, naming it`,
      rules: [ownerRule("owned", { from: "Target", path: OWNER_REFS })],
      metadata: {
        ownerReferences: Array.from(
          { length: count },
          (_, i) => ownerRef(`net-${i}`),
        ),
      },
      lists: { networks: [network("other"), network(`net-${count - 1}`)] },
      want: {
        outcome: "denied_owned",
        message: `${OWNED} Network/net-${
          count - 1
        } (.metadata.ownerReferences[${count - 1}].name), which still exists`,
      },
      lookups: [],
      listed: true,
    },
  ]),
  {
    name: "the live object does not confirm the review: nothing is looked up",
    rules: [ownerRule("owned", { from: "Target", path: LABEL_PATH })],
    live: { uid: "another" },
    metadata: { labels: { [LABEL]: "net-a" } },
    owners: { "networks/net-a": network("net-a") },
    want: { outcome: "denied_unconfirmed" },
    lookups: [],
  },
];

for (const row of ROWS) {
  Deno.test(`owner rules: ${row.name}`, async () => {
    const registry = registryOf(...row.rules);
    const source = new FakeDependentSource(
      Object.fromEntries(
        Object.entries(row.lists ?? {}).map(([k, v]) => [k, { pages: [v] }]),
      ),
      row.live ?? { uid: "uid-s-1", metadata: row.metadata ?? {} },
    );
    for (const [key, answer] of Object.entries(row.owners ?? {})) {
      source.owners.set(key, answer);
    }
    const verdict = await new DeletionValidator(registry, source).validate(
      deleteSubnet(),
    );
    const message = verdict.response.status?.message ?? "";
    assert.equal(verdict.outcome, row.want.outcome, message);
    if (row.want.message !== undefined) {
      assert.equal(message, row.want.message);
    }
    for (const part of row.want.messageIncludes ?? []) {
      assert.ok(message.includes(part), `${message} lacks ${part}`);
    }
    if (row.lookups !== undefined) {
      assert.deepEqual(
        source.ownerQueries.map((q) =>
          `${q.resource.resource}/${q.namespace ?? "-"}/${q.name}`
        ),
        row.lookups,
      );
    }
    assert.equal(source.queries.length > 0, row.listed ?? false);
  });
}

Deno.test("owner rules and dependent rules together: one denial names both", async () => {
  const registry = registryOf(
    ownerRule("owned", { from: "Target", path: OWNER_REFS }),
    vmNeedsSubnet(),
  );
  const source = new FakeDependentSource({
    virtualmachines: {
      pages: [[{
        metadata: { name: "vm-1", namespace: "team-a" },
        spec: { subnetRef: { name: "s-1" } },
      }]],
    },
  }, { uid: "uid-s-1", metadata: { ownerReferences: [ownerRef("net-a")] } });
  source.owners.set("networks/net-a", network("net-a"));
  const verdict = await new DeletionValidator(registry, source).validate(
    deleteSubnet(),
  );
  assert.equal(verdict.outcome, "denied_referenced");
  assert.equal(
    verdict.response.status?.message,
    `${OWNED} Network/net-a (.metadata.ownerReferences[0].name), which still exists; ` +
      "still referenced by VirtualMachine/vm-1 (.spec.subnetRef.name)",
  );
});

Deno.test("ownersNamed() skips names that cannot be objects and counts past the bound", () => {
  const registry = registryOf(
    ownerRule("owned", { from: "Target", path: OWNER_REFS }),
  );
  const protections = registry.find(SUBNETS);
  const named = ownersNamed({
    ownerReferences: [
      ownerRef("../../etc"),
      ownerRef("a/b"),
      ownerRef("net-a"),
      ownerRef("net-a"),
      { ...ownerRef("net-b"), uid: "" },
      ...Array.from({ length: 20 }, (_, i) => ownerRef(`n-${i}`)),
    ],
  }, { protections, home: "team-a" });
  assert.deepEqual(named.owners[0], {
    protection: protections[0],
    type: NETWORKS,
    name: "net-a",
    home: "team-a",
    uid: "uid-net-a",
    field: ".metadata.ownerReferences[2].name",
  });
  assert.equal(named.owners.length, MAX_OWNERS_LOOKED_UP);
  assert.equal(named.more, 21 - MAX_OWNERS_LOOKED_UP);
});

Deno.test("ownersNamed() takes only valid names from any metadata, at most the bound, and never throws", () => {
  const registry = registryOf(
    ownerRule("refs", { from: "Target", path: OWNER_REFS }),
    ownerRule("label", { from: "Target", path: LABEL_PATH }),
  );
  const protections = registry.find(SUBNETS);
  assert.equal(protections.length, 2);
  const name = fc.oneof(
    fc.constantFrom("net-a", "constructor", "__proto__", "../x", "A", ""),
    fc.string(),
  );
  const reference = fc.record({
    apiVersion: fc.constantFrom(
      "network.example.com/v1alpha1",
      "v1",
      "other.io/v1",
    ),
    kind: fc.constantFrom("Network", "Project"),
    name,
    uid: fc.oneof(fc.constant("u"), fc.string(), fc.integer()),
  }, { requiredKeys: [] });
  const metadata = fc.oneof(
    fc.anything(),
    fc.record({
      labels: fc.oneof(
        fc.dictionary(fc.constantFrom(LABEL, "x"), name),
        fc.anything(),
      ),
      ownerReferences: fc.oneof(
        fc.array(fc.oneof(reference, fc.anything()), { maxLength: 40 }),
        fc.anything(),
      ),
    }, { requiredKeys: [] }),
  );
  fc.assert(
    fc.property(metadata, (value) => {
      const named = ownersNamed(value, { protections, home: "team-a" });
      assert.ok(named.owners.length <= MAX_OWNERS_LOOKED_UP);
      assert.ok(named.more >= 0);
      for (const owner of named.owners) {
        assert.match(
          owner.name,
          /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
        );
        assert.ok(owner.name.length <= 253);
        if (owner.protection.ownerReferences) {
          assert.equal(typeof owner.uid, "string");
        }
      }
    }),
    { numRuns: 2_000 },
  );
});

Deno.test("the `when`s of one review share a budget: past it, dependents protect unevaluated", async () => {
  // Costly, and false for every VM: only the budget makes one protect.
  const registry = registryOf(
    vmNeedsSubnet("object.spec.disks.exists(d, d.size < 0)"),
  );
  const disks = Array.from({ length: 20_000 }, (_, size) => ({ size }));
  const vms = Array.from({ length: 200 }, (_, i) => ({
    metadata: { name: `vm-${String(i).padStart(3, "0")}`, namespace: "team-a" },
    spec: { subnetRef: { name: "s-1" }, disks },
  }));
  const source = new FakeDependentSource({ virtualmachines: { pages: [vms] } });
  const verdict = await new DeletionValidator(registry, source).validate(
    deleteSubnet(),
  );
  assert.equal(verdict.outcome, "denied_referenced");
  const message = verdict.response.status?.message ?? "";
  assert.match(
    message,
    /the rule's condition .* could not be evaluated \(the review's budget for conditions is spent\), so it protects/,
  );
  // The first VMs were evaluated (false, so not named); the rest protect.
  assert.ok(
    verdict.blockers! > 0 && verdict.blockers! < 200,
    `${verdict.blockers}`,
  );
});

Deno.test("an owner rule counts only owners the workspace binds from the rule's export, read again fresh before dropping one", async () => {
  const cases: {
    name: string;
    bound: ReadonlyMap<string, string> | { error: unknown };
    kept?: ReadonlyMap<string, string>;
    want: Outcome;
    lookups: number;
  }[] = [
    {
      name: "bound from the rule's export",
      bound: new Map([["network.example.com/networks", "real"]]),
      want: "denied_owned",
      lookups: 1,
    },
    {
      name: "a look-alike type of the workspace's own",
      bound: new Map(),
      want: "allowed",
      lookups: 0,
    },
    {
      name: "another export's type of the same group and resource",
      bound: new Map([["network.example.com/networks", "other"]]),
      want: "allowed",
      lookups: 0,
    },
    {
      name: "a kept answer that would drop it is read again, fresh",
      bound: new Map([["network.example.com/networks", "real"]]),
      kept: new Map(),
      want: "denied_owned",
      lookups: 1,
    },
    {
      name: "bindings that cannot be read: it counts (fail closed)",
      bound: { error: new Error("boom") },
      want: "denied_owned",
      lookups: 1,
    },
  ];
  for (const c of cases) {
    const registry = new RuleRegistry();
    registry.replace([
      ownerRule("owned", { from: "Target", path: LABEL_PATH }),
    ], { identities: new Map([["provider1/owned", "real"]]) });
    const source = new FakeDependentSource({}, {
      uid: "uid-s-1",
      metadata: { labels: { [LABEL]: "net-a" } },
    });
    source.bound = c.bound;
    if (c.kept !== undefined) source.keptBound = c.kept;
    source.owners.set("networks/net-a", network("net-a"));
    const verdict = await new DeletionValidator(registry, source).validate(
      deleteSubnet(),
    );
    assert.equal(verdict.outcome, c.want, c.name);
    assert.equal(source.ownerQueries.length, c.lookups, c.name);
  }
});
