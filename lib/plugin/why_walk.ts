/**
 * `why`, and with `--recursive` the walk from an object to what holds it,
 * to what holds that, and so on ({@linkcode walkWhy}): each object is asked
 * about once, a few at a time, at most {@linkcode MAX_WALK_OBJECTS} in all;
 * the answers become a tree ({@linkcode WhyNode}) in which an object met
 * again on its own path is a `cycle`, met again elsewhere `seen`, and one
 * left out by the bound `cut`. Pure over the `ask` function it is given.
 *
 * @module
 */
import type { Cause, CauseObject } from "../causes/mod.ts";
import { errorText } from "../runtime/mod.ts";
import type { Decision } from "./why_decision.ts";
import type { DeletingOwner } from "./why_owners.ts";

/** The most objects one walk asks about, the first included. */
export const MAX_WALK_OBJECTS = 200;

/** How many questions a walk has in flight at once. */
export const WALK_CONCURRENCY = 4;

/**
 * A node's state: `free`, `held` and `denied` as the answer said, `error`
 * when the question could not be asked; not asked: `cycle` (the object is
 * one of the node's ancestors), `seen` (the object is shown above, in full),
 * `cut` (the walk had asked about as many objects as it may).
 */
export type WhyState =
  | "free"
  | "held"
  | "denied"
  | "error"
  | "cycle"
  | "seen"
  | "cut";

/**
 * What `why` found about one object. This is also the shape of `-o json`
 * and `-o yaml`:
 *
 * - `object`: `{group, version, resource, kind, namespace, name}`
 *   (`namespace` `""` when cluster-scoped);
 * - `state`: see {@linkcode WhyState};
 * - `held`: whether a delete is denied now (`free`: false; `held`,
 *   `denied`: true; absent otherwise);
 * - `message`: the API server's denial (`held`, `denied`);
 * - `error`: why the question could not be asked (`error`);
 * - `causes`: what holds it, as `lib/causes` defines them (`free`, `held`,
 *   `denied`; empty when `free`); beside the blockers of a `held` node, and
 *   alone on a `denied` one, `NotRead` causes say what the webhook could
 *   not read that might hold it too (the answer is then incomplete);
 * - `children`: with `--recursive`, one node per `Reference` and `Owner`
 *   cause, in the causes' order, about the object that cause names
 *   (`free`, `held`, `denied`; a Lock is a leaf).
 */
export interface WhyNode {
  /** The object. */
  object: CauseObject;
  /** What became of the question. */
  state: WhyState;
  /** Whether a delete is denied now; only for `free`, `held` and `denied`. */
  held?: boolean;
  /** The API server's denial (`held`, `denied`). */
  message?: string;
  /** Why the question could not be asked (`error`). */
  error?: string;
  /** What holds it (`free`, `held`, `denied`). */
  causes?: Cause[];
  /** With `--recursive`: a node per blocker that is an object (`free`, `held`, `denied`). */
  children?: WhyNode[];
  /** The object asked about (the root), held: its `deletionTimestamp`, when being deleted. */
  deletionTimestamp?: string;
  /** The root, held: its owners being deleted (`why_owners.ts`), when any is. */
  deletingOwners?: DeletingOwner[];
  /** The root, held: its owners not read, when any. */
  ownersNotRead?: number;
}

/** Asks whether `object` could be deleted now. */
export type Ask = (object: CauseObject) => Promise<Decision>;

/** Options for {@linkcode walkWhy}. */
export interface WalkOptions {
  /** Ask about the objects that hold it in turn. @default {false} */
  recursive?: boolean;
  /** The most objects asked about. @default {MAX_WALK_OBJECTS} */
  limit?: number;
  /** Questions in flight at once. @default {WALK_CONCURRENCY} */
  concurrency?: number;
}

/**
 * What holds `root`, and with `recursive` what holds each object that
 * holds it, in turn. The objects are asked about level by level, in the
 * order the causes name them, so the same answers make the same tree; the
 * tree is then laid out depth first: the first time an object comes up it
 * is shown in full, later it is `seen`, and on its own path a `cycle`. A
 * question that throws becomes an `error` node.
 */
export async function walkWhy(
  root: CauseObject,
  ask: Ask,
  options: WalkOptions = {},
): Promise<WhyNode> {
  const {
    recursive = false,
    limit = MAX_WALK_OBJECTS,
    concurrency = WALK_CONCURRENCY,
  } = options;
  const answers = new Map<string, Decision>();
  const scheduled = new Set<string>([objectKey(root)]);
  let level: CauseObject[] = [root];
  while (level.length > 0) {
    const asked = level.slice(0, Math.max(0, limit - answers.size));
    const decisions = await mapLimit(asked, concurrency, (o) => safely(ask, o));
    const next: CauseObject[] = [];
    for (const [i, object] of asked.entries()) {
      const decision = decisions[i]!;
      answers.set(objectKey(object), decision);
      if (!recursive || decision.state !== "held") continue;
      for (const child of blockingObjects(decision.causes)) {
        const key = objectKey(child);
        if (scheduled.has(key)) continue;
        scheduled.add(key);
        next.push(child);
      }
    }
    level = next;
  }
  return layOut(root, { answers, recursive });
}

/** The objects among `causes` that hold by existing: references and owners. */
export function blockingObjects(causes: readonly Cause[]): CauseObject[] {
  return causes.flatMap((c) =>
    c.type === "Reference" || c.type === "Owner" ? [c.object] : []
  );
}

/** An object's identity: type (without version), namespace and name. */
export function objectKey(object: CauseObject): string {
  return JSON.stringify([
    object.group,
    object.resource,
    object.namespace,
    object.name,
  ]);
}

/** Every node of `node`'s tree, depth first, `node` first. */
export function* nodesOf(node: WhyNode): Generator<WhyNode> {
  yield node;
  for (const child of node.children ?? []) yield* nodesOf(child);
}

/** The tree of the answers, depth first from `root`. */
function layOut(
  root: CauseObject,
  walk: { answers: ReadonlyMap<string, Decision>; recursive: boolean },
): WhyNode {
  const path = new Set<string>();
  const shown = new Set<string>();
  const visit = (object: CauseObject): WhyNode => {
    const key = objectKey(object);
    if (path.has(key)) return { object, state: "cycle" };
    const decision = walk.answers.get(key);
    if (decision === undefined) return { object, state: "cut" };
    if (shown.has(key)) return { object, state: "seen" };
    shown.add(key);
    const node = nodeOf(object, decision);
    if (walk.recursive && decision.state !== "error") {
      path.add(key);
      node.children = decision.state === "held"
        ? blockingObjects(decision.causes).map(visit)
        : [];
      path.delete(key);
    }
    return node;
  };
  return visit(root);
}

/** The node of an object asked about, without children. */
function nodeOf(object: CauseObject, decision: Decision): WhyNode {
  switch (decision.state) {
    case "free":
      return { object, state: "free", held: false, causes: [] };
    case "held":
      return {
        object,
        state: "held",
        held: true,
        message: decision.message,
        causes: decision.causes,
      };
    case "denied":
      return {
        object,
        state: "denied",
        held: true,
        message: decision.message,
        causes: decision.causes ?? [],
      };
    case "error":
      return { object, state: "error", error: decision.message };
  }
}

/** `ask(object)`, with a failure as an `error` decision. */
async function safely(ask: Ask, object: CauseObject): Promise<Decision> {
  try {
    return await ask(object);
  } catch (error) {
    return { state: "error", message: errorText(error) };
  }
}

/** `fn` over `items`, at most `limit` at once; results in the items' order. */
async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  const workers = Math.max(1, Math.min(limit, items.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return results;
}
