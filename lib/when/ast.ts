/**
 * The parsed AST of a `when`, as `@bufbuild/cel`'s parser returns it, and
 * the walks over it that the checker and the compiler share: a node's
 * children, the nodes of a tree, the uses of an identifier.
 *
 * @example Counting nodes
 * ```ts
 * import { parse } from "@bufbuild/cel";
 * import { countNodes, countUses } from "./ast.ts";
 *
 * const { expr } = parse("object.a + object.b");
 * countNodes(expr); // 5
 * countUses(expr, "object"); // 2
 * ```
 *
 * @module
 */
import type { parse } from "@bufbuild/cel";

/** A CEL AST node, as `@bufbuild/cel`'s parser returns it. */
export type Expr = ReturnType<typeof parse>["expr"];

/** What the parser records beside the AST: positions, expanded macros. */
export type SourceInfo = NonNullable<ReturnType<typeof parse>["sourceInfo"]>;

/** The nodes of an AST. */
export function countNodes(expr: Expr | undefined): number {
  if (expr === undefined) return 0;
  let count = 1;
  for (const child of children(expr)) count += countNodes(child);
  return count;
}

/** How many times an AST names the identifier `name`. */
export function countUses(expr: Expr | undefined, name: string): number {
  if (expr === undefined) return 0;
  const kind = expr.exprKind;
  let count = kind.case === "identExpr" && kind.value.name === name ? 1 : 0;
  for (const child of children(expr)) count += countUses(child, name);
  return count;
}

/** The direct children of an AST node. */
export function children(expr: Expr): Expr[] {
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
