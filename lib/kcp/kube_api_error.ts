/**
 * The error of every failed `KubeClient` call: an error answer of the API
 * server (with its status and `Status.reason`) or a transport failure (status
 * 0: no answer, the deadline, a refused URL), and the reasons the client
 * itself gives.
 *
 * @module
 */
import { errorText } from "../runtime/mod.ts";

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

/**
 * `KubeApiError.reason` of an answer that redirects (a 3xx): it is not
 * followed, to another origin or the same one. kcp never redirects, and a
 * redirect followed would take the request's credentials along.
 */
export const REDIRECT_REFUSED = "RedirectRefused";

/** An error answer from the API server, or a transport failure (status 0). */
export class KubeApiError extends Error {
  /** HTTP status; 0 when no answer arrived (network error, deadline). */
  readonly status: number;
  /** `Status.reason` when the server sent one (e.g. `NotFound`, `Expired`). */
  readonly reason: string;
  /**
   * `Status.details.name` when the server sent one: a 404 that names the
   * object asked for says that object does not exist, where one without it
   * says the URL serves nothing (no such type, or not at that scope).
   */
  readonly detailsName: string | undefined;
  /**
   * The answer's `Status` object as the server sent it (a denial's
   * `details.causes` are in it), when the body was one; else `undefined`.
   */
  readonly statusBody: Record<string, unknown> | undefined;

  /** Builds the error. */
  constructor(
    message: string,
    options: {
      status: number;
      reason?: string;
      detailsName?: string;
      statusBody?: Record<string, unknown>;
      cause?: unknown;
    },
  ) {
    super(message, { cause: options.cause });
    this.name = "KubeApiError";
    this.status = options.status;
    this.reason = options.reason ?? "";
    this.detailsName = options.detailsName;
    this.statusBody = options.statusBody;
  }

  /** Whether the server said NotFound (404). */
  get notFound(): boolean {
    return this.status === 404;
  }

  /**
   * Whether no answer came at all: the connection was refused or broke, or
   * nothing came back in time (status 0, no reason or `Timeout`); not a
   * request refused before it was sent (a plain-http URL, no room to read).
   */
  get unanswered(): boolean {
    return this.status === 0 &&
      (this.reason === "" || this.reason === "Timeout");
  }

  /** Whether the resource version is too old to watch or list from (410 Gone / Expired). */
  get gone(): boolean {
    return this.status === 410 || this.reason === "Expired" ||
      this.reason === "Gone";
  }
}

/**
 * The {@linkcode KubeApiError} of a non-2xx answer: the `reason` and
 * `message` of its `Status` body, or the start of the body when it is no
 * `Status`.
 */
export function statusError(
  method: string,
  url: string,
  status: number,
  text: string,
): KubeApiError {
  let reason: string | undefined;
  let detailsName: string | undefined;
  let statusBody: Record<string, unknown> | undefined;
  let message = text.trim().slice(0, 500);
  try {
    const decoded = JSON.parse(text) as {
      kind?: unknown;
      reason?: string;
      message?: string;
      details?: { name?: unknown };
    };
    if (decoded.kind === "Status") statusBody = decoded;
    reason = decoded.reason;
    if (typeof decoded.details?.name === "string") {
      detailsName = decoded.details.name;
    }
    if (decoded.message) message = decoded.message;
  } catch {
    // not a Status object: keep the text
  }
  return new KubeApiError(
    `${method} ${url}: ${status}: ${message || "(no message)"}`,
    {
      status,
      ...(reason === undefined ? {} : { reason }),
      ...(detailsName === undefined ? {} : { detailsName }),
      ...(statusBody === undefined ? {} : { statusBody }),
    },
  );
}

/** The {@linkcode KubeApiError} (status 0) of a request that got no answer. */
export function transportError(
  method: string,
  url: string,
  error: unknown,
): KubeApiError {
  return new KubeApiError(`${method} ${url}: ${errorText(error)}`, {
    status: 0,
    cause: error,
  });
}
