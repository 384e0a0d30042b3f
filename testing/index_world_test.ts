import assert from "node:assert/strict";
import { anyFeedSynced, feedSynced } from "./index_world.ts";

const METRICS = [
  "# HELP dependency_webhook_index_feeds The index's feeds by state",
  'dependency_webhook_index_feeds{index="vms:abc",state="synced"} 1',
  'dependency_webhook_index_feeds{index="vms:abc",state="failed"} 0',
  'dependency_webhook_index_feeds{index="vms:def",state="synced"} 0',
  'dependency_webhook_index_feeds{index="vms:def",state="syncing"} 1',
].join("\n");

Deno.test("feedSynced reads the synced feed of the index named, and no other", () => {
  assert.equal(feedSynced(METRICS, "vms:abc"), true);
  assert.equal(feedSynced(METRICS, "vms:def"), false);
  assert.equal(feedSynced(METRICS, "vms:ghi"), false);
});

Deno.test("anyFeedSynced says whether some index has a synced feed", () => {
  assert.equal(anyFeedSynced(METRICS), true);
  assert.equal(
    anyFeedSynced(METRICS.replace('"synced"} 1', '"synced"} 0')),
    false,
  );
  assert.equal(anyFeedSynced("dependency_webhook_watches_failing 0"), false);
});
