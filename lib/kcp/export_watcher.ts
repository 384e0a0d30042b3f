/**
 * Collections behind every virtual-workspace endpoint of an APIExport:
 * reads the export's APIExportEndpointSlice in the export's workspace, and
 * for each `status.endpoints[].url` runs one list+watch per collection
 * (`<url>/clusters/*\/<path>`), starting and stopping them as the slice
 * changes. Both the webhook (rules) and the controller (rules, bindings,
 * webhook configurations) see kcp through this.
 *
 * @module
 */
import type { BackoffOptions, Logger } from "../runtime/mod.ts";
import { Informer } from "./informer.ts";
import { clusterUrl } from "./urls.ts";
import type { KubeClient, KubeObject } from "./kube_client.ts";

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
   * How long each list+watch waits at `stop()` for its request in flight
   * to end after the abort; a request that takes longer is left behind.
   * @default {1_000}
   */
  stopTimeoutMs?: number;
}

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
  #missingReported = false;
  #scheduled = false;
  #stopped = false;

  /** Builds the watcher; {@linkcode ExportWatcher.start} runs it. */
  constructor(options: ExportWatcherOptions<C>) {
    this.#options = options;
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
          onChange: () => this.#schedule(),
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
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    // A macrotask, so that all events of one chunk of a watch stream make one change.
    setTimeout(() => {
      this.#scheduled = false;
      if (!this.#stopped) this.#options.onChange();
    }, 0);
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
