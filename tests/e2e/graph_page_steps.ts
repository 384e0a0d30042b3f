/**
 * The controller's graph page in a real browser, on a real kcp: the
 * controller runs with `--graph` (and `--graph-holds-url` at the webhook's
 * metrics port) as its own process beside the webhook, providers write
 * rules of both directions (a `from: Dependent` rule of the compute
 * provider, a `from: Target` owner rule whose `when` is markup), two rules
 * of the network provider make VPCs and Subnets protect each other (a
 * cycle, reported `DependencyCycle`), and a tenant locks a VPC. Once the
 * statuses settle, headless Chromium (puppeteer-core, Debian's
 * `chromium-headless-shell`) loads `/graph`: a `g.node` per type, a
 * `g.edge` per rule dependency, the cycle's edges red, no script anywhere
 * and the markup shown as text, and the denied delete among what the
 * webhook (`--holds`) holds; `/graph.json` says the same. A full-page
 * screenshot is written to a temporary file (and, with
 * `UPDATE_SCREENSHOT=1`, to `docs/images/graph.png`).
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import type { DependencyGraphJson } from "../../lib/graph/mod.ts";
import {
  applyObjects,
  assertDeleteDenied,
  bindExport,
  buildTopology,
  type ComponentWorld,
  DEP_CTRL_EXPORT,
  dependencyRule,
  grantWebhookReads,
  labelPath,
  namespaceObject,
  ownerRule,
  ownersProvider,
  startController,
  startWebhook,
  type Step,
  VWC_CLAIM,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  waitForRuleReady,
  workspaceCluster,
} from "../../testing/mod.ts";
import { launchBrowser } from "../../testing/browser.ts";
import {
  type BrowserGlobals,
  type DomElement,
  graphPageWorld,
  HOSTILE_WHEN,
  NETWORKS,
  type PageView,
  README_SCREENSHOT,
  README_WHEN,
  SUBNETS,
  subnetVpcLabelRule,
  VMS,
  VPCS,
} from "../../testing/graph_page_world.ts";

/**
 * The steps of "graph page: a real browser shows every type, rule dependency
 * and cycle the controller watches, with tenant text as text", under
 * `root`. First on its kcp: the page shows every rule there, and must show
 * these alone. Its first step starts the webhook (`--holds`) and the
 * controller (`--graph`) and gives them to `world`; they run when it ends.
 */
export async function graphPageSteps(
  world: ComponentWorld,
  step: Step,
): Promise<void> {
  const { kcp } = world;
  const w = graphPageWorld();
  try {
    await step(
      "topology with an owners provider, a tenant that may lock, the webhook with --holds, and the controller with --graph",
      async () => {
        await Promise.all([
          buildTopology(kcp, {
            networkPath: w.network,
            computePath: w.compute,
            consumerPaths: [w.c1],
          }),
          ownersProvider(kcp, w.owners),
        ]);
        await bindExport(kcp, w.c1, {
          exportPath: "root:dep-ctrl",
          exportName: DEP_CTRL_EXPORT,
          acceptClaims: [VWC_CLAIM],
        });
        await applyObjects(kcp, w.c1, [namespaceObject("team-a")]);
        for (const path of [w.network, w.compute, w.owners]) {
          w.clusters[path] = await workspaceCluster(kcp, path);
        }
        const started = await startWebhook(kcp, { args: ["--holds"] });
        w.webhook = started;
        const controller = await startController(kcp, {
          webhook: started,
          args: [
            "--graph",
            `--graph-holds-url=http://127.0.0.1:${started.metricsPort}/holds.json`,
          ],
        }).catch(async (error: unknown) => {
          await started.stop();
          throw error;
        });
        w.controller = controller;
        world.keep({ webhook: started, controller });
      },
    );

    await step(
      "rules of both directions and a cycle, a Lock, and a denied delete; the statuses settle",
      async () => {
        const controller = w.controller!;
        await applyObjects(kcp, w.compute, [
          dependencyRule("vm-network", {
            dependencies: [
              { path: w.network, resource: "vpcs", field: ".spec.vpcRef.name" },
              {
                path: w.network,
                resource: "subnets",
                field: ".spec.subnetRef.name",
              },
            ],
          }),
        ]);
        await applyObjects(kcp, w.owners, [
          ownerRule("network-owner", {
            owner: "Network",
            fieldRef: {
              from: "Target",
              path: labelPath("owners.example.com/network"),
            },
            when: HOSTILE_WHEN,
            networkPath: w.network,
          }),
        ]);
        await applyObjects(kcp, w.network, [
          subnetVpcLabelRule(w.network),
          dependencyRule("vpc-subnet", {
            dependent: "VPC",
            dependencies: [{
              path: w.network,
              resource: "subnets",
              field: labelPath("network.example.com/subnet"),
            }],
          }),
        ]);
        await grantWebhookReads(kcp);
        for (const rule of w.rules) {
          if (rule.reason === "Enforced") {
            await waitForRuleEnforced(kcp, rule);
          } else {
            await waitForRuleReady(kcp, rule, {
              test: (ready) =>
                ready.status === "False" && ready.reason === rule.reason,
              description: `False (${rule.reason})`,
            });
          }
        }

        await applyObjects(kcp, w.c1, [
          {
            apiVersion: "network.example.com/v1alpha1",
            kind: "VPC",
            metadata: { name: "core", namespace: "team-a" },
            spec: {},
          },
          {
            apiVersion: "compute.example.com/v1alpha1",
            kind: "VirtualMachine",
            metadata: { name: "vm-1", namespace: "team-a" },
            spec: { vpcRef: { name: "core" } },
          },
          {
            apiVersion: "dependencies.opendefense.cloud/v1alpha1",
            kind: "Lock",
            metadata: { name: "prod", namespace: "team-a" },
            spec: {
              target: {
                apiExportRef: { path: w.network, name: "network.example.com" },
                group: "network.example.com",
                version: "v1alpha1",
                resource: "vpcs",
                name: "core",
              },
              reason: "production VPC",
            },
          },
        ]);
        const vpc = {
          workspace: w.c1,
          type: "vpc",
          namespace: "team-a",
          name: "core",
        };
        const held = /^cannot delete vpcs\/core: /;
        await waitForDeleteDenial(kcp, vpc, held);
        await assertDeleteDenied(kcp, vpc, held);

        // The controller's watches catch up with what kcp said.
        w.graph = await waitFor(
          "/graph.json to show the settled rules",
          async () => {
            const answer = await controller.get(
              controller.metricsPort,
              "/graph.json",
            );
            assert.equal(answer.status, 200);
            const shown = JSON.parse(answer.text) as DependencyGraphJson;
            const settled = w.rules.every((rule) =>
              shown.edges.some((edge) =>
                edge.ruleName === rule.name &&
                (rule.reason === "Enforced"
                  ? edge.ready === "True"
                  : edge.reason === rule.reason)
              )
            );
            const locked = shown.nodes.find((node) =>
              node.id === VPCS
            )?.locks === 1;
            return settled && locked ? shown : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 250 },
        );
      },
    );

    await step(
      "/graph.json: the types, one edge per rule dependency, the cycle, the Lock, and the workspaces the controller resolved",
      () => {
        const graph = w.graph!;
        const { clusters } = w;
        assert.equal(graph.kind, "DependencyGraph");
        assert.deepEqual(
          graph.nodes.map((node) => node.id),
          [NETWORKS, SUBNETS, VPCS, VMS].sort(),
        );
        const key = (path: string, name: string) => `${clusters[path]}/${name}`;
        assert.deepEqual(
          graph.edges.map((e) => [e.id, e.from, e.to, e.source, e.inCycle])
            .sort(),
          [
            [
              `${key(w.compute, "vm-network")}#0`,
              VMS,
              VPCS,
              "Dependent",
              false,
            ],
            [
              `${key(w.compute, "vm-network")}#1`,
              VMS,
              SUBNETS,
              "Dependent",
              false,
            ],
            [
              `${key(w.owners, "network-owner")}#0`,
              NETWORKS,
              SUBNETS,
              "Target",
              false,
            ],
            [
              `${key(w.network, "subnet-vpc")}#0`,
              SUBNETS,
              VPCS,
              "Dependent",
              true,
            ],
            [
              `${key(w.network, "vpc-subnet")}#0`,
              VPCS,
              SUBNETS,
              "Dependent",
              true,
            ],
          ].sort(),
        );
        assert.deepEqual(graph.cycles, [[SUBNETS, VPCS]]);
        assert.equal(
          graph.edges.find((e) => e.ruleName === "network-owner")?.when,
          HOSTILE_WHEN,
        );
        // Every rule names the network provider's path: that one is known.
        for (const edge of graph.edges) {
          assert.equal(
            edge.workspace,
            edge.cluster === clusters[w.network] ? w.network : null,
            edge.id,
          );
        }
        return Promise.resolve();
      },
    );

    await step(
      "Chromium renders /graph: a g.node per type, a g.edge per dependency, the cycle red, no script, the markup as text, the held VPC; a screenshot",
      async () => {
        const graph = w.graph!;
        const controller = w.controller!;
        const browser = w.browser = await launchBrowser({
          viewport: { width: 1200, height: 800 },
        });
        const page = await browser.newPage();
        const dialogs: string[] = [];
        page.on("dialog", (dialog) => {
          dialogs.push(dialog.message());
          void dialog.dismiss();
        });
        const url = `http://127.0.0.1:${controller.metricsPort}/graph`;
        const response = await page.goto(url, { waitUntil: "load" });
        assert.equal(response?.status(), 200);
        const headers = response!.headers();
        assert.equal(headers["content-type"], "text/html; charset=utf-8");
        assert.equal(headers["cache-control"], "no-store");
        assert.equal(headers["x-content-type-options"], "nosniff");
        assert.match(
          headers["content-security-policy"] ?? "",
          /^default-src 'none'; .*frame-ancestors 'none'/,
        );

        // Runs in the page: Deno's types have no DOM, so the little
        // used of it is declared in BrowserGlobals.
        const view: PageView = await page.evaluate(() => {
          const { document, getComputedStyle } =
            globalThis as unknown as BrowserGlobals;
          const all = (
            root: DomElement | BrowserGlobals["document"],
            s: string,
          ) => [...root.querySelectorAll(s)];
          const strokes = (edge: DomElement) =>
            all(edge, "path").map((p) => p.getAttribute("stroke") ?? "");
          const colors = (edge: DomElement) =>
            all(edge, "path").map((p) => getComputedStyle(p).stroke);
          const edges = all(document, "svg g.edge");
          const isCycle = (g: DomElement) => g.classList.contains("cycle");
          return {
            nodeIds: all(document, "svg g.node").map((g) => g.id),
            edgeIds: edges.map((g) => g.id),
            cycleEdges: edges.filter(isCycle).map((g) => ({
              id: g.id,
              strokes: strokes(g),
              colors: colors(g),
            })),
            otherEdgeStrokes: edges.filter((g) => !isCycle(g)).flatMap(
              strokes,
            ),
            scripts: all(document, "script").length,
            whenCells: all(document, "#rules td code")
              .map((c) => c.textContent ?? "")
              .filter((text) => text.includes("alert")),
            holdsRows: all(document, "#holds tr.hold").map((row) =>
              all(row, "td").map((cell) => cell.textContent ?? "")
            ),
            holdsError: document.querySelector("#holds-error")?.textContent ??
              null,
            title: document.title,
          };
        });
        assert.deepEqual(
          view.nodeIds.sort(),
          graph.nodes.map((node) => `node:${node.id}`).sort(),
        );
        assert.deepEqual(
          view.edgeIds.sort(),
          graph.edges.map((edge) => `edge:${edge.id}`).sort(),
        );
        assert.deepEqual(
          view.cycleEdges.map((edge) => edge.id).sort(),
          graph.edges.filter((edge) => edge.inCycle).map((edge) =>
            `edge:${edge.id}`
          ).sort(),
        );
        for (const edge of view.cycleEdges) {
          assert.ok(edge.strokes.length > 0, edge.id);
          assert.ok(edge.strokes.every((s) => s === "red"), edge.id);
          assert.ok(
            edge.colors.every((c) => c === "rgb(255, 0, 0)"),
            `${edge.id}: ${edge.colors}`,
          );
        }
        assert.ok(!view.otherEdgeStrokes.includes("red"));
        assert.equal(view.scripts, 0);
        assert.deepEqual(dialogs, []);
        assert.deepEqual(view.whenCells, [HOSTILE_WHEN]);
        assert.equal(
          view.title,
          "DependencyRules through dependencies.opendefense.cloud in root:dep-ctrl",
        );

        // The denied delete, as the webhook's /holds.json reports it.
        assert.equal(view.holdsError, null);
        assert.equal(view.holdsRows.length, 1, `${view.holdsRows}`);
        // Cluster, namespace, name, type, outcome, ...
        const [, namespace, name, type, outcome] = view.holdsRows[0]!;
        assert.deepEqual([namespace, name, type], ["team-a", "core", VPCS]);
        assert.match(outcome ?? "", /^denied_(referenced|locked)$/);
        // And its gauges: one object held, for some seconds by now.
        const metrics = await fetch(
          `http://127.0.0.1:${w.webhook!.metricsPort}/metrics`,
        ).then((r) => r.text());
        assert.match(metrics, /^dependency_webhook_holds 1$/m);
        const oldest = metrics.match(
          /^dependency_webhook_oldest_hold_seconds (\S+)$/m,
        );
        assert.ok(oldest !== null && Number(oldest[1]) > 0, metrics);

        const shot = await Deno.makeTempFile({
          prefix: "graph-page-",
          suffix: ".png",
        });
        const png = await page.screenshot({ fullPage: true, type: "png" });
        await Deno.writeFile(shot, png);
        console.log(`graph page screenshot: ${shot}`);
        if (Deno.env.get("UPDATE_SCREENSHOT") === "1") {
          // The README shows the page as a provider sees it: the rule's
          // `when` is an everyday one there, not this test's markup.
          await kcp.request(
            "PATCH",
            `/clusters/${w.owners}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules/network-owner`,
            {
              body: { spec: { when: README_WHEN } },
              contentType: "application/merge-patch+json",
            },
          );
          await waitFor("/graph.json to show the README's when", async () => {
            const answer = await controller.get(
              controller.metricsPort,
              "/graph.json",
            );
            return answer.text.includes(JSON.stringify(README_WHEN))
              ? true
              : undefined;
          }, { timeoutMs: 30_000, intervalMs: 250 });
          await page.reload({ waitUntil: "load" });
          const readme = await page.screenshot({
            fullPage: true,
            type: "png",
          });
          await Deno.mkdir(dirname(README_SCREENSHOT), { recursive: true });
          await Deno.writeFile(README_SCREENSHOT, readme);
          console.log(`graph page screenshot: ${README_SCREENSHOT}`);
        }
      },
    );
  } finally {
    await w.browser?.close();
  }
}
