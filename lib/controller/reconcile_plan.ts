/**
 * The controller's desired state, computed from scratch: from every
 * DependencyRule, the dep-ctrl APIBindings, the webhook configurations we
 * own and the resolved workspace paths, which configuration to create,
 * update or delete in which provider workspace, and which status each rule
 * should show. Pure: the reconciler does the I/O.
 *
 * Fail closed: while any path a rule names is not known for certain, no
 * configuration is deleted and no protected type is dropped from one.
 *
 * @module
 */
import {
  analyzeRules,
  type Condition,
  type ConditionReason,
  type DependencyRule,
  type DependencyRuleParseResult,
  type DependencyRuleStatus,
  type GroupVersionResource,
  gvrKey,
  parseDependencyRule,
  READY_CONDITION,
  ruleKey,
  type RuleProblem,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import { clusterOf, type EndpointObject, type KubeObject } from "../kcp/mod.ts";
import { compareStrings, isRecord, withArticle } from "../runtime/mod.ts";
import { bindingProblem } from "./binding_check.ts";
import { lockKey, type LockPlacement, planLockPlacement } from "./lock_plan.ts";
import type { LockTargetAnswer, LockTargetRef } from "./lock_targets.ts";
import type { LockConditionReason } from "../locks/mod.ts";
import {
  accessKey,
  accessNeeded,
  accessProblems,
  type AccessRef,
} from "./webhook_access.ts";
import type { Reading } from "../runtime/mod.ts";
import {
  checkExported,
  checkFieldRef,
  type ExportCheck,
  exportKey,
  type ExportReading,
  type ExportRef,
  servedSchema,
} from "../exports/mod.ts";
import {
  desiredWebhookConfiguration,
  type ProtectedType,
  providerUrl,
  updatedWebhookConfiguration,
  WEBHOOK_OPERATIONS,
  type WebhookClientSettings,
  webhookConfigurationUpToDate,
} from "./webhook_config.ts";

/** The outcome of resolving one workspace path. */
export type Resolution =
  | { cluster: string }
  | { reason: string; message: string; definitive: boolean };

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

/** What to do with the configuration of one provider cluster. */
export interface ConfigurationAction {
  /** Provider logical cluster. */
  cluster: string;
  /** The provider workspace's path, where a rule names it: for logs. */
  workspace?: string;
  /** Endpoint to write through. */
  endpoint: string;
  /** The write. */
  action: "create" | "update" | "delete";
  /** The object to create or PUT (for delete: the current object). */
  object: KubeObject;
}

/** The desired status of one rule. */
export interface StatusAction {
  /** The object's logical cluster. */
  cluster: string;
  /** The object's name. */
  name: string;
  /** A Lock's namespace; absent for a DependencyRule. */
  namespace?: string;
  /** Endpoint the rule was read from. */
  endpoint: string;
  /** The resourceVersion the status was computed from. */
  resourceVersion: string;
  /** The status to write. */
  status: DependencyRuleStatus;
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
  /** Provider clusters that keep (or get) a configuration. */
  desiredClusters: number;
  /** The logical clusters bound to the dep-ctrl export, sorted. */
  boundClusters: string[];
}

const VWC_GROUP = "admissionregistration.k8s.io";
const VWC_RESOURCE = "validatingwebhookconfigurations";

/** One dependency's state, for status. */
type DependencyState =
  | { state: "ok"; path: string; gvr: GroupVersionResource }
  | { state: "pending" }
  | { state: "failed"; reason: ConditionReason; message: string };

/** A condition the plan writes: its reason is one it knows. */
type PlannedCondition = Condition & { reason: ConditionReason };

/** Computes the whole desired state. */
export function planReconcile(input: PlanInput): Plan {
  const { valid, invalid } = parseRules(input);
  const problems = analyzeRules(
    valid.map((v) => ({ cluster: v.cluster, rule: v.rule })),
  );
  const bindings = bindingsByCluster(input.bindings);
  const coverage = planCoverage(valid, { input, problems, bindings });
  const placement = planLockPlacement(input.locks ?? [], {
    resolutions: input.resolutions,
    bindings,
    ...(input.exports === undefined ? {} : { exports: input.exports }),
    ...(input.lockTargets === undefined ? {} : { targets: input.lockTargets }),
    exportRef: input.exportRef,
  });
  mergeLocks(coverage, placement);
  const { actions: configurations, wanted } = planConfigurations(
    input,
    coverage,
    bindings,
  );
  const { statuses, ready } = planStatuses({ valid, invalid }, {
    input,
    problems,
    states: coverage.states,
    unverified: coverage.unverified,
    fieldProblems: coverage.fieldProblems,
    uncheckedPaths: coverage.uncheckedPaths,
    pendingClusters: new Set(configurations.map((c) => c.cluster)),
  });
  const lockStatuses = planLockStatuses(input.locks ?? [], {
    input,
    placement,
    pendingClusters: new Set(configurations.map((c) => c.cluster)),
  });
  statuses.push(...lockStatuses.statuses);
  return {
    paths: [...coverage.paths].sort(),
    exports: [...coverage.exports.values()],
    lockTargets: [...placement.targets.values()],
    webhookAccess: uniqueAccess(valid),
    stalePaths: [...coverage.stalePaths].sort(),
    configurations,
    statuses,
    ready,
    lockReady: lockStatuses.ready,
    desiredClusters: wanted,
    boundClusters: [...bindings.keys()].sort(),
  };
}

/** A schema-valid rule with where it came from. */
interface ValidRule {
  source: EndpointObject;
  rule: DependencyRule;
  cluster: string;
}

/** A rule object that fails the schema, and why. */
interface InvalidRule {
  source: EndpointObject;
  error: string;
}

/** Step 1: validates every rule object. */
function parseRules(
  input: PlanInput,
): { valid: ValidRule[]; invalid: InvalidRule[] } {
  const valid: ValidRule[] = [];
  const invalid: InvalidRule[] = [];
  for (const source of input.rules) {
    const parsed = (input.parse ?? parseDependencyRule)(source.object);
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
  return { valid, invalid };
}

/** What the rules ask to protect where, and each dependency's state. */
interface Coverage {
  /** Desired protected types (with their operations) per provider cluster. */
  desired: Map<string, Map<string, ProtectedType>>;
  /** The workspace path each provider cluster of `desired` was named by. */
  providerPaths: Map<string, string>;
  /** Every path a valid rule names. */
  paths: Set<string>;
  /** Paths whose cluster has no dep-ctrl binding. */
  stalePaths: Set<string>;
  /** Whether any path is not known for certain (then nothing is dropped). */
  unsure: boolean;
  /** Each rule's dependencies' states, by rule key. */
  states: Map<string, DependencyState[]>;
  /** Every APIExport a valid rule names, by `exportKey`. */
  exports: Map<string, ExportRef>;
  /** Per rule key: why some of its types could not be checked. */
  unverified: Map<string, string[]>;
  /** Per rule key: the field paths its dependent's schema does not have (`FieldNotInSchema`). */
  fieldProblems: Map<string, string[]>;
  /** Per rule key: the field paths checked only down to where the schema is open. */
  uncheckedPaths: Map<string, string[]>;
}

/**
 * Step 2: for every dependency of every valid rule, where its provider is
 * (resolved path, binding, accepted claim) and so which types each
 * provider's configuration must protect.
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
 */
function planCoverage(
  valid: readonly ValidRule[],
  context: {
    input: PlanInput;
    problems: ReadonlyMap<string, readonly RuleProblem[]>;
    bindings: ReadonlyMap<string, { endpoint: string; claimAccepted: boolean }>;
  },
): Coverage {
  const { input, problems, bindings } = context;
  const coverage: Coverage = {
    desired: new Map(),
    providerPaths: new Map(),
    paths: new Set(),
    stalePaths: new Set(),
    unsure: false,
    states: new Map(),
    exports: new Map(),
    unverified: new Map(),
    fieldProblems: new Map(),
    uncheckedPaths: new Map(),
  };
  const note = (
    notes: Map<string, string[]>,
    key: string,
    added: readonly string[],
  ) => {
    if (added.length === 0) return;
    notes.set(key, [...(notes.get(key) ?? []), ...added]);
  };
  /** Checks one type against one export and remembers the export as wanted. */
  /**
   * Checks one type against one export and remembers the export as wanted;
   * `pending` while the export has not been read (nothing is written for the
   * type yet, and nothing already installed is removed).
   */
  const check = (
    ruleKeyText: string,
    ref: ExportRef & { shown: string },
    type: GroupVersionResource,
  ): ExportCheck | "pending" => {
    const key = exportKey(ref);
    coverage.exports.set(key, { workspace: ref.workspace, name: ref.name });
    const reading = input.exports?.get(key);
    if (input.exports !== undefined && reading === undefined) {
      coverage.unsure = true;
      return "pending";
    }
    const result = checkExported(reading, ref, type);
    if (result.ok && result.unverified !== undefined) {
      const notes = coverage.unverified.get(ruleKeyText) ?? [];
      notes.push(result.unverified);
      coverage.unverified.set(ruleKeyText, notes);
    }
    return result;
  };
  for (const { rule, cluster } of valid) {
    const key = ruleKey(cluster, rule.metadata.name);
    const rejected = (problems.get(key) ?? []).some((p) =>
      p.reason === "SelfDependency"
    );
    const states: DependencyState[] = [];
    const { dependent } = rule.spec;
    const dependentExport = {
      workspace: cluster,
      name: dependent.apiExportName,
      shown: "the rule's workspace",
    };
    const served = check(key, dependentExport, dependent);
    // Known only once the export was read and serves the dependent type.
    const schema = served !== "pending" && served.ok
      ? servedSchema(input.exports?.get(exportKey(dependentExport)), dependent)
      : undefined;
    for (const [index, dependency] of rule.spec.dependencies.entries()) {
      const path = dependency.apiExportRef.path;
      coverage.paths.add(path);
      if (served === "pending") {
        states.push({ state: "pending" });
        continue;
      }
      if (!served.ok) {
        // The dependent type does not exist: nothing can refer to anything.
        states.push({
          state: "failed",
          reason: served.reason,
          message: `spec.dependent: ${served.message}`,
        });
        continue;
      }
      if (schema !== undefined) {
        const fields = checkFieldRef(schema, dependency.fieldRef, { index });
        note(coverage.fieldProblems, key, fields.problems);
        note(coverage.uncheckedPaths, key, fields.unchecked);
      }
      const gvr = {
        group: dependency.group,
        version: dependency.version,
        resource: dependency.resource,
      };
      const resolution = input.resolutions.get(path);
      if (resolution === undefined) {
        coverage.unsure = true;
        states.push({ state: "pending" });
        continue;
      }
      if (!("cluster" in resolution)) {
        if (!resolution.definitive) coverage.unsure = true;
        states.push({
          state: "failed",
          reason: "PathNotResolved",
          message: resolution.message,
        });
        continue;
      }
      const binding = bindings.get(resolution.cluster);
      const unbound = bindingProblem(binding, {
        shown: `workspace ${path} (${resolution.cluster})`,
        exportRef: input.exportRef,
      });
      if (unbound !== undefined) {
        if (binding === undefined) coverage.stalePaths.add(path);
        states.push({ state: "failed", ...unbound });
        continue;
      }
      const exported = check(key, {
        workspace: path,
        name: dependency.apiExportRef.name,
        shown: path,
      }, gvr);
      if (exported === "pending") {
        states.push({ state: "pending" });
        continue;
      }
      if (!exported.ok) {
        states.push({
          state: "failed",
          reason: exported.reason,
          message: exported.message,
        });
        continue;
      }
      if (rejected) continue;
      states.push({ state: "ok", path, gvr });
      coverage.providerPaths.set(resolution.cluster, path);
      let types = coverage.desired.get(resolution.cluster);
      if (types === undefined) {
        types = new Map();
        coverage.desired.set(resolution.cluster, types);
      }
      types.set(gvrKey(gvr), gvr);
    }
    coverage.states.set(key, states);
  }
  return coverage;
}

/**
 * Step 4: each rule's status (left out while it would not settle yet, and
 * where the rule already shows it), and the rules counted by their Ready
 * condition.
 */
function planStatuses(
  rules: { valid: readonly ValidRule[]; invalid: readonly InvalidRule[] },
  context: {
    input: PlanInput;
    problems: ReadonlyMap<string, readonly RuleProblem[]>;
    states: ReadonlyMap<string, readonly DependencyState[]>;
    unverified: ReadonlyMap<string, readonly string[]>;
    fieldProblems: ReadonlyMap<string, readonly string[]>;
    uncheckedPaths: ReadonlyMap<string, readonly string[]>;
    pendingClusters: ReadonlySet<string>;
  },
): { statuses: StatusAction[]; ready: Map<string, number> } {
  const { input, problems } = context;
  const resolvedClusters = new Map<string, string>();
  for (const [path, resolution] of input.resolutions) {
    if ("cluster" in resolution) resolvedClusters.set(path, resolution.cluster);
  }
  const statuses: StatusAction[] = [];
  const ready = new Map<string, number>();
  const count = (condition: Condition) => {
    const label = `${condition.status}/${condition.reason}`;
    ready.set(label, (ready.get(label) ?? 0) + 1);
  };
  for (const { source, error } of rules.invalid) {
    const status = statusFor(source.object, input.now, [
      condition(WEBHOOKS_INSTALLED_CONDITION, "False", "InvalidSpec", {
        message: "nothing is installed for an invalid rule",
      }),
      condition(READY_CONDITION, "False", "InvalidSpec", { message: error }),
    ]);
    count(status.conditions![1]!);
    pushIfChanged(statuses, source, status);
  }
  for (const { source, rule, cluster } of rules.valid) {
    const key = ruleKey(cluster, rule.metadata.name);
    const ruleProblems = problems.get(key) ?? [];
    let installed: PlannedCondition;
    if (ruleProblems.some((p) => p.reason === "SelfDependency")) {
      installed = condition(
        WEBHOOKS_INSTALLED_CONDITION,
        "False",
        "SelfDependency",
        { message: "nothing is installed for a rejected rule" },
      );
    } else {
      const verdict = installationVerdict(context.states.get(key) ?? [], {
        input,
        pendingClusters: context.pendingClusters,
        resolvedClusters,
      });
      if (verdict === undefined) {
        // Settles in a later pass; meanwhile it counts as what it shows.
        const shown = currentConditions(source.object).find((c) =>
          c.type === READY_CONDITION
        );
        if (shown !== undefined) count(shown);
        continue;
      }
      installed = verdict;
    }
    const access = input.webhookAccess === undefined
      ? { missing: [], unverified: [] }
      : accessProblems(
        accessNeeded(cluster, rule),
        input.webhookAccess.readings,
        { user: input.webhookAccess.user },
      );
    const readyCondition = readyConditionFor(rule, installed, ruleProblems, {
      unverified: context.unverified.get(key) ?? [],
      cannotRead: access.missing,
      accessUnverified: access.unverified,
      fieldProblems: context.fieldProblems.get(key) ?? [],
      uncheckedPaths: context.uncheckedPaths.get(key) ?? [],
    });
    count(readyCondition);
    const status = statusFor(source.object, input.now, [
      installed,
      readyCondition,
    ]);
    pushIfChanged(statuses, source, status);
  }
  statuses.sort((a, b) =>
    a.cluster === b.cluster
      ? compareStrings(a.name, b.name)
      : compareStrings(a.cluster, b.cluster)
  );
  return { statuses, ready };
}

/**
 * Step 2b: the Locks' types join the rules' in each configuration (by type
 * and operations), with the paths and exports they need; a Lock's own
 * workspace is named by its logical cluster in the webhook URL.
 */
function mergeLocks(coverage: Coverage, placement: LockPlacement): void {
  for (const [cluster, types] of placement.desired) {
    const merged = coverage.desired.get(cluster) ?? new Map();
    for (const type of types) {
      merged.set(`lock:${gvrKey(type)}:${type.operations?.join(",")}`, type);
    }
    coverage.desired.set(cluster, merged);
    if (!coverage.providerPaths.has(cluster)) {
      coverage.providerPaths.set(
        cluster,
        placement.providerPaths.get(cluster) ?? cluster,
      );
    }
  }
  for (const path of placement.paths) coverage.paths.add(path);
  for (const [key, ref] of placement.exports) coverage.exports.set(key, ref);
  if (placement.unsure) coverage.unsure = true;
}

/**
 * Step 3: the configuration writes that give each provider the desired
 * types, each calling the webhook at `<url>/<provider path>` so that only the
 * rules about that provider's exports apply. A configuration kept only
 * because a path is unknown is left as it is.
 */
function planConfigurations(
  input: PlanInput,
  coverage: Coverage,
  bindings: Map<string, { endpoint: string; claimAccepted: boolean }>,
): { actions: ConfigurationAction[]; wanted: number } {
  const { desired, providerPaths, unsure } = coverage;
  const current = new Map<string, EndpointObject>();
  for (const source of input.configurations) {
    current.set(clusterOf(source.object), source);
  }
  const actions: ConfigurationAction[] = [];
  let wanted = 0;
  const clusters = new Set([...desired.keys(), ...current.keys()]);
  for (const cluster of [...clusters].sort()) {
    const existing = current.get(cluster);
    let types = [...(desired.get(cluster)?.values() ?? [])];
    if (unsure && existing !== undefined) {
      // Keep what is protected while any path is unknown: the
      // configuration merges the operations of duplicates.
      types = [...types, ...protectedTypesOf(existing.object)];
    }
    const path = providerPaths.get(cluster);
    const named = path === undefined ? {} : { workspace: path };
    if (types.length === 0) {
      if (existing !== undefined && !unsure) {
        actions.push({
          cluster,
          ...named,
          endpoint: existing.endpoint,
          action: "delete",
          object: existing.object,
        });
      }
      continue;
    }
    wanted++;
    if ("error" in input.settings || path === undefined) continue;
    const want = desiredWebhookConfiguration(types, {
      ...input.settings,
      url: providerUrl(input.settings.url, path),
    });
    if (existing === undefined) {
      const endpoint = bindings.get(cluster)?.endpoint;
      if (endpoint === undefined) continue;
      actions.push({
        cluster,
        workspace: path,
        endpoint,
        action: "create",
        object: want,
      });
    } else if (!webhookConfigurationUpToDate(existing.object, want)) {
      actions.push({
        cluster,
        workspace: path,
        endpoint: existing.endpoint,
        action: "update",
        object: updatedWebhookConfiguration(existing.object, want),
      });
    }
  }
  return { actions, wanted };
}

/** The WebhooksInstalled condition, or undefined while anything is pending. */
function installationVerdict(
  states: readonly DependencyState[],
  context: {
    input: PlanInput;
    pendingClusters: ReadonlySet<string>;
    resolvedClusters: ReadonlyMap<string, string>;
  },
): PlannedCondition | undefined {
  const failures: { reason: ConditionReason; message: string }[] = [];
  const installedIn = new Set<string>();
  let pending = false;
  for (const state of states) {
    if (state.state === "pending") {
      pending = true;
    } else if (state.state === "failed") {
      failures.push(state);
    } else {
      const cluster = context.resolvedClusters.get(state.path)!;
      if ("error" in context.input.settings) {
        failures.push({
          reason: "InstallFailed",
          message: context.input.settings.error,
        });
        continue;
      }
      const error = context.input.installErrors.get(cluster);
      if (context.pendingClusters.has(cluster)) {
        if (error === undefined) pending = true;
        else {
          failures.push({
            reason: "InstallFailed",
            message:
              `cannot write the webhook configuration in ${state.path}: ${error}`,
          });
        }
        continue;
      }
      installedIn.add(state.path);
    }
  }
  if (failures.length > 0) {
    return condition(
      WEBHOOKS_INSTALLED_CONDITION,
      "False",
      failures[0]!.reason,
      { message: unique(failures.map((f) => f.message)).join("; ") },
    );
  }
  if (pending) return undefined;
  return condition(WEBHOOKS_INSTALLED_CONDITION, "True", "Installed", {
    message: `the webhook is installed in ${
      [...installedIn].sort().join(", ")
    }`,
  });
}

/**
 * The Ready condition: WebhooksInstalled's reason while it is False (the
 * rule's problems added to its message), else the first of the rule's
 * problems (a cycle, then paths its dependent's schema does not have), else
 * `Enforced`, saying what could not be checked.
 */
function readyConditionFor(
  rule: DependencyRule,
  installed: PlannedCondition,
  problems: readonly RuleProblem[],
  options: {
    unverified: readonly string[];
    cannotRead: readonly string[];
    accessUnverified: readonly string[];
    fieldProblems: readonly string[];
    uncheckedPaths: readonly string[];
  },
): PlannedCondition {
  const all: { reason: ConditionReason; message: string }[] = [
    ...problems,
    ...unique(options.fieldProblems).map((message) => ({
      reason: "FieldNotInSchema" as const,
      message,
    })),
    ...unique(options.cannotRead).map((message) => ({
      reason: "WebhookCannotRead" as const,
      message,
    })),
  ];
  if (installed.status !== "True") {
    const added = [
      ...(problems[0] === undefined ? [] : [problems[0].message]),
      ...unique(options.fieldProblems),
    ];
    const message = [installed.message, ...added].join("; ");
    return condition(READY_CONDITION, "False", installed.reason, { message });
  }
  const first = all[0];
  if (first !== undefined) {
    return condition(READY_CONDITION, "False", first.reason, {
      message: all.map((p) => p.message).join("; "),
    });
  }
  const types = unique(
    rule.spec.dependencies.map((d) => `${d.resource}.${d.group}`),
  ).join(", ");
  // Types that could not be checked are protected all the same: say so.
  const unchecked = options.unverified.length === 0
    ? ""
    : `; not checked against the APIExports: ${
      unique(options.unverified).join("; ")
    }`;
  // So are paths below where the schema is open.
  const open = options.uncheckedPaths.length === 0
    ? ""
    : `; not checked against the schema: ${
      unique(options.uncheckedPaths).join("; ")
    }`;
  // And reads the webhook could not be asked about.
  const reads = options.accessUnverified.length === 0
    ? ""
    : `; not checked whether the webhook may read: ${
      unique(options.accessUnverified).join("; ")
    }`;
  return condition(READY_CONDITION, "True", "Enforced", {
    message: `deleting ${types} is denied while ${
      withArticle(rule.spec.dependent.kind)
    } in the same workspace refers to it${unchecked}${open}${reads}`,
  });
}

/**
 * Step 4b: each Lock's Ready condition, once settled: `Enforced` when the
 * configuration that covers its target is in place, why not otherwise.
 */
function planLockStatuses(
  locks: readonly EndpointObject[],
  context: {
    input: PlanInput;
    placement: LockPlacement;
    pendingClusters: ReadonlySet<string>;
  },
): { statuses: StatusAction[]; ready: Map<string, number> } {
  const { input, placement } = context;
  const statuses: StatusAction[] = [];
  const counts = new Map<string, number>();
  const count = (condition: Condition) => {
    const label = `${condition.status}/${condition.reason}`;
    counts.set(label, (counts.get(label) ?? 0) + 1);
  };
  for (const source of locks) {
    const metadata = source.object.metadata ?? {};
    const cluster = clusterOf(source.object);
    const key = lockKey(cluster, metadata.namespace ?? "", metadata.name ?? "");
    const state = placement.states.get(key);
    const lock = placement.locks.get(key);
    let ready: Condition | undefined;
    // Settles in a later pass; meanwhile it counts as what it shows.
    const unsettled = () => {
      const shown = currentConditions(source.object).find((c) =>
        c.type === READY_CONDITION
      );
      if (shown !== undefined) count(shown);
    };
    if (state === undefined || state.state === "pending") {
      unsettled();
      continue;
    }
    // Placed, but its workspace is still being asked: no status yet.
    if (state.state === "ok" && state.checking) {
      unsettled();
      continue;
    }
    if (state.state === "failed") {
      ready = lockCondition("False", state.reason, state.message);
    } else if (state.problem !== undefined) {
      ready = lockCondition(
        "False",
        state.problem.reason,
        state.problem.message,
      );
    } else if ("error" in input.settings) {
      ready = lockCondition("False", "InstallFailed", input.settings.error);
    } else if (context.pendingClusters.has(state.cluster)) {
      const error = input.installErrors.get(state.cluster);
      if (error === undefined) {
        unsettled();
        continue;
      }
      ready = lockCondition(
        "False",
        "InstallFailed",
        `cannot write the webhook configuration in ${state.shown}: ${error}`,
      );
    } else {
      const spec = lock!.spec;
      const verbs = spec.operations.map((o) =>
        o === "Update" ? "updating" : "deleting"
      ).join(" and ");
      ready = lockCondition(
        "True",
        "Enforced",
        `${verbs} ${spec.target.resource}/${spec.target.name} is denied while this Lock exists (webhook installed in ${state.shown})`,
      );
    }
    count(ready);
    const status = statusFor(source.object, input.now, [ready]);
    if (statusUpToDate(source.object, status)) continue;
    statuses.push({
      cluster,
      name: metadata.name ?? "",
      namespace: metadata.namespace ?? "",
      endpoint: source.endpoint,
      resourceVersion: metadata.resourceVersion ?? "",
      status,
    });
  }
  return { statuses, ready: counts };
}

/** A Lock's Ready condition. */
function lockCondition(
  status: Condition["status"],
  reason: LockConditionReason,
  message: string,
): Condition {
  return {
    type: READY_CONDITION,
    status,
    reason,
    message,
    lastTransitionTime: "",
  };
}

function condition(
  type: string,
  status: Condition["status"],
  reason: ConditionReason,
  options: { message: string },
): PlannedCondition {
  return {
    type,
    status,
    reason,
    message: options.message,
    lastTransitionTime: "",
  };
}

/** The status to show, keeping transition times of unchanged conditions. */
function statusFor(
  object: KubeObject,
  now: string,
  conditions: Condition[],
): DependencyRuleStatus {
  const generation = object.metadata?.generation;
  const previous = currentConditions(object);
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: conditions.map((c) => {
      const before = previous.find((p) => p.type === c.type);
      return {
        ...c,
        ...(generation === undefined ? {} : { observedGeneration: generation }),
        lastTransitionTime: before !== undefined && before.status === c.status
          ? before.lastTransitionTime
          : now,
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

function pushIfChanged(
  statuses: StatusAction[],
  source: EndpointObject,
  status: DependencyRuleStatus,
): void {
  if (statusUpToDate(source.object, status)) return;
  statuses.push({
    cluster: clusterOf(source.object),
    name: source.object.metadata?.name ?? "",
    endpoint: source.endpoint,
    resourceVersion: source.object.metadata?.resourceVersion ?? "",
    status,
  });
}

function bindingsByCluster(
  bindings: readonly EndpointObject[],
): Map<string, { endpoint: string; claimAccepted: boolean }> {
  const result = new Map<
    string,
    { endpoint: string; claimAccepted: boolean }
  >();
  for (const source of bindings) {
    const claims = (source.object.spec as {
      permissionClaims?: {
        group?: string;
        resource?: string;
        state?: string;
      }[];
    } | undefined)?.permissionClaims ?? [];
    const claimAccepted = claims.some((c) =>
      (c.group ?? "") === VWC_GROUP && c.resource === VWC_RESOURCE &&
      c.state === "Accepted"
    );
    const cluster = clusterOf(source.object);
    const known = result.get(cluster);
    // Several bindings to the export in one workspace: any accepting one counts.
    result.set(cluster, {
      endpoint: source.endpoint,
      claimAccepted: claimAccepted || (known?.claimAccepted ?? false),
    });
  }
  return result;
}

/** The group/version/resources a configuration we own protects. */
export function protectedTypesOf(object: KubeObject): ProtectedType[] {
  const webhooks = (object as {
    webhooks?: {
      rules?: {
        apiGroups?: string[];
        apiVersions?: string[];
        resources?: string[];
        operations?: string[];
      }[];
    }[];
  }).webhooks ?? [];
  const types: ProtectedType[] = [];
  for (const webhook of webhooks) {
    for (const rule of webhook.rules ?? []) {
      const operations = WEBHOOK_OPERATIONS.filter((o) =>
        (rule.operations ?? []).includes(o)
      );
      for (const group of rule.apiGroups ?? []) {
        for (const version of rule.apiVersions ?? []) {
          for (const resource of rule.resources ?? []) {
            types.push({ group, version, resource, operations });
          }
        }
      }
    }
  }
  return types;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** Every read the webhook must be allowed for the valid rules, once each. */
function uniqueAccess(valid: readonly ValidRule[]): AccessRef[] {
  const refs = new Map<string, AccessRef>();
  for (const { cluster, rule } of valid) {
    for (const ref of accessNeeded(cluster, rule)) {
      refs.set(accessKey(ref), ref);
    }
  }
  return [...refs.values()];
}
