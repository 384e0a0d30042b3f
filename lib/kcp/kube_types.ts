/**
 * The shapes `KubeClient` takes and gives: Kubernetes objects, list pages and
 * watch events as JSON, and the options of the client and of its requests,
 * lists and watches.
 *
 * @module
 */
import type { Semaphore } from "../runtime/mod.ts";

/** A Kubernetes object as JSON. */
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    [key: string]: unknown;
  };
  [key: string]: unknown;
};

/** One page of a list. */
export interface KubeList {
  /** The list's apiVersion. */
  apiVersion?: string;
  /** The list's kind, e.g. `VirtualMachineList`. */
  kind?: string;
  /** Resource version and continue token. */
  metadata: { resourceVersion?: string; continue?: string };
  /** The objects. */
  items: KubeObject[];
}

/** One event of a watch stream. */
export interface WatchEvent {
  /** Event type. */
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  /** The object (for BOOKMARK only metadata.resourceVersion is meaningful). */
  object: KubeObject;
}
/** Options for {@linkcode KubeClient}. */
export interface KubeClientOptions {
  /** Deadline of each request, in milliseconds. @default {10_000} */
  timeoutMs?: number;
  /** The `User-Agent` header. @default {"dependency-controller"} */
  userAgent?: string;
  /**
   * Whether to offer HTTP/2. Without it, each request in flight takes its
   * own keep-alive HTTP/1.1 connection, which answers small requests
   * sooner; with it, watches share one connection. @default {true}
   */
  http2?: boolean;
  /**
   * Most bytes of any answer read without a `maxBytes` of its own (see
   * {@linkcode RequestOptions.maxBytes}), counted as the body's bytes.
   * @default {no bound}
   */
  maxBytes?: number;
}

/** Options of one request. */
export interface RequestOptions {
  /** A JSON body. */
  body?: unknown;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** Overrides the client's deadline for this request. */
  timeoutMs?: number;
  /** Content type of `body`. @default {"application/json"} */
  contentType?: string;
  /** The `Accept` header. @default {"application/json"} */
  accept?: string;
  /**
   * Most bytes of the answer to read, counted as `measure` says. The body
   * is read chunk by chunk, counting; once the count passes `maxBytes` (or
   * a `Content-Length` says it will) the body is cancelled and the request
   * fails with reason {@linkcode RESPONSE_TOO_LARGE} and the answer's HTTP
   * status, so no more than `maxBytes` of it are ever held. Error answers
   * are bounded too. @default {no bound: the whole body is read}
   */
  maxBytes?: number;
  /**
   * What `maxBytes` and `byteBudget` count: `"body"`, the body's bytes;
   * `"memory"`, the memory the answer takes while it is decoded and
   * parsed, estimated from its JSON as it arrives (see
   * {@linkcode estimateMemory}). A count of bytes does not bound the heap:
   * 4 MiB of `[{},{},...]` parse into about 84 MB.
   * @default {"body"}
   */
  measure?: "body" | "memory";
  /**
   * Bytes of answers that may be held at once by every request sharing
   * this semaphore (weight = bytes, counted as `measure` says). Before it
   * is sent, a request takes its whole `maxBytes` from it up-front (the
   * whole capacity without `maxBytes`): a body's size is unknown until it
   * has been read, and taking room chunk by chunk could let several
   * half-read answers each wait for room the others hold, until all fail.
   * The price is that a small answer holds as much room as the largest
   * allowed while it is read. The room is given back once the answer is
   * decoded; a page of {@linkcode KubeClient.listPages} keeps it until its
   * consumer asks for the next page or stops (`return()`), since the
   * parsed page is alive until then. Waiting for room counts against the
   * request's deadline (`timeoutMs`) and ends with `signal`; without room
   * in time the request fails with reason
   * {@linkcode RESPONSE_BUDGET_EXHAUSTED}, having sent nothing.
   * @default {no bound}
   */
  byteBudget?: Semaphore;
}

/** Options of a list. */
export interface ListOptions {
  /** Page size. @default {500} */
  limit?: number;
  /**
   * A `continue` token of an earlier page of the same list: the list
   * resumes there (e.g. to ask for the same page again with a smaller
   * `limit`). @default {from the start}
   */
  continue?: string;
  /** Label selector. */
  labelSelector?: string;
  /** Field selector. */
  fieldSelector?: string;
  /** Aborts the list. */
  signal?: AbortSignal;
  /** Deadline of each page request. */
  timeoutMs?: number;
  /** Most bytes of one page: see {@linkcode RequestOptions.maxBytes}. */
  maxBytes?: number;
  /** What `maxBytes` counts: see {@linkcode RequestOptions.measure}. */
  measure?: "body" | "memory";
  /**
   * Called with each page's count, as `measure` says, before the page is
   * yielded (only with `maxBytes`, which has the body counted).
   */
  measured?: (count: number) => void;
  /**
   * Bytes of pages in flight across lists: see
   * {@linkcode RequestOptions.byteBudget}. A page holds its share until
   * the consumer asks for the next one or stops.
   */
  byteBudget?: Semaphore;
  /**
   * Most items `KubeClient.list` gathers over all pages: past it the list
   * fails with reason {@linkcode RESPONSE_TOO_LARGE} (each page is bounded
   * by `maxBytes`; this bounds how many pages are kept).
   * @default {100_000}
   */
  maxItems?: number;
}

/** Options of a watch. */
export interface WatchOptions {
  /** Start after this resource version. */
  resourceVersion?: string;
  /** Label selector. */
  labelSelector?: string;
  /** Field selector. */
  fieldSelector?: string;
  /** Server-side end of the watch, in seconds. @default {300} */
  timeoutSeconds?: number;
  /** Ends the watch. */
  signal?: AbortSignal;
  /**
   * Most bytes of one event (one line of the stream): the watch fails with
   * reason {@linkcode RESPONSE_TOO_LARGE} as soon as an event is over it,
   * having held no more of it (see `watchLines`).
   * @default {DEFAULT_MAX_LINE_BYTES, 8 MiB}
   */
  maxLineBytes?: number;
  /**
   * Asks the server to start the stream with the collection's objects as
   * ADDED events, then a BOOKMARK (annotated
   * `k8s.io/initial-events-end`) once they are all sent
   * (`sendInitialEvents=true&resourceVersionMatch=NotOlderThan`: the state
   * is at least as new as `resourceVersion`, or the latest without it): a
   * list and a watch in one request. Servers without the `WatchList`
   * feature refuse it or ignore it. @default {false}
   */
  sendInitialEvents?: boolean;
}
