/**
 * The `coordination.k8s.io/v1` Lease that leader election holds: its shape,
 * the micro time its times are written in, and reading one from an answer.
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";
import { KubeApiError, type KubeObject } from "../kcp/mod.ts";

/** The spec of a `coordination.k8s.io/v1` Lease. */
export interface LeaseSpec {
  /** The holder's identity; empty or absent when the lease is free. */
  holderIdentity?: string;
  /** How long others must wait, after seeing the last change, before taking over. */
  leaseDurationSeconds?: number;
  /** When the current holder acquired the lease (RFC 3339, microseconds). */
  acquireTime?: string;
  /** When the holder last renewed the lease (RFC 3339, microseconds). */
  renewTime?: string;
  /** How many times the holder changed. */
  leaseTransitions?: number;
  /** Other fields, kept as they are. */
  [key: string]: unknown;
}

/** A `coordination.k8s.io/v1` Lease. */
export type Lease = KubeObject & { spec?: LeaseSpec };

/**
 * A time as Kubernetes' RFC 3339 micro time, e.g.
 * `2026-01-02T03:04:05.123000Z`.
 */
export function microTime(date: Date): string {
  // toISOString() always has milliseconds: 2026-01-02T03:04:05.123Z
  return `${date.toISOString().slice(0, -1)}000Z`;
}

/** Whether two versions of the lease are the same record for expiry. */
export function sameRecord(a: Lease, b: Lease): boolean {
  return a.metadata?.resourceVersion === b.metadata?.resourceVersion &&
    a.spec?.holderIdentity === b.spec?.holderIdentity &&
    a.spec?.renewTime === b.spec?.renewTime;
}

/**
 * The answer of a Lease read or write as a Lease.
 *
 * @throws {KubeApiError} If the answer is not an object.
 */
export function asLease(value: unknown, method: string, url: string): Lease {
  if (!isRecord(value)) {
    throw new KubeApiError(`${method} ${url}: the answer is not a Lease`, {
      status: 0,
      reason: "InvalidResponse",
    });
  }
  return value as Lease;
}
