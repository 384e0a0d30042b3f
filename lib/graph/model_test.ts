import assert from "node:assert/strict";
import fc from "fast-check";
import { buildGraph, graphJson, type GraphRuleInput, nodeId } from "./model.ts";
import { graphDot } from "./dot.ts";
import {
  analyzeRules,
  type Dependency,
  type DependencyRule,
  type GroupVersionResource,
} from "../rules/mod.ts";
import {
  dependency,
  type DependentType,
  LOAD_BALANCERS,
  SUBNETS,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

const VM = "virtualmachines.compute.example.com";
const VPC = "vpcs.network.example.com";
const SUBNET = "subnets.network.example.com";
const LB = "loadbalancers.lb.example.com";

const VPC_DEPENDENT: DependentType = { ...VPCS, kind: "VPC" };
const SUBNET_DEPENDENT: DependentType = { ...SUBNETS, kind: "Subnet" };

/** `rule` with a Ready condition of `status` and `reason`. */
function withReady(
  rule: DependencyRule,
  status: string,
  reason: string,
): DependencyRule {
  return {
    ...rule,
    status: {
      conditions: [
        { type: "WebhooksInstalled", status: "True", reason: "Installed" },
        { type: "Ready", status, reason, message: "" },
      ],
    },
  };
}

/** A rule `name` of `dependent` on each of `targets` at `.spec.<resource>Ref.name`. */
function simple(
  name: string,
  dependent: DependentType,
  targets: readonly GroupVersionResource[],
): DependencyRule {
  return withReady(
    validRule(
      name,
      dependent,
      targets.map((t) => dependency(t, `.spec.${t.resource}Ref.name`)),
    ),
    "True",
    "Enforced",
  );
}

Deno.test("buildGraph() draws an edge from the dependent to the protected type, whichever object holds the reference", () => {
  const owners: Dependency[] = [
    {
      ...dependency(VPCS, ".spec.vpcRef.name"),
      fieldRef: {
        path: ".spec.vpcRef.name",
        namespacePath: ".spec.vpcRef.namespace",
      },
    },
    {
      ...dependency(SUBNETS, '.metadata.labels["example.com/vm"]'),
      fieldRef: { from: "Target", path: '.metadata.labels["example.com/vm"]' },
    },
    {
      ...dependency(LOAD_BALANCERS, '.metadata.labels["example.com/vm"]'),
      apiExportRef: { path: "root:providers:lb", name: "lb.example.com" },
      fieldRef: {
        from: "TargetNamespace",
        path: '.metadata.labels["example.com/vm"]',
      },
    },
  ];
  const base = validRule("vm-owns", VIRTUAL_MACHINES, owners);
  const rule = withReady(
    {
      ...base,
      spec: { ...base.spec, when: "object.spec.x", protectWhile: "Active" },
    },
    "True",
    "Enforced",
  );
  const graph = buildGraph([
    { cluster: "2x8ab", workspace: "root:providers:compute", rule },
  ]);

  assert.deepEqual(graph.nodes.map((n) => n.id), [LB, SUBNET, VM, VPC]);
  assert.deepEqual(graph.nodes[2], {
    id: VM,
    group: "compute.example.com",
    resource: "virtualmachines",
    kinds: ["VirtualMachine"],
    exports: ["root:providers:compute:compute.example.com"],
    locks: 0,
  });
  assert.deepEqual(graph.nodes[0], {
    id: LB,
    group: "lb.example.com",
    resource: "loadbalancers",
    kinds: [],
    exports: ["root:providers:lb:lb.example.com"],
    locks: 0,
  });
  assert.deepEqual(graph.edges.map((e) => e.id), [
    "2x8ab/vm-owns#0",
    "2x8ab/vm-owns#1",
    "2x8ab/vm-owns#2",
  ]);
  assert.deepEqual(graph.edges[0], {
    id: "2x8ab/vm-owns#0",
    rule: "2x8ab/vm-owns",
    ruleName: "vm-owns",
    cluster: "2x8ab",
    workspace: "root:providers:compute",
    from: VM,
    to: VPC,
    source: "Dependent",
    path: ".spec.vpcRef.name",
    namespacePath: ".spec.vpcRef.namespace",
    when: "object.spec.x",
    protectWhile: "Active",
    ready: "True",
    inCycle: false,
    selfDependency: false,
  });
  assert.equal(graph.edges[1]!.source, "Target");
  assert.equal(graph.edges[1]!.from, VM);
  assert.equal(graph.edges[1]!.to, SUBNET);
  assert.equal(graph.edges[2]!.source, "TargetNamespace");
  assert.equal(graph.edges[2]!.to, LB);
  assert.deepEqual(graph.cycles, []);
});

Deno.test("buildGraph() leaves out what a rule does not set", () => {
  const graph = buildGraph([
    {
      cluster: "c1",
      rule: validRule("vm-vpc", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    },
  ]);
  const [only] = graph.edges;
  assert.ok(only !== undefined);
  for (const key of ["workspace", "namespacePath", "when", "reason"]) {
    assert.ok(!(key in only), key);
  }
  assert.equal(only.protectWhile, "Exists");
  assert.equal(only.source, "Dependent");
  assert.deepEqual(graph.nodes.find((n) => n.id === VM)?.exports, [
    "c1:compute.example.com",
  ]);
});

Deno.test("buildGraph() finds a cycle of three types and marks only its edges", () => {
  const graph = buildGraph([
    { cluster: "c1", rule: simple("vm-vpc", VIRTUAL_MACHINES, [VPCS]) },
    { cluster: "c2", rule: simple("vpc-subnet", VPC_DEPENDENT, [SUBNETS]) },
    {
      cluster: "c3",
      rule: simple("subnet-vm", SUBNET_DEPENDENT, [VIRTUAL_MACHINES]),
    },
    { cluster: "c4", rule: simple("lb-vpc", LOAD_BALANCERS, [VPCS]) },
  ]);
  assert.deepEqual(graph.cycles, [[SUBNET, VM, VPC]]);
  assert.deepEqual(
    graph.edges.map((e) => [e.id, e.inCycle]),
    [
      ["c1/vm-vpc#0", true],
      ["c2/vpc-subnet#0", true],
      ["c3/subnet-vm#0", true],
      ["c4/lb-vpc#0", false],
    ],
  );
  // The same types as analyzeRules names them.
  const flagged = [
    ...analyzeRules([
      { cluster: "c1", rule: simple("vm-vpc", VIRTUAL_MACHINES, [VPCS]) },
      { cluster: "c2", rule: simple("vpc-subnet", VPC_DEPENDENT, [SUBNETS]) },
      {
        cluster: "c3",
        rule: simple("subnet-vm", SUBNET_DEPENDENT, [VIRTUAL_MACHINES]),
      },
    ]).values(),
  ].flat();
  for (const type of [SUBNET, VM, VPC]) {
    assert.ok(flagged[0]!.message.includes(type), type);
  }
});

Deno.test("buildGraph() marks a self-dependency, which is no cycle", () => {
  const rule = withReady(
    validRule("vm-self", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
      dependency(VIRTUAL_MACHINES, ".spec.parentRef.name"),
    ]),
    "False",
    "SelfDependency",
  );
  const graph = buildGraph([{ cluster: "c1", rule }]);
  assert.deepEqual(graph.nodes.map((n) => n.id), [VM, VPC]);
  assert.deepEqual(graph.cycles, []);
  assert.deepEqual(
    graph.edges.map((e) => [e.from, e.to, e.selfDependency, e.inCycle]),
    [[VM, VPC, false, false], [VM, VM, true, false]],
  );
  assert.equal(graph.edges[1]!.reason, "SelfDependency");
});

Deno.test("buildGraph() reads the Ready condition leniently", () => {
  const base = simple("r", VIRTUAL_MACHINES, [VPCS]);
  const ready = (status: unknown) =>
    buildGraph([{ cluster: "c", rule: { ...base, status } }]).edges[0]!;
  assert.deepEqual(
    [ready(withReady(base, "False", "PathNotResolved").status)].map((
      e,
    ) => [e.ready, e.reason]),
    [["False", "PathNotResolved"]],
  );
  const notReady = ready(withReady(base, "Unknown", "ProviderNotBound").status);
  assert.equal(notReady.ready, "Unknown");
  assert.equal(notReady.reason, "ProviderNotBound");
  const isReady = ready(withReady(base, "True", "Enforced").status);
  assert.equal(isReady.ready, "True");
  assert.ok(!("reason" in isReady));
  for (
    const status of [
      undefined,
      null,
      "Ready",
      { conditions: "Ready" },
      { conditions: [null, { type: "WebhooksInstalled", status: "True" }] },
      { conditions: [{ type: "Ready", status: "Maybe" }] },
    ]
  ) {
    const e = ready(status);
    assert.equal(e.ready, "Unknown", JSON.stringify(status));
    assert.ok(!("reason" in e));
  }
  assert.equal(
    ready({ conditions: [{ type: "Ready", status: "False", reason: 7 }] })
      .reason,
    undefined,
  );
});

Deno.test("buildGraph() counts Locks of the types it draws and ignores others", () => {
  const graph = buildGraph(
    [{ cluster: "c1", rule: simple("vm-vpc", VIRTUAL_MACHINES, [VPCS]) }],
    { locks: new Map([[VPC, 3], ["others.example.com", 2]]) },
  );
  assert.deepEqual(graph.nodes.map((n) => [n.id, n.locks]), [[VM, 0], [
    VPC,
    3,
  ]]);
});

Deno.test("buildGraph() counts the last entry when a rule key repeats, and merges kinds and exports", () => {
  const graph = buildGraph([
    { cluster: "c1", rule: simple("r", VIRTUAL_MACHINES, [VPCS]) },
    { cluster: "c1", rule: simple("r", VIRTUAL_MACHINES, [SUBNETS]) },
    { cluster: "c2", rule: simple("vpc-subnet", VPC_DEPENDENT, [SUBNETS]) },
    {
      cluster: "c3",
      rule: simple("vpc2-subnet", { ...VPC_DEPENDENT, kind: "Vpc" }, [SUBNETS]),
    },
  ]);
  assert.deepEqual(graph.edges.map((e) => `${e.id} ${e.to}`), [
    `c1/r#0 ${SUBNET}`,
    `c2/vpc-subnet#0 ${SUBNET}`,
    `c3/vpc2-subnet#0 ${SUBNET}`,
  ]);
  const vpc = graph.nodes.find((n) => n.id === VPC);
  assert.deepEqual(vpc?.kinds, ["VPC", "Vpc"]);
  assert.deepEqual(vpc?.exports, [
    "c2:network.example.com",
    "c3:network.example.com",
  ]);
});

Deno.test("nodeId() names types as analyzeRules() does", () => {
  assert.equal(nodeId("network.example.com", "vpcs"), VPC);
  assert.equal(nodeId("", "configmaps"), "configmaps");
});

Deno.test("graphJson() is plain, versioned JSON with every key present", () => {
  const graph = buildGraph([
    { cluster: "c1", rule: simple("vm-vpc", VIRTUAL_MACHINES, [VPCS]) },
    {
      cluster: "c2",
      workspace: "root:net",
      rule: simple("vpc-vm", VPC_DEPENDENT, [VIRTUAL_MACHINES]),
    },
  ], { locks: new Map([[VPC, 1]]) });
  const json = graphJson(graph);
  assert.deepEqual(JSON.parse(JSON.stringify(json)), json);
  assert.equal(json.kind, "DependencyGraph");
  assert.equal(json.version, 1);
  assert.deepEqual(json.cycles, [[VM, VPC]]);
  assert.deepEqual(json.nodes[1], {
    id: VPC,
    group: "network.example.com",
    resource: "vpcs",
    kinds: ["VPC"],
    exports: [
      "root:net:network.example.com",
      "root:providers:network:network.example.com",
    ],
    locks: 1,
  });
  assert.deepEqual(Object.keys(json.edges[0]!), [
    "id",
    "rule",
    "ruleName",
    "cluster",
    "workspace",
    "from",
    "to",
    "source",
    "path",
    "namespacePath",
    "when",
    "protectWhile",
    "ready",
    "reason",
    "inCycle",
    "selfDependency",
  ]);
  assert.equal(json.edges[0]!.workspace, null);
  assert.equal(json.edges[1]!.workspace, "root:net");
  assert.equal(json.edges[0]!.when, null);
  assert.equal(json.edges[0]!.inCycle, true);
  // A copy: changing it leaves the graph alone.
  json.nodes[0]!.kinds.push("X");
  assert.deepEqual(graph.nodes[0]!.kinds, ["VirtualMachine"]);
});

const TYPES: DependentType[] = [
  VIRTUAL_MACHINES,
  LOAD_BALANCERS,
  VPC_DEPENDENT,
  SUBNET_DEPENDENT,
];

/** A small rule over {@linkcode TYPES}, with its logical cluster. */
const ruleInput: fc.Arbitrary<GraphRuleInput> = fc.record({
  cluster: fc.constantFrom("c1", "c2", "c3"),
  workspace: fc.option(fc.constantFrom("root:a", "root:b"), { nil: undefined }),
  name: fc.constantFrom("r1", "r2", "r3", "r4"),
  dependent: fc.nat({ max: TYPES.length - 1 }),
  targets: fc.array(
    fc.record({
      type: fc.nat({ max: TYPES.length - 1 }),
      from: fc.constantFrom(
        "Dependent",
        "Target",
        "TargetNamespace",
      ) as fc.Arbitrary<
        "Dependent" | "Target" | "TargetNamespace"
      >,
    }),
    { minLength: 1, maxLength: 3 },
  ),
  ready: fc.constantFrom("True", "False", "Unknown", "none"),
}).map(({ cluster, workspace, name, dependent, targets, ready }) => {
  const dependencies = targets.map(({ type, from }): Dependency => ({
    ...dependency(TYPES[type]!, ".spec.ref.name"),
    fieldRef: { from, path: ".spec.ref.name" },
  }));
  const base = validRule(name, TYPES[dependent]!, dependencies);
  const rule = ready === "none" ? base : withReady(base, ready, "Because");
  return workspace === undefined
    ? { cluster, rule }
    : { cluster, workspace, rule };
});

/** Rules with distinct keys, and the same rules in another order. */
const twoOrders = fc.uniqueArray(ruleInput, {
  maxLength: 12,
  selector: (r) => `${r.cluster}/${r.rule.metadata.name}`,
}).chain((rules) =>
  fc.tuple(
    fc.constant(rules),
    fc.shuffledSubarray(rules, {
      minLength: rules.length,
      maxLength: rules.length,
    }),
  )
);

Deno.test("buildGraph(), graphJson() and graphDot() are the same for any order of the rules", () => {
  fc.assert(
    fc.property(twoOrders, ([rules, shuffled]) => {
      const locks = new Map([[VPC, 2]]);
      const a = buildGraph(rules, { locks });
      const b = buildGraph(shuffled, { locks });
      assert.deepEqual(b, a);
      assert.equal(
        JSON.stringify(graphJson(b)),
        JSON.stringify(graphJson(a)),
      );
      assert.equal(graphDot(b), graphDot(a));
      // Every edge's ends are nodes; a cycle edge joins two types of one cycle.
      const ids = new Set(a.nodes.map((n) => n.id));
      for (const e of a.edges) {
        assert.ok(ids.has(e.from) && ids.has(e.to));
        assert.equal(e.selfDependency, e.from === e.to);
        const inOne = a.cycles.some((c) =>
          c.includes(e.from) && c.includes(e.to)
        );
        assert.equal(e.inCycle, !e.selfDependency && inOne);
      }
      assert.equal(
        a.edges.length,
        rules.reduce((n, r) => n + r.rule.spec.dependencies.length, 0),
      );
    }),
  );
});
