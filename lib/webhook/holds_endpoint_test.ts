import assert from "node:assert/strict";
import { HoldTable } from "./hold_table.ts";
import { holdsApp, registerHoldMetrics } from "./holds_endpoint.ts";
import { referenced } from "./verdicts.ts";
import { MetricsRegistry } from "../runtime/mod.ts";
import { parseHoldsReport } from "../causes/mod.ts";
import { deleteRequest, vmBlocker, VPC_TYPE } from "../../testing/fakes.ts";

Deno.test("/holds.json answers the table's report, and the gauges follow it", async () => {
  let now = Date.parse("2026-11-26T10:00:00Z");
  const table = new HoldTable({ capacity: 5, now: () => now });
  const registry = new MetricsRegistry();
  const collect = registerHoldMetrics(registry, table);
  const app = holdsApp(table);
  table.observe(deleteRequest(), {
    confirmed: true,
    ...referenced("u", {
      target: {
        cluster: "consumer1",
        namespace: "default",
        name: "vpc-a",
        uid: "u",
        resource: VPC_TYPE,
      },
      named: [vmBlocker("vm-1")],
      total: 1,
    }),
  });
  now += 90_000;
  const res = await app.request("/holds.json");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), "no-store");
  const report = parseHoldsReport(await res.json());
  assert.equal(report.holds.length, 1);
  assert.equal(report.holds[0]!.causes[0]?.type, "Reference");
  collect();
  const text = await registry.render();
  assert.match(text, /^dependency_webhook_holds 1$/m);
  assert.match(text, /^dependency_webhook_oldest_hold_seconds 90$/m);
});
