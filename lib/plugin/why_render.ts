/**
 * `why`'s answer as text: a tree for people ({@linkcode renderTree}, in
 * colour on a terminal), JSON and YAML for programs ({@linkcode renderJson},
 * {@linkcode renderYaml}: the {@linkcode WhyNode} itself), and a Graphviz
 * graph ({@linkcode renderDot}).
 *
 * Names, fields, reasons, rules, `when` texts and messages come from
 * tenants and providers. None of their control or direction-changing
 * characters reaches the output as it is: the tree writes them out with
 * `printable`, JSON and YAML as `\uXXXX` escapes (the values stay the
 * same), DOT with `dotString`.
 *
 * @module
 */
import type { Cause, CauseObject } from "../causes/mod.ts";
import { dotString } from "../graph/mod.ts";
import { printable } from "../runtime/mod.ts";
import { typeName } from "../rules/mod.ts";
import { deletionNotes } from "./deletion_text.ts";
import { sinceText } from "./since_text.ts";
import { jsonText, yamlText } from "./why_data.ts";
import { WEBHOOK_DENIAL_PREFIX } from "./why_decision.ts";
import { MAX_WALK_OBJECTS, nodesOf, type WhyNode } from "./why_walk.ts";

/** The output formats of `why`. */
export const WHY_OUTPUTS = ["tree", "json", "yaml", "dot"] as const;

/** One of {@linkcode WHY_OUTPUTS}. */
export type WhyOutput = typeof WHY_OUTPUTS[number];

/** Options for {@linkcode renderWhy} and {@linkcode renderTree}. */
export interface RenderOptions {
  /** Colour the tree (a terminal, `NO_COLOR` unset). @default {false} */
  color?: boolean;
  /** The walk's bound, named when it cut the walk. @default {MAX_WALK_OBJECTS} */
  limit?: number;
  /** The clock (ms since the epoch) a cause's since is told against (`3h ago`); absent, its time alone. */
  now?: number;
}

/** `node` in `output`, ending with a newline. */
export function renderWhy(
  node: WhyNode,
  output: WhyOutput,
  options: RenderOptions = {},
): string {
  switch (output) {
    case "tree":
      return renderTree(node, options);
    case "json":
      return renderJson(node);
    case "yaml":
      return renderYaml(node);
    case "dot":
      return renderDot(node);
  }
}

// ---------------------------------------------------------------- tree

/** SGR codes of the tree's few colours. */
const SGR = { bold: 1, dim: 2, red: 31, green: 32, yellow: 33 } as const;

/** Tree branches: box-drawing characters. */
const BRANCH = "\u251c\u2500\u2500 ";
const LAST_BRANCH = "\u2514\u2500\u2500 ";
const STEM = "\u2502   ";
const GAP = "    ";

/** The most characters of a denial's message shown. */
const MAX_MESSAGE = 1000;

type Paint = (style: keyof typeof SGR, text: string) => string;

/** How the tree's lines are drawn: their colours and the clock for a since. */
interface Show {
  paint: Paint;
  now: number | undefined;
}

/**
 * The tree: a line for the object and what became of the question, then a
 * branch per cause, and below a blocking object (with `--recursive`) what
 * holds it in turn.
 */
export function renderTree(node: WhyNode, options: RenderOptions = {}): string {
  const paint: Paint = options.color
    ? (style, text) => `\x1b[${SGR[style]}m${text}\x1b[0m`
    : (_style, text) => text;
  const show: Show = { paint, now: options.now };
  const lines = [
    `${rootLine(node, paint)}${deletionNotes(node, show.now)}`,
    ...causeLines(node, "", show),
  ];
  const cut = [...nodesOf(node)].filter((n) => n.state === "cut").length;
  if (cut > 0) {
    lines.push(paint(
      "yellow",
      `the walk stopped at ${
        options.limit ?? MAX_WALK_OBJECTS
      } objects: ${cut} not asked about`,
    ));
  }
  return `${lines.join("\n")}\n`;
}

function rootLine(node: WhyNode, paint: Paint): string {
  const id = shownObject(node.object, paint);
  switch (node.state) {
    case "free":
      return `${id}: ${
        paint("green", "nothing holds it, a delete would go through")
      }`;
    case "held":
      return `${id} ${paint("red", "is held by:")}`;
    case "denied":
      return `${id} ${paint("red", "cannot be deleted now:")} ${
        shownMessage(node.message ?? "")
      }`;
    default:
      return `${id}: ${paint("yellow", "cannot tell:")} ${
        printable(node.error ?? node.state)
      }`;
  }
}

/** The lines of `node`'s causes, each under `prefix`, children below theirs. */
function causeLines(node: WhyNode, prefix: string, show: Show): string[] {
  const { paint } = show;
  const causes = node.causes ?? [];
  const children = node.children;
  const lines: string[] = [];
  let next = 0;
  for (const [i, cause] of causes.entries()) {
    const last = i === causes.length - 1;
    const branch = paint("dim", `${prefix}${last ? LAST_BRANCH : BRANCH}`);
    const below = `${prefix}${last ? GAP : STEM}`;
    const blocking = cause.type === "Reference" || cause.type === "Owner";
    const child = blocking && children !== undefined
      ? children[next++]
      : undefined;
    lines.push(
      `${branch}${causeText(cause, show)}${
        child === undefined ? "" : childSuffix(child, paint)
      }`,
    );
    if (child !== undefined) lines.push(...childLines(child, below, show));
  }
  return lines;
}

/** What a blocking object's line ends with, after its cause. */
function childSuffix(child: WhyNode, paint: Paint): string {
  switch (child.state) {
    case "free":
      return paint("green", ", nothing holds it");
    case "cycle":
      return paint("dim", " (cycle)");
    case "seen":
      return paint("dim", " (see above)");
    case "cut":
      return paint("yellow", " (not asked: the walk's bound was reached)");
    default:
      return "";
  }
}

/** The lines below a blocking object: what holds it, or why that is not known. */
function childLines(child: WhyNode, prefix: string, show: Show): string[] {
  const { paint } = show;
  const branch = paint("dim", `${prefix}${LAST_BRANCH}`);
  switch (child.state) {
    case "held":
      return causeLines(child, prefix, show);
    case "denied":
      return [
        `${branch}${paint("red", "cannot be deleted now:")} ${
          shownMessage(child.message ?? "")
        }`,
        ...causeLines(child, `${prefix}${GAP}`, show),
      ];
    case "error":
      return [
        `${branch}${paint("yellow", "cannot tell:")} ${
          printable(child.error ?? "")
        }`,
      ];
    default:
      return [];
  }
}

/** One cause, in words. */
function causeText(cause: Cause, show: Show): string {
  const { paint } = show;
  const since = "since" in cause && cause.since !== undefined
    ? sinceText(cause.since, show.now)
    : "";
  switch (cause.type) {
    case "Reference":
      return `referenced by ${shownObject(cause.object, paint)}${
        details([
          cause.fields.map((f) => printable(f)).join(", "),
          rulesText(cause.rules),
          cause.note === undefined ? "" : printable(cause.note),
          since,
        ])
      }`;
    case "Owner":
      return `belongs to ${shownObject(cause.object, paint)}${
        details([
          cause.viaNamespace === undefined
            ? printable(cause.field)
            : `${printable(cause.field)} of namespace ${
              printable(cause.viaNamespace)
            }`,
          cause.when === undefined ? "" : `when ${printable(cause.when)}`,
          rulesText([cause.rule]),
          cause.note === undefined ? "" : printable(cause.note),
          since,
        ])
      }`;
    case "Lock":
      return `locked by ${paint("bold", "Lock")} ${
        shownPlace(cause.lock.namespace, cause.lock.name)
      }${
        details([
          cause.reason === "" ? "" : `reason: ${printable(cause.reason)}`,
          since,
          cause.expiresAt === undefined
            ? ""
            : `until ${printable(cause.expiresAt)}`,
        ])
      }`;
    case "More": {
      const what = cause.of === "Reference"
        ? cause.count === 1 ? "dependent" : "dependents"
        : cause.count === 1
        ? "owner"
        : "owners";
      return `and ${cause.count} more ${what} not named`;
    }
    case "NotRead":
      return `${paint("yellow", "not read:")} ${printable(typeName(cause))}${
        details([
          cause.verb === "list"
            ? "its objects may refer to it too"
            : "its owners may hold it too",
          printable(cause.why),
        ])
      }`;
  }
}

/** ` (a; b)` of the parts that are not empty, or `""`. */
function details(parts: readonly string[]): string {
  const shown = parts.filter((p) => p !== "");
  return shown.length === 0 ? "" : ` (${shown.join("; ")})`;
}

function rulesText(rules: readonly string[]): string {
  if (rules.length === 0) return "";
  return `${rules.length === 1 ? "rule" : "rules"} ${
    rules.map((r) => printable(r)).join(", ")
  }`;
}

/** `Kind namespace/name`, or `Kind name` when cluster-scoped. */
function shownObject(object: CauseObject, paint: Paint): string {
  const kind = object.kind === "" ? typeName(object) : object.kind;
  return `${paint("bold", printable(kind))} ${
    shownPlace(object.namespace, object.name)
  }`;
}

function shownPlace(namespace: string, name: string): string {
  return namespace === ""
    ? printable(name)
    : `${printable(namespace)}/${printable(name)}`;
}

/** A denial's message without the API server's `admission webhook "..." denied the request: `. */
function shownMessage(message: string): string {
  const prefix = new RegExp(
    `^${WEBHOOK_DENIAL_PREFIX}"[^"]*" denied the request: `,
  );
  return printable(message.replace(prefix, ""), MAX_MESSAGE);
}

// ---------------------------------------------------------- JSON, YAML

/** `node` as indented JSON; see {@linkcode WhyNode} for its fields. */
export function renderJson(node: WhyNode): string {
  return jsonText(node);
}

/**
 * `node` as YAML, the same value as {@linkcode renderJson}: a string with
 * a control or direction-changing character is double-quoted, with the
 * character escaped.
 */
export function renderYaml(node: WhyNode): string {
  return yamlText(node);
}

// ----------------------------------------------------------------- DOT

/** A node of the DOT graph, and what is known of it. */
interface DotNode {
  /** Its label's lines. */
  lines: string[];
  /** Extra attributes. */
  attributes: [string, string][];
}

/**
 * A Graphviz digraph: a box per object and per Lock, an arrow from each
 * blocker to the object it holds, labelled with the fields, the owner's
 * field or the Lock's reason. The object asked about has a thick border;
 * objects held are red, free ones green, those not asked about dashed.
 */
export function renderDot(node: WhyNode): string {
  // What the walk found about each object: the node shown in full, or cut.
  const found = new Map<string, WhyNode>();
  for (const n of nodesOf(node)) {
    const id = objectId(n.object);
    if (n.state !== "seen" && n.state !== "cycle" && !found.has(id)) {
      found.set(id, n);
    }
  }
  const nodes = new Map<string, DotNode>();
  const addObject = (object: CauseObject) => {
    const id = objectId(object);
    if (nodes.has(id)) return id;
    const known = found.get(id);
    nodes.set(
      id,
      known === undefined
        ? { lines: objectLines(object), attributes: [] }
        : dotObject(known),
    );
    return id;
  };
  const edges: string[] = [];
  addObject(node.object);
  for (const n of nodesOf(node)) {
    if (n.state === "seen" || n.state === "cycle") continue;
    const to = addObject(n.object);
    for (const [i, cause] of (n.causes ?? []).entries()) {
      const { from, text } = causeEdge(cause, { to, index: i, nodes });
      edges.push(
        `  ${dotString(from)} -> ${dotString(to)} [label=${
          dotString(text, MAX_EDGE_LABEL)
        }];`,
      );
      if (cause.type === "Reference" || cause.type === "Owner") {
        addObject(cause.object);
      }
    }
  }
  nodes.get(objectId(node.object))?.attributes.push(["penwidth", "2"]);
  return [
    `digraph ${dotString("why")} {`,
    `  graph [rankdir="LR", fontname="Helvetica"];`,
    `  node [shape="box", style="rounded", fontname="Helvetica", fontsize="12"];`,
    `  edge [fontname="Helvetica", fontsize="10"];`,
    ...[...nodes].map(([id, n]) =>
      `  ${dotString(id)} [${
        [["label", label(n.lines)] as const, ...n.attributes]
          .map(([k, v]) => `${k}=${v}`).join(", ")
      }];`
    ),
    ...edges,
    "}",
    "",
  ].join("\n");
}

/** The most characters of an edge's label. */
const MAX_EDGE_LABEL = 120;

/**
 * Where the edge of `cause` comes from, and its label; a Lock and a "more"
 * get nodes of their own in `where.nodes` (an object's node is added by
 * the caller).
 */
function causeEdge(
  cause: Cause,
  where: { to: string; index: number; nodes: Map<string, DotNode> },
): { from: string; text: string } {
  switch (cause.type) {
    case "Reference":
      return {
        from: objectId(cause.object),
        text: `refers via ${cause.fields.join(", ")}`,
      };
    case "Owner":
      return { from: objectId(cause.object), text: `owns via ${cause.field}` };
    case "Lock": {
      const from = `lock:${cause.lock.namespace}/${cause.lock.name}`;
      if (!where.nodes.has(from)) {
        where.nodes.set(from, {
          lines: ["Lock", placeText(cause.lock.namespace, cause.lock.name)],
          attributes: [["shape", dotString("note")]],
        });
      }
      return { from, text: `locks: ${cause.reason}` };
    }
    case "More": {
      const from = `more:${where.index}:${where.to}`;
      where.nodes.set(from, {
        lines: [
          `${cause.count} more ${
            cause.of === "Reference" ? "dependents" : "owners"
          }`,
        ],
        attributes: [["style", dotString("dashed")]],
      });
      return { from, text: "" };
    }
    case "NotRead": {
      const from = `notread:${where.index}:${where.to}`;
      where.nodes.set(from, {
        lines: [`not read: ${typeName(cause)}`],
        attributes: [["style", dotString("dashed")]],
      });
      return { from, text: cause.why };
    }
  }
}

/** The DOT node of an object as the walk left it. */
function dotObject(node: WhyNode): DotNode {
  const lines = objectLines(node.object);
  switch (node.state) {
    case "held":
    case "denied":
      return { lines, attributes: [["color", dotString("red")]] };
    case "free":
      return { lines, attributes: [["color", dotString("darkgreen")]] };
    case "error":
      return {
        lines: [...lines, "cannot tell"],
        attributes: [["style", dotString("dashed")]],
      };
    case "cut":
      return {
        lines: [...lines, "not asked"],
        attributes: [["style", dotString("dashed")]],
      };
    default:
      return { lines, attributes: [] };
  }
}

function objectId(object: CauseObject): string {
  return `${typeName(object)}/${object.namespace}/${object.name}`;
}

function objectLines(object: CauseObject): string[] {
  return [
    object.kind === "" ? typeName(object) : object.kind,
    placeText(object.namespace, object.name),
  ];
}

function placeText(namespace: string, name: string): string {
  return namespace === "" ? name : `${namespace}/${name}`;
}

/** Lines as one quoted label, each made safe on its own, joined by DOT's `\n`. */
function label(lines: readonly string[]): string {
  return `"${lines.map((l) => dotString(l).slice(1, -1)).join("\\n")}"`;
}
