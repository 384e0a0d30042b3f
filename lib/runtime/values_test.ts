import assert from "node:assert/strict";
import { compareStrings, errorText, isRecord, withArticle } from "./values.ts";

Deno.test("isRecord() accepts objects and rejects null, arrays and primitives", () => {
  assert.equal(isRecord({}), true);
  assert.equal(isRecord({ a: 1 }), true);
  assert.equal(isRecord(Object.create(null)), true);
  for (const value of [null, undefined, [], [1], "x", 0, true, 1n]) {
    assert.equal(isRecord(value), false, String(value));
  }
});

Deno.test("errorText() gives an Error's message and anything else as a string", () => {
  assert.equal(errorText(new Error("boom")), "boom");
  assert.equal(errorText(new TypeError("bad type")), "bad type");
  assert.equal(errorText("plain"), "plain");
  assert.equal(errorText(42), "42");
  assert.equal(errorText(undefined), "undefined");
  assert.equal(errorText(null), "null");
});

Deno.test("compareStrings() orders by code unit, not by locale", () => {
  assert.equal(compareStrings("a", "a"), 0);
  assert.ok(compareStrings("a", "b") < 0);
  assert.ok(compareStrings("b", "a") > 0);
  assert.ok(compareStrings("B", "a") < 0);
  assert.ok(compareStrings("", "a") < 0);
  const words = ["b", "a-b", "B", "a", "ab", "a.b"];
  assert.deepEqual([...words].sort(compareStrings), [...words].sort());
});

Deno.test("withArticle() writes an before a vowel and a otherwise", () => {
  assert.equal(withArticle("Instance"), "an Instance");
  assert.equal(withArticle("Endpoint"), "an Endpoint");
  assert.equal(withArticle("ObjectBucket"), "an ObjectBucket");
  assert.equal(withArticle("VirtualMachine"), "a VirtualMachine");
  assert.equal(withArticle("User"), "a User");
});
