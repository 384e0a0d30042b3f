import assert from "node:assert/strict";
import {
  MAX_WHEN_ERROR_LENGTH,
  WHEN_COST_LIMIT,
  WhenBudget,
} from "./limits.ts";
import { describe, failure, oneLine } from "./messages.ts";
import { assertMessage, compiled } from "../../testing/fakes.ts";

Deno.test("oneLine() makes a message one bounded line", () => {
  assert.equal(oneLine("a\n  b\tc"), "a b c");
  assert.equal(oneLine("  "), "unknown error");
  assert.equal(oneLine("a\u0000b"), "a?b");
  const long = oneLine("x".repeat(MAX_WHEN_ERROR_LENGTH + 1));
  assert.equal(long.length, MAX_WHEN_ERROR_LENGTH);
  assert.ok(long.endsWith("..."));
  assert.equal(
    oneLine("x".repeat(MAX_WHEN_ERROR_LENGTH)),
    "x".repeat(MAX_WHEN_ERROR_LENGTH),
  );
});

Deno.test("failure() and describe() put any thrown value in a result", () => {
  assert.deepEqual(failure("no\nsuch key"), {
    ok: false,
    error: "no such key",
  });
  assert.equal(describe(new Error("boom")), "boom");
  assert.equal(describe(new TypeError()), "TypeError");
  assert.equal(describe("text"), "text");
  assert.equal(describe(undefined), "undefined");
});

Deno.test("an error quoting a long string of the object is cut, not read", () => {
  const object = { m: {}, s: "a".repeat(1 << 20) };
  const budget = new WhenBudget(2 * WHEN_COST_LIMIT);
  const when = compiled("object.m[object.s] == 1");
  const errors = new Set<string>();
  const start = performance.now();
  while (budget.remaining > 0) {
    const result = when.evaluate(object, { budget });
    assert.ok(!result.ok);
    assertMessage(result.error);
    errors.add(result.error);
  }
  // Generous: some 20 to 40 ms on a development machine, seconds if each
  // message of a MiB were read through.
  assert.ok(performance.now() - start < 2_000);
  assert.ok([...errors].some((error) => error.endsWith("...")));
});
