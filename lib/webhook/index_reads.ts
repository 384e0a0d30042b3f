/**
 * A review's dependents from the index instead of a list, when the index
 * can answer as a list would at the moment the review began:
 *
 * - **A dependent the index names is confirmed live**: it is read by name
 *   and matched against the rules again (`referringFields`, the list's own
 *   match), so a denial names only dependents that still refer to the
 *   object when the review runs. One confirmed dependent is enough to deny.
 * - **"Nothing refers to it" needs freshness shown**: for each shard
 *   endpoint feeding the index, a cheap consistent read of the workspace's
 *   objects of the type gives a resource version at least as new as the
 *   review; only once the index has applied every event of that endpoint
 *   up to it does its empty answer count. Not shown within a small part of
 *   the deadline, the review lists, as it always did.
 *
 * Every other case (a protection the index does not keep, an index not
 * synced, a probe that fails) answers `undefined`: the review lists.
 *
 * @module
 */
import type { DependentsIndex, IndexHit } from "../dependents/mod.ts";
import { compareStrings, errorText, valueWithin } from "../runtime/mod.ts";
import { indexRoute } from "./index_plan.ts";
import type { Protection } from "./rule_registry.ts";
import type { ReviewTarget } from "./review_target.ts";
import type { DependentSource } from "./review_source.ts";
import { keepFirst, referringBlocker } from "./review_match.ts";
import type { Blocker } from "./verdicts.ts";
import type { WhenBudget } from "../when/mod.ts";
import { listsEveryNamespace } from "./review_list.ts";
import type { ListScope, SlowLists } from "./slow_lists.ts";

/** An index that is synced on every endpoint feeding it. */
export interface ReadyIndex {
  /** The index. */
  index: DependentsIndex;
  /** The endpoints (sources) that feed it. */
  sources: readonly string[];
  /** Each of the index's paths as text (`IndexSpec.pathKeys`), by path number. */
  pathKeys: readonly string[];
  /**
   * For each source that holds the workspace (a logical cluster lives on
   * one shard), a resource version at least as new as this call, from a
   * consistent read of the workspace's objects of the type there; sources
   * that do not hold it are left out.
   *
   * @throws {Error} When it cannot be read.
   */
  probe(
    cluster: string,
    signal: AbortSignal,
  ): Promise<ReadonlyMap<string, string>>;
  /** Resolves at the index's next change, or after `ms`, or when `signal` aborts. */
  changed(ms: number, signal: AbortSignal): Promise<void>;
  /** Milliseconds since the index last applied an event or a list. */
  idleMs(): number;
  /**
   * Whether no object of the workspace changed on `source` after `since`
   * up to at least `until`: a short watch of the workspace's objects there
   * from `since` that gets a bookmark or an event newer than `until` before
   * any event at or below it. `false` on such an event, on a failure, or
   * at the watch's end; absent, the index never tries.
   */
  quiet?(
    cluster: string,
    options: {
      source: string;
      since: string;
      until: string;
      signal: AbortSignal;
    },
  ): Promise<boolean>;
}

/** The webhook's indexes, as a review asks for them. */
export interface IndexedDependents {
  /** The index of `key` when it can answer now, else `undefined`. */
  ready(key: string): ReadyIndex | undefined;
  /** Counts how a review used the index (for metrics). */
  observe?(outcome: IndexOutcome): void;
  /**
   * Lists that were slower than the freshness budget lately, by scope: an
   * idle index tries its quiet proof before listing such a scope again.
   * Absent, a list always goes first.
   */
  slowLists?: SlowLists;
}

/** How a review used the index. */
export type IndexOutcome =
  | "confirmed"
  | "fresh_none"
  | "quiet_none"
  | "not_indexed"
  | "not_synced"
  | "not_fresh"
  | "idle"
  | "unconfirmed";

/**
 * How recently an index must have applied an event for a review to try to
 * show it fresh. The index's position moves only with events of its type
 * (and a bookmark a minute) while a probe's resource version moves with
 * every write on the shard: an index idle for longer is almost never shown
 * fresh (docs/dependents_index.md), and trying would cost the probe's wait
 * before the list. Only speed depends on it, never the answer.
 */
export const BUSY_WITHIN_MS = 1_000;

/**
 * What the indexes say of one dependent type: their answer; list now; or
 * an idle index that may show the workspace unchanged since its position
 * (`quiet`), tried beside a list or before it (`index_race.ts`).
 */
export type IndexReply =
  | { answer: IndexAnswer }
  | { list: "now" }
  | IdleIndexReply;

/** An idle index's reply: list, or show the index fresh another way. */
export interface IdleIndexReply {
  /** Discriminates the reply. */
  list: "race";
  /** The index's answer once shown fresh, or `undefined`; ends with `signal`. */
  quiet: (signal: AbortSignal) => Promise<IndexAnswer | undefined>;
  /**
   * Whether the last list of this scope was slower than the freshness
   * budget: then `quiet` is tried first, and the list only if it fails.
   */
  quietFirst: boolean;
  /** Records how long a list of this scope took (`Infinity`: stopped past the budget). */
  listTook: (ms: number) => void;
  /** The freshness budget: how long a list may take before `quiet` is tried beside it. */
  freshnessMs: number;
  /** Counts how the review used the index (`IndexedDependents.observe`). */
  observe: (outcome: IndexOutcome) => void;
}

/** What the index found: as a list would, or `undefined` (list instead). */
export interface IndexAnswer {
  /** The blockers, first few by name, all counted. */
  named: Blocker[];
  /** How many dependents refer (named ones confirmed, the rest as the index last saw them). */
  total: number;
}

/** Options of {@linkcode answerFromIndex}. */
export interface AnswerOptions {
  /** The webhook's indexes. */
  indexes: IndexedDependents;
  /** Reads a dependent by name to confirm it. */
  source: DependentSource;
  /** The review's signal (deadline and cancellation). */
  signal: AbortSignal;
  /** The review's `when` budget. */
  budget: WhenBudget;
  /** How many blockers to name. */
  maxNamed: number;
  /** How long to wait for the index to catch up with the probe. */
  freshnessMs: number;
  /**
   * Called once when the index names dependents that may still refer,
   * before they are read to confirm: the review will likely deny, so what
   * a denial reads next can be read beside them.
   */
  onNamed?: () => void;
}

/** How many rounds of named dependents are read before giving up on confirming. */
const CONFIRM_ROUNDS = 3;

/**
 * The dependents of one type that refer to `target`, from the index, or
 * `undefined` when the review must list them (see the module's header).
 * All protections are of one dependent type.
 */
export async function answerFromIndex(
  group: readonly Protection[],
  target: ReviewTarget,
  options: AnswerOptions,
): Promise<IndexReply> {
  const { indexes } = options;
  const ready = new Map<string, { at: ReadyIndex; paths: Set<string> }>();
  for (const p of group) {
    const route = indexRoute(p);
    if (route === undefined) {
      indexes.observe?.("not_indexed");
      return LIST_NOW;
    }
    let entry = ready.get(route.key);
    if (entry === undefined) {
      const at = indexes.ready(route.key);
      if (at === undefined) {
        indexes.observe?.("not_synced");
        return LIST_NOW;
      }
      entry = { at, paths: new Set() };
      ready.set(route.key, entry);
    }
    entry.paths.add(route.pathKey);
  }
  const { signal } = options;
  // Everything a "nothing refers" needs (the probe and the wait for the
  // index to reach it) fits in freshnessMs from here; past it the review
  // lists, with the rest of its deadline.
  const until = performance.now() + options.freshnessMs;
  const busy = [...ready.values()].every(({ at }) =>
    at.idleMs() <= BUSY_WITHIN_MS
  );
  // The probe runs beside the confirmation; a confirmed dependent does not
  // need it, nor does an idle index, which lists.
  const probes = new AbortController();
  const probing = busy
    ? Promise.all(
      [...ready.values()].map(({ at }) =>
        at.probe(
          target.cluster,
          AbortSignal.any([signal, probes.signal]),
        ).then((rvs) => ({ at, rvs }))
      ),
    )
    : Promise.reject(new Error("the index is idle"));
  probing.catch(() => {});
  try {
    const hits = hitsOf(ready, target);
    if (hits.length > 0) options.onNamed?.();
    const first = await confirmed(group, target, hits, options);
    if (first !== undefined && first.total > 0) {
      indexes.observe?.("confirmed");
      return { answer: first };
    }
    if (!busy) {
      if (
        first === undefined ||
        [...ready.values()].some(({ at }) => at.quiet === undefined)
      ) {
        indexes.observe?.("idle");
        return LIST_NOW;
      }
      const scope = listScope(group, target);
      return {
        list: "race",
        quiet: (quietSignal) =>
          quietAnswer(group, target, ready, {
            ...options,
            signal: quietSignal,
          }),
        quietFirst: indexes.slowLists?.slow(scope) ?? false,
        listTook: (ms) =>
          indexes.slowLists?.record(scope, ms > options.freshnessMs),
        freshnessMs: options.freshnessMs,
        observe: (outcome) => indexes.observe?.(outcome),
      };
    }
    let readings:
      | { at: ReadyIndex; rvs: ReadonlyMap<string, string> }[]
      | undefined;
    try {
      readings = await valueWithin(probing, until - performance.now());
    } catch (error) {
      if (signal.aborted) throw error;
      readings = undefined;
    }
    if (readings === undefined) {
      indexes.observe?.("not_fresh");
      return LIST_NOW;
    }
    for (const { at, rvs } of readings) {
      while (!freshAt(at, rvs)) {
        const left = until - performance.now();
        if (left <= 0 || signal.aborted) {
          indexes.observe?.("not_fresh");
          return LIST_NOW;
        }
        await at.changed(left, signal);
      }
    }
    const fresh = await confirmed(
      group,
      target,
      hitsOf(ready, target),
      options,
    );
    if (fresh === undefined) {
      indexes.observe?.("unconfirmed");
      return LIST_NOW;
    }
    indexes.observe?.(fresh.total > 0 ? "confirmed" : "fresh_none");
    return { answer: fresh };
  } finally {
    probes.abort(new Error("answered"));
  }
}

/** What a list of `group`'s dependent type for `target` reads. */
function listScope(
  group: readonly Protection[],
  target: ReviewTarget,
): ListScope {
  const { group: apiGroup, resource } = group[0]!.dependent;
  return {
    type: `${apiGroup}/${resource}`,
    cluster: target.cluster,
    ...(listsEveryNamespace(group, target)
      ? {}
      : { namespace: target.namespace }),
  };
}

/** The reply that makes the review list now. */
const LIST_NOW: IndexReply = Object.freeze({ list: "now" as const });

/**
 * An idle index's answer, shown fresh another way: for each source that
 * holds the workspace and that the index has not followed up to the
 * probe's version R, a short watch of the workspace from the index's
 * position there must show nothing changed up to R (`ReadyIndex.quiet`:
 * kcp sends such a watch a bookmark about a second in). Then the index is
 * as good as a list made after the review began, and its dependents are
 * confirmed as in {@linkcode answerFromIndex}. `undefined` when that is
 * not shown (the review's list answers), also when `options.signal` ends
 * it.
 */
async function quietAnswer(
  group: readonly Protection[],
  target: ReviewTarget,
  ready: ReadonlyMap<string, { at: ReadyIndex; paths: Set<string> }>,
  options: AnswerOptions,
): Promise<IndexAnswer | undefined> {
  const { indexes, signal } = options;
  try {
    const probed = await Promise.all(
      [...ready.values()].map(async ({ at }) => ({
        at,
        rvs: await at.probe(target.cluster, signal),
      })),
    );
    const proofs: Promise<boolean>[] = [];
    for (const { at, rvs } of probed) {
      if (rvs.size === 0) throw new Error("no source holds the workspace");
      for (const [source, until] of rvs) {
        if (!at.sources.includes(source)) {
          throw new Error(`${source} does not feed the index`);
        }
        if (at.index.freshAt(source, until)) continue;
        const since = at.index.watermark(source);
        if (since === undefined || !at.index.freshAt(source, since)) {
          throw new Error(`the index is not synced on ${source}`);
        }
        // Quiet from the index's position, and the index still there.
        proofs.push(
          at.quiet!(target.cluster, { source, since, until, signal }).then(
            (quiet) => quiet && at.index.freshAt(source, since),
          ),
        );
      }
    }
    if (!(await Promise.all(proofs)).every((quiet) => quiet)) {
      indexes.observe?.("idle");
      return undefined;
    }
  } catch {
    indexes.observe?.("idle");
    return undefined;
  }
  const fresh = await confirmed(group, target, hitsOf(ready, target), options);
  if (fresh === undefined) {
    indexes.observe?.("unconfirmed");
    return undefined;
  }
  indexes.observe?.(fresh.total > 0 ? "confirmed" : "quiet_none");
  return fresh;
}

/**
 * Whether the index has applied every event up to the probed version of
 * each source that holds the workspace; false when none does (the
 * workspace is on a shard the index is not fed from).
 */
function freshAt(at: ReadyIndex, rvs: ReadonlyMap<string, string>): boolean {
  if (rvs.size === 0) return false;
  for (const [source, rv] of rvs) {
    if (!at.sources.includes(source) || !at.index.freshAt(source, rv)) {
      return false;
    }
  }
  return true;
}

/** One dependent the index names, with what it found of it. */
interface Candidate {
  cluster: string;
  namespace: string;
  name: string;
}

/** The distinct dependents the indexes name for `target`, in (namespace, name) order. */
function hitsOf(
  ready: ReadonlyMap<string, { at: ReadyIndex; paths: Set<string> }>,
  target: ReviewTarget,
): Candidate[] {
  const seen = new Map<string, Candidate>();
  for (const { at, paths } of ready.values()) {
    const keys = at.pathKeys;
    const hits: IndexHit[] = at.index.referrers({
      cluster: target.cluster,
      ...(target.namespace === undefined
        ? {}
        : { namespace: target.namespace }),
      name: target.name,
    });
    for (const hit of hits) {
      const pathKey = keys[hit.path];
      if (pathKey === undefined || !paths.has(pathKey)) continue;
      const id = `${hit.namespace}\u0000${hit.name}`;
      if (!seen.has(id)) {
        seen.set(id, {
          cluster: hit.cluster,
          namespace: hit.namespace,
          name: hit.name,
        });
      }
    }
  }
  return [...seen.values()].sort((a, b) =>
    compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name)
  );
}

/**
 * The candidates that still refer to `target` when read now, up to
 * `maxNamed` named (read in rounds of that many); those not read are
 * counted. `undefined` when {@linkcode CONFIRM_ROUNDS} rounds confirmed
 * none while more remain.
 */
async function confirmed(
  group: readonly Protection[],
  target: ReviewTarget,
  candidates: readonly Candidate[],
  options: AnswerOptions,
): Promise<IndexAnswer | undefined> {
  const dependent = group[0]!.dependent;
  const named: Blocker[] = [];
  let total = 0;
  let next = 0;
  for (let round = 0; next < candidates.length; round++) {
    if (round === CONFIRM_ROUNDS) return undefined;
    const batch = candidates.slice(next, next + options.maxNamed);
    next += batch.length;
    const objects = await Promise.all(
      batch.map((c) =>
        options.source.ownerObject({
          cluster: c.cluster,
          ...(c.namespace === "" ? {} : { namespace: c.namespace }),
          resource: dependent,
          name: c.name,
        }, options.signal).catch((error) => {
          throw new Error(
            `reading ${dependent.resource}.${dependent.group} ${c.name} failed: ${
              errorText(error)
            }`,
          );
        })
      ),
    );
    for (const object of objects) {
      if (object === undefined) continue;
      const blocker = referringBlocker(object, group, {
        target,
        budget: options.budget,
      });
      if (blocker === undefined) continue;
      total++;
      keepFirst(named, blocker, options.maxNamed);
    }
    if (total > 0) break;
  }
  return { named, total: total + (candidates.length - next) };
}
