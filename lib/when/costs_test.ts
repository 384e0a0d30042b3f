import assert from "node:assert/strict";
import fc from "fast-check";
import { celEnv, celList } from "@bufbuild/cel";
import {
  callCost,
  CHARS_PER_UNIT,
  codePoints,
  costedFuncs,
  IN_LIST_UNITS,
  lengthCost,
  operandLength,
  QUADRATIC_PARSE_DIVISOR,
} from "./costs.ts";

Deno.test("codePoints counts as spreading the string does", () => {
  for (
    const text of [
      "",
      "a",
      "\u{1F600}",
      "a\u{1F600}b",
      "\uD800",
      "\uDC00\uD800",
      "\uD800\uD800\uDC00",
      "\u00E9t\u00E9",
    ]
  ) {
    assert.equal(codePoints(text), [...text].length, JSON.stringify(text));
  }
  fc.assert(
    fc.property(fc.string({ unit: "binary" }), (text) => {
      assert.equal(codePoints(text), [...text].length);
    }),
    { seed: 20261129, numRuns: 500 },
  );
});

Deno.test("callCost charges the operands' characters and bytes", () => {
  assert.equal(lengthCost(CHARS_PER_UNIT - 1), 0);
  assert.equal(lengthCost(CHARS_PER_UNIT * 10), 10);
  assert.equal(operandLength("abc"), 3);
  assert.equal(operandLength(new Uint8Array(7)), 7);
  assert.equal(operandLength(42n), 0);
  const long = "a".repeat(4000);
  assert.equal(callCost("contains", [long, "ab"]), lengthCost(4002));
  assert.equal(callCost("_==_", [long, long]), lengthCost(8000));
  // Comparisons and prefixes read the shorter operand's length of each.
  assert.equal(callCost("_==_", [long, "ab"]), lengthCost(4));
  assert.equal(callCost("endsWith", [long, "a".repeat(40)]), lengthCost(80));
  assert.equal(callCost("_<_", [1n, 2n]), 0);
  // int() and uint() of a string: quadratic, as BigInt() parses it.
  const digits = "9".repeat(64_000);
  assert.equal(
    callCost("int", [digits]),
    lengthCost(64_000) +
      Math.floor(64_000 * 64_000 / QUADRATIC_PARSE_DIVISOR),
  );
  assert.equal(callCost("uint", [digits]), callCost("int", [digits]));
  assert.equal(callCost("double", [digits]), lengthCost(64_000));
  // `in` over a list: per element.
  const list = celList(Array.from({ length: 1000 }, () => "v"));
  assert.equal(callCost("@in", ["w", list]), (IN_LIST_UNITS - 1) * 1000);
});

Deno.test("costedFuncs replaces the overloads over strings and bytes only", () => {
  const std = [...celEnv().funcs];
  const charged: number[] = [];
  const costed = costedFuncs(std, (units) => charged.push(units));
  const ids = new Set(costed.map((func) => func.id));
  const stdIds = new Set(std.map((func) => func.id));
  for (const id of ids) assert.ok(stdIds.has(id), `${id} is not standard`);
  for (
    const id of [
      "string.contains(string)",
      "string.startsWith(string)",
      "string.endsWith(string)",
      "size(string)",
      "string.size()",
      "_==_(dyn,dyn)",
      "_<_(string,string)",
      "_<_(bytes,bytes)",
      "_+_(string,string)",
      "_+_(bytes,bytes)",
      "@in(dyn,list)",
      "int(string)",
      "bytes(string)",
      "string(bytes)",
    ]
  ) {
    assert.ok(ids.has(id), `${id} is not costed`);
  }
  // matches() is charged by its own hook; int arithmetic is not costed.
  assert.ok(![...ids].some((id) => id.includes("matches")));
  assert.ok(!ids.has("_+_(int,int)"));
  // A costed call charges, then answers as the original.
  const contains = costed.find((func) =>
    func.id === "string.contains(string)"
  )!;
  const text = "a".repeat(400);
  assert.equal(contains.call(1, text, ["ab"]), false);
  assert.deepEqual(charged, [lengthCost(402), 0]);
  const concat = costed.find((func) => func.id === "_+_(string,string)")!;
  charged.length = 0;
  assert.equal(concat.call(1, undefined, [text, text]), text + text);
  assert.deepEqual(charged, [lengthCost(800), lengthCost(800)]);
  const size = costed.find((func) => func.id === "size(string)")!;
  assert.equal(size.call(1, undefined, ["a\u{1F600}"]), 2n);
  // Arguments of other types are not this overload's.
  assert.equal(contains.call(1, 1n, ["ab"]), undefined);
});

Deno.test("a charge that throws stops the call before its work", () => {
  const costed = costedFuncs(celEnv().funcs, (units) => {
    if (units > 100) throw new Error("spent");
  });
  const int = costed.find((func) => func.id === "int(string)")!;
  const result = int.call(1, undefined, ["9".repeat(10_000)]);
  assert.ok(result instanceof Object && "message" in (result as object));
  assert.match(String((result as { message: string }).message), /spent/);
});
