import assert from "node:assert/strict";
import { Graphviz, renderSvg } from "./svg.ts";

Deno.test("renderSvg() returns the <svg> element alone, ready to inline", async () => {
  const svg = await renderSvg('digraph "g" { "a" -> "b" }');
  assert.ok(svg.startsWith("<svg "), svg);
  assert.ok(svg.endsWith("</svg>"), svg);
  assert.ok(!svg.includes("<?xml"));
  assert.ok(!svg.includes("<!DOCTYPE"));
  assert.ok(!svg.includes("<!--"));
  assert.equal(svg.match(/class="node"/g)?.length, 2);
  assert.equal(svg.match(/class="edge"/g)?.length, 1);
});

Deno.test("renderSvg() drops Graphviz's comments, which repeat names", async () => {
  const svg = await renderSvg('digraph { "x --> <y>" -> "z" }');
  assert.ok(!svg.includes("<!--"));
  assert.ok(!svg.includes("-->"));
  assert.ok(svg.includes("<title>x &#45;&#45;&gt; &lt;y&gt;</title>"), svg);
});

Deno.test("Graphviz.render() rejects what Graphviz cannot read, with its message, and keeps working", async () => {
  const graphviz = new Graphviz();
  await assert.rejects(
    graphviz.render("digraph { a -> "),
    (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.match(
        error.message,
        /^graphviz cannot render the graph: .*syntax error/,
      );
      return true;
    },
  );
  const svg = await graphviz.render("digraph { a }");
  assert.equal(svg.match(/class="node"/g)?.length, 1);
});

Deno.test("Graphviz.render() draws each graph it is given, one instance for all", async () => {
  const graphviz = new Graphviz();
  const cases = [
    { dot: "digraph { a }", nodes: 1, edges: 0 },
    { dot: 'digraph { "a" -> "b" -> "c" }', nodes: 3, edges: 2 },
    { dot: "digraph { a -> b; a -> c; b -> c }", nodes: 3, edges: 3 },
  ];
  for (const { dot, nodes, edges } of cases) {
    const svg = await graphviz.render(dot);
    assert.equal(svg.match(/class="node"/g)?.length, nodes, dot);
    assert.equal(svg.match(/class="edge"/g)?.length ?? 0, edges, dot);
    assert.equal(svg, await renderSvg(dot), dot);
  }
});
