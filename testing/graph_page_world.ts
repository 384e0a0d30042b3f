/**
 * The world of the graph page's end-to-end steps
 * (`tests/e2e/graph_page_steps.ts`), first on its kcp and under `root`:
 * the providers' workspaces and the consumer, the rules and the Ready
 * each settles at (two of the network provider's make a cycle), the
 * provider's `when` that is markup, the types the page draws, and what the
 * steps keep between them (the components, the browser, `/graph.json`);
 * and the few DOM features the page probe reads in the browser.
 *
 * ```ts ignore
 * import { graphPageWorld } from "./graph_page_world.ts";
 *
 * const w = graphPageWorld();
 * console.log(w.rules.map((rule) => rule.name));
 * ```
 *
 * @module
 */
import type { DependencyGraphJson } from "../lib/graph/mod.ts";
import type { TestBrowser } from "./browser.ts";
import type { ComponentProcess, WebhookProcess } from "./components.ts";
import { labelPath } from "./owners.ts";
import { dependencyRule } from "./rules.ts";

/** A provider's `when` that is markup: the page must show it as text. */
export const HOSTILE_WHEN =
  "'</svg><script>alert(1)</script>' != object.metadata.name";

/** The owner rule's `when` in the README's screenshot. */
export const README_WHEN = 'object.metadata.labels["env"] == "production"';

/** Where the screenshot goes for the README, with `UPDATE_SCREENSHOT=1`. */
export const README_SCREENSHOT =
  new URL("../docs/images/graph.png", import.meta.url).pathname;

/** VirtualMachines, as the graph names the type. */
export const VMS = "virtualmachines.compute.example.com";
/** VPCs, as the graph names the type. */
export const VPCS = "vpcs.network.example.com";
/** Subnets, as the graph names the type. */
export const SUBNETS = "subnets.network.example.com";
/** Networks, as the graph names the type. */
export const NETWORKS = "networks.owners.example.com";

/** A rule of the world: where, which name, and the Ready it settles at. */
export interface GraphPageRule {
  /** Its workspace. */
  readonly workspace: string;
  /** Its name. */
  readonly name: string;
  /** The reason of the Ready it settles at. */
  readonly reason: "Enforced" | "DependencyCycle";
}

/** What the graph page's steps act on and keep, from {@linkcode graphPageWorld}. */
export interface GraphPageWorld {
  /** The network provider. */
  readonly network: string;
  /** The compute provider. */
  readonly compute: string;
  /** The owners provider. */
  readonly owners: string;
  /** The consumer. */
  readonly c1: string;
  /** The rules, and the Ready each settles at. */
  readonly rules: readonly GraphPageRule[];
  /** Each provider's logical cluster, by path, once the first step ran. */
  readonly clusters: Record<string, string>;
  /** The webhook (`--holds`), once started. */
  webhook?: WebhookProcess;
  /** The controller (`--graph`), once started. */
  controller?: ComponentProcess;
  /** The browser, once launched. */
  browser?: TestBrowser;
  /** `/graph.json` once the statuses settled. */
  graph?: DependencyGraphJson;
}

/** The graph page's world, under `root`: nothing started yet. */
export function graphPageWorld(): GraphPageWorld {
  const network = "root:providers:network";
  const compute = "root:providers:compute";
  const owners = "root:providers:owners";
  return {
    network,
    compute,
    owners,
    c1: "root:consumers:c1",
    rules: [
      { workspace: compute, name: "vm-network", reason: "Enforced" },
      { workspace: owners, name: "network-owner", reason: "Enforced" },
      { workspace: network, name: "subnet-vpc", reason: "DependencyCycle" },
      { workspace: network, name: "vpc-subnet", reason: "DependencyCycle" },
    ],
    clusters: {},
  };
}

/**
 * A rule of the network provider at `network` in which Subnets name a VPC
 * in a label.
 */
export function subnetVpcLabelRule(network: string): Record<string, unknown> {
  return dependencyRule("subnet-vpc", {
    dependent: "Subnet",
    dependencies: [{
      path: network,
      resource: "vpcs",
      field: labelPath("network.example.com/vpc"),
    }],
  });
}

/** The few DOM features the page probe uses (Deno's types have no DOM). */
export interface DomElement {
  /** `id`. */
  id: string;
  /** `textContent`. */
  textContent: string | null;
  /** `classList`. */
  classList: { contains(name: string): boolean };
  /** `getAttribute()`. */
  getAttribute(name: string): string | null;
  /** `querySelectorAll()`. */
  querySelectorAll(selector: string): Iterable<DomElement>;
}

/** The page's globals the probe uses. */
export interface BrowserGlobals {
  /** `document`. */
  document: {
    title: string;
    querySelector(selector: string): DomElement | null;
    querySelectorAll(selector: string): Iterable<DomElement>;
  };
  /** `getComputedStyle()`. */
  getComputedStyle(element: DomElement): { stroke: string };
}

/** What the browser saw of the page. */
export interface PageView {
  /** The ids of `svg g.node`. */
  nodeIds: string[];
  /** The ids of `svg g.edge`. */
  edgeIds: string[];
  /** The edges of the cycle: their paths' `stroke` attributes and computed colours. */
  cycleEdges: { id: string; strokes: string[]; colors: string[] }[];
  /** The `stroke` attributes of the other edges' paths. */
  otherEdgeStrokes: string[];
  /** How many `script` elements. */
  scripts: number;
  /** The rules table's `when` cells that hold the markup. */
  whenCells: string[];
  /** The cells of each row of the holds table. */
  holdsRows: string[][];
  /** The holds table's error, if any. */
  holdsError: string | null;
  /** The page's title. */
  title: string;
}
