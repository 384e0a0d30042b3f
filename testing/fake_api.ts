/**
 * Test helpers: a fake Kubernetes API server on 127.0.0.1 (plain HTTP, port
 * 0) with a request log and controllable watch streams, plus small polling
 * and response helpers. Only for `*_test.ts` files.
 *
 * @module
 */
import {
  DEFAULT_API_EXPORT_NAME,
  type KubeConnection,
  type KubeObject,
} from "../lib/kcp/mod.ts";

/** One request the fake server received. */
export interface SeenRequest {
  /** HTTP method. */
  method: string;
  /** The full URL, with its query. */
  url: URL;
  /** The request headers. */
  headers: Headers;
  /** The request body as text ("" when none). */
  body: string;
}

/** Answers one request. */
export type FakeHandler = (
  request: SeenRequest,
  api: FakeApi,
) => Response | Promise<Response>;

/** A streamed response body the test writes to, e.g. a watch. */
export class EventStream {
  readonly #encoder = new TextEncoder();
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
  #resolveClosed!: () => void;
  /** Resolves when the stream ended: by {@linkcode EventStream.end} or because the client went away. */
  readonly closed: Promise<void>;
  /** Whether the client cancelled the stream (rather than the test ending it). */
  cancelled = false;
  /** The body to answer with. */
  readonly body: ReadableStream<Uint8Array>;

  constructor() {
    this.closed = new Promise((resolve) => this.#resolveClosed = resolve);
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => {
        this.cancelled = true;
        this.#finish();
      },
    });
  }

  /** Whether the stream can still be written to. */
  get open(): boolean {
    return this.#open;
  }

  /** Sends raw text or bytes, as one chunk. */
  send(chunk: string | Uint8Array): void {
    if (!this.#open) throw new Error("Cannot send: the stream has ended");
    this.#controller.enqueue(
      typeof chunk === "string" ? this.#encoder.encode(chunk) : chunk,
    );
  }

  /** Sends one watch event as a line of JSON. */
  event(type: string, object: unknown): void {
    this.send(`${JSON.stringify({ type, object })}\n`);
  }

  /** Ends the stream (the server closes the watch); idempotent. */
  end(): void {
    if (!this.#open) return;
    try {
      this.#controller.close();
    } catch {
      // already cancelled by the client
    }
    this.#finish();
  }

  #finish(): void {
    this.#open = false;
    this.#resolveClosed();
  }
}

/** A fake API server; {@linkcode FakeApi.close} ends every stream and stops it. */
export class FakeApi {
  /** Every request received, in order. */
  readonly requests: SeenRequest[] = [];
  /** Every stream handed out, in order. */
  readonly streams: EventStream[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  #handler: FakeHandler;

  constructor(handler: FakeHandler) {
    this.#handler = handler;
    this.#server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen: () => {},
      handler: async (request) => {
        const seen: SeenRequest = {
          method: request.method,
          url: new URL(request.url),
          headers: request.headers,
          body: await request.text(),
        };
        this.requests.push(seen);
        return await this.#handler(seen, this);
      },
    });
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** The port. */
  get port(): number {
    return this.#server.addr.port;
  }

  /** Replaces the handler. */
  set handler(handler: FakeHandler) {
    this.#handler = handler;
  }

  /** A new stream whose {@linkcode EventStream.body} a handler answers with. */
  stream(): EventStream {
    const stream = new EventStream();
    this.streams.push(stream);
    return stream;
  }

  /** Requests whose path is `path` (and, if given, that are / are not watches). */
  seen(path: string, watch?: boolean): SeenRequest[] {
    return this.requests.filter((r) =>
      r.url.pathname === path &&
      (watch === undefined || isWatch(r) === watch)
    );
  }

  /** Ends every stream and shuts the server down. */
  async close(): Promise<void> {
    for (const stream of this.streams) stream.end();
    await this.#server.shutdown();
  }
}

/** Whether a request is a watch (`watch=true`). */
export function isWatch(request: SeenRequest): boolean {
  return request.url.searchParams.get("watch") === "true";
}

/** A JSON response. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** A Kubernetes `Status` failure object. */
export function status(
  code: number,
  reason: string,
  message: string,
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Status",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  };
}

/** A streaming (watch) response over `stream`. */
export function streamed(stream: EventStream): Response {
  return new Response(stream.body, {
    headers: { "content-type": "application/json" },
  });
}

/** A connection to `server` over plain HTTP with token `t`. */
export function connection(server: string): KubeConnection {
  return {
    server,
    base: server,
    insecureSkipTlsVerify: false,
    token: "t",
    allowInsecureHttp: true,
  };
}

/**
 * Polls `condition` every few milliseconds until it is truthy, and fails
 * with `what` if it is not within `timeoutMs` (a bound, never asserted on).
 */
export async function waitUntil(
  what: string,
  condition: () => boolean,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`Timed out waiting for: ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Resolves after `ms` (to let background work run; never asserted on). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Collects log records as parsed JSON. */
export function logCollector(): {
  records: Record<string, unknown>[];
  write: (line: string) => void;
} {
  const records: Record<string, unknown>[] = [];
  return {
    records,
    write: (line) => records.push(JSON.parse(line)),
  };
}

/** Path of the dep-ctrl workspace on the fake server. */
export const DEP_CTRL_PATH = "/clusters/root:dep-ctrl";

/** Path of the endpoint-slice collection in the dep-ctrl workspace. */
export const SLICE_PATH =
  `${DEP_CTRL_PATH}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices`;

/**
 * The dep-ctrl export's endpoint slice, listing `endpoints` (paths on the
 * fake server at `base`) as its virtual-workspace URLs.
 */
export function endpointSlice(
  base: string,
  endpoints: readonly string[],
  options: { resourceVersion?: string } = {},
): KubeObject {
  return {
    apiVersion: "apis.kcp.io/v1alpha1",
    kind: "APIExportEndpointSlice",
    metadata: {
      name: DEFAULT_API_EXPORT_NAME,
      resourceVersion: options.resourceVersion ?? "1",
      annotations: { "kcp.io/cluster": "depctrlcluster" },
    },
    spec: { export: { path: "root:dep-ctrl", name: DEFAULT_API_EXPORT_NAME } },
    status: { endpoints: endpoints.map((path) => ({ url: `${base}${path}` })) },
  };
}
