import assert from "node:assert/strict";
import {
  analyzeRules,
  enforcedRules,
  type RuleProblem,
  typeCycles,
} from "./rule_graph.ts";
import type { ClusterRule, GroupVersionResource } from "./types.ts";
import {
  dependency,
  type DependentType,
  LOAD_BALANCERS,
  SUBNETS,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

/** VPCs as a dependent type. */
const VPC_DEPENDENT: DependentType = { ...VPCS, kind: "VPC" };
/** Subnets as a dependent type. */
const SUBNET_DEPENDENT: DependentType = { ...SUBNETS, kind: "Subnet" };

const VM = "virtualmachines.compute.example.com";
const VPC = "vpcs.network.example.com";
const SUBNET = "subnets.network.example.com";
const ADVICE = "objects that refer to each other can only be deleted with " +
  "the dependencies.opendefense.cloud/skip-protection annotation";

/**
 * A rule `cluster/name` in which `dependent` refers to each of `targets`
 * at `.spec.<resource>Ref.name`.
 */
function entry(
  cluster: string,
  name: string,
  dependent: DependentType,
  targets: readonly GroupVersionResource[],
): ClusterRule {
  const dependencies = targets.map((target) =>
    dependency(target, `.spec.${target.resource}Ref.name`)
  );
  return { cluster, rule: validRule(name, dependent, dependencies) };
}

/** A `DependencyCycle` problem with the given message head and rules. */
function cycle(types: string, rules: string): RuleProblem {
  return {
    reason: "DependencyCycle",
    message: `dependency cycle: ${types} (rules ${rules}); ${ADVICE}`,
  };
}

/** `items` in an order given by a small deterministic generator. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const result = [...items];
  let state = seed;
  for (let i = result.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    [result[i], result[j]] = [result[j]!, result[i]!];
  }
  return result;
}

/** A chain of `length` rules over types `t0 .. t<length>`, closed if asked. */
function chain(length: number, options: { closed?: boolean } = {}) {
  const type = (i: number): DependentType => ({
    group: "chain.example.com",
    version: "v1",
    resource: `t${i}`,
    kind: `T${i}`,
  });
  const rules: ClusterRule[] = [];
  for (let i = 0; i < length; i++) {
    const last = i === length - 1;
    const target = last && options.closed === true ? type(0) : type(i + 1);
    rules.push(entry("c1", `r${i}`, type(i), [target]));
  }
  return rules;
}

Deno.test("analyzeRules() finds no problems in a chain", () => {
  const rules = [
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c1", "vpc-subnet", VPC_DEPENDENT, [SUBNETS]),
    entry("c2", "lb-vpc", LOAD_BALANCERS, [VPCS, SUBNETS]),
  ];
  assert.deepEqual(analyzeRules(rules), new Map());
  assert.deepEqual(analyzeRules([]), new Map());
});

Deno.test("analyzeRules() flags both rules of a two-type cycle", () => {
  const result = analyzeRules([
    entry("c1", "vpc-vm", VPC_DEPENDENT, [VIRTUAL_MACHINES]),
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
  ]);
  const problem = cycle(
    `${VM} -> ${VPC} -> ${VM}`,
    "c1/vm-vpc, c1/vpc-vm",
  );
  assert.deepEqual([...result], [
    ["c1/vm-vpc", [problem]],
    ["c1/vpc-vm", [problem]],
  ]);
  assert.equal(
    problem.message,
    "dependency cycle: virtualmachines.compute.example.com -> " +
      "vpcs.network.example.com -> virtualmachines.compute.example.com " +
      "(rules c1/vm-vpc, c1/vpc-vm); objects that refer to each other can " +
      "only be deleted with the dependencies.opendefense.cloud/skip-protection " +
      "annotation",
  );
});

Deno.test("analyzeRules() flags all three rules of a cycle across clusters", () => {
  const result = analyzeRules([
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c2", "vpc-subnet", VPC_DEPENDENT, [SUBNETS]),
    entry("c3", "subnet-vm", SUBNET_DEPENDENT, [VIRTUAL_MACHINES]),
  ]);
  const problem = cycle(
    `${SUBNET} -> ${VM} -> ${VPC} -> ${SUBNET}`,
    "c1/vm-vpc, c2/vpc-subnet, c3/subnet-vm",
  );
  assert.deepEqual([...result], [
    ["c1/vm-vpc", [problem]],
    ["c2/vpc-subnet", [problem]],
    ["c3/subnet-vm", [problem]],
  ]);
});

Deno.test("analyzeRules() ignores versions when it matches types", () => {
  const vmsV1 = { ...VIRTUAL_MACHINES, version: "v1" };
  const vpcsV2 = { ...VPC_DEPENDENT, version: "v2" };
  const result = analyzeRules([
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c2", "vpc-vm", vpcsV2, [vmsV1]),
  ]);
  assert.deepEqual([...result.keys()], ["c1/vm-vpc", "c2/vpc-vm"]);
});

Deno.test("analyzeRules() flags a rule when only one of its dependencies is in a cycle", () => {
  const result = analyzeRules([
    entry("c1", "vm-many", VIRTUAL_MACHINES, [SUBNETS, VPCS]),
    entry("c1", "vpc-vm", VPC_DEPENDENT, [VIRTUAL_MACHINES]),
  ]);
  const problem = cycle(
    `${VM} -> ${VPC} -> ${VM}`,
    "c1/vm-many, c1/vpc-vm",
  );
  assert.deepEqual([...result], [
    ["c1/vm-many", [problem]],
    ["c1/vpc-vm", [problem]],
  ]);
});

Deno.test("analyzeRules() does not flag rules outside the cycle", () => {
  const result = analyzeRules([
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c1", "vpc-vm", VPC_DEPENDENT, [VIRTUAL_MACHINES]),
    entry("c2", "lb-vpc", LOAD_BALANCERS, [VPCS]),
    entry("c2", "subnet-vpc", SUBNET_DEPENDENT, [VPCS]),
    entry("c3", "lb-subnet", LOAD_BALANCERS, [SUBNETS]),
  ]);
  assert.deepEqual([...result.keys()], ["c1/vm-vpc", "c1/vpc-vm"]);
});

Deno.test("analyzeRules() names the other types of a component that is more than one cycle", () => {
  const result = analyzeRules([
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c1", "vpc-both", VPC_DEPENDENT, [VIRTUAL_MACHINES, SUBNETS]),
    entry("c1", "subnet-vpc", SUBNET_DEPENDENT, [VPCS]),
  ]);
  const problem = cycle(
    `${SUBNET} -> ${VPC} -> ${SUBNET}, also involving ${VM}`,
    "c1/subnet-vpc, c1/vm-vpc, c1/vpc-both",
  );
  assert.deepEqual([...result], [
    ["c1/subnet-vpc", [problem]],
    ["c1/vm-vpc", [problem]],
    ["c1/vpc-both", [problem]],
  ]);
});

Deno.test("analyzeRules() reports a dependency on the rule's own dependent type", () => {
  const vmRule = validRule("vm-self", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
    dependency(VIRTUAL_MACHINES, ".spec.parentRef.name"),
  ]);
  const result = analyzeRules([{ cluster: "c1", rule: vmRule }]);
  assert.deepEqual([...result], [
    ["c1/vm-self", [{
      reason: "SelfDependency",
      message: "spec.dependencies[1] (fieldRef.path '.spec.parentRef.name') " +
        "protects virtualmachines.compute.example.com, the rule's own " +
        "dependent type: a type cannot protect itself through its own " +
        "field; remove this dependency",
    }]],
  ]);
});

Deno.test("enforcedRules() drops exactly the rules analyzeRules() rejects for a self dependency, and keeps cycles", () => {
  const selfRule = {
    cluster: "c1",
    rule: validRule("vm-self", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
      dependency(VIRTUAL_MACHINES, ".spec.parentRef.name"),
    ]),
  };
  const rules = [
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    selfRule,
    entry("c2", "vpc-subnet", VPC_DEPENDENT, [SUBNETS]),
    entry("c2", "subnet-vpc", SUBNET_DEPENDENT, [VPCS]),
  ];
  const enforced = enforcedRules(rules).map((r) =>
    `${r.cluster}/${r.rule.metadata.name}`
  );
  assert.deepEqual(enforced, ["c1/vm-vpc", "c2/vpc-subnet", "c2/subnet-vpc"]);
  const rejected = [...analyzeRules(rules)]
    .filter(([, problems]) =>
      problems.some((p) => p.reason === "SelfDependency")
    )
    .map(([key]) => key);
  assert.deepEqual(rejected, ["c1/vm-self"]);
  assert.deepEqual(enforcedRules([]), []);
});

Deno.test("analyzeRules() reports a self dependency before a cycle of the same rule", () => {
  const vmRule = validRule("vm-self", VIRTUAL_MACHINES, [
    dependency(VIRTUAL_MACHINES, ".spec.parentRef.name"),
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const result = analyzeRules([
    entry("c1", "vpc-vm", VPC_DEPENDENT, [VIRTUAL_MACHINES]),
    { cluster: "c1", rule: vmRule },
  ]);
  assert.deepEqual(
    result.get("c1/vm-self")?.map((problem) => problem.reason),
    ["SelfDependency", "DependencyCycle"],
  );
  assert.deepEqual(
    result.get("c1/vpc-vm")?.map((problem) => problem.reason),
    ["DependencyCycle"],
  );
});

Deno.test("analyzeRules() gives the same result for any order of rules", () => {
  const rules = [
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c2", "vpc-subnet", VPC_DEPENDENT, [SUBNETS]),
    entry("c3", "subnet-vm", SUBNET_DEPENDENT, [VIRTUAL_MACHINES]),
    entry("c3", "subnet-vpc", SUBNET_DEPENDENT, [VPCS]),
    entry("c1", "lb-vpc", LOAD_BALANCERS, [VPCS, LOAD_BALANCERS]),
    entry("c2", "vpc-lb", VPC_DEPENDENT, [LOAD_BALANCERS]),
    entry("c4", "vm-subnet", VIRTUAL_MACHINES, [SUBNETS]),
  ];
  const expected = [...analyzeRules(rules)];
  assert.equal(expected.length, 7);
  for (let seed = 1; seed <= 20; seed++) {
    assert.deepEqual([...analyzeRules(shuffled(rules, seed))], expected);
  }
});

Deno.test("analyzeRules() counts the last entry when a rule key repeats", () => {
  const result = analyzeRules([
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c1", "vpc-vm", VPC_DEPENDENT, [VIRTUAL_MACHINES]),
    entry("c1", "vpc-vm", VPC_DEPENDENT, [SUBNETS]),
  ]);
  assert.deepEqual(result, new Map());
});

Deno.test("analyzeRules() handles a chain of 10,000 rules without recursion", () => {
  const rules = chain(10_000);
  assert.deepEqual(analyzeRules(rules), new Map());
});

Deno.test("analyzeRules() flags every rule of a 10,000-type cycle with a bounded message", () => {
  const result = analyzeRules(chain(10_000, { closed: true }));
  assert.equal(result.size, 10_000);
  const [problem] = result.get("c1/r0")!;
  assert.ok(problem !== undefined);
  assert.equal(problem.reason, "DependencyCycle");
  assert.ok(problem.message.length < 1_000, problem.message);
  assert.match(
    problem.message,
    /^dependency cycle: t0\.chain\.example\.com -> t1\.chain\.example\.com -> .* -> \.\.\. \(9990 more\) -> t0\.chain\.example\.com \(rules c1\/r0, c1\/r1, .* and 9990 more\); /,
  );
});

Deno.test("typeCycles() lists each cycle of types once, sorted, and no self dependency", () => {
  const selfRule = {
    cluster: "c1",
    rule: validRule("vm-self", VIRTUAL_MACHINES, [
      dependency(VIRTUAL_MACHINES, ".spec.parentRef.name"),
    ]),
  };
  const rules = [
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c2", "vpc-subnet", VPC_DEPENDENT, [SUBNETS]),
    entry("c3", "subnet-vm", SUBNET_DEPENDENT, [VIRTUAL_MACHINES]),
    entry("c1", "lb-vpc", LOAD_BALANCERS, [VPCS]),
    selfRule,
    ...chain(3, { closed: true }),
  ];
  const expected = [
    [SUBNET, VM, VPC],
    [
      "t0.chain.example.com",
      "t1.chain.example.com",
      "t2.chain.example.com",
    ],
  ];
  assert.deepEqual(typeCycles(rules), expected);
  for (let seed = 1; seed <= 10; seed++) {
    assert.deepEqual(typeCycles(shuffled(rules, seed)), expected);
  }
  assert.deepEqual(typeCycles([selfRule]), []);
  assert.deepEqual(typeCycles([]), []);
});

Deno.test("typeCycles() finds a cycle exactly when analyzeRules() reports one", () => {
  const rules = [
    entry("c1", "vm-vpc", VIRTUAL_MACHINES, [VPCS]),
    entry("c1", "vpc-vm", VPC_DEPENDENT, [VIRTUAL_MACHINES]),
    entry("c1", "vpc-vm", VPC_DEPENDENT, [SUBNETS]),
  ];
  assert.deepEqual(typeCycles(rules), []);
  assert.deepEqual(typeCycles(rules.slice(0, 2)), [[VM, VPC]]);
  assert.equal(analyzeRules(rules.slice(0, 2)).size, 2);
});
