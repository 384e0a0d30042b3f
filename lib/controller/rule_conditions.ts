/**
 * The WebhooksInstalled and Ready conditions of one rule, as the rules'
 * statuses plan them (`rule_status_plan.ts`, which adds `Indexed` and
 * decides when a rule's status settles): pure functions of the states of
 * its dependencies, its problems and what kcp answered about the
 * webhook's reads, with the wording of their messages.
 *
 * A rule whose `spec.when` does not compile is `InvalidCondition`: its
 * types stay in the webhook configurations, as a rule with a path its
 * schema lacks keeps them (`FieldNotInSchema`), and the webhook applies it
 * failing closed: a `when` that does not compile counts as true for
 * every dependent (or owner), as though the rule had no `when`.
 * Dropping the types would let through every delete the rule is meant to
 * deny until its author fixes it. Each rule object's `when` is compiled
 * once per memo (the rule objects are kept while their spec does not
 * change), and what it denies is worded once per memo too
 * ({@linkcode RuleConditionsMemo}).
 *
 * A rule's Ready reason is the first that applies of: WebhooksInstalled's
 * reason while that is False (`InvalidSpec` for a rule the schema rejects,
 * a path not resolved, a provider not bound, a type not exported, a write
 * that failed: then nothing, or not everything, is protected), then
 * `DependencyCycle` (between rules, so fixing this one may not be enough),
 * then `InvalidCondition` (the rule's own spec, wrong for certain), then
 * `FieldNotInSchema` (judged from a schema, which an export may serve
 * stale), then `WebhookCannotRead` (the operator's grants, not the
 * rule), else `Enforced`. The message names every problem found, so a
 * reason that comes first hides none of the others.
 *
 * @module
 */
import {
  type Condition,
  type ConditionReason,
  type DependencyRule,
  READY_CONDITION,
  type ReferenceSource,
  ruleKey,
  type RuleProblem,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import { compileWhen, type WhenEnvironment } from "../when/mod.ts";
import { errorText, withArticle } from "../runtime/mod.ts";
import type { DependencyState, RuleCoverage, ValidRule } from "./rule_plan.ts";
import type { AccessProblems } from "./webhook_access.ts";
import type { StatusContext } from "./status_tally.ts";

/** A condition the plan writes: its reason is one it knows. */
export type PlannedCondition = Condition & { reason: ConditionReason };

/**
 * What a rule's conditions remember between passes, held by the plan's
 * memo (`PlanMemo`), each per rule object (a rule object does not change):
 * its `spec.when` problem and what it denies.
 */
export interface RuleConditionsMemo {
  /**
   * Each rule object's `spec.when` problem, `null` when it compiles (or
   * there is none): compiling is not free, so it is compiled once, not at
   * every pass.
   */
  readonly whenProblems: WeakMap<DependencyRule, string | null>;
  /** What each rule object denies, as its Enforced message starts. */
  readonly denied: WeakMap<DependencyRule, string>;
  /** The CEL environment rules' `when`s are compiled in (one, not one each). */
  readonly whenEnvironment: WhenEnvironment;
}

/**
 * The WebhooksInstalled condition of a rule whose dependencies are in
 * `states`: False with the first failure's reason (every failure named),
 * True naming the workspaces it is installed in, `undefined` while any
 * dependency or configuration write is pending.
 */
export function installationVerdict(
  states: readonly DependencyState[],
  context: StatusContext,
): PlannedCondition | undefined {
  const failures: { reason: ConditionReason; message: string }[] = [];
  const installedIn = new Set<string>();
  let pending = false;
  for (const state of states) {
    if (state.state === "pending") {
      pending = true;
    } else if (state.state === "failed") {
      failures.push(state);
    } else if ("error" in context.settings) {
      failures.push({
        reason: "InstallFailed",
        message: context.settings.error,
      });
    } else if (context.pendingClusters.has(state.cluster)) {
      const error = context.installErrors.get(state.cluster);
      if (error === undefined) pending = true;
      else {
        failures.push({
          reason: "InstallFailed",
          message:
            `cannot write the webhook configuration in ${state.path}: ${error}`,
        });
      }
    } else {
      installedIn.add(state.path);
    }
  }
  if (failures.length > 0) {
    return condition(WEBHOOKS_INSTALLED_CONDITION, {
      status: "False",
      reason: failures[0]!.reason,
      message: unique(failures.map((f) => f.message)).join("; "),
    });
  }
  if (pending) return undefined;
  return condition(WEBHOOKS_INSTALLED_CONDITION, {
    status: "True",
    reason: "Installed",
    message: `the webhook is installed in ${
      [...installedIn].sort().join(", ")
    }`,
  });
}

/**
 * The Ready condition: WebhooksInstalled's reason while it is False (the
 * rule's problems added to its message), else the first of the rule's
 * problems (a cycle, then a `spec.when` that does not compile, then paths
 * the object they are read on does not have, then reads the webhook may
 * not make), else `Enforced`, saying what could not be checked.
 */
export function readyConditionFor(
  { rule, cluster }: ValidRule,
  options: {
    installed: PlannedCondition;
    problems: readonly RuleProblem[];
    access: AccessProblems;
    coverage: Pick<
      RuleCoverage,
      "unverified" | "fieldProblems" | "uncheckedPaths"
    >;
    memo: RuleConditionsMemo;
  },
): PlannedCondition {
  const { installed, problems, access, coverage, memo } = options;
  const key = ruleKey(cluster, rule.metadata.name);
  const fieldProblems = unique(coverage.fieldProblems.get(key) ?? []);
  const invalidWhen = whenProblemOf(rule, memo);
  if (installed.status !== "True") {
    const added = [
      ...(problems[0] === undefined ? [] : [problems[0].message]),
      ...(invalidWhen === undefined ? [] : [invalidWhen]),
      ...fieldProblems,
    ];
    return condition(READY_CONDITION, {
      status: "False",
      reason: installed.reason,
      message: [installed.message, ...added].join("; "),
    });
  }
  const all: { reason: ConditionReason; message: string }[] = [
    ...problems,
    ...(invalidWhen === undefined
      ? []
      : [{ reason: "InvalidCondition" as const, message: invalidWhen }]),
    ...fieldProblems.map((message) => ({
      reason: "FieldNotInSchema" as const,
      message,
    })),
    ...unique(access.missing).map((message) => ({
      reason: "WebhookCannotRead" as const,
      message,
    })),
  ];
  const first = all[0];
  if (first !== undefined) {
    return condition(READY_CONDITION, {
      status: "False",
      reason: first.reason,
      message: all.map((p) => p.message).join("; "),
    });
  }
  return condition(READY_CONDITION, {
    status: "True",
    reason: "Enforced",
    message: enforcedMessage(rule, {
      memo,
      unverified: coverage.unverified.get(key) ?? [],
      uncheckedPaths: coverage.uncheckedPaths.get(key) ?? [],
      accessUnverified: access.unverified,
    }),
  });
}

/**
 * Why the rule's `spec.when` does not compile, as its Ready message says
 * it (`spec.when: <the compiler's message>; ...`); `undefined` when it
 * compiles or there is none. Compiled once per rule object and memo.
 */
function whenProblemOf(
  rule: DependencyRule,
  memo: RuleConditionsMemo,
): string | undefined {
  let problem = memo.whenProblems.get(rule);
  if (problem === undefined) {
    problem = null;
    const source = rule.spec.when;
    if (source !== undefined) {
      let error: string | undefined;
      try {
        const compiled = compileWhen(source, {
          environment: memo.whenEnvironment,
        });
        if (!compiled.ok) error = compiled.error;
      } catch (thrown) {
        // compileWhen() does not throw; if it did, say why all the same.
        error = errorText(thrown);
      }
      if (error !== undefined) {
        problem =
          `spec.when: ${error}; until it compiles, the webhook counts it as true for every ${rule.spec.dependent.kind}`;
      }
    }
    memo.whenProblems.set(rule, problem);
  }
  return problem ?? undefined;
}

/** What an enforced rule denies, and what could not be checked. */
function enforcedMessage(
  rule: DependencyRule,
  notes: {
    memo: RuleConditionsMemo;
    unverified: readonly string[];
    uncheckedPaths: readonly string[];
    accessUnverified: readonly string[];
  },
): string {
  const denied = deniedOf(rule, notes.memo);
  // Types that could not be checked are protected all the same: say so.
  const unchecked = notes.unverified.length === 0
    ? ""
    : `; not checked against the APIExports: ${
      unique(notes.unverified).join("; ")
    }`;
  // So are paths below where the schema is open.
  const open = notes.uncheckedPaths.length === 0
    ? ""
    : `; not checked against the schema: ${
      unique(notes.uncheckedPaths).join("; ")
    }`;
  // And reads the webhook could not be asked about.
  const reads = notes.accessUnverified.length === 0
    ? ""
    : `; not checked whether the webhook may read: ${
      unique(notes.accessUnverified).join("; ")
    }`;
  return `${denied}${unchecked}${open}${reads}`;
}

/**
 * `deleting <types> is denied while a <Kind> in the same workspace refers
 * to it`, or for the types whose reference is read on the protected object
 * (`from: Target`) `while the <Kind> it names exists`, on its Namespace
 * (`TargetNamespace`) `while the <Kind> its Namespace names exists`; each
 * with `(counting only one for which spec.when is true and that is not
 * being deleted)` as the rule's `when` and `protectWhile: Active` say.
 */
function deniedOf(rule: DependencyRule, memo: RuleConditionsMemo): string {
  let denied = memo.denied.get(rule);
  if (denied === undefined) {
    const { dependent, dependencies, when, protectWhile } = rule.spec;
    const bySource = new Map<ReferenceSource, string[]>();
    for (const d of dependencies) {
      const from = d.fieldRef.from ?? "Dependent";
      bySource.set(from, [
        ...(bySource.get(from) ?? []),
        `${d.resource}.${d.group}`,
      ]);
    }
    const only = [
      ...(when === undefined ? [] : ["for which spec.when is true"]),
      ...(protectWhile === "Active" ? ["that is not being deleted"] : []),
    ];
    const qualified = only.length === 0
      ? ""
      : ` (counting only one ${only.join(" and ")})`;
    denied = [...bySource].map(([from, types]) =>
      `deleting ${unique(types).join(", ")} is denied while ${
        from === "Dependent"
          ? `${withArticle(dependent.kind)} in the same workspace refers to it`
          : from === "Target"
          ? `the ${dependent.kind} it names exists`
          : `the ${dependent.kind} its Namespace names exists`
      }${qualified}`
    ).join("; ");
    memo.denied.set(rule, denied);
  }
  return denied;
}

/**
 * A rule's condition of `type`; its transition time is set when its status
 * is written (`status_tally.ts`).
 */
export function condition(
  type: string,
  options: {
    status: Condition["status"];
    reason: ConditionReason;
    message: string;
  },
): PlannedCondition {
  return {
    type,
    status: options.status,
    reason: options.reason,
    message: options.message,
    lastTransitionTime: "",
  };
}

/** `values` without repeats, in the order first found. */
function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
