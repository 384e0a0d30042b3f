/**
 * `kubectl dependencies graph` on a real kcp: the compute provider's admin
 * draws the provider's DependencyRules, once the components have made them
 * Ready, as JSON (a node per type, an edge per dependency, each rule named
 * and Ready), DOT, SVG and an HTML page written to a file; a user without
 * read access to DependencyRules gets exit 2 naming the permission.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertExit,
  buildTopology,
  type ComponentWorld,
  dependencyRule,
  grantWebhookReads,
  type Step,
  vmVpcRule,
  waitFor,
  type WorldPaths,
} from "../../testing/mod.ts";
import { runPlugin } from "../../testing/plugin.ts";
import {
  type EdgeJson,
  pluginGraphWorld,
} from "../../testing/plugin_graph_world.ts";

/**
 * The steps of "plugin graph: a provider draws its DependencyRules as JSON,
 * DOT, SVG and HTML", in the world under `paths`.
 */
export async function pluginGraphSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const w = pluginGraphWorld(paths);
  await step(
    "the compute provider has three rules, made Ready by the components",
    async () => {
      await buildTopology(kcp, {
        networkPath: w.network,
        computePath: w.compute,
        consumerPaths: [],
      });
      await world.startComponents();
      const attachment = dependencyRule("attachment-vpc", {
        dependencies: [{
          path: w.network,
          resource: "vpcs",
          field: ".spec.vpcRef.name",
        }],
      });
      const spec = attachment.spec as { dependent: Record<string, string> };
      spec.dependent = {
        ...spec.dependent,
        kind: "VPCAttachment",
        resource: "vpcattachments",
      };
      await applyObjects(kcp, w.compute, [
        vmVpcRule(w.network),
        dependencyRule("vm-nics", {
          dependencies: [{
            path: w.network,
            resource: "subnets",
            field: ".spec.nics[*].subnetRef.name",
          }],
        }),
        attachment,
      ]);
      await waitFor(
        "the webhook's reads of every rule to be granted",
        async () => {
          const role = await grantWebhookReads(kcp);
          return ["vpcs", "subnets", "virtualmachines", "vpcattachments"]
            .every((r) => role.includes(`- ${r}\n`)) || undefined;
        },
        { timeoutMs: 60_000, intervalMs: 1_000 },
      );
      await waitFor("every rule to be Ready", async () => {
        const out = await kcp.kubectlOk([
          "get",
          "dependencyrules",
          "-o",
          "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{\"\\n\"}{end}",
        ], { workspace: w.compute });
        const statuses = out.trim().split("\n");
        return statuses.length === w.rules.length &&
            statuses.every((s) => s === "True") || undefined;
      }, { timeoutMs: 90_000, intervalMs: 500 });
      w.admin = await kcp.kubeconfig("admin", w.compute);
    },
  );

  await step(
    "graph -o json: a node per type, an edge per dependency, each naming its Ready rule",
    async () => {
      const r = await runPlugin(["graph", "-o", "json"], {
        kubeconfig: w.admin,
      });
      assertExit(r, 0);
      const graph = JSON.parse(r.stdout) as {
        nodes: { id: string }[];
        edges: EdgeJson[];
      };
      assert.deepEqual(graph.nodes.map((n) => n.id).sort(), w.types);
      const edges = graph.edges.map((e) => [
        e.ruleName,
        e.from,
        e.to,
        e.ready,
      ]);
      assert.ok(graph.edges.every((e) => e.workspace === w.compute));
      assert.deepEqual(edges.sort(), [
        [
          "attachment-vpc",
          "vpcattachments.compute.example.com",
          "vpcs.network.example.com",
          "True",
        ],
        [
          "vm-nics",
          "virtualmachines.compute.example.com",
          "subnets.network.example.com",
          "True",
        ],
        [
          "vm-vpc",
          "virtualmachines.compute.example.com",
          "vpcs.network.example.com",
          "True",
        ],
      ]);
      assert.equal(r.stderr, "");
    },
  );

  await step(
    "graph (DOT by default) and -o svg name every type and rule",
    async () => {
      const dot = await runPlugin(["graph"], { kubeconfig: w.admin });
      assertExit(dot, 0);
      assert.match(dot.stdout, /^digraph /);
      assert.ok(
        dot.stdout.includes(`DependencyRules in ${w.compute}`),
        "the DOT names the workspace",
      );
      const svg = await runPlugin(["graph", "-o", "svg"], {
        kubeconfig: w.admin,
      });
      assertExit(svg, 0);
      assert.match(svg.stdout, /^<svg/);
      // Graphviz writes `-` in SVG text as `&#45;`.
      const svgText = svg.stdout.replace(
        /&#(\d+);/g,
        (_, code) => String.fromCharCode(Number(code)),
      );
      for (const name of [...w.types, ...w.rules]) {
        assert.ok(dot.stdout.includes(name), `DOT names ${name}`);
        assert.ok(svgText.includes(name), `SVG names ${name}`);
      }
    },
  );

  await step(
    "graph -o html writes one page with every rule",
    async () => {
      const r = await runPlugin(["graph", "-o", "html"], {
        kubeconfig: w.admin,
      });
      assertExit(r, 0);
      const html = r.stdout;
      assert.match(html, /^<!DOCTYPE html>/);
      assert.match(html, /<svg/);
      for (const name of [...w.types, ...w.rules]) {
        assert.ok(html.includes(name), `the page names ${name}`);
      }
      // The plugin may not write files: there is no flag that would.
      const file = await runPlugin(["graph", "--output-file=rules.html"], {
        kubeconfig: w.admin,
      });
      assertExit(file, 2);
    },
  );

  await step(
    "a user who may enter the workspace but not read DependencyRules gets exit 2 naming the permission",
    async () => {
      await kcp.kubectlOk([
        "create",
        "clusterrolebinding",
        "user-1-access",
        "--clusterrole=system:kcp:workspace:access",
        "--user=user-1",
      ], { workspace: w.compute });
      const user = await kcp.kubeconfig("user", w.compute);
      const r = await waitFor("the user's access to count", async () => {
        const r = await runPlugin(["graph"], { kubeconfig: user });
        return /you may not list dependencyrules/.test(r.stderr)
          ? r
          : undefined;
      }, { timeoutMs: 30_000, intervalMs: 500 });
      assertExit(r, 2);
      assert.equal(
        r.stderr,
        `error: you may not list dependencyrules.dependencies.opendefense.cloud in workspace ${w.compute}\n`,
      );
      assert.equal(r.stdout, "");
    },
  );
}
