/**
 * The rules' part of the plan: which rule objects are valid, and for every
 * dependency of every valid rule where its provider is (resolved path,
 * binding, accepted claim) and so which types each provider's configuration
 * must protect, with what the rule's status must say about each dependency.
 * Pure, like the rest of the plan: what it remembers between passes is in
 * the memo the caller passes ({@linkcode RulePlanMemo},
 * {@linkcode CoverMemo}).
 *
 * Each dependency's `fieldRef.path` and `namespacePath` are also checked
 * against the dependent's schema, as its export serves it in
 * `spec.dependent.version`. A path the schema does not have makes the rule
 * `FieldNotInSchema`, but its type stays in the configuration and the
 * webhook keeps applying the rule as written: a path that cannot match
 * finds nothing and so denies nothing (a `namespacePath` that cannot match
 * leaves every name in the dependent's own namespace), so keeping the type
 * denies no delete the wrong path would let through. Dropping it would
 * remove protection whenever the check is wrong (a schema read before the
 * provider added the field, a schema construct the walk does not know), and
 * another rule may need the type anyway. So the check changes status, never
 * enforcement, like every other check here that reads an APIExport.
 *
 * A path read on the protected object (`fieldRef.from: Target`) or on its
 * Namespace (`TargetNamespace`) is checked against their metadata instead,
 * the only part of them the webhook reads (labels, annotations,
 * `ownerReferences`): a path outside `.metadata` finds no owner whatever
 * the protected type's schema has there. It needs no export read, and a
 * wrong one is `FieldNotInSchema` alike, its type kept alike.
 *
 * @module
 */
import {
  analyzeRules,
  type DependencyRule,
  type DependencyRuleParseResult,
  type RuleProblem,
} from "../rules/mod.ts";
import { clusterOf, type EndpointObject, type KubeObject } from "../kcp/mod.ts";
import {
  addCover,
  coverOf,
  emptyCoverage,
  type RuleCoverage,
  type RuleCoverageContext,
} from "./rule_cover.ts";

export type {
  CoverMemo,
  DependencyState,
  RuleCoverage,
  RuleCoverageContext,
} from "./rule_cover.ts";
import {
  accessKey,
  type AccessMemo,
  accessNeeded,
  type AccessRef,
} from "./webhook_access.ts";
import { type IndexAccessMemo, indexAccessNeeded } from "./index_access.ts";

/** A schema-valid rule with where it came from. */
export interface ValidRule {
  /** The rule object and the endpoint it was read through. */
  source: EndpointObject;
  /** The rule as parsed. */
  rule: DependencyRule;
  /** The rule's logical cluster. */
  cluster: string;
}

/** A rule object that fails the schema, and why. */
export interface InvalidRule {
  /** The rule object and the endpoint it was read through. */
  source: EndpointObject;
  /** The parse error. */
  error: string;
}

/** The rule objects, validated, and the valid rules' problems. */
export interface ParsedRules {
  /** The schema-valid rules. */
  valid: ValidRule[];
  /** The rule objects that fail the schema. */
  invalid: InvalidRule[];
  /** The valid rules' problems with each other (`analyzeRules`), by rule key. */
  problems: Map<string, RuleProblem[]>;
}

/**
 * What the rules' part remembers between passes, held by the plan's memo
 * (`PlanMemo`): a pass analyzes every rule and asks for every rule's reads,
 * and between two passes the parsed rules are mostly the same objects
 * (`parse` keeps them while their spec does not change).
 */
export interface RulePlanMemo {
  /** The last rules {@linkcode parseRules} analyzed, and what it found. */
  analysis:
    | { rules: readonly ValidRule[]; problems: Map<string, RuleProblem[]> }
    | undefined;
  /** The last rules {@linkcode accessNeededBy} was asked about, and its answer. */
  accessNeeds:
    | { rules: readonly ValidRule[]; index: boolean; refs: AccessRef[] }
    | undefined;
}

/**
 * Validates every rule object with `parse`, and finds what is wrong between
 * the valid ones (analyzed again only when they are not the rules `memo`
 * saw last).
 */
export function parseRules(
  rules: readonly EndpointObject[],
  parse: (object: KubeObject) => DependencyRuleParseResult,
  options: { memo: RulePlanMemo },
): ParsedRules {
  const valid: ValidRule[] = [];
  const invalid: InvalidRule[] = [];
  for (const source of rules) {
    const parsed = parse(source.object);
    if (parsed.ok) {
      valid.push({
        source,
        rule: parsed.rule,
        cluster: clusterOf(source.object),
      });
    } else {
      invalid.push({ source, error: parsed.error });
    }
  }
  return { valid, invalid, problems: problemsOf(valid, options.memo) };
}

/** `analyzeRules` of the valid rules, reused while they are the same rule objects in the same clusters and order. */
function problemsOf(
  valid: readonly ValidRule[],
  memo: RulePlanMemo,
): Map<string, RuleProblem[]> {
  const last = memo.analysis;
  if (last !== undefined && sameRules(last.rules, valid)) return last.problems;
  const problems = analyzeRules(
    valid.map((v) => ({ cluster: v.cluster, rule: v.rule })),
  );
  memo.analysis = { rules: valid, problems };
  return problems;
}

/**
 * For every dependency of every valid rule: its state, and where its type
 * must be protected. A rule that protects its own dependent type
 * (`SelfDependency`) protects nothing.
 */
export function planRuleCoverage(
  valid: readonly ValidRule[],
  context: RuleCoverageContext,
): RuleCoverage {
  const coverage = emptyCoverage();
  for (const { rule, cluster } of valid) {
    addCover(coverage, coverOf(rule, cluster, context));
  }
  return coverage;
}

/**
 * Every read the webhook must be allowed for the valid rules, once each;
 * with `options.dependentsIndex`, those that feed its dependents index too
 * (`index_access.ts`). The list is shared with the next call with the same
 * `memo` for the same rules: do not modify it.
 */
export function accessNeededBy(
  valid: readonly ValidRule[],
  memo: RulePlanMemo & AccessMemo & IndexAccessMemo,
  options: { dependentsIndex?: boolean | undefined } = {},
): AccessRef[] {
  const index = options.dependentsIndex ?? false;
  const last = memo.accessNeeds;
  if (
    last !== undefined && last.index === index && sameRules(last.rules, valid)
  ) {
    return last.refs;
  }
  const refs = new Map<string, AccessRef>();
  for (const { cluster, rule } of valid) {
    for (const ref of accessNeeded(cluster, rule, { memo })) {
      refs.set(accessKey(ref, memo), ref);
    }
    if (!index) continue;
    for (const ref of indexAccessNeeded(cluster, rule, { memo })) {
      refs.set(accessKey(ref, memo), ref);
    }
  }
  const refList = [...refs.values()];
  memo.accessNeeds = { rules: valid, index, refs: refList };
  return refList;
}

/** Whether two lists hold the same rule objects in the same clusters and order. */
function sameRules(
  a: readonly ValidRule[],
  b: readonly ValidRule[],
): boolean {
  return a.length === b.length &&
    a.every((v, i) => v.rule === b[i]!.rule && v.cluster === b[i]!.cluster);
}
