/**
 * The graph as one self-contained HTML page ({@linkcode graphPage}): the
 * picture, a table of the rules, the cycles, and the objects the webhook
 * holds now. No script, no external resource, inline CSS only, under a
 * Content-Security-Policy that allows nothing else.
 *
 * Every text from the graph and the holds report comes from tenants or
 * providers: each is made printable (no control or direction-changing
 * character) and HTML-escaped.
 *
 * @example Usage
 * ```ts
 * import { buildGraph } from "./model.ts";
 * import { graphPage } from "./page.ts";
 *
 * const html = graphPage(buildGraph([]), {
 *   svg: "<svg></svg>",
 *   title: "Dependencies",
 *   now: new Date(),
 * });
 * ```
 *
 * @module
 */
import type { Cause, Hold, HoldsReport } from "../causes/mod.ts";
import { SKIP_PROTECTION_ANNOTATION, typeName } from "../rules/mod.ts";
import { printable } from "../runtime/mod.ts";
import { referenceLines } from "./dot.ts";
import type { DependencyGraph, GraphEdge } from "./model.ts";

/** The page's Content-Security-Policy: inline CSS and data: images only. */
export const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** The most holds listed; the rest are counted. */
export const MAX_HOLD_ROWS = 1_000;

/** The most characters of a name, path or reason shown. */
const MAX_TEXT = 600;
/** The most characters of a `when` shown (the schema's limit and some). */
const MAX_WHEN = 1_100;
/** The most characters of a `when` shown in a hold's cause. */
const MAX_CAUSE_WHEN = 80;

/** Options of {@linkcode graphPage}. */
export interface GraphPageOptions {
  /** The picture: the `<svg>` element `renderSvg` returns. Inlined as is. */
  svg: string;
  /** The page's title. */
  title: string;
  /** When the page is made: shown, and the end of each hold's duration. */
  now: Date;
  /** What the webhook holds now, when it could be read. */
  holds?: HoldsReport | undefined;
  /** Why the holds could not be read, when they could not. */
  holdsError?: string | undefined;
}

/**
 * The HTML page of `graph`. DOM hooks: `<table id="rules">` with a
 * `<tr class="rule">` per rule dependency (also classed `cycle`,
 * `not-ready` as they apply), `<ul id="cycles">` with an `<li
 * class="cycle">` per cycle, and `<table id="holds">` with a `<tr
 * class="hold">` per held object when `holds` is given; otherwise
 * `holdsError`, or a note that holds are not configured.
 *
 * @param graph The graph, from `buildGraph`.
 * @param options The picture, the title, the time, and the holds.
 * @returns A whole HTML document.
 */
export function graphPage(
  graph: DependencyGraph,
  options: GraphPageOptions,
): string {
  const title = escapeHtml(options.title);
  const generated = options.now.toISOString();
  return [
    "<!DOCTYPE html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}">`,
    '<meta name="referrer" content="no-referrer">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${title}</title>`,
    `<style>${STYLE}</style>`,
    "</head>",
    "<body>",
    `<h1>${title}</h1>`,
    `<p class="summary">Generated <time datetime="${generated}">` +
    `${generated}</time>: ${_summary(graph)}.</p>`,
    '<section id="graph">',
    `<div class="picture">${options.svg}</div>`,
    `<p class="legend">An arrow runs from a dependent type to the type it ` +
    `protects. <span class="cycle">Red</span>: on a cycle of types. ` +
    `<span class="not-ready">Dashed</span>: the rule is not Ready ` +
    `(orange unless on a cycle).</p>`,
    "</section>",
    '<section id="rules-section">',
    "<h2>Rules</h2>",
    _rulesTable(graph.edges),
    "</section>",
    '<section id="cycles-section">',
    "<h2>Cycles</h2>",
    _cycles(graph),
    "</section>",
    '<section id="holds-section">',
    "<h2>Held now</h2>",
    _holds(options),
    "</section>",
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

/**
 * `text` for HTML text or a quoted attribute value: made printable (see
 * `printable`), lone surrogates replaced, and `&`, `<`, `>`, `"`, `'`
 * written as character references.
 *
 * @param text Any text.
 * @param max The most characters of `text` kept, `...` marking a cut.
 * @returns The escaped text.
 */
export function escapeHtml(text: string, max: number = MAX_TEXT): string {
  return printable(text.toWellFormed(), max).replace(
    /[&<>"']/g,
    (c) => HTML_ENTITIES[c]!,
  );
}

/**
 * A duration for people: `45s`, `3m 20s`, `2h 5m`, `3d 4h` (the two
 * largest units; negative durations count as zero).
 *
 * @param milliseconds The duration.
 * @returns The duration in words.
 */
export function humanDuration(milliseconds: number): string {
  const seconds = Math.max(0, Math.floor(milliseconds / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${seconds % 60}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h ${minutes % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

const HTML_ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

const STYLE = [
  "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}",
  "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}",
  ".picture{overflow:auto;border:1px solid #ddd;padding:.5em}",
  ".picture svg{max-width:100%;height:auto}",
  "table{border-collapse:collapse;font-size:.9em}",
  "th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;" +
  "vertical-align:top}",
  "th{background:#f4f4f4}",
  "code{font-size:.95em;word-break:break-all}",
  "ul.causes{margin:0;padding-left:1.2em}",
  ".cycle{color:#c00}.not-ready{color:#b85c00}",
  "tr.cycle td{background:#fff0f0}tr.not-ready td{background:#fff7ec}",
  ".muted{color:#666}",
].join("");

/** `3 types, 3 rule dependencies from 2 rules (1 not Ready), 1 cycle`. */
function _summary(graph: DependencyGraph): string {
  const rules = new Set(graph.edges.map((edge) => edge.rule));
  const notReady = new Set(
    graph.edges.filter((edge) => edge.ready !== "True").map((edge) =>
      edge.rule
    ),
  );
  return [
    _count(graph.nodes.length, ["type", "types"]),
    `${
      _count(graph.edges.length, ["rule dependency", "rule dependencies"])
    } from ${
      _count(rules.size, ["rule", "rules"])
    } (${notReady.size} not Ready)`,
    _count(graph.cycles.length, ["cycle", "cycles"]),
  ].join(", ");
}

/** `1 type`, `2 types`: `forms` is the singular and the plural. */
function _count(count: number, forms: readonly [string, string]): string {
  return `${count} ${count === 1 ? forms[0] : forms[1]}`;
}

function _code(text: string, max: number = MAX_TEXT): string {
  return `<code>${escapeHtml(text, max)}</code>`;
}

function _rulesTable(edges: readonly GraphEdge[]): string {
  if (edges.length === 0) {
    return '<p id="no-rules" class="muted">No DependencyRules.</p>' +
      '\n<table id="rules"><tbody></tbody></table>';
  }
  const rows = edges.map((edge) => {
    const classes = ["rule"];
    if (edge.inCycle) classes.push("cycle");
    if (edge.ready !== "True") classes.push("not-ready");
    const where = edge.workspace === undefined
      ? escapeHtml(edge.cluster)
      : `${escapeHtml(edge.workspace)}<br><span class="muted">${
        escapeHtml(edge.cluster)
      }</span>`;
    const field = referenceLines(edge).map((line) => escapeHtml(line))
      .join("<br>");
    const ready = edge.ready === "True"
      ? "True"
      : `${edge.ready}${
        edge.reason === undefined ? "" : `: ${escapeHtml(edge.reason)}`
      }`;
    const cells = [
      where,
      escapeHtml(edge.ruleName),
      `${_code(edge.from)} &rarr; ${_code(edge.to)}${
        edge.selfDependency ? " (itself)" : ""
      }`,
      `<code>${field}</code>`,
      escapeHtml(edge.source),
      edge.when === undefined ? "" : _code(edge.when, MAX_WHEN),
      escapeHtml(edge.protectWhile),
      ready,
    ];
    return `<tr class="${classes.join(" ")}">${
      cells.map((cell) => `<td>${cell}</td>`).join("")
    }</tr>`;
  });
  return [
    '<table id="rules">',
    "<thead><tr><th>Workspace / cluster</th><th>Rule</th>" +
    "<th>Dependent &rarr; protected</th><th>Field</th><th>Source</th>" +
    "<th>When</th><th>Protect while</th><th>Ready</th></tr></thead>",
    "<tbody>",
    ...rows,
    "</tbody>",
    "</table>",
  ].join("\n");
}

function _cycles(graph: DependencyGraph): string {
  if (graph.cycles.length === 0) {
    return '<p id="no-cycles" class="muted">No cycles.</p>';
  }
  const items = graph.cycles.map((types) => {
    const members = new Set(types);
    const rules = [
      ...new Set(
        graph.edges.filter((edge) => edge.inCycle && members.has(edge.from))
          .map((edge) => edge.rule),
      ),
    ];
    return `<li class="cycle">Types that protect each other: ${
      types.map((type) => _code(type)).join(", ")
    }; rules ${rules.map((rule) => _code(rule)).join(", ")}</li>`;
  });
  return [
    "<p>Objects of these types that refer to each other can only be " +
    `deleted with the <code>${SKIP_PROTECTION_ANNOTATION}</code> ` +
    "annotation.</p>",
    '<ul id="cycles">',
    ...items,
    "</ul>",
  ].join("\n");
}

function _holds(options: GraphPageOptions): string {
  const parts: string[] = [];
  if (options.holdsError !== undefined) {
    parts.push(
      `<p id="holds-error" class="not-ready">Cannot read what the webhook ` +
        `holds: ${escapeHtml(options.holdsError)}</p>`,
    );
  }
  const report = options.holds;
  if (report === undefined) {
    if (options.holdsError === undefined) {
      parts.push(
        '<p id="holds-not-configured" class="muted">Not configured: no ' +
          "webhook to ask what it holds.</p>",
      );
    }
    return parts.join("\n");
  }
  const shown = report.holds.slice(0, MAX_HOLD_ROWS);
  const rows = shown.map((hold) => _holdRow(hold, options.now));
  let note = `As the webhook saw it at ${escapeHtml(report.now)}: ` +
    `${
      _count(report.holds.length, ["object", "objects"])
    } held (it keeps at most ` +
    `${report.capacity}`;
  if (report.dropped > 0) {
    note += `, ${report.dropped} dropped since it started`;
  }
  note += ").";
  if (report.holds.length > shown.length) {
    note += ` The first ${shown.length} are listed.`;
  }
  parts.push(
    `<p class="muted">${note}</p>`,
    '<table id="holds">',
    "<thead><tr><th>Cluster</th><th>Namespace</th><th>Name</th>" +
      "<th>Type</th><th>Outcome</th><th>Held by</th><th>First denied</th>" +
      "<th>Held for</th><th>Denials</th></tr></thead>",
    "<tbody>",
    ...rows,
    "</tbody>",
    "</table>",
  );
  return parts.join("\n");
}

function _holdRow(hold: Hold, now: Date): string {
  const first = Date.parse(hold.firstDenied);
  const heldFor = Number.isNaN(first)
    ? ""
    : humanDuration(now.getTime() - first);
  const type = typeName(hold);
  const causes = hold.causes.length === 0
    ? ""
    : `<ul class="causes">${
      hold.causes.map((cause) => `<li>${_cause(cause)}</li>`).join("")
    }</ul>`;
  const cells = [
    escapeHtml(hold.cluster),
    escapeHtml(hold.namespace),
    escapeHtml(hold.name),
    _code(type),
    escapeHtml(hold.outcome),
    causes,
    escapeHtml(hold.firstDenied),
    heldFor,
    String(hold.count),
  ];
  return `<tr class="hold">${
    cells.map((cell) => `<td>${cell}</td>`).join("")
  }</tr>`;
}

/** One cause in a line, every part escaped. */
function _cause(cause: Cause): string {
  switch (cause.type) {
    case "Reference": {
      const { kind, namespace, name } = cause.object;
      const where = namespace === "" ? name : `${namespace}/${name}`;
      return `Reference: ${escapeHtml(kind)} ${escapeHtml(where)} (${
        cause.fields.map((field) => _code(field)).join(", ")
      })`;
    }
    case "Owner": {
      const { kind, namespace, name } = cause.object;
      const where = namespace === "" ? name : `${namespace}/${name}`;
      let text = `Owner: ${escapeHtml(kind)} ${escapeHtml(where)}, field ${
        _code(cause.field)
      }`;
      if (cause.viaNamespace !== undefined) {
        text += ` of Namespace ${escapeHtml(cause.viaNamespace)}`;
      }
      if (cause.when !== undefined) {
        text += `, when ${_code(cause.when, MAX_CAUSE_WHEN)}`;
      }
      return text;
    }
    case "Lock":
      return `Lock: ${
        escapeHtml(`${cause.lock.namespace}/${cause.lock.name}`)
      }: ${escapeHtml(cause.reason)}`;
    case "More":
      return `${cause.count} more ${
        cause.of === "Reference" ? "references" : "owners"
      } not shown`;
    case "NotRead":
      return `Not read: ${
        escapeHtml(
          cause.group === ""
            ? cause.resource
            : `${cause.resource}.${cause.group}`,
        )
      } (${cause.verb}): ${escapeHtml(cause.why)}`;
  }
}
