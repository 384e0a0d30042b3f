/**
 * A rule's optional `when`: a CEL expression over one Kubernetes
 * object, bound to the variable `object` (the decoded JSON of the object),
 * such as `object.spec.deletionProtection == true` or
 * `has(object.spec.backup) && object.spec.backup.deletionProtection`.
 *
 * ## Library
 *
 * Parsing and evaluation are `@bufbuild/cel` (Buf's CEL for ECMAScript,
 * Apache-2.0), chosen over `@marcbachmann/cel-js`:
 *
 * - it is tested against the CEL conformance suite;
 * - its `matches()` runs `@bufbuild/re2`, an RE2 port (a DFA with an NFA
 *   fallback: linear in the text, no backtracking), where
 *   `@marcbachmann/cel-js` runs patterns through JavaScript's backtracking
 *   `RegExp` (ReDoS on a tenant's strings);
 * - its maps and lists are interfaces (`celMap` over any `ReadonlyMap`,
 *   `celList` over any array), so this module hands it lazy, read-only views
 *   of the object that count every access, which is what the budget below
 *   is made of. `@marcbachmann/cel-js` reads plain objects and arrays
 *   directly.
 *
 * Neither library has a cost limit. `@bufbuild/cel` 0.6 has no type checker
 * to speak of (it types constants and identifiers only), where
 * `@marcbachmann/cel-js` has one; this module checks what it needs on the
 * parsed AST itself: declared variables and functions, allowed macros, a
 * result that can be a bool.
 *
 * ## Values
 *
 * A JSON object is a CEL `map` with string keys, an array a `list`, a string
 * a `string`, a boolean a `bool`, `null` is `null`. A number that is a safe
 * integer is an `int`, so `object.spec.replicas > 2` and
 * `object.spec.replicas + 1 == 4` work; any other number is a `double`. Only
 * own keys of an object are visible: `object.constructor` or
 * `object["__proto__"]` is a key of the object itself, or not there. A
 * field whose value is `null` is as good as absent to `has()` and to `in`
 * (`@bufbuild/cel`'s maps test presence by `get(key) != undefined`), while
 * `object.spec.field == null` is true for it. The
 * object is never written to, and nothing of an evaluation (views, compiled
 * patterns, budget) outlives it.
 *
 * ## Bounds
 *
 * A `when` is written by a rule author and evaluated over a tenant's
 * object (up to a few MiB of JSON), so both are bounded. At compile time:
 *
 * - the source is at most {@linkcode MAX_WHEN_LENGTH} characters and its
 *   parsed AST (macros expanded) at most {@linkcode MAX_WHEN_NODES}
 *   nodes;
 * - the only comprehension macros are the boolean ones, `all`, `exists` and
 *   `exists_one`: `map` and `filter` build lists, and a chain of
 *   `.map(x, x + x)` doubles a list or a string at every step;
 * - no macro inside the predicate of another: the iterations are at most the
 *   sum of the lengths of the lists ranged over, never a product;
 * - `matches()` takes a string literal pattern only, which must compile to an
 *   RE2 program of at most {@linkcode MAX_REGEX_PROGRAM_SIZE} instructions;
 * - no protobuf message construction (`google.protobuf.Value{}`), and no
 *   extension library (the standard functions only).
 *
 * At run time, every evaluation has a budget of
 * {@linkcode WHEN_COST_LIMIT} units, and is stopped with an error once
 * it is spent:
 *
 * - each field or index looked up in the object, and each element or key
 *   iterated over, costs 1, and listing the keys of a map 1 per key: list
 *   and map equality, `in`, `size()` and comprehensions all go through
 *   these;
 * - each string read from the object costs 1 more per 64 characters;
 * - before its first iteration, a comprehension costs, per element of its
 *   range, the node count of its predicate (the work that does not touch the
 *   object), plus, for a string element, 1 per 64 characters for every use
 *   of the iteration variable in the predicate;
 * - each call of a standard function over strings or bytes (`size()`,
 *   `contains()`, `+`, `==`, `<`, `int()`, `bytes()`...) costs 1 per
 *   `CHARS_PER_UNIT` (`./costs.ts`) characters or bytes it reads and produces,
 *   whatever the string (read from the object, a literal, built), charged
 *   before it runs; `int()` and `uint()` of a string more, `x in list` per
 *   element (`./costs.ts` has the details);
 * - each `matches()` costs {@linkcode regexCost} of its text and program.
 *
 * Measured construct by construct (`bench/when_cost.ts`), a unit costs at
 * most some 40 ns of CPU on a development machine (2 cores; up to 55 ns
 * while other work shares them; iterating over a list or a map is the
 * costliest, functions over strings some 5 to 35 ns), so an evaluation that
 * spends the whole budget takes at most some 30 ms of CPU there, and a
 * review's budget (twice that, shared through a {@linkcode WhenBudget}) at
 * most some 60 ms; a `when` such as
 * `object.spec.deletionProtection == true` spends a few units. One function
 * over a string of more than some 2 million characters is over an
 * evaluation's budget before it runs.
 *
 * Neither {@linkcode compileWhen} nor `evaluate` throws: a failure is a
 * result with a readable, single-line message of at most
 * {@linkcode MAX_WHEN_ERROR_LENGTH} characters. A `when` whose
 * evaluation fails is for the caller to treat as protecting (fail closed).
 *
 * ## Modules
 *
 * This module compiles; the rest of the package, lowest first:
 *
 * - `./limits.ts`: the limits, the budget, the result types (imports none of
 *   the package);
 * - `./messages.ts`: one-line, bounded messages;
 * - `./costs.ts`: what the standard functions cost;
 * - `./evaluation.ts`: one evaluation's budget and its views of the object;
 * - `./environment.ts`: the CEL environment, and running a planned `when`;
 * - `./ast.ts`: walks over the parsed AST;
 * - `./check.ts`: the checks of a parsed `when`.
 *
 * @example Usage
 * ```ts
 * import { compileWhen } from "./when.ts";
 *
 * const compiled = compileWhen("object.spec.replicas > 2");
 * if (compiled.ok) {
 *   compiled.when.evaluate({ spec: { replicas: 3 } }); // { ok: true, value: true }
 *   compiled.when.evaluate({ spec: {} }); // { ok: false, error: "..." }
 * }
 * ```
 *
 * @module
 */
import { parse } from "@bufbuild/cel";
import { children, countNodes, countUses, type Expr } from "./ast.ts";
import { Checker, nonBool } from "./check.ts";
import { RANGE_FUNCTION, WhenEnvironment } from "./environment.ts";
import {
  type CompiledWhen,
  MAX_WHEN_LENGTH,
  type WhenCompile,
} from "./limits.ts";
import { describe, failure, oneLine } from "./messages.ts";

/**
 * Compiles a `when`: parses it and checks it against the bounds of
 * this module (length, AST size, variables, functions, macros, regular
 * expressions, a result that can be a bool). Never throws.
 *
 * @example Usage
 * ```ts
 * import { compileWhen } from "./when.ts";
 *
 * compileWhen("object.spec.deletionProtection == true").ok; // true
 * compileWhen("spec.deletionProtection"); // { ok: false, error: "undeclared reference to 'spec' at 1:1 ..." }
 * ```
 *
 * @param source The CEL expression.
 * @param options Where it is planned and run.
 * @returns The compiled `when`, or the error.
 */
export function compileWhen(
  source: string,
  options: CompileWhenOptions = {},
): WhenCompile {
  try {
    return compile(source, options.environment ?? new WhenEnvironment());
  } catch (error) {
    return { ok: false, error: oneLine(describe(error)) };
  }
}

/** Options of {@linkcode compileWhen}. */
export interface CompileWhenOptions {
  /**
   * The environment the `when` is planned and run in: its owner's (the
   * webhook's rule registry keeps one for all its rules; an environment
   * weighs about 30 KB, a `when` planned in a shared one about 5 KB).
   * @default {a new one, for this `when` alone}
   */
  environment?: WhenEnvironment;
}

/** {@linkcode compileWhen}, which may throw. */
function compile(source: string, environment: WhenEnvironment): WhenCompile {
  if (source.length > MAX_WHEN_LENGTH) {
    return failure(
      `the condition is ${source.length} characters long, longer than the ${MAX_WHEN_LENGTH} allowed`,
    );
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    if (error instanceof RangeError) {
      return failure("the condition nests too deeply to be parsed");
    }
    return failure(
      describe(error).replace(
        /^<input>:(\d+):(\d+): /,
        "syntax error at $1:$2: ",
      ),
    );
  }
  const checker = new Checker(source, parsed.sourceInfo);
  checker.check(parsed.expr, new Set(), false);
  if (checker.problem !== undefined) return failure(checker.problem);
  const notBool = nonBool(parsed.expr);
  if (notBool !== undefined) {
    return failure(
      `the condition must evaluate to a bool, but it is ${notBool}`,
    );
  }
  budgetRanges(parsed.expr, { next: checker.maxId + 1n });
  const program = environment.plan(parsed);
  const when: CompiledWhen = {
    source,
    evaluate: (object, options) =>
      environment.run(program, object, options?.budget),
  };
  return { ok: true, when: Object.freeze(when) };
}

/**
 * Wraps the range of every comprehension in `expr` in a call of
 * {@linkcode RANGE_FUNCTION} with the node count of its loop condition and
 * step (the predicate, 1 more for the step itself) and the number of uses of
 * its iteration variable there. New nodes take ids from `ids`.
 */
function budgetRanges(expr: Expr, ids: { next: bigint }): void {
  for (const child of children(expr)) budgetRanges(child, ids);
  const kind = expr.exprKind;
  if (kind.case !== "comprehensionExpr") return;
  const { iterRange, loopCondition, loopStep, iterVar } = kind.value;
  if (iterRange === undefined) return;
  const nodes = 1 + countNodes(loopCondition) + countNodes(loopStep);
  const uses = countUses(loopCondition, iterVar) +
    countUses(loopStep, iterVar);
  const int = (value: number): Expr => ({
    $typeName: "cel.expr.Expr",
    id: ids.next++,
    exprKind: {
      case: "constExpr",
      value: {
        $typeName: "cel.expr.Constant",
        constantKind: { case: "int64Value", value: BigInt(value) },
      },
    },
  });
  kind.value.iterRange = {
    $typeName: "cel.expr.Expr",
    id: ids.next++,
    exprKind: {
      case: "callExpr",
      value: {
        $typeName: "cel.expr.Expr.Call",
        function: RANGE_FUNCTION,
        args: [iterRange, int(nodes), int(uses)],
      },
    },
  };
}
