/**
 * A small REST client for kcp: JSON requests with a deadline on every call,
 * one keep-alive connection pool per client, paginated lists and watch
 * streams. URLs are absolute, since one process talks to several kcp
 * endpoints (the front-proxy, virtual-workspace URLs).
 *
 * @module
 */
import { errorText } from "../runtime/mod.ts";
import type { KubeConnection } from "./kube_config.ts";

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
}

/** Options of a list. */
export interface ListOptions {
  /** Page size. @default {500} */
  limit?: number;
  /** Label selector. */
  labelSelector?: string;
  /** Field selector. */
  fieldSelector?: string;
  /** Aborts the list. */
  signal?: AbortSignal;
  /** Deadline of each page request. */
  timeoutMs?: number;
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
   * Sends a request and decodes the JSON answer.
   *
   * @throws {KubeApiError} On a non-2xx answer, a transport error or the deadline.
   */
  async request<T>(
    method: string,
    url: string,
    options: RequestOptions = {},
  ): Promise<T> {
    const { response, done } = await this.#fetch(method, url, options);
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw transportError(method, url, error);
    } finally {
      done();
    }
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

  /** GET a URL. See {@linkcode KubeClient.request}. */
  get<T>(url: string, options: Omit<RequestOptions, "body"> = {}): Promise<T> {
    return this.request<T>("GET", url, options);
  }

  /**
   * Lists a collection page by page, following `continue` tokens. Each
   * page is requested only when the previous one has been consumed, so
   * memory stays bounded whatever the collection's size.
   *
   * @throws {KubeApiError} On any failed page.
   */
  async *listPages(
    url: string,
    options: ListOptions = {},
  ): AsyncGenerator<KubeList> {
    const { limit = 500, labelSelector, fieldSelector, signal, timeoutMs } =
      options;
    let token: string | undefined;
    do {
      const query = new URLSearchParams({ limit: String(limit) });
      if (labelSelector) query.set("labelSelector", labelSelector);
      if (fieldSelector) query.set("fieldSelector", fieldSelector);
      if (token) query.set("continue", token);
      const page = await this.request<KubeList>("GET", withQuery(url, query), {
        ...(signal === undefined ? {} : { signal }),
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      });
      page.items ??= [];
      page.metadata ??= {};
      yield page;
      token = page.metadata.continue || undefined;
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
   * Sends a request whose deadline covers the answer's headers and, until
   * `done()` is called, its body: a watch calls `done()` once the headers
   * are in, so only the server's `timeoutSeconds` bounds the stream.
   */
  async #fetch(
    method: string,
    url: string,
    options: RequestOptions,
  ): Promise<{ response: Response; done: () => void }> {
    const refused = this.#refusal(url);
    if (refused !== undefined) {
      throw new KubeApiError(`${method} ${url}: ${refused}`, {
        status: 0,
        reason: "InsecureUrl",
      });
    }
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException("deadline", "TimeoutError")),
      timeoutMs,
    );
    const done = () => clearTimeout(timer);
    const signal = options.signal === undefined
      ? deadline.signal
      : AbortSignal.any([options.signal, deadline.signal]);
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
        deadline: deadline.signal,
        timeoutMs,
        ...options,
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
    context: { deadline: AbortSignal; timeoutMs: number; signal?: AbortSignal },
  ): KubeApiError {
    if (context.deadline.aborted && !context.signal?.aborted) {
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
