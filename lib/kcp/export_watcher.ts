/**
 * Collections behind every virtual-workspace endpoint of an APIExport:
 * reads the export's APIExportEndpointSlice in the export's workspace, and
 * for each `status.endpoints[].url` runs one list+watch per collection
 * (`<url>/clusters/*\/<path>`), starting and stopping them as the slice
 * changes. Every process watches the export once, through one of these:
 * the controller (rules, Locks, bindings, webhook configurations), the
 * webhook and `controller grants` (rules and Locks, each read through a
 * {@linkcode CollectionView} that parses its objects). Each collection is
 * listed again every `relistIntervalMs` (5 minutes), so that objects kcp
 * served under an older schema of their type are read again.
 *
 * @module
 */
import {
  type BackoffOptions,
  type Logger,
  PassScheduler,
} from "../runtime/mod.ts";
import { clusterOf, Informer, objectKey } from "./informer.ts";
import { clusterUrl } from "./urls.ts";
import type { KubeClient } from "./kube_client.ts";
import type { KubeObject } from "./kube_types.ts";

/** One collection to follow below every endpoint. */
export interface Collection {
  /** Path below `<endpoint>/clusters/*`, e.g. `/apis/g/v1/things`. */
  path: string;
  /** Label selector for list and watch. */
  labelSelector?: string;
}

/** An object together with the endpoint it was read from. */
export interface EndpointObject {
  /** The virtual-workspace URL the object came from. */
  endpoint: string;
  /** The object. */
  object: KubeObject;
}

/** Options for {@linkcode ExportWatcher}. */
export interface ExportWatcherOptions<C extends string> {
  /** Client for the export's workspace and the virtual workspaces. */
  client: KubeClient;
  /** URL of the export's workspace (`.../clusters/root:dep-ctrl`). */
  workspaceUrl: string;
  /** Name of the APIExport (and of its endpoint slice). */
  apiExportName: string;
  /** The collections to follow, by name. */
  collections: Readonly<Record<C, Collection>>;
  /** Where to log. */
  log: Logger;
  /** Called (at most once per macrotask) after anything changed. */
  onChange: () => void;
  /** Reconnect backoff of every list+watch. */
  backoff?: BackoffOptions;
  /** Server-side watch timeout. @default {300} */
  watchTimeoutSeconds?: number;
  /**
   * How often each collection behind each endpoint is listed again (see
   * `InformerOptions.relistIntervalMs`); 0 only after a 410.
   * @default {DEFAULT_RELIST_INTERVAL_MS}
   */
  relistIntervalMs?: number;
  /**
   * How long each list+watch waits at `stop()` for its request in flight
   * to end after the abort; a request that takes longer is left behind.
   * @default {1_000}
   */
  stopTimeoutMs?: number;
}

/** How often a collection is listed again by default: 5 minutes. */
export const DEFAULT_RELIST_INTERVAL_MS = 300_000;

/** The URL of a collection across all workspaces of one endpoint. */
export function wildcardUrl(endpointUrl: string, path: string): string {
  return `${clusterUrl(endpointUrl, "*")}${path}`;
}

/** Follows an export's endpoint slice and collections behind every endpoint. */
export class ExportWatcher<C extends string> {
  readonly #options: ExportWatcherOptions<C>;
  readonly #names: readonly C[];
  readonly #slice: Informer;
  readonly #endpoints = new Map<string, Map<C, Informer>>();
  readonly #stopping = new Set<Promise<void>>();
  /** How many lists of each collection completed, behind any endpoint. */
  readonly #lists = new Map<C, number>();
  /**
   * Calls onChange at the next macrotask, so that all events of one chunk
   * of a watch stream make one change.
   */
  readonly #changes: PassScheduler;
  #missingReported = false;
  #stopped = false;

  /** Builds the watcher; {@linkcode ExportWatcher.start} runs it. */
  constructor(options: ExportWatcherOptions<C>) {
    this.#options = options;
    this.#changes = new PassScheduler(() => {
      options.onChange();
    });
    this.#names = Object.keys(options.collections) as C[];
    this.#slice = new Informer({
      client: options.client,
      url:
        `${options.workspaceUrl}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices`,
      fieldSelector: `metadata.name=${options.apiExportName}`,
      log: options.log,
      onChange: () => this.#followSlice(),
      ...this.#informerTuning(),
    });
  }

  /** Starts watching. */
  start(): void {
    this.#slice.start();
  }

  /**
   * Stops every list+watch and waits for them to end: each aborts its
   * request in flight and waits at most `stopTimeoutMs` for it, so a hung
   * request cannot hold `stop()`.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all([
      this.#changes.stop(),
      this.#slice.stop(),
      ...[...this.#endpoints.values()].flatMap((informers) =>
        [...informers.values()].map((i) => i.stop())
      ),
      ...this.#stopping,
    ]);
    this.#endpoints.clear();
  }

  /** Whether the endpoint slice has been listed and exists. */
  get sliceFound(): boolean {
    return this.#slice.synced && this.#slice.items().length > 0;
  }

  /**
   * Whether everything is complete: the endpoint slice exists (a missing
   * slice means a wrong export name or workspace) and every collection of
   * every endpoint has been listed.
   */
  get synced(): boolean {
    return this.sliceFound &&
      [...this.#endpoints.values()].every((informers) =>
        [...informers.values()].every((i) => i.synced)
      );
  }

  /**
   * Whether one collection is complete: the endpoint slice exists and the
   * collection has been listed behind every endpoint (the others may not).
   */
  collectionSynced(collection: C): boolean {
    return this.sliceFound &&
      [...this.#endpoints.values()].every((informers) =>
        informers.get(collection)?.synced === true
      );
  }

  /**
   * How many list+watch loops (the endpoint slice's, and each collection's
   * of each endpoint) failed on their last attempt and are retrying with
   * backoff; 0 when every one is connected.
   */
  failingWatches(): number {
    let failing = this.#slice.lastError === undefined ? 0 : 1;
    for (const informers of this.#endpoints.values()) {
      for (const informer of informers.values()) {
        if (informer.lastError !== undefined) failing++;
      }
    }
    return failing;
  }

  /**
   * How many lists of one collection have completed behind any endpoint
   * since the start: each list (the first, after a 410, or at the relist
   * interval) reads every object anew, maybe under a newer schema than
   * before, so what was derived from an object by its uid and generation
   * alone is to be derived again once this changes.
   */
  lists(collection: C): number {
    return this.#lists.get(collection) ?? 0;
  }

  /** The virtual-workspace URLs being watched. */
  endpoints(): string[] {
    return [...this.#endpoints.keys()];
  }

  /** Every object of one collection, from every endpoint. */
  items(collection: C): EndpointObject[] {
    const result: EndpointObject[] = [];
    for (const [endpoint, informers] of this.#endpoints) {
      for (const object of informers.get(collection)?.items() ?? []) {
        result.push({ endpoint, object });
      }
    }
    return result;
  }

  #followSlice(): void {
    if (this.#stopped) return;
    const slices = this.#slice.items();
    if (slices.length === 0 && !this.#missingReported) {
      this.#missingReported = true;
      this.#options.log.error(
        "the APIExportEndpointSlice does not exist: nothing can load until it does",
        {
          workspace: this.#options.workspaceUrl,
          apiExportName: this.#options.apiExportName,
        },
      );
    } else if (slices.length > 0) {
      this.#missingReported = false;
    }
    const wanted = new Set<string>();
    for (const slice of slices) {
      const endpoints =
        (slice.status as { endpoints?: { url?: string }[] } | undefined)
          ?.endpoints ?? [];
      for (const endpoint of endpoints) {
        if (endpoint.url) wanted.add(endpoint.url);
      }
    }
    for (const [url, informers] of this.#endpoints) {
      if (wanted.has(url)) continue;
      this.#options.log.info("endpoint removed, no longer watching it", {
        url,
      });
      this.#endpoints.delete(url);
      for (const informer of informers.values()) {
        const stopping = informer.stop();
        this.#stopping.add(stopping);
        stopping.then(() => this.#stopping.delete(stopping));
      }
    }
    for (const url of wanted) {
      if (this.#endpoints.has(url)) continue;
      this.#options.log.info("endpoint added, watching it", { url });
      const informers = new Map<C, Informer>();
      for (const name of this.#names) {
        const collection = this.#options.collections[name];
        const informer = new Informer({
          client: this.#options.client,
          url: wildcardUrl(url, collection.path),
          log: this.#options.log,
          onChange: () => this.#changes.trigger(),
          onList: () => this.#lists.set(name, this.lists(name) + 1),
          relistIntervalMs: this.#options.relistIntervalMs ??
            DEFAULT_RELIST_INTERVAL_MS,
          ...(collection.labelSelector === undefined
            ? {}
            : { labelSelector: collection.labelSelector }),
          ...this.#informerTuning(),
        });
        informers.set(name, informer);
        informer.start();
      }
      this.#endpoints.set(url, informers);
    }
    this.#changes.trigger();
  }

  #informerTuning(): {
    backoff?: BackoffOptions;
    watchTimeoutSeconds?: number;
    stopTimeoutMs?: number;
  } {
    const { backoff, watchTimeoutSeconds, stopTimeoutMs } = this.#options;
    return {
      ...(backoff === undefined ? {} : { backoff }),
      ...(watchTimeoutSeconds === undefined ? {} : { watchTimeoutSeconds }),
      ...(stopTimeoutMs === undefined ? {} : { stopTimeoutMs }),
    };
  }
}

/** What parsing one object of a collection gave. */
export type ParseResult<T> =
  | { ok: true; value: T }
  | { ok: false; error: string };

/** An object of a collection that failed to parse, and why. */
export interface InvalidObject {
  /** Its logical cluster. */
  cluster: string;
  /** Its namespace; absent for a cluster-scoped object. */
  namespace?: string;
  /** Its name. */
  name: string;
  /** Why it is invalid. */
  error: string;
}

/** What a {@linkcode CollectionView} shows at one moment. */
export interface CollectionSnapshot<T> {
  /** Every valid object from every endpoint, parsed. */
  items: T[];
  /** The objects that failed to parse, with why. */
  invalid: InvalidObject[];
  /**
   * Whether the collection is complete: the endpoint slice exists (a
   * missing slice means a wrong export name or workspace, and deciding with
   * nothing would let everything through) and the collection has been
   * listed behind every endpoint.
   */
  synced: boolean;
  /** The virtual-workspace URLs being watched. */
  endpoints: string[];
}

/** Options for {@linkcode CollectionView}. */
export interface CollectionViewOptions<C extends string, T> {
  /** The watcher's collection to show. */
  collection: C;
  /** What the warning about an invalid object calls it, e.g. `DependencyRule`. */
  kind: string;
  /** Validates one object. */
  parse: (object: KubeObject) => ParseResult<T>;
  /** Where to warn about invalid objects. */
  log: Logger;
}

/** One object, parsed. */
type Parsed<T> = { value: T } | {
  invalid: InvalidObject;
  /** `<store key>@<resourceVersion>`: what was reported. */
  id: string;
};

/** A valid object's parse, kept while its uid and generation stay. */
interface Generation<T> {
  uid: unknown;
  generation: number;
  entry: Parsed<T>;
}

/**
 * One collection of an {@linkcode ExportWatcher}, parsed: every valid
 * object, and the invalid ones, each warned about once per resource version
 * and left out of `items`. Each object version is parsed once however many
 * snapshots follow, and a valid object's parse is kept while its uid and
 * generation stay (a status update changes neither), so snapshots share it,
 * until the collection is listed again (the list may show fields the watch
 * left out).
 */
export class CollectionView<C extends string, T> {
  readonly #watcher: ExportWatcher<C>;
  readonly #options: CollectionViewOptions<C, T>;
  readonly #parsed = new WeakMap<KubeObject, Parsed<T>>();
  /** Each valid object's parse by store key, uid and generation. */
  #byGeneration = new Map<string, Generation<T>>();
  #reported = new Set<string>();
  #last: CollectionSnapshot<T> | undefined;
  /** The watcher's count of lists of the collection that #byGeneration saw. */
  #lists = 0;

  /** Builds a view of `options.collection` of `watcher`. */
  constructor(watcher: ExportWatcher<C>, options: CollectionViewOptions<C, T>) {
    this.#watcher = watcher;
    this.#options = options;
  }

  /** The current snapshot. */
  snapshot(): CollectionSnapshot<T> {
    const items: T[] = [];
    const invalid: InvalidObject[] = [];
    const stillInvalid = new Set<string>();
    const generations = new Map<string, Generation<T>>();
    const lists = this.#watcher.lists(this.#options.collection);
    if (lists !== this.#lists) {
      // Listed again: an object of the same generation may now show fields
      // an older schema left out, so every object is parsed anew.
      this.#lists = lists;
      this.#byGeneration = new Map();
    }
    for (const { object } of this.#watcher.items(this.#options.collection)) {
      // An informer keeps an object until a newer version replaces it, so
      // each version is parsed once, however many snapshots follow.
      let entry = this.#parsed.get(object);
      if (entry === undefined) {
        entry = this.#parseGeneration(object, generations);
        this.#parsed.set(object, entry);
      } else {
        this.#keepGeneration(object, entry, generations);
      }
      if ("value" in entry) {
        items.push(entry.value);
      } else {
        invalid.push(entry.invalid);
        stillInvalid.add(entry.id);
      }
    }
    this.#byGeneration = generations;
    // Forget reports of objects that are gone or changed, so the set stays small.
    this.#reported = new Set(
      [...this.#reported].filter((id) => stillInvalid.has(id)),
    );
    return {
      items,
      invalid,
      synced: this.#watcher.collectionSynced(this.#options.collection),
      endpoints: this.#watcher.endpoints(),
    };
  }

  /**
   * The current snapshot if it differs from the last one this returned
   * (other objects, other invalid ones, or another state), else undefined.
   */
  changed(): CollectionSnapshot<T> | undefined {
    const snapshot = this.snapshot();
    if (this.#last !== undefined && sameSnapshot(snapshot, this.#last)) {
      return undefined;
    }
    this.#last = snapshot;
    return snapshot;
  }

  /** The parse of `object`, reusing a valid one's when only its status changed. */
  #parseGeneration(
    object: KubeObject,
    generations: Map<string, Generation<T>>,
  ): Parsed<T> {
    const key = objectKey(object);
    const generation = object.metadata?.generation;
    const known = this.#byGeneration.get(key);
    const entry = known !== undefined && generation !== undefined &&
        known.generation === generation && known.uid === object.metadata?.uid
      ? known.entry
      : this.#parse(object);
    this.#keepGeneration(object, entry, generations);
    return entry;
  }

  #keepGeneration(
    object: KubeObject,
    entry: Parsed<T>,
    generations: Map<string, Generation<T>>,
  ): void {
    const generation = object.metadata?.generation;
    if (!("value" in entry) || generation === undefined) return;
    generations.set(objectKey(object), {
      uid: object.metadata?.uid,
      generation,
      entry,
    });
  }

  #parse(object: KubeObject): Parsed<T> {
    const result = this.#options.parse(object);
    if (result.ok) return { value: result.value };
    const namespace = object.metadata?.namespace;
    const invalid: InvalidObject = {
      cluster: clusterOf(object),
      ...(namespace === undefined ? {} : { namespace }),
      name: object.metadata?.name ?? "",
      error: result.error,
    };
    const id = `${objectKey(object)}@${object.metadata?.resourceVersion ?? ""}`;
    if (!this.#reported.has(id)) {
      this.#reported.add(id);
      this.#options.log.warn(`ignoring invalid ${this.#options.kind}`, {
        cluster: invalid.cluster,
        ...(namespace === undefined ? {} : { namespace }),
        name: object.metadata?.name,
        error: result.error,
      });
    }
    return { invalid, id };
  }
}

/** Whether two snapshots hold the same objects, invalid ones and state. */
function sameSnapshot<T>(
  a: CollectionSnapshot<T>,
  b: CollectionSnapshot<T>,
): boolean {
  return a.synced === b.synced &&
    a.endpoints.join("\n") === b.endpoints.join("\n") &&
    a.items.length === b.items.length &&
    a.items.every((item, i) => item === b.items[i]) &&
    JSON.stringify(a.invalid) === JSON.stringify(b.invalid);
}
