/**
 * Whether one object that refers to a protected object, a dependent that
 * names it or an owner it names, protects it now, pure: by the rule's
 * `protectWhile` (not while it is being deleted, for `Active`) and its
 * `when` (only where true; where it cannot be evaluated or does not
 * compile, it protects: fail closed), and the budget that all `when`
 * evaluations of one review share.
 *
 * @module
 */
import { WHEN_COST_LIMIT, type WhenBudget } from "../when/mod.ts";
import { errorText, printable } from "../runtime/mod.ts";
import type { Protection } from "./rule_registry.ts";
import { asRecord } from "./review_target.ts";

/**
 * What all `when` evaluations of one review may spend together: twice what
 * one may ({@linkcode WHEN_COST_LIMIT}), at most some 60 ms of CPU
 * (`deno task bench:when`), so many dependents with a costly `when` cannot
 * hold the event loop; past it, a dependent or owner protects without
 * being evaluated.
 */
export const REVIEW_WHEN_BUDGET = 2 * WHEN_COST_LIMIT;

/** Whether an object protects now: not, or yes with what to say about it. */
export type Protects =
  | { protects: false }
  | {
    protects: true;
    /** The rule's `when`, when it was evaluated true. */
    when?: string;
    /** Why it protects though its `when` could not say (fail closed). */
    note?: string;
  };

/**
 * Whether `object` (a dependent that refers to the target, or an owner it
 * names) protects now under `p`: with `protectWhile: Active`, not while it
 * is being deleted; with a `when`, only where it is true, and where it
 * cannot be evaluated (or does not compile), it protects. `budget`, the
 * review's, bounds all its evaluations together: spent, the rest protect.
 */
export function protectsNow(
  object: unknown,
  p: Protection,
  budget?: WhenBudget,
): Protects {
  if (p.protectWhile === "Active") {
    const stamp = asRecord(asRecord(object)?.metadata)?.deletionTimestamp;
    if (typeof stamp === "string" && stamp !== "") return { protects: false };
  }
  const { when } = p;
  if (when === undefined) return { protects: true };
  if ("error" in when) {
    return {
      protects: true,
      note:
        `the rule's condition does not compile (${when.error}), so it protects`,
    };
  }
  let result;
  try {
    result = when.compiled.evaluate(
      object,
      budget === undefined ? {} : { budget },
    );
  } catch (error) {
    // evaluate() never throws; if it did, the object still protects.
    result = { ok: false as const, error: errorText(error) };
  }
  if (!result.ok) {
    return {
      protects: true,
      note: `the rule's condition ${
        printable(when.source, 200)
      } could not be evaluated (${printable(result.error)}), so it protects`,
    };
  }
  return result.value
    ? { protects: true, when: when.source }
    : { protects: false };
}
