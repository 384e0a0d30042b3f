import assert from "node:assert/strict";
import { parse } from "@bufbuild/cel";
import { Checker, nonBool } from "./check.ts";
import {
  MAX_REGEX_PROGRAM_SIZE,
  MAX_WHEN_LENGTH,
  MAX_WHEN_NODES,
} from "./limits.ts";
import { compileWhen } from "./when.ts";
import { assertMessage, compiled, compileError } from "../../testing/fakes.ts";

/** The checker's verdict on `source`, in a scope of `variables`. */
function check(source: string, variables: string[] = []): Checker {
  const parsed = parse(source);
  const checker = new Checker(source, parsed.sourceInfo);
  checker.check(parsed.expr, new Set(variables), false);
  return checker;
}

Deno.test("Checker records the first problem, with its position", () => {
  assert.equal(check("object.a == 1").problem, undefined);
  assert.equal(
    check("a == b").problem,
    "undeclared reference to 'a' (the only variable is 'object') at 1:1",
  );
  assert.equal(check("x == 1", ["x"]).problem, undefined);
  assert.match(check("object.a == 1 &&\n  nope(1)").problem!, / at 2:3$/);
  // It records the largest node id, above which new nodes may be added.
  assert.ok(check("object.a == 1").maxId >= 3n);
});

Deno.test("nonBool() names a root that can never be a bool", () => {
  const cases: [string, string | undefined][] = [
    ["true", undefined],
    ["object.a", undefined],
    ["object.a == 1", undefined],
    ["1 + 2", "an addition"],
    ["b'x'", "a bytes literal"],
    ["1u", "a uint literal"],
    ["type(object)", "a type()"],
    ["true ? 1 : 2", "an int literal"],
    ["true ? object.a : 2", undefined],
  ];
  for (const [source, want] of cases) {
    assert.equal(nonBool(parse(source).expr), want, source);
  }
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
