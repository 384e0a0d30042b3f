/**
 * The dependents index as the webhook runs it (`--dependents-index`): an
 * {@linkcode IndexKeeper} whose feeds are `IndexFeed`s (one list+watch per
 * shard and index), whose probe is a consistent read of one object of the
 * workspace's type on each shard, and whose endpoints follow the `Shard`
 * objects of the root workspace.
 *
 * @module
 */
import { IndexFeed } from "../dependents/mod.ts";
import {
  clusterUrl,
  Informer,
  KubeApiError,
  type KubeClient,
} from "../kcp/mod.ts";
import type { Logger } from "../runtime/mod.ts";
import { shardEndpoints, SHARDS_PATH } from "./index_endpoints.ts";
import { IndexKeeper } from "./index_keeper.ts";
import type { IndexOutcome } from "./index_reads.ts";

/** Options of {@linkcode startDependentsIndex}. */
export interface DependentsIndexOptions {
  /** Lists and watches (the feeds and the Shards). */
  client: KubeClient;
  /** Makes the reviews' reads (the probes). */
  reviewClient: KubeClient;
  /** The front-proxy (or kcp) base URL, where `root` is. */
  base: string;
  /** First page size of a feed's list. */
  pageSize: number;
  /** Most memory one list page or probe may take. */
  maxPageBytes: number;
  /** Most dependents one index keeps. */
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
  /** The indexes. */
  keeper: IndexKeeper;
  /** Starts following the shards (the keeper's specs come from `update`). */
  start(): void;
  /** Stops the shard watch and every feed. */
  stop(): Promise<void>;
}

/** Builds the webhook's dependents index; {@linkcode DependentsIndexService.start} runs it. */
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
    probe: (url, signal) =>
      probeVersion(reviewClient, url, {
        signal,
        maxBytes: options.maxPageBytes,
      }),
    maxDependents: options.maxDependents,
    log,
    observe: options.observe,
  });
  const shards: Informer = new Informer({
    client,
    url: `${clusterUrl(options.base, "root")}${SHARDS_PATH}`,
    log,
    onChange() {
      keeper.setEndpoints(
        shardEndpoints(shards.items(), {
          allowInsecureHttp: options.allowInsecureHttp,
        }),
      );
    },
  });
  return {
    keeper,
    start: () => shards.start(),
    stop: async () => {
      await Promise.all([shards.stop(), keeper.stop()]);
    },
  };
}

/**
 * The resource version of a consistent read of one object of `url` (one
 * workspace's collection on one shard): at least as new as the call.
 * `undefined` when the shard does not hold the workspace (kcp answers 403
 * for a logical cluster it does not know) or the workspace does not serve
 * the type (404: it has none of it).
 *
 * @throws {KubeApiError} On any other failure.
 */
export async function probeVersion(
  client: KubeClient,
  url: string,
  options: { signal: AbortSignal; maxBytes: number },
): Promise<string | undefined> {
  try {
    const list = await client.list(url, {
      limit: 1,
      signal: options.signal,
      maxBytes: options.maxBytes,
      measure: "memory",
    });
    return list.metadata.resourceVersion;
  } catch (error) {
    if (
      error instanceof KubeApiError && (error.status === 403 || error.notFound)
    ) return undefined;
    throw error;
  }
}
