/**
 * The index of dependents: which kept dependents of one type refer to an
 * object, answered from memory instead of a list per review. Watches (one
 * list+watch per kcp shard endpoint, each a *source*) feed it objects of
 * every consumer cluster; each object carries its logical cluster in the
 * `kcp.io/cluster` annotation.
 *
 * Pure: no I/O, no clock. It keeps, per dependent, only its cluster,
 * namespace, name, uid, resourceVersion, whether it is being deleted, and
 * its references (which path, the referenced namespace and name, the list
 * indexes). Cluster names and namespaces (the dependent's and the
 * referenced ones) are interned with reference counts. A dependent without any reference is not kept at all: it cannot
 * block a deletion, and keeping none saves memory (an update that removes
 * its last reference drops it). `maxDependents` counts kept dependents only.
 * The records kept, the keys they are filed under, how an object is read
 * and how resourceVersions and hits are ordered are `kept.ts`, with the
 * types of the index's paths, events, hits and limits.
 *
 * Tenant objects are adversarial: a malformed object (not an object, no
 * `metadata.name`, a path that finds odd values) is skipped or read as far
 * as it goes, never thrown on.
 *
 * Staleness is judged per object against its kept version: an event with a
 * lower (decimal) resourceVersion than the kept one changes nothing. Of an
 * object not kept (deleted, or without references) the index knows no
 * version, so an event about it is taken as it comes; a watch delivers its
 * events in order, so only a feed that replays old events could tell.
 *
 * @example Usage
 * ```ts
 * import { parseFieldPath } from "../rules/mod.ts";
 * import { DependentsIndex } from "./dependents_index.ts";
 *
 * const index = new DependentsIndex(
 *   [{ fieldPath: parseFieldPath(".spec.vpcRef.name") }],
 *   { maxDependents: 100_000 },
 * );
 * index.startResync("shard-1");
 * index.upsert("shard-1", {
 *   metadata: {
 *     name: "vm-1",
 *     namespace: "ns",
 *     uid: "u1",
 *     resourceVersion: "10",
 *     annotations: { "kcp.io/cluster": "C" },
 *   },
 *   spec: { vpcRef: { name: "vpc-a" } },
 * });
 * index.finishResync("shard-1", "12");
 * index.freshAt("shard-1", "11"); // true
 * index.referrers({ cluster: "C", namespace: "ns", name: "vpc-a" });
 * // [{ cluster: "C", namespace: "ns", name: "vm-1", uid: "u1",
 * //    resourceVersion: "10", deleting: false, path: 0, indexes: [] }]
 * ```
 *
 * @module
 */
import type { IndexBudget } from "./index_budget.ts";
import { isRecord } from "../runtime/mod.ts";
import { Interned } from "./interned.ts";
import {
  type Bucket,
  compareDecimals,
  compareHits,
  type DependentsIndexOptions,
  type IndexedPath,
  type IndexEvent,
  type IndexHit,
  isOlder,
  Kept,
  readObject,
  readRefs,
  type RefFields,
  reverseKey,
  Source,
} from "./kept.ts";

/**
 * The in-memory index of dependents of one type, fed by sources (one
 * list+watch each) and asked which dependents refer to an object.
 *
 * Each source keys its dependents by (cluster, namespace, name). A source
 * is synced from {@linkcode DependentsIndex.finishResync} until
 * {@linkcode DependentsIndex.unsync}, a new
 * {@linkcode DependentsIndex.startResync} or an overflow; its watermark is
 * the last resourceVersion applied. Once more than `maxDependents`
 * dependents (or `maxReferences` references) would be kept, the index is
 * overflowed for good: it forgets everything, no source is synced,
 * `referrers` answers nothing and every feed call returns `false`, so the
 * caller falls back to listing.
 */
export class DependentsIndex {
  /** The paths dependents are read at; a hit's `path` indexes this list. */
  readonly paths: readonly IndexedPath[];
  readonly #maxDependents: number;
  readonly #maxReferences: number;
  readonly #shared: IndexBudget | undefined;
  readonly #sources = new Map<string, Source>();
  readonly #strings = new Interned();
  /**
   * Dependents by the cluster and name they refer to, whatever the
   * namespace (see {@linkcode reverseKey}): a cluster-scoped object is one
   * lookup, and a namespaced one filters the few dependents that refer to
   * its name in other namespaces of its cluster.
   */
  readonly #reverse = new Map<string, Bucket>();
  #size = 0;
  #references = 0;
  #overflowed = false;

  /**
   * @param paths Where dependents of this type keep their references, one
   * per rule (a hit's `path` is an index into this list).
   * @param options The limits.
   * @throws {RangeError} When a limit is negative or not a number.
   */
  constructor(paths: readonly IndexedPath[], options: DependentsIndexOptions) {
    const maxReferences = options.maxReferences ?? Infinity;
    for (
      const [what, limit] of [
        ["maxDependents", options.maxDependents],
        ["maxReferences", maxReferences],
      ] as const
    ) {
      if (!(limit >= 0)) {
        throw new RangeError(`${what} must be at least 0, not ${limit}`);
      }
    }
    this.paths = Object.freeze(paths.map((p) => Object.freeze({ ...p })));
    this.#maxDependents = options.maxDependents;
    this.#maxReferences = maxReferences;
    this.#shared = options.shared;
  }

  /** How many dependents are kept. */
  get size(): number {
    return this.#size;
  }

  /** Whether the index went past its limits: then it keeps and answers nothing. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  /**
   * A (re)list of `source` begins: objects upserted until finishResync
   * replace what source had. Marks source not synced. What it had is still
   * answered until {@linkcode DependentsIndex.finishResync}.
   *
   * @param source The list+watch, such as a shard's endpoint.
   */
  startResync(source: string): void {
    if (this.#overflowed) return;
    const state = this.#source(source);
    state.generation++;
    state.synced = false;
  }

  /**
   * One listed object of source (during a resync). Returns false once over
   * maxDependents (then overflowed). A malformed object is skipped; one
   * older (by resourceVersion) than the kept version of the same object
   * leaves that version as it is, but counts as listed.
   *
   * @param source The list+watch.
   * @param object One item of the list, as decoded from JSON.
   * @returns `false` when the index is overflowed.
   */
  upsert(source: string, object: unknown): boolean {
    if (this.#overflowed) return false;
    return this.#upsert(this.#source(source), object);
  }

  /**
   * The list ended at resourceVersion rv: objects of source not upserted
   * since startResync are dropped; source is synced at watermark rv. The
   * watermark is rv even if lower than before: the index now shows the
   * list, and claims no more than it.
   *
   * @param source The list+watch.
   * @param rv The list's `metadata.resourceVersion`.
   */
  finishResync(source: string, rv: string): void {
    if (this.#overflowed) return;
    const state = this.#source(source);
    for (const kept of state.all()) {
      if (kept.mark !== state.generation) this.#remove(state, kept);
    }
    state.synced = true;
    state.watermark = rv;
  }

  /**
   * A watch event of source: ADDED/MODIFIED upsert, DELETED removes,
   * BOOKMARK moves only the watermark; every event's
   * metadata.resourceVersion becomes source's watermark unless it is
   * numerically lower (the watermark never moves back). An event older than
   * the kept version of its object, or whose object is malformed, changes
   * no dependent; an event of another type changes nothing. Returns false
   * once overflowed.
   *
   * @param source The list+watch.
   * @param event The watch event.
   * @returns `false` when the index is overflowed.
   */
  apply(source: string, event: IndexEvent): boolean {
    if (this.#overflowed) return false;
    if (!isRecord(event)) return true;
    const state = this.#source(source);
    const { type, object } = event;
    switch (type) {
      case "ADDED":
      case "MODIFIED":
        if (!this.#upsert(state, object)) return false;
        break;
      case "DELETED":
        this.#delete(state, object);
        break;
      case "BOOKMARK":
        break;
      default:
        return true;
    }
    const metadata = isRecord(object) ? object.metadata : undefined;
    const rv = isRecord(metadata) ? metadata.resourceVersion : undefined;
    if (typeof rv === "string" && rv !== "") {
      const watermark = state.watermark;
      if (watermark === undefined || !isOlder(rv, watermark)) {
        state.watermark = rv;
      }
    }
    return true;
  }

  /**
   * Source's watch failed or stopped: it is no longer synced (its objects
   * are kept for the next resync, and still answered, but synced(source)
   * is false).
   *
   * @param source The list+watch.
   */
  unsync(source: string): void {
    const state = this.#sources.get(source);
    if (state !== undefined) state.synced = false;
  }

  /**
   * Forget a source entirely: its dependents, watermark and sync.
   *
   * @param source The list+watch.
   */
  dropSource(source: string): void {
    const state = this.#sources.get(source);
    if (state === undefined) return;
    for (const kept of state.all()) this.#remove(state, kept);
    this.#sources.delete(source);
  }

  /**
   * Whether source's last list completed and nothing unsynced it since.
   *
   * @param source The list+watch.
   * @returns `false` for an unknown source and once overflowed.
   */
  synced(source: string): boolean {
    return !this.#overflowed && this.#sources.get(source)?.synced === true;
  }

  /**
   * The watermark (last resourceVersion applied) of source, or undefined.
   *
   * @param source The list+watch.
   * @returns The watermark, `undefined` before any and once overflowed.
   */
  watermark(source: string): string | undefined {
    return this.#sources.get(source)?.watermark;
  }

  /**
   * Whether source is synced and its watermark is at least rv. kcp
   * resource versions are decimal etcd revisions, comparable only within
   * one source: both are compared as integers of any length; anything not
   * a decimal integer on either side gives `false` (no freshness is claimed
   * that cannot be shown).
   *
   * @param source The list+watch.
   * @param rv A resourceVersion of that source.
   * @returns `true` only when every event up to rv has been applied.
   */
  freshAt(source: string, rv: string): boolean {
    if (!this.synced(source)) return false;
    const watermark = this.#sources.get(source)?.watermark;
    if (watermark === undefined) return false;
    const order = compareDecimals(watermark, rv);
    return order !== undefined && order >= 0;
  }

  /**
   * Every kept dependent whose path names {cluster, namespace, name}, one
   * hit per referring field: `namespace` undefined means a cluster-scoped
   * object (then any reference namespace matches, as the review's
   * `referringFields` does), else the reference's namespace must be
   * `namespace`. Sorted by (namespace, name, path), then the indexes. All
   * sources, synced or not; nothing once overflowed.
   *
   * @param query The object under review, in its logical cluster.
   * @returns The hits, a new array.
   */
  referrers(
    query: { cluster: string; namespace?: string; name: string },
  ): IndexHit[] {
    if (this.#overflowed) return [];
    const { cluster, namespace, name } = query;
    const bucket = this.#reverse.get(reverseKey(cluster, name));
    if (bucket === undefined) return [];
    const hits: IndexHit[] = [];
    for (const kept of bucket instanceof Kept ? [bucket] : bucket) {
      for (let i = 0; i < kept.refCount; i++) {
        const ref = kept.ref(i);
        if (ref.refName !== name) continue;
        if (namespace !== undefined && ref.refNamespace !== namespace) continue;
        hits.push({
          cluster: kept.cluster,
          namespace: kept.namespace,
          name: kept.name,
          uid: kept.uid,
          resourceVersion: kept.resourceVersion,
          deleting: kept.deleting,
          path: ref.path,
          indexes: ref.indexes,
        });
      }
    }
    return hits.sort(compareHits);
  }

  /** The state of `source`, made if new. */
  #source(source: string): Source {
    let state = this.#sources.get(source);
    if (state === undefined) {
      state = new Source();
      this.#sources.set(source, state);
    }
    return state;
  }

  /** Keeps, replaces or drops one object of `state`; `false` on overflow. */
  #upsert(state: Source, object: unknown): boolean {
    const read = readObject(object);
    if (read === undefined) return true;
    const refs = readRefs(object, this.paths);
    if (refs === undefined) return true;
    const kept = state.find(read.cluster, read.namespace, read.name);
    if (kept !== undefined) {
      kept.mark = state.generation;
      if (isOlder(read.resourceVersion, kept.resourceVersion)) return true;
      if (refs.length === 0) {
        this.#remove(state, kept);
        return true;
      }
      const more = refs.length - kept.refCount;
      if (
        this.#references + more > this.#maxReferences ||
        this.#shared?.fits(0, more) === false
      ) {
        this.#overflow();
        return false;
      }
      this.#unlink(kept);
      kept.uid = read.uid;
      kept.resourceVersion = read.resourceVersion;
      kept.deleting = read.deleting;
      kept.setRefs(this.#internRefs(refs));
      this.#link(kept);
      return true;
    }
    if (refs.length === 0) return true;
    if (
      this.#size + 1 > this.#maxDependents ||
      this.#references + refs.length > this.#maxReferences ||
      this.#shared?.fits(1, refs.length) === false
    ) {
      this.#overflow();
      return false;
    }
    const interned = this.#internRefs(refs);
    const first = interned[0]!;
    const added = new Kept(
      this.#strings.intern(read.cluster),
      this.#strings.intern(read.namespace),
      read.name,
      read.uid,
      read.resourceVersion,
      read.deleting,
      state.generation,
      first.path,
      first.refNamespace,
      first.refName,
      first.indexes,
      undefined,
    );
    if (interned.length > 1) added.setRefs(interned);
    state.add(added);
    this.#size++;
    this.#shared?.count(1, 0);
    this.#link(added);
    return true;
  }

  /** Drops the kept version of a deleted object, unless it is newer. */
  #delete(state: Source, object: unknown): void {
    const read = readObject(object);
    if (read === undefined) return;
    const kept = state.find(read.cluster, read.namespace, read.name);
    if (kept === undefined) return;
    if (isOlder(read.resourceVersion, kept.resourceVersion)) return;
    this.#remove(state, kept);
  }

  /** Forgets `kept`, a dependent of `state`. */
  #remove(state: Source, kept: Kept): void {
    if (!state.delete(kept)) return;
    this.#unlink(kept);
    this.#strings.release(kept.cluster);
    this.#strings.release(kept.namespace);
    this.#size--;
    this.#shared?.count(-1, 0);
  }

  /** The kept form of `refs`: namespaces interned, counted as kept references. */
  #internRefs(refs: readonly RefFields[]): RefFields[] {
    this.#references += refs.length;
    this.#shared?.count(0, refs.length);
    return refs.map((r) => ({
      ...r,
      refNamespace: this.#strings.intern(r.refNamespace),
    }));
  }

  /** Files `kept` under every object it refers to. */
  #link(kept: Kept): void {
    for (let i = 0; i < kept.refCount; i++) {
      const ref = kept.ref(i);
      const key = reverseKey(kept.cluster, ref.refName);
      const bucket = this.#reverse.get(key);
      if (bucket === undefined) this.#reverse.set(key, kept);
      else if (bucket instanceof Kept) {
        if (bucket !== kept) this.#reverse.set(key, new Set([bucket, kept]));
      } else bucket.add(kept);
    }
  }

  /** Takes `kept` out from under every object it refers to, and releases its references. */
  #unlink(kept: Kept): void {
    for (let i = 0; i < kept.refCount; i++) {
      const ref = kept.ref(i);
      const key = reverseKey(kept.cluster, ref.refName);
      const bucket = this.#reverse.get(key);
      if (bucket instanceof Set) {
        bucket.delete(kept);
        if (bucket.size === 1) {
          this.#reverse.set(key, bucket.values().next().value!);
        }
      } else if (bucket === kept) this.#reverse.delete(key);
      this.#strings.release(ref.refNamespace);
    }
    this.#references -= kept.refCount;
    this.#shared?.count(0, -kept.refCount);
  }

  /**
   * Forgets everything and keeps nothing from now on, as after an
   * overflow; gives its room in the shared budget back. For an index no
   * longer wanted.
   */
  close(): void {
    this.#overflow();
  }

  /** Past the limits: forget everything, for good. */
  #overflow(): void {
    this.#overflowed = true;
    this.#sources.clear();
    this.#reverse.clear();
    this.#strings.clear();
    this.#shared?.count(-this.#size, -this.#references);
    this.#size = 0;
    this.#references = 0;
  }
}
