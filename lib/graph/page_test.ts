import assert from "node:assert/strict";
import { graphDot } from "./dot.ts";
import { buildGraph, type DependencyGraph } from "./model.ts";
import {
  escapeHtml,
  graphPage,
  humanDuration,
  MAX_HOLD_ROWS,
  PAGE_CSP,
} from "./page.ts";
import { renderSvg } from "./svg.ts";
import type { Hold, HoldsReport } from "../causes/mod.ts";
import type { DependencyRule } from "../rules/mod.ts";
import {
  dependency,
  type DependentType,
  SUBNETS,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

const VPC_DEPENDENT: DependentType = { ...VPCS, kind: "VPC" };
const NOW = new Date("2025-03-01T12:00:00Z");

/** Text a tenant or provider controls, each a different attack. */
const HOSTILE = [
  "</svg><script>alert(1)</script>",
  '" onload="x',
  "' onmouseover='y",
  '\\"];evil->x[',
  "ansi\u001b[31mred",
  "bidi\u202eevil",
  "<img src=https://evil.example/x>",
  "&#x3c;script&#x3e;",
];
const ALL = HOSTILE.join(" ");

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

/** Two rules that protect each other's types, one of them not Ready. */
function cycleGraph(name = "vm-vpc", cluster = "c1"): DependencyGraph {
  const vmVpc = validRule(name, VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const vpcVm = validRule("vpc-vm", VPC_DEPENDENT, [
    dependency(VIRTUAL_MACHINES, ".spec.vmRef.name"),
    {
      ...dependency(SUBNETS, '.metadata.labels["example.com/vpc"]'),
      fieldRef: { from: "Target", path: '.metadata.labels["example.com/vpc"]' },
    },
  ]);
  return buildGraph([
    {
      cluster,
      workspace: "root:providers:compute",
      rule: withReady(
        { ...vmVpc, spec: { ...vmVpc.spec, when: `object.x == "${ALL}"` } },
        "True",
        "Enforced",
      ),
    },
    { cluster: "c2", rule: withReady(vpcVm, "False", "DependencyCycle") },
  ]);
}

/** A hold of `name` since `firstDenied`. */
function hold(name: string, firstDenied: string, causes: Hold["causes"]): Hold {
  return {
    cluster: "c9",
    group: "network.example.com",
    resource: "vpcs",
    namespace: "default",
    name,
    outcome: "denied_referenced",
    causes,
    firstDenied,
    lastDenied: "2025-03-01T11:59:00Z",
    count: 4,
  };
}

/** A report with one hold of every cause, all names hostile. */
function hostileHolds(): HoldsReport {
  const object = {
    group: "compute.example.com",
    version: "v1",
    resource: "virtualmachines",
    kind: ALL,
    namespace: ALL,
    name: ALL,
  };
  return {
    now: "2025-03-01T12:00:00Z",
    capacity: 1000,
    dropped: 2,
    holds: [
      hold(ALL, "2025-03-01T11:56:40Z", [
        { type: "Reference", object, fields: [ALL], rules: [ALL] },
        {
          type: "Owner",
          object,
          field: ALL,
          viaNamespace: ALL,
          rule: ALL,
          when: ALL,
        },
        { type: "Lock", lock: { namespace: ALL, name: ALL }, reason: ALL },
        { type: "More", of: "Owner", count: 3 },
      ]),
    ],
  };
}

/** Asserts that nothing of {@linkcode HOSTILE} reaches `html` unescaped. */
function assertSafe(html: string): void {
  assert.ok(!/<script/i.test(html), "a script element");
  assert.ok(!html.includes("<img"), "an img element");
  assert.ok(!html.includes('" onload="'), "an onload attribute");
  assert.ok(!html.includes("' onmouseover='"), "an onmouseover attribute");
  assert.ok(!html.includes("\u001b"), "a raw ESC");
  assert.ok(!html.includes("\u202e"), "a raw bidi override");
  // Attribute values are quoted with `"`, which escaped text never holds.
  const markup = html.replaceAll(/="[^"]*"/g, '=""');
  assert.ok(!/<[^>]*\s(src|href)=/i.test(markup), "a link");
  assert.ok(!html.includes("url("), "a CSS url");
  assert.ok(!html.includes("@import"), "a CSS import");
}

Deno.test("graphPage() is one self-contained document under a strict CSP", async () => {
  const graph = cycleGraph();
  const svg = await renderSvg(graphDot(graph));
  const html = graphPage(graph, { svg, title: "Dependencies", now: NOW });
  assert.ok(html.startsWith("<!DOCTYPE html>\n"));
  assert.ok(html.includes(
    `<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}">`,
  ));
  assert.equal(
    PAGE_CSP,
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
  );
  assert.ok(html.includes("<title>Dependencies</title>"));
  assert.ok(html.includes(">2025-03-01T12:00:00.000Z</time>"));
  assert.ok(html.includes(svg));
  assertSafe(html);
});

Deno.test("graphPage() lists each rule dependency and the cycles", () => {
  const graph = cycleGraph();
  const html = graphPage(graph, { svg: "<svg></svg>", title: "T", now: NOW });
  assert.equal(html.match(/<table id="rules">/g)?.length, 1);
  assert.equal(html.match(/<tr class="rule[ "]/g)?.length, 3);
  assert.equal(html.match(/<tr class="rule cycle not-ready">/g)?.length, 1);
  assert.equal(html.match(/<tr class="rule cycle">/g)?.length, 1);
  assert.equal(html.match(/<tr class="rule not-ready">/g)?.length, 1);
  assert.ok(html.includes("root:providers:compute<br>"));
  assert.ok(html.includes(
    "<td>vm-vpc</td><td><code>virtualmachines.compute.example.com</code> " +
      "&rarr; <code>vpcs.network.example.com</code></td>",
  ));
  assert.ok(html.includes(
    "<code>owner named by .metadata.labels[&quot;example.com/vpc&quot;]</code>",
  ));
  assert.ok(html.includes("<td>False: DependencyCycle</td>"));
  assert.ok(html.includes('<ul id="cycles">'));
  assert.equal(html.match(/<li class="cycle">/g)?.length, 1);
  assert.ok(html.includes("<code>c1/vm-vpc</code>, <code>c2/vpc-vm</code>"));
  assert.ok(
    html.includes(
      "3 types, 3 rule dependencies from 2 rules (1 not Ready), 1 cycle.",
    ),
  );
});

Deno.test("graphPage() says so when there are no rules and no cycles", () => {
  const html = graphPage(buildGraph([]), { svg: "", title: "T", now: NOW });
  assert.ok(html.includes('<table id="rules">'));
  assert.ok(!html.includes('<tr class="rule'));
  assert.ok(html.includes('id="no-rules"'));
  assert.ok(html.includes('id="no-cycles"'));
  assert.ok(!html.includes('<ul id="cycles">'));
});

Deno.test("graphPage() escapes every name, field, when text, reason and cause", async () => {
  const graph = cycleGraph(ALL.replaceAll(" ", ""), ALL);
  const svg = await renderSvg(graphDot(graph, { title: ALL }));
  const holds = hostileHolds();
  const html = graphPage(graph, {
    svg,
    title: ALL,
    now: NOW,
    holds,
    holdsError: ALL,
  });
  assertSafe(html);
  assert.ok(html.includes("&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
  assert.ok(html.includes("&quot; onload=&quot;x"));
  assert.ok(html.includes("&#39; onmouseover=&#39;y"));
  assert.ok(html.includes("ansi\\u{1b}[31mred"));
  assert.ok(html.includes("bidi\\u{202e}evil"));
  assert.ok(html.includes("&amp;#x3c;script&amp;#x3e;"));
  assert.equal(html.match(/<tr class="hold">/g)?.length, 1);
  assert.ok(html.includes('id="holds-error"'));
});

Deno.test("graphPage() lists what is held now, with its causes and how long", () => {
  const object = {
    group: "compute.example.com",
    version: "v1",
    resource: "virtualmachines",
    kind: "VirtualMachine",
    namespace: "default",
    name: "vm-1",
  };
  const holds: HoldsReport = {
    now: "2025-03-01T12:00:00Z",
    capacity: 1000,
    dropped: 0,
    holds: [
      hold("vpc-1", "2025-03-01T11:56:40Z", [
        {
          type: "Reference",
          object,
          fields: [".spec.vpcRef.name", ".spec.nics[1].vpcRef.name"],
          rules: ["c1/vm-vpc"],
        },
        { type: "More", of: "Reference", count: 2 },
      ]),
      hold("vpc-2", "2025-02-27T09:00:00Z", [
        {
          type: "Owner",
          object: { ...object, kind: "Project", namespace: "", name: "p-1" },
          field: '.metadata.labels["example.com/project"]',
          viaNamespace: "team-a",
          rule: "c1/project-owns",
          when: "object.spec.protect",
        },
        {
          type: "Lock",
          lock: { namespace: "default", name: "keep" },
          reason: "audit",
        },
        {
          type: "NotRead",
          group: "lb.example.com",
          resource: "loadbalancers",
          verb: "list",
          why: "<403>",
        },
      ]),
      {
        ...hold("cm", "2025-03-01T11:59:15Z", []),
        group: "",
        resource: "configmaps",
      },
    ],
  };
  const html = graphPage(buildGraph([]), {
    svg: "",
    title: "T",
    now: NOW,
    holds,
  });
  assert.equal(html.match(/<table id="holds">/g)?.length, 1);
  const rows = html.match(/<tr class="hold">.*<\/tr>/g) ?? [];
  assert.equal(rows.length, 3);
  const [first = "", second = "", third = ""] = rows;
  assert.ok(
    first.includes(
      "<td>c9</td><td>default</td><td>vpc-1</td><td><code>vpcs.network.example.com</code></td><td>denied_referenced</td>",
    ),
    first,
  );
  assert.ok(
    first.includes(
      "<li>Reference: VirtualMachine default/vm-1 (<code>.spec.vpcRef.name</code>, <code>.spec.nics[1].vpcRef.name</code>)</li>",
    ),
    first,
  );
  assert.ok(first.includes("<li>2 more references not shown</li>"));
  assert.ok(
    first.includes(
      "<td>2025-03-01T11:56:40Z</td><td>3m 20s</td><td>4</td>",
    ),
    first,
  );
  assert.ok(
    second.includes(
      "<li>Owner: Project p-1, field <code>.metadata.labels[&quot;example.com/project&quot;]</code> of Namespace team-a, when <code>object.spec.protect</code></li>",
    ),
    second,
  );
  assert.ok(second.includes("<li>Lock: default/keep: audit</li>"), second);
  assert.ok(
    second.includes(
      "<li>Not read: loadbalancers.lb.example.com (list): &lt;403&gt;</li>",
    ),
    second,
  );
  assert.ok(second.includes("<td>2d 3h</td>"), second);
  assert.ok(third.includes("<td><code>configmaps</code></td>"), third);
  assert.ok(third.includes("<td>45s</td>"), third);
  assert.ok(!html.includes('id="holds-error"'));
  assert.ok(!html.includes('id="holds-not-configured"'));
});

Deno.test("graphPage() lists at most MAX_HOLD_ROWS holds and says how many there are", () => {
  const holds: HoldsReport = {
    now: "2025-03-01T12:00:00Z",
    capacity: 2000,
    dropped: 5,
    holds: Array.from(
      { length: MAX_HOLD_ROWS + 1 },
      (_, i) => hold(`vpc-${i}`, "2025-03-01T11:00:00Z", []),
    ),
  };
  const html = graphPage(buildGraph([]), {
    svg: "",
    title: "T",
    now: NOW,
    holds,
  });
  assert.equal(html.match(/<tr class="hold">/g)?.length, MAX_HOLD_ROWS);
  assert.ok(html.includes(`${MAX_HOLD_ROWS + 1} objects held`));
  assert.ok(html.includes("5 dropped since it started"));
  assert.ok(html.includes(`The first ${MAX_HOLD_ROWS} are listed.`));
});

Deno.test("graphPage() shows why the holds could not be read, or that they are not configured", () => {
  const failed = graphPage(buildGraph([]), {
    svg: "",
    title: "T",
    now: NOW,
    holds: undefined,
    holdsError: "connection refused <b>",
  });
  assert.ok(failed.includes(
    '<p id="holds-error" class="not-ready">Cannot read what the webhook holds: connection refused &lt;b&gt;</p>',
  ));
  assert.ok(!failed.includes('<table id="holds">'));
  assert.ok(!failed.includes('id="holds-not-configured"'));

  const none = graphPage(buildGraph([]), { svg: "", title: "T", now: NOW });
  assert.ok(none.includes('id="holds-not-configured"'));
  assert.ok(!none.includes('<table id="holds">'));
  assert.ok(!none.includes('id="holds-error"'));
});

Deno.test("humanDuration() gives the two largest units", () => {
  assert.equal(humanDuration(0), "0s");
  assert.equal(humanDuration(-5_000), "0s");
  assert.equal(humanDuration(45_900), "45s");
  assert.equal(humanDuration(200_000), "3m 20s");
  assert.equal(humanDuration(3_600_000), "1h 0m");
  assert.equal(humanDuration((2 * 3600 + 5 * 60 + 9) * 1000), "2h 5m");
  assert.equal(humanDuration((3 * 86400 + 4 * 3600 + 59) * 1000), "3d 4h");
});

Deno.test("escapeHtml() escapes markup, controls and direction overrides", () => {
  assert.equal(
    escapeHtml(`<a href="x">'&'</a>`),
    "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;",
  );
  assert.equal(escapeHtml("a\u001b[1m\u202e\n"), "a\\u{1b}[1m\\u{202e}\\u{a}");
  assert.equal(escapeHtml("x\udc00"), "x\ufffd");
  assert.equal(escapeHtml("abcdef", 2), "ab...");
});
