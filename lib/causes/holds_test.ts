import assert from "node:assert/strict";
import { parseHoldsReport } from "./holds.ts";

const HOLD = {
  cluster: "2x8ab",
  group: "network.example.com",
  resource: "vpcs",
  namespace: "default",
  name: "vpc-a",
  outcome: "denied_referenced",
  causes: [
    { type: "Lock", lock: { namespace: "default", name: "prod" }, reason: "p" },
    { type: "Lock", lock: { namespace: "default" } },
  ],
  firstDenied: "2026-11-26T10:00:00.000Z",
  lastDenied: "2026-11-26T10:05:00.000Z",
  count: 4,
};

Deno.test("parseHoldsReport() keeps valid holds and drops causes that do not parse", () => {
  const report = parseHoldsReport({
    now: "2026-11-26T10:06:00.000Z",
    capacity: 1000,
    dropped: 0,
    holds: [HOLD],
  });
  assert.equal(report.holds.length, 1);
  assert.deepEqual(report.holds[0]!.causes, [
    { type: "Lock", lock: { namespace: "default", name: "prod" }, reason: "p" },
  ]);
});

Deno.test("parseHoldsReport() refuses a body that is not a report, naming where", () => {
  assert.throws(() => parseHoldsReport("x"), /not a holds report/);
  assert.throws(
    () =>
      parseHoldsReport({
        now: "2026-11-26T10:06:00.000Z",
        capacity: 1,
        dropped: 0,
        holds: [{ ...HOLD, count: 0 }],
      }),
    /not a holds report: holds\.0\.count/,
  );
});
