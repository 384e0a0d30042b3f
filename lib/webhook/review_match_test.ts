import assert from "node:assert/strict";
import {
  keepFirst,
  ownDependents,
  referringBlocker,
  referringFields,
} from "./review_match.ts";
import { RuleRegistry } from "./rule_registry.ts";
import type { Blocker } from "./verdicts.ts";
import {
  dependency,
  registryOf,
  validRule,
  VIRTUAL_MACHINES,
  vm,
  VM_RULE,
  VPCS,
} from "../../testing/fakes.ts";

function protections(identity?: string) {
  const registry = new RuleRegistry();
  registry.replace(
    [{
      cluster: "p1",
      rule: validRule("vm-vpc", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
        dependency(VPCS, ".spec.nics[*].vpcRef.name"),
      ]),
    }],
    identity === undefined ? {} : {
      identities: new Map([["p1/vm-vpc", identity]]),
    },
  );
  return registry.find(VPCS);
}

const TARGET = {
  cluster: "c1",
  namespace: "default",
  name: "vpc-a",
  uid: "u",
  resource: { ...VPCS },
};

Deno.test("ownDependents() keeps the rules of the export the workspace binds, all of them without bindings", () => {
  const real = protections("real");
  const key = `${VIRTUAL_MACHINES.group}/${VIRTUAL_MACHINES.resource}`;
  assert.equal(ownDependents(real, new Map([[key, "real"]])).length, 2);
  assert.equal(ownDependents(real, new Map([[key, "fake"]])).length, 0);
  assert.equal(ownDependents(real, new Map()).length, 0);
  assert.equal(ownDependents(real, undefined).length, 2);
  // A rule whose identity is unknown counts (fail closed).
  assert.equal(ownDependents(protections(), new Map()).length, 2);
});

Deno.test("referringFields() names the concrete fields that refer, in the object's namespace, and counts past three", () => {
  const p = protections();
  const vm = {
    metadata: { name: "vm-1", namespace: "default" },
    spec: {
      vpcRef: { name: "vpc-a" },
      nics: [1, 2, 3, 4].map(() => ({ vpcRef: { name: "vpc-a" } })),
    },
  };
  assert.deepEqual(referringFields(vm, p, TARGET), {
    paths: [
      ".spec.vpcRef.name",
      ".spec.nics[0].vpcRef.name",
      ".spec.nics[1].vpcRef.name",
    ],
    pathsNotShown: 2,
    rules: ["p1/vm-vpc"],
  });
  assert.deepEqual(
    referringFields({ spec: { vpcRef: { name: "vpc-b" } } }, p, TARGET),
    { paths: [], rules: [] },
  );
});

/** The protections of a rule VM -> VPC with `spec` (when, protectWhile) added. */
function switched(spec: Record<string, unknown>) {
  const rule = validRule("vm-vpc", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const registry = new RuleRegistry();
  registry.replace([{
    cluster: "p1",
    rule: { ...rule, spec: { ...rule.spec, ...spec } },
  }]);
  return registry.find(VPCS);
}

Deno.test("referringFields() counts a dependent only while its rule's when and protectWhile let it protect", () => {
  const vm = (spec: Record<string, unknown>, deleting = false) => ({
    metadata: {
      name: "vm-1",
      namespace: "default",
      ...(deleting ? { deletionTimestamp: "2026-11-26T07:00:00Z" } : {}),
    },
    spec: { vpcRef: { name: "vpc-a" }, ...spec },
  });
  const when = switched({ when: "object.spec.keep == true" });
  assert.deepEqual(referringFields(vm({ keep: true }), when, TARGET), {
    paths: [".spec.vpcRef.name"],
    rules: ["p1/vm-vpc"],
  });
  assert.deepEqual(referringFields(vm({ keep: false }), when, TARGET), {
    paths: [],
    rules: [],
  });
  const failed = referringFields(vm({}), when, TARGET);
  assert.deepEqual(failed.paths, [".spec.vpcRef.name"]);
  assert.match(failed.note ?? "", /could not be evaluated .*so it protects/);
  const active = switched({ protectWhile: "Active" });
  assert.deepEqual(referringFields(vm({}, true), active, TARGET), {
    paths: [],
    rules: [],
  });
  assert.deepEqual(referringFields(vm({}, true), protections(), TARGET), {
    paths: [".spec.vpcRef.name"],
    rules: ["p1/vm-vpc"],
  });
});

Deno.test("keepFirst() keeps the smallest blockers by kind, namespace and name, whatever the order", () => {
  const named: Blocker[] = [];
  const blocker = (name: string) => ({
    kind: "VirtualMachine",
    type: VIRTUAL_MACHINES,
    namespace: "default",
    name,
    paths: [],
    rules: [],
  });
  for (const name of ["vm-c", "vm-a", "vm-d", "vm-b"]) {
    keepFirst(named, blocker(name), 2);
  }
  assert.deepEqual(named.map((b) => b.name), ["vm-a", "vm-b"]);
});

Deno.test("referringBlocker() names a dependent that refers as a denial does, and nothing for one that does not", () => {
  const group = registryOf(VM_RULE).find(VPCS);
  const target = {
    cluster: "consumer1",
    namespace: "default",
    name: "vpc-a",
    uid: "uid-vpc-a",
    resource: { ...VPCS },
  };
  assert.deepEqual(referringBlocker(vm("vm-1", "vpc-a"), group, { target }), {
    kind: VIRTUAL_MACHINES.kind,
    type: {
      group: VIRTUAL_MACHINES.group,
      version: VIRTUAL_MACHINES.version,
      resource: VIRTUAL_MACHINES.resource,
    },
    namespace: "default",
    name: "vm-1",
    paths: [".spec.vpcRef.name"],
    rules: referringFields(vm("vm-1", "vpc-a"), group, target).rules,
  });
  assert.equal(
    referringBlocker(vm("vm-2", "vpc-b"), group, { target }),
    undefined,
  );
  // Metadata a tenant mistyped names no namespace or name, not a crash.
  const odd = {
    ...vm("vm-3", "vpc-a"),
    metadata: { name: 7, namespace: "default" },
  };
  assert.deepEqual(
    [referringBlocker(odd, group, { target })?.name],
    [""],
  );
  // Since when it refers: its creationTimestamp, when RFC 3339.
  const stamped = (stamp: unknown) => {
    const item = vm("vm-4", "vpc-a") as { metadata: Record<string, unknown> };
    return referringBlocker(
      {
        ...item,
        metadata: { ...item.metadata, creationTimestamp: stamp },
      },
      group,
      { target },
    )?.since;
  };
  assert.equal(stamped("2026-11-29T12:00:00Z"), "2026-11-29T12:00:00Z");
  assert.equal(stamped("2026-11-29 noon"), undefined);
  assert.equal(stamped(0), undefined);
});
