import assert from "node:assert/strict";
import { CYCLE_COLOR, dotString, graphDot, MAX_WHEN_LABEL } from "./dot.ts";
import { buildGraph, type GraphRuleInput } from "./model.ts";
import { renderSvg } from "./svg.ts";
import type { Dependency, DependencyRule } from "../rules/mod.ts";
import {
  dependency,
  type DependentType,
  LOAD_BALANCERS,
  SUBNETS,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

const VPC_DEPENDENT: DependentType = { ...VPCS, kind: "VPC" };
const SUBNET_DEPENDENT: DependentType = { ...SUBNETS, kind: "Subnet" };

/** Names a tenant could give a rule or a logical cluster. */
const HOSTILE = [
  "</svg><script>alert(1)</script>",
  '" onload="x',
  '\\"];evil->x[',
  "red\u001b[31m",
  "bidi\u202eevil",
  "new\nline\r\tand\u0000nul",
  "\\N\\G\\E\\T\\H\\L\\l\\n\\r",
  "&#x202e;&#27;&lt;&amp;",
  "lone\ud800surrogate",
  "trailing\\",
];

/** `rule` with a Ready condition of `status` and `reason`. */
function withReady(
  rule: DependencyRule,
  status: "True" | "False",
  reason: string,
): DependencyRule {
  return {
    ...rule,
    status: { conditions: [{ type: "Ready", status, reason }] },
  };
}

/** A Ready rule `name` of `dependent` on `targets`, in `cluster`. */
function ready(
  cluster: string,
  name: string,
  dependent: DependentType,
  targets: readonly Dependency[],
): GraphRuleInput {
  return {
    cluster,
    rule: withReady(validRule(name, dependent, targets), "True", "Enforced"),
  };
}

/** The node and edge groups of Graphviz's SVG, ids and classes decoded. */
function groups(
  svg: string,
): { id: string; classes: string[]; body: string }[] {
  const found = [];
  for (
    const match of svg.matchAll(
      /<g id="([^"]*)" class="((?:node|edge)[^"]*)">([\s\S]*?)<\/g>/g,
    )
  ) {
    found.push({
      id: xmlText(match[1]!),
      classes: xmlText(match[2]!).split(" "),
      body: match[3]!,
    });
  }
  return found;
}

/** The text of XML character data as Graphviz writes it. */
function xmlText(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_, code) => String.fromCodePoint(Number(code)))
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}

Deno.test("graphDot() writes a box per type and an arrow per rule dependency", () => {
  const graph = buildGraph(
    [ready("c1", "vm-vpc", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ])],
    { locks: new Map([["vpcs.network.example.com", 2]]) },
  );
  assert.equal(
    graphDot(graph, { title: "Dependencies" }),
    [
      'digraph "dependencies" {',
      '  graph [rankdir="LR", fontname="Helvetica", fontsize="16", label="Dependencies", labelloc="t"];',
      '  node [shape="box", style="rounded", fontname="Helvetica", fontsize="12"];',
      '  edge [fontname="Helvetica", fontsize="10"];',
      '  "virtualmachines.compute.example.com" [id="node:virtualmachines.compute.example.com", class="type", label="VirtualMachine\\ncompute.example.com"];',
      '  "vpcs.network.example.com" [id="node:vpcs.network.example.com", class="type", label="vpcs\\nnetwork.example.com\\n2 Locks", penwidth="2"];',
      '  "virtualmachines.compute.example.com" -> "vpcs.network.example.com" [id="edge:c1/vm-vpc#0", class="rule", label="vm-vpc\\nrefers via .spec.vpcRef.name"];',
      "}",
      "",
    ].join("\n"),
  );
  assert.ok(!graphDot(graph).includes("labelloc"));
});

Deno.test("graphDot() labels where the reference is, the switch and what is not the default", () => {
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
      ...dependency(LOAD_BALANCERS, ".metadata.ownerReferences[*].name"),
      fieldRef: {
        from: "TargetNamespace",
        path: ".metadata.ownerReferences[*].name",
      },
    },
  ];
  const base = validRule("vm-owns", VIRTUAL_MACHINES, owners);
  const when = `object.spec.protect == true && ${"x".repeat(200)}`;
  const rule = withReady(
    { ...base, spec: { ...base.spec, when, protectWhile: "Active" } },
    "False",
    "PathNotResolved",
  );
  const dot = graphDot(buildGraph([{ cluster: "c1", rule }]));
  const edges = dot.split("\n").filter((line) => line.includes(" -> "));
  assert.equal(edges.length, 3);
  assert.ok(edges[0]!.includes(
    "refers via .spec.vpcRef.name\\nnamespace via .spec.vpcRef.namespace",
  ));
  assert.ok(edges[1]!.includes(
    'owner named by .metadata.labels[\\"example.com/vm\\"]',
  ));
  assert.ok(edges[2]!.includes(
    "owner named by namespace .metadata.ownerReferences[*].name",
  ));
  for (const line of edges) {
    assert.ok(line.includes('class="rule not-ready"'), line);
    assert.ok(line.includes('color="darkorange"'), line);
    assert.ok(line.includes('style="dashed"'), line);
    assert.ok(line.includes("\\nprotectWhile: Active\\n"), line);
    assert.ok(line.includes("\\nnot Ready: PathNotResolved"), line);
    const shown = /\\nwhen: ([^\\]*)\\n/.exec(line)?.[1];
    assert.ok(shown !== undefined, line);
    assert.equal(
      `when: ${shown.replaceAll("&amp;", "&")}`.length,
      MAX_WHEN_LABEL + "...".length,
    );
    assert.ok(shown.startsWith("object.spec.protect == true &amp;&amp; xxx"));
    assert.ok(shown.endsWith("x..."));
  }
});

Deno.test("graphDot() says when a rule's readiness is unknown", () => {
  const rule = validRule("r", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const dot = graphDot(buildGraph([{ cluster: "c", rule }]));
  assert.ok(dot.includes('\\nReady: Unknown"'), dot);
  assert.ok(dot.includes('class="rule not-ready"'), dot);
});

Deno.test("dotString() quotes text so that Graphviz shows it as it is", () => {
  assert.equal(
    dotString("vpcs.network.example.com"),
    '"vpcs.network.example.com"',
  );
  assert.equal(dotString('a"b'), '"a\\"b"');
  assert.equal(dotString("a\\b"), '"a\\\\b"');
  assert.equal(dotString("trailing\\"), '"trailing\\\\"');
  assert.equal(dotString("\\N\\n"), '"\\\\N\\\\n"');
  assert.equal(dotString("&#27;"), '"&amp;#27;"');
  assert.equal(dotString("a\nb\u001b[31m"), '"a\\\\u{a}b\\\\u{1b}[31m"');
  assert.equal(dotString("\u202e"), '"\\\\u{202e}"');
  assert.equal(dotString("x\ud800"), '"x\ufffd"');
  assert.equal(dotString("abcdef", 3), '"abc..."');
});

Deno.test("graphDot() output parses: Graphviz draws one group per type and rule dependency, whatever the names", async () => {
  const rules: GraphRuleInput[] = HOSTILE.map((name, index) => ({
    cluster: name,
    workspace: name,
    rule: withReady(
      validRule(name, VIRTUAL_MACHINES, [
        dependency(index % 2 === 0 ? VPCS : SUBNETS, ".spec.ref.name"),
      ]),
      index % 3 === 0 ? "True" : "False",
      "FieldNotInSchema",
    ),
  }));
  rules[0] = {
    ...rules[0]!,
    rule: {
      ...rules[0]!.rule,
      spec: { ...rules[0]!.rule.spec, when: HOSTILE.join(" ") },
    },
  };
  const graph = buildGraph(rules);
  const dot = graphDot(graph, { title: HOSTILE.join(" ") });
  // deno-lint-ignore no-control-regex
  assert.doesNotMatch(dot, /[\u0000-\u0009\u000b-\u001f\u007f\u202e]/);
  const svg = await renderSvg(dot);

  assert.equal(svg.match(/class="node/g)?.length, graph.nodes.length);
  assert.equal(svg.match(/class="edge/g)?.length, HOSTILE.length);
  assert.ok(!svg.includes("<script"));
  assert.ok(!svg.includes('" onload="'));
  // deno-lint-ignore no-control-regex
  assert.doesNotMatch(svg, /[\u0000-\u0008\u000b-\u001f\u007f\u202e\ufffe]/);
  assert.ok(!svg.includes("&#27;") && !svg.includes("&#x202e;"));

  const found = groups(svg);
  assert.deepEqual(
    found.filter((g) => g.classes[0] === "node").map((g) => g.id),
    graph.nodes.map((node) => `node:${node.id}`),
  );
  // Names Graphviz need not change come through exactly.
  const ids = new Set(found.map((g) => g.id));
  for (const name of HOSTILE.slice(0, 3)) {
    assert.ok(ids.has(`edge:${name}/${name}#0`), name);
  }
  assert.ok(
    ids.has("edge:\\N\\G\\E\\T\\H\\L\\l\\n\\r/\\N\\G\\E\\T\\H\\L\\l\\n\\r#0"),
  );
  assert.ok(ids.has("edge:&#x202e;&#27;&lt;&amp;/&#x202e;&#27;&lt;&amp;#0"));
  // No escape of Graphviz's turned a name into several lines or another name.
  const label = found.find((g) => g.id.startsWith("edge:\\N"))!.body;
  assert.ok(label.includes(">\\N\\G\\E\\T\\H\\L\\l\\n\\r</text>"), label);
  const title = svg.match(/<text[^>]*font-size="16.00">([^<]*)<\/text>/)?.[1];
  assert.ok(title?.startsWith("&lt;/svg&gt;&lt;script&gt;"), String(title));
});

Deno.test("graphDot() draws the edges of a cycle red, and only those", async () => {
  const graph = buildGraph([
    ready("c1", "vm-vpc", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
    ready("c2", "vpc-subnet", VPC_DEPENDENT, [
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
    ready("c3", "subnet-vm", SUBNET_DEPENDENT, [
      dependency(VIRTUAL_MACHINES, ".spec.vmRef.name"),
    ]),
    ready("c4", "lb-vpc", LOAD_BALANCERS, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
    {
      cluster: "c5",
      rule: withReady(
        validRule("lb-self", LOAD_BALANCERS, [
          dependency(LOAD_BALANCERS, ".spec.lbRef.name"),
        ]),
        "False",
        "SelfDependency",
      ),
    },
  ]);
  const svg = await renderSvg(graphDot(graph));
  const edges = groups(svg).filter((g) => g.classes[0] === "edge");
  assert.equal(svg.match(/class="node/g)?.length, 4);
  assert.equal(edges.length, 5);
  const red = (body: string) => body.includes(`stroke="${CYCLE_COLOR}"`);
  for (const e of edges) {
    const inCycle = [
      "edge:c1/vm-vpc#0",
      "edge:c2/vpc-subnet#0",
      "edge:c3/subnet-vm#0",
    ]
      .includes(e.id);
    assert.equal(e.classes.includes("cycle"), inCycle, e.id);
    assert.equal(red(e.body), inCycle, e.id);
    assert.ok(/<path [^>]*stroke=/.test(e.body), e.id);
  }
  const self = edges.find((e) => e.id === "edge:c5/lb-self#0")!;
  assert.deepEqual(self.classes, ["edge", "rule", "not-ready", "self"]);
  assert.ok(self.body.includes('stroke="darkorange"'));
  assert.ok(self.body.includes("stroke-dasharray"));
});

Deno.test("graphDot() never cuts a node name or an id, only labels", () => {
  const name = `r-${"a".repeat(700)}`;
  const rule = validRule(name, VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const dot = graphDot(buildGraph([{ cluster: "c", rule }]));
  assert.ok(dot.includes(`[id="edge:c/${name}#0", class=`));
  assert.ok(dot.includes(`label="r-${"a".repeat(598)}...\\n`));
});
