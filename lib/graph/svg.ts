/**
 * DOT to SVG with Graphviz compiled to WebAssembly (`@viz-js/viz`), in the
 * process: {@linkcode renderSvg}. One Graphviz instance is created on first
 * use and kept.
 *
 * @example Usage
 * ```ts
 * import { renderSvg } from "./svg.ts";
 *
 * const svg = await renderSvg('digraph { "a" -> "b" }'); // "<svg ..."
 * ```
 *
 * @module
 */
import { instance, type Viz } from "@viz-js/viz";

/** The one Graphviz instance, created on first use. */
let viz: Promise<Viz> | undefined;

/**
 * `dot` laid out by Graphviz's `dot` engine, as the `<svg>` element alone:
 * without the XML declaration, the DOCTYPE and the comments Graphviz writes
 * (they repeat names), ready to inline in HTML. Graphviz escapes the text it
 * writes for XML.
 *
 * @param dot A graph in the DOT language, such as `graphDot` writes.
 * @returns The `<svg>` element.
 * @throws {Error} When Graphviz cannot read or lay out `dot`, with its
 * messages.
 */
export async function renderSvg(dot: string): Promise<string> {
  viz ??= instance().catch((error: unknown) => {
    viz = undefined;
    throw error;
  });
  const result = (await viz).render(dot, { format: "svg", engine: "dot" });
  if (result.status !== "success") {
    const messages = result.errors.map((error) => error.message).join("; ");
    throw new Error(`graphviz cannot render the graph: ${messages}`);
  }
  return _svgElement(result.output);
}

/** The `<svg>` element of Graphviz's output, its comments removed. */
function _svgElement(output: string): string {
  const start = output.indexOf("<svg");
  const end = output.lastIndexOf("</svg>");
  if (start < 0 || end < start) {
    throw new Error("graphviz wrote no <svg> element");
  }
  return output.slice(start, end + "</svg>".length).replace(
    /<!--[\s\S]*?-->\n?/g,
    "",
  );
}
