/**
 * The nearest path a schema has to one that failed its walk (see
 * `schema_walk.ts`): field names by edit distance, `[*]` added or dropped,
 * a list or object completed down to a string (a `name` first), up to three
 * corrections combined, the fewest winning. A field name from the schema is
 * suggested as a field (`.name`) when it is an identifier, else as a quoted
 * key (`["example.com/name"]`), and not at all when it can be neither.
 *
 * @example Usage
 * ```ts
 * import { suggestPath } from "./schema_suggestion.ts";
 * import { pruneSchema, walkPath } from "./schema_walk.ts";
 * import { parseFieldPath } from "./field_path.ts";
 *
 * const schema = pruneSchema({
 *   type: "object",
 *   properties: {
 *     spec: { type: "object", properties: { name: { type: "string" } } },
 *   },
 * });
 * const path = parseFieldPath(".spec.nmae");
 * const walk = walkPath(schema, path);
 * if (!walk.ok) suggestPath(schema, { path, failure: walk.failure }); // ".spec.name"
 * ```
 *
 * @module
 */
import {
  type FieldPath,
  type FieldSegment,
  fieldSegment,
  formatFieldPath,
} from "./field_path.ts";
import {
  type Failure,
  fieldNames,
  fieldOf,
  listDepth,
  type SchemaNode,
  shapeOf,
  walkPath,
} from "./schema_walk.ts";

/** How many corrections one suggestion may combine. */
const MAX_REPAIRS = 3;
/** How many alternatives are tried per correction. */
const MAX_ALTERNATIVES = 3;
/** How many segments a list or object may be completed with. */
const MAX_COMPLETION = 3;

/**
 * The nearest path the schema has: corrections of the first bad segment
 * (then of the next, up to {@linkcode MAX_REPAIRS} in all), breadth first,
 * so the fewest corrections win. Without a whole path, a misspelt field
 * still gets its nearest name, followed by `...` when more of the path follows.
 */
export function suggestPath(
  schema: SchemaNode,
  start: { path: FieldPath; failure: Failure },
): string | undefined {
  const seen = new Set([formatFieldPath(start.path)]);
  let frontier = [start];
  for (let round = 0; round < MAX_REPAIRS; round++) {
    const next: { path: FieldPath; failure: Failure }[] = [];
    for (const { path, failure } of frontier) {
      for (const candidate of _repairs(path, failure)) {
        const text = formatFieldPath(candidate);
        if (seen.has(text)) continue;
        seen.add(text);
        const walk = walkPath(schema, candidate);
        if (walk.ok) return text;
        next.push({ path: candidate, failure: walk.failure });
      }
    }
    frontier = next;
  }
  if (start.failure.kind !== "field") return undefined;
  const first = _repairs(start.path, start.failure)[0];
  if (first === undefined) return undefined;
  const segment = start.failure.segment;
  const partial = formatFieldPath(first.slice(0, segment + 1));
  return segment + 1 < start.path.length ? `${partial}...` : partial;
}

/** Paths that correct `failure`, the likeliest first. */
function _repairs(path: FieldPath, failure: Failure): FieldPath[] {
  const candidates: FieldPath[] = [];
  const replace = (index: number, segments: FieldSegment[]) => {
    const candidate = [
      ...path.slice(0, index),
      ...segments,
      ...path.slice(index + 1),
    ];
    // A path starts with a field name, never a key.
    if (candidate.length >= 2 && !candidate[0]!.key) {
      candidates.push(candidate);
    }
  };
  switch (failure.kind) {
    case "field": {
      const { segment, parent, resource } = failure;
      const original = path[segment]!;
      for (
        const name of _nearNames(
          original.name,
          fieldNames(parent, resource),
        )
      ) {
        const child = fieldOf(parent, name, resource);
        const depth = child === undefined || child === "open"
          ? 0
          : listDepth(child);
        const listed = fieldSegment(name, depth);
        if (listed === undefined) continue;
        replace(segment, [listed]);
        if (depth !== original.lists) {
          replace(segment, [{ ...listed, lists: original.lists }]);
        }
      }
      break;
    }
    case "notObject": {
      const { segment, node } = failure;
      const previous = path[segment - 1];
      if (previous === undefined) break;
      if (shapeOf(node) === "array") {
        // A field of list elements: the list needs its [*].
        replace(segment - 1, [{
          ...previous,
          lists: previous.lists + listDepth(node),
        }]);
      } else if (segment >= 2) {
        // A field of a string: the string itself is likely meant.
        candidates.push(path.slice(0, segment));
      }
      break;
    }
    case "notList": {
      const original = path[failure.segment]!;
      replace(failure.segment, [{ ...original, lists: failure.taken }]);
      break;
    }
    case "leaf": {
      const last = path.length - 1;
      const leaf = path[last]!;
      let node = failure.node;
      const depth = listDepth(node);
      for (let i = 0; i < depth; i++) node = node.items ?? {};
      const listed = { ...leaf, lists: leaf.lists + depth };
      const shape = shapeOf(node);
      if (depth > 0 && (shape === "string" || shape === "intOrString")) {
        replace(last, [listed]);
      }
      for (const completion of _completions(node)) {
        replace(last, [listed, ...completion]);
      }
      break;
    }
  }
  return candidates;
}

/**
 * Ways down from an object node to a string, at most
 * {@linkcode MAX_COMPLETION} segments: a field `name` first, then the
 * shortest, then by name.
 */
function _completions(node: SchemaNode): FieldSegment[][] {
  const found: FieldSegment[][] = [];
  let frontier: { node: SchemaNode; segments: FieldSegment[] }[] = [{
    node,
    segments: [],
  }];
  for (let length = 1; length <= MAX_COMPLETION; length++) {
    const next: typeof frontier = [];
    for (const { node: parent, segments } of frontier) {
      if (shapeOf(parent) !== "object") continue;
      for (const [name, child] of Object.entries(parent.properties ?? {})) {
        const lists = listDepth(child);
        const segment = fieldSegment(name, lists);
        if (segment === undefined) continue;
        let element = child;
        for (let i = 0; i < lists; i++) element = element.items ?? {};
        const path = [...segments, segment];
        const shape = shapeOf(element);
        if (shape === "string") found.push(path);
        else if (shape === "object") {
          next.push({ node: element, segments: path });
        }
      }
    }
    frontier = next;
  }
  const text = (segments: FieldSegment[]) => formatFieldPath(segments);
  return found
    .sort((a, b) => {
      const aName = a.at(-1)!.name === "name" ? 0 : 1;
      const bName = b.at(-1)!.name === "name" ? 0 : 1;
      if (aName !== bName) return aName - bName;
      if (a.length !== b.length) return a.length - b.length;
      return text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0;
    })
    .slice(0, MAX_ALTERNATIVES);
}

/**
 * The names near `name`, nearest first: within an edit distance of a third
 * of the longer name (at least 1, case ignored, a swap of two letters
 * counting once), or one a prefix of the other of at least three letters.
 */
function _nearNames(name: string, names: readonly string[]): string[] {
  const lower = name.toLowerCase();
  const scored: { name: string; distance: number }[] = [];
  for (const candidate of names) {
    if (candidate === name) continue;
    const other = candidate.toLowerCase();
    const distance = _distance(lower, other);
    const limit = Math.max(
      1,
      Math.floor(Math.max(lower.length, other.length) / 3),
    );
    const shorter = lower.length < other.length ? lower : other;
    const longer = shorter === lower ? other : lower;
    if (
      distance <= limit || (shorter.length >= 3 && longer.startsWith(shorter))
    ) {
      scored.push({ name: candidate, distance });
    }
  }
  return scored
    .sort((a, b) =>
      a.distance - b.distance ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
    )
    .slice(0, MAX_ALTERNATIVES)
    .map((s) => s.name);
}

/** The optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function _distance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i, ...new Array<number>(b.length).fill(0)]);
  }
  for (let j = 0; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        rows[i - 1]![j]! + 1,
        rows[i]![j - 1]! + 1,
        rows[i - 1]![j - 1]! + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}
