import assert from "node:assert/strict";
import {
  type Blocker,
  ownedBy,
  ownerCauses,
  referenceCauses,
  referencedBy,
} from "./holders.ts";
import { MAX_OWNERS_READ, type OwnerHold } from "./review_owners.ts";
import type { ReviewTarget } from "./review_target.ts";
import { VPCS } from "../../testing/fakes.ts";

const TARGET: ReviewTarget = {
  cluster: "consumer1",
  namespace: "team-a",
  name: "core",
  uid: "u",
  resource: { ...VPCS },
};

const VMS = {
  group: "compute.example.com",
  version: "v1alpha1",
  resource: "virtualmachines",
};

const NETWORKS = {
  group: "network.example.com",
  version: "v1",
  resource: "networks",
};

const VM = (name: string, namespace = "team-a"): Blocker => ({
  kind: "VirtualMachine",
  type: VMS,
  namespace,
  name,
  paths: [".spec.vpcRef.name"],
  rules: ["provider1/vm-needs-vpc"],
});

const NET = (name: string, over: Partial<OwnerHold> = {}): OwnerHold => ({
  kind: "Network",
  type: NETWORKS,
  rule: "provider1/owned",
  namespace: "team-a",
  name,
  field: '.metadata.labels["network.example.com/owner"]',
  ...over,
});

Deno.test("referencedBy() names dependents of the object's namespace by name, others with theirs, and counts the rest", () => {
  assert.equal(
    referencedBy([VM("vm-1"), VM("vm-2", "shared")], 5, "team-a"),
    "still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name), VirtualMachine/shared/vm-2 (.spec.vpcRef.name) and 3 more",
  );
  assert.equal(
    referencedBy([VM("vm-1", "")], 1, undefined),
    "still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)",
  );
});

Deno.test("referencedBy() counts the fields not shown and adds a dependent's note", () => {
  assert.equal(
    referencedBy(
      [{
        ...VM("vm-1"),
        paths: [".spec.nics[0].vpcRef.name", ".spec.nics[1].vpcRef.name"],
        pathsNotShown: 4,
        note: "its when could not be evaluated",
      }],
      1,
      "team-a",
    ),
    "still referenced by VirtualMachine/vm-1 (.spec.nics[0].vpcRef.name, .spec.nics[1].vpcRef.name, and 4 more; its when could not be evaluated)",
  );
});

Deno.test("ownedBy() names owners as referencedBy() names dependents, with the field, when and note", () => {
  assert.equal(
    ownedBy([NET("net-a")], TARGET, 0),
    'it belongs to Network/net-a (.metadata.labels["network.example.com/owner"]), which still exists',
  );
  assert.equal(
    ownedBy(
      [
        NET("net-a", { when: "object.spec.keep == true", note: "n" }),
        NET("net-b", { namespace: "shared", viaNamespace: "team-a" }),
      ],
      TARGET,
      2,
    ),
    "it belongs to " +
      'Network/net-a (.metadata.labels["network.example.com/owner"], with object.spec.keep == true; n), ' +
      'Network/shared/net-b (.metadata.labels["network.example.com/owner"] of namespace team-a), ' +
      `which still exist, and it names 2 more owners not read (at most ${MAX_OWNERS_READ} per delete)`,
  );
});

Deno.test("ownedBy() shows a when made printable and cut", () => {
  const message = ownedBy(
    [NET("net-a", { when: `a\u001b[31m${"x".repeat(300)}` })],
    TARGET,
    0,
  );
  assert.ok(message.includes("with a\\u{1b}[31mxxx"), message);
  assert.ok(message.includes("..."), message);
  assert.ok(!message.includes("\u001b"), message);
});

Deno.test("referenceCauses() gives one cause per named dependent, copying its lists, and counts the rest", () => {
  const vm = { ...VM("vm-1"), note: "n", pathsNotShown: 2 };
  const causes = referenceCauses([vm], 4);
  assert.deepEqual(causes, [
    {
      type: "Reference",
      object: {
        ...VMS,
        kind: "VirtualMachine",
        namespace: "team-a",
        name: "vm-1",
      },
      fields: [".spec.vpcRef.name"],
      rules: ["provider1/vm-needs-vpc"],
      note: "n",
    },
    { type: "More", of: "Reference", count: 3 },
  ]);
  const first = causes[0]!;
  assert.ok(first.type === "Reference");
  assert.notEqual(first.fields, vm.paths);
  assert.notEqual(first.rules, vm.rules);
  assert.deepEqual(referenceCauses([VM("vm-1")], 1).map((c) => c.type), [
    "Reference",
  ]);
  assert.deepEqual(referenceCauses([], 0), []);
});

Deno.test("ownerCauses() gives one cause per owner, with what it has of viaNamespace, when and note, and counts those not read", () => {
  assert.deepEqual(
    ownerCauses(
      [
        NET("net-a"),
        NET("net-b", { viaNamespace: "team-a", when: "w", note: "n" }),
      ],
      5,
    ),
    [
      {
        type: "Owner",
        object: {
          ...NETWORKS,
          kind: "Network",
          namespace: "team-a",
          name: "net-a",
        },
        field: '.metadata.labels["network.example.com/owner"]',
        rule: "provider1/owned",
      },
      {
        type: "Owner",
        object: {
          ...NETWORKS,
          kind: "Network",
          namespace: "team-a",
          name: "net-b",
        },
        field: '.metadata.labels["network.example.com/owner"]',
        viaNamespace: "team-a",
        rule: "provider1/owned",
        when: "w",
        note: "n",
      },
      { type: "More", of: "Owner", count: 5 },
    ],
  );
  assert.deepEqual(ownerCauses([], 0), []);
});

Deno.test("referenceCauses() and ownerCauses() carry since when the blocker has it", () => {
  const since = "2026-11-29T12:00:00Z";
  const [reference] = referenceCauses([{ ...VM("vm-1"), since }], 1);
  assert.ok(reference?.type === "Reference");
  assert.equal(reference.since, since);
  const [owner] = ownerCauses([NET("net-a", { since })], 0);
  assert.ok(owner?.type === "Owner");
  assert.equal(owner.since, since);
  const [untimed] = ownerCauses([NET("net-a")], 0);
  assert.ok(untimed?.type === "Owner" && !("since" in untimed));
});
