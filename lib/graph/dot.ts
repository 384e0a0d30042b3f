/**
 * The graph in Graphviz's DOT language ({@linkcode graphDot}): a box per
 * type, an arrow per rule dependency from the dependent type to the type it
 * protects. Graphviz lays it out; nothing here places anything.
 *
 * Names, field paths and `when` texts come from tenants and providers, so
 * every ID and label is a quoted string made safe by
 * {@linkcode dotString}: no control or direction-changing character, no
 * escape sequence of Graphviz's and no HTML entity reaches the output.
 *
 * @example Usage
 * ```ts
 * import { buildGraph } from "./model.ts";
 * import { graphDot } from "./dot.ts";
 *
 * const dot = graphDot(buildGraph([]), { title: "Dependencies" });
 * ```
 *
 * @module
 */
import { printable } from "../runtime/mod.ts";
import type { DependencyGraph, GraphEdge, GraphNode } from "./model.ts";

/** The most characters of a name or path shown (rule keys fit). */
const MAX_NAME = 600;
/** The most characters of a `when` text shown in an edge's label. */
export const MAX_WHEN_LABEL = 80;
/** The most characters of a Ready reason shown. */
const MAX_REASON = 100;

/** Colour of an edge on a cycle of types. */
export const CYCLE_COLOR = "red";
/** Colour of an edge whose rule is not Ready. */
export const NOT_READY_COLOR = "darkorange";

/** Options of {@linkcode graphDot}. */
export interface GraphDotOptions {
  /** A title drawn above the graph. */
  title?: string;
}

/**
 * The DOT text of `graph`, the same for the same graph. In Graphviz's SVG,
 * each type is a `<g id="node:<id>" class="node type">` and each rule
 * dependency a `<g id="edge:<edge id>" class="edge rule">`, with the
 * classes `cycle` (drawn in {@linkcode CYCLE_COLOR}), `not-ready` (dashed,
 * in {@linkcode NOT_READY_COLOR} unless on a cycle) and `self` as they apply.
 *
 * @param graph The graph, from `buildGraph`.
 * @param options The title.
 * @returns A `digraph` for Graphviz's `dot` layout.
 */
export function graphDot(
  graph: DependencyGraph,
  options: GraphDotOptions = {},
): string {
  const graphAttributes: Attribute[] = [
    ["rankdir", "LR"],
    ["fontname", FONT],
    ["fontsize", "16"],
  ];
  if (options.title !== undefined) {
    graphAttributes.push(["label", options.title], ["labelloc", "t"]);
  }
  const lines = [
    `digraph ${dotString("dependencies")} {`,
    `  graph [${_attributes(graphAttributes)}];`,
    `  node [${
      _attributes([
        ["shape", "box"],
        ["style", "rounded"],
        ["fontname", FONT],
        ["fontsize", "12"],
      ])
    }];`,
    `  edge [${_attributes([["fontname", FONT], ["fontsize", "10"]])}];`,
  ];
  for (const node of graph.nodes) {
    lines.push(
      `  ${_name(node.id)} [${_attributes(_nodeAttributes(node))}];`,
    );
  }
  for (const edge of graph.edges) {
    lines.push(
      `  ${_name(edge.from)} -> ${_name(edge.to)} [${
        _attributes(_edgeAttributes(edge))
      }];`,
    );
  }
  lines.push("}", "");
  return lines.join("\n");
}

/**
 * `text` as a DOT double-quoted string that Graphviz shows as it is:
 * control and direction-changing characters written out by `printable`
 * (`\u{1b}`), lone surrogates replaced, then
 * `\` doubled (so no `\N`, `\G`, `\n`, `\l` ... of Graphviz's can be
 * formed), `"` escaped and `&` written `&amp;` (Graphviz would turn an HTML
 * entity such as `&#27;` into the character).
 *
 * @param text Any text.
 * @param max The most characters of `text` kept, `...` marking a cut.
 * @returns The quoted string, quotes included.
 */
export function dotString(text: string, max: number = MAX_NAME): string {
  const safe = printable(text.toWellFormed(), max)
    .replaceAll("\\", "\\\\")
    .replaceAll('"', '\\"')
    .replaceAll("&", "&amp;");
  return `"${safe}"`;
}

/**
 * An attribute: its name, and its value as plain text (quoted by
 * {@linkcode _attributes}, cut at {@linkcode MAX_NAME}) or as a
 * {@linkcode Label}.
 */
type Attribute = [name: string, value: string | Label];

/** A value of one or more lines, each cut at its own `max`. */
interface Label {
  lines: { text: string; max?: number }[];
}

/**
 * A node's name or an `id`, never cut: two names that differ only after
 * the cut would be one node, or two ids the same.
 */
function _name(text: string): string {
  return dotString(text, Number.POSITIVE_INFINITY);
}

/** An `id` attribute's value: see {@linkcode _name}. */
function _id(text: string): Label {
  return { lines: [{ text, max: Number.POSITIVE_INFINITY }] };
}

/** Label lines are joined by this DOT escape: a centred line break. */
const LINE_BREAK = "\\n";

/** The font of every text. */
const FONT = "Helvetica";

/** `a="b", c="d"`, every value a quoted string. */
function _attributes(attributes: readonly Attribute[]): string {
  return attributes.map(([name, value]) =>
    `${name}=${typeof value === "string" ? dotString(value) : _label(value)}`
  ).join(", ");
}

/** A label as one quoted string, each line made safe on its own. */
function _label(label: Label): string {
  const quoted = label.lines.map(({ text, max }) =>
    dotString(text, max).slice(1, -1)
  );
  return `"${quoted.join(LINE_BREAK)}"`;
}

function _nodeAttributes(node: GraphNode): Attribute[] {
  const lines = [
    { text: node.kinds.length > 0 ? node.kinds.join(" / ") : node.resource },
    { text: node.group },
  ];
  if (node.locks > 0) {
    lines.push({
      text: `${node.locks} ${node.locks === 1 ? "Lock" : "Locks"}`,
    });
  }
  const attributes: Attribute[] = [
    ["id", _id(`node:${node.id}`)],
    ["class", "type"],
    ["label", { lines }],
  ];
  if (node.locks > 0) attributes.push(["penwidth", "2"]);
  return attributes;
}

function _edgeAttributes(edge: GraphEdge): Attribute[] {
  const notReady = edge.ready !== "True";
  const classes = ["rule"];
  if (edge.inCycle) classes.push("cycle");
  if (notReady) classes.push("not-ready");
  if (edge.selfDependency) classes.push("self");

  const lines: { text: string; max?: number }[] = [
    { text: edge.ruleName },
    ...referenceLines(edge).map((text) => ({ text })),
  ];
  if (edge.when !== undefined) {
    lines.push({ text: `when: ${edge.when}`, max: MAX_WHEN_LABEL });
  }
  if (edge.protectWhile !== "Exists") {
    lines.push({ text: `protectWhile: ${edge.protectWhile}` });
  }
  if (edge.selfDependency) lines.push({ text: "protects its own type" });
  if (notReady) {
    lines.push({ text: _readiness(edge), max: MAX_REASON });
  }

  const attributes: Attribute[] = [
    ["id", _id(`edge:${edge.id}`)],
    ["class", classes.join(" ")],
    ["label", { lines }],
  ];
  const color = edge.inCycle
    ? CYCLE_COLOR
    : notReady
    ? NOT_READY_COLOR
    : undefined;
  if (color !== undefined) {
    attributes.push(["color", color], ["fontcolor", color]);
  }
  if (edge.inCycle) attributes.push(["penwidth", "2"]);
  if (notReady) attributes.push(["style", "dashed"]);
  return attributes;
}

/**
 * Where the reference of `edge` is, in words: on the dependent (`refers via
 * <path>`, and the namespace's field) or on the protected object (`owner
 * named by <path>`) or its Namespace (`owner named by namespace <path>`).
 */
export function referenceLines(edge: GraphEdge): string[] {
  switch (edge.source) {
    case "Dependent":
      return edge.namespacePath === undefined
        ? [`refers via ${edge.path}`]
        : [`refers via ${edge.path}`, `namespace via ${edge.namespacePath}`];
    case "Target":
      return [`owner named by ${edge.path}`];
    case "TargetNamespace":
      return [`owner named by namespace ${edge.path}`];
  }
}

/** `not Ready: <reason>`, or `Ready: Unknown` for a rule not yet seen to. */
function _readiness(edge: GraphEdge): string {
  const head = edge.ready === "False" ? "not Ready" : "Ready: Unknown";
  return edge.reason === undefined ? head : `${head}: ${edge.reason}`;
}
