/**
 * The dependents index as the webhook runs it (`--dependents-index`): an
 * {@linkcode IndexKeeper} whose feeds are `IndexFeed`s (one list+watch per
 * index and virtual-workspace URL of its export), whose endpoints follow
 * each export's APIExportEndpointSlice, and whose probe is a consistent
 * read of one object of the workspace's type through each URL.
 *
 * @module
 */
import { compareDecimals, IndexFeed } from "../dependents/mod.ts";
import { Informer, KubeApiError, type KubeClient } from "../kcp/mod.ts";
import type { Logger } from "../runtime/mod.ts";
import { sliceCollection, sliceEndpoints } from "./index_endpoints.ts";
import { IndexKeeper } from "./index_keeper.ts";
import type { IndexOutcome } from "./index_reads.ts";

/**
 * The V8 heap one indexed dependent takes at most, in bytes: the worst
 * case measured (every dependent in a cluster of its own, one reference
 * each: 495 MiB for 1 000 000; 360 MiB with 1 000 clusters), by `deno task
 * bench index-memory`.
 */
export const INDEX_HEAP_PER_DEPENDENT = 520;

/** The share of the V8 heap the dependents index may take at its bound. */
export const INDEX_HEAP_SHARE = 0.5;

/**
 * Why an index of up to `maxDependents` does not fit a V8 heap of
 * `heapLimitBytes` (at most {@linkcode INDEX_HEAP_SHARE} of it, at
 * {@linkcode INDEX_HEAP_PER_DEPENDENT} each), as a sentence; `undefined`
 * when it fits. A full index past the heap would crash the webhook, and
 * with it every tenant's protected deletes.
 */
export function indexHeapProblem(
  maxDependents: number,
  heapLimitBytes: number,
): string | undefined {
  const need = maxDependents * INDEX_HEAP_PER_DEPENDENT;
  if (need <= heapLimitBytes * INDEX_HEAP_SHARE) return undefined;
  const mib = (bytes: number) => Math.ceil(bytes / 2 ** 20);
  const fits = Math.floor(
    heapLimitBytes * INDEX_HEAP_SHARE / INDEX_HEAP_PER_DEPENDENT,
  );
  return `--index-max-dependents=${maxDependents} needs up to ${
    mib(need)
  } MiB of heap, more than half of the ${
    mib(heapLimitBytes)
  } MiB this process may use: lower it (at most ${fits} here), or raise --v8-flags=--max-old-space-size to at least ${
    mib(2 * need)
  } and the container's memory limit with it`;
}

/** Options of {@linkcode startDependentsIndex}. */
export interface DependentsIndexOptions {
  /** Lists and watches (the feeds and the Shards). */
  client: KubeClient;
  /** Makes the reviews' reads (the probes). */
  reviewClient: KubeClient;
  /** The front-proxy (or kcp) base URL, where the providers' workspaces are. */
  base: string;
  /** First page size of a feed's list. */
  pageSize: number;
  /** Most memory one list page or probe may take. */
  maxPageBytes: number;
  /** Most dependents every index keeps together. */
  maxDependents: number;
  /** Whether a shard's `http://` URL is used (tests only). */
  allowInsecureHttp: boolean;
  /** Where to log. */
  log: Logger;
  /** How reviews used the indexes (metrics). */
  observe: (outcome: IndexOutcome) => void;
}

/** The running index: the keeper reviews ask, and how to stop it. */
export interface DependentsIndexService {
  /** The indexes: `update` them with the admitted rules' specs. */
  keeper: IndexKeeper;
  /** Stops every endpoint-slice watch and feed. */
  stop(): Promise<void>;
}

/** Builds the webhook's dependents index; its keeper's `update` starts the feeds. */
export function startDependentsIndex(
  options: DependentsIndexOptions,
): DependentsIndexService {
  const { client, reviewClient, log } = options;
  const keeper = new IndexKeeper({
    feed: ({ index, url, source, onApplied }) =>
      new IndexFeed({
        client,
        url,
        source,
        index,
        log,
        pageSize: options.pageSize,
        maxPageBytes: options.maxPageBytes,
        onApplied,
      }),
    follow: (spec, onEndpoints) => {
      // The export's endpoint slice, named as the export (kcp makes one).
      const slices: Informer = new Informer({
        client,
        url: sliceCollection(options.base, spec.export.workspace),
        fieldSelector: `metadata.name=${spec.export.name}`,
        log,
        onChange: () =>
          onEndpoints(sliceEndpoints(slices.items(), {
            allowInsecureHttp: options.allowInsecureHttp,
          })),
      });
      slices.start();
      return slices;
    },
    probe: (url, signal) =>
      probeVersion(reviewClient, url, {
        signal,
        maxBytes: options.maxPageBytes,
      }),
    quiet: (url, quiet) => quietSince(reviewClient, url, quiet),
    maxDependents: options.maxDependents,
    log,
    observe: options.observe,
  });
  return { keeper, stop: () => keeper.stop() };
}

/**
 * The shortest watch kcp sends a bookmark to: it schedules one at the
 * watch's end less 2 s (docs/dependents_index.md).
 */
const QUIET_WATCH_SECONDS = 3;

/**
 * Whether nothing in `url` (one workspace's collection through one
 * endpoint) changed after `since` up to at least `until`: a watch from
 * `since` that gets a bookmark at `until` or later (kcp's, about a second
 * in) or a change after `until` before any change up to `until`. A
 * watch's events come in resourceVersion order, so nothing up to `until`
 * can come after it. `false` on a change up to `until`, on any failure
 * (`since` too old for kcp's watch cache: 410), and at the watch's end.
 */
export async function quietSince(
  client: KubeClient,
  url: string,
  options: { since: string; until: string; signal: AbortSignal },
): Promise<boolean> {
  try {
    for await (
      const event of client.watch(url, {
        resourceVersion: options.since,
        timeoutSeconds: QUIET_WATCH_SECONDS,
        signal: options.signal,
      })
    ) {
      const rv = event.object?.metadata?.resourceVersion;
      const order = typeof rv === "string"
        ? compareDecimals(rv, options.until)
        : undefined;
      if (order === undefined) return false;
      // A bookmark at until says every change up to it was sent; a change
      // at until is one.
      if (event.type === "BOOKMARK") {
        if (order >= 0) return true;
      } else return order > 0;
    }
  } catch {
    return false;
  }
  return false;
}

/**
 * The resource version of a consistent read of one object of `url` (one
 * workspace's collection through one endpoint; one page of one object,
 * whatever the collection's size): at least as new as the call.
 * `undefined` when the endpoint does not serve the workspace (it does not
 * bind the export, or is on another shard: 403 or 404, so none of its
 * objects come through there).
 *
 * @throws {KubeApiError} On any other failure.
 */
export async function probeVersion(
  client: KubeClient,
  url: string,
  options: { signal: AbortSignal; maxBytes: number },
): Promise<string | undefined> {
  try {
    // The first page only: its resource version is the read's, and the
    // rest of the collection is not needed.
    for await (
      const page of client.listPages(url, {
        limit: 1,
        signal: options.signal,
        maxBytes: options.maxBytes,
        measure: "memory",
      })
    ) return page.metadata.resourceVersion;
    return undefined;
  } catch (error) {
    if (
      error instanceof KubeApiError && (error.status === 403 || error.notFound)
    ) return undefined;
    throw error;
  }
}
