/**
 * What the dependents index ({@linkcode IndexHit} and the rest of its
 * public shapes) keeps and how it orders it, apart from the index itself
 * (`dependents_index.ts`):
 *
 * - the shapes it is given and gives: the paths it reads, watch events,
 *   hits and its limits;
 * - the records it keeps: a dependent with its references ({@linkcode Kept},
 *   the first reference in its own fields), and one source's dependents by
 *   cluster, namespace and name ({@linkcode Source});
 * - the keys they are filed under ({@linkcode scopeKey},
 *   {@linkcode reverseKey}), which cannot collide whatever the strings hold;
 * - reading an object's identity ({@linkcode readObject}), as far as a
 *   malformed object allows, never throwing;
 * - the orders: resourceVersions as decimals of any length
 *   ({@linkcode compareDecimals}, {@linkcode isOlder}) and hits
 *   ({@linkcode compareHits}).
 *
 * Pure: no I/O, no clock.
 *
 * @example Usage
 * ```ts
 * import { compareDecimals, isOlder, readObject } from "./kept.ts";
 *
 * compareDecimals("9", "10"); // negative: 9 is lower
 * isOlder("0010", "10"); // false: the same revision
 * readObject({ metadata: { name: "vm-1" } });
 * // { cluster: "", namespace: "", name: "vm-1", uid: "",
 * //   resourceVersion: "", deleting: false }
 * readObject({ metadata: {} }); // undefined: no name
 * ```
 *
 * @module
 */
import type { IndexBudget } from "./index_budget.ts";
import { type FieldPath, referencesOf } from "../rules/mod.ts";
import { compareStrings, isRecord } from "../runtime/mod.ts";

/** How the index reads one rule's references out of a dependent of its type. */
export interface IndexedPath {
  /** Where the referenced name is (`fieldRef.path`). */
  fieldPath: FieldPath;
  /** Where the referenced namespace is (`fieldRef.namespacePath`), if the rule says. */
  namespacePath?: FieldPath;
}

/** What a watch (or a list) says of one object. BOOKMARK carries only metadata.resourceVersion. */
export interface IndexEvent {
  /** The watch event's type. */
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  /** The object, as decoded from JSON: anything, since tenants write it. */
  object: unknown;
}

/** One dependent that refers to a queried object, as kept. */
export interface IndexHit {
  /** The dependent's logical cluster (its `kcp.io/cluster` annotation). */
  cluster: string;
  /** The dependent's namespace, `""` when cluster-scoped. */
  namespace: string;
  /** The dependent's name. */
  name: string;
  /** The dependent's uid, `""` if it had none. */
  uid: string;
  /** The dependent's resourceVersion, `""` if it had none. */
  resourceVersion: string;
  /** Whether it has a deletionTimestamp (for protectWhile: Active). */
  deleting: boolean;
  /** Which path (index into the index's paths) refers. */
  path: number;
  /** The list index taken at each [*] of that path (for naming the field, as referencesOf gives). */
  indexes: readonly number[];
}

/** The limits of a `DependentsIndex`. */
export interface DependentsIndexOptions {
  /** Most dependents kept (all sources); past it the index is overflowed and answers nothing. */
  maxDependents: number;
  /**
   * Most references kept (all dependents, all sources); past it the index
   * is overflowed too. Unlimited when absent. One dependent may carry a long
   * list of references, so this bounds memory where `maxDependents` alone
   * cannot.
   */
  maxReferences?: number;
  /**
   * Room shared with other indexes (the webhook's one bound over every
   * dependent type): past it this index is overflowed too.
   */
  shared?: IndexBudget;
}

/** The kcp annotation that names an object's logical cluster. */
const CLUSTER_ANNOTATION = "kcp.io/cluster";

/** A resourceVersion kcp can compare: a decimal etcd revision. */
const DECIMAL = /^[0-9]+$/;

/** The one empty index list every reference without `[*]` shares. */
const NO_INDEXES: readonly number[] = Object.freeze([]);

/** Single index lists `[i]` below this are shared, not kept per reference. */
const SHARED_INDEXES = 256;

/** `[0]`, `[1]`, ... up to {@linkcode SHARED_INDEXES}, frozen and shared. */
const SINGLE_INDEXES: readonly (readonly number[])[] = Array.from(
  { length: SHARED_INDEXES },
  (_, i) => Object.freeze([i]),
);

/** One reference of a kept dependent: which path, to which namespace and name. */
export interface RefFields {
  /** Which path of the index found it. */
  readonly path: number;
  /** The referenced namespace (interned). */
  readonly refNamespace: string;
  /** The referenced name. */
  readonly refName: string;
  /** The list index at each `[*]` of the path. */
  readonly indexes: readonly number[];
}

/** A kept dependent's second and later references. */
export class Ref implements RefFields {
  /**
   * @param path Which path of the index found it.
   * @param refNamespace The referenced namespace (interned).
   * @param refName The referenced name.
   * @param indexes The list index at each `[*]` of the path.
   */
  constructor(
    readonly path: number,
    readonly refNamespace: string,
    readonly refName: string,
    readonly indexes: readonly number[],
  ) {}
}

/**
 * One kept dependent: its identity, what hits show of it, and its
 * references, the first in its own fields (most dependents have one),
 * the others in `more`.
 */
export class Kept implements RefFields {
  /**
   * @param cluster Its logical cluster (interned).
   * @param namespace Its namespace (interned), `""` when cluster-scoped.
   * @param name Its name.
   * @param uid Its uid.
   * @param resourceVersion Its resourceVersion.
   * @param deleting Whether it has a deletionTimestamp.
   * @param mark The resync generation of its source it was last seen in.
   * @param path Its first reference's path.
   * @param refNamespace Its first reference's namespace (interned).
   * @param refName Its first reference's name.
   * @param indexes Its first reference's list indexes.
   * @param more Its other references, if any.
   */
  constructor(
    readonly cluster: string,
    readonly namespace: string,
    readonly name: string,
    public uid: string,
    public resourceVersion: string,
    public deleting: boolean,
    public mark: number,
    public path: number,
    public refNamespace: string,
    public refName: string,
    public indexes: readonly number[],
    public more: readonly Ref[] | undefined,
  ) {}

  /** How many references it has. */
  get refCount(): number {
    return 1 + (this.more?.length ?? 0);
  }

  /** Its `i`th reference, `i` below {@linkcode Kept.refCount}. */
  ref(i: number): RefFields {
    return i === 0 ? this : this.more![i - 1]!;
  }

  /** Takes `refs` (not empty, interned) as its references. */
  setRefs(refs: readonly RefFields[]): void {
    const first = refs[0]!;
    this.path = first.path;
    this.refNamespace = first.refNamespace;
    this.refName = first.refName;
    this.indexes = first.indexes;
    this.more = refs.length === 1
      ? undefined
      : refs.slice(1).map((r) =>
        new Ref(r.path, r.refNamespace, r.refName, r.indexes)
      );
  }
}

/** The dependents of one reverse key: one, or a set of several. */
export type Bucket = Kept | Set<Kept>;

/** The dependents of one cluster's namespace: one, or a map of several by name. */
type Scope = Kept | Map<string, Kept>;

/** What one source (a list+watch) has said. */
export class Source {
  /**
   * Kept dependents by {@linkcode scopeKey} (cluster and namespace), then
   * name; a namespace with one dependent keeps it without a map.
   */
  readonly #scopes = new Map<string, Scope>();
  /** Whether its last list completed and its watch has not failed since. */
  synced = false;
  /** The last resourceVersion applied. */
  watermark: string | undefined = undefined;
  /** Counts resyncs: a dependent whose mark is older was not seen in the current one. */
  generation = 0;

  /** The kept dependent (cluster, namespace, name), if any. */
  find(cluster: string, namespace: string, name: string): Kept | undefined {
    const scope = this.#scopes.get(scopeKey(cluster, namespace));
    if (scope instanceof Kept) return scope.name === name ? scope : undefined;
    return scope?.get(name);
  }

  /** Keeps `kept`, of an identity not kept yet. */
  add(kept: Kept): void {
    const key = scopeKey(kept.cluster, kept.namespace);
    const scope = this.#scopes.get(key);
    if (scope === undefined) this.#scopes.set(key, kept);
    else if (scope instanceof Kept) {
      this.#scopes.set(key, new Map([[scope.name, scope], [kept.name, kept]]));
    } else scope.set(kept.name, kept);
  }

  /** Forgets `kept`; whether it was kept. */
  delete(kept: Kept): boolean {
    const key = scopeKey(kept.cluster, kept.namespace);
    const scope = this.#scopes.get(key);
    if (scope === kept) {
      this.#scopes.delete(key);
      return true;
    }
    if (!(scope instanceof Map) || scope.get(kept.name) !== kept) return false;
    scope.delete(kept.name);
    if (scope.size === 1) this.#scopes.set(key, scope.values().next().value!);
    return true;
  }

  /** Every kept dependent, as a new array. */
  all(): Kept[] {
    const all: Kept[] = [];
    for (const scope of this.#scopes.values()) {
      if (scope instanceof Kept) all.push(scope);
      else all.push(...scope.values());
    }
    return all;
  }
}

/** What the index reads of one object: its identity and what hits show. */
export interface Read {
  /** Its logical cluster (its `kcp.io/cluster` annotation), `""` if none. */
  cluster: string;
  /** Its namespace, `""` when cluster-scoped. */
  namespace: string;
  /** Its name, never `""`. */
  name: string;
  /** Its uid, `""` if it had none. */
  uid: string;
  /** Its resourceVersion, `""` if it had none. */
  resourceVersion: string;
  /** Whether it has a deletionTimestamp. */
  deleting: boolean;
}

/**
 * The key of a cluster's namespace: unambiguous whatever the strings hold
 * (NUL too), since the cluster carries its length.
 */
export function scopeKey(cluster: string, namespace: string): string {
  return `${cluster.length}\u0000${cluster}${namespace}`;
}

/**
 * The reverse key of a referenced name in a cluster: unambiguous whatever
 * the strings hold (NUL too), since the cluster carries its length.
 */
export function reverseKey(cluster: string, name: string): string {
  return `${cluster.length}\u0000${cluster}${name}`;
}

/**
 * Every reference `object` has at `paths` (a reference's `path` indexes
 * them): those whose name and namespace are strings; `undefined` when
 * reading threw (a tenant's object is read as far as it goes, never
 * thrown on).
 */
export function readRefs(
  object: unknown,
  paths: readonly IndexedPath[],
): RefFields[] | undefined {
  try {
    const refs: RefFields[] = [];
    for (let path = 0; path < paths.length; path++) {
      for (const r of referencesOf(object, paths[path]!)) {
        if (typeof r.name !== "string" || typeof r.namespace !== "string") {
          continue;
        }
        refs.push({
          path,
          refNamespace: r.namespace,
          refName: r.name,
          indexes: sharedIndexes(r.indexes),
        });
      }
    }
    return refs;
  } catch {
    return undefined;
  }
}

/** Identity and shown fields of an object; `undefined` when it has no name. */
export function readObject(object: unknown): Read | undefined {
  if (!isRecord(object)) return undefined;
  const metadata = object.metadata;
  if (!isRecord(metadata)) return undefined;
  const { name, namespace, uid, resourceVersion, deletionTimestamp } = metadata;
  if (typeof name !== "string" || name === "") return undefined;
  const annotations = metadata.annotations;
  const cluster = isRecord(annotations)
    ? annotations[CLUSTER_ANNOTATION]
    : undefined;
  return {
    cluster: typeof cluster === "string" ? cluster : "",
    namespace: typeof namespace === "string" ? namespace : "",
    name,
    uid: typeof uid === "string" ? uid : "",
    resourceVersion: typeof resourceVersion === "string" ? resourceVersion : "",
    deleting: typeof deletionTimestamp === "string" && deletionTimestamp !== "",
  };
}

/** `indexes`, or an equal shared list for the common short ones. */
export function sharedIndexes(indexes: readonly number[]): readonly number[] {
  if (indexes.length === 0) return NO_INDEXES;
  if (indexes.length === 1) {
    const shared = SINGLE_INDEXES[indexes[0]!];
    if (shared !== undefined) return shared;
  }
  return Object.freeze([...indexes]);
}

/**
 * `a` and `b` as decimal integers of any length: negative, zero or
 * positive as `a` is lower, equal or higher; `undefined` unless both are
 * decimal. Equal to comparing `BigInt(a)` and `BigInt(b)`, without
 * building either.
 */
export function compareDecimals(a: string, b: string): number | undefined {
  if (!DECIMAL.test(a) || !DECIMAL.test(b)) return undefined;
  const x = withoutLeadingZeros(a);
  const y = withoutLeadingZeros(b);
  return x.length - y.length || compareStrings(x, y);
}

/** A decimal without its leading zeros, `"0"` for zero. */
function withoutLeadingZeros(decimal: string): string {
  let i = 0;
  while (i < decimal.length - 1 && decimal[i] === "0") i++;
  return decimal.slice(i);
}

/** Whether resourceVersion `a` is older than `b`: both decimal, `a` lower. */
export function isOlder(a: string, b: string): boolean {
  const order = compareDecimals(a, b);
  return order !== undefined && order < 0;
}

/** (namespace, name, path, indexes), then the rest, so the order is total. */
export function compareHits(a: IndexHit, b: IndexHit): number {
  return compareStrings(a.namespace, b.namespace) ||
    compareStrings(a.name, b.name) || a.path - b.path ||
    compareIndexes(a.indexes, b.indexes) ||
    compareStrings(a.cluster, b.cluster) || compareStrings(a.uid, b.uid) ||
    compareStrings(a.resourceVersion, b.resourceVersion) ||
    Number(a.deleting) - Number(b.deleting);
}

/** Lists of indexes in lexicographic order, a prefix first. */
function compareIndexes(
  a: readonly number[],
  b: readonly number[],
): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    const order = a[i]! - b[i]!;
    if (order !== 0) return order;
  }
  return a.length - b.length;
}
