import assert from "node:assert/strict";
import { parse } from "@bufbuild/cel";
import { children, countNodes, countUses } from "./ast.ts";

Deno.test("countNodes() counts every node of a tree", () => {
  assert.equal(countNodes(undefined), 0);
  assert.equal(countNodes(parse("true").expr), 1);
  assert.equal(countNodes(parse("object.a + object.b").expr), 5);
  assert.equal(countNodes(parse("[1, 2, 3]").expr), 4);
  // A macro counts as its expansion, more than the nodes written.
  assert.ok(countNodes(parse("object.a.all(x, x)").expr) > 4);
});

Deno.test("countUses() counts an identifier, not fields of its name", () => {
  assert.equal(countUses(undefined, "x"), 0);
  assert.equal(countUses(parse("x + x + object.x").expr, "x"), 2);
  assert.equal(countUses(parse("object.a").expr, "x"), 0);
  assert.equal(countUses(parse("[x, {x: x}]").expr, "x"), 3);
});

Deno.test("children() lists a node's direct children, of every kind", () => {
  const cases: [string, number][] = [
    ["1", 0],
    ["object", 0],
    ["object.a", 1],
    ["f(1, 2)", 2],
    ["object.f(1)", 2],
    ["[1, 2, 3]", 3],
    ["{'a': 1, 'b': 2}", 4],
    ["[1].all(x, x > 0)", 5],
  ];
  for (const [source, count] of cases) {
    assert.equal(children(parse(source).expr).length, count, source);
  }
});
