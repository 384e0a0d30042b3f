import assert from "node:assert/strict";
import { indexKey, indexRoute, indexSpecs, sameSpec } from "./index_plan.ts";
import { RuleRegistry } from "./rule_registry.ts";
import {
  dependency,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import type { ClusterRule } from "../rules/mod.ts";

function registryOf(
  rules: readonly ClusterRule[],
  identities: Record<string, string>,
): RuleRegistry {
  const registry = new RuleRegistry();
  registry.replace(rules, { identities: new Map(Object.entries(identities)) });
  return registry;
}

const VM_VPC: ClusterRule = {
  cluster: "p1",
  rule: validRule("vm-vpc", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
    dependency(VPCS, ".spec.nics[*].vpcRef.name"),
  ]),
};

Deno.test("indexSpecs() keeps one index per dependent type and export, with every path its rules read", () => {
  const again: ClusterRule = {
    cluster: "p1",
    rule: validRule("vm-vpc-again", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
  };
  const specs = indexSpecs(
    registryOf([VM_VPC, again], {
      "p1/vm-vpc": "id1",
      "p1/vm-vpc-again": "id1",
    })
      .all(),
  );
  const key = indexKey(VIRTUAL_MACHINES, "id1");
  assert.deepEqual([...specs.keys()], [key]);
  const spec = specs.get(key)!;
  assert.deepEqual(spec.pathKeys, [
    ".spec.nics[*].vpcRef.name",
    ".spec.vpcRef.name",
  ]);
  assert.equal(spec.paths.length, 2);
  assert.equal(spec.identity, "id1");
  assert.deepEqual(spec.dependent, {
    group: VIRTUAL_MACHINES.group,
    version: VIRTUAL_MACHINES.version,
    resource: VIRTUAL_MACHINES.resource,
  });
});

Deno.test("indexSpecs() gives two exports of one type two indexes, and the same specs in any rule order", () => {
  const other: ClusterRule = { ...VM_VPC, cluster: "p2" };
  const one = indexSpecs(
    registryOf([VM_VPC, other], { "p1/vm-vpc": "id1", "p2/vm-vpc": "id2" })
      .all(),
  );
  const two = indexSpecs(
    registryOf([other, VM_VPC], { "p1/vm-vpc": "id1", "p2/vm-vpc": "id2" })
      .all(),
  );
  assert.equal(one.size, 2);
  for (const [key, spec] of one) assert.ok(sameSpec(spec, two.get(key)!));
});

Deno.test("indexRoute() leaves to the list what the index cannot answer: when, owners, unknown identity", () => {
  const withWhen: ClusterRule = {
    cluster: "p1",
    rule: {
      ...validRule("vm-vpc-when", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    },
  };
  withWhen.rule.spec.when = "object.spec.running == true";
  const owner: ClusterRule = {
    cluster: "p1",
    rule: validRule("owned", VIRTUAL_MACHINES, [{
      ...dependency(VPCS, ".metadata.ownerReferences[*].name"),
      fieldRef: { path: ".metadata.ownerReferences[*].name", from: "Target" },
    }]),
  };
  const registry = registryOf([withWhen, owner, VM_VPC], {
    "p1/vm-vpc-when": "id1",
    "p1/owned": "id1",
  });
  const routes = registry.find(VPCS).map((p) => [p.rule, indexRoute(p)]);
  assert.deepEqual(routes, [
    ["p1/owned", undefined],
    ["p1/vm-vpc", undefined],
    ["p1/vm-vpc", undefined],
    ["p1/vm-vpc-when", undefined],
  ]);
  assert.equal(indexSpecs(registry.all()).size, 0);
});

Deno.test("sameSpec() tells a changed path list", () => {
  const a = indexSpecs(registryOf([VM_VPC], { "p1/vm-vpc": "id1" }).all());
  const b = indexSpecs(
    registryOf([{
      cluster: "p1",
      rule: validRule("vm-vpc", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    }], { "p1/vm-vpc": "id1" }).all(),
  );
  const key = indexKey(VIRTUAL_MACHINES, "id1");
  assert.ok(sameSpec(a.get(key)!, a.get(key)!));
  assert.ok(!sameSpec(a.get(key)!, b.get(key)!));
});
