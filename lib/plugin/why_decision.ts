/**
 * What the answer to a dry-run delete says about the object
 * ({@linkcode decide}): nothing holds it, something holds it (the causes the
 * dependency webhook put in `details.causes`), it cannot be deleted now for
 * another reason, or the question could not be asked. Pure: it reads the
 * status and the machine-readable causes, never the English message.
 *
 * @module
 */
import {
  type Cause,
  type CauseObject,
  causesOf,
  isBlocking,
} from "../causes/mod.ts";
import { isRecord } from "../runtime/mod.ts";
import { typeName } from "../rules/mod.ts";
import type { HttpAnswer } from "./dry_run.ts";

/** Nothing holds the object: a delete would go through. */
export interface FreeDecision {
  /** Discriminator. */
  state: "free";
}

/** The dependency webhook denied the delete and said what holds the object. */
export interface HeldDecision {
  /** Discriminator. */
  state: "held";
  /** What holds it, one cause per blocker, in the webhook's order. */
  causes: Cause[];
  /** The denial as the API server worded it. */
  message: string;
}

/**
 * The delete is denied for another reason (the webhook cannot check now,
 * the skip-protection annotation is not allowed, a denial without causes,
 * the webhook cannot be called): it cannot be deleted now.
 */
export interface DeniedDecision {
  /** Discriminator. */
  state: "denied";
  /** The HTTP status of the denial. */
  code: number;
  /** The denial as the API server worded it. */
  message: string;
  /** What the webhook said it could not read (`NotRead` causes), if any. */
  causes?: Cause[];
}

/** The question could not be asked: no such object, no permission, another error. */
export interface ErrorDecision {
  /** Discriminator. */
  state: "error";
  /** What went wrong, for a person. */
  message: string;
}

/** What a dry-run delete says about an object. */
export type Decision =
  | FreeDecision
  | HeldDecision
  | DeniedDecision
  | ErrorDecision;

/** The start of every message of an admission webhook's denial, as the API server words it. */
export const WEBHOOK_DENIAL_PREFIX = "admission webhook ";

/** What the API server says when it cannot call a webhook whose failure policy is Fail. */
const WEBHOOK_CALL_FAILED = "failed calling webhook";

/**
 * What the answer to a dry-run delete of `object` says:
 *
 * - 2xx: `free`.
 * - a 409, or any denial of an admission webhook, with causes of ours of
 *   which one holds the object (not only `NotRead`): `held`, with every
 *   cause (what could not be read too).
 * - any other 409, any other denial of an admission webhook (a 503
 *   "cannot check", a 403 for the skip-protection annotation), or a webhook
 *   the API server could not call: `denied` (fail closed: it cannot be
 *   deleted now).
 * - 404: `error`, not found; 403 that is not a webhook's: `error`, naming the
 *   permission missing (`you may not delete <resource>.<group> in namespace
 *   <ns>`, or `in workspace <workspace>` when cluster-scoped and
 *   `options.workspace` is given); anything else: `error` with the status
 *   and message.
 */
export function decide(
  answer: HttpAnswer,
  object: CauseObject,
  options: { workspace?: string | undefined } = {},
): Decision {
  const { status, body } = answer;
  if (status >= 200 && status < 300) return { state: "free" };
  const message = messageOf(body);
  const fromWebhook = message.startsWith(WEBHOOK_DENIAL_PREFIX);
  const causes = causesOf(body);
  if (causes.some(isBlocking) && (status === 409 || fromWebhook)) {
    return { state: "held", causes, message };
  }
  if (
    status === 409 || fromWebhook || message.includes(WEBHOOK_CALL_FAILED)
  ) {
    return {
      state: "denied",
      code: status,
      message,
      ...(causes.length === 0 ? {} : { causes }),
    };
  }
  const type = typeName(object);
  const where = object.namespace !== ""
    ? `in namespace ${object.namespace}`
    : options.workspace === undefined
    ? "in this workspace"
    : `in workspace ${options.workspace}`;
  const said = message === "" ? "" : `: ${message}`;
  switch (status) {
    case 404:
      return {
        state: "error",
        message: `not found: ${type} ${JSON.stringify(object.name)} ${where}`,
      };
    case 403:
      return {
        state: "error",
        message: `you may not delete ${type} ${where}${said}`,
      };
    case 401:
      return {
        state: "error",
        message:
          `the API server did not accept the kubeconfig's credentials (401)${said}`,
      };
    default:
      return {
        state: "error",
        message: `the API server answered ${status}${said}`,
      };
  }
}

/** The `message` of a `Status` body, or a body that is text itself. */
function messageOf(body: unknown): string {
  if (typeof body === "string") return body.trim().slice(0, 2000);
  if (isRecord(body) && typeof body.message === "string") return body.message;
  return "";
}
