import assert from "node:assert/strict";
import {
  boundedCauses,
  HoldTable,
  MAX_HOLD_CAUSE_BYTES,
} from "./hold_table.ts";
import {
  allowed,
  type Blocker,
  locked,
  referenced,
  unavailable,
  type Verdict,
} from "./verdicts.ts";
import type { ReviewTarget } from "./review_target.ts";
import type { Cause } from "../causes/mod.ts";
import {
  deleteRequest,
  deleteReview,
  vmBlocker,
  VPC_TYPE,
} from "../../testing/fakes.ts";

const TARGET: ReviewTarget = {
  cluster: "consumer1",
  namespace: "default",
  name: "vpc-a",
  uid: "u",
  resource: {
    group: VPC_TYPE.group,
    version: VPC_TYPE.version,
    resource: VPC_TYPE.resource,
  },
};

/** A denial the live object confirmed, naming `names` as dependents. */
function refused(...names: string[]): Verdict {
  const named = names.map((n) => vmBlocker(n));
  return {
    ...referenced("u", { target: TARGET, named, total: named.length }),
    confirmed: true,
  };
}

/** A clock tests move by hand. */
function clock(start = Date.parse("2026-11-26T10:00:00Z")) {
  let now = start;
  return { now: () => now, tick: (ms: number) => void (now += ms) };
}

Deno.test("HoldTable records a denied delete, counts the denials and keeps the first time", () => {
  const time = clock();
  const table = new HoldTable({ capacity: 10, now: time.now });
  table.observe(deleteRequest(), refused("vm-1"));
  time.tick(30_000);
  table.observe(deleteRequest(), refused("vm-1", "vm-2"));
  const report = table.report();
  assert.equal(report.holds.length, 1);
  assert.deepEqual(report.holds[0], {
    cluster: "consumer1",
    group: "network.example.com",
    resource: "vpcs",
    namespace: "default",
    name: "vpc-a",
    outcome: "denied_referenced",
    causes: refused("vm-1", "vm-2").causes!,
    count: 2,
    firstDenied: "2026-11-26T10:00:00.000Z",
    lastDenied: "2026-11-26T10:00:30.000Z",
  });
  assert.equal(table.oldestAgeSeconds(), 30);
  assert.equal(report.now, "2026-11-26T10:00:30.000Z");
});

Deno.test("HoldTable forgets an object once a delete of it is allowed, also a dry run's", () => {
  const table = new HoldTable({ capacity: 10 });
  table.observe(deleteRequest(), refused("vm-1"));
  table.observe(deleteRequest({ dryRun: true }), allowed("u"));
  assert.equal(table.size, 0);
  table.observe(deleteRequest(), refused("vm-1"));
  table.observe(deleteRequest(), allowed("u", "allowed_skip"));
  assert.equal(table.size, 0);
  assert.equal(table.oldestAgeSeconds(), 0);
});

Deno.test("HoldTable leaves out dry runs, updates, and denials that are not holds", () => {
  const table = new HoldTable({ capacity: 10 });
  table.observe(deleteRequest({ dryRun: true }), refused("vm-1"));
  table.observe(
    deleteRequest({ operation: "UPDATE" }),
    locked("u", {
      target: TARGET,
      verb: "update",
      holds: [{ namespace: "default", name: "prod", reason: "r" }],
    }),
  );
  table.observe(
    deleteRequest(),
    unavailable("u", { shown: "vpcs/vpc-a", what: "x", until: "y" }),
  );
  assert.equal(table.size, 0);
  // A review without a usable workspace is not recorded either.
  const forged = deleteRequest();
  forged.oldObject = { metadata: { name: "vpc-a" } };
  table.observe(forged, refused("vm-1"));
  assert.equal(table.size, 0);
});

Deno.test("HoldTable keeps at most capacity entries, dropping the one denied longest ago", () => {
  const time = clock();
  const table = new HoldTable({ capacity: 3, now: time.now });
  for (const name of ["a", "b", "c"]) {
    table.observe(vpc(name), refused("vm-1"));
    time.tick(1_000);
  }
  // Denied again, a becomes the newest; d then pushes b out (a, held
  // longest, stays in any case).
  table.observe(vpc("a"), refused("vm-1"));
  table.observe(vpc("d"), refused("vm-1"));
  const report = table.report();
  assert.deepEqual(report.holds.map((h) => h.name), ["a", "c", "d"]);
  assert.equal(report.dropped, 1);
  assert.equal(report.capacity, 3);
  for (let i = 0; i < 1_000; i++) table.observe(vpc(`x-${i}`), refused("vm"));
  assert.equal(table.size, 3);
  assert.equal(table.report().dropped, 1_001);
});

/** The DELETE of VPC `name` in namespace `default` of `cluster`. */
function vpc(name: string, cluster = "consumer1") {
  return deleteReview(VPC_TYPE, name, { namespace: "default", cluster });
}

Deno.test("HoldTable: a flood of denials from one workspace evicts only its own entries", () => {
  const time = clock();
  const table = new HoldTable({ capacity: 100, now: time.now });
  // The quiet tenant's object, held longest: the long-hold alert's entry.
  table.observe(vpc("stuck", "quiet"), refused("vm-1"));
  time.tick(1_000);
  for (let i = 0; i < 5; i++) {
    table.observe(vpc(`q-${i}`, "quiet"), refused("vm-1"));
  }
  time.tick(1_000);
  for (let i = 0; i < 1_500; i++) {
    table.observe(vpc(`f-${i}`, "flood"), refused("vm-1"));
    time.tick(10);
  }
  const report = table.report();
  assert.equal(report.holds.length, 100);
  assert.equal(report.dropped, 1_406);
  const quiet = report.holds.filter((h) => h.cluster === "quiet");
  assert.deepEqual(quiet.map((h) => h.name), [
    "stuck",
    "q-0",
    "q-1",
    "q-2",
    "q-3",
    "q-4",
  ]);
  // The flood keeps its most recent denials.
  const flood = report.holds.filter((h) => h.cluster === "flood");
  assert.equal(flood.length, 94);
  assert.equal(flood.at(-1)?.name, "f-1499");
  assert.equal(flood[0]?.name, "f-1406");
  // Longest held first, and the oldest-hold gauge still sees it.
  assert.equal(report.holds[0]?.name, "stuck");
  assert.equal(table.oldestAgeSeconds(), 2 + 15);
});

Deno.test("HoldTable: when full, the workspace with the most entries gives one up", () => {
  const time = clock();
  const table = new HoldTable({ capacity: 4, now: time.now });
  table.observe(vpc("a-1", "a"), refused("vm-1"));
  time.tick(1_000);
  table.observe(vpc("b-1", "b"), refused("vm-1"));
  time.tick(1_000);
  table.observe(vpc("b-2", "b"), refused("vm-1"));
  time.tick(1_000);
  table.observe(vpc("b-3", "b"), refused("vm-1"));
  time.tick(1_000);
  // Full: c's first entry takes b's oldest, though a's is older.
  table.observe(vpc("c-1", "c"), refused("vm-1"));
  const names = () => table.report().holds.map((h) => h.name).sort();
  assert.deepEqual(names(), ["a-1", "b-2", "b-3", "c-1"]);
  time.tick(1_000);
  // b (two entries) is the heaviest again: it gives up b-2.
  table.observe(vpc("d-1", "d"), refused("vm-1"));
  assert.deepEqual(names(), ["a-1", "b-3", "c-1", "d-1"]);
  time.tick(1_000);
  // All alike: the one denied longest ago goes, but never the one held
  // longest (a-1): b-3 goes.
  table.observe(vpc("e-1", "e"), refused("vm-1"));
  assert.deepEqual(names(), ["a-1", "c-1", "d-1", "e-1"]);
  assert.equal(table.report().dropped, 3);
});

Deno.test("HoldTable records no denial the live object did not confirm", () => {
  const table = new HoldTable({ capacity: 10 });
  // A forged review of a locked type the webhook may not read: denied,
  // but nothing confirmed the object exists as the review describes it.
  const { confirmed: _, ...unconfirmed } = refused("vm-1");
  table.observe(deleteRequest(), unconfirmed);
  table.observe(
    deleteRequest(),
    locked("u", {
      target: TARGET,
      verb: "delete",
      holds: [{ namespace: "default", name: "prod", reason: "r" }],
    }),
  );
  assert.equal(table.size, 0);
  assert.equal(table.oldestAgeSeconds(), 0);
  table.observe(deleteRequest(), refused("vm-1"));
  assert.equal(table.size, 1);
});

Deno.test("HoldTable forgets an entry not denied again within its TTL", () => {
  const time = clock();
  const table = new HoldTable({ capacity: 10, ttlMs: 60_000, now: time.now });
  table.observe(deleteRequest(), refused("vm-1"));
  time.tick(60_000);
  assert.equal(table.report().holds.length, 1);
  time.tick(1);
  assert.equal(table.report().holds.length, 0);
  assert.equal(table.oldestAgeSeconds(), 0);
});

Deno.test("boundedCauses() keeps what fits in the byte bound and counts the rest by kind", () => {
  const long = (n: number): Blocker => ({
    ...vmBlocker(`vm-${n}-${"x".repeat(200)}`),
    paths: [`.spec.${"y".repeat(300)}`],
  });
  const named = Array.from({ length: 40 }, (_, i) => long(i));
  const causes = referenced("u", { target: TARGET, named, total: 45 }).causes!;
  const kept = boundedCauses(causes);
  const more = kept.filter((c) => c.type === "More");
  assert.equal(more.length, 1);
  const references = kept.filter((c) => c.type === "Reference").length;
  assert.ok(references > 0 && references < 40);
  assert.deepEqual(more[0], {
    type: "More",
    of: "Reference",
    count: 45 - references,
  });
  const bytes = kept.filter((c) => c.type !== "More")
    .reduce((n, c) => n + JSON.stringify(c).length, 0);
  assert.ok(bytes <= MAX_HOLD_CAUSE_BYTES, `${bytes}`);
  const small: Cause[] = [{ type: "More", of: "Owner", count: 2 }];
  assert.deepEqual(boundedCauses(small), small);
});

Deno.test("new HoldTable() refuses a capacity that is not a positive integer", () => {
  for (const capacity of [0, -1, 1.5, NaN]) {
    assert.throws(() => new HoldTable({ capacity }), RangeError);
  }
});
