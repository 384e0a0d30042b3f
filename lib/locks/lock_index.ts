/**
 * The webhook's index of Locks: for an object (logical cluster, group,
 * resource, namespace, name) and an operation, the Locks that deny it. It
 * holds Lock metadata, reasons and expiries only. Versions do not matter: a
 * Lock on `vpcs.network.example.com` holds whatever version a request uses.
 * A Lock with `spec.expiresAt` holds until then plus the index's skew
 * allowance, by the clock reading each query passes in (`expiry.ts`).
 *
 * @example Usage
 * ```ts
 * import { LockIndex } from "./lock_index.ts";
 *
 * const index = new LockIndex();
 * index.replace([]);
 * index.find(
 *   { cluster: "c", group: "g.io", resource: "things", namespace: "ns", name: "a", operation: "Delete" },
 *   { now: Date.now() },
 * ); // []
 * ```
 *
 * @module
 */
import { sinceOf } from "../causes/mod.ts";
import { compareStrings } from "../runtime/mod.ts";
import type { Lock, LockOperation } from "./api.ts";
import {
  DEFAULT_LOCK_EXPIRY_SKEW_MS,
  lockExpiresAt,
  lockHoldsAt,
} from "./expiry.ts";

/** A valid Lock in its logical cluster. */
export interface ClusterLock {
  /** The logical cluster the Lock is in (and its target). */
  cluster: string;
  /** The Lock. */
  lock: Lock;
}

/** A Lock that denies a request, as a denial names it. */
export interface LockHold {
  /** The Lock's namespace. */
  namespace: string;
  /** The Lock's name. */
  name: string;
  /** Its `spec.reason`. */
  reason: string;
  /** Its `spec.expiresAt`, when it has one. */
  expiresAt?: string;
  /** Its `metadata.creationTimestamp` when RFC 3339: it holds since then. */
  since?: string;
}

/** The object and operation a request is about. */
export interface LockQuery {
  /** The object's logical cluster. */
  cluster: string;
  /** API group (`""` for core). */
  group: string;
  /** Plural resource. */
  resource: string;
  /** The object's namespace; absent for a cluster-scoped object. */
  namespace?: string;
  /** The object's name. */
  name: string;
  /** The operation. */
  operation: LockOperation;
}

/** Options for {@linkcode LockIndex}. */
export interface LockIndexOptions {
  /**
   * How long after its `spec.expiresAt` a Lock still holds, by the clock of
   * the query (`--lock-expiry-skew`). @default {DEFAULT_LOCK_EXPIRY_SKEW_MS}
   */
  expirySkewMs?: number;
}

/** One Lock of an object, as the index keeps it. */
interface IndexEntry {
  hold: LockHold;
  operations: LockOperation[];
  /** `spec.expiresAt` in ms; absent: never. */
  expiresAt?: number;
}

/** Locks indexed by the object they lock. */
export class LockIndex {
  #index = new Map<string, IndexEntry[]>();
  #types = new Set<string>();
  #loaded = false;
  readonly #skewMs: number;

  /** An empty index, not loaded. */
  constructor(options: LockIndexOptions = {}) {
    this.#skewMs = options.expirySkewMs ?? DEFAULT_LOCK_EXPIRY_SKEW_MS;
  }

  /** Whether the Locks have been loaded once (until then the webhook must not decide). */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** Replaces every Lock; marks the index loaded. */
  replace(locks: readonly ClusterLock[]): void {
    const index = new Map<string, IndexEntry[]>();
    const types = new Set<string>();
    for (const { cluster, lock } of locks) {
      const { target } = lock.spec;
      types.add(typeKey({ cluster, ...target }));
      const namespaces = target.group === "" &&
        target.resource === "namespaces";
      const key = objectKey({
        cluster,
        group: target.group,
        resource: target.resource,
        ...(namespaces ? {} : { namespace: lock.metadata.namespace }),
        name: target.name,
      });
      const entries = index.get(key) ?? [];
      const expiresAt = lockExpiresAt(lock.spec);
      const since = sinceOf(lock);
      entries.push({
        hold: {
          namespace: lock.metadata.namespace,
          name: lock.metadata.name,
          reason: lock.spec.reason,
          ...(expiresAt === undefined
            ? {}
            : { expiresAt: lock.spec.expiresAt! }),
          ...(since === undefined ? {} : { since }),
        },
        operations: [...lock.spec.operations],
        ...(expiresAt === undefined ? {} : { expiresAt }),
      });
      index.set(key, entries);
    }
    for (const entries of index.values()) {
      entries.sort((a, b) =>
        compareStrings(a.hold.namespace, b.hold.namespace) ||
        compareStrings(a.hold.name, b.hold.name)
      );
    }
    this.#index = index;
    this.#types = types;
    this.#loaded = true;
  }

  /**
   * Whether any Lock in `query.cluster` names the type `query.group` and
   * `query.resource`, whatever its object: a review of such a type is
   * confirmed against the live object whether or not a Lock holds the
   * object, so that a forged review cannot tell a locked object from a free
   * one. An expired Lock still counts here: the answer never tells.
   */
  covers(query: Pick<LockQuery, "cluster" | "group" | "resource">): boolean {
    return this.#types.has(typeKey(query));
  }

  /**
   * The Locks that deny `query.operation` on the object when the clock
   * reads `options.now` (ms since the epoch), sorted by namespace and name:
   * a Lock past its `expiresAt` plus the skew allowance denies nothing.
   */
  find(query: LockQuery, options: { now: number }): LockHold[] {
    const namespaces = query.group === "" && query.resource === "namespaces";
    const key = objectKey({
      ...query,
      ...(namespaces ? { namespace: undefined } : {}),
    });
    return (this.#index.get(key) ?? [])
      .filter((entry) =>
        entry.operations.includes(query.operation) &&
        lockHoldsAt(entry.expiresAt, {
          now: options.now,
          skewMs: this.#skewMs,
        })
      )
      .map((entry) => entry.hold);
  }
}

/**
 * `cannot delete vpcs/core: locked by Lock team-a/prod ("production VPC")`,
 * the part of a denial that names the Locks (at most three, then a count,
 * each with its expiry if it has one: `("production VPC", until
 * 2026-12-01T18:00:00Z)`), with how to unlock.
 */
export function lockedMessage(holds: readonly LockHold[]): string {
  const shown = holds.slice(0, 3).map((h) =>
    `Lock ${h.namespace}/${h.name} (${JSON.stringify(h.reason)}${
      h.expiresAt === undefined ? "" : `, until ${h.expiresAt}`
    })`
  );
  const more = holds.length > shown.length
    ? ` and ${holds.length - shown.length} more`
    : "";
  return `locked by ${
    shown.join(", ")
  }${more}: deleting the Lock unlocks it; the skip-protection annotation does not`;
}

function objectKey(
  query: Omit<LockQuery, "operation" | "namespace"> & {
    namespace?: string | undefined;
  },
): string {
  return JSON.stringify([
    query.cluster,
    query.group,
    query.resource,
    query.namespace ?? "",
    query.name,
  ]);
}

function typeKey(
  query: Pick<LockQuery, "cluster" | "group" | "resource">,
): string {
  return JSON.stringify([query.cluster, query.group, query.resource]);
}
