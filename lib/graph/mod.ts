/**
 * The picture of the DependencyRules, what depends on what: the graph of
 * types and rule dependencies with their cycles ({@linkcode buildGraph}, and
 * {@linkcode graphJson} for programs), its DOT text ({@linkcode graphDot}),
 * Graphviz's SVG of it ({@linkcode renderSvg} once, or a {@linkcode Graphviz}
 * kept for several renders; either loads Graphviz at its first render, so
 * importing this module stays cheap), and a self-contained HTML page with
 * the picture, the rules, the cycles and what the webhook holds now
 * ({@linkcode graphPage}).
 *
 * @example A page of the rules
 * ```ts
 * import { buildGraph, graphDot, graphPage, renderSvg } from "./mod.ts";
 *
 * const graph = buildGraph([]);
 * const svg = await renderSvg(graphDot(graph));
 * const html = graphPage(graph, { svg, title: "Dependencies", now: new Date() });
 * ```
 *
 * @module
 */
export * from "./dot.ts";
export * from "./model.ts";
export * from "./page.ts";
export * from "./svg.ts";
