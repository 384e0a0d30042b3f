/**
 * The graph of the DependencyRules: a node per type, an edge per rule
 * dependency from the dependent type to the type it protects, with the
 * rule's field, switch and readiness, and the cycles of types the rules make
 * together ({@linkcode buildGraph}); and its plain JSON form
 * ({@linkcode graphJson}).
 *
 * @example Usage
 * ```ts
 * import { buildGraph, graphJson } from "./model.ts";
 *
 * const graph = buildGraph([]);
 * JSON.stringify(graphJson(graph)); // {"kind":"DependencyGraph","version":1,...}
 * ```
 *
 * @module
 */
import {
  type DependencyRule,
  READY_CONDITION,
  type ReferenceSource,
  ruleKey,
  typeCycles,
  typeName,
} from "../rules/mod.ts";
import { compareStrings, isRecord } from "../runtime/mod.ts";

/** A rule to draw, with where it lives. */
export interface GraphRuleInput {
  /** The rule's logical cluster. */
  cluster: string;
  /** Its workspace path, when known (such as `root:providers:compute`). */
  workspace?: string;
  /** The rule. */
  rule: DependencyRule;
}

/** A type: a dependent type, a protected type, or both. */
export interface GraphNode {
  /** `<resource>.<group>`, such as `vpcs.network.example.com`. */
  id: string;
  /** API group. */
  group: string;
  /** Plural resource. */
  resource: string;
  /**
   * The kinds rules name for it, sorted; only a dependent names its kind,
   * so a type that is only protected has none.
   */
  kinds: string[];
  /**
   * The APIExports seen for it, as `<path>:<name>`, sorted: a dependency's
   * `apiExportRef`, and a dependent's `apiExportName` in the rule's
   * workspace (its logical cluster when the workspace is not known).
   */
  exports: string[];
  /** How many Locks there are on objects of this type. */
  locks: number;
}

/** One dependency of one rule: the dependent type protects the other. */
export interface GraphEdge {
  /** `<ruleKey>#<index into spec.dependencies>`. */
  id: string;
  /** The rule's key, `<cluster>/<name>` (see `ruleKey`). */
  rule: string;
  /** The rule's name. */
  ruleName: string;
  /** The rule's logical cluster. */
  cluster: string;
  /** The rule's workspace path, when known. */
  workspace?: string;
  /** Node id of the dependent type (it depends on and protects `to`). */
  from: string;
  /** Node id of the protected type. */
  to: string;
  /** Which object holds the reference (`fieldRef.from`, default `Dependent`). */
  source: ReferenceSource;
  /** `fieldRef.path`. */
  path: string;
  /** `fieldRef.namespacePath`, when set. */
  namespacePath?: string;
  /** The rule's `spec.when`, when set. */
  when?: string;
  /** The rule's `spec.protectWhile` (default `Exists`). */
  protectWhile: "Exists" | "Active";
  /** The status of the rule's Ready condition, `Unknown` when it has none. */
  ready: "True" | "False" | "Unknown";
  /** The Ready condition's reason when it is not `True` and has one. */
  reason?: string;
  /**
   * Whether the edge lies on a cycle of types: both ends are in one
   * strongly connected component of more than one type.
   */
  inCycle: boolean;
  /** Whether the dependency is on the rule's own dependent type. */
  selfDependency: boolean;
}

/** The whole graph, in a deterministic order. */
export interface DependencyGraph {
  /** The types, by id. */
  nodes: GraphNode[];
  /** The rule dependencies, by rule key and then dependency index. */
  edges: GraphEdge[];
  /** The node ids of each cycle of types, sorted; by their first id. */
  cycles: string[][];
}

/** Options of {@linkcode buildGraph}. */
export interface BuildGraphOptions {
  /**
   * The number of Locks per node id. Only types that rules name become
   * nodes: counts for other types are not shown.
   */
  locks?: ReadonlyMap<string, number>;
}

/**
 * The graph of `rules`, the same for any order of them.
 *
 * @param rules The rules with their logical clusters. Keys are expected to
 * be distinct; when one repeats, the last entry counts (as for
 * `analyzeRules`).
 * @param options The Lock count per node id.
 * @returns Nodes sorted by id, edges by rule key and dependency index, and
 * the cycles of types.
 */
export function buildGraph(
  rules: readonly GraphRuleInput[],
  options: BuildGraphOptions = {},
): DependencyGraph {
  const byKey = new Map<string, GraphRuleInput>();
  for (const entry of rules) {
    byKey.set(ruleKey(entry.cluster, entry.rule.metadata.name), entry);
  }
  const keys = [...byKey.keys()].sort(compareStrings);

  const cycles = typeCycles(keys.map((key) => byKey.get(key)!));
  const cycleOf = new Map<string, number>();
  cycles.forEach((types, index) => {
    for (const type of types) cycleOf.set(type, index);
  });

  const nodes = new Map<string, NodeParts>();
  const edges: GraphEdge[] = [];
  for (const key of keys) {
    const entry = byKey.get(key)!;
    const { dependent, dependencies } = entry.rule.spec;
    const own = _node(nodes, dependent);
    own.kinds.add(dependent.kind);
    own.exports.add(
      `${entry.workspace ?? entry.cluster}:${dependent.apiExportName}`,
    );
    for (const dependency of dependencies) {
      const { path, name } = dependency.apiExportRef;
      _node(nodes, dependency).exports.add(`${path}:${name}`);
    }
    edges.push(..._edges(key, entry, cycleOf));
  }

  const locks = options.locks ?? new Map<string, number>();
  const nodeList = [...nodes.keys()].sort(compareStrings).map(
    (id): GraphNode => {
      const parts = nodes.get(id)!;
      return {
        id,
        group: parts.group,
        resource: parts.resource,
        kinds: [...parts.kinds].sort(compareStrings),
        exports: [...parts.exports].sort(compareStrings),
        locks: locks.get(id) ?? 0,
      };
    },
  );
  return { nodes: nodeList, edges, cycles };
}

/**
 * The node id of a type: `<resource>.<group>`, the resource alone for the
 * core group; the names `analyzeRules` gives types.
 */
export function nodeId(group: string, resource: string): string {
  return typeName({ group, resource });
}

/** The `version` of {@linkcode graphJson}'s document. */
export const GRAPH_JSON_VERSION = 1;

/** A node in {@linkcode DependencyGraphJson}. */
export interface GraphNodeJson {
  /** See {@linkcode GraphNode.id}. */
  id: string;
  /** API group. */
  group: string;
  /** Plural resource. */
  resource: string;
  /** See {@linkcode GraphNode.kinds}. */
  kinds: string[];
  /** See {@linkcode GraphNode.exports}. */
  exports: string[];
  /** The number of Locks on objects of the type. */
  locks: number;
}

/** An edge in {@linkcode DependencyGraphJson}: absent values are `null`. */
export interface GraphEdgeJson {
  /** `<cluster>/<name>#<dependency index>`. */
  id: string;
  /** `<cluster>/<name>`. */
  rule: string;
  /** The rule's name. */
  ruleName: string;
  /** The rule's logical cluster. */
  cluster: string;
  /** The rule's workspace path, `null` when not known. */
  workspace: string | null;
  /** Node id of the dependent type. */
  from: string;
  /** Node id of the protected type. */
  to: string;
  /** `Dependent`, `Target` or `TargetNamespace`. */
  source: ReferenceSource;
  /** `fieldRef.path`. */
  path: string;
  /** `fieldRef.namespacePath`, or `null`. */
  namespacePath: string | null;
  /** The rule's `spec.when`, or `null`. */
  when: string | null;
  /** `Exists` or `Active`. */
  protectWhile: "Exists" | "Active";
  /** The Ready condition's status. */
  ready: "True" | "False" | "Unknown";
  /** Its reason when not `True`, or `null`. */
  reason: string | null;
  /** Whether the edge lies on a cycle of types. */
  inCycle: boolean;
  /** Whether it protects its own dependent type. */
  selfDependency: boolean;
}

/**
 * The JSON document of a graph: `kind` is always `DependencyGraph`,
 * `version` is {@linkcode GRAPH_JSON_VERSION} (raised only when a field
 * changes its meaning or goes away; new fields may appear in any version).
 * Every key is always present, absent optional values are `null`.
 */
export interface DependencyGraphJson {
  /** Always `DependencyGraph`. */
  kind: "DependencyGraph";
  /** {@linkcode GRAPH_JSON_VERSION}. */
  version: number;
  /** The types, by id. */
  nodes: GraphNodeJson[];
  /** The rule dependencies, by rule key and dependency index. */
  edges: GraphEdgeJson[];
  /** The node ids of each cycle of types. */
  cycles: string[][];
}

/**
 * `graph` as a plain JSON value ({@linkcode DependencyGraphJson}), with a
 * fixed key order so that the same graph always serialises the same.
 */
export function graphJson(graph: DependencyGraph): DependencyGraphJson {
  return {
    kind: "DependencyGraph",
    version: GRAPH_JSON_VERSION,
    nodes: graph.nodes.map((node) => ({
      id: node.id,
      group: node.group,
      resource: node.resource,
      kinds: [...node.kinds],
      exports: [...node.exports],
      locks: node.locks,
    })),
    edges: graph.edges.map((edge) => ({
      id: edge.id,
      rule: edge.rule,
      ruleName: edge.ruleName,
      cluster: edge.cluster,
      workspace: edge.workspace ?? null,
      from: edge.from,
      to: edge.to,
      source: edge.source,
      path: edge.path,
      namespacePath: edge.namespacePath ?? null,
      when: edge.when ?? null,
      protectWhile: edge.protectWhile,
      ready: edge.ready,
      reason: edge.reason ?? null,
      inCycle: edge.inCycle,
      selfDependency: edge.selfDependency,
    })),
    cycles: graph.cycles.map((cycle) => [...cycle]),
  };
}

/**
 * The edges of one rule, by dependency index.
 *
 * @param key The rule's key.
 * @param entry The rule.
 * @param cycleOf For each type on a cycle, the index of its cycle.
 */
function _edges(
  key: string,
  entry: GraphRuleInput,
  cycleOf: ReadonlyMap<string, number>,
): GraphEdge[] {
  const { spec, metadata, status } = entry.rule;
  const from = nodeId(spec.dependent.group, spec.dependent.resource);
  const ready = _ready(status);
  return spec.dependencies.map((dependency, index): GraphEdge => {
    const to = nodeId(dependency.group, dependency.resource);
    const { fieldRef } = dependency;
    const cycle = cycleOf.get(from);
    return {
      id: `${key}#${index}`,
      rule: key,
      ruleName: metadata.name,
      cluster: entry.cluster,
      ...(entry.workspace === undefined ? {} : { workspace: entry.workspace }),
      from,
      to,
      source: fieldRef.from ?? "Dependent",
      path: fieldRef.path,
      ...(fieldRef.namespacePath === undefined
        ? {}
        : { namespacePath: fieldRef.namespacePath }),
      ...(spec.when === undefined ? {} : { when: spec.when }),
      protectWhile: spec.protectWhile ?? "Exists",
      ready: ready.status,
      ...(ready.reason === undefined ? {} : { reason: ready.reason }),
      inCycle: from !== to && cycle !== undefined &&
        cycleOf.get(to) === cycle,
      selfDependency: from === to,
    };
  });
}

/** A node while the graph is being built. */
interface NodeParts {
  group: string;
  resource: string;
  kinds: Set<string>;
  exports: Set<string>;
}

function _node(
  nodes: Map<string, NodeParts>,
  type: { group: string; resource: string },
): NodeParts {
  const id = nodeId(type.group, type.resource);
  let parts = nodes.get(id);
  if (parts === undefined) {
    parts = {
      group: type.group,
      resource: type.resource,
      kinds: new Set(),
      exports: new Set(),
    };
    nodes.set(id, parts);
  }
  return parts;
}

/**
 * The Ready condition of a rule's status, read leniently (the status is not
 * validated): `Unknown` without a reason when there is none.
 */
function _ready(
  status: unknown,
): { status: "True" | "False" | "Unknown"; reason?: string } {
  if (!isRecord(status) || !Array.isArray(status.conditions)) {
    return { status: "Unknown" };
  }
  const ready = status.conditions.find((condition: unknown) =>
    isRecord(condition) && condition.type === READY_CONDITION
  ) as Record<string, unknown> | undefined;
  if (ready === undefined) return { status: "Unknown" };
  const value = ready.status === "True" || ready.status === "False"
    ? ready.status
    : "Unknown";
  if (value === "True" || typeof ready.reason !== "string") {
    return { status: value };
  }
  return { status: value, reason: ready.reason };
}
