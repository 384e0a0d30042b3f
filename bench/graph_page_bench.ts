/**
 * The controller's `/graph` page with 2 000 rules, loaded in a real
 * headless Chromium (`testing/browser.ts`), measured from the client's
 * side: the wall time of puppeteer's `page.goto(url, {waitUntil: "load"})`,
 * each load in a fresh tab.
 *
 * The kcp is the one of the controller scale bench (`_scale_fixtures.ts`:
 * 2 000 DependencyRules over 200 provider workspaces, each protecting a
 * type of its own); the controller runs with `--graph` beside the webhook,
 * and the figures start once every rule is `Ready=True/Enforced` and the
 * controller has no write pending.
 *
 * The first `/graph` after the controller started (it loads Graphviz, then
 * renders) is printed apart. Then each round changes the rules (creates the
 * rule `graph-bench-<round>`, a second one on the type of `scale-0`, and
 * deletes the previous round's), waits until `/graph.json` shows it
 * `Ready=True` and the controller has no write pending, and loads:
 *
 * - `/graph` cold: the first load after the change, which renders the SVG;
 * - then {@linkcode SAMPLES} samples of `/graph` warm (the SVG kept), and
 *   of the floors `/graph.json` (the same graph, no SVG, no page) and
 *   `/metrics` (the same listener, a small text), each order in turn.
 *
 * Not timed: the cold page's DOM must have a `g.node` per type and a
 * `g.edge` per rule dependency, as many as `/graph.json` lists and as the
 * rules make (2 001 types, 2 001 dependencies with the round's rule). The
 * sizes of the three answers are printed.
 *
 * `graph_page_bench.ts [rounds] [--providers=N] [--rules-per-provider=N]`:
 * 5 rounds, 200 providers and 10 rules each by default (`--providers=5
 * --rules-per-provider=2` checks the bench in a minute).
 *
 * @module
 */
import type { Page } from "puppeteer-core";
import type { DependencyGraphJson } from "../lib/graph/mod.ts";
import { launchBrowser, type TestBrowser } from "../testing/browser.ts";
import {
  type ComponentProcess,
  dependencyRule,
  type KcpServer,
  startController,
  startKcp,
  startWebhook,
  waitFor,
  type WebhookProcess,
} from "../testing/mod.ts";
import { RULES_PATH, type ScaleSetup, setUpScale } from "./_scale_fixtures.ts";
import { sumOf } from "./_scale_metrics.ts";
import { formatSpread, median, spread } from "./_stats.ts";

/** Warm and floor samples per round. */
const SAMPLES = 5;
/** The orders of a sample's loads (0: /graph warm, 1: /graph.json, 2: /metrics). */
const ORDERS = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1], [2, 1, 0], [
  1,
  0,
  2,
]];
/** The most a load may take (a cold render of thousands of types is slow). */
const GOTO_TIMEOUT_MS = 600_000;
/** The prefix of the rule each round creates. */
const ROUND_RULE = "graph-bench-";

const USAGE =
  "usage: graph_page_bench.ts [rounds] [--providers=N] [--rules-per-provider=N]";

/** The bench's settings. */
interface Settings {
  rounds: number;
  providers: number;
  rulesPerProvider: number;
}

function fail(message: string): never {
  console.error(`graph_page_bench: ${message}\n${USAGE}`);
  Deno.exit(2);
}

function positive(name: string, text: string): number {
  if (!/^[1-9][0-9]*$/.test(text)) {
    fail(`${name} must be a positive integer: current value is '${text}'`);
  }
  return Number(text);
}

function parseArgs(args: readonly string[]): Settings {
  const settings: Settings = {
    rounds: 5,
    providers: 200,
    rulesPerProvider: 10,
  };
  for (const arg of args) {
    const [, name = "", value = ""] = /^--([a-z-]+)=(.*)$/.exec(arg) ?? [];
    if (name === "providers") {
      settings.providers = positive("--providers", value);
    } else if (name === "rules-per-provider") {
      settings.rulesPerProvider = positive("--rules-per-provider", value);
    } else if (name === "") settings.rounds = positive("rounds", arg);
    else fail(`unknown argument '${arg}'`);
  }
  return settings;
}

/** The controller's `/graph.json`. */
async function graphJson(
  controller: ComponentProcess,
): Promise<DependencyGraphJson> {
  const { status, text } = await controller.get(
    controller.metricsPort,
    "/graph.json",
  );
  if (status !== 200) throw new Error(`/graph.json: ${status}: ${text}`);
  return JSON.parse(text) as DependencyGraphJson;
}

/** Whether the controller has no write pending. */
async function noPendingWrites(controller: ComponentProcess): Promise<boolean> {
  const { text } = await controller.get(controller.metricsPort, "/metrics");
  return sumOf(text, "dependency_controller_pending_writes") === 0;
}

/** Waits until every rule is `Ready=True/Enforced` and no write is pending. */
async function waitConverged(
  controller: ComponentProcess,
  total: number,
): Promise<void> {
  await waitFor("every rule to be enforced", async () => {
    const { text } = await controller.get(controller.metricsPort, "/metrics");
    const enforced = sumOf(text, "dependency_controller_rules", {
      status: "True",
      reason: "Enforced",
    });
    return (enforced === total &&
      sumOf(text, "dependency_controller_pending_writes") === 0) ||
      undefined;
  }, { timeoutMs: Math.max(120_000, total * 300), intervalMs: 500 });
}

/**
 * Creates the rule of round `round` (on the type of `scale-0`), deletes the
 * previous round's, and waits until `/graph.json` shows just the new one,
 * `Ready=True`, and the controller has no write pending.
 */
async function changeRules(
  kcp: KcpServer,
  controller: ComponentProcess,
  setup: ScaleSetup,
  round: number,
): Promise<DependencyGraphJson> {
  const collection = `/clusters/${setup.rules.path}/${RULES_PATH}`;
  const graph = await graphJson(controller);
  const first = graph.edges.find((e) => e.ruleName === setup.ruleNames[0]);
  const type = graph.nodes.find((n) => n.id === first?.to);
  if (type === undefined) {
    throw new Error(`/graph.json has no type for ${setup.ruleNames[0]}`);
  }
  const name = `${ROUND_RULE}${round}`;
  await kcp.request("POST", collection, {
    body: dependencyRule(name, {
      dependencies: [{
        path: setup.providers[0]!.path,
        group: type.group,
        resource: "vpcs",
        field: ".spec.vpcRef.name",
      }],
    }),
  });
  if (round > 1) {
    await kcp.request("DELETE", `${collection}/${ROUND_RULE}${round - 1}`);
  }
  return await waitFor(`rule ${name} to be drawn Ready`, async () => {
    const shown = await graphJson(controller);
    const rounds = shown.edges.filter((e) => e.ruleName.startsWith(ROUND_RULE));
    const settled = rounds.length === 1 && rounds[0]!.ruleName === name &&
      rounds[0]!.ready === "True";
    return settled && await noPendingWrites(controller) ? shown : undefined;
  }, { timeoutMs: 300_000, intervalMs: 250 });
}

/** Loads `url` in a fresh tab; returns the wall time of the load and the tab. */
async function load(
  browser: TestBrowser,
  url: string,
): Promise<{ ms: number; page: Page }> {
  const page = await browser.newPage();
  const started = performance.now();
  const response = await page.goto(url, {
    waitUntil: "load",
    timeout: GOTO_TIMEOUT_MS,
  });
  const ms = performance.now() - started;
  if (response?.status() !== 200) {
    throw new Error(`${url}: ${response?.status()}`);
  }
  return { ms, page };
}

/** Loads `url` in a fresh tab, closes it, and returns the load's wall time. */
async function timedLoad(browser: TestBrowser, url: string): Promise<number> {
  const { ms, page } = await load(browser, url);
  await page.close();
  return ms;
}

/** The DOM of the drawing: `g.node` and `g.edge` elements. */
function countShapes(page: Page): Promise<{ nodes: number; edges: number }> {
  // Runs in the page; Deno's types have no DOM.
  return page.evaluate(() => {
    const { document } = globalThis as unknown as {
      document: { querySelectorAll(selector: string): { length: number } };
    };
    return {
      nodes: document.querySelectorAll("svg g.node").length,
      edges: document.querySelectorAll("svg g.edge").length,
    };
  });
}

/**
 * Asserts that the drawing has what `/graph.json` lists and what the rules
 * make: one type per rule plus the dependent, one edge per rule.
 */
function checkShapes(
  shapes: { nodes: number; edges: number },
  graph: DependencyGraphJson,
  rules: { types: number; dependencies: number },
): void {
  const said = { nodes: graph.nodes.length, edges: graph.edges.length };
  const made = { nodes: rules.types, edges: rules.dependencies };
  for (const [what, want] of [["/graph.json", said], ["the rules", made]]) {
    const w = want as { nodes: number; edges: number };
    if (shapes.nodes !== w.nodes || shapes.edges !== w.edges) {
      throw new Error(
        `/graph draws ${shapes.nodes} types and ${shapes.edges} edges; ${what}: ${w.nodes} and ${w.edges}`,
      );
    }
  }
}

/** The size of an answer's body, bytes. */
async function bodyBytes(url: string): Promise<number> {
  const response = await fetch(url, { signal: AbortSignal.timeout(600_000) });
  return (await response.arrayBuffer()).byteLength;
}

/** One round's loads. */
interface Round {
  cold: number;
  warm: number[];
  json: number[];
  metrics: number[];
}

async function measure(
  kcp: KcpServer,
  controller: ComponentProcess,
  setup: ScaleSetup,
  settings: Settings,
): Promise<void> {
  const base = `http://127.0.0.1:${controller.metricsPort}`;
  const urls = [`${base}/graph`, `${base}/graph.json`, `${base}/metrics`];
  const total = setup.ruleNames.length;
  const browser = await launchBrowser();
  try {
    const first = await load(browser, urls[0]!);
    const initial = await graphJson(controller);
    checkShapes(await countShapes(first.page), initial, {
      types: total + 1,
      dependencies: total,
    });
    await first.page.close();
    console.log(
      `   first /graph since the controller started (loads Graphviz, renders): ${
        first.ms.toFixed(0)
      } ms; browser ${browser.executable}`,
    );
    const rounds: Round[] = [];
    for (let r = 1; r <= settings.rounds; r++) {
      const graph = await changeRules(kcp, controller, setup, r);
      const cold = await load(browser, urls[0]!);
      checkShapes(await countShapes(cold.page), graph, {
        types: total + 1,
        dependencies: total + 1,
      });
      await cold.page.close();
      const round: Round = { cold: cold.ms, warm: [], json: [], metrics: [] };
      const into = [round.warm, round.json, round.metrics];
      for (let i = 0; i < SAMPLES; i++) {
        for (const slot of ORDERS[(r * SAMPLES + i) % ORDERS.length]!) {
          into[slot]!.push(await timedLoad(browser, urls[slot]!));
        }
      }
      rounds.push(round);
      console.log(
        `   round ${r}: /graph cold ${round.cold.toFixed(0)} ms, warm ${
          median(round.warm).toFixed(0)
        } ms, /graph.json ${median(round.json).toFixed(0)} ms, /metrics ${
          median(round.metrics).toFixed(0)
        } ms (medians)`,
      );
    }
    const [page, json, metrics] = await Promise.all(urls.map(bodyBytes));
    report(rounds, {
      sizes: { page: page!, json: json!, metrics: metrics! },
      types: total + 1,
      dependencies: total + 1,
    });
  } finally {
    await browser.close();
  }
}

function report(
  rounds: readonly Round[],
  facts: {
    sizes: { page: number; json: number; metrics: number };
    types: number;
    dependencies: number;
  },
): void {
  const row = (label: string, values: number[]) =>
    console.log(
      `   ${label.padEnd(14)} | ${String(values.length).padStart(7)} | ${
        formatSpread(spread(values), 0)
      }`,
    );
  console.log(
    `\n   ${"load".padEnd(14)} | ${
      "samples".padStart(7)
    } | ms, min / median / max`,
  );
  row("/graph cold", rounds.map((r) => r.cold));
  row("/graph warm", rounds.flatMap((r) => r.warm));
  row("/graph.json", rounds.flatMap((r) => r.json));
  row("/metrics", rounds.flatMap((r) => r.metrics));
  const ratio = (label: string, of: (r: Round) => number) =>
    console.log(
      `   ${label.padEnd(22)} ${formatSpread(spread(rounds.map(of)), 2)}`,
    );
  console.log(
    "\n   ratios per round (cold: the round's one load; the others: medians), min / median / max:",
  );
  ratio("cold / warm", (r) => r.cold / median(r.warm));
  ratio("cold / /graph.json", (r) => r.cold / median(r.json));
  ratio("warm / /graph.json", (r) => median(r.warm) / median(r.json));
  ratio("warm / /metrics", (r) => median(r.warm) / median(r.metrics));
  const { sizes } = facts;
  console.log(
    `\n   sizes: /graph ${sizes.page} bytes, /graph.json ${sizes.json} bytes, /metrics ${sizes.metrics} bytes`,
  );
  console.log(
    `   drawn (checked on every cold load against /graph.json and the rules): ${facts.types} g.node, ${facts.dependencies} g.edge`,
  );
}

if (import.meta.main) {
  const settings = parseArgs(Deno.args);
  const total = settings.providers * settings.rulesPerProvider;
  const kcp = await startKcp();
  let webhook: WebhookProcess | undefined;
  let controller: ComponentProcess | undefined;
  try {
    const t0 = performance.now();
    const setup = await setUpScale(kcp, settings);
    webhook = await startWebhook(kcp, { args: ["--log-level=info"] });
    controller = await startController(kcp, {
      webhook,
      args: ["--log-level=info", "--graph"],
      waitReady: false,
    });
    await waitConverged(controller, total);
    console.log(
      `\nThe controller's /graph with ${total} rules over ${settings.providers} provider workspaces (set up and enforced in ${
        ((performance.now() - t0) / 1000).toFixed(0)
      } s)`,
    );
    console.log(
      `   headless Chromium, page.goto(url, {waitUntil: "load"}) in a fresh tab, wall time; ${settings.rounds} rounds, each: a rule created and the previous round's deleted, Ready; /graph cold once, then ${SAMPLES} samples each of /graph warm, /graph.json, /metrics, each order in turn`,
    );
    await measure(kcp, controller, setup, settings);
  } finally {
    await controller?.stop();
    await webhook?.stop();
    await kcp.stop();
  }
}
