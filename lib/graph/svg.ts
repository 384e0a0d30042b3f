/**
 * DOT to SVG with Graphviz compiled to WebAssembly (`@viz-js/viz`), in the
 * process: {@linkcode Graphviz} keeps one Graphviz instance for its renders,
 * and {@linkcode renderSvg} renders once. `@viz-js/viz` (over a megabyte of
 * JavaScript) is imported at the first render, not with this module, so a
 * process that imports `lib/graph/mod.ts` and never draws does not load it.
 *
 * @example Usage
 * ```ts
 * import { Graphviz, renderSvg } from "./svg.ts";
 *
 * const svg = await renderSvg('digraph { "a" -> "b" }'); // "<svg ..."
 * const graphviz = new Graphviz(); // for several renders
 * await graphviz.render('digraph { "a" -> "b" }');
 * await graphviz.render('digraph { "b" -> "c" }');
 * ```
 *
 * @module
 */
import type { Viz } from "@viz-js/viz";

/**
 * Graphviz, loaded at the first {@linkcode Graphviz.render} and kept for the
 * next ones. A load that fails is tried again at the next render.
 */
export class Graphviz {
  /** The instance, once a render has asked for it. */
  #viz: Promise<Viz> | undefined;

  /**
   * `dot` laid out by Graphviz's `dot` engine, as the `<svg>` element alone:
   * without the XML declaration, the DOCTYPE and the comments Graphviz
   * writes (they repeat names), ready to inline in HTML. Graphviz escapes the
   * text it writes for XML.
   *
   * @param dot A graph in the DOT language, such as `graphDot` writes.
   * @returns The `<svg>` element.
   * @throws {Error} When Graphviz cannot be loaded, or cannot read or lay
   * out `dot`, with its messages.
   */
  async render(dot: string): Promise<string> {
    this.#viz ??= loadViz().catch((error: unknown) => {
      this.#viz = undefined;
      throw error;
    });
    const result = (await this.#viz).render(dot, {
      format: "svg",
      engine: "dot",
    });
    if (result.status !== "success") {
      const messages = result.errors.map((error) => error.message).join("; ");
      throw new Error(`graphviz cannot render the graph: ${messages}`);
    }
    return _svgElement(result.output);
  }
}

/**
 * `dot` laid out by Graphviz's `dot` engine, as the `<svg>` element alone
 * (see {@linkcode Graphviz.render}), with a Graphviz loaded for this render
 * only: for a process that draws once.
 *
 * @param dot A graph in the DOT language, such as `graphDot` writes.
 * @returns The `<svg>` element.
 * @throws {Error} When Graphviz cannot be loaded, or cannot read or lay out
 * `dot`, with its messages.
 */
export async function renderSvg(dot: string): Promise<string> {
  return await new Graphviz().render(dot);
}

/** A new Graphviz instance, `@viz-js/viz` imported on the first call. */
async function loadViz(): Promise<Viz> {
  const { instance } = await import("@viz-js/viz");
  return await instance();
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
