/**
 * The admission endpoint, on Node's request and response as the bounded
 * TLS server hands them over: `POST /validate[/<provider>]` reads one
 * AdmissionReview under a byte bound, has the validator decide it and
 * answers one. Nothing is converted to fetch `Request`/`Response` objects:
 * a review's body is read once into bytes and its answer written in one
 * `end()` (`deno task bench`'s fast path).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { IncomingMessage, ServerResponse } from "node:http";
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
import type { NodeHandler } from "./bounded_server.ts";
import type { Validator } from "./deletion_validator.ts";
import type { Verdict } from "./verdicts.ts";
import {
  createSampler,
  isRecord,
  type Logger,
  type Semaphore,
  truncateText,
} from "../runtime/mod.ts";

/** What the admission endpoint reports per review. */
export interface AdmissionObserver {
  /** Called once per well-formed review with its verdict and duration. */
  reviewed(verdict: Verdict, seconds: number): void;
  /** Called once per malformed request. */
  rejected(status: number): void;
}

/** Dependencies of {@linkcode createAdmissionHandler}. */
export interface AdmissionHandlerDeps {
  /** Decides reviews. */
  validator: Validator;
  /** Where to log. */
  log: Logger;
  /** Metrics hooks. */
  observer: AdmissionObserver;
  /**
   * Told every review with its verdict (the hold table of `--holds`).
   * @default {none}
   */
  holds?: { observe(request: AdmissionRequest, verdict: Verdict): void };
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

const TOO_LARGE =
  `Cannot parse AdmissionReview: body is larger than ${MAX_REVIEW_BYTES} bytes`;
const BUSY =
  "The dependency webhook is busy reading other reviews: retry the request";

/**
 * The admission endpoint: `POST /validate` takes an AdmissionReview v1 and
 * answers one, applying every rule about the reviewed type; `POST
 * /validate/<provider workspace path>` (the URL the controller writes into
 * each provider's webhook configuration) applies only the rules about that
 * provider's export of it. A query (kcp adds `?timeout=`) is ignored. A
 * malformed body gets a 4xx with a JSON `{"error": ...}` naming the
 * problem: 413 for a body over {@linkcode MAX_REVIEW_BYTES} (declared or
 * received; none of the rest is kept: the server drops it as it arrives,
 * within its request timeout, so the client reads the answer),
 * 400 for anything else; any other method or path a 404. A decision, allow
 * or deny, is always HTTP 200. While `bodyBytes` has no room for a body
 * within `queueTimeoutMs`, the answer is 503 with `Retry-After`, which kcp
 * reports as a failed call (fail closed). A client that goes away before
 * its body is in gets no answer.
 */
export function createAdmissionHandler(
  deps: AdmissionHandlerDeps,
): NodeHandler {
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
    res: ServerResponse,
    status: 400 | 413,
    message: string,
  ): void => {
    observer.rejected(status);
    sampleRejects((suppressed) =>
      log.warn("rejected malformed admission review", {
        status,
        error: truncateText(message, LOGGED_MESSAGE_CHARS),
        suppressedSinceLast: suppressed,
      })
    );
    answer(res, status, { error: message });
  };
  /** Reads, decides and answers one review; `provider` scopes the rules. */
  const review = async (
    req: IncomingMessage,
    res: ServerResponse,
    provider: string | undefined,
  ): Promise<void> => {
    const started = now();
    const length = Number(req.headers["content-length"]);
    const declared = req.headers["content-length"] !== undefined &&
        Number.isInteger(length) && length >= 0
      ? length
      : undefined;
    if (declared !== undefined && declared > MAX_REVIEW_BYTES) {
      return reject(res, 413, TOO_LARGE);
    }
    const release = bodyBytes === undefined
      ? () => {}
      : await bodyBytes.acquire(declared ?? MAX_REVIEW_BYTES, {
        timeoutMs: queueTimeoutMs,
      });
    if (release === undefined) {
      observer.rejected(503);
      return answer(res, 503, { error: BUSY }, { "retry-after": "1" });
    }
    let parsed;
    try {
      const body = await readAtMost(req, MAX_REVIEW_BYTES);
      if (body === "gone") return;
      if (body === "too large") return reject(res, 413, TOO_LARGE);
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
    if (!parsed.ok) return reject(res, parsed.status, parsed.message);
    const { request } = parsed;
    const verdict = await validator.validate(
      request,
      provider === undefined ? {} : { provider },
    );
    const seconds = (now() - started) / 1000;
    observer.reviewed(verdict, seconds);
    deps.holds?.observe(request, verdict);
    if (request.operation === "DELETE") {
      logReview(log, request, verdict, { seconds, provider });
    }
    answer(res, 200, toReview(verdict.response));
  };
  return async (req, res) => {
    const target = req.url ?? "/";
    const query = target.indexOf("?");
    const path = query === -1 ? target : target.slice(0, query);
    const route = routeOf(req.method ?? "", path);
    if (route.kind === "review" || route.kind === "provider") {
      try {
        await review(
          req,
          res,
          route.kind === "provider" ? route.provider : undefined,
        );
      } catch (error) {
        log.error("admission request failed", { error });
        answer(res, 500, {
          error: "Internal error while reviewing: see the webhook's log",
        });
      }
      return;
    }
    answer(res, 404, {
      error: route.kind === "bad provider"
        ? `No such endpoint: POST ${path}: the last segment must be a workspace path`
        : `No such endpoint: ${req.method} ${path}`,
    });
  };
}

/** Where a request goes. */
type Route =
  | { kind: "review" }
  | { kind: "provider"; provider: string }
  | { kind: "bad provider" }
  | { kind: "none" };

const PROVIDER_PREFIX = "/validate/";

/** The route of `method` and `path` (without the query). */
function routeOf(method: string, path: string): Route {
  if (method !== "POST") return { kind: "none" };
  if (path === "/validate") return { kind: "review" };
  if (!path.startsWith(PROVIDER_PREFIX)) return { kind: "none" };
  const segment = path.slice(PROVIDER_PREFIX.length);
  if (segment === "" || segment.includes("/")) return { kind: "none" };
  let provider: string;
  try {
    provider = decodeURIComponent(segment);
  } catch {
    return { kind: "bad provider" };
  }
  return isWorkspacePath(provider)
    ? { kind: "provider", provider }
    : { kind: "bad provider" };
}

/** Writes `value` as a JSON answer with `status`, in one `end()`. */
function answer(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.headersSent) return;
  const body = JSON.stringify(value);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(body);
}

/**
 * The bytes of `req`'s body; `"too large"` as soon as more than `limit`
 * have arrived, whatever the request's content-length says (the rest
 * flows on and is dropped);
 * `"gone"` when the client went away (or was cut off) before the end.
 */
function readAtMost(
  req: IncomingMessage,
  limit: number,
): Promise<Uint8Array | "too large" | "gone"> {
  if (req.readableEnded) return Promise.resolve(new Uint8Array(0));
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const settle = (result: Uint8Array | "too large" | "gone") => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
      resolve(result);
    };
    const onData = (chunk: Uint8Array) => {
      size += chunk.byteLength;
      if (size > limit) {
        chunks.length = 0;
        return settle("too large");
      }
      chunks.push(chunk);
    };
    const onEnd = () => settle(concat(chunks, size));
    const onClose = () => settle(req.complete ? concat(chunks, size) : "gone");
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("close", onClose);
  });
}

/** `chunks` (of `size` bytes in all) as one array. */
function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
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
