import assert from "node:assert/strict";
import { SlowLists } from "./slow_lists.ts";

const VMS = "compute.example.com/virtualmachines";

Deno.test("a slow list is remembered by type, workspace and namespace until a quick one clears it", () => {
  const lists = new SlowLists();
  const scope = { type: VMS, cluster: "c1", namespace: "bench" };
  assert.equal(lists.slow(scope), false);
  lists.record(scope, true);
  assert.equal(lists.slow(scope), true);
  // Another namespace, every namespace, another workspace, another type.
  assert.equal(lists.slow({ ...scope, namespace: "other" }), false);
  assert.equal(lists.slow({ type: VMS, cluster: "c1" }), false);
  assert.equal(lists.slow({ ...scope, cluster: "c2" }), false);
  assert.equal(lists.slow({ ...scope, type: "other/things" }), false);
  lists.record(scope, false);
  assert.equal(lists.slow(scope), false);
  assert.equal(lists.size, 0);
});

Deno.test("a slow mark is forgotten after forgetAfterMs, so a workspace that shrank is listed again", () => {
  let now = 0;
  const lists = new SlowLists({ forgetAfterMs: 1_000, now: () => now });
  const scope = { type: VMS, cluster: "c1" };
  lists.record(scope, true);
  now = 1_000;
  assert.equal(lists.slow(scope), true);
  now = 1_001;
  assert.equal(lists.slow(scope), false);
  assert.equal(lists.size, 0);
});

Deno.test("at most maxScopes scopes are remembered: the oldest mark goes first", () => {
  let now = 0;
  const lists = new SlowLists({ maxScopes: 2, now: () => now });
  const a = { type: VMS, cluster: "a" };
  const b = { type: VMS, cluster: "b" };
  const c = { type: VMS, cluster: "c" };
  lists.record(a, true);
  now = 1;
  lists.record(b, true);
  now = 2;
  // Marked again, a is now the newest.
  lists.record(a, true);
  lists.record(c, true);
  assert.equal(lists.size, 2);
  assert.equal(lists.slow(b), false);
  assert.equal(lists.slow(a), true);
  assert.equal(lists.slow(c), true);
});
