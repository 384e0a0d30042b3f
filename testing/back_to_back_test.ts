import assert from "node:assert/strict";
import { about, parseIndexMetrics } from "./back_to_back.ts";
import { KcpRequestError } from "./kcp_server.ts";

Deno.test("parseIndexMetrics sums the index's answers by outcome and feeds by state", () => {
  const text = [
    "# HELP dependency_webhook_index_answers_total How reviews used the index",
    'dependency_webhook_index_answers_total{outcome="confirmed"} 7',
    'dependency_webhook_index_answers_total{outcome="not_synced"} 3',
    'dependency_webhook_index_feeds{index="a",state="synced"} 2',
    'dependency_webhook_index_feeds{index="b",state="synced"} 1',
    'dependency_webhook_index_feeds{index="b",state="failed"} 1',
    "dependency_webhook_watches_failing 0",
  ].join("\n");
  const { answers, feeds, lines } = parseIndexMetrics(text);
  assert.deepEqual(answers, { confirmed: 7, not_synced: 3 });
  assert.deepEqual(feeds, { synced: 3, failed: 1 });
  assert.equal(lines.length, 5);
});

Deno.test("about tells kcp's answer about an object from one about its API", () => {
  const gone = new KcpRequestError("404", 404, {
    kind: "Status",
    reason: "NotFound",
    details: { name: "vpc-1", group: "network.example.com", kind: "vpcs" },
  });
  const unserved = new KcpRequestError("404", 404, {
    kind: "Status",
    reason: "NotFound",
    message: "the server could not find the requested resource",
    details: {},
  });
  assert.equal(about(gone, 404, "vpc-1"), true);
  assert.equal(about(gone, 404, "vpc-2"), false);
  assert.equal(about(gone, 409, "vpc-1"), false);
  assert.equal(about(unserved, 404, "vpc-1"), false);
  assert.equal(about(new TypeError("fetch failed"), 404, "vpc-1"), false);
});
