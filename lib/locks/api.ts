/**
 * The Lock API (`dependencies.opendefense.cloud/v1alpha1`, kind `Lock`): a
 * namespaced object, created next to the object it protects, that denies the
 * DELETE (and, if asked, the UPDATE) of that object while it exists, with a
 * reason, or, with `spec.expiresAt`, until then (`expiry.ts`). Unlocking is
 * deleting the Lock, so who may lock and unlock is decided by RBAC on Locks,
 * not by who may edit the object.
 *
 * A Lock is namespaced and its target is in the Lock's own namespace; the
 * one cluster-scoped target it may name is that namespace itself
 * (`resource: namespaces`, group `""`), which locks the whole namespace. So
 * a namespace admin can lock what is in their namespace, and nobody can lock
 * anything outside it; and the webhook only applies Locks of the object's
 * own logical cluster, so no tenant can lock another tenant's objects.
 *
 * @example Usage
 * ```ts
 * import { parseLock } from "./api.ts";
 *
 * const parsed = parseLock({
 *   apiVersion: "dependencies.opendefense.cloud/v1alpha1",
 *   kind: "Lock",
 *   metadata: { name: "prod", namespace: "team-a" },
 *   spec: {
 *     target: { group: "network.example.com", version: "v1alpha1", resource: "vpcs", name: "core" },
 *     reason: "production VPC",
 *   },
 * });
 * parsed.ok; // true, with operations defaulted to ["Delete"]
 * ```
 *
 * @module
 */
import { z } from "zod";
import {
  API_VERSION,
  DNS_SUBDOMAIN_PATTERN,
  dnsSubdomainField,
  resourceField,
  versionField,
  workspacePathField,
} from "../rules/mod.ts";
import { errorText, type Validated, validateWith } from "../runtime/mod.ts";

/** The `kind` of a Lock object. */
export const LOCK_KIND = "Lock";
/** The `kind` of a list of Locks. */
export const LOCK_LIST_KIND = "LockList";
/** The plural resource of Locks. */
export const LOCK_PLURAL = "locks";
/** The singular resource of Locks. */
export const LOCK_SINGULAR = "lock";
/** Longest `spec.reason` accepted. */
export const REASON_MAX = 1024;
/** The operations a Lock can deny. */
export const LOCK_OPERATIONS = ["Delete", "Update"] as const;
/** One of {@linkcode LOCK_OPERATIONS}. */
export type LockOperation = typeof LOCK_OPERATIONS[number];
/**
 * Every reason the controller writes into a Lock's `Ready` condition:
 * `Enforced` when the configuration that covers its target is in place, the
 * others when it is not (or, for `TargetNotChecked`, not known to be), and
 * `Expired` once its `spec.expiresAt` has passed.
 */
export const LOCK_CONDITION_REASONS = [
  "Enforced",
  "InvalidSpec",
  "PathNotResolved",
  "ProviderNotBound",
  "ClaimNotAccepted",
  "InstallFailed",
  "TargetTypeUnknown",
  "ClusterScopedTarget",
  "ProviderMismatch",
  "TargetNotChecked",
  "Expired",
] as const;
/** One of {@linkcode LOCK_CONDITION_REASONS}. */
export type LockConditionReason = typeof LOCK_CONDITION_REASONS[number];

/** Schema of `spec.target`: the object a Lock protects, in the Lock's namespace. */
export const LockTargetSchema = z.object({
  apiExportRef: z.object({
    path: workspacePathField(
      "Workspace path of the APIExport, such as root:network-provider.",
    ),
    name: dnsSubdomainField("Name of the APIExport."),
  }).exactOptional().describe(
    "The APIExport that provides the locked type in this workspace; absent for a type of the workspace's own (a core type such as namespaces or configmaps, or a CRD).",
  ),
  group: z.string().max(253, {
    abort: true,
    error: (issue) =>
      `must be empty or a DNS subdomain of at most 253 characters: current length is ${
        typeof issue.input === "string" ? issue.input.length : 0
      }`,
  }).regex(new RegExp(`^$|${DNS_SUBDOMAIN_PATTERN.source}`), {
    error: (issue) =>
      `must be empty (the core group) or a DNS subdomain: current value is '${
        String(issue.input)
      }'`,
  }).describe("API group of the locked type; empty for the core group."),
  version: versionField("API version of the locked type, such as v1."),
  resource: resourceField(
    "Resource (plural) of the locked type, such as vpcs.",
  ),
  name: dnsSubdomainField("Name of the locked object."),
}).describe(
  "The locked object: in the Lock's namespace, or that namespace itself (group empty, resource namespaces).",
);

/** Schema of a Lock's `spec`. */
export const LockSpecSchema = z.object({
  target: LockTargetSchema,
  reason: z.string().min(1, { error: "must not be empty" }).max(REASON_MAX, {
    error: (issue) =>
      `must be at most ${REASON_MAX} characters: current length is ${
        typeof issue.input === "string" ? issue.input.length : 0
      }`,
  }).describe("Why the object is locked; quoted in every denial."),
  operations: z.array(z.enum(LOCK_OPERATIONS)).min(1, {
    error: "must list at least one operation: current value is an empty list",
  }).max(LOCK_OPERATIONS.length).default(["Delete"]).describe(
    "What the Lock denies: Delete (the default) and optionally Update. The status subresource is never locked.",
  ),
  expiresAt: z.iso.datetime({
    offset: true,
    error: (issue) =>
      `must be an RFC 3339 date-time such as 2026-12-01T18:00:00Z: current value is '${
        String(issue.input).slice(0, 64)
      }'`,
  }).exactOptional().describe(
    "When the Lock stops holding (RFC 3339, such as 2026-12-01T18:00:00Z); absent, it holds until deleted. The webhook lets go by its own clock, at most --lock-expiry-skew later, never earlier; the Lock then shows Ready False, Expired, until someone deletes it.",
  ),
}).describe("Which object is locked, why, against what, and until when.");

/** A Lock's `spec`. */
export type LockSpec = z.infer<typeof LockSpecSchema>;

/** Schema of a whole Lock object; `status` is not checked. */
export const LockSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(LOCK_KIND),
  metadata: z.looseObject({
    name: z.string().min(1, { error: "must not be empty" }),
    namespace: z.string().min(1, { error: "must not be empty" }),
    uid: z.string().optional(),
    generation: z.number().int().optional(),
    resourceVersion: z.string().optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: LockSpecSchema,
  status: z.unknown().optional(),
}).superRefine((lock, context) => {
  const { target } = lock.spec;
  const namespaces = target.group === "" && target.resource === "namespaces";
  if (namespaces && target.name !== lock.metadata.namespace) {
    context.addIssue({
      code: "custom",
      path: ["spec", "target", "name"],
      input: target.name,
      message:
        `a Lock can lock only its own namespace (${lock.metadata.namespace}): current value is '${target.name}'`,
    });
  }
  if (new Set(lock.spec.operations).size !== lock.spec.operations.length) {
    context.addIssue({
      code: "custom",
      path: ["spec", "operations"],
      input: lock.spec.operations,
      message: `must not repeat an operation: current value is [${
        lock.spec.operations.join(", ")
      }]`,
    });
  }
}).describe(
  "A Lock denies the deletion (and optionally the update) of one object in its namespace while it exists.",
);

/** A Lock object, as validated by {@linkcode LockSchema}. */
export type Lock = z.infer<typeof LockSchema>;

/** The outcome of {@linkcode parseLock}. */
export type LockParseResult =
  | {
    ok: true;
    lock: Lock;
    /**
     * Set when `spec.expiresAt` alone is malformed: the problem, as
     * `spec.expiresAt: <message>`. The Lock is then valid without it and
     * holds until deleted (fail closed: an expiry nobody can read never
     * ends a Lock early); its status says `InvalidSpec`.
     */
    expiryProblem?: string;
  }
  | { ok: false; error: string };

/**
 * Validates an untrusted value, such as a decoded watch event, as a Lock.
 * Never throws. A Lock whose only problem is a malformed `spec.expiresAt`
 * is returned without it, with `expiryProblem` set.
 *
 * @returns The typed Lock (operations defaulted), or every problem as
 * `<path>: <message>` joined by `; `.
 */
export function parseLock(value: unknown): LockParseResult {
  const result = validateLock(value);
  if (result.ok) return { ok: true, lock: result.data };
  const without = withoutExpiry(value);
  if (without === undefined) return { ok: false, error: result.error };
  const rest = validateLock(without);
  if (!rest.ok) return { ok: false, error: result.error };
  return { ok: true, lock: rest.data, expiryProblem: result.error };
}

function validateLock(value: unknown): Validated<Lock> {
  try {
    return validateWith(LockSchema, value);
  } catch (error) {
    return {
      ok: false,
      error: `(root): cannot read value: ${errorText(error)}`,
    };
  }
}

/** `value` without `spec.expiresAt`, or `undefined` when it has none. */
function withoutExpiry(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return undefined;
  const spec = (value as Record<string, unknown>).spec;
  if (typeof spec !== "object" || spec === null || !("expiresAt" in spec)) {
    return undefined;
  }
  const { expiresAt: _, ...rest } = spec as Record<string, unknown>;
  return { ...value, spec: rest };
}
