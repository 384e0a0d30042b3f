import assert from "node:assert/strict";
import { isCelError, parse } from "@bufbuild/cel";
import {
  FUNCTION_NAMES,
  RANGE_FUNCTION,
  WhenEnvironment,
} from "./environment.ts";
import { WHEN_COST_LIMIT, WhenBudget, type WhenResult } from "./limits.ts";
import {
  compiled,
  evaluationError,
  EXCEEDED,
  sampleObject,
  value,
} from "../../testing/fakes.ts";

Deno.test("WhenEnvironment.run() runs a program planned in it, within a budget", () => {
  const environment = new WhenEnvironment();
  const program = environment.plan(parse("object.spec.replicas > 2"));
  assert.deepEqual(
    environment.run(program, { spec: { replicas: 3 } }, undefined),
    { ok: true, value: true },
  );
  assert.deepEqual(
    environment.run(program, { spec: {} }, undefined).ok,
    false,
  );
  const budget = new WhenBudget(100);
  environment.run(program, { spec: { replicas: 1 } }, budget);
  assert.ok(budget.remaining < 100 && budget.remaining > 90);
  assert.deepEqual(
    environment.run(program, { spec: { replicas: 3 } }, new WhenBudget(0)),
    { ok: false, error: "the review's budget for conditions is spent" },
  );
});

Deno.test("a WhenEnvironment's costed functions need an evaluation running", () => {
  const environment = new WhenEnvironment();
  const program = environment.plan(parse("size('abc') == 3"));
  const message = (run: () => unknown) => {
    try {
      const result = run();
      return isCelError(result) ? result.message : String(result);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  };
  assert.match(message(() => program({})), /no evaluation is running/);
  assert.deepEqual(environment.run(program, {}, undefined), {
    ok: true,
    value: true,
  });
});

Deno.test("FUNCTION_NAMES holds the standard library's functions and the range function", () => {
  for (const name of ["size", "matches", "startsWith", RANGE_FUNCTION]) {
    assert.ok(FUNCTION_NAMES.has(name), name);
  }
  assert.equal(FUNCTION_NAMES.has("no_such_function"), false);
});

Deno.test("evaluations are independent of each other", () => {
  const when = compiled(
    "object.spec.items.exists(i, i == 2) && object.metadata.name.matches('^a')",
  );
  const a = { spec: { items: [2] }, metadata: { name: "abc" } };
  const b = { spec: { items: [3] }, metadata: { name: "abc" } };
  const c = { spec: { items: [2] }, metadata: { name: "zbc" } };
  for (let round = 0; round < 3; round++) {
    assert.deepEqual(when.evaluate(a), { ok: true, value: true });
    assert.deepEqual(when.evaluate(b), { ok: true, value: false });
    assert.deepEqual(when.evaluate(c), { ok: true, value: false });
  }
  // A budget spent by one evaluation is not carried into the next.
  const greedy = compiled("object.l.exists(x, x in object.l && x < 0)");
  const large = { l: Array.from({ length: 5000 }, (_, i) => i) };
  assert.ok(!greedy.evaluate(large).ok);
  assert.deepEqual(greedy.evaluate({ l: [1, 2] }), { ok: true, value: false });
  assert.deepEqual(when.evaluate(a), { ok: true, value: true });
});

Deno.test("a missing field is an evaluation error", () => {
  const object = sampleObject();
  assert.match(
    evaluationError("object.spec.missing == true", object),
    /missing/,
  );
  assert.match(evaluationError("object.nope.x == 1", object), /nope/);
  assert.match(
    evaluationError("object.metadata.labels['absent'] == 'x'", object),
    /absent/,
  );
  assert.match(evaluationError("object.spec.items[7] == 1", object), /7/);
  // Short-circuits absorb an error, as CEL says.
  assert.equal(value("true || object.spec.missing", object), true);
  assert.equal(value("object.spec.missing || true", object), true);
});

Deno.test("a result that is not a bool is an evaluation error", () => {
  const object = sampleObject();
  assert.equal(
    evaluationError("object.spec.replicas", object),
    "the condition evaluated to int, not bool",
  );
  assert.equal(
    evaluationError("object.metadata.name", object),
    "the condition evaluated to string, not bool",
  );
  assert.equal(
    evaluationError("object.spec.owner", object),
    "the condition evaluated to null_type, not bool",
  );
  assert.match(evaluationError("object.spec", object), /map/);
});

Deno.test("a type error is an evaluation error", () => {
  const object = sampleObject();
  assert.match(
    evaluationError("object.metadata.name > 1", object),
    /no matching overload/,
  );
  assert.match(
    evaluationError("object.spec.ratio + 1 == 1.5", object),
    /no matching overload/,
  );
  assert.match(
    evaluationError("object.spec.replicas.exists(x, true)", object),
    /int/,
  );
  assert.match(
    evaluationError("object.spec.replicas / 0 == 1", object),
    /zero/,
  );
  assert.match(
    evaluationError("9223372036854775807 + object.spec.replicas > 0", object),
    /overflow/,
  );
});

Deno.test("a quadratic `when` is cut off by the budget", () => {
  const labels = Object.fromEntries(
    Array.from({ length: 20_000 }, (_, i) => [`k${i}`, `v${i}`]),
  );
  const object = {
    numbers: Array.from({ length: 20_000 }, (_, i) => i),
    records: Array.from({ length: 20_000 }, (_, i) => ({ id: i })),
    labels,
    others: { ...labels, k19999: "other" },
  };
  for (
    const source of [
      "object.numbers.exists(x, x in object.numbers && x < 0)",
      "object.records.exists(r, r in object.records && r.id < 0)",
      "object.numbers.all(x, !(x in object.records))",
      "object.numbers.exists(x, object.labels == object.others)",
    ]
  ) {
    const result = compiled(source).evaluate(object);
    assert.ok(!result.ok, source);
    assert.match(result.error, EXCEEDED, source);
  }
});

Deno.test("string functions are charged by the characters they read", () => {
  // Over a literal, in a loop over an object's list: no read of the object
  // pays for the work, the functions do.
  const numbers = { numbers: Array.from({ length: 100_000 }, (_, i) => i) };
  const literal = `'${"a".repeat(480)}'`;
  for (
    const source of [
      `object.numbers.all(x, size(${literal}) > 0)`,
      `object.numbers.all(x, ${literal}.contains('ab') || true)`,
      `object.numbers.all(x, ${literal} + ${literal} != '')`,
      `object.numbers.all(x, bytes(${literal}) != b'')`,
    ]
  ) {
    const result = compiled(source).evaluate(numbers);
    assert.ok(!result.ok, source);
    assert.match(result.error, EXCEEDED, source);
  }
  // A function over one string of 2 MiB is over an evaluation's budget
  // before it runs, whatever it is.
  const object = { s: "a".repeat(1 << 21), digits: "9".repeat(1 << 18) };
  for (
    const source of [
      "size(object.s) > 0",
      "object.s.contains('ab') || true",
      "object.s < object.s + 'b' || true",
      "string(bytes(object.s)) != ''",
      "double(object.s) > 0.0 || true",
      "timestamp(object.s) > timestamp(0) || true",
      "int(object.digits) > 0 || true",
      "uint(object.digits) > 0u || true",
    ]
  ) {
    const result = compiled(source).evaluate(object);
    assert.ok(!result.ok, source);
    assert.match(result.error, EXCEEDED, source);
  }
  // Results are those of the standard functions.
  const small = { s: "a\u{1F600}b\uD800", n: "42", t: "x".repeat(100) };
  assert.equal(value("size(object.s) == 4", small), true);
  assert.equal(value("object.s.size() == 4", small), true);
  assert.equal(value("size(bytes(object.s)) == 9", small), true);
  assert.equal(value("object.s.contains('\u{1F600}')", small), true);
  assert.equal(
    value("object.s.startsWith('a') && object.s.endsWith('\uD800')", small),
    true,
  );
  assert.equal(
    value("int(object.n) + 1 == 43 && uint(object.n) == 42u", small),
    true,
  );
  assert.equal(
    value("object.t + object.t == object.t + object.t", small),
    true,
  );
  assert.equal(
    value("object.n < object.t && object.n in ['1', '42']", small),
    true,
  );
  assert.match(evaluationError("int(object.t) > 0", small), /BigInt|int/);
  // Within the budget, a `when` over a string of 1 MiB still evaluates.
  assert.equal(
    value("object.s.contains('b')", { s: "a".repeat(1 << 20) }),
    false,
  );
});

Deno.test("a list's elements are charged when `in` compares them", () => {
  const object = { items: Array.from({ length: 100_000 }, () => "v") };
  const when = compiled("'w' in object.items");
  const budget = new WhenBudget(WHEN_COST_LIMIT);
  assert.deepEqual(when.evaluate(object, { budget }), {
    ok: true,
    value: false,
  });
  assert.ok(
    WHEN_COST_LIMIT - budget.remaining >= 4 * 100_000,
    `${WHEN_COST_LIMIT - budget.remaining} units`,
  );
});

Deno.test("the budget leaves room for a `when` over a large object", () => {
  const object = {
    spec: {
      nodes: Array.from({ length: 10_000 }, (_, i) => ({
        name: `node-${i}`,
        protected: i === 9_999,
        labels: { zone: `z${i % 3}` },
      })),
    },
  };
  assert.equal(
    value(
      "object.spec.nodes.exists(n, n.protected && n.labels.zone == 'z0' && n.name.startsWith('node-'))",
      object,
    ),
    true,
  );
  assert.equal(
    value("object.spec.nodes.all(n, has(n.name))", object),
    true,
  );
});

Deno.test("a shared budget bounds several evaluations together", () => {
  const when = compiled("object.items.all(x, x.id >= 0)");
  const object = {
    items: Array.from({ length: 1_000 }, (_, id) => ({ id })),
  };
  const budget = new WhenBudget(WHEN_COST_LIMIT / 10);
  let evaluated = 0;
  let result: WhenResult = { ok: true, value: true };
  while (result.ok && evaluated < 1_000) {
    result = when.evaluate(object, { budget });
    evaluated++;
  }
  assert.ok(!result.ok);
  assert.equal(result.error, "the review's budget for conditions is spent");
  assert.ok(evaluated > 1, `${evaluated} evaluations fit`);
  assert.ok(budget.remaining <= 0 || budget.remaining < WHEN_COST_LIMIT);
  // Spent, the next evaluation fails at once and spends nothing.
  const left = budget.remaining;
  assert.deepEqual(when.evaluate(object, { budget }), {
    ok: false,
    error: "the review's budget for conditions is spent",
  });
  assert.ok(budget.remaining <= left);
  // A cheap evaluation takes only what it spends.
  const roomy = new WhenBudget(WHEN_COST_LIMIT * 2);
  assert.deepEqual(
    compiled("object.a == 1").evaluate({ a: 1 }, { budget: roomy }),
    {
      ok: true,
      value: true,
    },
  );
  assert.ok(roomy.remaining > WHEN_COST_LIMIT * 2 - 10);
  assert.ok(roomy.remaining < WHEN_COST_LIMIT * 2);
});
