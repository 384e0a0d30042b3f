/**
 * The controller's live picture, with `--graph`: `GET /graph` (an HTML page
 * with an SVG of the types the rules protect, each rule's state and the
 * Locks per type, and what the webhook holds when `--graph-holds-url` is
 * given) and `GET /graph.json`: {@linkcode createGraphApp}, which the
 * controller adds to its metrics listener (`metricsRoutes`).
 *
 * The graph comes from what the controller already watches: the rules with
 * their status, the Locks, and the workspace paths it has resolved. The
 * SVG is rendered when the page is asked for, at most one render at a
 * time, and kept while the rules, Locks and paths stay the same.
 *
 * @module
 */
import { Hono } from "hono";
import {
  buildGraph,
  type DependencyGraph,
  graphDot,
  graphJson,
  graphPage,
  type GraphRuleInput,
  Graphviz,
  nodeId,
  PAGE_CSP,
} from "../graph/mod.ts";
import { type HoldsReport, parseHoldsReport } from "../causes/mod.ts";
import {
  boundedText,
  clusterOf,
  type EndpointObject,
  type KubeObject,
} from "../kcp/mod.ts";
import { parseLock } from "../locks/mod.ts";
import { type DependencyRule, parseDependencyRule } from "../rules/mod.ts";
import { errorText, type Logger, Semaphore } from "../runtime/mod.ts";
import {
  type ResolveOptions,
  WorkspaceResolver,
} from "./workspace_resolver.ts";

/**
 * The Content-Security-Policy header of both answers: the page's own
 * policy (nothing loaded or run, inline styles only), and what only a
 * header can say: no framing, no base URL, no form posts.
 */
export const GRAPH_CSP =
  `${PAGE_CSP}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

/** How long the holds are waited for, by default. */
export const HOLDS_TIMEOUT_MS = 2_000;
/** The largest `/holds.json` body read, by default. */
export const HOLDS_MAX_BYTES = 4 * 1024 * 1024;
/** How long a page waits for the render before it answers 503. */
const RENDER_WAIT_MS = 30_000;
/** The most workspace paths a {@linkcode PathRecordingResolver} keeps. */
const MAX_RECORDED_PATHS = 10_000;

/** What the graph is drawn from: the controller's watches. */
export interface GraphWatches {
  /** Every object of a collection, from every endpoint (the watcher's). */
  items(collection: "rules" | "locks"): readonly EndpointObject[];
}

/** Options for {@linkcode createGraphApp}. */
export interface GraphAppOptions {
  /** The rules and Locks. */
  watches: GraphWatches;
  /** The workspace paths of logical clusters, where known. */
  workspaces?: { pathOf(cluster: string): string | undefined };
  /** The page's title. */
  title: string;
  /** The webhook's `/holds.json`, read for every page; none if undefined. */
  holdsUrl?: string | undefined;
  /** Where to log failed renders and reads. */
  log: Logger;
  /** How long the holds are waited for. @default {2_000} */
  holdsTimeoutMs?: number;
  /** The largest holds body read. @default {4 MiB} */
  holdsMaxBytes?: number;
  /** Renders DOT to SVG. @default {one `Graphviz` per app, loaded at first} */
  render?: (dot: string) => Promise<string>;
  /** Reads the holds. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** The clock. @default {() => new Date()} */
  now?: () => Date;
}

/** The rules and Lock counts of one moment, and a key that changes with them. */
interface GraphInputs {
  rules: GraphRuleInput[];
  locks: Map<string, number>;
  key: string;
}

/** A rendered graph and the inputs it was drawn from. */
interface Rendered {
  key: string;
  graph: DependencyGraph;
  svg: string;
}

/**
 * The routes `/graph` and `/graph.json`. Each request reads the watches;
 * the graph is built again only when a rule, a Lock count or a workspace
 * path changed, and its SVG rendered again only then, one render at a
 * time (a page that waits over 30 s for it answers 503).
 */
export function createGraphApp(options: GraphAppOptions): Hono {
  const inputs = new GraphInputReader(options);
  const render = options.render ?? graphvizRender();
  const renders = new Semaphore(1);
  const now = options.now ?? (() => new Date());
  let last: Rendered | undefined;

  const rendered = async (): Promise<Rendered | undefined> => {
    const current = inputs.read();
    if (last?.key === current.key) return last;
    const release = await renders.acquire(1, { timeoutMs: RENDER_WAIT_MS });
    if (release === undefined) return undefined;
    try {
      // Read again: the watches may have moved while this waited its turn.
      const latest = inputs.read();
      if (last?.key === latest.key) return last;
      const graph = buildGraph(latest.rules, { locks: latest.locks });
      const svg = await render(graphDot(graph, { title: options.title }));
      last = { key: latest.key, graph, svg };
      return last;
    } finally {
      release();
    }
  };

  const app = new Hono();
  app.get("/graph", async (c) => {
    let drawn: Rendered | undefined;
    try {
      drawn = await rendered();
    } catch (error) {
      options.log.error("cannot render the graph", { error });
      return c.text(
        `cannot render the graph: ${errorText(error)}\n`,
        500,
        PLAIN_HEADERS,
      );
    }
    if (drawn === undefined) {
      return c.text("busy rendering the graph; try again\n", 503, {
        ...PLAIN_HEADERS,
        "retry-after": "5",
      });
    }
    const holds = options.holdsUrl === undefined
      ? {}
      : await readHolds(options.holdsUrl, {
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
        ...(options.holdsTimeoutMs === undefined
          ? {}
          : { timeoutMs: options.holdsTimeoutMs }),
        ...(options.holdsMaxBytes === undefined
          ? {}
          : { maxBytes: options.holdsMaxBytes }),
        log: options.log,
      });
    const html = graphPage(drawn.graph, {
      svg: drawn.svg,
      title: options.title,
      now: now(),
      ...holds,
    });
    return c.body(html, 200, {
      ...SECURITY_HEADERS,
      "content-type": "text/html; charset=utf-8",
    });
  });
  app.get("/graph.json", (c) => {
    const current = inputs.read();
    const graph = last?.key === current.key
      ? last.graph
      : buildGraph(current.rules, { locks: current.locks });
    return c.body(JSON.stringify(graphJson(graph)), 200, {
      ...SECURITY_HEADERS,
      "content-type": "application/json; charset=utf-8",
    });
  });
  return app;
}

/**
 * Renders with one Graphviz, which loads its WebAssembly (over a megabyte of
 * JavaScript that a controller without `--graph` never needs) at the first
 * render and keeps it.
 */
function graphvizRender(): (dot: string) => Promise<string> {
  const graphviz = new Graphviz();
  return (dot) => graphviz.render(dot);
}

/** Headers of every answer: never cached, never sniffed, nothing run. */
const SECURITY_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "content-security-policy": GRAPH_CSP,
  "referrer-policy": "no-referrer",
} as const;

const PLAIN_HEADERS = {
  ...SECURITY_HEADERS,
  "content-type": "text/plain; charset=utf-8",
} as const;

/**
 * Reads the rules and Locks from the watches, each object version parsed
 * once, and keys them by what the graph shows of them.
 */
class GraphInputReader {
  readonly #options: GraphAppOptions;
  /** Each rule version's validation; `null` when it is not valid. */
  readonly #rules = new WeakMap<KubeObject, DependencyRule | null>();
  /** Each Lock version's target node id; `null` when it is not valid. */
  readonly #locks = new WeakMap<KubeObject, string | null>();

  constructor(options: GraphAppOptions) {
    this.#options = options;
  }

  read(): GraphInputs {
    const { watches, workspaces } = this.#options;
    const rules: GraphRuleInput[] = [];
    const keys: string[] = [];
    for (const { object } of watches.items("rules")) {
      const rule = this.#rule(object);
      if (rule === null) continue;
      const cluster = clusterOf(object);
      const workspace = workspaces?.pathOf(cluster);
      rules.push({
        cluster,
        ...(workspace === undefined ? {} : { workspace }),
        rule,
      });
      keys.push(
        [
          cluster,
          rule.metadata.name,
          object.metadata?.resourceVersion ?? "",
          workspace ?? "",
        ].join("\u0000"),
      );
    }
    const locks = new Map<string, number>();
    for (const { object } of watches.items("locks")) {
      const id = this.#lockTarget(object);
      if (id !== null) locks.set(id, (locks.get(id) ?? 0) + 1);
    }
    keys.sort();
    const lockKeys = [...locks].map(([id, n]) => `${id}=${n}`).sort();
    return {
      rules,
      locks,
      key: `${keys.join("\n")}\n\n${lockKeys.join("\n")}`,
    };
  }

  #rule(object: KubeObject): DependencyRule | null {
    let rule = this.#rules.get(object);
    if (rule === undefined) {
      const parsed = parseDependencyRule(object);
      rule = parsed.ok ? parsed.rule : null;
      this.#rules.set(object, rule);
    }
    return rule;
  }

  #lockTarget(object: KubeObject): string | null {
    let id = this.#locks.get(object);
    if (id === undefined) {
      const parsed = parseLock(object);
      id = parsed.ok
        ? nodeId(
          parsed.lock.spec.target.group,
          parsed.lock.spec.target.resource,
        )
        : null;
      this.#locks.set(object, id);
    }
    return id;
  }
}

/** Options for {@linkcode readHolds}. */
export interface ReadHoldsOptions {
  /** How long the answer is waited for, body included. @default {2_000} */
  timeoutMs?: number;
  /** The largest body read. @default {4 MiB} */
  maxBytes?: number;
  /** Makes the request. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Where to log a failure (at debug: the page shows it). */
  log?: Logger;
}

/**
 * The webhook's holds for the page, or why they could not be read: GET
 * `url` within the timeout, the body no larger than the bound, then
 * validated.
 */
export async function readHolds(
  url: string,
  options: ReadHoldsOptions = {},
): Promise<{ holds: HoldsReport } | { holdsError: string }> {
  const fetchHolds = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? HOLDS_TIMEOUT_MS;
  try {
    const response = await fetchHolds(url, {
      headers: { accept: "application/json" },
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new Error(`GET ${url}: HTTP ${response.status}`);
    }
    const text = await boundedText(response, {
      method: "GET",
      url,
      maxBytes: options.maxBytes ?? HOLDS_MAX_BYTES,
      memory: false,
    });
    return { holds: parseHoldsReport(JSON.parse(text)) };
  } catch (error) {
    options.log?.debug("cannot read the webhook's holds", { url, error });
    return { holdsError: holdsErrorText(error, url, timeoutMs) };
  }
}

/**
 * What went wrong reading the holds, in words: fetch's own message is only
 * "fetch failed", its cause says why.
 */
function holdsErrorText(
  error: unknown,
  url: string,
  timeoutMs: number,
): string {
  if (error instanceof DOMException && error.name === "TimeoutError") {
    return `GET ${url}: no answer within ${timeoutMs} ms`;
  }
  if (error instanceof TypeError && error.cause !== undefined) {
    return errorText(error.cause);
  }
  return errorText(error);
}

/**
 * A {@linkcode WorkspaceResolver} that also remembers the path each logical
 * cluster was last resolved from, so the graph can name a rule's workspace
 * when some rule names that workspace (the 10 000 most recent are kept).
 */
export class PathRecordingResolver extends WorkspaceResolver {
  readonly #paths = new Map<string, string>();

  /** Resolves as {@linkcode WorkspaceResolver.resolve} does, and records the answer. */
  override async resolve(
    path: string,
    options: ResolveOptions = {},
  ): Promise<string> {
    const cluster = await super.resolve(path, options);
    if (cluster !== path) {
      this.#paths.delete(cluster);
      this.#paths.set(cluster, path);
      if (this.#paths.size > MAX_RECORDED_PATHS) {
        const oldest = this.#paths.keys().next().value;
        if (oldest !== undefined) this.#paths.delete(oldest);
      }
    }
    return cluster;
  }

  /** The path `cluster` was last resolved from, if any. */
  pathOf(cluster: string): string | undefined {
    return this.#paths.get(cluster);
  }
}
