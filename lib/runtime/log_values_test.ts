import assert from "node:assert/strict";
import {
  MAX_LOG_ITEMS,
  MAX_LOG_STRING_CHARS,
  toJson,
  truncateText,
} from "./log_values.ts";

Deno.test("truncateText() keeps short text and cuts long text with a count of what it left out", () => {
  assert.equal(truncateText("abc", 3), "abc");
  assert.equal(truncateText("abcdef", 4), "abcd...(+2 chars)");
  assert.equal(truncateText("", 0), "");
  // A surrogate pair is not split: the cut moves one code unit back.
  assert.equal(truncateText("ab\u{1F600}cd", 3), "ab...(+4 chars)");
  assert.equal(truncateText("ab\u{1F600}cd", 4), "ab\u{1F600}...(+2 chars)");
});

/** A fresh copy state with room to spare. */
function copy(stacks = false) {
  return { ancestors: [], left: 100_000, stacks };
}

Deno.test("toJson() makes values JSON-safe: BigInt, non-finite numbers, functions, Maps, Sets and toJSON()", () => {
  assert.equal(toJson(12n, copy()), "12");
  assert.equal(toJson(NaN, copy()), "NaN");
  assert.equal(toJson(-Infinity, copy()), "-Infinity");
  assert.equal(toJson(() => {}, copy()), undefined);
  assert.equal(toJson(null, copy()), null);
  assert.deepEqual(
    toJson(new Map([["a", 1]]), copy()),
    Object.assign(Object.create(null), { a: 1 }),
  );
  assert.deepEqual(toJson(new Set([1, undefined]), copy()), [1, null]);
  assert.equal(toJson(new Date(0), copy()), "1970-01-01T00:00:00.000Z");
});

Deno.test("toJson() marks cycles and deep nesting, and copies shared references in full", () => {
  const shared = { x: 1 };
  const value: Record<string, unknown> = { a: shared, b: shared };
  value.self = value;
  assert.deepEqual(JSON.parse(JSON.stringify(toJson(value, copy()))), {
    a: { x: 1 },
    b: { x: 1 },
    self: "[Circular]",
  });
  let deep: unknown = "leaf";
  for (let i = 0; i < 20; i++) deep = [deep];
  assert.ok(JSON.stringify(toJson(deep, copy())).includes('"[Truncated]"'));
});

Deno.test("toJson() copies Errors with their cause, and their stack only when asked", () => {
  const error = new Error("outer", { cause: new TypeError("inner") });
  const without = JSON.parse(JSON.stringify(toJson(error, copy())));
  assert.deepEqual(without, {
    name: "Error",
    message: "outer",
    cause: { name: "TypeError", message: "inner" },
  });
  const withStack = JSON.parse(JSON.stringify(toJson(error, copy(true))));
  assert.equal(typeof withStack.stack, "string");
});

Deno.test("toJson() cuts long strings and many items and keys, and stops once its budget is spent", () => {
  assert.equal(
    toJson("x".repeat(MAX_LOG_STRING_CHARS + 3), copy()),
    `${"x".repeat(MAX_LOG_STRING_CHARS)}...(+3 chars)`,
  );
  const items = Array.from({ length: MAX_LOG_ITEMS + 2 }, (_, i) => i);
  const cut = toJson(items, copy()) as unknown[];
  assert.equal(cut.length, MAX_LOG_ITEMS + 1);
  assert.equal(cut.at(-1), "...(+2 items)");
  const keys = Object.fromEntries(items.map((i) => [`k${i}`, i]));
  const object = toJson(keys, copy()) as Record<string, unknown>;
  assert.equal(object["..."], "(+2 keys)");
  assert.equal(
    toJson("anything", { ancestors: [], left: 0, stacks: false }),
    "...(truncated)",
  );
});
