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

 * Neither {@linkcode compileWhen} nor `evaluate` throws: a failure is a
 * result with a readable, single-line message of at most
 * {@linkcode MAX_WHEN_ERROR_LENGTH} characters. A `when` whose
 * evaluation fails is for the caller to treat as protecting (fail closed).
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
import {
  celEnv,
  celFunc,
  type CelInput,
  type CelList,
  celList,
  type CelMap,
  celMap,
  CelScalar,
  celType,
  type CelUint,
  isCelError,
  isCelList,
  isCelMap,
  parse,
  plan,
} from "@bufbuild/cel";
import { RE2JS } from "@bufbuild/re2";
import { costedFuncs } from "./costs.ts";

/** Longest `when` accepted, in characters. */
export const MAX_WHEN_LENGTH = 1024;

/**
 * Most nodes in a `when`'s parsed AST, after the expansion of macros
 * (`exists` and the like expand to about six nodes besides their arguments).
 */
export const MAX_WHEN_NODES = 512;

/**
 * The budget of one evaluation, in units: a lookup or an iteration step in
 * the object is 1, a string read is 1 more per 64 characters, a
 * comprehension is the node count of its predicate per element, a function
 * over strings 1 per `CHARS_PER_UNIT` (`./costs.ts`) characters it reads and
 * produces, a `matches()` is {@linkcode regexCost} (the module's
 * documentation has the details). A unit is at most some 40 to 55 ns of
 * CPU.
 */
export const WHEN_COST_LIMIT = 500_000;

/** Most instructions in the RE2 program of a `matches()` pattern. */
export const MAX_REGEX_PROGRAM_SIZE = 256;

/** Longest error message of a compile or an evaluation, in characters. */
export const MAX_WHEN_ERROR_LENGTH = 500;

/** A compiled `when`, evaluated over one object at a time. */
export interface CompiledWhen {
  /** The `when`'s CEL source, as given. */
  readonly source: string;
  /**
   * Evaluates the `when` over one object, the decoded JSON of a
   * Kubernetes object bound to `object`. Never throws.
   *
   * @param object The object.
   * @returns Its value, or why there is none: a field that is not there, a
   * type error, a result that is not a bool, the budget exceeded.
   */
  evaluate(
    object: unknown,
    options?: { budget?: WhenBudget },
  ): WhenResult;
}

/**
 * A budget shared by several evaluations (those of one admission review),
 * in the units of {@linkcode WHEN_COST_LIMIT}: each evaluation may
 * spend at most what is left of it (and at most its own limit), and what it
 * spends is taken from it. Spent, an evaluation fails at once.
 */
export class WhenBudget {
  /** The units left. */
  remaining: number;

  /** A budget of `units`. */
  constructor(units: number) {
    this.remaining = units;
  }
}

/** The outcome of one evaluation: a bool, or a one-line error. */
export type WhenResult =
  | { ok: true; value: boolean }
  | { ok: false; error: string };

/** The outcome of a compile: the compiled `when`, or a one-line error. */
export type WhenCompile =
  | { ok: true; when: CompiledWhen }
  | { ok: false; error: string };

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
 * @returns The compiled `when`, or the error.
 */
export function compileWhen(source: string): WhenCompile {
  try {
    return compile(source);
  } catch (error) {
    return { ok: false, error: oneLine(describe(error)) };
  }
}

/**
 * The cost, in budget units, of running an RE2 program of `programSize`
 * instructions over `textLength` characters. Calibrated on the RE2 port's
 * worst case, a pattern that defeats its DFA (`(a|b)*a(a|b)(a|b)...`): its
 * NFA fallback costs some 0.05 to 0.1 ns per character and squared
 * instruction, and its DFA some 5 to 27 ns per character and instruction.
 *
 * @param textLength Characters in the text.
 * @param programSize Instructions in the compiled pattern.
 * @returns The units to charge.
 */
export function regexCost(textLength: number, programSize: number): number {
  return 1 + Math.ceil(textLength * programSize * (programSize + 64) / 1024);
}

// ---------------------------------------------------------------------------
// Compile

/** A CEL AST node, as `@bufbuild/cel`'s parser returns it. */
type Expr = ReturnType<typeof parse>["expr"];
type SourceInfo = NonNullable<ReturnType<typeof parse>["sourceInfo"]>;

/** Calls the planner handles itself rather than through the function table. */
const PLANNER_CALLS = new Set([
  "_&&_",
  "_||_",
  "_?_:_",
  "_[_]",
  "@not_strictly_false",
]);

/** The macros with a boolean result, the only comprehensions allowed. */
const BOOLEAN_MACROS = new Set(["all", "exists", "exists_one", "existsOne"]);

/** Macro names, for a better message when their arguments are malformed. */
const MACROS = new Set([...BOOLEAN_MACROS, "map", "filter"]);

/** Identifiers that name a type, usable as values (`type(x) == int`). */
const TYPE_NAMES = new Set([
  "bool",
  "bytes",
  "double",
  "int",
  "list",
  "map",
  "null_type",
  "string",
  "type",
  "uint",
]);

/** Literals that are not bools, by their kind in the AST. */
const LITERALS: Readonly<Record<string, string>> = {
  int64Value: "an int literal",
  uint64Value: "a uint literal",
  doubleValue: "a double literal",
  stringValue: "a string literal",
  bytesValue: "a bytes literal",
  nullValue: "null",
};

/** Calls whose result is never a bool, for the static result check. */
const NON_BOOL_CALLS = new Map([
  ["_+_", "an addition"],
  ["_-_", "a subtraction"],
  ["_*_", "a multiplication"],
  ["_/_", "a division"],
  ["_%_", "a remainder"],
  ["-_", "a negation"],
  ["size", "a size()"],
  ["int", "an int()"],
  ["uint", "a uint()"],
  ["double", "a double()"],
  ["string", "a string()"],
  ["bytes", "a bytes()"],
  ["timestamp", "a timestamp()"],
  ["duration", "a duration()"],
  ["type", "a type()"],
]);

/**
 * The evaluation running now, if any: evaluation is synchronous, and the
 * `matches()` hook below, shared by all `when`s, charges it.
 */
let active: Evaluation | undefined;

/**
 * The function the compiler wraps around the range of every comprehension
 * (its name is no CEL identifier, so no `when` can call it): before the
 * first iteration, charges for each element (each key of a map) the node
 * count of the comprehension's body, plus, for a string element, 1 per 64
 * characters for each use of the iteration variable in the body. That is
 * the work of the iterations that the views of the object do not see:
 * evaluating the body, and the strings that the iteration variable holds,
 * used as many times as it is named (`x + x + x`).
 */
const RANGE_FUNCTION = "@budgeted_range";

/**
 * The one environment: the standard library, its functions over strings and
 * bytes costed (`./costs.ts`), `matches()` budgeted, and
 * {@linkcode RANGE_FUNCTION}.
 */
const ENV = celEnv({
  funcs: [
    ...costedFuncs(celEnv().funcs, (units) => current().charge(units)),
    celFunc(
      RANGE_FUNCTION,
      [CelScalar.DYN, CelScalar.INT, CelScalar.INT],
      CelScalar.DYN,
      (range, nodes, uses) => {
        const evaluation = current();
        const items = isCelList(range)
          ? range
          : isCelMap(range)
          ? range.keys()
          : [];
        for (const item of items) {
          const length = typeof item === "string" ? item.length : 0;
          evaluation.charge(Number(nodes) + Number(uses) * (length >> 6));
        }
        return range;
      },
    ),
  ],
  re2: {
    compile: (pattern: string) => current().regex(pattern),
  },
});

/** The evaluation running now. */
function current(): Evaluation {
  if (active === undefined) throw new Error("no evaluation is running");
  return active;
}

function compile(source: string): WhenCompile {
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
  const program = plan(ENV, parsed);
  const when: CompiledWhen = {
    source,
    evaluate: (object, options) => run(program, object, options?.budget),
  };
  return { ok: true, when: Object.freeze(when) };
}

/** Walks a parsed AST and records the first problem found. */
class Checker {
  /** The first problem found, a message. */
  problem: string | undefined;
  /** The largest node id seen. */
  maxId = 0n;
  #nodes = 0;
  readonly #source: string;
  readonly #info: SourceInfo | undefined;

  constructor(source: string, info: SourceInfo | undefined) {
    this.#source = source;
    this.#info = info;
  }

  /**
   * Checks `expr`, in a scope of comprehension variables, and whether it is
   * inside the predicate of a comprehension.
   */
  check(expr: Expr, scope: ReadonlySet<string>, inMacro: boolean): void {
    if (this.problem !== undefined) return;
    if (expr.id > this.maxId) this.maxId = expr.id;
    if (++this.#nodes > MAX_WHEN_NODES) {
      this.problem =
        `the condition has more than ${MAX_WHEN_NODES} nodes once parsed; simplify it`;
      return;
    }
    const kind = expr.exprKind;
    switch (kind.case) {
      case "constExpr":
        return;
      case "identExpr": {
        const name = kind.value.name;
        if (name === "object" || scope.has(name) || TYPE_NAMES.has(name)) {
          return;
        }
        return this.#fail(
          expr,
          `undeclared reference to '${name}' (the only variable is 'object')`,
        );
      }
      case "selectExpr":
        if (kind.value.operand === undefined) {
          return this.#fail(expr, "a field selection without an operand");
        }
        return this.check(kind.value.operand, scope, inMacro);
      case "callExpr":
        return this.#call(expr, kind.value, scope, inMacro);
      case "listExpr":
        for (const element of kind.value.elements) {
          this.check(element, scope, inMacro);
        }
        return;
      case "structExpr":
        if (kind.value.messageName !== "") {
          return this.#fail(
            expr,
            `constructing a message (${kind.value.messageName}) is not supported`,
          );
        }
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case === "mapKey") {
            this.check(entry.keyKind.value, scope, inMacro);
          }
          if (entry.value !== undefined) {
            this.check(entry.value, scope, inMacro);
          }
        }
        return;
      case "comprehensionExpr":
        return this.#comprehension(expr, kind.value, scope, inMacro);
      default:
        return this.#fail(expr, "an expression of an unsupported kind");
    }
  }

  #call(
    expr: Expr,
    call: Extract<Expr["exprKind"], { case: "callExpr" }>["value"],
    scope: ReadonlySet<string>,
    inMacro: boolean,
  ): void {
    const name = call.function;
    if (!PLANNER_CALLS.has(name) && ENV.funcs.find(name) === undefined) {
      if (name === "has") {
        return this.#fail(
          expr,
          "has() takes a field selection, such as has(object.spec.field)",
        );
      }
      if (MACROS.has(name)) {
        return this.#fail(
          expr,
          `malformed ${name}(): write <list>.${name}(<variable>, <predicate>)`,
        );
      }
      return this.#fail(expr, `undeclared function '${name}'`);
    }
    if (name === "matches") this.#matches(expr, call);
    if (call.target !== undefined) this.check(call.target, scope, inMacro);
    for (const arg of call.args) this.check(arg, scope, inMacro);
  }

  #matches(
    expr: Expr,
    call: Extract<Expr["exprKind"], { case: "callExpr" }>["value"],
  ): void {
    const pattern = call.args[0]?.exprKind;
    if (
      call.target === undefined || call.args.length !== 1 ||
      pattern?.case !== "constExpr" ||
      pattern.value.constantKind.case !== "stringValue"
    ) {
      return this.#fail(
        expr,
        "matches() takes a string literal pattern, as in s.matches('^a+$')",
      );
    }
    const size = programSize(pattern.value.constantKind.value);
    if (typeof size === "string") {
      return this.#fail(expr, `invalid matches() pattern: ${size}`);
    }
    if (size > MAX_REGEX_PROGRAM_SIZE) {
      this.#fail(
        expr,
        `the matches() pattern compiles to ${size} instructions, more than the ${MAX_REGEX_PROGRAM_SIZE} allowed`,
      );
    }
  }

  #comprehension(
    expr: Expr,
    comprehension: Extract<
      Expr["exprKind"],
      { case: "comprehensionExpr" }
    >["value"],
    scope: ReadonlySet<string>,
    inMacro: boolean,
  ): void {
    const macro = this.#macroName(expr);
    if (macro === undefined || !BOOLEAN_MACROS.has(macro)) {
      const what = macro === undefined ? "this comprehension" : `${macro}()`;
      return this.#fail(
        expr,
        `${what} is not supported: the only macros are all(), exists() and exists_one()`,
      );
    }
    if (inMacro) {
      return this.#fail(
        expr,
        `${macro}() inside the predicate of another macro is not supported`,
      );
    }
    const { iterRange, accuInit, loopCondition, loopStep, result } =
      comprehension;
    if (
      iterRange === undefined || accuInit === undefined ||
      loopCondition === undefined || loopStep === undefined ||
      result === undefined
    ) {
      return this.#fail(expr, `an incomplete ${macro}()`);
    }
    this.check(iterRange, scope, inMacro);
    this.check(accuInit, scope, inMacro);
    const inner = new Set(scope);
    inner.add(comprehension.accuVar);
    this.check(result, inner, inMacro);
    inner.add(comprehension.iterVar);
    if (comprehension.iterVar2 !== "") inner.add(comprehension.iterVar2);
    this.check(loopCondition, inner, true);
    this.check(loopStep, inner, true);
  }

  #macroName(expr: Expr): string | undefined {
    const call = this.#info?.macroCalls[expr.id.toString()]?.exprKind;
    return call?.case === "callExpr" ? call.value.function : undefined;
  }

  #fail(expr: Expr, message: string): void {
    this.problem ??= `${message}${this.#at(expr)}`;
  }

  /** ` at line:column` of a node, when the parser recorded it. */
  #at(expr: Expr): string {
    const offset = this.#info?.positions[expr.id.toString()];
    if (offset === undefined) return "";
    const before = this.#source.slice(0, offset);
    const line = before.split("\n").length;
    const column = offset - before.lastIndexOf("\n");
    return ` at ${line}:${column}`;
  }
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

/** The nodes of an AST. */
function countNodes(expr: Expr | undefined): number {
  if (expr === undefined) return 0;
  let count = 1;
  for (const child of children(expr)) count += countNodes(child);
  return count;
}

/** How many times an AST names the identifier `name`. */
function countUses(expr: Expr | undefined, name: string): number {
  if (expr === undefined) return 0;
  const kind = expr.exprKind;
  let count = kind.case === "identExpr" && kind.value.name === name ? 1 : 0;
  for (const child of children(expr)) count += countUses(child, name);
  return count;
}

/** The direct children of an AST node. */
function children(expr: Expr): Expr[] {
  const kind = expr.exprKind;
  const found: (Expr | undefined)[] = [];
  switch (kind.case) {
    case "selectExpr":
      found.push(kind.value.operand);
      break;
    case "callExpr":
      found.push(kind.value.target, ...kind.value.args);
      break;
    case "listExpr":
      found.push(...kind.value.elements);
      break;
    case "structExpr":
      for (const entry of kind.value.entries) {
        if (entry.keyKind.case === "mapKey") found.push(entry.keyKind.value);
        found.push(entry.value);
      }
      break;
    case "comprehensionExpr": {
      const value = kind.value;
      found.push(
        value.iterRange,
        value.accuInit,
        value.loopCondition,
        value.loopStep,
        value.result,
      );
      break;
    }
  }
  return found.filter((child) => child !== undefined);
}

/** The size of a pattern's RE2 program, or why it does not compile. */
function programSize(pattern: string): number | string {
  try {
    return RE2JS.compile(pattern).re2().prog.numInst();
  } catch (error) {
    return describe(error);
  }
}

/**
 * What the root of a `when` is when it can never be a bool, as a phrase
 * ("a string literal"), or undefined when it may be one.
 */
function nonBool(expr: Expr): string | undefined {
  const kind = expr.exprKind;
  switch (kind.case) {
    case "constExpr": {
      const constant = kind.value.constantKind.case;
      return constant === "boolValue"
        ? undefined
        : LITERALS[constant ?? ""] ?? "a literal";
    }
    case "listExpr":
      return "a list";
    case "structExpr":
      return "a map";
    case "callExpr": {
      const name = kind.value.function;
      if (name === "_?_:_") {
        const [, then, otherwise] = kind.value.args;
        const a = then && nonBool(then);
        const b = otherwise && nonBool(otherwise);
        return a !== undefined && b !== undefined ? a : undefined;
      }
      return NON_BOOL_CALLS.get(name);
    }
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------
// Evaluate

type Program = ReturnType<typeof plan>;
type MapKey = bigint | string | boolean | CelUint;

/** Thrown when an evaluation's budget is spent; the result says so. */
class BudgetExceeded extends Error {
  constructor(shared: boolean) {
    super(
      shared
        ? "the review's budget for conditions is spent"
        : `the condition exceeded its budget of ${WHEN_COST_LIMIT} units`,
    );
  }
}

function run(
  program: Program,
  object: unknown,
  budget: WhenBudget | undefined,
): WhenResult {
  const limit = Math.min(WHEN_COST_LIMIT, budget?.remaining ?? Infinity);
  const shared = limit < WHEN_COST_LIMIT;
  if (limit <= 0) return failure(new BudgetExceeded(true).message);
  const evaluation = new Evaluation(limit);
  const previous = active;
  active = evaluation;
  try {
    return evaluate(program, object, evaluation, shared);
  } finally {
    active = previous;
    if (budget !== undefined) budget.remaining -= evaluation.spent;
  }
}

function evaluate(
  program: Program,
  object: unknown,
  evaluation: Evaluation,
  shared: boolean,
): WhenResult {
  try {
    const bindings: Record<string, CelInput> = Object.create(null);
    bindings.object = evaluation.toCel(object);
    const result = program(bindings);
    if (evaluation.exceeded) return failure(new BudgetExceeded(shared).message);
    if (isCelError(result)) return failure(result.message);
    if (typeof result !== "boolean") {
      return failure(
        `the condition evaluated to ${celType(result).name}, not bool`,
      );
    }
    return { ok: true, value: result };
  } catch (error) {
    if (evaluation.exceeded) return failure(new BudgetExceeded(shared).message);
    return failure(describe(error));
  }
}

/** The state of one evaluation: its budget and its views of the object. */
class Evaluation {
  /** Set once the budget is spent: the result is then an error. */
  exceeded = false;
  readonly #limit: number;
  #remaining: number;
  /** One view per JSON object or array, so that keys are listed once. */
  #views: Map<object, CelMap | CelList> | undefined;
  /** Patterns compiled in this evaluation (never shared across them). */
  #regexes: Map<string, RE2JS> | undefined;

  /** An evaluation that may spend `limit` units. */
  constructor(limit: number) {
    this.#limit = limit;
    this.#remaining = limit;
  }

  /** The units spent so far (at most the limit). */
  get spent(): number {
    return Math.min(this.#limit, this.#limit - this.#remaining);
  }

  /** Spends `units` of the budget, throwing once it is exceeded. */
  charge(units: number): void {
    this.#remaining -= units;
    if (this.#remaining < 0) {
      this.exceeded = true;
      throw new BudgetExceeded(false);
    }
  }

  /** A JSON value as a CEL value; objects and arrays as lazy views. */
  toCel(value: unknown): CelInput {
    switch (typeof value) {
      case "boolean":
        return value;
      case "string":
        this.charge(value.length >> 6);
        return value;
      case "number":
        return Number.isSafeInteger(value) ? BigInt(value) : value;
      case "bigint":
        return value;
      case "object": {
        if (value === null) return null;
        const seen = this.#views?.get(value);
        if (seen !== undefined) return seen;
        let view: CelMap | CelList;
        if (Array.isArray(value)) {
          view = celList(arrayView(value, this));
        } else if (isPlainObject(value)) {
          view = celMap(new ObjectView(value, this));
        } else {
          throw new TypeError(
            `unsupported value in the object: ${
              value.constructor?.name ?? "object"
            }`,
          );
        }
        (this.#views ??= new Map()).set(value, view);
        return view;
      }
      default:
        throw new TypeError(`unsupported value in the object: ${typeof value}`);
    }
  }

  /** The `matches()` matcher of a pattern, charging every test. */
  regex(pattern: string): { test(text: string): boolean } {
    let compiled = this.#regexes?.get(pattern);
    if (compiled === undefined) {
      this.charge(pattern.length);
      compiled = RE2JS.compile(pattern);
      (this.#regexes ??= new Map()).set(pattern, compiled);
    }
    const regex = compiled;
    const size = regex.re2().prog.numInst();
    return {
      test: (text: string) => {
        this.charge(regexCost(text.length, size));
        return regex.test(text);
      },
    };
  }
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * A read-only view of a JSON array for `celList`: every index read (and so
 * every step of an iteration) is charged, and elements are converted when
 * read. The proxy's target is an empty array of its own, so that a frozen
 * array imposes no invariants on what the view returns.
 */
function arrayView(array: readonly unknown[], evaluation: Evaluation) {
  const index = (property: string | symbol) =>
    typeof property === "string"
      ? arrayIndex(property, array.length)
      : undefined;
  return new Proxy<CelInput[]>([], {
    get(target, property, receiver) {
      if (property === "length") return array.length;
      const at = index(property);
      if (at === undefined) return Reflect.get(target, property, receiver);
      evaluation.charge(1);
      return evaluation.toCel(array[at]);
    },
    has: (target, property) =>
      property === "length" || index(property) !== undefined ||
      Reflect.has(target, property),
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false,
    setPrototypeOf: () => false,
  });
}

/** The index a property key names in an array of `length`, if any. */
function arrayIndex(property: string, length: number): number | undefined {
  if (!/^(?:0|[1-9]\d{0,9})$/.test(property)) return undefined;
  const index = Number(property);
  return index < length ? index : undefined;
}

/**
 * A read-only view of a JSON object for `celMap`: own string keys only,
 * every lookup and every step of an iteration charged, values converted when
 * read.
 */
class ObjectView implements ReadonlyMap<MapKey, CelInput> {
  readonly #object: Record<string, unknown>;
  readonly #evaluation: Evaluation;
  #keys: string[] | undefined;

  constructor(object: Record<string, unknown>, evaluation: Evaluation) {
    this.#object = object;
    this.#evaluation = evaluation;
  }

  get size(): number {
    return this.#ownKeys().length;
  }

  get(key: MapKey): CelInput | undefined {
    this.#evaluation.charge(1);
    if (typeof key !== "string" || !Object.hasOwn(this.#object, key)) {
      return undefined;
    }
    return this.#evaluation.toCel(this.#object[key]);
  }

  has(key: MapKey): boolean {
    return this.get(key) !== undefined;
  }

  *keys(): MapIterator<MapKey> {
    for (const key of this.#ownKeys()) {
      this.#evaluation.charge(1);
      yield key;
    }
  }

  *values(): MapIterator<CelInput> {
    for (const [, value] of this.entries()) yield value;
  }

  *entries(): MapIterator<[MapKey, CelInput]> {
    for (const key of this.#ownKeys()) {
      this.#evaluation.charge(1);
      yield [key, this.#evaluation.toCel(this.#object[key])];
    }
  }

  forEach(
    callback: (
      value: CelInput,
      key: MapKey,
      map: ReadonlyMap<MapKey, CelInput>,
    ) => void,
    thisArg?: unknown,
  ): void {
    for (const [key, value] of this.entries()) {
      callback.call(thisArg, value, key, this);
    }
  }

  [Symbol.iterator](): MapIterator<[MapKey, CelInput]> {
    return this.entries();
  }

  #ownKeys(): string[] {
    if (this.#keys === undefined) {
      const keys = Object.keys(this.#object);
      this.#evaluation.charge(keys.length);
      this.#keys = keys;
    }
    return this.#keys;
  }
}

// ---------------------------------------------------------------------------
// Messages

function failure(error: string): { ok: false; error: string } {
  return { ok: false, error: oneLine(error) };
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/**
 * A message on one line, at most {@linkcode MAX_WHEN_ERROR_LENGTH} long. Only
 * its first {@linkcode MESSAGE_SCAN_LENGTH} characters are read: a message
 * may quote a string of the object (a missing key of MBs), and reading it
 * all would be work that no budget charges.
 */
function oneLine(text: string): string {
  const long = text.length > MESSAGE_SCAN_LENGTH;
  const head = long ? text.slice(0, MESSAGE_SCAN_LENGTH) : text;
  const line = head.replace(/\s+/g, " ").replace(/\p{C}/gu, "?").trim() ||
    "unknown error";
  return !long && line.length <= MAX_WHEN_ERROR_LENGTH
    ? line
    : `${line.slice(0, MAX_WHEN_ERROR_LENGTH - 3)}...`;
}

/** The characters of a message that {@linkcode oneLine} reads. */
const MESSAGE_SCAN_LENGTH = 4 * MAX_WHEN_ERROR_LENGTH;
