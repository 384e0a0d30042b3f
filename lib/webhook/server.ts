/**
 * The webhook's HTTP side: the Hono app for admission (`POST /validate`)
 * and the bounded TLS server that picks up a rotated certificate without a
 * restart; graceful shutdown.
 *
 * @module
 */
import { type Context, Hono } from "hono";
import {
  type AdmissionRequest,
  MAX_REVIEW_BYTES,
  objectOf,
  parseAdmissionReview,
  slimRequest,
  toReview,
} from "./admission_review.ts";
import { CLUSTER_ANNOTATION, isWorkspacePath } from "../kcp/mod.ts";
import { SKIP_PROTECTION_ANNOTATION } from "../rules/mod.ts";
import { type ConnectionLimits, serveBoundedTls } from "./bounded_server.ts";
import type { Validator, Verdict } from "./deletion_validator.ts";
import {
  type BindAddress,
  createSampler,
  isRecord,
  type Logger,
  type RunningServer,
  type Semaphore,
  truncateText,
} from "../runtime/mod.ts";

/** What the admission app reports per review. */
export interface AdmissionObserver {
  /** Called once per well-formed review with its verdict and duration. */
  reviewed(verdict: Verdict, seconds: number): void;
  /** Called once per malformed request. */
  rejected(status: number): void;
}

/** Dependencies of {@linkcode createAdmissionApp}. */
export interface AdmissionAppDeps {
  /** Decides reviews. */
  validator: Validator;
  /** Where to log. */
  log: Logger;
  /** Metrics hooks. */
  observer: AdmissionObserver;
  /**
   * Bounds the bytes of review bodies read and parsed at once (one permit a
   * byte; a body without a length takes {@linkcode MAX_REVIEW_BYTES}).
   * @default {no bound}
   */
  bodyBytes?: Semaphore;
  /** How long a body waits for `bodyBytes` before a 503. @default {2_000} */
  queueTimeoutMs?: number;
  /** Least time between two logged malformed requests. @default {10_000} */
  rejectLogIntervalMs?: number;
  /** Clock in milliseconds. @default {performance.now} */
  now?: () => number;
}

/** The annotations a decision reads; the rest of the object is dropped after parsing. */
const READ_ANNOTATIONS = [CLUSTER_ANNOTATION, SKIP_PROTECTION_ANNOTATION];

/**
 * The most characters of one string from a review (uid, name, namespace,
 * user, group, ...) in a log line; longer ones end in `...(+N chars)`. A
 * Kubernetes name has at most 253.
 */
export const LOGGED_TEXT_CHARS = 256;
/** The most groups of `userInfo` in a log line; `groupCount` has them all. */
export const LOGGED_GROUPS = 5;
/** The most characters of a denial or error message in a log line. */
export const LOGGED_MESSAGE_CHARS = 1_024;

/**
 * The admission app: `POST /validate` takes an AdmissionReview v1 and
 * answers one, applying every rule about the reviewed type; `POST
 * /validate/<provider workspace path>` (the URL the controller writes into
 * each provider's webhook configuration) applies only the rules about that
 * provider's export of it. A malformed body gets a 4xx with a JSON `{"error": ...}`
 * naming the problem: 413 for a body over {@linkcode MAX_REVIEW_BYTES}
 * (declared or received; no more is read), 400 for anything else. A
 * decision, allow or deny, is always HTTP 200. While `bodyBytes` has no room
 * for a body within `queueTimeoutMs`, the answer is 503 with `Retry-After`,
 * which kcp reports as a failed call (fail closed).
 */
export function createAdmissionApp(deps: AdmissionAppDeps): Hono {
  const {
    validator,
    log,
    observer,
    bodyBytes,
    queueTimeoutMs = 2_000,
    now = () => performance.now(),
  } = deps;
  const sampleRejects = createSampler(deps.rejectLogIntervalMs ?? 10_000, {
    now,
  });
  /** Answers a body that is no review; logs at most one line per interval. */
  const reject = (
    c: Context,
    status: 400 | 413,
    message: string,
  ): Response => {
    observer.rejected(status);
    sampleRejects((suppressed) =>
      log.warn("rejected malformed admission review", {
        status,
        error: truncateText(message, LOGGED_MESSAGE_CHARS),
        suppressedSinceLast: suppressed,
      })
    );
    return c.json({ error: message }, status);
  };
  const tooLarge =
    `Cannot parse AdmissionReview: body is larger than ${MAX_REVIEW_BYTES} bytes`;
  /** Reads, decides and answers one review; `provider` scopes the rules. */
  const review = async (c: Context, provider?: string): Promise<Response> => {
    const started = now();
    const length = Number(c.req.header("content-length"));
    const declared = Number.isInteger(length) && length >= 0
      ? length
      : undefined;
    if (declared !== undefined && declared > MAX_REVIEW_BYTES) {
      return reject(c, 413, tooLarge);
    }
    const release = bodyBytes === undefined
      ? () => {}
      : await bodyBytes.acquire(declared ?? MAX_REVIEW_BYTES, {
        timeoutMs: queueTimeoutMs,
      });
    if (release === undefined) {
      observer.rejected(503);
      return c.json(
        {
          error:
            "The dependency webhook is busy reading other reviews: retry the request",
        },
        503,
        { "retry-after": "1" },
      );
    }
    let parsed;
    try {
      const body = await readAtMost(c.req.raw.body, MAX_REVIEW_BYTES);
      if (body === undefined) return reject(c, 413, tooLarge);
      parsed = parseAdmissionReview(body);
      if (parsed.ok) {
        parsed = {
          ...parsed,
          request: slimRequest(parsed.request, {
            annotations: READ_ANNOTATIONS,
          }),
        };
      }
    } finally {
      release();
    }
    if (!parsed.ok) return reject(c, parsed.status, parsed.message);
    const { request } = parsed;
    const verdict = await validator.validate(
      request,
      provider === undefined ? {} : { provider },
    );
    const seconds = (now() - started) / 1000;
    observer.reviewed(verdict, seconds);
    if (request.operation === "DELETE") {
      logReview(log, request, verdict, { seconds, provider });
    }
    return c.json(toReview(verdict.response));
  };
  const app = new Hono();
  app.post("/validate", (c) => review(c));
  app.post("/validate/:provider", (c) => {
    const provider = c.req.param("provider");
    if (!isWorkspacePath(provider)) {
      return c.json({
        error:
          `No such endpoint: POST ${c.req.path}: the last segment must be a workspace path`,
      }, 404);
    }
    return review(c, provider);
  });
  app.notFound((c) =>
    c.json({ error: `No such endpoint: ${c.req.method} ${c.req.path}` }, 404)
  );
  app.onError((error, c) => {
    log.error("admission request failed", { error });
    return c.json({
      error: "Internal error while reviewing: see the webhook's log",
    }, 500);
  });
  return app;
}

/**
 * The bytes of `body`, or `undefined` as soon as more than `limit` have
 * arrived, whatever the request's content-length says. The rest is left
 * unread: the server discards it after the answer, so the client reads the
 * answer and the connection goes on.
 */
async function readAtMost(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) return undefined;
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * One line per decided DELETE: denials and deletes let through by the
 * skip-protection annotation (the audit of break-glass) at info, with who
 * asked; other allowed deletes at debug. Everything from the review is
 * bounded, as the caller controls it: strings to
 * {@linkcode LOGGED_TEXT_CHARS}, the groups to the first
 * {@linkcode LOGGED_GROUPS} and their count, the message to
 * {@linkcode LOGGED_MESSAGE_CHARS}.
 */
function logReview(
  log: Logger,
  request: AdmissionRequest,
  verdict: Verdict,
  context: { seconds: number; provider: string | undefined },
): void {
  const { seconds, provider } = context;
  const found = objectOf(request)?.metadata;
  const metadata = isRecord(found) ? found : {};
  const annotations = isRecord(metadata.annotations)
    ? metadata.annotations
    : undefined;
  const groups = request.userInfo?.groups;
  const message = verdict.response.status?.message;
  const fields = {
    uid: shortText(request.uid),
    resource: shortText(
      `${request.resource.resource}.${request.resource.group}`,
    ),
    workspace: shortText(annotations?.[CLUSTER_ANNOTATION]),
    // The provider workspace's path, from the configuration's URL.
    provider: shortText(provider),
    namespace: shortText(request.namespace),
    name: shortText(request.name || metadata.name),
    dryRun: request.dryRun ?? false,
    user: shortText(request.userInfo?.username),
    ...(groups === undefined ? {} : {
      groups: groups.slice(0, LOGGED_GROUPS).map((g) => shortText(g)),
      groupCount: groups.length,
    }),
    outcome: verdict.outcome,
    durationMs: Math.round(seconds * 1000),
    ...(verdict.response.allowed || message === undefined
      ? {}
      : { message: truncateText(message, LOGGED_MESSAGE_CHARS) }),
  };
  if (verdict.outcome === "allowed_skip") {
    log.info(
      `delete allowed by the ${SKIP_PROTECTION_ANNOTATION} annotation`,
      fields,
    );
  } else if (verdict.outcome === "allowed_workspace_deleting") {
    log.info(
      "delete allowed: kcp is deleting the whole workspace",
      fields,
    );
  } else if (verdict.response.allowed) {
    log.debug("admission review", fields);
  } else if (verdict.forbidden !== undefined) {
    // An operator's job, not the tenant's: the webhook lacks a read grant.
    const { verb, group, resource } = verdict.forbidden;
    log.warn("admission review denied: the webhook may not read a type", {
      ...fields,
      forbidden: { verb, group, resource },
    });
  } else {
    log.info("admission review denied", fields);
  }
}

/**
 * A string from a review, cut to {@linkcode LOGGED_TEXT_CHARS}; anything
 * else (absent, or not a string where one belongs) is left out.
 */
function shortText(value: unknown): string | undefined {
  return typeof value === "string"
    ? truncateText(value, LOGGED_TEXT_CHARS)
    : undefined;
}

/**
 * Options for {@linkcode serveTls}; the connection limits have the defaults
 * of {@linkcode ConnectionLimits}.
 */
export interface ServeTlsOptions extends ConnectionLimits {
  /** PEM certificate chain file. */
  certFile: string;
  /** PEM private key file. */
  keyFile: string;
  /** Where to log reloads and handler errors. */
  log: Logger;
  /** How often to look for a rotated certificate. @default {10_000} */
  reloadIntervalMs?: number;
}

/**
 * Serves HTTPS (HTTP/1.1) with the certificate in `certFile`/`keyFile`,
 * within the connection limits in `options`: a TLS handshake timeout, a
 * request-head timeout, an idle keep-alive timeout, a cap on open
 * connections, and a `shutdown()` that drains for at most `drainTimeoutMs`
 * and then closes every connection. Re-reads the files every
 * `reloadIntervalMs`: when they changed, new connections get the new
 * certificate while open ones keep theirs. A certificate that does not load
 * is logged and the old one kept.
 *
 * @throws {Error} If the first certificate cannot be read or used.
 */
export async function serveTls(
  bind: BindAddress,
  handler: Deno.ServeHandler,
  options: ServeTlsOptions,
): Promise<RunningServer> {
  const { certFile, keyFile, log, reloadIntervalMs = 10_000, ...limits } =
    options;
  let pem = await readPair(certFile, keyFile);
  const server = await serveBoundedTls(bind, handler, {
    ...limits,
    pem,
    onError: (error) => log.error("request handler failed", { error }),
  });
  let rejected = "";
  let stopping = false;
  const timer = setInterval(async () => {
    let next;
    try {
      next = await readPair(certFile, keyFile);
    } catch (error) {
      log.warn("cannot read the TLS certificate, keeping the current one", {
        certFile,
        keyFile,
        error,
      });
      return;
    }
    const id = `${next.cert}\0${next.key}`;
    if (
      stopping || (next.cert === pem.cert && next.key === pem.key) ||
      id === rejected
    ) {
      return;
    }
    try {
      server.setCertificate(next);
      pem = next;
      log.info("reloaded the TLS certificate", { certFile });
    } catch (error) {
      // Logged once per content: a half-written pair is retried at the next tick.
      rejected = id;
      log.error("cannot use the new TLS certificate, keeping the current one", {
        certFile,
        error,
      });
    }
  }, reloadIntervalMs);
  return {
    port: server.port,
    async shutdown() {
      stopping = true;
      clearInterval(timer);
      await server.shutdown();
    },
  };
}

async function readPair(
  certFile: string,
  keyFile: string,
): Promise<{ cert: string; key: string }> {
  const [cert, key] = await Promise.all([
    Deno.readTextFile(certFile),
    Deno.readTextFile(keyFile),
  ]);
  return { cert, key };
}
