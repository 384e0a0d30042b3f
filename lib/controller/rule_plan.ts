/**
 * The rules' part of the plan: which rule objects are valid, and for every
 * dependency of every valid rule where its provider is (resolved path,
 * binding, accepted claim) and so which types each provider's configuration
 * must protect, with what the rule's status must say about each dependency.
 * Pure, like the rest of the plan.
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
 * @module
 */
import {
  analyzeRules,
  type ConditionReason,
  type Dependency,
  type DependencyRule,
  type DependencyRuleParseResult,
  type GroupVersionResource,
  gvrKey,
  ruleKey,
  type RuleProblem,
} from "../rules/mod.ts";
import { clusterOf, type EndpointObject, type KubeObject } from "../kcp/mod.ts";
import {
  checkExported,
  checkFieldRef,
  type ExportCheck,
  exportKey,
  type ExportReading,
  type ExportRef,
  servedSchema,
} from "../exports/mod.ts";
import { bindingProblem, type BoundCluster } from "./binding_check.ts";
import type { Resolution } from "./path_cache.ts";
import { accessKey, accessNeeded, type AccessRef } from "./webhook_access.ts";
import type { ProtectedType } from "./webhook_config.ts";

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

/** One dependency's state, for status. */
export type DependencyState =
  | {
    state: "ok";
    /** The provider's workspace path. */
    path: string;
    /** The logical cluster it resolved to, whose configuration protects `gvr`. */
    cluster: string;
    gvr: GroupVersionResource;
  }
  | { state: "pending" }
  | { state: "failed"; reason: ConditionReason; message: string };

/** What the rules ask to protect where, and each dependency's state. */
export interface RuleCoverage {
  /** Desired protected types per provider cluster, by `gvrKey`. */
  desired: Map<string, Map<string, ProtectedType>>;
  /** The workspace path each provider cluster of `desired` was named by. */
  providerPaths: Map<string, string>;
  /** Every path a valid rule names. */
  paths: Set<string>;
  /** Paths whose cluster has no dep-ctrl binding. */
  stalePaths: Set<string>;
  /** Whether any path or export is not known for certain (then nothing is dropped). */
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

/** What {@linkcode planRuleCoverage} is computed from. */
export interface RuleCoverageContext {
  /** Resolved paths; a path without an entry is still being resolved. */
  resolutions: ReadonlyMap<string, Resolution>;
  /** The dep-ctrl bindings by logical cluster. */
  bindings: ReadonlyMap<string, BoundCluster>;
  /** What the APIExports serve, by `exportKey`; absent: nothing checked. */
  exports?: ReadonlyMap<string, ExportReading> | undefined;
  /** `<path>:<name>` of the dep-ctrl export, for messages. */
  exportRef: string;
  /** The rules' problems (`analyzeRules`), by rule key. */
  problems: ReadonlyMap<string, readonly RuleProblem[]>;
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

/** Validates every rule object with `parse`, and finds what is wrong between the valid ones. */
export function parseRules(
  rules: readonly EndpointObject[],
  parse: (object: KubeObject) => DependencyRuleParseResult,
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
  const problems = analyzeRules(
    valid.map((v) => ({ cluster: v.cluster, rule: v.rule })),
  );
  return { valid, invalid, problems };
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
  const walk: Walk = {
    context,
    coverage: {
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
    },
  };
  for (const rule of valid) coverRule(walk, rule);
  return walk.coverage;
}

/** Every read the webhook must be allowed for the valid rules, once each. */
export function accessNeededBy(valid: readonly ValidRule[]): AccessRef[] {
  const refs = new Map<string, AccessRef>();
  for (const { cluster, rule } of valid) {
    for (const ref of accessNeeded(cluster, rule)) {
      refs.set(accessKey(ref), ref);
    }
  }
  return [...refs.values()];
}

/** The coverage being filled in, and what it is computed from. */
interface Walk {
  context: RuleCoverageContext;
  coverage: RuleCoverage;
}

/** One rule: its dependencies' states, and the types it protects. */
function coverRule(walk: Walk, { rule, cluster }: ValidRule): void {
  const { context, coverage } = walk;
  const key = ruleKey(cluster, rule.metadata.name);
  const rejected = (context.problems.get(key) ?? []).some((p) =>
    p.reason === "SelfDependency"
  );
  const { dependent } = rule.spec;
  const dependentExport = {
    workspace: cluster,
    name: dependent.apiExportName,
    shown: "the rule's workspace",
  };
  const served = checkExport(walk, {
    key,
    ref: dependentExport,
    type: dependent,
  });
  // Known only once the export was read and serves the dependent type.
  const schema = served !== "pending" && served.ok
    ? servedSchema(context.exports?.get(exportKey(dependentExport)), dependent)
    : undefined;
  const states: DependencyState[] = [];
  for (const [index, dependency] of rule.spec.dependencies.entries()) {
    coverage.paths.add(dependency.apiExportRef.path);
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
      appendNotes(coverage.fieldProblems, { key, notes: fields.problems });
      appendNotes(coverage.uncheckedPaths, { key, notes: fields.unchecked });
    }
    const state = dependencyState(walk, { key, dependency });
    if (state.state === "ok") {
      if (rejected) continue;
      protect(coverage, state);
    }
    states.push(state);
  }
  coverage.states.set(key, states);
}

/**
 * Where one dependency's provider is, checked in order: its path resolves,
 * the workspace binds the dep-ctrl export and accepts the claim, and the
 * export it names serves the type.
 */
function dependencyState(
  walk: Walk,
  options: { key: string; dependency: Dependency },
): DependencyState {
  const { context, coverage } = walk;
  const { key, dependency } = options;
  const path = dependency.apiExportRef.path;
  const gvr = {
    group: dependency.group,
    version: dependency.version,
    resource: dependency.resource,
  };
  const resolution = context.resolutions.get(path);
  if (resolution === undefined) {
    coverage.unsure = true;
    return { state: "pending" };
  }
  if (!("cluster" in resolution)) {
    if (!resolution.definitive) coverage.unsure = true;
    return {
      state: "failed",
      reason: "PathNotResolved",
      message: resolution.message,
    };
  }
  const binding = context.bindings.get(resolution.cluster);
  const unbound = bindingProblem(binding, {
    shown: `workspace ${path} (${resolution.cluster})`,
    exportRef: context.exportRef,
  });
  if (unbound !== undefined) {
    if (binding === undefined) coverage.stalePaths.add(path);
    return { state: "failed", ...unbound };
  }
  const ref = {
    workspace: path,
    name: dependency.apiExportRef.name,
    shown: path,
  };
  const exported = checkExport(walk, { key, ref, type: gvr });
  if (exported === "pending") return { state: "pending" };
  if (!exported.ok) {
    return {
      state: "failed",
      reason: exported.reason,
      message: exported.message,
    };
  }
  return { state: "ok", path, cluster: resolution.cluster, gvr };
}

/**
 * Checks one type against one export and remembers the export as wanted;
 * `pending` while the export has not been read (nothing is written for the
 * type yet, and nothing already installed is removed).
 */
function checkExport(
  walk: Walk,
  options: {
    key: string;
    ref: ExportRef & { shown: string };
    type: GroupVersionResource;
  },
): ExportCheck | "pending" {
  const { context, coverage } = walk;
  const { ref } = options;
  const refKey = exportKey(ref);
  coverage.exports.set(refKey, { workspace: ref.workspace, name: ref.name });
  const reading = context.exports?.get(refKey);
  if (context.exports !== undefined && reading === undefined) {
    coverage.unsure = true;
    return "pending";
  }
  const result = checkExported(reading, ref, options.type);
  if (result.ok && result.unverified !== undefined) {
    appendNotes(coverage.unverified, {
      key: options.key,
      notes: [result.unverified],
    });
  }
  return result;
}

/** Protects the type of a dependency in its provider's configuration. */
function protect(
  coverage: RuleCoverage,
  state: Extract<DependencyState, { state: "ok" }>,
): void {
  coverage.providerPaths.set(state.cluster, state.path);
  let types = coverage.desired.get(state.cluster);
  if (types === undefined) {
    types = new Map();
    coverage.desired.set(state.cluster, types);
  }
  types.set(gvrKey(state.gvr), state.gvr);
}

/** Adds `notes` to the rule's notes in `map` (none: nothing changes). */
function appendNotes(
  map: Map<string, string[]>,
  options: { key: string; notes: readonly string[] },
): void {
  if (options.notes.length === 0) return;
  map.set(options.key, [...(map.get(options.key) ?? []), ...options.notes]);
}
