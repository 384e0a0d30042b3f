import assert from "node:assert/strict";
import {
  MAX_REGEX_PROGRAM_SIZE,
  regexCost,
  WHEN_COST_LIMIT,
  WhenBudget,
} from "./limits.ts";

Deno.test("a WhenBudget starts with its units", () => {
  const budget = new WhenBudget(2 * WHEN_COST_LIMIT);
  assert.equal(budget.remaining, 1_000_000);
  budget.remaining -= 10;
  assert.equal(budget.remaining, 999_990);
});

Deno.test("regexCost grows with the text and the program", () => {
  assert.ok(regexCost(0, 10) >= 1);
  assert.ok(regexCost(1000, 10) < regexCost(2000, 10));
  assert.ok(regexCost(1000, 10) < regexCost(1000, 100));
  // A name against a typical pattern is cheap; a large text against the
  // largest program is over the whole budget.
  assert.ok(regexCost(253, 20) < WHEN_COST_LIMIT / 100);
  assert.ok(
    regexCost(1_000_000, MAX_REGEX_PROGRAM_SIZE) > WHEN_COST_LIMIT,
  );
});
