import assert from "node:assert/strict";
import { isCelList, isCelMap } from "@bufbuild/cel";
import { BudgetExceeded, Evaluation } from "./evaluation.ts";
import { WHEN_COST_LIMIT } from "./limits.ts";
import {
  assertMessage,
  compiled,
  evaluate,
  evaluationError,
  EXCEEDED,
  sampleObject,
  value,
} from "../../testing/fakes.ts";

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

Deno.test("an Evaluation charges its budget and stops once it is spent", () => {
  const evaluation = new Evaluation(10);
  evaluation.charge(4);
  assert.equal(evaluation.spent, 4);
  assert.equal(evaluation.exceeded, false);
  assert.throws(() => evaluation.charge(7), BudgetExceeded);
  assert.equal(evaluation.exceeded, true);
  assert.equal(evaluation.spent, 10);
  assert.equal(
    new BudgetExceeded(false).message,
    `the condition exceeded its budget of ${WHEN_COST_LIMIT} units`,
  );
  assert.equal(
    new BudgetExceeded(true).message,
    "the review's budget for conditions is spent",
  );
});

Deno.test("an Evaluation's views are lazy, shared and charged per read", () => {
  const evaluation = new Evaluation(1_000);
  const object = { spec: { items: [1, 2.5] }, name: "x".repeat(128) };
  const view = evaluation.toCel(object);
  assert.equal(evaluation.spent, 0);
  assert.equal(evaluation.toCel(object), view);
  assert.ok(isCelMap(view));
  // A lookup is 1, a string read 1 more per 64 characters.
  assert.equal(view.get("name"), object.name);
  assert.equal(evaluation.spent, 3);
  assert.equal(view.get("absent"), undefined);
  assert.equal(evaluation.spent, 4);
  const spec = view.get("spec");
  assert.ok(isCelMap(spec));
  const items = spec.get("items");
  assert.ok(isCelList(items));
  assert.equal(evaluation.spent, 6);
  // Safe integers are ints, other numbers doubles.
  assert.deepEqual([...items], [1n, 2.5]);
  assert.equal(evaluation.spent, 8);
  // Listing keys is 1 per key, iterating 1 per step.
  assert.deepEqual([...view.keys()], ["spec", "name"]);
  assert.equal(evaluation.spent, 12);
  assert.throws(() => evaluation.toCel(new Date(0)), TypeError);
});

Deno.test("an Evaluation compiles a pattern once and charges every test", () => {
  const evaluation = new Evaluation(1_000);
  const regex = evaluation.regex("^a+$");
  const compiled = evaluation.spent;
  assert.equal(compiled, 4);
  assert.equal(regex.test("aaa"), true);
  const tested = evaluation.spent;
  assert.ok(tested > compiled);
  evaluation.regex("^a+$").test("aaa");
  assert.equal(evaluation.spent - tested, tested - compiled);
});

Deno.test("JSON integers compare with CEL int literals", () => {
  const object = sampleObject();
  assert.equal(value("object.spec.replicas > 2", object), true);
  assert.equal(value("object.spec.replicas == 3", object), true);
  assert.equal(value("object.spec.replicas + 1 == 4", object), true);
  assert.equal(value("object.spec.replicas % 2 == 1", object), true);
  assert.equal(value("object.spec.offset < 0", object), true);
  assert.equal(value("object.spec.items[0] == 1", object), true);
  assert.equal(value("type(object.spec.replicas) == int", object), true);
  // Other numbers are doubles.
  assert.equal(value("object.spec.ratio < 1", object), true);
  assert.equal(value("object.spec.ratio == 0.5", object), true);
  assert.equal(value("type(object.spec.ratio) == double", object), true);
  assert.equal(value("object.spec.big > 1000000", object), true);
  assert.equal(value("type(object.spec.big) == double", object), true);
  // A JSON 3.0 is the number 3, an int.
  assert.equal(value("object.n == 3", JSON.parse('{"n": 3.0}')), true);
});

Deno.test("strings, bools and null keep their types", () => {
  const object = sampleObject();
  assert.equal(value("object.spec.owner == null", object), true);
  assert.equal(value("type(object.kind) == string", object), true);
  assert.equal(value("object.spec.deletionProtection == true", object), true);
  assert.equal(value("!object.spec.backup.deletionProtection", object), true);
  // The whole object may be any JSON value.
  assert.equal(value("object == 'x'", "x"), true);
  assert.equal(value("object == null", null), true);
  assert.equal(value("object[1] == true", [false, true]), true);
});

Deno.test("has() tells a present field from an absent one", () => {
  const object = sampleObject();
  assert.equal(value("has(object.spec.backup)", object), true);
  assert.equal(value("has(object.spec.restore)", object), false);
  // A null field is as good as absent to has() and in (the library tests
  // presence by get(key) != undefined), though it equals null.
  assert.equal(value("has(object.spec.owner)", object), false);
  assert.equal(value("'owner' in object.spec", object), false);
  assert.equal(value("object.spec.owner == null", object), true);
  assert.equal(
    value(
      "!has(object.spec.restore) || object.spec.restore.deletionProtection",
      object,
    ),
    true,
  );
});

Deno.test("prototype keys reach only the object's own keys", () => {
  const object = JSON.parse(
    '{"__proto__": {"polluted": true}, "constructor": "c", "$typeName": "google.protobuf.Any", "spec": {}}',
  );
  assert.equal(value("object['__proto__'].polluted", object), true);
  assert.equal(value("object.constructor == 'c'", object), true);
  assert.equal(
    value("object['$typeName'] == 'google.protobuf.Any'", object),
    true,
  );
  assert.equal(value("has(object.spec.constructor)", object), false);
  assert.equal(value("has(object.spec.toString)", object), false);
  assert.equal(value("has(object.spec.hasOwnProperty)", object), false);
  assert.equal(value("'constructor' in object.spec", object), false);
  assert.equal(value("'__proto__' in object.spec", object), false);
  assert.equal(value("size(object.spec) == 0", object), true);
  evaluationError("object.spec.__proto__ == null", object);
  evaluationError("object.spec.constructor == null", object);
  evaluationError("object.spec['toString'] == null", object);
  // Nothing inherited was polluted.
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("the object is read, never written", () => {
  const object = sampleObject();
  const before = structuredClone(object);
  for (
    const source of [
      "object.spec.volumes.exists(v, v.name == 'data')",
      "object.spec == object.spec",
      "'x' in object.metadata.labels",
      "object.metadata.labels.all(k, k != '')",
    ]
  ) {
    assert.ok(evaluate(source, object).ok);
  }
  assert.deepEqual(object, before);
  // A deeply frozen object evaluates as well.
  const frozen = deepFreeze(sampleObject());
  assert.equal(
    value("object.spec.volumes.exists(v, v.size == 2)", frozen),
    true,
  );
});

Deno.test("an object that is not JSON is an evaluation error", () => {
  const when = compiled("object.spec.x == 1");
  for (
    const object of [
      undefined,
      new Map([["spec", 1]]),
      { spec: new Date(0) },
      { spec: () => 1 },
      { spec: Symbol("x") },
    ]
  ) {
    const result = when.evaluate(object);
    assert.ok(!result.ok);
    assertMessage(result.error);
  }
});

Deno.test("large strings are charged by their length", () => {
  const object = {
    text: "ab".repeat(750_000),
    numbers: Array.from({ length: 10_000 }, (_, i) => i),
    strings: Array.from({ length: 300 }, (_, i) => "x".repeat(10_000) + i),
  };
  for (
    const source of [
      "object.numbers.all(x, !object.text.contains('zz'))",
      `object.strings.exists(s, (${"s + ".repeat(100)}s).contains('z'))`,
      "object.text.matches('(a|b)*a(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)(a|b)$')",
    ]
  ) {
    const result = compiled(source).evaluate(object);
    assert.ok(!result.ok, source);
    assert.match(result.error, EXCEEDED);
  }
  // Reading each once is within the budget.
  assert.equal(value("object.text.contains('zz')", object), false);
  assert.equal(
    value("object.strings.exists(s, s.endsWith('299'))", object),
    true,
  );
});
