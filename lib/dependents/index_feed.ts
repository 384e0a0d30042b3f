/**
 * Fills one {@linkcode DependentsIndex} from one kcp endpoint (a source) by
 * list+watch, as client-go's reflector does: list the wildcard collection
 * page by page into a resync of the source, then watch from the list's
 * resource version, each event applied to the index. On "410 Gone" it
 * lists again; on any other error it unsyncs the source (the index no
 * longer vouches for it), backs off and lists again. Once the index is
 * full (overflowed) the feed stops for good: the index answers nothing and
 * the webhook lists instead.
 *
 * Memory stays bounded by one list page (read up to `maxPageBytes` of
 * estimated memory) or one watch event (up to `maxLineBytes`): no object
 * is kept here, the index keeps its own projection of each.
 *
 * @module
 */
import {
  formatBytes,
  KubeApiError,
  type KubeClient,
  type KubeList,
  RESPONSE_TOO_LARGE,
} from "../kcp/mod.ts";
import {
  ABORTED,
  Backoff,
  type BackoffOptions,
  errorText,
  type Logger,
  settledWithin,
  sleep,
  untilAborted,
} from "../runtime/mod.ts";
import type { DependentsIndex } from "./dependents_index.ts";

/**
 * Where an {@linkcode IndexFeed} is: `syncing` while it lists (first, or
 * again after a 410 or a failure), `synced` once its list is in the index
 * and while its watch keeps it in step, `failed` after an error (backing
 * off before it lists again), `overflowed` once the index is full (for
 * good), `stopped` before {@linkcode IndexFeed.start} and after
 * {@linkcode IndexFeed.stop}.
 */
export type IndexFeedState =
  | "syncing"
  | "synced"
  | "failed"
  | "overflowed"
  | "stopped";

/** Options of {@linkcode IndexFeed}. */
export interface IndexFeedOptions {
  /** The client to list and watch with. */
  client: KubeClient;
  /**
   * Wildcard collection URL of one endpoint, e.g.
   * `<apiexport virtual workspace url>/clusters/*\/apis/g/v1/vms`.
   */
  url: string;
  /** Names the endpoint in the index (its resource versions are its own). */
  source: string;
  /** The index to fill. */
  index: DependentsIndex;
  /** Where to log. */
  log: Logger;
  /** Objects per list page, at first. @default {500} */
  pageSize?: number;
  /**
   * Most memory one list page may take, estimated from its JSON as it
   * arrives (`KubeClient.listPages` with `measure: "memory"`). A page over
   * it is asked for again, from the same `continue` token, with a tenth of
   * the objects (down to one), and the rest of that list keeps the smaller
   * size; only one object over it fails the list. @default {8 MiB}
   */
  maxPageBytes?: number;
  /**
   * Most bytes of one watch event: a larger one fails the watch (then the
   * feed unsyncs, backs off and lists again). @default {8 MiB}
   */
  maxLineBytes?: number;
  /**
   * Server-side end of each watch, in seconds, before jitter: each watch
   * asks for up to a quarter more, at random, so the watches of many feeds
   * do not all end at once. The feed then watches again from the index's
   * watermark. @default {300}
   */
  watchTimeoutSeconds?: number;
  /**
   * Backoff between attempts after a failure; its `random` also draws the
   * watch timeout's jitter.
   */
  backoff?: BackoffOptions;
  /** Called after each state change (synced, failed, overflowed) for metrics/logs. */
  onState?: (state: IndexFeedState) => void;
  /**
   * Called after the index changed through this feed: a list finished, a
   * watch event (a bookmark too) was applied, or the source was unsynced;
   * e.g. to wake reviews waiting for the index to catch up.
   */
  onApplied?: () => void;
  /**
   * How long {@linkcode IndexFeed.stop} waits, after aborting, for the list
   * or watch request in flight to end; a request that takes longer (a hung
   * stream) is left behind. @default {1_000}
   */
  stopTimeoutMs?: number;
}

/** The default of {@linkcode IndexFeedOptions.maxPageBytes}: 8 MiB. */
const DEFAULT_MAX_PAGE_BYTES = 8 * 1024 * 1024;
/** How much smaller each retry of a page over `maxPageBytes` asks for. */
const PAGE_SHRINK_FACTOR = 10;
/** The most a watch's timeout is stretched by its jitter (a quarter). */
const WATCH_TIMEOUT_JITTER = 0.25;
/** A watch that ends sooner than this without an event is a failure of sorts. */
const QUICK_WATCH_MS = 1_000;

/** How a list or a watch ended, when it did not throw. */
type Outcome = "done" | "aborted" | "overflowed";

/** Keeps one source of a {@linkcode DependentsIndex} in step with one endpoint. */
export class IndexFeed {
  readonly #options: IndexFeedOptions;
  readonly #abort = new AbortController();
  readonly #backoff: Backoff;
  readonly #random: () => number;
  #running: Promise<void> | undefined;
  #state: IndexFeedState = "stopped";
  #lastError: string | undefined;

  /**
   * Builds a feed; {@linkcode IndexFeed.start} runs it.
   *
   * @throws {RangeError} If `pageSize`, `maxPageBytes`, `maxLineBytes` or
   * `watchTimeoutSeconds` is not a positive integer, or the backoff
   * options are invalid (see `Backoff`).
   */
  constructor(options: IndexFeedOptions) {
    for (
      const [what, value] of [
        ["pageSize", options.pageSize],
        ["maxPageBytes", options.maxPageBytes],
        ["maxLineBytes", options.maxLineBytes],
        ["watchTimeoutSeconds", options.watchTimeoutSeconds],
      ] as const
    ) {
      if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
        throw new RangeError(
          `Cannot build an index feed: ${what} must be a positive integer: current value is ${value}`,
        );
      }
    }
    this.#options = options;
    this.#backoff = new Backoff(options.backoff);
    this.#random = options.backoff?.random ?? Math.random;
  }

  /** Where the feed is (see {@linkcode IndexFeedState}). */
  get state(): IndexFeedState {
    return this.#state;
  }

  /** The last error (or why the index overflowed), cleared by the next list. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** Starts listing and watching in the background; again, or after stop(), does nothing. */
  start(): void {
    if (this.#running !== undefined || this.#abort.signal.aborted) return;
    this.#running = this.#run();
  }

  /**
   * Stops and waits until the background loop has ended, then unsyncs the
   * source (the index no longer vouches for it; dropping it is the
   * caller's). The abort cancels the list or watch request in flight; the
   * loop waits at most `stopTimeoutMs` for that request to end, so a
   * stream that ignores the abort cannot hold `stop()`. Nothing reaches the
   * index from this feed after it resolves.
   */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running;
    if (this.#state === "stopped") return;
    if (this.#state !== "overflowed") this.#options.index.unsync(this.#source);
    this.#setState("stopped");
  }

  get #source(): string {
    return this.#options.source;
  }

  async #run(): Promise<void> {
    const { index, log, url } = this.#options;
    const source = this.#source;
    const signal = this.#abort.signal;
    let listed = false;
    while (!signal.aborted) {
      // Whether this pass's watch brought the index anything.
      let progressed = false;
      try {
        if (!listed) {
          const outcome = await this.#list(signal);
          if (outcome !== "done") break;
          listed = true;
        }
        const started = Date.now();
        const watched = await this.#watch(signal, () => progressed = true);
        if (watched !== "done") break;
        // A watch that the server ends at once, empty, is treated like an
        // error (as client-go does), so a misbehaving server is not hammered.
        if (!progressed && Date.now() - started < QUICK_WATCH_MS) {
          const delayMs = this.#backoff.next();
          log.debug("watch ended at once, waiting before the next", {
            url,
            source,
            delayMs,
          });
          await sleep(delayMs, signal);
        } else {
          this.#backoff.reset();
        }
      } catch (error) {
        if (signal.aborted) break;
        listed = false;
        if (error instanceof KubeApiError && error.gone) {
          log.info("resource version expired, listing again", {
            url,
            source,
            resourceVersion: index.watermark(source),
          });
          // A list followed at once by another 410 waits, as any failure.
          if (!progressed) await sleep(this.#backoff.next(), signal);
          continue;
        }
        index.unsync(source);
        this.#lastError = errorText(error);
        this.#setState("failed");
        this.#options.onApplied?.();
        const delayMs = this.#backoff.next();
        log.warn("dependents index feed failed, listing again", {
          url,
          source,
          error,
          delayMs,
        });
        await sleep(delayMs, signal);
      }
    }
  }

  /**
   * Lists the collection into a resync of the source, page by page, a
   * page asked for only once the last one is in the index.
   *
   * @throws {KubeApiError} The client's; reason {@linkcode RESPONSE_TOO_LARGE}
   * when a single object is over `maxPageBytes`.
   */
  async #list(signal: AbortSignal): Promise<Outcome> {
    const { index, log, url, pageSize = 500 } = this.#options;
    const source = this.#source;
    this.#setState("syncing");
    index.startResync(source);
    let limit = pageSize;
    let token: string | undefined;
    let resourceVersion = "";
    let items = 0;
    let pages = 0;
    do {
      const at = token;
      // The page read sets the next token: none ends the list.
      token = undefined;
      const read = await this.#page(limit, at, signal, (page) => {
        for (const item of page.items) {
          if (!index.upsert(source, item)) return false;
        }
        items += page.items.length;
        pages++;
        resourceVersion = page.metadata.resourceVersion ?? resourceVersion;
        token = page.metadata.continue || undefined;
        return true;
      });
      if (read.outcome !== "done") return read.outcome;
      limit = read.limit;
    } while (token !== undefined);
    if (signal.aborted) return "aborted";
    index.finishResync(source, resourceVersion);
    this.#lastError = undefined;
    this.#setState("synced");
    log.debug("listed into the dependents index", {
      url,
      source,
      items,
      pages,
      resourceVersion,
    });
    this.#options.onApplied?.();
    return "done";
  }

  /**
   * Reads one page at `token` and hands it to `take` (which returns
   * whether the index took it all), asking again with fewer objects while
   * the page is over `maxPageBytes`. Returns the page size that worked.
   */
  async #page(
    limit: number,
    token: string | undefined,
    signal: AbortSignal,
    take: (page: KubeList) => boolean,
  ): Promise<{ outcome: Outcome; limit: number }> {
    const {
      client,
      url,
      maxPageBytes = DEFAULT_MAX_PAGE_BYTES,
      stopTimeoutMs = 1_000,
    } = this.#options;
    const tried: number[] = [];
    for (;;) {
      // One page per request series, so the next may ask for another size;
      // the page is let go (and its room) before the next is asked for.
      const pages = client.listPages(url, {
        limit,
        signal,
        maxBytes: maxPageBytes,
        measure: "memory",
        ...(token === undefined ? {} : { continue: token }),
      });
      try {
        const next = await untilAborted(pages.next(), signal);
        if (next === ABORTED || signal.aborted) {
          return { outcome: "aborted", limit };
        }
        if (next.done) return { outcome: "done", limit };
        if (!take(next.value)) {
          this.#overflowed();
          return { outcome: "overflowed", limit };
        }
        return { outcome: "done", limit };
      } catch (error) {
        if (
          !(error instanceof KubeApiError) ||
          error.reason !== RESPONSE_TOO_LARGE
        ) throw error;
        tried.push(limit);
        if (limit <= 1) {
          throw new KubeApiError(
            `${error.message} (pages of ${
              tried.join(", ")
            } objects tried): one object is over ${formatBytes(maxPageBytes)}`,
            { status: error.status, reason: RESPONSE_TOO_LARGE, cause: error },
          );
        }
        limit = Math.max(1, Math.floor(limit / PAGE_SHRINK_FACTOR));
      } finally {
        await settledWithin(pages.return(undefined), stopTimeoutMs);
      }
    }
  }

  /**
   * Watches from the index's watermark of the source, each event applied
   * to the index, until the server ends the watch.
   *
   * @throws {KubeApiError} The client's (`gone` for a 410).
   */
  async #watch(signal: AbortSignal, progressed: () => void): Promise<Outcome> {
    const {
      client,
      index,
      url,
      maxLineBytes,
      watchTimeoutSeconds = 300,
      stopTimeoutMs = 1_000,
    } = this.#options;
    const source = this.#source;
    const resourceVersion = index.watermark(source);
    const stream = client.watch(url, {
      signal,
      timeoutSeconds: Math.round(
        watchTimeoutSeconds * (1 + WATCH_TIMEOUT_JITTER * this.#random()),
      ),
      ...(resourceVersion ? { resourceVersion } : {}),
      ...(maxLineBytes === undefined ? {} : { maxLineBytes }),
    });
    try {
      for (;;) {
        const next = await untilAborted(stream.next(), signal);
        if (next === ABORTED || signal.aborted) return "aborted";
        if (next.done) return "done";
        const { type, object } = next.value;
        if (!index.apply(source, { type, object })) {
          this.#overflowed();
          return "overflowed";
        }
        progressed();
        this.#backoff.reset();
        this.#options.onApplied?.();
      }
    } finally {
      // Closes the stream; after an abort, a read that hangs regardless
      // holds the loop for stopTimeoutMs at most.
      await settledWithin(stream.return(undefined), stopTimeoutMs);
    }
  }

  /**
   * The index is full: says so once, with the index's limits when it
   * shows them (`maxDependents`, `maxReferences`), and the loop ends.
   */
  #overflowed(): void {
    const { index, log, url } = this.#options;
    const limits = index as {
      maxDependents?: unknown;
      maxReferences?: unknown;
    };
    this.#lastError =
      "the dependents index is full: it answers nothing, and reviews list instead";
    this.#setState("overflowed");
    log.warn(
      "the dependents index is full: no longer feeding it, reviews list instead",
      {
        url,
        source: this.#source,
        ...(typeof limits.maxDependents === "number"
          ? { maxDependents: limits.maxDependents }
          : {}),
        ...(typeof limits.maxReferences === "number"
          ? { maxReferences: limits.maxReferences }
          : {}),
      },
    );
    this.#options.onApplied?.();
  }

  #setState(state: IndexFeedState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#options.onState?.(state);
  }
}
