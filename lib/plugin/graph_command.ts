/**
 * `kubectl dependencies graph`: the DependencyRules of the current
 * workspace as a graph of types, for a provider or an operator who may
 * read them.
 *
 * ```sh
 * kubectl dependencies graph | dot -Tpng > rules.png
 * kubectl dependencies graph -o html > rules.html
 * ```
 *
 * It lists every DependencyRule it may read in the kubeconfig context's
 * workspace, skips the ones that are not valid (a warning on stderr each),
 * and writes the graph (a node per type, an edge per rule dependency) as
 * DOT (the default), JSON, SVG or a self-contained HTML page, to stdout
 * (redirect it to a file: the plugin is installed without the right to
 * write files). Exit codes: 0 written, 2 a usage, access or server error.
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  buildGraph,
  type DependencyGraph,
  graphDot,
  graphJson,
  graphPage,
  type GraphRuleInput,
  renderSvg,
} from "../graph/mod.ts";
import { CLUSTER_ANNOTATION, KubeApiError } from "../kcp/mod.ts";
import {
  GROUP,
  parseDependencyRule,
  PLURAL,
  RULES_PATH,
} from "../rules/mod.ts";
import { errorText, isRecord, printable } from "../runtime/mod.ts";
import { EXIT_OK, type PluginContext, PluginError } from "./context.ts";
import { apiFailure, workspaceOf } from "./discovery.ts";

/** The formats `graph -o` writes. */
export const GRAPH_OUTPUTS = ["dot", "json", "svg", "html"] as const;

/** One of {@linkcode GRAPH_OUTPUTS}. */
export type GraphOutput = typeof GRAPH_OUTPUTS[number];

/** `kubectl dependencies graph --help`. */
export const GRAPH_USAGE = `Usage: kubectl dependencies graph [flags]

Draws the DependencyRules of the current workspace: a node per type, an arrow
per rule dependency from the dependent type to the type it protects, cycles of
types in red, rules that are not Ready dashed. Rules that are not valid are
skipped with a warning.

Flags:
  -o, --output <format>  dot (default, for Graphviz), json, svg or html (one
                         self-contained page with the picture and the rules);
                         to stdout: redirect it to a file

Exit codes: 0 written, 2 error (such as no permission to list
dependencyrules.${GROUP}).
`;

/** The parsed arguments of `graph`. */
export interface GraphArgs {
  /** `-o`. */
  output: GraphOutput;
}

/**
 * Parses the arguments of `graph` (after the command name). The kubeconfig
 * flags are taken and left to the context.
 *
 * @throws {PluginError} With exit code 2 on a usage error.
 */
export function parseGraphArgs(
  args: readonly string[],
): GraphArgs | { help: true } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: {
        output: { type: "string", short: "o" },
        help: { type: "boolean", short: "h" },
        namespace: { type: "string", short: "n" },
        kubeconfig: { type: "string" },
        context: { type: "string" },
      },
      allowPositionals: false,
      strict: true,
    });
  } catch (error) {
    throw new PluginError(`graph: ${errorText(error)} (see --help)`);
  }
  const { values } = parsed;
  if (values.help === true) return { help: true };
  const output = values.output ?? "dot";
  if (!(GRAPH_OUTPUTS as readonly string[]).includes(output)) {
    throw new PluginError(
      `graph: -o must be one of ${
        GRAPH_OUTPUTS.join(", ")
      }: current value is '${printable(output)}'`,
    );
  }
  return { output: output as GraphOutput };
}

/** The rules to draw, and a warning for each object that is not a valid rule. */
export interface GraphInputs {
  /** The valid rules, with their cluster and workspace. */
  rules: GraphRuleInput[];
  /** One line per skipped object: its name and every problem. */
  skipped: string[];
}

/**
 * The rules of `items` (DependencyRule objects as listed in one workspace)
 * to draw: each valid one with its logical cluster (its `kcp.io/cluster`
 * annotation, else the workspace) and `workspace`; the others skipped.
 */
export function graphInputs(
  items: readonly unknown[],
  options: { workspace?: string | undefined } = {},
): GraphInputs {
  const rules: GraphRuleInput[] = [];
  const skipped: string[] = [];
  for (const item of items) {
    const parsed = parseDependencyRule(item);
    if (!parsed.ok) {
      const metadata = isRecord(item) && isRecord(item.metadata)
        ? item.metadata
        : {};
      const name = typeof metadata.name === "string"
        ? metadata.name
        : "(no name)";
      skipped.push(
        `skipping DependencyRule ${printable(name)}: ${
          printable(parsed.error, 1000)
        }`,
      );
      continue;
    }
    const annotations = parsed.rule.metadata.annotations ?? {};
    const cluster = annotations[CLUSTER_ANNOTATION] ?? options.workspace ?? "";
    rules.push({
      cluster,
      ...(options.workspace === undefined
        ? {}
        : { workspace: options.workspace }),
      rule: parsed.rule,
    });
  }
  return { rules, skipped };
}

/**
 * `graph` written as `output`: DOT and SVG with `title` above, JSON, or the
 * HTML page (made at `now`).
 *
 * @throws {Error} When Graphviz cannot lay out the DOT (svg, html).
 */
export async function renderGraph(
  graph: DependencyGraph,
  options: { output: GraphOutput; title: string; now: Date },
): Promise<string> {
  const { output, title, now } = options;
  if (output === "json") {
    return `${JSON.stringify(graphJson(graph), null, 2)}\n`;
  }
  const dot = graphDot(graph, { title });
  if (output === "dot") return dot.endsWith("\n") ? dot : `${dot}\n`;
  const svg = await renderSvg(dot);
  if (output === "svg") return `${svg}\n`;
  return graphPage(graph, { svg, title, now });
}

/**
 * Runs `kubectl dependencies graph` with its arguments (after the command
 * name) and returns the exit code, 0.
 *
 * @throws {PluginError} With exit code 2 on a usage error, when the rules
 * cannot be listed (a 403 names the permission), or when the output cannot
 * be rendered or written.
 */
export async function graphCommand(
  context: PluginContext,
  args: readonly string[],
  options: { now?: () => Date } = {},
): Promise<number> {
  const parsed = parseGraphArgs(args);
  if ("help" in parsed) {
    context.io.out(GRAPH_USAGE);
    return EXIT_OK;
  }
  const workspace = workspaceOf(context.server);
  const where = workspace ?? context.server;
  let items: unknown[];
  try {
    items = (await context.client.list(`${context.server}${RULES_PATH}`))
      .items;
  } catch (error) {
    if (
      error instanceof KubeApiError && error.notFound &&
      error.detailsName === undefined
    ) {
      throw new PluginError(
        `workspace ${where} serves no DependencyRules (${PLURAL}.${GROUP}): it needs an APIBinding to the dependency controller's APIExport ${GROUP}`,
      );
    }
    throw apiFailure(error, context, {
      verb: "list",
      what: `${PLURAL}.${GROUP}`,
    });
  }
  const inputs = graphInputs(items, { workspace });
  for (const line of inputs.skipped) context.io.err(`warning: ${line}\n`);
  if (inputs.rules.length === 0) {
    context.io.err(`warning: no valid DependencyRules in workspace ${where}\n`);
  }
  const graph = buildGraph(inputs.rules);
  let text: string;
  try {
    text = await renderGraph(graph, {
      output: parsed.output,
      title: `DependencyRules in ${where}`,
      now: options.now?.() ?? new Date(),
    });
  } catch (error) {
    throw new PluginError(`Cannot draw the graph: ${errorText(error)}`);
  }
  context.io.out(text);
  return EXIT_OK;
}
