/**
 * Semantic checks across schema-valid DependencyRules that no schema can
 * make: a rule whose dependent type protects itself, and rules that together
 * make types protect each other in a cycle.
 *
 * Types are global: a type is its group and plural resource, whatever the
 * version and whichever logical cluster the rule lives in.
 *
 * @example Usage
 * ```ts
 * import { analyzeRules } from "./rule_graph.ts";
 *
 * const problems = analyzeRules([]); // Map { "<cluster>/<name>" => [...] }
 * ```
 *
 * @module
 */
import { compareStrings } from "../runtime/mod.ts";
import { ruleKey, SKIP_PROTECTION_ANNOTATION } from "./api.ts";
import { type ClusterRule, typeName } from "./types.ts";

/** A problem with one rule that the schema cannot catch. */
export interface RuleProblem {
  /** Machine-readable reason, usable as a condition reason. */
  reason: "SelfDependency" | "DependencyCycle";
  /** What is wrong and what to do about it. */
  message: string;
}

/** At most this many names are spelled out in a message. */
const MAX_LISTED = 10;

/**
 * The rules whose protections are installed and enforced: every one but a
 * rule with a `SelfDependency`, which the controller rejects whole. The
 * webhook applies the same filter, so it never enforces a rule that reports
 * that nothing of it is installed. (Rules in a `DependencyCycle` stay
 * enforced: that fails closed.)
 */
export function enforcedRules(
  rules: readonly ClusterRule[],
): ClusterRule[] {
  return rules.filter(({ rule }) => {
    const { group, resource } = rule.spec.dependent;
    const own = typeName({ group, resource });
    return !rule.spec.dependencies.some((d) => typeName(d) === own);
  });
}

/** A directed graph of types, by index into `types` (sorted). */
interface TypeGraph {
  /** Type names, sorted. */
  types: string[];
  /** Targets of each type's edges, sorted and distinct. */
  edges: number[][];
}

/** One rule with its key and the types its edges run between. */
interface RuleEdges {
  key: string;
  from: string;
  to: string[];
}

/**
 * Finds, for each rule, the problems the schema cannot catch:
 * `SelfDependency` for each dependency on the rule's own dependent type, and
 * `DependencyCycle` when the rule is one of those whose dependencies make
 * types (across all rules and logical clusters) protect each other in a
 * cycle. The result is the same for any order of `rules`.
 *
 * @param rules Schema-valid rules with their logical clusters. Keys are
 * expected to be distinct; when one repeats, the last entry counts.
 * @returns The problems by rule key (`<cluster>/<name>`, see
 * {@linkcode ruleKey}), in key order; rules without problems have no entry.
 */
export function analyzeRules(
  rules: readonly ClusterRule[],
): Map<string, RuleProblem[]> {
  const byKey = new Map<string, ClusterRule>();
  for (const entry of rules) {
    byKey.set(ruleKey(entry.cluster, entry.rule.metadata.name), entry);
  }
  const keys = [...byKey.keys()].sort(compareStrings);

  const problems = new Map<string, RuleProblem[]>();
  const ruleEdges: RuleEdges[] = [];
  for (const key of keys) {
    const { rule } = byKey.get(key)!;
    const dependent = rule.spec.dependent;
    const from = typeName(dependent);
    const to: string[] = [];
    rule.spec.dependencies.forEach((dependency, index) => {
      const target = typeName(dependency);
      if (target !== from) {
        to.push(target);
        return;
      }
      _add(problems, key, {
        reason: "SelfDependency",
        message: `spec.dependencies[${index}] (fieldRef.path ` +
          `'${dependency.fieldRef.path}') protects ${target}, the rule's ` +
          `own dependent type: a type cannot protect itself through its ` +
          `own field; remove this dependency`,
      });
    });
    ruleEdges.push({ key, from, to });
  }

  const graph = _buildGraph(ruleEdges);
  const component = _stronglyConnectedComponents(graph);
  const members = _componentMembers(component);
  const index = new Map(graph.types.map((type, i) => [type, i]));

  // The rules with an edge inside each component of two or more types.
  const cycleRules = new Map<number, string[]>();
  for (const { key, from, to } of ruleEdges) {
    const source = component[index.get(from)!]!;
    if (members[source]!.length < 2) continue;
    const inside = to.some((type) => component[index.get(type)!] === source);
    if (!inside) continue;
    const list = cycleRules.get(source) ?? [];
    list.push(key);
    cycleRules.set(source, list);
  }

  for (const [source, keysInCycle] of cycleRules) {
    const message = _cycleMessage(
      graph,
      { component, members: members[source]!, rules: keysInCycle },
    );
    for (const key of keysInCycle) {
      _add(problems, key, { reason: "DependencyCycle", message });
    }
  }

  const sorted = new Map<string, RuleProblem[]>();
  for (const key of keys) {
    const list = problems.get(key);
    if (list !== undefined) sorted.set(key, list);
  }
  return sorted;
}

/** `<resource>.<group>`, or the resource alone for the core group. */

function _add(
  problems: Map<string, RuleProblem[]>,
  key: string,
  problem: RuleProblem,
): void {
  const list = problems.get(key) ?? [];
  list.push(problem);
  problems.set(key, list);
}

/** The graph of every rule's edges, types and edge lists sorted. */
function _buildGraph(ruleEdges: readonly RuleEdges[]): TypeGraph {
  const names = new Set<string>();
  for (const { from, to } of ruleEdges) {
    names.add(from);
    for (const type of to) names.add(type);
  }
  const types = [...names].sort(compareStrings);
  const index = new Map(types.map((type, i) => [type, i]));
  const targets = types.map(() => new Set<number>());
  for (const { from, to } of ruleEdges) {
    const source = targets[index.get(from)!]!;
    for (const type of to) source.add(index.get(type)!);
  }
  const edges = targets.map((set) => [...set].sort((a, b) => a - b));
  return { types, edges };
}

/**
 * Tarjan's algorithm without recursion, so that long chains cannot overflow
 * the stack.
 *
 * @returns For each type, the id of its strongly connected component.
 */
function _stronglyConnectedComponents(graph: TypeGraph): number[] {
  const count = graph.types.length;
  const order = new Array<number>(count).fill(-1);
  const lowLink = new Array<number>(count).fill(0);
  const onStack = new Array<boolean>(count).fill(false);
  const component = new Array<number>(count).fill(-1);
  const stack: number[] = [];
  let nextOrder = 0;
  let nextComponent = 0;

  for (let root = 0; root < count; root++) {
    if (order[root] !== -1) continue;
    // Each frame is a type and the position of the next edge to follow.
    const frames: { node: number; edge: number }[] = [{ node: root, edge: 0 }];
    order[root] = lowLink[root] = nextOrder++;
    stack.push(root);
    onStack[root] = true;

    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const { node } = frame;
      const targets = graph.edges[node]!;
      if (frame.edge < targets.length) {
        const target = targets[frame.edge++]!;
        if (order[target] === -1) {
          order[target] = lowLink[target] = nextOrder++;
          stack.push(target);
          onStack[target] = true;
          frames.push({ node: target, edge: 0 });
        } else if (onStack[target]) {
          lowLink[node] = Math.min(lowLink[node]!, order[target]!);
        }
        continue;
      }

      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent !== undefined) {
        lowLink[parent.node] = Math.min(lowLink[parent.node]!, lowLink[node]!);
      }
      if (lowLink[node] !== order[node]) continue;
      let member: number;
      do {
        member = stack.pop()!;
        onStack[member] = false;
        component[member] = nextComponent;
      } while (member !== node);
      nextComponent++;
    }
  }
  return component;
}

/** For each component id, its types in ascending order. */
function _componentMembers(component: readonly number[]): number[][] {
  const members: number[][] = [];
  component.forEach((id, type) => {
    while (members.length <= id) members.push([]);
    members[id]!.push(type);
  });
  return members;
}

/**
 * The shortest cycle through `start` that stays inside its component, found
 * breadth-first over sorted edges so the result is deterministic.
 *
 * @returns The types of the cycle from `start`, without repeating `start`.
 */
function _shortestCycle(
  graph: TypeGraph,
  component: readonly number[],
  start: number,
): number[] {
  const id = component[start];
  const previous = new Map<number, number>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head]!;
    for (const target of graph.edges[node]!) {
      if (component[target] !== id) continue;
      if (target === start) {
        const path = [node];
        while (path[path.length - 1] !== start) {
          path.push(previous.get(path[path.length - 1]!)!);
        }
        return path.reverse();
      }
      if (previous.has(target)) continue;
      previous.set(target, node);
      queue.push(target);
    }
  }
  // Unreachable for a component of two or more types.
  return [start];
}

/**
 * The message for every rule of one cycle: a cycle through the component's
 * first type, the component's other types, and the rules involved.
 */
function _cycleMessage(
  graph: TypeGraph,
  cycle: {
    component: readonly number[];
    members: readonly number[];
    rules: readonly string[];
  },
): string {
  const [first] = cycle.members;
  const path = _shortestCycle(graph, cycle.component, first!);
  const names = path.map((type) => graph.types[type]!);
  const shown = names.length > MAX_LISTED
    ? [...names.slice(0, MAX_LISTED), `... (${names.length - MAX_LISTED} more)`]
    : names;
  let text = `dependency cycle: ${[...shown, names[0]].join(" -> ")}`;
  const onPath = new Set(path);
  const others = cycle.members.filter((type) => !onPath.has(type));
  if (others.length > 0) {
    text += `, also involving ${
      _limitedList(others.map((type) => graph.types[type]!))
    }`;
  }
  const rules = [...cycle.rules].sort(compareStrings);
  return `${text} (rules ${_limitedList(rules)}); objects that refer to ` +
    `each other can only be deleted with the ${SKIP_PROTECTION_ANNOTATION} ` +
    `annotation`;
}

/** `a, b, c`, or the first {@linkcode MAX_LISTED} and `and N more`. */
function _limitedList(items: readonly string[]): string {
  if (items.length <= MAX_LISTED) return items.join(", ");
  const rest = items.length - MAX_LISTED;
  return `${items.slice(0, MAX_LISTED).join(", ")} and ${rest} more`;
}

/**
 * The sets of types that protect each other in a cycle across `rules`: each
 * strongly connected component of two or more types of the graph that
 * {@linkcode analyzeRules} checks (a rule's dependency on its own dependent
 * type is no edge of it). Types are named `<resource>.<group>`. The result is
 * the same for any order of `rules`.
 *
 * @example Usage
 * ```ts
 * import { typeCycles } from "./rule_graph.ts";
 *
 * typeCycles([]); // [] (or [["subnets.network.example.com", "vpcs.network.example.com"]])
 * ```
 *
 * @param rules Schema-valid rules with their logical clusters. Keys are
 * expected to be distinct; when one repeats, the last entry counts.
 * @returns One entry per cycle, its type names sorted; the entries sorted by
 * their first type.
 */
export function typeCycles(rules: readonly ClusterRule[]): string[][] {
  const byKey = new Map<string, ClusterRule>();
  for (const entry of rules) {
    byKey.set(ruleKey(entry.cluster, entry.rule.metadata.name), entry);
  }
  const ruleEdges: RuleEdges[] = [...byKey].map(([key, { rule }]) => {
    const { group, resource } = rule.spec.dependent;
    const from = typeName({ group, resource });
    const to = rule.spec.dependencies
      .map((dependency) => typeName(dependency))
      .filter((target) => target !== from);
    return { key, from, to };
  });
  const graph = _buildGraph(ruleEdges);
  const members = _componentMembers(_stronglyConnectedComponents(graph));
  return members
    .filter((types) => types.length > 1)
    .map((types) => types.map((type) => graph.types[type]!))
    .sort((a, b) => compareStrings(a[0]!, b[0]!));
}
