/**
 * A small REST client for kcp: JSON requests with a deadline on every call,
 * one keep-alive connection pool per client, paginated lists and watch
 * streams. URLs are absolute, since one process talks to several kcp
 * endpoints (the front-proxy, virtual-workspace URLs).
 *
 * @module
 */
import { Deadline, DeadlineExceeded, printable } from "../runtime/mod.ts";
import type { KubeConnection } from "./kube_config.ts";
import {
  KubeApiError,
  REDIRECT_REFUSED,
  RESPONSE_BUDGET_EXHAUSTED,
  RESPONSE_TOO_LARGE,
  statusError,
  transportError,
} from "./kube_api_error.ts";
import type {
  KubeClientOptions,
  KubeList,
  KubeObject,
  ListOptions,
  RequestOptions,
  WatchEvent,
  WatchOptions,
} from "./kube_types.ts";
import { boundedText, decoded, formatBytes } from "./response_body.ts";
import { lineCap, watchLines } from "./watch_lines.ts";

/**
 * The default of `ListOptions.maxItems`: 100 000 objects, past which a
 * whole list is not kept in memory.
 */
export const DEFAULT_MAX_LIST_ITEMS = 100_000;

/** A REST client bound to one identity and trust configuration. */
export class KubeClient {
  readonly #headers: Record<string, string>;
  readonly #client: Deno.HttpClient;
  readonly #timeoutMs: number;
  readonly #allowInsecureHttp: boolean;
  readonly #maxBytes: number | undefined;

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
    this.#maxBytes = options.maxBytes;
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
          ...(options.measured === undefined
            ? {}
            : { measured: options.measured }),
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
   *
   * @throws {KubeApiError} As {@linkcode KubeClient.listPages} does, and
   * with reason {@linkcode RESPONSE_TOO_LARGE} past `maxItems` items.
   */
  async list(url: string, options: ListOptions = {}): Promise<KubeList> {
    const items: KubeObject[] = [];
    const maxItems = options.maxItems ?? DEFAULT_MAX_LIST_ITEMS;
    let last: KubeList | undefined;
    for await (const page of this.listPages(url, options)) {
      const kind = page.kind?.replace(/List$/, "");
      if (items.length + page.items.length > maxItems) {
        throw new KubeApiError(
          `LIST ${url}: more than ${maxItems} items: too many to keep in memory`,
          { status: 200, reason: RESPONSE_TOO_LARGE },
        );
      }
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
   * watch or `signal` aborts (then it returns quietly). Each event is read
   * up to `maxLineBytes`; with `sendInitialEvents`, the stream starts with
   * the collection's objects (see {@linkcode WatchOptions}).
   *
   * @throws {KubeApiError} If the watch cannot start, the server sends an
   * ERROR event (`gone` is true for "too old resource version"), or an
   * event is over `maxLineBytes` (reason {@linkcode RESPONSE_TOO_LARGE}).
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
      sendInitialEvents = false,
    } = options;
    const maxLineBytes = lineCap(options.maxLineBytes);
    const query = new URLSearchParams({
      watch: "true",
      allowWatchBookmarks: "true",
      timeoutSeconds: String(timeoutSeconds),
    });
    if (resourceVersion) query.set("resourceVersion", resourceVersion);
    if (labelSelector) query.set("labelSelector", labelSelector);
    if (fieldSelector) query.set("fieldSelector", fieldSelector);
    if (sendInitialEvents) {
      query.set("sendInitialEvents", "true");
      query.set("resourceVersionMatch", "NotOlderThan");
    }
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
      // An error answer is read up to the cap of an event, too.
      let text: string;
      try {
        text = await boundedText(response, {
          method: "WATCH",
          url,
          maxBytes: maxLineBytes,
          memory: false,
        });
      } catch (error) {
        if (error instanceof KubeApiError) throw error;
        throw transportError("WATCH", url, error);
      }
      throw statusError("WATCH", url, response.status, text);
    }
    if (response.body === null) return;
    try {
      const lines = watchLines(response.body, {
        what: `WATCH ${url}`,
        status: response.status,
        maxLineBytes,
      });
      for await (const line of lines) {
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
    options: RequestOptions & { measured?: (count: number) => void },
  ): Promise<{ value: T; release: () => void }> {
    const started = performance.now();
    const release = await this.#reserve(method, url, options);
    try {
      const { response, done } = await this.#fetch(method, url, {
        ...options,
        waitedMs: performance.now() - started,
      });
      let text: string;
      const maxBytes = options.maxBytes ?? this.#maxBytes;
      try {
        text = maxBytes === undefined
          ? await response.text()
          : await boundedText(response, {
            method,
            url,
            maxBytes,
            memory: options.measure === "memory",
            ...(options.measured === undefined
              ? {}
              : { counted: options.measured }),
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
        redirect: "manual",
        ...(body === undefined ? {} : { body }),
      });
      if (response.status >= 300 && response.status < 400) {
        done();
        await response.body?.cancel().catch(() => {});
        throw redirectRefused(method, url, response);
      }
      return { response, done };
    } catch (error) {
      done();
      if (error instanceof KubeApiError) throw error;
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
 * The error of a redirect: never followed, whatever its target. kcp never
 * redirects, and fetch would send the request's credentials (the bearer
 * token, the client certificate) to the new target, perhaps another origin
 * or plain http.
 */
function redirectRefused(
  method: string,
  url: string,
  response: Response,
): KubeApiError {
  const location = response.headers.get("location");
  const to = location === null
    ? "without a Location"
    : `to ${printable(location, 200)}`;
  return new KubeApiError(
    `${method} ${url}: the server answered ${response.status}, a redirect ${to}; ` +
      "redirects are not followed (kcp does not redirect, and the credentials would go along): " +
      "point the kubeconfig's server at kcp itself",
    { status: response.status, reason: REDIRECT_REFUSED },
  );
}

/** Appends a query to a URL that may already have one. */
function withQuery(url: string, query: URLSearchParams): string {
  return `${url}${url.includes("?") ? "&" : "?"}${query}`;
}
