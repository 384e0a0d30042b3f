/**
 * One fake {@linkcode DependentSource} for the webhook's unit tests: it
 * records every query and signal, answers lists from listings keyed by
 * resource (pages, an error, a hang, or a generator of the test's own), the
 * live object with uid `uid-<name>` unless told otherwise, and the
 * workspace's deletion mark and bindings as set.
 *
 * @module
 */
import type {
  DependentQuery,
  DependentSource,
  ObjectQuery,
} from "../lib/webhook/mod.ts";

/** How {@linkcode FakeDependentSource} answers a list of one dependent type. */
export type Listing =
  | { pages: readonly (readonly unknown[])[]; thenThrow?: unknown }
  | { error: unknown }
  | { hang: true }
  | {
    run: (
      query: DependentQuery,
      signal: AbortSignal,
    ) => AsyncIterable<readonly unknown[]>;
  };

/** Resolves when `promise` does, rejects with the signal's reason on abort. */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * How the fake answers a read of the live object: its uid (and, for a
 * metadata read, more of its metadata), or a failure.
 */
export type Live =
  | { uid: string | undefined; metadata?: Record<string, unknown> }
  | { error: unknown }
  | { hang: true };

/**
 * How the fake answers a lookup of an owner (`ownerObject`) or a
 * Namespace's metadata (`liveMetadata` of `namespaces`): the object, absent
 * (`undefined`), an error, or never.
 */
export type OwnerAnswer =
  | Record<string, unknown>
  | undefined
  | { error: unknown }
  | { hang: true };

/**
 * Records every query and answers it from `listings`, keyed by resource.
 * The live object under review has uid `uid-<name>` (as {@linkcode vpc}
 * builds it) unless `live` says otherwise.
 */
export class FakeDependentSource implements DependentSource {
  readonly queries: DependentQuery[] = [];
  readonly signals: AbortSignal[] = [];
  readonly objectQueries: ObjectQuery[] = [];
  readonly #listings: Map<string, Listing>;
  readonly #live: Live | undefined;

  constructor(listings: Record<string, Listing> = {}, live?: Live) {
    this.#listings = new Map(Object.entries(listings));
    this.#live = live;
  }

  /**
   * Whether a hang ignores the signal too, as a misbehaving source would:
   * then only the reader's own deadline can end it.
   */
  ignoreSignals = false;

  /** Never settles; rejects on the signal's abort unless it is ignored. */
  #hang(signal: AbortSignal): Promise<never> {
    const never = new Promise<never>(() => {});
    return this.ignoreSignals ? never : untilAborted(never, signal);
  }

  /**
   * How the fake answers when the workspace was marked for deletion:
   * `undefined` (not being deleted, the default), a date, an error to
   * throw, or never.
   */
  deletedAt: Date | undefined | { error: unknown } | { hang: true } = undefined;
  /** The logical clusters asked about. */
  readonly workspaceQueries: string[] = [];

  async workspaceDeletedAt(
    cluster: string,
    signal: AbortSignal,
  ): Promise<Date | undefined> {
    this.workspaceQueries.push(cluster);
    await Promise.resolve();
    const deletedAt = this.deletedAt;
    if (deletedAt === undefined || deletedAt instanceof Date) return deletedAt;
    if ("error" in deletedAt) throw deletedAt.error;
    return await this.#hang(signal);
  }

  /**
   * What the workspace binds, by `group/resource`: an identity per type,
   * or an error to throw. @default {nothing bound}
   */
  bound: ReadonlyMap<string, string> | { error: unknown } = new Map();
  /** How often the bindings were read. */
  boundReads = 0;

  /**
   * What a kept (not fresh) read of the bindings answers, when it differs
   * from {@linkcode bound}: a cache a few seconds behind. @default {bound}
   */
  keptBound: ReadonlyMap<string, string> | undefined = undefined;
  /** Whether each read of the bindings asked for a fresh answer. */
  readonly boundFresh: boolean[] = [];

  async boundIdentities(
    _cluster?: string,
    _signal?: AbortSignal,
    options: { fresh?: boolean } = {},
  ): Promise<ReadonlyMap<string, string>> {
    this.boundReads++;
    this.boundFresh.push(options.fresh ?? false);
    await Promise.resolve();
    if (!options.fresh && this.keptBound !== undefined) return this.keptBound;
    if ("error" in this.bound) throw this.bound.error;
    return this.bound as ReadonlyMap<string, string>;
  }

  async liveUid(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    this.objectQueries.push(query);
    await Promise.resolve();
    const live = this.#live;
    if (live === undefined) return `uid-${query.name}`;
    if ("error" in live) throw live.error;
    if ("hang" in live) {
      return await this.#hang(signal);
    }
    return live.uid;
  }

  /**
   * Owners and Namespaces by `<resource>/<name>` (`namespaces/team-a`,
   * `networks/net-a`); a key not set means the object does not exist.
   */
  readonly owners = new Map<string, OwnerAnswer>();
  /** Every owner lookup, in order. */
  readonly ownerQueries: ObjectQuery[] = [];

  async liveMetadata(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    if (
      query.resource.resource === "namespaces" && query.resource.group === ""
    ) {
      this.objectQueries.push(query);
      const found = await this.#answer(`namespaces/${query.name}`, signal);
      const metadata = found?.metadata;
      return typeof metadata === "object" && metadata !== null
        ? metadata as Record<string, unknown>
        : undefined;
    }
    const uid = await this.liveUid(query, signal);
    if (uid === undefined) return undefined;
    const live = this.#live;
    const more = live !== undefined && "metadata" in live ? live.metadata : {};
    return { name: query.name, ...more, uid };
  }

  async ownerObject(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    this.ownerQueries.push(query);
    return await this.#answer(
      `${query.resource.resource}/${query.name}`,
      signal,
    );
  }

  async #answer(
    key: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    await Promise.resolve();
    const found = this.owners.get(key);
    if (found === undefined) return undefined;
    if ("error" in found && Object.keys(found).length === 1) throw found.error;
    if ("hang" in found && found.hang === true) return await this.#hang(signal);
    return found;
  }

  /** The queries, reduced to plain data (dependent as group/version/resource). */
  get plainQueries(): DependentQuery[] {
    return this.queries.map((q) => ({
      cluster: q.cluster,
      ...(Object.hasOwn(q, "namespace") ? { namespace: q.namespace! } : {}),
      dependent: {
        group: q.dependent.group,
        version: q.dependent.version,
        resource: q.dependent.resource,
      },
    }));
  }

  /** The resources listed, in the order they were requested. */
  get listed(): string[] {
    return this.queries.map((q) => q.dependent.resource);
  }

  pages(
    query: DependentQuery,
    signal: AbortSignal,
  ): AsyncIterable<readonly unknown[]> {
    this.queries.push(query);
    this.signals.push(signal);
    const listing = this.#listings.get(query.dependent.resource);
    const hang = (signal: AbortSignal) => this.#hang(signal);
    return (async function* () {
      if (listing === undefined) {
        throw new Error(
          `fake source: unexpected list of ${query.dependent.resource}`,
        );
      }
      if ("run" in listing) {
        yield* listing.run(query, signal);
      } else if ("error" in listing) {
        throw listing.error;
      } else if ("hang" in listing) {
        await hang(signal);
      } else {
        for (const page of listing.pages) {
          await Promise.resolve();
          yield page;
        }
        if ("thenThrow" in listing) throw listing.thenThrow;
      }
    })();
  }
}
