/**
 * What holds an object, machine-readable: the {@linkcode Cause} a denial
 * carries for each blocker, in `status.details.causes` of the webhook's
 * answer, and its round trip through a Kubernetes `StatusCause`.
 *
 * A `StatusCause` has three strings, and the API server keeps only those:
 * `reason` says what kind of blocker it is ({@linkcode CAUSE_REASONS}),
 * `field` the field that makes it one (for a human and `kubectl`), and
 * `message` the blocker itself as one JSON object (for programs such as
 * `kubectl dependencies why`). The message of the denial stays the English
 * sentence it always was.
 *
 * @example Encode and read back
 * ```ts
 * import { causeOf, statusCause } from "./causes.ts";
 *
 * const cause = statusCause({
 *   type: "Reference",
 *   object: {
 *     group: "compute.example.com", version: "v1", resource: "virtualmachines",
 *     kind: "VirtualMachine", namespace: "default", name: "vm-1",
 *   },
 *   fields: [".spec.vpcRef.name"],
 *   rules: ["2x8ab/vm-uses-vpc"],
 * });
 * causeOf(cause); // the same Reference again
 * ```
 *
 * @module
 */
import { z } from "zod";
import { isRfc3339, MAX_SINCE } from "./since.ts";

/** `StatusCause.reason` of each kind of blocker. */
export const CAUSE_REASONS = {
  Reference: "ReferencedBy",
  Owner: "OwnedBy",
  Lock: "LockedBy",
  More: "MoreNotShown",
  NotRead: "NotRead",
} as const;

/** An object a cause names: its type and where it is. */
export interface CauseObject {
  /** API group, `""` for core. */
  group: string;
  /** API version. */
  version: string;
  /** Plural resource. */
  resource: string;
  /** Kind. */
  kind: string;
  /** Namespace, `""` when cluster-scoped. */
  namespace: string;
  /** Name. */
  name: string;
}

/** A dependent that still refers to the object. */
export interface ReferenceCause {
  /** Discriminator. */
  type: "Reference";
  /** The dependent. */
  object: CauseObject;
  /** Its fields that refer, concrete (`.spec.nics[1].subnetRef.name`). */
  fields: string[];
  /** The rules (`<cluster>/<name>`) under which it refers. */
  rules: string[];
  /** Why it protects though its rule's `when` could not say, if so. */
  note?: string;
  /**
   * When it began to hold, where known: its `metadata.creationTimestamp`
   * (RFC 3339). Optional: a reader that does not know it ignores it.
   */
  since?: string;
}

/** An owner the object (or its Namespace) names, which holds it. */
export interface OwnerCause {
  /** Discriminator. */
  type: "Owner";
  /** The owner. */
  object: CauseObject;
  /** The field of the object (or of its Namespace) that names the owner. */
  field: string;
  /** Set when the field is on the object's Namespace: its name. */
  viaNamespace?: string;
  /** The rule (`<cluster>/<name>`). */
  rule: string;
  /** The rule's `when`, true for this owner (its switch is on). */
  when?: string;
  /** Why it protects though its `when` could not say, if so. */
  note?: string;
  /**
   * When it began to hold, where known: its `metadata.creationTimestamp`
   * (RFC 3339). Optional: a reader that does not know it ignores it.
   */
  since?: string;
}

/** A Lock that holds the object. */
export interface LockCause {
  /** Discriminator. */
  type: "Lock";
  /** The Lock: in the object's namespace (or the namespace it locks). */
  lock: { namespace: string; name: string };
  /** Its `spec.reason`. */
  reason: string;
  /** Its `spec.expiresAt`, when it has one: it holds until then. */
  expiresAt?: string;
  /**
   * When it began to hold, where known: its `metadata.creationTimestamp`
   * (RFC 3339). Optional: a reader that does not know it ignores it.
   */
  since?: string;
}

/** Blockers of one kind found but not named (the denial names the first). */
export interface MoreCause {
  /** Discriminator. */
  type: "More";
  /** Which kind. */
  of: "Reference" | "Owner";
  /** How many more. */
  count: number;
}

/**
 * Something the review could not read that might hold the object: a
 * dependent type it could not list, owners it could not look up. The
 * denial is then incomplete, and says so. A reader that does not know this
 * reason ignores it ({@linkcode causeOf} of an older version returns
 * `undefined` for it): it holds nothing by itself.
 */
export interface NotReadCause {
  /** Discriminator. */
  type: "NotRead";
  /** The type's API group, `""` for core. */
  group: string;
  /** The type's plural resource. */
  resource: string;
  /** The read that failed: `list` of dependents, `get` of owners. */
  verb: "list" | "get";
  /** Why it could not be read, in words (a 403, no answer in time, ...). */
  why: string;
}

/** One thing that holds an object, or that might and could not be read. */
export type Cause =
  | ReferenceCause
  | OwnerCause
  | LockCause
  | MoreCause
  | NotReadCause;

/** Whether `cause` holds the object by itself (all but {@linkcode NotReadCause}). */
export function isBlocking(
  cause: Cause,
): cause is ReferenceCause | OwnerCause | LockCause | MoreCause {
  return cause.type !== "NotRead";
}

/** A Kubernetes `metav1.StatusCause`. */
export interface StatusCause {
  /** Machine-readable kind of cause. */
  reason: string;
  /** Human- and machine-readable description. */
  message: string;
  /** The field the cause is about, when one is. */
  field?: string;
}

/** The most characters of one cause's message: a bound on what a denial carries. */
export const MAX_CAUSE_MESSAGE = 4_096;

/** The StatusCause that carries `cause`. */
export function statusCause(cause: Cause): StatusCause {
  const { type, ...rest } = cause;
  const field = cause.type === "Reference"
    ? cause.fields.join(", ")
    : cause.type === "Owner"
    ? cause.field
    : cause.type === "NotRead"
    ? (cause.group === "" ? cause.resource : `${cause.resource}.${cause.group}`)
    : undefined;
  return {
    reason: CAUSE_REASONS[type],
    message: JSON.stringify(rest),
    ...(field === undefined ? {} : { field }),
  };
}

const NAME = z.string().max(253);
const ObjectSchema = z.object({
  group: NAME,
  version: z.string().max(64),
  resource: NAME,
  kind: z.string().max(253),
  namespace: z.string().max(63),
  name: NAME,
});
const TEXT = z.string().max(MAX_CAUSE_MESSAGE);
/**
 * A `since` that is no RFC 3339 time is dropped, not the cause with it: a
 * cause holds whether or not its time can be read.
 */
const SINCE = z.string().max(MAX_SINCE).refine(isRfc3339).optional().catch(
  undefined,
);

const BODIES = {
  Reference: z.object({
    object: ObjectSchema,
    fields: z.array(TEXT).max(16),
    rules: z.array(NAME.or(z.string().max(600))).max(64),
    note: TEXT.optional(),
    since: SINCE,
  }),
  Owner: z.object({
    object: ObjectSchema,
    field: TEXT,
    viaNamespace: z.string().max(63).optional(),
    rule: z.string().max(600),
    when: TEXT.optional(),
    note: TEXT.optional(),
    since: SINCE,
  }),
  Lock: z.object({
    lock: z.object({ namespace: z.string().max(63), name: NAME }),
    reason: TEXT,
    expiresAt: z.string().max(64).optional(),
    since: SINCE,
  }),
  More: z.object({
    of: z.enum(["Reference", "Owner"]),
    count: z.int().min(1),
  }),
  NotRead: z.object({
    group: z.string().max(253),
    resource: NAME,
    verb: z.enum(["list", "get"]),
    why: TEXT,
  }),
};

/**
 * The {@linkcode Cause} a StatusCause carries, or `undefined` when it is
 * not one of ours or does not parse (an unknown reason, a message that is
 * not such a JSON object, one longer than {@linkcode MAX_CAUSE_MESSAGE}).
 */
export function causeOf(status: unknown): Cause | undefined {
  if (typeof status !== "object" || status === null) return undefined;
  const { reason, message } = status as Record<string, unknown>;
  if (typeof message !== "string" || message.length > MAX_CAUSE_MESSAGE) {
    return undefined;
  }
  const type = (Object.keys(CAUSE_REASONS) as (keyof typeof CAUSE_REASONS)[])
    .find((t) => CAUSE_REASONS[t] === reason);
  if (type === undefined) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(message);
  } catch {
    return undefined;
  }
  return causeFrom(type, body);
}

/**
 * A {@linkcode Cause} given as a plain object (as `/holds.json` holds them),
 * validated; `undefined` when it is not one.
 */
export function parseCause(value: unknown): Cause | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { type, ...body } = value as Record<string, unknown>;
  if (typeof type !== "string" || !Object.hasOwn(CAUSE_REASONS, type)) {
    return undefined;
  }
  return causeFrom(type as keyof typeof CAUSE_REASONS, body);
}

function causeFrom(
  type: keyof typeof CAUSE_REASONS,
  body: unknown,
): Cause | undefined {
  const parsed = BODIES[type].safeParse(body);
  if (!parsed.success) return undefined;
  return stripUndefined({ type, ...parsed.data }) as Cause;
}

/** The causes among a Status's `details.causes` that are ours, in order. */
export function causesOf(status: unknown): Cause[] {
  if (typeof status !== "object" || status === null) return [];
  const details = (status as Record<string, unknown>).details;
  if (typeof details !== "object" || details === null) return [];
  const causes = (details as Record<string, unknown>).causes;
  if (!Array.isArray(causes)) return [];
  return causes.map(causeOf).filter((c): c is Cause => c !== undefined);
}

function stripUndefined(value: Record<string, unknown>): unknown {
  return Object.fromEntries(
    Object.entries(value).filter(([, v]) => v !== undefined),
  );
}
