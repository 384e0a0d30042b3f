/**
 * The answer of `why namespace/<ns>` and `why workspace` as text
 * ({@linkcode renderScope}): a tree for people, each held object drawn as
 * `why` draws one (its causes and their since, its own deletion and its
 * owners' being deleted), under a line that says how long the namespace's
 * deletion has been going on; JSON and YAML (the
 * {@linkcode ScopeReport} itself); and one Graphviz graph of every held
 * object named. Tenant text is made safe as `why` makes it: the tree with
 * `printable`, JSON and YAML with escapes, DOT with `dotString`.
 *
 * @module
 */
import { dotString } from "../graph/mod.ts";
import { printable } from "../runtime/mod.ts";
import { deletionNotes } from "./deletion_text.ts";
import { durationText, sinceText } from "./since_text.ts";
import { jsonText, yamlText } from "./why_data.ts";
import { renderDot, renderTree, type WhyOutput } from "./why_render.ts";
import type { ScopeObject, ScopeReport } from "./why_scope.ts";
import type { WhyNode } from "./why_walk.ts";

/** Options for {@linkcode renderScope}. */
export interface ScopeRenderOptions {
  /** Colour the tree. @default {false} */
  color?: boolean;
  /** The clock (ms since the epoch) for ages. */
  now?: number;
  /** `--max-objects`, named when it stopped the asking. */
  maxObjects?: number;
}

/** `report` in `output`, ending with a newline. */
export function renderScope(
  report: ScopeReport,
  output: WhyOutput,
  options: ScopeRenderOptions = {},
): string {
  switch (output) {
    case "json":
      return jsonText(report);
    case "yaml":
      return yamlText(report);
    case "dot":
      return scopeDot(report);
    case "tree":
      return scopeTree(report, options);
  }
}

const BRANCH = "\u251c\u2500\u2500 ";
const LAST_BRANCH = "\u2514\u2500\u2500 ";
const STEM = "\u2502   ";
const GAP = "    ";

/** The tree: the scope's line, a branch per object named, then what is left. */
function scopeTree(report: ScopeReport, options: ScopeRenderOptions): string {
  const tails = tailLines(report, options);
  const lines = [headLine(report, options)];
  const entries = report.objects;
  for (const [i, entry] of entries.entries()) {
    const last = i === entries.length - 1 && tails.length === 0;
    const drawn = renderTree(objectNode(entry), {
      ...(options.color === undefined ? {} : { color: options.color }),
      ...(options.now === undefined ? {} : { now: options.now }),
    }).replace(/\n$/, "").split("\n");
    const [first, ...rest] = drawn;
    const deleting = deletionNotes(entry, options.now);
    lines.push(`${last ? LAST_BRANCH : BRANCH}${first}${deleting}`);
    for (const line of rest) lines.push(`${last ? GAP : STEM}${line}`);
  }
  for (const [i, tail] of tails.entries()) {
    lines.push(`${i === tails.length - 1 ? LAST_BRANCH : BRANCH}${tail}`);
  }
  return `${lines.join("\n")}\n`;
}

/** `Namespace team-a (being deleted for 3m, since ...): 2 of 14 objects asked about are held:`. */
function headLine(report: ScopeReport, options: ScopeRenderOptions): string {
  const { scope } = report;
  const name = scope.kind === "Workspace" && scope.name === ""
    ? "this workspace"
    : `${scope.kind} ${printable(scope.name)}`;
  const stamp = scope.deletionTimestamp;
  const deleting = stamp === undefined
    ? ""
    : ` ${deletionText(stamp, options)}`;
  const objects = report.asked === 1 ? "object" : "objects";
  switch (report.state) {
    case "held":
      return `${name}${deleting}: ${report.heldCount} of ${report.asked} ${objects} asked about ${
        report.heldCount === 1 ? "is" : "are"
      } held:`;
    case "free":
      return `${name}${deleting}: nothing in it is held (${report.asked} ${objects} asked about)`;
    case "unknown":
      return `${name}${deleting}: cannot tell: nothing held among ${report.asked} ${objects} asked about, but not all could be asked:`;
  }
}

/** `is being deleted for 3m (since 2026-11-29T12:00:00Z)`. */
function deletionText(stamp: string, options: ScopeRenderOptions): string {
  const at = Date.parse(stamp);
  if (options.now === undefined || !Number.isFinite(at)) {
    return `is being deleted (${sinceText(stamp)})`;
  }
  return `is being deleted for ${durationText(options.now - at)} (${
    sinceText(stamp)
  })`;
}

/** The closing branches: held not named, objects not asked, types not listed. */
function tailLines(
  report: ScopeReport,
  options: ScopeRenderOptions,
): string[] {
  const tails: string[] = [];
  if (report.notNamed > 0) {
    tails.push(
      `and ${report.notNamed} more held ${
        report.notNamed === 1 ? "object" : "objects"
      } not named (--max-held)`,
    );
  }
  if (report.notAsked > 0) {
    tails.push(
      `and at least ${report.notAsked} more not asked about: the bound of ${
        options.maxObjects ?? "--max-objects"
      } objects was reached (--max-objects)`,
    );
  }
  for (const { type, why } of report.notListed) {
    tails.push(
      `not listed: ${printable(type)} (${printable(why, 300)})`,
    );
  }
  return tails;
}

/** A named object as the node `why` draws for one object. */
function objectNode(entry: ScopeObject): WhyNode {
  return {
    object: entry.object,
    state: entry.state,
    ...(entry.state === "error" ? {} : { held: true }),
    ...(entry.message === undefined ? {} : { message: entry.message }),
    ...(entry.error === undefined ? {} : { error: entry.error }),
    ...(entry.causes === undefined ? {} : { causes: entry.causes }),
  };
}

/**
 * One digraph of every held object named, as `why -o dot` draws each
 * (their nodes and edges merged), inside a box for the scope.
 */
function scopeDot(report: ScopeReport): string {
  const seen = new Set<string>();
  const body: string[] = [];
  for (const entry of report.objects) {
    if (entry.state === "error") continue;
    const lines = renderDot(objectNode(entry)).split("\n");
    for (const line of lines.slice(4, -2)) {
      if (seen.has(line)) continue;
      seen.add(line);
      body.push(`  ${line}`);
    }
  }
  const label = `${report.scope.kind} ${report.scope.name}${
    report.scope.deletionTimestamp === undefined
      ? ""
      : `, being deleted since ${report.scope.deletionTimestamp}`
  }`;
  return [
    `digraph ${dotString("why")} {`,
    `  graph [rankdir="LR", fontname="Helvetica"];`,
    `  node [shape="box", style="rounded", fontname="Helvetica", fontsize="12"];`,
    `  edge [fontname="Helvetica", fontsize="10"];`,
    `  subgraph ${dotString("cluster_scope")} {`,
    `    label=${dotString(label, 300)};`,
    ...body,
    "  }",
    "}",
    "",
  ].join("\n");
}
