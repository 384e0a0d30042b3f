import assert from "node:assert/strict";
import { renderSvg } from "./svg.ts";

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

Deno.test("renderSvg() rejects what Graphviz cannot read, with its message, and keeps working", async () => {
  await assert.rejects(
    renderSvg("digraph { a -> "),
    (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.match(
        error.message,
        /^graphviz cannot render the graph: .*syntax error/,
      );
      return true;
    },
  );
  const svg = await renderSvg("digraph { a }");
  assert.equal(svg.match(/class="node"/g)?.length, 1);
});
