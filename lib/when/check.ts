/**
 * The checks of a parsed `when` before it is planned: declared variables
 * and functions only, the boolean macros only and none inside another's
 * predicate, a `matches()` of a literal pattern with a bounded RE2 program,
 * no message construction, at most {@linkcode MAX_WHEN_NODES} nodes
 * ({@linkcode Checker}); and a root that can be a bool
 * ({@linkcode nonBool}). `@bufbuild/cel` 0.6 has no type checker to speak
 * of, so these run on the AST itself.
 *
 * @example Checking an AST
 * ```ts
 * import { parse } from "@bufbuild/cel";
 * import { Checker, nonBool } from "./check.ts";
 *
 * const source = "object.spec.items.map(x, x)";
 * const parsed = parse(source);
 * const checker = new Checker(source, parsed.sourceInfo);
 * checker.check(parsed.expr, new Set(), false);
 * checker.problem; // "map() is not supported: ..."
 * nonBool(parse("1 + 2").expr); // "an addition"
 * ```
 *
 * @module
 */
import { RE2JS } from "@bufbuild/re2";
import type { Expr, SourceInfo } from "./ast.ts";
import { FUNCTION_NAMES } from "./environment.ts";
import { MAX_REGEX_PROGRAM_SIZE, MAX_WHEN_NODES } from "./limits.ts";
import { describe } from "./messages.ts";

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

/** Walks a parsed AST and records the first problem found. */
export class Checker {
  /** The first problem found, a message. */
  problem: string | undefined;
  /** The largest node id seen. */
  maxId = 0n;
  #nodes = 0;
  readonly #source: string;
  readonly #info: SourceInfo | undefined;

  /** A checker of the AST parsed from `source`, with its `info`. */
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
    if (!PLANNER_CALLS.has(name) && !FUNCTION_NAMES.has(name)) {
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
export function nonBool(expr: Expr): string | undefined {
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
