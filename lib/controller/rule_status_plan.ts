/**
 * The conditions' part of the plan: what each rule and each Lock must show
 * in its status, from the states the rules' and the Locks' parts found and
 * the configuration writes still to make. A status is left out while it
 * would not settle yet (its configuration is being written, a path or an
 * export is being read, or kcp is still being asked whether the webhook may
 * make a read an installed rule needs) and where the object already shows
 * it; meanwhile the object counts, for metrics, as the Ready condition it
 * shows. So a rule is written once when its answers come in, not first
 * without them and again with them. The Locks' conditions are planned in
 * `lock_status_plan.ts`, and both are written through `status_tally.ts`.
 *
 * A rule's conditions are kept per rule object with what they were
 * computed from, in the memo of whoever runs the passes
 * ({@linkcode RuleStatusMemo}), and computed again only when any of it
 * changes: a pass over thousands of rules of which few changed costs little
 * more than looking that up.
 *
 * A rule's WebhooksInstalled and Ready conditions, which reason comes
 * first and what their messages say, are computed in `rule_conditions.ts`;
 * here they are put together for every rule, with `InvalidSpec` for a rule
 * the schema rejects and `SelfDependency` (nothing installed) for one that
 * depends on its own dependent type.
 *
 * With `dependentsIndex` (the controller's `--dependents-index`), an
 * installed rule gets a third condition, `Indexed`: True (`Indexed`) when
 * kcp says the webhook may feed its dependents index for the rule, False
 * with `WebhookCannotWatch` (naming each grant missing and how to give it)
 * when it may not, Unknown (`IndexNotChecked`) when kcp could not be asked,
 * and False with `NotIndexed` for a rule the webhook never indexes (see
 * `index_access.ts`). It never changes Ready: without the index the webhook
 * lists the dependents on every review, which protects all the same. Like
 * the reads Ready depends on, the status waits for kcp's answers. Without
 * `dependentsIndex` a rule has no `Indexed` condition.
 *
 * @module
 */
import {
  type DependencyRule,
  INDEXED_CONDITION,
  READY_CONDITION,
  ruleKey,
  type RuleProblem,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import { compareStrings } from "../runtime/mod.ts";
import type { Reading } from "../runtime/mod.ts";
import type { InvalidRule, RuleCoverage, ValidRule } from "./rule_plan.ts";
import {
  condition,
  installationVerdict,
  type PlannedCondition,
  readyConditionFor,
  type RuleConditionsMemo,
} from "./rule_conditions.ts";
import {
  accessKey,
  type AccessMemo,
  accessNeeded,
  type AccessProblems,
  accessProblems,
} from "./webhook_access.ts";
import {
  cannotWatchMessage,
  type IndexAccessMemo,
  indexAccessNeeded,
  indexAccessProblems,
  indexedMessage,
  indexNotCheckedMessage,
  notIndexedReason,
} from "./index_access.ts";
import {
  type PlannedStatuses,
  type ShownMemo,
  type StatusContext,
  StatusTally,
} from "./status_tally.ts";

export { planLockStatuses } from "./lock_status_plan.ts";
export {
  type PlannedStatuses,
  type ShownMemo,
  type StatusAction,
  type StatusContext,
  statusUpToDate,
} from "./status_tally.ts";

/** What the rules' statuses are computed from, besides {@linkcode StatusContext}. */
export interface RuleStatusContext extends StatusContext {
  /** The rules' problems (`analyzeRules`), by rule key. */
  problems: ReadonlyMap<string, readonly RuleProblem[]>;
  /** What the rules' part found. */
  coverage: Pick<
    RuleCoverage,
    "states" | "unverified" | "fieldProblems" | "uncheckedPaths"
  >;
  /**
   * Whether the webhook's identity may make each read a rule needs, by
   * `accessKey`, with its user name for messages; absent: nothing checked.
   */
  webhookAccess?: {
    readings: ReadonlyMap<string, Reading<boolean>>;
    user: string;
  } | undefined;
  /**
   * Whether the webhook keeps its dependents index (`--dependents-index`):
   * then each installed rule says in an `Indexed` condition whether the
   * webhook may feed it. @default {false}
   */
  dependentsIndex?: boolean | undefined;
  /** What earlier passes found, kept by whoever runs the passes (`PlanMemo`). */
  memo: RuleStatusMemo;
}

/**
 * What the rules' statuses remember between passes, held by the plan's
 * memo (`PlanMemo`), each per rule object (a rule object does not change):
 * its last settled conditions with what they were computed from; with what
 * the conditions ({@linkcode RuleConditionsMemo}: its `spec.when` problem
 * and what it denies), the tally ({@linkcode ShownMemo}) and the access
 * checks ({@linkcode AccessMemo}, {@linkcode IndexAccessMemo}) remember.
 */
export interface RuleStatusMemo
  extends ShownMemo, AccessMemo, IndexAccessMemo, RuleConditionsMemo {
  /**
   * Each rule object's last settled conditions (or `undefined`: not
   * settled), with what they were computed from.
   */
  readonly settled: WeakMap<
    DependencyRule,
    { inputs: unknown[]; conditions: RuleConditions | undefined }
  >;
}

/**
 * Each rule's status (WebhooksInstalled, then Ready, then with
 * `dependentsIndex` Indexed for an installed rule), sorted by cluster and
 * name, and the rules counted by their Ready condition.
 */
export function planRuleStatuses(
  rules: { valid: readonly ValidRule[]; invalid: readonly InvalidRule[] },
  context: RuleStatusContext,
): PlannedStatuses {
  const planned = new StatusTally(context.memo);
  for (const { source, error } of rules.invalid) {
    const ready = condition(READY_CONDITION, {
      status: "False",
      reason: "InvalidSpec",
      message: error,
    });
    planned.count(ready);
    planned.write(source, {
      now: context.now,
      conditions: [
        condition(WEBHOOKS_INSTALLED_CONDITION, {
          status: "False",
          reason: "InvalidSpec",
          message: "nothing is installed for an invalid rule",
        }),
        ready,
      ],
    });
  }
  // Where inputsOf() puts a rule's inputs: one list for every rule of the
  // pass, copied only for the rules whose inputs changed.
  const inputs: unknown[] = [];
  for (const valid of rules.valid) {
    const { source } = valid;
    const conditions = settledConditions(valid, { context, inputs });
    if (conditions === undefined) {
      // Settles in a later pass (its configuration is being written, or
      // whether the webhook may read its types is being asked: what kcp
      // answers decides its Ready condition); meanwhile it counts as what
      // it shows.
      planned.countShown(source.object);
      continue;
    }
    planned.count(conditions[1]);
    planned.write(source, { now: context.now, conditions });
  }
  planned.statuses.sort((a, b) =>
    a.cluster === b.cluster
      ? compareStrings(a.name, b.name)
      : compareStrings(a.cluster, b.cluster)
  );
  return { statuses: planned.statuses, ready: planned.ready };
}

/** A rule's settled conditions: WebhooksInstalled, then Ready, then maybe Indexed. */
export type RuleConditions =
  | [PlannedCondition, PlannedCondition]
  | [PlannedCondition, PlannedCondition, PlannedCondition];

/**
 * A rule's conditions, or `undefined` while they would not settle yet:
 * computed again only when something they are computed from (see
 * {@linkcode inputsOf}, which fills `inputs`) is not the same as at the
 * last pass with the same memo (most rules, most passes, nothing is).
 */
function settledConditions(
  valid: ValidRule,
  options: { context: RuleStatusContext; inputs: unknown[] },
): RuleConditions | undefined {
  const { context, inputs } = options;
  const { settled } = context.memo;
  const key = ruleKey(valid.cluster, valid.rule.metadata.name);
  inputsOf(valid, { key, context, inputs });
  const kept = settled.get(valid.rule);
  if (
    kept !== undefined && kept.inputs.length === inputs.length &&
    kept.inputs.every((input, i) => input === inputs[i])
  ) {
    return kept.conditions;
  }
  const conditions = conditionsOf(valid, key, context);
  settled.set(valid.rule, { inputs: [...inputs], conditions });
  return conditions;
}

/**
 * Puts in `inputs` (emptied first) everything {@linkcode conditionsOf}
 * reads for a rule, as values or the objects the plan's parts hand out
 * (kept between passes while unchanged), in order: the rule's cluster and
 * problems, its dependencies' states and notes, the settings, per
 * installed dependency whether its configuration is being written and why
 * it failed, and what kcp answered about its reads (with
 * `dependentsIndex`, those that feed the index too).
 */
function inputsOf(
  { rule, cluster }: ValidRule,
  options: { key: string; context: RuleStatusContext; inputs: unknown[] },
): void {
  const { key, context, inputs } = options;
  const { coverage, memo } = context;
  const states = coverage.states.get(key);
  inputs.length = 0;
  inputs.push(
    cluster,
    context.problems.get(key),
    states,
    context.settings,
    coverage.fieldProblems.get(key),
    coverage.uncheckedPaths.get(key),
    coverage.unverified.get(key),
  );
  for (const state of states ?? []) {
    if (state.state !== "ok") continue;
    inputs.push(
      context.pendingClusters.has(state.cluster),
      context.installErrors.get(state.cluster),
    );
  }
  const access = context.webhookAccess;
  if (access !== undefined) {
    inputs.push(access.user);
    for (const ref of accessNeeded(cluster, rule, { memo })) {
      inputs.push(access.readings.get(accessKey(ref, memo)));
    }
  }
  if (context.dependentsIndex === true) {
    inputs.push(true);
    if (access !== undefined) {
      for (const ref of indexAccessNeeded(cluster, rule, { memo })) {
        inputs.push(access.readings.get(accessKey(ref, memo)));
      }
    }
  }
}

/** A rule's conditions, computed; `undefined` while they would not settle yet. */
function conditionsOf(
  valid: ValidRule,
  key: string,
  context: RuleStatusContext,
): RuleConditions | undefined {
  const problems = context.problems.get(key) ?? [];
  const installed = problems.some((p) => p.reason === "SelfDependency")
    ? condition(WEBHOOKS_INSTALLED_CONDITION, {
      status: "False",
      reason: "SelfDependency",
      message: "nothing is installed for a rejected rule",
    })
    : installationVerdict(context.coverage.states.get(key) ?? [], context);
  const access = installed?.status === "True"
    ? accessOf(valid, context)
    : NOTHING_ASKED;
  if (installed === undefined || access.unanswered > 0) return undefined;
  const ready = readyConditionFor(valid, {
    installed,
    problems,
    access,
    coverage: context.coverage,
    memo: context.memo,
  });
  if (context.dependentsIndex !== true || installed.status !== "True") {
    return [installed, ready];
  }
  const indexed = indexedCondition(valid, context);
  if (indexed === null) return undefined;
  return indexed === undefined
    ? [installed, ready]
    : [installed, ready, indexed];
}

/**
 * The Indexed condition of an installed rule (see the module's header):
 * `null` while kcp is still being asked about a read that feeds the index,
 * `undefined` when nothing is checked (no `webhookAccess`) for a rule the
 * webhook would index.
 */
function indexedCondition(
  { rule, cluster }: ValidRule,
  context: RuleStatusContext,
): PlannedCondition | null | undefined {
  const why = notIndexedReason(rule);
  if (why !== undefined) {
    return condition(INDEXED_CONDITION, {
      status: "False",
      reason: "NotIndexed",
      message: why,
    });
  }
  const access = context.webhookAccess;
  if (access === undefined) return undefined;
  const { memo } = context;
  const { user } = access;
  const found = indexAccessProblems(
    indexAccessNeeded(cluster, rule, { memo }),
    access.readings,
    { user, memo },
  );
  if (found.unanswered > 0) return null;
  if (found.missing.length > 0) {
    return condition(INDEXED_CONDITION, {
      status: "False",
      reason: "WebhookCannotWatch",
      message: cannotWatchMessage(rule, found, { user }),
    });
  }
  if (found.unverified.length > 0) {
    return condition(INDEXED_CONDITION, {
      status: "Unknown",
      reason: "IndexNotChecked",
      message: indexNotCheckedMessage(found.unverified),
    });
  }
  return condition(INDEXED_CONDITION, {
    status: "True",
    reason: "Indexed",
    message: indexedMessage(rule, { user }),
  });
}

/** What the answers about the webhook's reads say when nothing was asked. */
const NOTHING_ASKED: AccessProblems = Object.freeze({
  missing: [],
  unverified: [],
  unanswered: 0,
});

/** What kcp answered about the reads a rule needs the webhook to make. */
function accessOf(
  { rule, cluster }: ValidRule,
  context: RuleStatusContext,
): AccessProblems {
  if (context.webhookAccess === undefined) return NOTHING_ASKED;
  const { memo } = context;
  return accessProblems(
    accessNeeded(cluster, rule, { memo }),
    context.webhookAccess.readings,
    { user: context.webhookAccess.user, memo },
  );
}
