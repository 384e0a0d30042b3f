import assert from "node:assert/strict";
import fc from "fast-check";
import { MAX_WHEN_LENGTH, WhenBudget } from "./limits.ts";
import { compileWhen } from "./when.ts";
import {
  assertMessage,
  compiled,
  compileError,
  EXCEEDED,
  sampleObject,
  value,
} from "../../testing/fakes.ts";
import { WhenEnvironment } from "./environment.ts";

/** Fixed, so that a failure is reproducible; fast-check prints the path to replay. */
const SEED = 20261126;

// ---------------------------------------------------------------------------
// Typical `when`s

Deno.test("seed `when`s evaluate to true and false", () => {
  const object = sampleObject();
  assert.equal(value("object.spec.deletionProtection == true", object), true);
  assert.equal(value("object.spec.deletionProtection", object), true);
  assert.equal(
    value(
      "has(object.spec.backup) && object.spec.backup.deletionProtection",
      object,
    ),
    false,
  );
  assert.equal(
    value("object.metadata.labels.tier == 'gold'", object),
    true,
  );
  assert.equal(
    value("object.metadata.labels['app.kubernetes.io/name'] == 'x'", object),
    false,
  );
  assert.equal(
    value("object.metadata.name.startsWith('prod-')", object),
    true,
  );
  assert.equal(
    value("object.spec.volumes.exists(v, v.name == 'data')", object),
    true,
  );
  assert.equal(value("object.spec.volumes.all(v, v.size > 5)", object), false);
  assert.equal(
    value("object.spec.items.exists_one(i, i >= 3)", object),
    true,
  );
  assert.equal(
    value("object.metadata.labels.exists(k, k == 'tier')", object),
    true,
  );
  assert.equal(value("'tier' in object.metadata.labels", object), true);
  assert.equal(value("2 in object.spec.items", object), true);
  assert.equal(value("size(object.spec.items) == 3", object), true);
  assert.equal(value("object.spec.items == [1, 2, 3]", object), true);
  assert.equal(
    value(
      "object.spec.backup == {'deletionProtection': false, 'schedule': '@daily'}",
      object,
    ),
    true,
  );
  assert.equal(value("type(object.spec) == map", object), true);
  assert.equal(
    value("object.metadata.name.matches('^prod-[a-z]+$')", object),
    true,
  );
});

// ---------------------------------------------------------------------------
// Compile errors

Deno.test("whens compiled in one environment each evaluate their own expression, with their own budgets", () => {
  const environment = new WhenEnvironment();
  const a = compileWhen("object.metadata.name.startsWith('a')", {
    environment,
  });
  const b = compileWhen("size(object.metadata.name) > 3", { environment });
  assert.ok(a.ok && b.ok);
  const object = { metadata: { name: "abc" } };
  assert.deepEqual(a.when.evaluate(object), { ok: true, value: true });
  assert.deepEqual(b.when.evaluate(object), { ok: true, value: false });
  const measured = new WhenBudget(1_000);
  a.when.evaluate(object, { budget: measured });
  // Exactly what one evaluation of the first spends.
  const budget = new WhenBudget(1_000 - measured.remaining);
  assert.equal(a.when.evaluate(object, { budget }).ok, true);
  assert.equal(budget.remaining, 0);
  // The first spent the shared budget; the second, in the same
  // environment, is refused, and the first's evaluation is not charged.
  assert.deepEqual(b.when.evaluate(object, { budget }), {
    ok: false,
    error: "the review's budget for conditions is spent",
  });
});

Deno.test("a syntax error is a compile error with its position", () => {
  assert.match(compileError("object.spec =="), /^syntax error at 1:\d+: /);
  assert.match(compileError("object.spec.x = 1"), /syntax error/);
  assert.match(compileError(""), /syntax error/);
  assert.match(compileError("'unterminated"), /syntax error/);
  assert.match(compileError("object..x"), /syntax error/);
});

Deno.test("a `when` longer than MAX_WHEN_LENGTH is rejected", () => {
  const sized = (length: number) => {
    const source = `object.name == '${"x".repeat(length - 17)}'`;
    assert.equal(source.length, length);
    return source;
  };
  compiled(sized(MAX_WHEN_LENGTH));
  assert.match(
    compileError(sized(MAX_WHEN_LENGTH + 1)),
    /1025 characters long, longer than the 1024 allowed/,
  );
  assert.match(
    compileError("true || ".repeat(1000) + "true"),
    /longer than the 1024 allowed/,
  );
});

Deno.test("compileWhen never throws, and its errors are one bounded line", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ maxLength: 200 }),
        fc.string({ unit: "grapheme", maxLength: 50 }),
        fc.array(
          fc.constantFrom(
            "object",
            ".spec",
            "[0]",
            "['a']",
            " == ",
            " && ",
            " || ",
            "!",
            "(",
            ")",
            "1",
            "'s'",
            ".exists(x, ",
            ".map(x, ",
            "x",
            "has(",
            "size(",
            ".matches('a+')",
            "\n",
          ),
          { maxLength: 30 },
        ).map((parts) => parts.join("")),
      ),
      (source) => {
        const result = compileWhen(source);
        if (!result.ok) assertMessage(result.error);
      },
    ),
    { seed: SEED, numRuns: 1000 },
  );
});

// ---------------------------------------------------------------------------
// The ranges of comprehensions, budgeted by the compiler

Deno.test("a heavy predicate is charged per iteration", () => {
  const object = { numbers: Array.from({ length: 100_000 }, (_, i) => i) };
  for (
    const source of [
      `object.numbers.all(x, ${"1 + ".repeat(200)}1 > 0)`,
      `object.numbers.all(x, ${"x + ".repeat(200)}x > 0)`,
      `object.numbers.all(x, ${"x == 1 || ".repeat(80)}true)`,
    ]
  ) {
    const result = compiled(source).evaluate(object);
    assert.ok(!result.ok, source);
    assert.match(result.error, EXCEEDED);
  }
});

// ---------------------------------------------------------------------------
// Properties

const EXPRESSIONS = [
  "object.spec.deletionProtection == true",
  "has(object.spec.backup) && object.spec.backup.deletionProtection",
  "object.spec.replicas > 2",
  "object.a.exists(x, x == 1)",
  "object.a.all(x, x.b == 'c')",
  "object.a == object.b",
  "'a' in object",
  "1 in object.a",
  "size(object.a) > 0",
  "object.a.matches('^a*$')",
  "object.a.startsWith('x') || object.b.endsWith('y')",
  "object['__proto__'].a == null",
  "type(object.a) == map",
  "object.a[0] == object.a[1]",
  "object.a + object.b == object.c",
  "int(object.a) > 0",
  "object",
  "object.a",
].map(compiled);

/** JSON objects that often have the keys the expressions read. */
const jsonObject = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false, 0, 1, -1, 2 ** 53, 0.5, "", "a", "x"),
    fc.jsonValue({ maxDepth: 2 }),
    fc.array(tie("value"), { maxLength: 4 }),
    tie("object"),
  ),
  object: fc.dictionary(
    fc.constantFrom(
      "a",
      "b",
      "c",
      "spec",
      "backup",
      "deletionProtection",
      "replicas",
      "__proto__",
      "constructor",
      "$typeName",
    ),
    tie("value"),
    { maxKeys: 5 },
  ),
})).object;

Deno.test("evaluate never throws, for any JSON object", () => {
  fc.assert(
    fc.property(
      fc.oneof(jsonObject, fc.jsonValue()),
      (object) => {
        const decoded = JSON.parse(JSON.stringify(object) ?? "null");
        for (const when of EXPRESSIONS) {
          const result = when.evaluate(decoded);
          if (result.ok) assert.equal(typeof result.value, "boolean");
          else assertMessage(result.error);
        }
      },
    ),
    { seed: SEED, numRuns: 500 },
  );
});

Deno.test("evaluate never throws, for any value at all", () => {
  fc.assert(
    fc.property(fc.anything({ withMap: true, withSet: true }), (object) => {
      for (const when of EXPRESSIONS) {
        const result = when.evaluate(object);
        if (!result.ok) assertMessage(result.error);
      }
    }),
    { seed: SEED, numRuns: 200 },
  );
});
