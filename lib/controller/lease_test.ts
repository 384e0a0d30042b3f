import assert from "node:assert/strict";
import { KubeApiError } from "../kcp/mod.ts";
import { asLease, microTime, sameRecord } from "./lease.ts";

Deno.test("microTime writes microseconds", () => {
  assert.equal(
    microTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 123))),
    "2026-01-02T03:04:05.123000Z",
  );
});

Deno.test("sameRecord() compares the resourceVersion, holder and renew time only", () => {
  const lease = {
    metadata: { name: "dc", resourceVersion: "7" },
    spec: { holderIdentity: "a", renewTime: "t1", leaseDurationSeconds: 15 },
  };
  assert.equal(
    sameRecord(lease, {
      ...lease,
      spec: { ...lease.spec, leaseDurationSeconds: 30 },
    }),
    true,
  );
  assert.equal(
    sameRecord(lease, { ...lease, spec: { ...lease.spec, renewTime: "t2" } }),
    false,
  );
  assert.equal(
    sameRecord(lease, { ...lease, metadata: { resourceVersion: "8" } }),
    false,
  );
});

Deno.test("asLease() refuses an answer that is not an object", () => {
  const lease = { metadata: { name: "dc" } };
  assert.equal(asLease(lease, "GET", "https://kcp/lease"), lease);
  assert.throws(
    () => asLease("nope", "GET", "https://kcp/lease"),
    (error: unknown) =>
      error instanceof KubeApiError &&
      error.message === "GET https://kcp/lease: the answer is not a Lease",
  );
});
