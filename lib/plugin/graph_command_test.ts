import assert from "node:assert/strict";
import { FakeApi } from "../../testing/fake_api.ts";
import { fakeContext, FakeWorkspace } from "../../testing/plugin.ts";
import { dependencyRule } from "../../testing/rules.ts";
import { PluginError } from "./context.ts";
import { graphCommand, graphInputs, parseGraphArgs } from "./graph_command.ts";

const NETWORK = "root:providers:network";

/** Rules as listed: the apiVersion and kind kept, the cluster annotated. */
function listed(name: string, dependent?: "VPC"): Record<string, unknown> {
  const subnets = {
    path: NETWORK,
    resource: "subnets",
    field: ".spec.subnetRef.name",
  } as const;
  const rule = dependent === "VPC"
    ? dependencyRule(name, { dependencies: [subnets], dependent })
    : dependencyRule(name, {
      dependencies: [
        { path: NETWORK, resource: "vpcs", field: ".spec.vpcRef.name" },
        subnets,
      ],
    });
  const metadata = rule.metadata as Record<string, unknown>;
  return {
    ...rule,
    metadata: { ...metadata, annotations: { "kcp.io/cluster": "abc123" } },
  };
}

function failure(pattern: RegExp): (error: unknown) => boolean {
  return (error) => {
    if (!(error instanceof PluginError)) return false;
    assert.match(error.message, pattern);
    assert.equal(error.exitCode, 2);
    return true;
  };
}

Deno.test("parseGraphArgs() takes -o dot|json|svg|html, dot by default, and no file to write", () => {
  assert.deepEqual(parseGraphArgs([]), { output: "dot" });
  assert.deepEqual(parseGraphArgs(["-o", "html"]), { output: "html" });
  assert.deepEqual(parseGraphArgs(["--output=json"]), { output: "json" });
  assert.deepEqual(parseGraphArgs(["--help"]), { help: true });
  assert.throws(
    () => parseGraphArgs(["-o", "png"]),
    failure(/-o must be one of dot, json, svg, html: current value is 'png'/),
  );
  assert.throws(() => parseGraphArgs(["extra"]), failure(/^graph: /));
  // The plugin is installed without the right to write files.
  assert.throws(
    () => parseGraphArgs(["--output-file=g.html"]),
    failure(/^graph: /),
  );
});

Deno.test("graphInputs() keeps valid rules with their cluster and workspace, and says why it skips the rest", () => {
  const { rules, skipped } = graphInputs(
    [listed("vm-deps"), { metadata: { name: "broken" }, spec: {} }, 42],
    { workspace: "root:providers:compute" },
  );
  assert.equal(rules.length, 1);
  assert.equal(rules[0]!.cluster, "abc123");
  assert.equal(rules[0]!.workspace, "root:providers:compute");
  assert.equal(rules[0]!.rule.metadata.name, "vm-deps");
  assert.equal(skipped.length, 2);
  assert.match(skipped[0]!, /^skipping DependencyRule broken: /);
  assert.match(skipped[1]!, /^skipping DependencyRule \(no name\): /);
  const { metadata: _, ...unannotated } = listed("plain");
  const plain = graphInputs([
    { ...unannotated, metadata: { name: "plain" } },
  ], { workspace: "root:w" });
  assert.equal(plain.rules[0]!.cluster, "root:w");
});

Deno.test("graph: the rules of the workspace as JSON and DOT, a node per type and an edge per dependency", async () => {
  const workspace = new FakeWorkspace("root:providers:compute");
  workspace.rules = [listed("vm-deps"), listed("vpc-subnets", "VPC"), {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "broken" },
    spec: {},
  }];
  const api = new FakeApi(workspace.handle);
  const context = fakeContext(api, { workspace: "root:providers:compute" });
  try {
    assert.equal(await graphCommand(context, ["-o", "json"]), 0);
    const graph = JSON.parse(context.io.stdout);
    assert.deepEqual(
      graph.nodes.map((n: { id: string }) => n.id).sort(),
      [
        "subnets.network.example.com",
        "virtualmachines.compute.example.com",
        "vpcs.network.example.com",
      ],
    );
    assert.equal(graph.edges.length, 3);
    assert.match(
      context.io.stderr,
      /warning: skipping DependencyRule broken: /,
    );
    const dotContext = fakeContext(api, {
      workspace: "root:providers:compute",
    });
    try {
      assert.equal(await graphCommand(dotContext, []), 0);
      assert.match(dotContext.io.stdout, /^digraph /);
      assert.match(
        dotContext.io.stdout,
        /DependencyRules in root:providers:compute/,
      );
      assert.match(dotContext.io.stdout, /vm-deps/);
    } finally {
      dotContext.client.close();
    }
  } finally {
    context.client.close();
    await api.close();
  }
});

Deno.test("graph: svg and html to stdout; an empty workspace still draws, with a warning", async () => {
  const workspace = new FakeWorkspace("root:providers:compute");
  workspace.rules = [listed("vm-deps")];
  const api = new FakeApi(workspace.handle);
  const context = fakeContext(api, { workspace: "root:providers:compute" });
  try {
    assert.equal(await graphCommand(context, ["-o", "svg"]), 0);
    const svg = context.io.stdout;
    assert.match(svg, /^<svg/);
    assert.match(svg, /vpcs\.network\.example\.com/);
    const page = fakeContext(api, { workspace: "root:providers:compute" });
    await graphCommand(page, ["-o", "html"], {
      now: () => new Date("2024-01-01T00:00:00Z"),
    });
    const html = page.io.stdout;
    assert.match(html, /^<!DOCTYPE html>/);
    assert.match(html, /2024-01-01T00:00:00\.000Z/);
    assert.match(html, /vm-deps/);
    page.client.close();
    workspace.rules = [];
    const empty = fakeContext(api, { workspace: "root:providers:compute" });
    try {
      assert.equal(await graphCommand(empty, ["-o", "json"]), 0);
      assert.deepEqual(JSON.parse(empty.io.stdout).edges, []);
      assert.match(
        empty.io.stderr,
        /no valid DependencyRules in workspace root:providers:compute/,
      );
    } finally {
      empty.client.close();
    }
  } finally {
    context.client.close();
    await api.close();
  }
});

Deno.test("graph: no permission or no binding exits 2 naming it", async () => {
  const workspace = new FakeWorkspace("root:providers:compute");
  workspace.forbidden.add("list dependencyrules");
  const api = new FakeApi(workspace.handle);
  const context = fakeContext(api, { workspace: "root:providers:compute" });
  try {
    await assert.rejects(
      graphCommand(context, []),
      failure(
        /^you may not list dependencyrules\.dependencies\.opendefense\.cloud in workspace root:providers:compute$/,
      ),
    );
    api.handler = () =>
      new Response(JSON.stringify({ kind: "Status", code: 404 }), {
        status: 404,
      });
    await assert.rejects(
      graphCommand(context, []),
      failure(/^workspace root:providers:compute serves no DependencyRules/),
    );
  } finally {
    context.client.close();
    await api.close();
  }
});
