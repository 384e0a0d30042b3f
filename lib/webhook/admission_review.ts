/**
 * Parsing and answering `admission.k8s.io/v1` AdmissionReviews.
 *
 * {@linkcode parseAdmissionReview} turns a request body into a validated
 * {@linkcode AdmissionRequest} or a 400 failure, without throwing.
 * {@linkcode allow}, {@linkcode deny} and {@linkcode toReview} build the reply,
 * and {@linkcode objectOf} picks the object a DELETE is about.
 *
 * @example Usage
 * ```ts
 * import { allow, parseAdmissionReview, toReview } from "./admission_review.ts";
 *
 * const parsed = parseAdmissionReview(new TextEncoder().encode(
 *   '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":' +
 *     '{"uid":"u-1","kind":{"group":"","version":"v1","kind":"ConfigMap"},' +
 *     '"resource":{"group":"","version":"v1","resource":"configmaps"},' +
 *     '"operation":"DELETE"}}',
 * ));
 * if (parsed.ok) toReview(allow(parsed.request.uid));
 * ```
 *
 * @module
 */

import { z } from "zod";
import { errorText, isRecord, validateWith } from "../runtime/mod.ts";
import type { StatusCause } from "../causes/mod.ts";

/**
 * The largest AdmissionReview body the webhook reads, in bytes (3 MiB); the
 * admission app answers 413 to a larger one without parsing it.
 */
export const MAX_REVIEW_BYTES = 3 * 1024 * 1024;

/** The most keys {@linkcode parseAdmissionReview} accepts in `request.userInfo.extra`. */
export const MAX_EXTRA_KEYS = 128;

/** The most values {@linkcode parseAdmissionReview} accepts in `request.userInfo.extra`, all keys together. */
export const MAX_EXTRA_VALUES = 1_024;

const API_VERSION = "admission.k8s.io/v1";
const KIND = "AdmissionReview";
const ISSUES_SHOWN = 3;
const VALUE_SHOWN = 60;

const GroupVersionResourceSchema = z.object({
  group: z.string(),
  version: z.string(),
  resource: z.string(),
});

const GroupVersionKindSchema = z.object({
  group: z.string(),
  version: z.string(),
  kind: z.string(),
});

const UserInfoSchema = z.object({
  username: z.string().optional(),
  uid: z.string().optional(),
  groups: z.array(z.string()).optional(),
  extra: z.record(z.string(), z.array(z.string())).optional(),
});

const AdmissionRequestSchema = z.object({
  uid: z.string().min(1),
  kind: GroupVersionKindSchema,
  resource: GroupVersionResourceSchema,
  subResource: z.string().optional(),
  requestKind: GroupVersionKindSchema.optional(),
  requestResource: GroupVersionResourceSchema.optional(),
  name: z.string().default(""),
  namespace: z.string().optional(),
  operation: z.enum(["CREATE", "UPDATE", "DELETE", "CONNECT"]),
  userInfo: UserInfoSchema.optional(),
  object: z.unknown().optional(),
  oldObject: z.unknown().optional(),
  dryRun: z.boolean().optional(),
  options: z.unknown().optional(),
});

/** A kind as the API server names it; `group` is `""` for the core group. */
export type GroupVersionKind = z.infer<typeof GroupVersionKindSchema>;

/**
 * The `request` of an `admission.k8s.io/v1` AdmissionReview, validated.
 *
 * `name` is `""` when the review names no object, as for each item of a
 * DELETECOLLECTION (take the name from `oldObject.metadata.name` then).
 * `namespace` is `""` or absent for cluster-scoped objects. `object` and
 * `oldObject` are left unvalidated; unknown fields are dropped.
 */
export type AdmissionRequest = z.infer<typeof AdmissionRequestSchema>;

/**
 * The outcome of {@linkcode parseAdmissionReview}: the request, or the HTTP
 * status and message to answer a malformed body with. `uid` is set on failure
 * when `request.uid` could still be read.
 */
export type ParseResult =
  | { ok: true; request: AdmissionRequest }
  | { ok: false; status: 400; message: string; uid?: string };

/** The `response` of an AdmissionReview. */
export interface AdmissionResponse {
  /** The `uid` of the request this answers. */
  uid: string;
  /** Whether the operation may go ahead. */
  allowed: boolean;
  /** Why the operation was denied; the API server shows `message` to the user. */
  status?: {
    code: number;
    reason?: string;
    message: string;
    /** What the denial is about, machine-readable (`kubectl dependencies why` reads `causes`). */
    details?: { causes: StatusCause[] };
  };
  /** Warnings the API server passes on to the client. */
  warnings?: string[];
}

/** An `admission.k8s.io/v1` AdmissionReview carrying a response. */
export interface AdmissionReviewResponse {
  /** Always `admission.k8s.io/v1`. */
  apiVersion: "admission.k8s.io/v1";
  /** Always `AdmissionReview`. */
  kind: "AdmissionReview";
  /** The answer to the request. */
  response: AdmissionResponse;
}

/**
 * Parses and validates an `admission.k8s.io/v1` AdmissionReview request body.
 *
 * Never throws: a malformed body (not UTF-8, not JSON, not a v1
 * AdmissionReview, a request that breaks the schema) fails with status 400
 * and a message naming the problem. The size of the body is the caller's to
 * bound: the admission app reads at most {@linkcode MAX_REVIEW_BYTES}.
 *
 * @param body The raw request body.
 * @returns The validated request, or the status and message to answer with.
 */
export function parseAdmissionReview(body: Uint8Array): ParseResult {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    return failure(
      400,
      "Cannot parse AdmissionReview: body is not valid UTF-8",
    );
  }
  if (text.trim() === "") {
    return failure(400, "Cannot parse AdmissionReview: body is empty");
  }

  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch (error) {
    return failure(
      400,
      `Cannot parse AdmissionReview: body is not JSON: ${errorText(error)}`,
    );
  }
  if (!isRecord(root)) {
    return failure(
      400,
      `Cannot parse AdmissionReview: ${notAnObject("body", root)}`,
    );
  }

  const request = root.request;
  const uid = isRecord(request) && typeof request.uid === "string" &&
      request.uid !== ""
    ? request.uid
    : undefined;

  const envelope = checkEnvelope(root);
  if (envelope !== undefined) {
    return failure(400, `Cannot parse AdmissionReview: ${envelope}`, uid);
  }
  if (request === undefined || request === null) {
    return failure(400, "Cannot parse AdmissionReview: request is missing");
  }
  if (!isRecord(request)) {
    return failure(
      400,
      `Cannot parse AdmissionReview: ${notAnObject("request", request)}`,
    );
  }
  if (uid === undefined) {
    const problem = request.uid === undefined
      ? "request.uid is missing"
      : request.uid === ""
      ? "request.uid is empty"
      : `request.uid must be a string: current value is ${show(request.uid)}`;
    return failure(400, `Cannot parse AdmissionReview: ${problem}`);
  }

  const extra = checkExtra(request.userInfo);
  if (extra !== undefined) {
    return failure(400, `Cannot parse AdmissionReview: ${extra}`, uid);
  }

  const parsed = validateWith(AdmissionRequestSchema, request, {
    root: "request",
    limit: ISSUES_SHOWN,
  });
  if (!parsed.ok) {
    return failure(
      400,
      `Cannot parse AdmissionReview: invalid request: ${parsed.error}`,
      uid,
    );
  }
  return { ok: true, request: parsed.data };
}

/**
 * A response that lets the operation go ahead.
 *
 * @param uid The `uid` of the request being answered.
 * @param options `warnings` to pass on to the client; left out of the
 * response when empty.
 * @returns `{ uid, allowed: true }`, with `warnings` when there are any.
 */
export function allow(
  uid: string,
  options: { warnings?: readonly string[] } = {},
): AdmissionResponse {
  const { warnings = [] } = options;
  return warnings.length === 0
    ? { uid, allowed: true }
    : { uid, allowed: true, warnings: [...warnings] };
}

/**
 * A response that denies the operation; the API server fails the request
 * with `code` and shows `message` to the user.
 *
 * @param uid The `uid` of the request being answered.
 * @param options The status to deny with, such as
 * `{ code: 409, reason: "Conflict", message: "VPC vpc-a is referenced by ..." }`,
 * and `causes`, one per blocker, which go to `status.details.causes`.
 * @returns `{ uid, allowed: false, status: { code, reason, message, details? } }`.
 */
export function deny(
  uid: string,
  options: {
    code: number;
    reason: string;
    message: string;
    causes?: readonly StatusCause[] | undefined;
  },
): AdmissionResponse {
  const { code, reason, message, causes } = options;
  return {
    uid,
    allowed: false,
    status: {
      code,
      reason,
      message,
      ...(causes === undefined || causes.length === 0
        ? {}
        : { details: { causes: [...causes] } }),
    },
  };
}

/**
 * Wraps a response in the `admission.k8s.io/v1` AdmissionReview the API
 * server expects as the reply body.
 *
 * @param response The answer to the request.
 * @returns The AdmissionReview to send back as JSON.
 */
export function toReview(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: API_VERSION, kind: KIND, response };
}

/**
 * The object a DELETE is about: `oldObject` (the stored object) if it is a
 * JSON object, else `object` if that is one, else `undefined`. Nulls, arrays
 * and other values are ignored.
 *
 * @param request A parsed admission request.
 * @returns The object, not validated further, or `undefined`.
 */
export function objectOf(
  request: AdmissionRequest,
): Record<string, unknown> | undefined {
  if (isRecord(request.oldObject)) return request.oldObject;
  if (isRecord(request.object)) return request.object;
  return undefined;
}

/**
 * The request with `object` and `oldObject` cut down to the metadata a
 * DELETE decision reads (`apiVersion`, `kind`, name, namespace, uid and the
 * named annotations), so that a large object is not held while the review
 * waits for kcp.
 *
 * @param request A parsed admission request.
 * @param options `annotations`, the annotation keys to keep.
 * @returns A new request; `request` is not changed.
 */
export function slimRequest(
  request: AdmissionRequest,
  options: { annotations: readonly string[] },
): AdmissionRequest {
  const slim = (value: unknown): unknown => {
    if (!isRecord(value)) return value;
    const metadata = isRecord(value.metadata) ? value.metadata : {};
    const annotations = isRecord(metadata.annotations)
      ? metadata.annotations
      : {};
    const kept: Record<string, unknown> = {};
    for (const key of options.annotations) {
      if (Object.hasOwn(annotations, key)) kept[key] = annotations[key];
    }
    const out: Record<string, unknown> = {};
    if (value.apiVersion !== undefined) out.apiVersion = value.apiVersion;
    if (value.kind !== undefined) out.kind = value.kind;
    out.metadata = {
      ...(metadata.name === undefined ? {} : { name: metadata.name }),
      ...(metadata.namespace === undefined
        ? {}
        : { namespace: metadata.namespace }),
      ...(metadata.uid === undefined ? {} : { uid: metadata.uid }),
      ...(isRecord(metadata.annotations) ? { annotations: kept } : {}),
    };
    return out;
  };
  const { object, oldObject, ...rest } = request;
  return {
    ...rest,
    ...(object === undefined ? {} : { object: slim(object) }),
    ...(oldObject === undefined ? {} : { oldObject: slim(oldObject) }),
  };
}

/** What is too big in `userInfo.extra`, or `undefined`; the schema checks types. */
function checkExtra(userInfo: unknown): string | undefined {
  if (!isRecord(userInfo) || !isRecord(userInfo.extra)) return undefined;
  let keys = 0;
  let values = 0;
  for (const key in userInfo.extra) {
    keys++;
    const value = userInfo.extra[key];
    values += Array.isArray(value) ? value.length : 1;
  }
  if (keys > MAX_EXTRA_KEYS) {
    return `request.userInfo.extra has ${keys} keys, more than the limit of ${MAX_EXTRA_KEYS}`;
  }
  if (values > MAX_EXTRA_VALUES) {
    return `request.userInfo.extra has ${values} values, more than the limit of ${MAX_EXTRA_VALUES}`;
  }
  return undefined;
}

function failure(
  status: 400,
  message: string,
  uid?: string,
): ParseResult {
  return uid === undefined
    ? { ok: false, status, message }
    : { ok: false, status, message, uid };
}

/** What is wrong with `apiVersion` or `kind`, or `undefined` when both are right. */
function checkEnvelope(root: Record<string, unknown>): string | undefined {
  const { apiVersion, kind } = root;
  if (apiVersion === undefined) {
    return `apiVersion is missing, expected "${API_VERSION}"`;
  }
  if (apiVersion === "admission.k8s.io/v1beta1") {
    return `apiVersion admission.k8s.io/v1beta1 is not supported, only ${API_VERSION} (set admissionReviewVersions to ["v1"])`;
  }
  if (apiVersion !== API_VERSION) {
    return `apiVersion must be "${API_VERSION}": current value is ${
      show(apiVersion)
    }`;
  }
  if (kind === undefined) return `kind is missing, expected "${KIND}"`;
  if (kind !== KIND) {
    return `kind must be "${KIND}": current value is ${show(kind)}`;
  }
  return undefined;
}

/** Says that `what` must be a JSON object, naming the type it has instead. */
function notAnObject(what: string, value: unknown): string {
  if (value === null) return `${what} must be a JSON object, not null`;
  const type = typeName(value);
  const article = type === "array" ? "an" : "a";
  return `${what} must be a JSON object, not ${article} ${type}: current value is ${
    show(value)
  }`;
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** A JSON rendering of `value`, cut short when long. */
function show(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > VALUE_SHOWN
    ? `${text.slice(0, VALUE_SHOWN)} (truncated)`
    : text;
}
