import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type CompiledWhen,
  compileWhen,
  MAX_REGEX_PROGRAM_SIZE,
  MAX_WHEN_ERROR_LENGTH,
  MAX_WHEN_LENGTH,
  MAX_WHEN_NODES,
  regexCost,
  WHEN_COST_LIMIT,
  WhenBudget,
  type WhenResult,
} from "./when.ts";

/** Fixed, so that a failure is reproducible; fast-check prints the path to replay. */
const SEED = 20261126;

/** A readable, single-line, bounded message. */
function assertMessage(message: string): void {
  assert.ok(message.length > 0, "an empty message");
  assert.ok(
    message.length <= MAX_WHEN_ERROR_LENGTH,
    `a message of ${message.length} characters`,
  );
  assert.doesNotMatch(message, /[\r\n]/);
}

function compiled(source: string): CompiledWhen {
  const result = compileWhen(source);
  assert.ok(result.ok, `${source}: ${result.ok ? "" : result.error}`);
  assert.equal(result.when.source, source);
  return result.when;
}

function compileError(source: string): string {
  const result = compileWhen(source);
  assert.ok(!result.ok, `${source} compiled`);
  assertMessage(result.error);
  return result.error;
}

function evaluate(source: string, object: unknown): WhenResult {
  return compiled(source).evaluate(object);
}

function value(source: string, object: unknown): boolean {
  const result = evaluate(source, object);
  assert.ok(result.ok, `${source}: ${result.ok ? "" : result.error}`);
  return result.value;
}

function evaluationError(source: string, object: unknown): string {
  const result = evaluate(source, object);
  assert.ok(!result.ok, `${source} evaluated to ${JSON.stringify(result)}`);
  assertMessage(result.error);
  return result.error;
}

/** A Kubernetes-like object, as decoded from JSON. */
function sample(): unknown {
  return JSON.parse(JSON.stringify({
    apiVersion: "example.io/v1",
    kind: "Database",
    metadata: {
      name: "prod-orders",
      namespace: "shop",
      labels: { tier: "gold", "app.kubernetes.io/name": "orders" },
    },
    spec: {
      deletionProtection: true,
      replicas: 3,
      ratio: 0.5,
      big: 1e20,
      offset: -2,
      owner: null,
      backup: { deletionProtection: false, schedule: "@daily" },
      items: [1, 2, 3],
      volumes: [{ name: "data", size: 10 }, { name: "logs", size: 2 }],
    },
  }));
}

// ---------------------------------------------------------------------------
// Typical `when`s

Deno.test("seed `when`s evaluate to true and false", () => {
  const object = sample();
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

Deno.test("JSON integers compare with CEL int literals", () => {
  const object = sample();
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
  const object = sample();
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
  const object = sample();
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
  const object = sample();
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
  const frozen = deepFreeze(sample());
  assert.equal(
    value("object.spec.volumes.exists(v, v.size == 2)", frozen),
    true,
  );
});

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

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

// ---------------------------------------------------------------------------
// Compile errors

Deno.test("a syntax error is a compile error with its position", () => {
  assert.match(compileError("object.spec =="), /^syntax error at 1:\d+: /);
  assert.match(compileError("object.spec.x = 1"), /syntax error/);
  assert.match(compileError(""), /syntax error/);
  assert.match(compileError("'unterminated"), /syntax error/);
  assert.match(compileError("object..x"), /syntax error/);
});

Deno.test("only `object` is declared", () => {
  assert.match(
    compileError("spec.deletionProtection"),
    /undeclared reference to 'spec' \(the only variable is 'object'\) at 1:1/,
  );
  assert.match(
    compileError("object.spec.x == self.y"),
    /undeclared reference to 'self' .* at 1:18/,
  );
  assert.match(
    compileError("object.spec.items.exists(i, j > 0)"),
    /undeclared reference to 'j'/,
  );
  assert.match(compileError("constructor == 1"), /undeclared reference/);
  assert.match(compileError("__proto__ == 1"), /undeclared reference/);
  assert.match(compileError("google.protobuf.Value{}"), /message/);
  assert.match(compileError("foo(object)"), /undeclared function 'foo'/);
  assert.match(compileError("object.spec.bar()"), /undeclared function 'bar'/);
  assert.match(compileError("has(object)"), /has\(\) takes a field selection/);
  assert.match(compileError("object.spec.items.exists(i)"), /malformed exists/);
});

Deno.test("an expression that cannot be a bool is a compile error", () => {
  for (
    const [source, what] of [
      ["1 + 1", "an addition"],
      ["object.spec.replicas * 2", "a multiplication"],
      ["'x'", "a string literal"],
      ["42", "an int literal"],
      ["1.5", "a double literal"],
      ["null", "null"],
      ["[true]", "a list"],
      ["{'a': true}", "a map"],
      ["size(object.spec)", "a size()"],
      ["true ? 1 : 'x'", "an int literal"],
    ]
  ) {
    assert.equal(
      compileError(source!),
      `the condition must evaluate to a bool, but it is ${what}`,
    );
  }
  // What may be a bool compiles; its evaluation tells.
  compiled("true ? object.spec.x : 1");
  compiled("object.spec.replicas");
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

Deno.test("a `when` of too many nodes or nesting too deeply is rejected", () => {
  assert.match(
    compileError("1" + "+1".repeat(300) + " == 1"),
    new RegExp(`more than ${MAX_WHEN_NODES} nodes`),
  );
  // Deep nesting within the length limit either compiles or is an error,
  // never a throw.
  for (const [open, close] of [["(", ")"], ["[", "]"], ["{1:", "}"]]) {
    const depth = Math.floor((MAX_WHEN_LENGTH - 6) / (open!.length + 1));
    const result = compileWhen(
      `${open!.repeat(depth)}true${close!.repeat(depth)}`,
    );
    if (!result.ok) assertMessage(result.error);
  }
});

Deno.test("map() and filter() and nested macros are rejected", () => {
  assert.match(
    compileError("object.spec.items.map(i, i * 2) == [2, 4, 6]"),
    /^map\(\) is not supported: the only macros are all\(\), exists\(\) and exists_one\(\) at 1:18$/,
  );
  assert.match(
    compileError("object.spec.items.map(i, i > 1, i) == []"),
    /map\(\) is not supported/,
  );
  assert.match(
    compileError("size(object.spec.items.filter(i, i > 1)) > 0"),
    /filter\(\) is not supported/,
  );
  assert.match(
    compileError(
      "object.spec.volumes.exists(v, object.spec.items.all(i, i > v.size))",
    ),
    /^all\(\) inside the predicate of another macro is not supported/,
  );
  assert.match(
    compileError(
      "[1, 2].exists(a, [1, 2].exists(b, [1, 2].exists(c, a == b)))",
    ),
    /inside the predicate of another macro/,
  );
  // One after another, or one in the range of another, is fine.
  compiled(
    "object.spec.items.exists(i, i > 2) && object.spec.items.all(i, i > 0)",
  );
  compiled("[object.spec.items.exists(i, i > 2)].all(b, b)");
});

Deno.test("matches() takes a literal pattern of a bounded program", () => {
  assert.match(
    compileError("object.metadata.name.matches(object.spec.pattern)"),
    /matches\(\) takes a string literal pattern/,
  );
  assert.match(
    compileError("object.metadata.name.matches('[')"),
    /invalid matches\(\) pattern: .*missing closing \]/,
  );
  assert.match(
    compileError("object.metadata.name.matches('a{1000}')"),
    new RegExp(`more than the ${MAX_REGEX_PROGRAM_SIZE} allowed`),
  );
  // RE2 syntax, not JavaScript's: no backreferences nor lookarounds.
  compileError("object.metadata.name.matches('(a)\\\\1')");
  compileError("object.metadata.name.matches('(?=a)')");
  // A classic ReDoS pattern is linear under RE2.
  // (Under a backtracking engine this evaluation would not end.)
  const when = compiled("object.s.matches('^(a+)+$')");
  assert.deepEqual(
    when.evaluate({ s: "a".repeat(5000) + "!" }),
    { ok: true, value: false },
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
// Evaluation errors

Deno.test("a missing field is an evaluation error", () => {
  const object = sample();
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
  const object = sample();
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
  const object = sample();
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

// ---------------------------------------------------------------------------
// The budget

const EXCEEDED = new RegExp(
  `exceeded its budget of ${WHEN_COST_LIMIT} units`,
);

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
