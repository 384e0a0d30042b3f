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
import { clusterOf, type KubeObject } from "../kcp/mod.ts";
import {
  desiredWebhookConfiguration,
  updatedWebhookConfiguration,
  type WebhookClientSettings,
  webhookConfigurationUpToDate,
} from "./webhook_config.ts";

/** An object and the virtual-workspace endpoint it was read from. */
export interface Sourced {
  /** Virtual-workspace URL. */
  endpoint: string;
  /** The object. */
  object: KubeObject;
}

/** The outcome of resolving one workspace path. */
export type Resolution =
  | { cluster: string }
  | { reason: string; message: string; definitive: boolean };

/** Everything the plan is computed from. */
export interface PlanInput {
  /** Every DependencyRule, valid or not. */
  rules: readonly Sourced[];
  /** The APIBindings to the dep-ctrl export, from every endpoint. */
  bindings: readonly Sourced[];
  /** The webhook configurations we own, from every endpoint. */
  configurations: readonly Sourced[];
  /** Resolved paths; a path without an entry is still being resolved. */
  resolutions: ReadonlyMap<string, Resolution>;
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
  /** Endpoint to write through. */
  endpoint: string;
  /** The write. */
  action: "create" | "update" | "delete";
  /** The object to create or PUT (for delete: the current object). */
  object: KubeObject;
}

/** The desired status of one rule. */
export interface StatusAction {
  /** The rule's logical cluster. */
  cluster: string;
  /** The rule's name. */
  name: string;
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
  /** Paths whose cluster has no dep-ctrl binding: resolve them again, the workspace may have been recreated. */
  stalePaths: string[];
  /** Writes that make the configurations equal the desired state. */
  configurations: ConfigurationAction[];
  /** Status writes (only for rules whose status differs and is settled). */
  statuses: StatusAction[];
  /** Rules by their Ready condition's status and reason, for metrics. */
  ready: Map<string, number>;
  /** Provider clusters that keep (or get) a configuration. */
  desiredClusters: number;
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
  const valid: { source: Sourced; rule: DependencyRule; cluster: string }[] =
    [];
  const invalid: { source: Sourced; error: string }[] = [];
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
  const problems = analyzeRules(
    valid.map((v) => ({ cluster: v.cluster, rule: v.rule })),
  );
  const bindings = bindingsByCluster(input.bindings);

  // Desired protected types per provider cluster.
  const desired = new Map<string, Map<string, GroupVersionResource>>();
  const paths = new Set<string>();
  const stalePaths = new Set<string>();
  let unsure = false;
  const dependencyStates = new Map<string, DependencyState[]>();
  for (const { rule, cluster } of valid) {
    const key = ruleKey(cluster, rule.metadata.name);
    const ruleProblems = problems.get(key) ?? [];
    const rejected = ruleProblems.some((p) => p.reason === "SelfDependency");
    const states: DependencyState[] = [];
    for (const dependency of rule.spec.dependencies) {
      const path = dependency.apiExportRef.path;
      paths.add(path);
      const gvr = {
        group: dependency.group,
        version: dependency.version,
        resource: dependency.resource,
      };
      const resolution = input.resolutions.get(path);
      if (resolution === undefined) {
        unsure = true;
        states.push({ state: "pending" });
        continue;
      }
      if (!("cluster" in resolution)) {
        if (!resolution.definitive) unsure = true;
        states.push({
          state: "failed",
          reason: "PathNotResolved",
          message: resolution.message,
        });
        continue;
      }
      const binding = bindings.get(resolution.cluster);
      if (binding === undefined) {
        stalePaths.add(path);
        states.push({
          state: "failed",
          reason: "ProviderNotBound",
          message:
            `workspace ${path} (${resolution.cluster}) has not bound the APIExport ${input.exportRef}: create an APIBinding to it there that accepts the ${VWC_RESOURCE}.${VWC_GROUP} claim`,
        });
        continue;
      }
      if (!binding.claimAccepted) {
        states.push({
          state: "failed",
          reason: "ClaimNotAccepted",
          message:
            `workspace ${path} (${resolution.cluster}) binds ${input.exportRef} but has not accepted its ${VWC_RESOURCE}.${VWC_GROUP} permission claim: set state Accepted on that claim in the APIBinding`,
        });
        continue;
      }
      if (rejected) continue;
      states.push({ state: "ok", path, gvr });
      let types = desired.get(resolution.cluster);
      if (types === undefined) {
        types = new Map();
        desired.set(resolution.cluster, types);
      }
      types.set(gvrKey(gvr), gvr);
    }
    dependencyStates.set(key, states);
  }

  const { actions: configurations, wanted } = planConfigurations(
    input,
    desired,
    bindings,
    unsure,
  );
  const pendingClusters = new Set(configurations.map((c) => c.cluster));
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
  for (const { source, error } of invalid) {
    const status = statusFor(source.object, input.now, [
      condition(WEBHOOKS_INSTALLED_CONDITION, "False", "InvalidSpec", {
        message: "nothing is installed for an invalid rule",
      }),
      condition(READY_CONDITION, "False", "InvalidSpec", { message: error }),
    ]);
    count(status.conditions![1]!);
    pushIfChanged(statuses, source, status);
  }
  for (const { source, rule, cluster } of valid) {
    const key = ruleKey(cluster, rule.metadata.name);
    const ruleProblems = problems.get(key) ?? [];
    const self = ruleProblems.filter((p) => p.reason === "SelfDependency");
    let installed: PlannedCondition;
    if (self.length > 0) {
      installed = condition(
        WEBHOOKS_INSTALLED_CONDITION,
        "False",
        "SelfDependency",
        { message: "nothing is installed for a rejected rule" },
      );
    } else {
      const states = dependencyStates.get(key) ?? [];
      const verdict = installationVerdict(states, {
        input,
        pendingClusters,
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
    const readyCondition = readyConditionFor(rule, installed, ruleProblems);
    count(readyCondition);
    const status = statusFor(source.object, input.now, [
      installed,
      readyCondition,
    ]);
    pushIfChanged(statuses, source, status);
  }
  return {
    paths: [...paths].sort(),
    stalePaths: [...stalePaths].sort(),
    configurations,
    statuses: statuses.sort((a, b) =>
      a.cluster === b.cluster
        ? compare(a.name, b.name)
        : compare(a.cluster, b.cluster)
    ),
    ready,
    desiredClusters: wanted,
  };
}

function planConfigurations(
  input: PlanInput,
  desired: Map<string, Map<string, GroupVersionResource>>,
  bindings: Map<string, { endpoint: string; claimAccepted: boolean }>,
  unsure: boolean,
): { actions: ConfigurationAction[]; wanted: number } {
  const current = new Map<string, Sourced>();
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
      // Keep what is protected while any path is unknown.
      const merged = new Map(types.map((t) => [gvrKey(t), t]));
      for (const t of protectedTypesOf(existing.object)) {
        merged.set(gvrKey(t), t);
      }
      types = [...merged.values()];
    }
    if (types.length === 0) {
      if (existing !== undefined && !unsure) {
        actions.push({
          cluster,
          endpoint: existing.endpoint,
          action: "delete",
          object: existing.object,
        });
      }
      continue;
    }
    wanted++;
    if ("error" in input.settings) continue;
    const want = desiredWebhookConfiguration(types, input.settings);
    if (existing === undefined) {
      const endpoint = bindings.get(cluster)?.endpoint;
      if (endpoint === undefined) continue;
      actions.push({ cluster, endpoint, action: "create", object: want });
    } else if (!webhookConfigurationUpToDate(existing.object, want)) {
      actions.push({
        cluster,
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

function readyConditionFor(
  rule: DependencyRule,
  installed: PlannedCondition,
  problems: readonly RuleProblem[],
): PlannedCondition {
  const first = problems[0];
  if (installed.status !== "True") {
    const message = first === undefined
      ? installed.message
      : `${installed.message}; ${first.message}`;
    return condition(READY_CONDITION, "False", installed.reason, { message });
  }
  if (first !== undefined) {
    return condition(READY_CONDITION, "False", first.reason, {
      message: problems.map((p) => p.message).join("; "),
    });
  }
  const types = unique(
    rule.spec.dependencies.map((d) => `${d.resource}.${d.group}`),
  ).join(", ");
  return condition(READY_CONDITION, "True", "Enforced", {
    message:
      `deleting ${types} is denied while a ${rule.spec.dependent.kind} in the same workspace refers to it`,
  });
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
    typeof c === "object" && c !== null && typeof c.type === "string" &&
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
  source: Sourced,
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
  bindings: readonly Sourced[],
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
export function protectedTypesOf(object: KubeObject): GroupVersionResource[] {
  const webhooks = (object as {
    webhooks?: {
      rules?: {
        apiGroups?: string[];
        apiVersions?: string[];
        resources?: string[];
      }[];
    }[];
  }).webhooks ?? [];
  const types: GroupVersionResource[] = [];
  for (const webhook of webhooks) {
    for (const rule of webhook.rules ?? []) {
      for (const group of rule.apiGroups ?? []) {
        for (const version of rule.apiVersions ?? []) {
          for (const resource of rule.resources ?? []) {
            types.push({ group, version, resource });
          }
        }
      }
    }
  }
  return types;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
