/**
 * Keeps the webhook's dependents indexes: one {@linkcode DependentsIndex}
 * per {@linkcode IndexSpec} (a dependent type, as bound from one export),
 * fed by one list+watch per kcp endpoint (resource versions are per shard:
 * each endpoint is its own source, never compared with another's). The
 * specs follow the admitted rules, each spec's endpoints its export's
 * endpoint slice (one virtual-workspace URL per shard); an
 * index whose spec changed is built anew (its objects are read again),
 * and until it has synced on every endpoint its type is listed.
 *
 * @module
 */
import {
  DependentsIndex,
  IndexBudget,
  type IndexFeedState,
} from "../dependents/mod.ts";
import { errorText, type Logger } from "../runtime/mod.ts";
import { type IndexSpec, sameSpec } from "./index_plan.ts";
import { SlowLists } from "./slow_lists.ts";
import type {
  IndexedDependents,
  IndexOutcome,
  ReadyIndex,
} from "./index_reads.ts";

/** References one index keeps per dependent it may keep, at most. */
export const REFERENCES_PER_DEPENDENT = 4;

/** One kcp endpoint the indexes are fed from (a shard, or a shard's virtual workspace). */
export interface IndexEndpoint {
  /** Names it as a source of the indexes. */
  source: string;
  /**
   * The collection URL of the spec's type in `cluster` there, or across
   * every cluster of the endpoint for `*`.
   */
  collection(spec: IndexSpec, cluster: string): string;
}

/** What the keeper asks of one feed (an `IndexFeed`, or a test's). */
export interface Feed {
  /** Starts it. */
  start(): void;
  /** Stops it; resolves once its requests ended (or were left behind). */
  stop(): Promise<void>;
  /** Where it is. */
  readonly state: IndexFeedState;
}

/** Options of {@linkcode IndexKeeper}. */
export interface IndexKeeperOptions {
  /** Builds the feed of `index` from the collection `url` of `source`. */
  feed(options: {
    index: DependentsIndex;
    url: string;
    source: string;
    onApplied: () => void;
  }): Feed;
  /**
   * A resource version of `url` (one cluster's collection) at least as new
   * as this call, a consistent read of one object; `undefined` when the
   * endpoint does not hold that cluster.
   */
  probe(url: string, signal: AbortSignal): Promise<string | undefined>;
  /**
   * Whether nothing in `url` (one cluster's collection) changed after
   * `since` up to at least `until` (see `ReadyIndex.quiet`); absent, idle
   * indexes never try it and their reviews list.
   */
  quiet?(
    url: string,
    options: { since: string; until: string; signal: AbortSignal },
  ): Promise<boolean>;
  /**
   * Follows where `spec`'s type is served (its export's endpoints), calling
   * `onEndpoints` with each new set, until stopped.
   */
  follow(
    spec: IndexSpec,
    onEndpoints: (endpoints: readonly IndexEndpoint[]) => void,
  ): { stop(): Promise<void> };
  /**
   * Most dependents every index keeps together, and
   * {@linkcode REFERENCES_PER_DEPENDENT} times as many references; past
   * either, the index that would pass it drops what it keeps and its type
   * is listed.
   */
  maxDependents: number;
  /** Where to log. */
  log: Logger;
  /** How reviews used the indexes. */
  observe?: (outcome: IndexOutcome) => void;
}

/** One index and its feeds. */
interface Entry {
  spec: IndexSpec;
  index: DependentsIndex;
  feeds: Map<string, { endpoint: IndexEndpoint; feed: Feed }>;
  waiters: Set<() => void>;
  /** When the index last applied something (`performance.now()`). */
  lastApplied: number;
  endpoints: readonly IndexEndpoint[];
  follower?: { stop(): Promise<void> };
}

/** The indexes of the admitted rules, fed from every endpoint. */
export class IndexKeeper implements IndexedDependents {
  readonly #options: IndexKeeperOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #stopping = new Set<Promise<void>>();
  /** What every index keeps together. */
  readonly #budget: IndexBudget;
  #stopped = false;
  /** Lists slower than the freshness budget lately: idle indexes prove first there. */
  readonly slowLists: SlowLists = new SlowLists();

  /** A keeper with no index yet: {@linkcode IndexKeeper.update} gives it specs. */
  constructor(options: IndexKeeperOptions) {
    this.#options = options;
    // One dependent may name many objects: references are bounded too, at
    // a few per dependent.
    this.#budget = new IndexBudget({
      maxDependents: options.maxDependents,
      maxReferences: options.maxDependents * REFERENCES_PER_DEPENDENT,
    });
  }

  /** Counts how a review used an index. */
  observe(outcome: IndexOutcome): void {
    this.#options.observe?.(outcome);
  }

  /** The indexes to keep: new specs get an index, changed ones a new one, gone ones are dropped. */
  update(specs: ReadonlyMap<string, IndexSpec>): void {
    if (this.#stopped) return;
    for (const [key, entry] of this.#entries) {
      const wanted = specs.get(key);
      if (wanted !== undefined && sameSpec(wanted, entry.spec)) continue;
      this.#drop(key, entry);
    }
    for (const [key, spec] of specs) {
      if (this.#entries.has(key)) continue;
      const entry: Entry = {
        spec,
        index: new DependentsIndex(spec.paths, {
          maxDependents: this.#options.maxDependents,
          shared: this.#budget,
        }),
        feeds: new Map(),
        waiters: new Set(),
        lastApplied: -Infinity,
        endpoints: [],
      };
      this.#entries.set(key, entry);
      this.#options.log.info("indexing dependents", {
        type: key,
        paths: spec.pathKeys,
      });
      entry.follower = this.#options.follow(spec, (endpoints) => {
        if (this.#entries.get(key) !== entry) return;
        entry.endpoints = endpoints;
        this.#follow(entry);
      });
    }
  }

  /** The index of `key` when it can answer: synced on every endpoint, not overflowed. */
  ready(key: string): ReadyIndex | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.feeds.size === 0) return undefined;
    const { index } = entry;
    if (index.overflowed) return undefined;
    const sources = [...entry.feeds.keys()];
    if (!sources.every((s) => index.synced(s))) return undefined;
    return {
      index,
      sources,
      pathKeys: entry.spec.pathKeys,
      probe: (cluster, signal) => this.#probe(entry, cluster, signal),
      changed: (ms, signal) => changed(entry, ms, signal),
      idleMs: () => performance.now() - entry.lastApplied,
      ...(this.#options.quiet === undefined ? {} : {
        quiet: (cluster, { source, since, until, signal }) => {
          const feed = entry.feeds.get(source);
          if (feed === undefined) return Promise.resolve(false);
          return this.#options.quiet!(
            feed.endpoint.collection(entry.spec, cluster),
            { since, until, signal },
          );
        },
      }),
    };
  }

  /** Each index's feeds' states, by index key and source (for metrics and logs). */
  states(): Map<string, Map<string, IndexFeedState>> {
    const states = new Map<string, Map<string, IndexFeedState>>();
    for (const [key, entry] of this.#entries) {
      states.set(
        key,
        new Map([...entry.feeds].map(([s, { feed }]) => [s, feed.state])),
      );
    }
    return states;
  }

  /** How many dependents each index keeps, by key. */
  sizes(): Map<string, number> {
    return new Map(
      [...this.#entries].map(([key, entry]) => [key, entry.index.size]),
    );
  }

  /** Stops every feed and waits for them. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const [key, entry] of this.#entries) this.#drop(key, entry);
    await Promise.all([...this.#stopping]);
  }

  /** Starts the feeds of endpoints `entry` lacks and stops those of endpoints gone. */
  #follow(entry: Entry): void {
    const wanted = new Map(entry.endpoints.map((e) => [e.source, e]));
    for (const [source, { feed }] of entry.feeds) {
      if (wanted.has(source)) continue;
      entry.feeds.delete(source);
      entry.index.dropSource(source);
      this.#stop(feed);
    }
    for (const [source, endpoint] of wanted) {
      if (entry.feeds.has(source)) continue;
      const feed = this.#options.feed({
        index: entry.index,
        url: endpoint.collection(entry.spec, "*"),
        source,
        onApplied: () => {
          entry.lastApplied = performance.now();
          wake(entry);
        },
      });
      entry.feeds.set(source, { endpoint, feed });
      feed.start();
    }
  }

  #drop(key: string, entry: Entry): void {
    this.#entries.delete(key);
    if (entry.follower !== undefined) this.#stop(entry.follower);
    const feeds = [...entry.feeds.values()].map(({ feed }) => this.#stop(feed));
    entry.feeds.clear();
    // Its room in the shared budget comes back once no feed writes to it.
    const closing = Promise.all(feeds).then(() => entry.index.close());
    this.#stopping.add(closing);
    closing.then(() => this.#stopping.delete(closing));
    wake(entry);
    this.#options.log.info("no longer indexing dependents", { type: key });
  }

  #stop(feed: { stop(): Promise<void> }): Promise<void> {
    const stopping = feed.stop().catch((error) => {
      this.#options.log.warn("stopping an index feed failed", {
        error: errorText(error),
      });
    });
    this.#stopping.add(stopping);
    stopping.then(() => this.#stopping.delete(stopping));
    return stopping;
  }

  async #probe(
    entry: Entry,
    cluster: string,
    signal: AbortSignal,
  ): Promise<ReadonlyMap<string, string>> {
    const feeds = [...entry.feeds];
    const versions = await Promise.all(
      feeds.map(([, { endpoint }]) =>
        this.#options.probe(endpoint.collection(entry.spec, cluster), signal)
      ),
    );
    const found = new Map<string, string>();
    feeds.forEach(([source], i) => {
      const version = versions[i];
      if (version !== undefined) found.set(source, version);
    });
    return found;
  }
}

/** Wakes the reviews waiting for `entry` to change. */
function wake(entry: Entry): void {
  const waiters = [...entry.waiters];
  entry.waiters.clear();
  for (const resolve of waiters) resolve();
}

/** Resolves at `entry`'s next change, after `ms`, or when `signal` aborts. */
function changed(
  entry: Entry,
  ms: number,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      entry.waiters.delete(done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    if (signal.aborted) return done();
    signal.addEventListener("abort", done, { once: true });
    entry.waiters.add(done);
  });
}
