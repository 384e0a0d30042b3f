/**
 * When a Lock ends: the pure decisions over a Lock's `spec.expiresAt` and a
 * clock reading that the webhook and the controller make, each by its own
 * clock.
 *
 * The controller reports a Lock `Expired` from `expiresAt` on. The webhook
 * honours it until `expiresAt` plus a skew allowance
 * (`--lock-expiry-skew`, {@linkcode DEFAULT_LOCK_EXPIRY_SKEW_MS}): a webhook
 * whose clock runs ahead of the Lock writer's by up to the allowance still
 * holds the Lock at least as long as it asks, never less. A Lock without
 * `expiresAt` holds until deleted.
 *
 * @example Usage
 * ```ts
 * import { lockExpiresAt, lockHoldsAt } from "./expiry.ts";
 *
 * const expiresAt = lockExpiresAt({ expiresAt: "2026-12-01T18:00:00Z" });
 * lockHoldsAt(expiresAt, { now: Date.parse("2026-12-01T18:00:04Z"), skewMs: 5_000 }); // true
 * lockHoldsAt(expiresAt, { now: Date.parse("2026-12-01T18:00:05Z"), skewMs: 5_000 }); // false
 * ```
 *
 * @module
 */
import type { LockSpec } from "./api.ts";

/** The default skew allowance of the webhook (`--lock-expiry-skew`), ms. */
export const DEFAULT_LOCK_EXPIRY_SKEW_MS = 5_000;

/**
 * A Lock's `spec.expiresAt` in ms since the epoch; `undefined` when it has
 * none, or (fail closed) when it cannot be read as a time: it then never
 * expires.
 */
export function lockExpiresAt(
  spec: Pick<LockSpec, "expiresAt">,
): number | undefined {
  if (spec.expiresAt === undefined) return undefined;
  const ms = Date.parse(spec.expiresAt);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Whether the webhook honours a Lock that expires at `expiresAt` (ms, as
 * {@linkcode lockExpiresAt} reads it) when its clock reads `options.now`:
 * always without an expiry, else while `now` is before `expiresAt` plus
 * `options.skewMs`.
 */
export function lockHoldsAt(
  expiresAt: number | undefined,
  options: { now: number; skewMs: number },
): boolean {
  return expiresAt === undefined ||
    options.now < expiresAt + Math.max(0, options.skewMs);
}

/**
 * Whether the controller reports a Lock that expires at `expiresAt` as
 * `Expired` when its clock reads `now` (ms): from `expiresAt` on.
 */
export function lockExpiredAt(
  expiresAt: number | undefined,
  now: number,
): boolean {
  return expiresAt !== undefined && now >= expiresAt;
}
