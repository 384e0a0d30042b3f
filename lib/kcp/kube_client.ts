/**
 * A small REST client for kcp: JSON requests with a deadline on every call,
 * one keep-alive connection pool per client, paginated lists and watch
 * streams. URLs are absolute, since one process talks to several kcp
 * endpoints (the front-proxy, virtual-workspace URLs).
 *
 * @module
 */
import {
  Deadline,
  DeadlineExceeded,
  errorText,
  type Semaphore,
} from "../runtime/mod.ts";
import type { KubeConnection } from "./kube_config.ts";

/**
 * `KubeApiError.reason` of an answer whose body is over the request's
 * `maxBytes`: the body was cancelled, not read to its end.
 */
export const RESPONSE_TOO_LARGE = "ResponseTooLarge";

/**
 * `KubeApiError.reason` of a request that got no room under its
 * `byteBudget` within its deadline: nothing was sent.
 */
export const RESPONSE_BUDGET_EXHAUSTED = "ResponseBudgetExhausted";

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

/** An error answer from the API server, or a transport failure (status 0). */
export class KubeApiError extends Error {
  /** HTTP status; 0 when no answer arrived (network error, deadline). */
  readonly status: number;
  /** `Status.reason` when the server sent one (e.g. `NotFound`, `Expired`). */
  readonly reason: string;

  /** Builds the error. */
  constructor(
    message: string,
    options: { status: number; reason?: string; cause?: unknown },
  ) {
    super(message, { cause: options.cause });
    this.name = "KubeApiError";
    this.status = options.status;
    this.reason = options.reason ?? "";
  }

  /** Whether the server said NotFound (404). */
  get notFound(): boolean {
    return this.status === 404;
  }

  /** Whether the resource version is too old to watch or list from (410 Gone / Expired). */
  get gone(): boolean {
    return this.status === 410 || this.reason === "Expired" ||
      this.reason === "Gone";
  }
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
   * Bytes of pages in flight across lists: see
   * {@linkcode RequestOptions.byteBudget}. A page holds its share until
   * the consumer asks for the next one or stops.
   */
  byteBudget?: Semaphore;
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
}

/** A REST client bound to one identity and trust configuration. */
export class KubeClient {
  readonly #headers: Record<string, string>;
  readonly #client: Deno.HttpClient;
  readonly #timeoutMs: number;
  readonly #allowInsecureHttp: boolean;

  /**
   * Builds a client from a connection.
   *
   * @throws {TypeError} If the connection asks to skip TLS verification, which we do not support,
   * or its server is plain `http://` and `allowInsecureHttp` is not set.
   */
  constructor(connection: KubeConnection, options: KubeClientOptions = {}) {
    if (connection.insecureSkipTlsVerify) {
      throw new TypeError(
        "Cannot connect without TLS verification: give the kubeconfig a certificate-authority instead",
      );
    }
    this.#allowInsecureHttp = connection.allowInsecureHttp ?? false;
    const refused = this.#refusal(connection.server);
    if (refused !== undefined) throw new TypeError(refused);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#headers = {
      accept: "application/json",
      "user-agent": options.userAgent ?? "dependency-controller",
    };
    if (connection.token !== undefined) {
      this.#headers.authorization = `Bearer ${connection.token}`;
    }
    this.#client = Deno.createHttpClient({
      http2: options.http2 ?? true,
      ...(connection.caPem === undefined
        ? {}
        : { caCerts: [connection.caPem] }),
      ...(connection.certPem !== undefined && connection.keyPem !== undefined
        ? { cert: connection.certPem, key: connection.keyPem }
        : {}),
    });
  }

  /** Closes the connection pool. */
  close(): void {
    this.#client.close();
  }

  /**
   * Sends a request and decodes the JSON answer. With `maxBytes`, reads at
   * most that much of the body; with `byteBudget`, first waits for room to
   * hold it (see {@linkcode RequestOptions}).
   *
   * @throws {KubeApiError} On a non-2xx answer, a transport error, the
   * deadline, a body over `maxBytes` (reason {@linkcode RESPONSE_TOO_LARGE})
   * or no room under `byteBudget` in time (reason
   * {@linkcode RESPONSE_BUDGET_EXHAUSTED}).
   */
  async request<T>(
    method: string,
    url: string,
    options: RequestOptions = {},
  ): Promise<T> {
    const { value, release } = await this.#exchange<T>(method, url, options);
    release();
    return value;
  }

  /** GET a URL. See {@linkcode KubeClient.request}. */
  get<T>(url: string, options: Omit<RequestOptions, "body"> = {}): Promise<T> {
    return this.request<T>("GET", url, options);
  }

  /**
   * Lists a collection page by page, following `continue` tokens (from
   * `options.continue` when given). Each page is requested only when the
   * previous one has been consumed, so memory stays bounded by a page
   * whatever the collection's size; `maxBytes` bounds the page itself,
   * whatever its objects' size, and `byteBudget` the pages of all lists
   * at once.
   *
   * @throws {KubeApiError} On any failed page (reason
   * {@linkcode RESPONSE_TOO_LARGE} for one over `maxBytes`).
   */
  async *listPages(
    url: string,
    options: ListOptions = {},
  ): AsyncGenerator<KubeList> {
    const { limit = 500, labelSelector, fieldSelector, signal, timeoutMs } =
      options;
    let token = options.continue || undefined;
    do {
      const query = new URLSearchParams({ limit: String(limit) });
      if (labelSelector) query.set("labelSelector", labelSelector);
      if (fieldSelector) query.set("fieldSelector", fieldSelector);
      if (token) query.set("continue", token);
      const { value: page, release } = await this.#exchange<KubeList>(
        "GET",
        withQuery(url, query),
        {
          ...(signal === undefined ? {} : { signal }),
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
          ...(options.maxBytes === undefined
            ? {}
            : { maxBytes: options.maxBytes }),
          ...(options.measure === undefined
            ? {}
            : { measure: options.measure }),
          ...(options.byteBudget === undefined
            ? {}
            : { byteBudget: options.byteBudget }),
        },
      );
      // The page's room under the byte budget is kept while the consumer
      // holds the page, and given back when it asks for the next or stops.
      try {
        page.items ??= [];
        page.metadata ??= {};
        yield page;
        token = page.metadata.continue || undefined;
      } finally {
        release();
      }
    } while (token !== undefined);
  }

  /**
   * Lists a whole collection: all pages' items, the last page's resource
   * version. Items without `apiVersion`/`kind` get the list's.
   */
  async list(url: string, options: ListOptions = {}): Promise<KubeList> {
    const items: KubeObject[] = [];
    let last: KubeList | undefined;
    for await (const page of this.listPages(url, options)) {
      const kind = page.kind?.replace(/List$/, "");
      for (const item of page.items) {
        if (page.apiVersion !== undefined) item.apiVersion ??= page.apiVersion;
        if (kind !== undefined) item.kind ??= kind;
        items.push(item);
      }
      last = page;
    }
    return {
      ...(last?.apiVersion ? { apiVersion: last.apiVersion } : {}),
      metadata: {
        ...(last?.metadata.resourceVersion
          ? { resourceVersion: last.metadata.resourceVersion }
          : {}),
      },
      items,
    };
  }

  /**
   * Watches a collection and yields its events until the server ends the
   * watch or `signal` aborts (then it returns quietly).
   *
   * @throws {KubeApiError} If the watch cannot start, or the server sends an
   * ERROR event (`gone` is true for "too old resource version").
   */
  async *watch(
    url: string,
    options: WatchOptions = {},
  ): AsyncGenerator<WatchEvent> {
    const {
      resourceVersion,
      labelSelector,
      fieldSelector,
      timeoutSeconds = 300,
      signal,
    } = options;
    const query = new URLSearchParams({
      watch: "true",
      allowWatchBookmarks: "true",
      timeoutSeconds: String(timeoutSeconds),
    });
    if (resourceVersion) query.set("resourceVersion", resourceVersion);
    if (labelSelector) query.set("labelSelector", labelSelector);
    if (fieldSelector) query.set("fieldSelector", fieldSelector);
    const target = withQuery(url, query);
    // The server ends the watch after timeoutSeconds; the client gives up a
    // little later in case the connection silently died.
    const lifetime = AbortSignal.timeout((timeoutSeconds + 30) * 1000);
    const stop = signal === undefined
      ? lifetime
      : AbortSignal.any([signal, lifetime]);
    let response: Response;
    try {
      const started = await this.#fetch("GET", target, {
        signal: stop,
        timeoutMs: this.#timeoutMs,
      });
      started.done();
      response = started.response;
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    }
    if (!response.ok) {
      throw statusError("WATCH", url, response.status, await response.text());
    }
    if (response.body === null) return;
    try {
      for await (const line of lines(response.body)) {
        const event = JSON.parse(line) as { type: string; object: KubeObject };
        if (event.type === "ERROR") {
          const status = event.object as {
            code?: number;
            reason?: string;
            message?: string;
          };
          throw new KubeApiError(
            `WATCH ${url}: ${status.code ?? 0}: ${
              status.message ?? "error event"
            }`,
            {
              status: status.code ?? 0,
              ...(status.reason === undefined ? {} : { reason: status.reason }),
            },
          );
        }
        yield event as WatchEvent;
      }
    } catch (error) {
      if (error instanceof KubeApiError) throw error;
      if (signal?.aborted || lifetime.aborted) return;
      throw transportError("WATCH", url, error);
    }
  }

  /**
   * Takes room under the byte budget, sends the request and decodes the
   * answer. The room is the caller's to give back with `release` once it
   * no longer holds the value; on failure it is given back here.
   */
  async #exchange<T>(
    method: string,
    url: string,
    options: RequestOptions,
  ): Promise<{ value: T; release: () => void }> {
    const started = performance.now();
    const release = await this.#reserve(method, url, options);
    try {
      const { response, done } = await this.#fetch(method, url, {
        ...options,
        waitedMs: performance.now() - started,
      });
      let text: string;
      try {
        text = options.maxBytes === undefined
          ? await response.text()
          : await boundedText(response, {
            method,
            url,
            maxBytes: options.maxBytes,
            memory: options.measure === "memory",
          });
      } catch (error) {
        if (error instanceof KubeApiError) throw error;
        throw transportError(method, url, error);
      } finally {
        done();
      }
      return { value: decoded<T>(method, url, { response, text }), release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * Waits for room for the answer under `options.byteBudget`, within the
   * request's deadline, and returns what gives it back (nothing to give
   * back without a budget).
   */
  async #reserve(
    method: string,
    url: string,
    options: RequestOptions,
  ): Promise<() => void> {
    const { byteBudget: budget, signal } = options;
    if (budget === undefined) return () => {};
    if (signal?.aborted) throw transportError(method, url, signal.reason);
    const weight = Math.min(
      options.maxBytes ?? budget.capacity,
      budget.capacity,
    );
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const release = await budget.acquire(weight, {
      timeoutMs,
      ...(signal === undefined ? {} : { signal }),
    });
    if (release !== undefined) return release;
    if (signal?.aborted) throw transportError(method, url, signal.reason);
    throw new KubeApiError(
      `${method} ${url}: no room within ${timeoutMs} ms to read an answer of up to ${
        formatBytes(weight)
      }: answers may hold ${
        formatBytes(budget.capacity)
      } at once and that much is taken`,
      { status: 0, reason: RESPONSE_BUDGET_EXHAUSTED },
    );
  }

  /**
   * Sends a request whose deadline covers the answer's headers and, until
   * `done()` is called, its body: a watch calls `done()` once the headers
   * are in, so only the server's `timeoutSeconds` bounds the stream.
   */
  async #fetch(
    method: string,
    url: string,
    options: RequestOptions & { waitedMs?: number },
  ): Promise<{ response: Response; done: () => void }> {
    const refused = this.#refusal(url);
    if (refused !== undefined) {
      throw new KubeApiError(`${method} ${url}: ${refused}`, {
        status: 0,
        reason: "InsecureUrl",
      });
    }
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    // What is left of the deadline after waiting for room to read the
    // answer; the caller's signal ends the request too, also after done().
    const deadline = new Deadline(
      Math.max(0, timeoutMs - (options.waitedMs ?? 0)),
      {
        what: `${method} ${url}`,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
    );
    const done = () => deadline.disarm();
    const signal = deadline.signal;
    const headers = { ...this.#headers };
    if (options.accept !== undefined) headers.accept = options.accept;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["content-type"] = options.contentType ?? "application/json";
      body = JSON.stringify(options.body);
    }
    try {
      const response = await fetch(url, {
        method,
        headers,
        client: this.#client,
        signal,
        ...(body === undefined ? {} : { body }),
      });
      return { response, done };
    } catch (error) {
      done();
      throw this.#failure(method, url, error, {
        timedOut: deadline.signal.reason instanceof DeadlineExceeded,
        timeoutMs,
      });
    }
  }

  /** Why `url` may not be used, or `undefined` when it may. */
  #refusal(url: string): string | undefined {
    if (this.#allowInsecureHttp || !/^http:/i.test(url)) return undefined;
    return `Cannot talk to kcp over plain http (${url}): the credentials would travel in clear; use https, or --allow-insecure-http for a local test`;
  }

  #failure(
    method: string,
    url: string,
    error: unknown,
    context: { timedOut: boolean; timeoutMs: number },
  ): KubeApiError {
    if (context.timedOut) {
      return new KubeApiError(
        `${method} ${url}: no answer within ${context.timeoutMs} ms`,
        {
          status: 0,
          reason: "Timeout",
          cause: error,
        },
      );
    }
    return transportError(method, url, error);
  }
}

/**
 * A byte count as people read it: `4 MiB`, `512 KiB`, or `1000 bytes` when
 * it is no whole number of either.
 */
export function formatBytes(bytes: number): string {
  if (bytes >= MIB && bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes >= KIB && bytes % KIB === 0) return `${bytes / KIB} KiB`;
  return `${bytes} ${bytes === 1 ? "byte" : "bytes"}`;
}

const KIB = 1024;
const MIB = 1024 * KIB;

/** The JSON value of an answer's text, or the error it stands for. */
function decoded<T>(
  method: string,
  url: string,
  answer: { response: Response; text: string },
): T {
  const { response, text } = answer;
  if (!response.ok) throw statusError(method, url, response.status, text);
  if (text === "") return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new KubeApiError(
      `${method} ${url}: ${response.status} with a body that is not JSON`,
      {
        status: response.status,
        reason: "InvalidResponse",
        cause: error,
      },
    );
  }
}

/**
 * What one byte of JSON text costs in memory while it is decoded and
 * parsed (see {@linkcode estimateMemory}), by byte value.
 */
const MEMORY_WEIGHTS: Uint8Array = (() => {
  // The text, and its copy in what it parses into.
  const weights = new Uint8Array(256).fill(2);
  // Outside ASCII, the text may be a two-byte (UTF-16) string.
  weights.fill(3, 0x80);
  // An object or an array: V8 takes about 60 bytes for an empty one.
  weights[0x7b] = weights[0x5b] = 66;
  // A string's header (two quotes), a value's or a property's slot.
  weights[0x22] = weights[0x2c] = weights[0x3a] = 10;
  return weights;
})();

/**
 * The memory that JSON text takes while it is decoded and parsed,
 * estimated from its bytes alone (so it can be counted as they arrive):
 * each byte counts 2 (the text, and its copy in the parsed value), 3
 * outside ASCII (UTF-16 text); each `{` and `[` 64 more (the object or
 * array it opens); each `"`, `,` and `:` 8 more (a string's header, a
 * value's slot). Measured against V8's heap (Deno 2.9, text and parsed
 * value) on 4 MiB of each shape, the estimate is 1.0 to 2.6 times what
 * is taken (long strings 1.0, empty objects 1.2, nested arrays 1.3,
 * Kubernetes objects with `managedFields` 2.1), except 0.84 times for
 * short strings outside ASCII and 0.6 times for objects whose keys all
 * differ (each a new hidden class); a count of bytes is off by up to 25
 * times (`[[[[]]]]`).
 */
export function estimateMemory(bytes: Uint8Array): number {
  let total = 0;
  for (let i = 0; i < bytes.length; i++) total += MEMORY_WEIGHTS[bytes[i]!]!;
  return total;
}

/**
 * The body of `response` as text, read chunk by chunk and given up (the
 * body cancelled) as soon as its count (bytes, or estimated memory with
 * `limit.memory`) is over `limit.maxBytes`: no more than that is ever
 * held.
 *
 * @throws {KubeApiError} With reason {@linkcode RESPONSE_TOO_LARGE} and the
 * answer's status when the body is over the limit; the stream's own error
 * when reading fails.
 */
async function boundedText(
  response: Response,
  limit: { method: string; url: string; maxBytes: number; memory: boolean },
): Promise<string> {
  /** `basis`: what the memory was estimated from. */
  const tooLarge = (basis: string) =>
    new KubeApiError(
      `${limit.method} ${limit.url}: ${
        limit.memory
          ? `the answer would take over ${
            formatBytes(limit.maxBytes)
          } of memory (estimated from ${basis})`
          : `the answer is over ${formatBytes(limit.maxBytes)}`
      }; stopped reading it`,
      { status: response.status, reason: RESPONSE_TOO_LARGE },
    );
  const body = response.body;
  if (body === null) return "";
  // Each byte counts at least 1, or 2 in memory.
  const declared = Number(response.headers.get("content-length") ?? 0);
  if (declared * (limit.memory ? 2 : 1) > limit.maxBytes) {
    await body.cancel().catch(() => {});
    throw tooLarge(`its Content-Length, ${formatBytes(declared)}`);
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let counted = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    counted += limit.memory ? estimateMemory(value) : value.byteLength;
    if (counted > limit.maxBytes) {
      chunks.length = 0;
      await reader.cancel().catch(() => {});
      throw tooLarge(`its first ${formatBytes(total)}`);
    }
    chunks.push(value);
  }
  let bytes: Uint8Array;
  if (chunks.length === 1) {
    bytes = chunks[0]!;
  } else {
    bytes = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, at);
      at += chunk.byteLength;
    }
  }
  chunks.length = 0;
  return new TextDecoder().decode(bytes);
}

/** Appends a query to a URL that may already have one. */
function withQuery(url: string, query: URLSearchParams): string {
  return `${url}${url.includes("?") ? "&" : "?"}${query}`;
}

function statusError(
  method: string,
  url: string,
  status: number,
  text: string,
): KubeApiError {
  let reason: string | undefined;
  let message = text.trim().slice(0, 500);
  try {
    const decoded = JSON.parse(text) as { reason?: string; message?: string };
    reason = decoded.reason;
    if (decoded.message) message = decoded.message;
  } catch {
    // not a Status object: keep the text
  }
  return new KubeApiError(
    `${method} ${url}: ${status}: ${message || "(no message)"}`,
    {
      status,
      ...(reason === undefined ? {} : { reason }),
    },
  );
}

function transportError(
  method: string,
  url: string,
  error: unknown,
): KubeApiError {
  return new KubeApiError(`${method} ${url}: ${errorText(error)}`, {
    status: 0,
    cause: error,
  });
}

/** Splits a byte stream into non-empty lines. */
async function* lines(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<string> {
  let buffer = "";
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line !== "") yield line;
    }
  }
  if (buffer.trim() !== "") yield buffer.trim();
}
