// deno-lint-ignore-file no-control-regex
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import type { Cause, CauseObject } from "../causes/mod.ts";
import {
  renderDot,
  renderJson,
  renderTree,
  renderWhy,
  renderYaml,
} from "./why_render.ts";
import type { WhyNode } from "./why_walk.ts";

const VPC: CauseObject = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
  kind: "VPC",
  namespace: "default",
  name: "core",
};

function vm(name: string, namespace = "default"): CauseObject {
  return {
    group: "compute.example.com",
    version: "v1alpha1",
    resource: "virtualmachines",
    kind: "VirtualMachine",
    namespace,
    name,
  };
}

const NETWORK: CauseObject = {
  group: "owners.example.com",
  version: "v1alpha1",
  resource: "networks",
  kind: "Network",
  namespace: "default",
  name: "net-a",
};

const REFERENCE: Cause = {
  type: "Reference",
  object: vm("vm-1"),
  fields: [".spec.vpcRef.name"],
  rules: ["2x8ab/vm-vpc"],
};

const OWNER: Cause = {
  type: "Owner",
  object: NETWORK,
  field: '.metadata.labels["example.com/owner"]',
  viaNamespace: "default",
  rule: "9zz/network-owner",
  when: "self.spec.deletionProtection",
};

const LOCK: Cause = {
  type: "Lock",
  lock: { namespace: "default", name: "prod" },
  reason: "production VPC, ask #netops",
};

const MORE: Cause = { type: "More", of: "Reference", count: 3 };

const HELD: WhyNode = {
  object: VPC,
  state: "held",
  held: true,
  message:
    'admission webhook "dependency-controller.dependencies.opendefense.cloud" denied the request: cannot delete vpcs/core: ...',
  causes: [REFERENCE, OWNER, LOCK, MORE],
};

/** Escape sequences and direction overrides, as a tenant may name things. */
const EVIL = "\u001b[31mevil";
const RLO = "a\u202eb";
/** Every character that must not reach a terminal as it is. */
const RAW =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** A held VPC whose every tenant-written string is hostile. */
function hostile(): WhyNode {
  const object = { ...vm(EVIL, RLO), kind: `Kind${EVIL}` };
  return {
    object: { ...VPC, name: `core${EVIL}` },
    state: "held",
    held: true,
    message: `cannot delete: ${EVIL}\n${RLO}`,
    causes: [
      {
        type: "Reference",
        object,
        fields: [`.spec.${EVIL}`, RLO],
        rules: [`c/${RLO}`],
        note: `note ${EVIL}`,
      },
      {
        type: "Owner",
        object: { ...NETWORK, name: RLO },
        field: `.metadata.labels["${EVIL}"]`,
        viaNamespace: RLO,
        rule: EVIL,
        when: `self.spec.x == "${EVIL}"\u0085\u2066`,
        note: "\u0007bell",
      },
      {
        type: "Lock",
        lock: { namespace: RLO, name: EVIL },
        reason: `reason ${EVIL}\r\n\u200f"quoted\\"`,
      },
    ],
    children: [
      {
        object,
        state: "denied",
        held: true,
        message: `${EVIL} busy`,
        causes: [],
        children: [],
      },
      { object: { ...NETWORK, name: RLO }, state: "error", error: `${EVIL}` },
    ],
  };
}

Deno.test("renderTree: a held object, each kind of cause on its own branch", () => {
  assert.equal(
    renderTree(HELD),
    [
      "VPC default/core is held by:",
      "\u251c\u2500\u2500 referenced by VirtualMachine default/vm-1 (.spec.vpcRef.name; rule 2x8ab/vm-vpc)",
      '\u251c\u2500\u2500 belongs to Network default/net-a (.metadata.labels["example.com/owner"] of namespace default; when self.spec.deletionProtection; rule 9zz/network-owner)',
      "\u251c\u2500\u2500 locked by Lock default/prod (reason: production VPC, ask #netops)",
      "\u2514\u2500\u2500 and 3 more dependents not named",
      "",
    ].join("\n"),
  );
});

Deno.test("renderTree: an expiring Lock says until when it holds", () => {
  const expiring: WhyNode = {
    ...HELD,
    causes: [{ ...LOCK, expiresAt: "2026-12-01T18:00:00Z" }] as Cause[],
  };
  assert.equal(
    renderTree(expiring),
    [
      "VPC default/core is held by:",
      "\u2514\u2500\u2500 locked by Lock default/prod (reason: production VPC, ask #netops; until 2026-12-01T18:00:00Z)",
      "",
    ].join("\n"),
  );
});

Deno.test("renderTree: each cause says since when its blocker holds, and how long ago by the clock given", () => {
  const since = "2026-11-29T12:00:00Z";
  const timed: WhyNode = {
    ...HELD,
    causes: [
      { ...REFERENCE, since },
      { ...OWNER, since },
      { ...LOCK, since },
    ] as Cause[],
  };
  assert.equal(
    renderTree(timed, { now: Date.parse("2026-11-29T15:30:00Z") }),
    [
      "VPC default/core is held by:",
      `\u251c\u2500\u2500 referenced by VirtualMachine default/vm-1 (.spec.vpcRef.name; rule 2x8ab/vm-vpc; since ${since} (3h ago))`,
      `\u251c\u2500\u2500 belongs to Network default/net-a (.metadata.labels["example.com/owner"] of namespace default; when self.spec.deletionProtection; rule 9zz/network-owner; since ${since} (3h ago))`,
      `\u2514\u2500\u2500 locked by Lock default/prod (reason: production VPC, ask #netops; since ${since} (3h ago))`,
      "",
    ].join("\n"),
  );
  assert.match(
    renderTree(timed),
    /\(reason: production VPC, ask #netops; since 2026-11-29T12:00:00Z\)\n$/,
  );
  const json = JSON.parse(renderJson(timed)) as WhyNode;
  assert.deepEqual(json.causes?.map((c) => "since" in c && c.since), [
    since,
    since,
    since,
  ]);
});

Deno.test("renderTree: nothing holds it, or denied for another reason, on one line", () => {
  assert.equal(
    renderTree({
      object: { ...VPC, namespace: "" },
      state: "free",
      held: false,
      causes: [],
    }),
    "VPC core: nothing holds it, a delete would go through\n",
  );
  assert.equal(
    renderTree({
      object: VPC,
      state: "denied",
      held: true,
      message:
        'admission webhook "dependency-controller.dependencies.opendefense.cloud" denied the request: cannot delete vpcs/core: the dependency webhook cannot check now',
      causes: [],
    }),
    "VPC default/core cannot be deleted now: cannot delete vpcs/core: the dependency webhook cannot check now\n",
  );
});

Deno.test("renderTree: recursive, blockers nest below their cause, with cycle, seen, free, denied, error and cut marked", () => {
  const node: WhyNode = {
    ...HELD,
    causes: [REFERENCE, OWNER, LOCK],
    children: [
      {
        object: vm("vm-1"),
        state: "held",
        held: true,
        message: "...",
        causes: [
          {
            type: "Reference",
            object: VPC,
            fields: [".spec.x"],
            rules: ["r/a", "r/b"],
          },
          { type: "Reference", object: vm("vm-2"), fields: [], rules: [] },
          { type: "Reference", object: vm("vm-3"), fields: [], rules: [] },
          { type: "Reference", object: vm("vm-4"), fields: [], rules: [] },
          { type: "Reference", object: vm("vm-5"), fields: [], rules: [] },
        ],
        children: [
          { object: VPC, state: "cycle" },
          {
            object: vm("vm-2"),
            state: "held",
            held: true,
            message: "...",
            causes: [LOCK],
            children: [],
          },
          {
            object: vm("vm-3"),
            state: "denied",
            held: true,
            message: "busy",
            causes: [],
            children: [],
          },
          { object: vm("vm-4"), state: "error", error: "you may not delete" },
          { object: vm("vm-5"), state: "cut" },
        ],
      },
      { object: NETWORK, state: "free", held: false, causes: [], children: [] },
    ],
  };
  assert.equal(
    renderTree(node, { limit: 7 }),
    [
      "VPC default/core is held by:",
      "\u251c\u2500\u2500 referenced by VirtualMachine default/vm-1 (.spec.vpcRef.name; rule 2x8ab/vm-vpc)",
      "\u2502   \u251c\u2500\u2500 referenced by VPC default/core (.spec.x; rules r/a, r/b) (cycle)",
      "\u2502   \u251c\u2500\u2500 referenced by VirtualMachine default/vm-2",
      "\u2502   \u2502   \u2514\u2500\u2500 locked by Lock default/prod (reason: production VPC, ask #netops)",
      "\u2502   \u251c\u2500\u2500 referenced by VirtualMachine default/vm-3",
      "\u2502   \u2502   \u2514\u2500\u2500 cannot be deleted now: busy",
      "\u2502   \u251c\u2500\u2500 referenced by VirtualMachine default/vm-4",
      "\u2502   \u2502   \u2514\u2500\u2500 cannot tell: you may not delete",
      "\u2502   \u2514\u2500\u2500 referenced by VirtualMachine default/vm-5 (not asked: the walk's bound was reached)",
      '\u251c\u2500\u2500 belongs to Network default/net-a (.metadata.labels["example.com/owner"] of namespace default; when self.spec.deletionProtection; rule 9zz/network-owner), nothing holds it',
      "\u2514\u2500\u2500 locked by Lock default/prod (reason: production VPC, ask #netops)",
      "the walk stopped at 7 objects: 1 not asked about",
      "",
    ].join("\n"),
  );
  const seen = renderTree({
    ...node,
    causes: [REFERENCE],
    children: [{ object: vm("vm-1"), state: "seen" }],
  });
  assert.match(
    seen,
    /vm-1 \(\.spec\.vpcRef\.name; rule 2x8ab\/vm-vpc\) \(see above\)\n$/,
  );
});

Deno.test("renderTree: colour only when asked, and only our own escape sequences", () => {
  assert.doesNotMatch(renderTree(HELD), /\x1b/);
  const colored = renderTree(HELD, { color: true });
  assert.match(colored, /\x1b\[31mis held by:\x1b\[0m/);
  assert.match(colored, /\x1b\[1mVirtualMachine\x1b\[0m default\/vm-1/);
  const plain = colored.replace(/\x1b\[\d+m/g, "");
  assert.equal(plain, renderTree(HELD));
});

Deno.test("renderTree: no control character or escape sequence of a tenant reaches the terminal", () => {
  for (const color of [false, true]) {
    const text = renderTree(hostile(), { color });
    const ours = text.replace(/\x1b\[\d+m/g, "");
    assert.doesNotMatch(ours, RAW, JSON.stringify(ours));
    assert.doesNotMatch(ours, /\x1b/);
    assert.match(ours, /\\u\{1b\}\[31mevil/);
    assert.match(ours, /a\\u\{202e\}b/);
    assert.match(ours, /\\u\{85\}/);
    assert.match(ours, /\\u\{7\}bell/);
    // One line per node: a newline in a message or reason starts none.
    assert.equal(ours.trimEnd().split("\n").length, 6);
  }
});

Deno.test("renderJson: the node itself, every field kept, unsafe characters escaped", () => {
  const node = hostile();
  const text = renderJson(node);
  assert.doesNotMatch(text, RAW);
  assert.deepEqual(JSON.parse(text), node);
  assert.match(text, /\\u001b\[31mevil/);
  assert.match(text, /a\\u202eb/);
  assert.match(text, /\\u0085\\u2066/);
  assert.ok(text.endsWith("}\n"));
});

Deno.test("renderJson: the documented shape of a held object", () => {
  assert.deepEqual(JSON.parse(renderJson(HELD)), {
    object: {
      group: "network.example.com",
      version: "v1alpha1",
      resource: "vpcs",
      kind: "VPC",
      namespace: "default",
      name: "core",
    },
    state: "held",
    held: true,
    message: HELD.message,
    causes: [
      {
        type: "Reference",
        object: vm("vm-1"),
        fields: [".spec.vpcRef.name"],
        rules: ["2x8ab/vm-vpc"],
      },
      {
        type: "Owner",
        object: NETWORK,
        field: '.metadata.labels["example.com/owner"]',
        viaNamespace: "default",
        rule: "9zz/network-owner",
        when: "self.spec.deletionProtection",
      },
      {
        type: "Lock",
        lock: { namespace: "default", name: "prod" },
        reason: "production VPC, ask #netops",
      },
      { type: "More", of: "Reference", count: 3 },
    ],
  });
});

Deno.test("renderYaml: the same value as JSON, hostile strings double-quoted and escaped", () => {
  for (const node of [HELD, hostile()]) {
    const text = renderYaml(node);
    assert.doesNotMatch(text, RAW, text);
    assert.deepEqual(parseYaml(text), node);
  }
  assert.match(
    renderYaml(HELD),
    /^object:\n {2}group: network\.example\.com\n/,
  );
});

Deno.test("renderDot: quoted IDs and labels, escaped, an edge per cause from the blocker", () => {
  const dot = renderDot({
    ...HELD,
    children: [
      {
        object: vm("vm-1"),
        state: "held",
        held: true,
        message: "",
        causes: [{ ...REFERENCE, object: VPC }],
        children: [{ object: VPC, state: "cycle" }],
      },
      { object: NETWORK, state: "free", held: false, causes: [], children: [] },
    ],
  });
  assert.match(dot, /^digraph "why" \{\n/);
  assert.match(
    dot,
    /^ {2}"vpcs\.network\.example\.com\/default\/core" \[label="VPC\\ndefault\/core", color="red", penwidth=2\];$/m,
  );
  assert.match(
    dot,
    /^ {2}"virtualmachines\.compute\.example\.com\/default\/vm-1" -> "vpcs\.network\.example\.com\/default\/core" \[label="refers via \.spec\.vpcRef\.name"\];$/m,
  );
  assert.match(
    dot,
    /^ {2}"vpcs\.network\.example\.com\/default\/core" -> "virtualmachines\.compute\.example\.com\/default\/vm-1" \[label="refers via \.spec\.vpcRef\.name"\];$/m,
  );
  assert.match(
    dot,
    /^ {2}"networks\.owners\.example\.com\/default\/net-a" \[label="Network\\ndefault\/net-a", color="darkgreen"\];$/m,
  );
  assert.match(
    dot,
    /"lock:default\/prod" \[label="Lock\\ndefault\/prod", shape="note"\];/,
  );
  assert.match(
    dot,
    /"lock:default\/prod" -> "vpcs[^"]*" \[label="locks: production VPC, ask #netops"\];/,
  );
  assert.match(
    dot,
    /"more:3:vpcs[^"]*" \[label="3 more dependents", style="dashed"\];/,
  );
  // Each object is one node, however often it comes up.
  assert.equal(
    dot.match(/^ {2}"vpcs\.network\.example\.com\/default\/core" \[/gm)?.length,
    1,
  );
  assert.ok(dot.endsWith("}\n"));
});

Deno.test("renderDot: a hostile name cannot end its string, form an escape or reach the terminal", () => {
  const dot = renderDot(hostile());
  assert.doesNotMatch(dot, RAW);
  assert.doesNotMatch(dot, /\x1b/);
  // Every line is a statement of quoted strings: no quote is left open.
  for (const line of dot.split("\n").slice(1, -2)) {
    const unescaped = line.replace(/\\\\/g, "").replace(/\\"/g, "");
    assert.equal((unescaped.match(/"/g) ?? []).length % 2, 0, line);
  }
  assert.match(dot, /\\\\u\{1b\}\[31mevil/);
  assert.match(dot, /quoted\\\\\\"/);
});

Deno.test("renderWhy: each output ends with a newline", () => {
  for (const output of ["tree", "json", "yaml", "dot"] as const) {
    assert.ok(renderWhy(HELD, output).endsWith("\n"), output);
  }
});

const NOT_READ: Cause = {
  type: "NotRead",
  group: "lb.example.com",
  resource: "loadbalancers",
  verb: "list",
  why: "403 Forbidden",
};

Deno.test("renderWhy: what the webhook could not read is said in the tree, JSON and DOT, on a held and on a denied node", () => {
  const node: WhyNode = {
    object: VPC,
    state: "held",
    held: true,
    message: "cannot delete vpcs/core: locked by Lock default/prod",
    causes: [LOCK, REFERENCE, NOT_READ],
    children: [{
      object: vm("vm-1"),
      state: "denied",
      held: true,
      message: "cannot delete virtualmachines/vm-1: cannot check",
      causes: [{ ...NOT_READ, resource: "disks", verb: "get" }],
    }],
  };
  assert.equal(
    renderTree(node),
    [
      "VPC default/core is held by:",
      "\u251c\u2500\u2500 locked by Lock default/prod (reason: production VPC, ask #netops)",
      "\u251c\u2500\u2500 referenced by VirtualMachine default/vm-1 (.spec.vpcRef.name; rule 2x8ab/vm-vpc)",
      "\u2502   \u2514\u2500\u2500 cannot be deleted now: cannot delete virtualmachines/vm-1: cannot check",
      "\u2502       \u2514\u2500\u2500 not read: disks.lb.example.com (its owners may hold it too; 403 Forbidden)",
      "\u2514\u2500\u2500 not read: loadbalancers.lb.example.com (its objects may refer to it too; 403 Forbidden)",
      "",
    ].join("\n"),
  );
  const json = JSON.parse(renderJson(node));
  assert.deepEqual(json.causes[2], NOT_READ);
  assert.equal(json.children[0].causes[0].type, "NotRead");
  const dot = renderDot(node);
  assert.match(dot, /"not read: loadbalancers\.lb\.example\.com"/);
  assert.match(dot, /label="403 Forbidden"/);
});
