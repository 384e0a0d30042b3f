/**
 * One rule's part of the rules' coverage (`rule_plan.ts`): where each of
 * its dependencies' providers is, what each one's state is, which types it
 * protects where, and what its status must note. Computed from the rule and
 * a few lookups in the plan's inputs (the rule's problems, the exports it
 * names, the paths they are in, the bindings there), and kept per rule
 * object with the answers of those lookups, in the memo of whoever runs
 * the passes ({@linkcode CoverMemo}): a pass reuses it while every
 * lookup answers the same (the same objects: the caches replace an answer
 * when it changes), so that a pass over thousands of rules of which few
 * changed costs little more than the lookups.
 *
 * @module
 */
import {
  type ConditionReason,
  type Dependency,
  type DependencyRule,
  type GroupVersionResource,
  gvrKey,
  ruleKey,
  type RuleProblem,
} from "../rules/mod.ts";
import {
  checkExported,
  checkFieldRef,
  checkOwnerFieldRef,
  type ExportCheck,
  exportKey,
  type ExportReading,
  type ExportRef,
  type PathCheckMemo,
  servedSchema,
} from "../exports/mod.ts";
import { bindingProblem, type BoundCluster } from "./binding_check.ts";
import type { Resolution } from "./path_cache.ts";
import type { ProtectedType } from "./webhook_config.ts";

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
  /**
   * Per rule key: the field paths the object they are read on does not have
   * (`FieldNotInSchema`).
   */
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
  /** The covers earlier passes computed, kept by whoever runs the passes (`PlanMemo`). */
  memo: CoverMemo;
}

/**
 * What {@linkcode coverOf} remembers between passes: each rule object's
 * last cover, with the lookups it was computed from, and the checks of
 * field paths in each schema ({@linkcode PathCheckMemo}).
 */
export interface CoverMemo extends PathCheckMemo {
  /** Each rule object's last cover. */
  readonly covers: WeakMap<DependencyRule, KeptCover>;
}

/** What one rule adds to the coverage. */
export interface RuleCover {
  /** The rule's key. */
  key: string;
  /** The paths its dependencies name. */
  paths: string[];
  /** The exports it names, by `exportKey`. */
  exports: [string, ExportRef][];
  /** Whether a path or export it names is not known for certain. */
  unsure: boolean;
  /** Its paths whose cluster has no dep-ctrl binding. */
  stale: string[];
  /** Its dependencies' states. */
  states: DependencyState[];
  /** Why some of its types could not be checked. */
  unverified: string[];
  /**
   * Its field paths that the object they are read on does not have: the
   * dependent's schema, or the metadata of the protected object or its
   * Namespace (`from: Target`, `TargetNamespace`).
   */
  fieldProblems: string[];
  /** Its field paths checked only down to where the schema is open. */
  uncheckedPaths: string[];
  /** The types it protects, by provider cluster (with `gvrKey`). */
  protects: {
    cluster: string;
    path: string;
    gvrKey: string;
    gvr: GroupVersionResource;
  }[];
}

/** A lookup a cover was computed from, with its answer. */
export type CoverLookup =
  | { of: "problems"; key: string; answer: readonly RuleProblem[] | undefined }
  | { of: "export"; key: string; answer: ExportReading | undefined }
  | { of: "resolution"; key: string; answer: Resolution | undefined }
  | { of: "binding"; key: string; answer: BoundCluster | undefined };

/** A cover, and what it was computed from. */
export interface KeptCover {
  /** The rule's logical cluster. */
  cluster: string;
  /** `<path>:<name>` of the dep-ctrl export, as the messages name it. */
  exportRef: string;
  /** Whether exports were checked at all (`context.exports` given). */
  checked: boolean;
  /** The lookups made, in order, with their answers. */
  lookups: CoverLookup[];
  /** The cover. */
  cover: RuleCover;
}

/**
 * The cover of `rule` in `cluster`: the one `context.memo` keeps for the
 * rule object while every lookup it was computed from answers the same,
 * else a new one (then kept).
 */
export function coverOf(
  rule: DependencyRule,
  cluster: string,
  context: RuleCoverageContext,
): RuleCover {
  const checked = context.exports !== undefined;
  const kept = context.memo.covers.get(rule);
  if (
    kept !== undefined && kept.cluster === cluster &&
    kept.exportRef === context.exportRef && kept.checked === checked &&
    kept.lookups.every((lookup) => answersSame(lookup, context))
  ) {
    return kept.cover;
  }
  const walk = new Walk(context, ruleKey(cluster, rule.metadata.name));
  coverRule(walk, rule, cluster);
  context.memo.covers.set(rule, {
    cluster,
    exportRef: context.exportRef,
    checked,
    lookups: walk.lookups,
    cover: walk.cover,
  });
  return walk.cover;
}

/** A coverage of no rule, for {@linkcode addCover} to fill. */
export function emptyCoverage(): RuleCoverage {
  return {
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
}

/** Adds a rule's cover to the coverage. */
export function addCover(coverage: RuleCoverage, cover: RuleCover): void {
  const { key } = cover;
  for (const path of cover.paths) coverage.paths.add(path);
  for (const [exportKey, ref] of cover.exports) {
    if (!coverage.exports.has(exportKey)) coverage.exports.set(exportKey, ref);
  }
  if (cover.unsure) coverage.unsure = true;
  for (const path of cover.stale) coverage.stalePaths.add(path);
  coverage.states.set(key, cover.states);
  appendNotes(coverage.unverified, key, cover.unverified);
  appendNotes(coverage.fieldProblems, key, cover.fieldProblems);
  appendNotes(coverage.uncheckedPaths, key, cover.uncheckedPaths);
  for (const { cluster, path, gvrKey, gvr } of cover.protects) {
    coverage.providerPaths.set(cluster, path);
    let types = coverage.desired.get(cluster);
    if (types === undefined) {
      types = new Map();
      coverage.desired.set(cluster, types);
    }
    types.set(gvrKey, gvr);
  }
}

/** Whether a lookup answers now what it answered then. */
function answersSame(
  lookup: CoverLookup,
  context: RuleCoverageContext,
): boolean {
  switch (lookup.of) {
    case "problems":
      return context.problems.get(lookup.key) === lookup.answer;
    case "export":
      return context.exports?.get(lookup.key) === lookup.answer;
    case "resolution":
      return context.resolutions.get(lookup.key) === lookup.answer;
    case "binding": {
      const now = context.bindings.get(lookup.key);
      const then = lookup.answer;
      // The bindings are read anew at every pass: compare what is read of them.
      return now === then ||
        (now !== undefined && then !== undefined &&
          now.endpoint === then.endpoint &&
          now.claimAccepted === then.claimAccepted &&
          now.claimShortfall === then.claimShortfall);
    }
  }
}

/** A cover being computed, and the lookups made for it. */
class Walk {
  readonly context: RuleCoverageContext;
  readonly lookups: CoverLookup[] = [];
  readonly cover: RuleCover;

  constructor(context: RuleCoverageContext, key: string) {
    this.context = context;
    this.cover = {
      key,
      paths: [],
      exports: [],
      unsure: false,
      stale: [],
      states: [],
      unverified: [],
      fieldProblems: [],
      uncheckedPaths: [],
      protects: [],
    };
  }

  problems(key: string): readonly RuleProblem[] | undefined {
    const answer = this.context.problems.get(key);
    this.lookups.push({ of: "problems", key, answer });
    return answer;
  }

  exportReading(key: string): ExportReading | undefined {
    const answer = this.context.exports?.get(key);
    this.lookups.push({ of: "export", key, answer });
    return answer;
  }

  resolution(path: string): Resolution | undefined {
    const answer = this.context.resolutions.get(path);
    this.lookups.push({ of: "resolution", key: path, answer });
    return answer;
  }

  binding(cluster: string): BoundCluster | undefined {
    const answer = this.context.bindings.get(cluster);
    this.lookups.push({ of: "binding", key: cluster, answer });
    return answer;
  }
}

/** One rule: its dependencies' states, and the types it protects. */
function coverRule(walk: Walk, rule: DependencyRule, cluster: string): void {
  const { cover } = walk;
  const { key } = cover;
  const rejected = (walk.problems(key) ?? []).some((p) =>
    p.reason === "SelfDependency"
  );
  const { dependent } = rule.spec;
  const dependentExport = {
    workspace: cluster,
    name: dependent.apiExportName,
    shown: "the rule's workspace",
  };
  const served = checkExport(walk, { ref: dependentExport, type: dependent });
  // Known only once the export was read and serves the dependent type.
  const schema = served !== "pending" && served.ok
    ? servedSchema(walk.exportReading(exportKey(dependentExport)), dependent)
    : undefined;
  for (const [index, dependency] of rule.spec.dependencies.entries()) {
    cover.paths.push(dependency.apiExportRef.path);
    // Read on the protected object or its Namespace: only their metadata,
    // which needs no schema (every object's is ObjectMeta).
    const onDependent = (dependency.fieldRef.from ?? "Dependent") ===
      "Dependent";
    if (!onDependent) {
      const fields = checkOwnerFieldRef(dependency.fieldRef, { index });
      cover.fieldProblems.push(...fields.problems);
      cover.uncheckedPaths.push(...fields.unchecked);
    }
    if (served === "pending") {
      cover.states.push({ state: "pending" });
      continue;
    }
    if (!served.ok) {
      // The dependent type does not exist: nothing can refer to anything.
      cover.states.push({
        state: "failed",
        reason: served.reason,
        message: `spec.dependent: ${served.message}`,
      });
      continue;
    }
    if (onDependent && schema !== undefined) {
      const fields = checkFieldRef(schema, dependency.fieldRef, {
        index,
        memo: walk.context.memo,
      });
      cover.fieldProblems.push(...fields.problems);
      cover.uncheckedPaths.push(...fields.unchecked);
    }
    const state = dependencyState(walk, dependency);
    if (state.state === "ok") {
      if (rejected) continue;
      cover.protects.push({
        cluster: state.cluster,
        path: state.path,
        gvrKey: gvrKey(state.gvr),
        gvr: state.gvr,
      });
    }
    cover.states.push(state);
  }
}

/**
 * Where one dependency's provider is, checked in order: its path resolves,
 * the workspace binds the dep-ctrl export and accepts the claim, and the
 * export it names serves the type.
 */
function dependencyState(
  walk: Walk,
  dependency: Dependency,
): DependencyState {
  const { context, cover } = walk;
  const path = dependency.apiExportRef.path;
  const gvr = {
    group: dependency.group,
    version: dependency.version,
    resource: dependency.resource,
  };
  const resolution = walk.resolution(path);
  if (resolution === undefined) {
    cover.unsure = true;
    return { state: "pending" };
  }
  if (!("cluster" in resolution)) {
    if (!resolution.definitive) cover.unsure = true;
    return {
      state: "failed",
      reason: "PathNotResolved",
      message: resolution.message,
    };
  }
  const binding = walk.binding(resolution.cluster);
  const unbound = bindingProblem(binding, {
    shown: `workspace ${path} (${resolution.cluster})`,
    exportRef: context.exportRef,
  });
  if (unbound !== undefined) {
    if (binding === undefined) cover.stale.push(path);
    return { state: "failed", ...unbound };
  }
  const ref = {
    workspace: path,
    name: dependency.apiExportRef.name,
    shown: path,
  };
  const exported = checkExport(walk, { ref, type: gvr });
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
  options: { ref: ExportRef & { shown: string }; type: GroupVersionResource },
): ExportCheck | "pending" {
  const { context, cover } = walk;
  const { ref } = options;
  const refKey = exportKey(ref);
  cover.exports.push([refKey, { workspace: ref.workspace, name: ref.name }]);
  const reading = walk.exportReading(refKey);
  if (context.exports !== undefined && reading === undefined) {
    cover.unsure = true;
    return "pending";
  }
  const result = checkExported(reading, ref, options.type);
  if (result.ok && result.unverified !== undefined) {
    cover.unverified.push(result.unverified);
  }
  return result;
}

/** Adds `notes` to the rule's notes in `map` (none: nothing changes). */
function appendNotes(
  map: Map<string, string[]>,
  key: string,
  notes: string[],
): void {
  if (notes.length === 0) return;
  const before = map.get(key);
  map.set(key, before === undefined ? notes : [...before, ...notes]);
}
