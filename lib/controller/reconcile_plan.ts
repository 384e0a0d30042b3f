/**
 * The controller's desired state, computed from scratch: from every
 * DependencyRule and Lock, the dep-ctrl APIBindings, the webhook
 * configurations we own and the resolved workspace paths, which
 * configuration to create, update or delete in which provider workspace, and
 * which status each rule and Lock should show. Pure: the reconciler does the
 * I/O, and what the plan remembers between passes to compute less is in
 * the {@linkcode PlanMemo} its caller passes (each `Reconciler` owns one),
 * never in a module; the same input plans the same with any memo. Each
 * input has its part: the rules (`rule_plan.ts`), the Locks
 * (`lock_plan.ts`), the configurations (`configuration_plan.ts`) and the
 * conditions (`rule_status_plan.ts`); this puts them together.
 *
 * Fail closed: while any path a rule or Lock names is not known for certain,
 * no configuration is deleted and no protected type is dropped from one.
 *
 * @module
 */
import {
  type DependencyRuleParseResult,
  parseDependencyRule,
} from "../rules/mod.ts";
import type { EndpointObject, KubeObject } from "../kcp/mod.ts";
import type { ExportReading, ExportRef } from "../exports/mod.ts";
import type { Reading } from "../runtime/mod.ts";
import { bindingsByCluster } from "./binding_check.ts";
import {
  type ConfigurationAction,
  mergeDemands,
  planConfigurations,
} from "./configuration_plan.ts";
import { planLockPlacement } from "./lock_plan.ts";
import { nextLockExpiry } from "./lock_status_plan.ts";
import { PlanMemo } from "./plan_memo.ts";
import type { LockTargetAnswer, LockTargetRef } from "./lock_targets.ts";
import type { Resolution } from "./path_cache.ts";
import { accessNeededBy, parseRules, planRuleCoverage } from "./rule_plan.ts";
import {
  planLockStatuses,
  planRuleStatuses,
  type StatusAction,
} from "./rule_status_plan.ts";
import type { AccessRef } from "./webhook_access.ts";
import type { WebhookClientSettings } from "./webhook_config.ts";

export { PlanMemo } from "./plan_memo.ts";

/** Everything the plan is computed from. */
export interface PlanInput {
  /** Every DependencyRule, valid or not. */
  rules: readonly EndpointObject[];
  /** Every Lock, valid or not. @default {none} */
  locks?: readonly EndpointObject[];
  /** The APIBindings to the dep-ctrl export, from every endpoint. */
  bindings: readonly EndpointObject[];
  /** The webhook configurations we own, from every endpoint. */
  configurations: readonly EndpointObject[];
  /** Resolved paths; a path without an entry is still being resolved. */
  resolutions: ReadonlyMap<string, Resolution>;
  /**
   * What the APIExports the rules name serve, by `exportKey`; an export
   * without an entry is not checked (yet).
   * @default {nothing checked}
   */
  exports?: ReadonlyMap<string, ExportReading>;
  /**
   * What each Lock's workspace said of its target type, by `lockTargetKey`;
   * a target without an entry is being read.
   * @default {nothing checked}
   */
  lockTargets?: ReadonlyMap<string, Reading<LockTargetAnswer>>;
  /**
   * Whether the webhook's identity may make each read a rule needs, by
   * `accessKey`; absent: nothing checked.
   */
  webhookAccess?: {
    readings: ReadonlyMap<string, Reading<boolean>>;
    /** The webhook's user name, for messages. */
    user: string;
  };
  /**
   * Whether the webhook keeps its dependents index (the controller's
   * `--dependents-index`): then the reads that feed it are asked about too,
   * and each installed rule says in an `Indexed` condition whether the
   * webhook may feed it (`index_access.ts`). @default {false}
   */
  dependentsIndex?: boolean;
  /** Webhook client settings, or why they cannot be read. */
  settings: WebhookClientSettings | { error: string };
  /** The last failed write per provider cluster, if it failed. */
  installErrors: ReadonlyMap<string, string>;
  /** `<path>:<name>` of the dep-ctrl export, for messages. */
  exportRef: string;
  /** The current time, RFC 3339, for new condition transitions. */
  now: string;
  /**
   * Validates a rule object; a caller that plans often passes a memoized
   * one, since watch caches keep an object until a newer version replaces it.
   * @default {parseDependencyRule}
   */
  parse?: (object: KubeObject) => DependencyRuleParseResult;
}

/** The result of {@linkcode planReconcile}. */
export interface Plan {
  /** Every workspace path named by a schema-valid rule. */
  paths: string[];
  /** Every APIExport a schema-valid rule names, to be read and checked. */
  exports: ExportRef[];
  /** Every target type a valid Lock names, to ask its workspace about. */
  lockTargets: LockTargetRef[];
  /** Every read the webhook must be allowed for a valid rule, to ask kcp about. */
  webhookAccess: AccessRef[];
  /** Paths whose cluster has no dep-ctrl binding: resolve them again, the workspace may have been recreated. */
  stalePaths: string[];
  /** Writes that make the configurations equal the desired state. */
  configurations: ConfigurationAction[];
  /** Status writes (only for rules whose status differs and is settled). */
  statuses: StatusAction[];
  /** Rules by their Ready condition's status and reason, for metrics. */
  ready: Map<string, number>;
  /** Locks by their Ready condition's status and reason, for metrics. */
  lockReady: Map<string, number>;
  /**
   * When the next Lock expires (ms since the epoch), if any will: plan
   * again then, so its status shows `Expired` without waiting.
   */
  nextLockExpiry?: number;
  /** Provider clusters that keep (or get) a configuration. */
  desiredClusters: number;
  /** The logical clusters bound to the dep-ctrl export, sorted. */
  boundClusters: string[];
}

/**
 * Computes the whole desired state. `memo` is what earlier passes found
 * (the caller's, kept across its passes); without one, nothing is reused.
 * It changes how much is computed, never the plan.
 */
export function planReconcile(
  input: PlanInput,
  memo: PlanMemo = new PlanMemo(),
): Plan {
  // 1. Which rule objects are valid, and what is wrong between them.
  const rules = parseRules(input.rules, input.parse ?? parseDependencyRule, {
    memo,
  });
  // 2. Where the dep-ctrl export is bound, and with the claim accepted.
  const bindings = bindingsByCluster(input.bindings);
  // 3. Where each rule's dependencies are, and what their providers protect.
  const coverage = planRuleCoverage(rules.valid, {
    resolutions: input.resolutions,
    bindings,
    exports: input.exports,
    exportRef: input.exportRef,
    problems: rules.problems,
    memo,
  });
  // 4. Where each Lock needs the webhook.
  const locks = input.locks ?? [];
  const placement = planLockPlacement(locks, {
    resolutions: input.resolutions,
    bindings,
    exports: input.exports,
    targets: input.lockTargets,
    exportRef: input.exportRef,
  });
  // 5. The configuration writes for the rules' and the Locks' types.
  const demand = mergeDemands(coverage, placement);
  const { actions, wanted } = planConfigurations(input.configurations, {
    demand,
    bindings,
    settings: input.settings,
    memo,
  });
  // 6. The statuses, settled only where no configuration write is pending.
  const context = {
    settings: input.settings,
    installErrors: input.installErrors,
    pendingClusters: new Set(actions.map((c) => c.cluster)),
    now: input.now,
    memo,
  };
  const ruleStatuses = planRuleStatuses(rules, {
    ...context,
    problems: rules.problems,
    coverage,
    webhookAccess: input.webhookAccess,
    dependentsIndex: input.dependentsIndex,
  });
  const lockStatuses = planLockStatuses(locks, {
    ...context,
    placement,
    desired: demand.desired,
  });
  const nextExpiry = nextLockExpiry(placement.locks.values(), input.now);
  // 7. What to read for the next pass, with the writes and the counts.
  return {
    paths: [...new Set([...coverage.paths, ...placement.paths])].sort(),
    exports: [...new Map([...coverage.exports, ...placement.exports]).values()],
    lockTargets: [...placement.targets.values()],
    webhookAccess: accessNeededBy(rules.valid, memo, {
      dependentsIndex: input.dependentsIndex,
    }),
    stalePaths: [...coverage.stalePaths].sort(),
    configurations: actions,
    statuses: [...ruleStatuses.statuses, ...lockStatuses.statuses],
    ready: ruleStatuses.ready,
    lockReady: lockStatuses.ready,
    ...(nextExpiry === undefined ? {} : { nextLockExpiry: nextExpiry }),
    desiredClusters: wanted,
    boundClusters: [...bindings.keys()].sort(),
  };
}
