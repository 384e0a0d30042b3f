import assert from "node:assert/strict";
import { IndexBudget } from "./index_budget.ts";

Deno.test("IndexBudget counts what its indexes keep against both limits", () => {
  const budget = new IndexBudget({ maxDependents: 3, maxReferences: 4 });
  assert.equal(budget.fits(3, 4), true);
  budget.count(2, 3);
  assert.deepEqual([budget.dependents, budget.references], [2, 3]);
  assert.equal(budget.fits(1, 1), true);
  assert.equal(budget.fits(2, 0), false);
  assert.equal(budget.fits(0, 2), false);
  // Fewer always fits while within the limits.
  assert.equal(budget.fits(-1, -1), true);
  budget.count(-2, -3);
  assert.deepEqual([budget.dependents, budget.references], [0, 0]);
  assert.equal(new IndexBudget({ maxDependents: 1 }).maxReferences, Infinity);
});

Deno.test("IndexBudget refuses a negative limit and more given back than counted", () => {
  assert.throws(() => new IndexBudget({ maxDependents: -1 }), RangeError);
  assert.throws(
    () => new IndexBudget({ maxDependents: 1, maxReferences: NaN }),
    RangeError,
  );
  const budget = new IndexBudget({ maxDependents: 5 });
  budget.count(1, 1);
  assert.throws(() => budget.count(-2, 0), /gave back more than it kept/);
  assert.deepEqual([budget.dependents, budget.references], [1, 1]);
});
