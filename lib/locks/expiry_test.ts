import assert from "node:assert/strict";
import {
  DEFAULT_LOCK_EXPIRY_SKEW_MS,
  lockExpiredAt,
  lockExpiresAt,
  lockHoldsAt,
} from "./expiry.ts";

const T = Date.parse("2026-12-01T18:00:00Z");

Deno.test("lockExpiresAt() reads spec.expiresAt as ms; none, or an unreadable one, never expires", () => {
  assert.equal(lockExpiresAt({}), undefined);
  assert.equal(lockExpiresAt({ expiresAt: "2026-12-01T18:00:00Z" }), T);
  assert.equal(lockExpiresAt({ expiresAt: "2026-12-01T19:00:00+01:00" }), T);
  assert.equal(lockExpiresAt({ expiresAt: "not a time" }), undefined);
});

Deno.test("lockHoldsAt() holds until expiresAt plus the allowance, never less", () => {
  const skewMs = DEFAULT_LOCK_EXPIRY_SKEW_MS;
  assert.equal(lockHoldsAt(undefined, { now: T * 2, skewMs }), true);
  assert.equal(lockHoldsAt(T, { now: T - 1, skewMs }), true);
  assert.equal(lockHoldsAt(T, { now: T, skewMs }), true);
  assert.equal(lockHoldsAt(T, { now: T + skewMs - 1, skewMs }), true);
  assert.equal(lockHoldsAt(T, { now: T + skewMs, skewMs }), false);
  assert.equal(lockHoldsAt(T, { now: T, skewMs: 0 }), false);
  // A negative allowance would let go early: read as none.
  assert.equal(lockHoldsAt(T, { now: T - 1, skewMs: -60_000 }), true);
});

Deno.test("lockExpiredAt() reports Expired from expiresAt on, by the controller's clock", () => {
  assert.equal(lockExpiredAt(undefined, T), false);
  assert.equal(lockExpiredAt(T, T - 1), false);
  assert.equal(lockExpiredAt(T, T), true);
  assert.equal(lockExpiredAt(T, T + 1), true);
});
