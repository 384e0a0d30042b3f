/**
 * The conditions' part of the plan: what each rule and each Lock must show
 * in its status, from the states the rules' and the Locks' parts found and
 * the configuration writes still to make. A status is left out while it
 * would not settle yet (its configuration is being written, a path or an
 * export is being read) and where the object already shows it; meanwhile
 * the object counts, for metrics, as the Ready condition it shows.
 *
 * @module
 */
import {
  type Condition,
  type ConditionReason,
  type DependencyRule,
  type DependencyRuleStatus,
  READY_CONDITION,
  ruleKey,
  type RuleProblem,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import type { LockConditionReason } from "../locks/mod.ts";
import { clusterOf, type EndpointObject, type KubeObject } from "../kcp/mod.ts";
import { compareStrings, isRecord, withArticle } from "../runtime/mod.ts";
import type { Reading } from "../runtime/mod.ts";
import { lockKey, type LockPlacement } from "./lock_plan.ts";
import type {
  DependencyState,
  InvalidRule,
  RuleCoverage,
  ValidRule,
} from "./rule_plan.ts";
import { accessNeeded, accessProblems } from "./webhook_access.ts";
import type { WebhookClientSettings } from "./webhook_config.ts";

/** The desired status of one rule or Lock. */
export interface StatusAction {
  /** The object's logical cluster. */
  cluster: string;
  /** The object's name. */
  name: string;
  /** A Lock's namespace; absent for a DependencyRule. */
  namespace?: string;
  /** Endpoint the object was read from. */
  endpoint: string;
  /** The resourceVersion the status was computed from. */
  resourceVersion: string;
  /** The status to write. */
  status: DependencyRuleStatus;
}

/** Status writes, and the objects counted by their Ready condition's `<status>/<reason>`. */
export interface PlannedStatuses {
  /** Status writes (only where the status differs and is settled). */
  statuses: StatusAction[];
  /** Objects by their Ready condition's status and reason, for metrics. */
  ready: Map<string, number>;
}

/** What every status is computed from. */
export interface StatusContext {
  /** Webhook client settings, or why they cannot be read. */
  settings: WebhookClientSettings | { error: string };
  /** The last failed write per provider cluster, if it failed. */
  installErrors: ReadonlyMap<string, string>;
  /** Provider clusters with a configuration write still to make. */
  pendingClusters: ReadonlySet<string>;
  /** The current time, RFC 3339, for new condition transitions. */
  now: string;
}

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
}

/** A condition the plan writes: its reason is one it knows. */
type PlannedCondition = Condition & { reason: ConditionReason };

/**
 * Each rule's status (WebhooksInstalled, then Ready), sorted by cluster and
 * name, and the rules counted by their Ready condition.
 */
export function planRuleStatuses(
  rules: { valid: readonly ValidRule[]; invalid: readonly InvalidRule[] },
  context: RuleStatusContext,
): PlannedStatuses {
  const planned = new StatusTally();
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
  for (const valid of rules.valid) {
    const { source, rule, cluster } = valid;
    const key = ruleKey(cluster, rule.metadata.name);
    const problems = context.problems.get(key) ?? [];
    const installed = problems.some((p) => p.reason === "SelfDependency")
      ? condition(WEBHOOKS_INSTALLED_CONDITION, {
        status: "False",
        reason: "SelfDependency",
        message: "nothing is installed for a rejected rule",
      })
      : installationVerdict(context.coverage.states.get(key) ?? [], context);
    if (installed === undefined) {
      // Settles in a later pass; meanwhile it counts as what it shows.
      planned.countShown(source.object);
      continue;
    }
    const ready = readyConditionFor(valid, { installed, problems, context });
    planned.count(ready);
    planned.write(source, { now: context.now, conditions: [installed, ready] });
  }
  planned.statuses.sort((a, b) =>
    a.cluster === b.cluster
      ? compareStrings(a.name, b.name)
      : compareStrings(a.cluster, b.cluster)
  );
  return { statuses: planned.statuses, ready: planned.ready };
}

/**
 * Each Lock's Ready condition, once settled: `Enforced` when the
 * configuration that covers its target is in place, why not otherwise.
 */
export function planLockStatuses(
  locks: readonly EndpointObject[],
  context: StatusContext & { placement: LockPlacement },
): PlannedStatuses {
  const { placement, settings } = context;
  const planned = new StatusTally();
  for (const source of locks) {
    const metadata = source.object.metadata ?? {};
    const cluster = clusterOf(source.object);
    const key = lockKey(cluster, metadata.namespace ?? "", metadata.name ?? "");
    const state = placement.states.get(key);
    let ready: Condition;
    if (
      state === undefined || state.state === "pending" ||
      // Placed, but its workspace is still being asked: no status yet.
      (state.state === "ok" && state.checking)
    ) {
      planned.countShown(source.object);
      continue;
    }
    if (state.state === "failed") {
      ready = lockReady("False", state);
    } else if (state.problem !== undefined) {
      ready = lockReady("False", state.problem);
    } else if ("error" in settings) {
      ready = lockReady("False", {
        reason: "InstallFailed",
        message: settings.error,
      });
    } else if (context.pendingClusters.has(state.cluster)) {
      const error = context.installErrors.get(state.cluster);
      if (error === undefined) {
        planned.countShown(source.object);
        continue;
      }
      ready = lockReady("False", {
        reason: "InstallFailed",
        message:
          `cannot write the webhook configuration in ${state.shown}: ${error}`,
      });
    } else {
      const spec = placement.locks.get(key)!.spec;
      const verbs = spec.operations.map((o) =>
        o === "Update" ? "updating" : "deleting"
      ).join(" and ");
      ready = lockReady("True", {
        reason: "Enforced",
        message:
          `${verbs} ${spec.target.resource}/${spec.target.name} is denied while this Lock exists (webhook installed in ${state.shown})`,
      });
    }
    planned.count(ready);
    planned.write(source, {
      now: context.now,
      conditions: [ready],
      namespace: metadata.namespace ?? "",
    });
  }
  return { statuses: planned.statuses, ready: planned.ready };
}

/** Whether the object already shows `status` (transition times aside). */
export function statusUpToDate(
  object: KubeObject,
  status: DependencyRuleStatus,
): boolean {
  const current = object.status as DependencyRuleStatus | undefined;
  if (current?.observedGeneration !== status.observedGeneration) return false;
  const have = currentConditions(object);
  const want = status.conditions ?? [];
  if (have.length !== want.length) return false;
  return want.every((w) => {
    const h = have.find((c) => c.type === w.type);
    return h !== undefined && h.status === w.status &&
      h.reason === w.reason && h.message === w.message &&
      h.observedGeneration === w.observedGeneration;
  });
}

/** Status writes being planned, and the Ready conditions counted. */
class StatusTally {
  readonly statuses: StatusAction[] = [];
  readonly ready = new Map<string, number>();

  /** Counts one object as its Ready condition. */
  count(condition: Condition): void {
    const label = `${condition.status}/${condition.reason}`;
    this.ready.set(label, (this.ready.get(label) ?? 0) + 1);
  }

  /** Counts an object whose status is not settled as the Ready condition it shows, if any. */
  countShown(object: KubeObject): void {
    const shown = currentConditions(object).find((c) =>
      c.type === READY_CONDITION
    );
    if (shown !== undefined) this.count(shown);
  }

  /** Plans writing `conditions` unless the object shows them already. */
  write(
    source: EndpointObject,
    options: { now: string; conditions: Condition[]; namespace?: string },
  ): void {
    const { object } = source;
    const status = statusFor(object, options);
    if (statusUpToDate(object, status)) return;
    this.statuses.push({
      cluster: clusterOf(object),
      name: object.metadata?.name ?? "",
      ...(options.namespace === undefined
        ? {}
        : { namespace: options.namespace }),
      endpoint: source.endpoint,
      resourceVersion: object.metadata?.resourceVersion ?? "",
      status,
    });
  }
}

/** The WebhooksInstalled condition, or undefined while anything is pending. */
function installationVerdict(
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
 * problems (a cycle, then paths its dependent's schema does not have, then
 * reads the webhook may not make), else `Enforced`, saying what could not
 * be checked.
 */
function readyConditionFor(
  { rule, cluster }: ValidRule,
  options: {
    installed: PlannedCondition;
    problems: readonly RuleProblem[];
    context: RuleStatusContext;
  },
): PlannedCondition {
  const { installed, problems, context } = options;
  const key = ruleKey(cluster, rule.metadata.name);
  const fieldProblems = unique(context.coverage.fieldProblems.get(key) ?? []);
  if (installed.status !== "True") {
    const added = [
      ...(problems[0] === undefined ? [] : [problems[0].message]),
      ...fieldProblems,
    ];
    return condition(READY_CONDITION, {
      status: "False",
      reason: installed.reason,
      message: [installed.message, ...added].join("; "),
    });
  }
  const access = context.webhookAccess === undefined
    ? { missing: [], unverified: [] }
    : accessProblems(
      accessNeeded(cluster, rule),
      context.webhookAccess.readings,
      { user: context.webhookAccess.user },
    );
  const all: { reason: ConditionReason; message: string }[] = [
    ...problems,
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
      unverified: context.coverage.unverified.get(key) ?? [],
      uncheckedPaths: context.coverage.uncheckedPaths.get(key) ?? [],
      accessUnverified: access.unverified,
    }),
  });
}

/** What an enforced rule denies, and what could not be checked. */
function enforcedMessage(
  rule: DependencyRule,
  notes: {
    unverified: readonly string[];
    uncheckedPaths: readonly string[];
    accessUnverified: readonly string[];
  },
): string {
  const types = unique(
    rule.spec.dependencies.map((d) => `${d.resource}.${d.group}`),
  ).join(", ");
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
  return `deleting ${types} is denied while ${
    withArticle(rule.spec.dependent.kind)
  } in the same workspace refers to it${unchecked}${open}${reads}`;
}

/** A Lock's Ready condition. */
function lockReady(
  status: Condition["status"],
  options: { reason: LockConditionReason; message: string },
): Condition {
  return {
    type: READY_CONDITION,
    status,
    reason: options.reason,
    message: options.message,
    lastTransitionTime: "",
  };
}

/** A rule's condition of `type`; its transition time is set by {@linkcode statusFor}. */
function condition(
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

/** The status to show, keeping transition times of unchanged conditions. */
function statusFor(
  object: KubeObject,
  options: { now: string; conditions: readonly Condition[] },
): DependencyRuleStatus {
  const generation = object.metadata?.generation;
  const previous = currentConditions(object);
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: options.conditions.map((c) => {
      const before = previous.find((p) => p.type === c.type);
      return {
        ...c,
        ...(generation === undefined ? {} : { observedGeneration: generation }),
        lastTransitionTime: before !== undefined && before.status === c.status
          ? before.lastTransitionTime
          : options.now,
      };
    }),
  };
}

function currentConditions(object: KubeObject): Condition[] {
  const status = object.status as { conditions?: unknown } | undefined;
  const conditions = status?.conditions;
  if (!Array.isArray(conditions)) return [];
  return conditions.filter((c): c is Condition =>
    isRecord(c) && typeof c.type === "string" &&
    typeof c.status === "string" && typeof c.lastTransitionTime === "string"
  );
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
