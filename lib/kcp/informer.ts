/**
 * List+watch of one collection URL into an in-memory store, as client-go's
 * reflector does: list, then watch from the list's resource version; on
 * "410 Gone" list again; on other errors back off (capped, jittered) and
 * resume. While the server does not answer at all (kcp restarting), the
 * retries stay within `unansweredMaxMs` (2 s), and its first answer starts
 * the backoff over, so the informer is back within seconds of the server
 * (see {@linkcode ReconnectBackoff}). With `relistIntervalMs`, it also
 * lists again at that interval (a tenth more at most, at random), so that
 * objects kcp served under an older schema of their type, on a watch opened
 * before the schema changed, are read again under the current one. The
 * store is replaced wholesale by each list, in one step once the list is
 * complete (never emptied first, and kept when the list fails), so it never
 * drifts.
 *
 * @module
 */
import { CLUSTER_ANNOTATION } from "./urls.ts";
import {
  ABORTED,
  errorText,
  type Logger,
  ReconnectBackoff,
  type ReconnectBackoffOptions,
  settledWithin,
  sleep,
  untilAborted,
} from "../runtime/mod.ts";
import { KubeApiError } from "./kube_api_error.ts";
import type { KubeClient } from "./kube_client.ts";
import type { KubeObject } from "./kube_types.ts";

/** Options for {@linkcode Informer}. */
export interface InformerOptions {
  /** The client to list and watch with. */
  client: KubeClient;
  /** The collection URL, e.g. `<vw>/clusters/*\/apis/g/v1/things`. */
  url: string;
  /** Where to log. */
  log: Logger;
  /** Called after every change of the store (a list, or a watch event). */
  onChange: () => void;
  /** Called after each completed list, before its `onChange`. */
  onList?: () => void;
  /** Label selector for list and watch. */
  labelSelector?: string;
  /** Field selector for list and watch. */
  fieldSelector?: string;
  /** List page size. @default {500} */
  pageSize?: number;
  /** Server-side watch timeout; the watch is then resumed. @default {300} */
  watchTimeoutSeconds?: number;
  /** Reconnect backoff; its `random` also draws the relist jitter. */
  backoff?: ReconnectBackoffOptions;
  /**
   * List again this long after each list (plus up to a tenth more, at
   * random, so that informers started together spread out), replacing the
   * store with the list, and watch from there, as after a 410. 0 never
   * lists again but after a 410.
   * @default {0}
   */
  relistIntervalMs?: number;
  /**
   * How long {@linkcode Informer.stop} waits, after aborting, for the list
   * or watch request in flight to end; a request that takes longer (a hung
   * stream) is left behind.
   * @default {1_000}
   */
  stopTimeoutMs?: number;
}

/**
 * Drops `metadata.managedFields`, which nothing here reads and which is
 * often the larger part of an object (client-go informers do the same).
 */
function slim(object: KubeObject): KubeObject {
  if (object.metadata?.managedFields !== undefined) {
    delete object.metadata.managedFields;
  }
  return object;
}

/** The logical cluster kcp recorded on an object (`kcp.io/cluster`), or `""`. */
export function clusterOf(object: KubeObject): string {
  return object.metadata?.annotations?.[CLUSTER_ANNOTATION] ?? "";
}

/** The store key of an object: `<kcp.io/cluster>/<namespace>/<name>`. */
export function objectKey(object: KubeObject): string {
  const metadata = object.metadata ?? {};
  return `${clusterOf(object)}/${metadata.namespace ?? ""}/${
    metadata.name ?? ""
  }`;
}

/** The most a relist is put off past its interval, as a part of it. */
const RELIST_JITTER = 0.1;

/** Keeps a store of one collection in step with the server. */
export class Informer {
  readonly #options: InformerOptions;
  readonly #store = new Map<string, KubeObject>();
  readonly #abort = new AbortController();
  readonly #backoff: ReconnectBackoff;
  #running: Promise<void> | undefined;
  #synced = false;
  #lastError: string | undefined;
  /** The last failure without an answer, while no answer has come since. */
  #awayError: string | undefined;

  /** Builds an informer; {@linkcode Informer.start} runs it. */
  constructor(options: InformerOptions) {
    this.#options = options;
    this.#backoff = new ReconnectBackoff(options.backoff);
  }

  /** Whether a first list has completed. */
  get synced(): boolean {
    return this.#synced;
  }

  /** The last error, cleared by the next success. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** The collection URL. */
  get url(): string {
    return this.#options.url;
  }

  /** The objects in the store. */
  items(): KubeObject[] {
    return [...this.#store.values()];
  }

  /** Starts listing and watching in the background. */
  start(): void {
    this.#running ??= this.#run();
  }

  /**
   * Stops and waits until the background loop has ended. The abort cancels
   * the list or watch request in flight; the loop waits at most
   * `stopTimeoutMs` for that request to end, so a stream that ignores the
   * abort cannot hold `stop()`.
   */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running;
  }

  async #run(): Promise<void> {
    const {
      client,
      url,
      log,
      labelSelector,
      fieldSelector,
      pageSize = 500,
      watchTimeoutSeconds = 300,
      stopTimeoutMs = 1_000,
      relistIntervalMs = 0,
    } = this.#options;
    const signal = this.#abort.signal;
    const random = this.#options.backoff?.random ?? Math.random;
    let resourceVersion: string | undefined;
    /** When to list again (`Date.now()` time), if ever. */
    let relistAt = Infinity;
    while (!signal.aborted) {
      try {
        if (resourceVersion !== undefined && Date.now() >= relistAt) {
          log.debug("relist interval passed, listing again", {
            url,
            relistIntervalMs,
          });
          resourceVersion = undefined;
        }
        if (resourceVersion === undefined) {
          const listing = client.list(url, {
            limit: pageSize,
            signal,
            ...(labelSelector === undefined ? {} : { labelSelector }),
            ...(fieldSelector === undefined ? {} : { fieldSelector }),
          });
          const list = await untilAborted(listing, signal);
          if (list === ABORTED) {
            await settledWithin(listing, stopTimeoutMs);
            break;
          }
          this.#store.clear();
          for (const item of list.items) {
            this.#store.set(objectKey(item), slim(item));
          }
          resourceVersion = list.metadata.resourceVersion ?? "";
          relistAt = relistIntervalMs > 0
            ? Date.now() +
              Math.round(relistIntervalMs * (1 + RELIST_JITTER * random()))
            : Infinity;
          this.#succeeded();
          this.#synced = true;
          log.debug("listed", {
            url,
            items: list.items.length,
            resourceVersion,
          });
          this.#options.onList?.();
          this.#options.onChange();
        }
        const watchStarted = Date.now();
        let events = 0;
        // The watch ends when the relist is due; the loop then lists.
        const relist = new AbortController();
        const relistTimer = relistAt === Infinity ? undefined : setTimeout(
          () => relist.abort(),
          Math.max(0, relistAt - watchStarted),
        );
        const watchSignal = AbortSignal.any([signal, relist.signal]);
        const stream = client.watch(url, {
          signal: watchSignal,
          timeoutSeconds: watchTimeoutSeconds,
          ...(resourceVersion === "" ? {} : { resourceVersion }),
          ...(labelSelector === undefined ? {} : { labelSelector }),
          ...(fieldSelector === undefined ? {} : { fieldSelector }),
        });
        try {
          for (;;) {
            const next = await untilAborted(stream.next(), watchSignal);
            if (next === ABORTED || next.done) break;
            const event = next.value;
            resourceVersion = event.object.metadata?.resourceVersion ??
              resourceVersion;
            this.#succeeded();
            events++;
            if (event.type === "BOOKMARK") continue;
            const key = objectKey(event.object);
            if (event.type === "DELETED") this.#store.delete(key);
            else this.#store.set(key, slim(event.object));
            this.#options.onChange();
          }
        } finally {
          clearTimeout(relistTimer);
          // Closes the stream; after an abort, a read that hangs regardless
          // holds the loop for stopTimeoutMs at most.
          await settledWithin(stream.return(undefined), stopTimeoutMs);
        }
        if (relist.signal.aborted && !signal.aborted) {
          relistAt = 0; // due now, though the clock may lag the timer
          continue;
        }
        // A watch that the server ends at once, empty, is treated like an
        // error (as client-go does), so a misbehaving server is not hammered.
        if (
          events === 0 && Date.now() - watchStarted < 1000 && !signal.aborted
        ) {
          const delayMs = this.#backoff.next({ answered: true });
          log.debug("watch ended at once, waiting before the next", {
            url,
            delayMs,
          });
          await sleep(delayMs, signal);
        }
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof KubeApiError && error.gone) {
          log.info("resource version expired, listing again", {
            url,
            resourceVersion,
          });
          resourceVersion = undefined;
          continue;
        }
        const text = errorText(error);
        // No answer at all (refused, reset, none in time): the server may
        // be restarting, so it is tried again soon. One warning says it is
        // away; the same failure again, every few seconds, is logged at
        // debug (watches_failing counts it meanwhile).
        const answered = !(error instanceof KubeApiError && error.unanswered);
        const repeated = !answered && this.#awayError === text;
        this.#awayError = answered ? undefined : text;
        this.#lastError = text;
        const delayMs = this.#backoff.next({ answered });
        const fields = { url, error, delayMs };
        if (repeated) log.debug("list or watch failed, retrying", fields);
        else log.warn("list or watch failed, retrying", fields);
        await sleep(delayMs, signal);
      }
    }
  }

  #succeeded(): void {
    this.#backoff.reset();
    this.#lastError = undefined;
    this.#awayError = undefined;
  }
}
