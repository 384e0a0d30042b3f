import assert from "node:assert/strict";
import { createLogger } from "../runtime/mod.ts";
import { PlanMemo } from "./plan_memo.ts";
import { READ_CACHE_SPECS, readCache } from "./read_caches.ts";
import { accessNeeded } from "./webhook_access.ts";

const LOG = createLogger({ level: "error" });

/** Lets promise callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** A read that answers only when its signal aborts (by rejecting), counting the reads running. */
function hanging(): {
  read: (ref: unknown, signal: AbortSignal) => Promise<boolean>;
  running: () => number;
} {
  let running = 0;
  return {
    running: () => running,
    read: (_ref, signal) =>
      new Promise((_resolve, reject) => {
        running++;
        signal.addEventListener("abort", () => {
          running--;
          reject(signal.reason);
        }, { once: true });
      }),
  };
}

/** A rule naming `count` dependency types, so that it needs as many reads and more. */
function ruleNaming(count: number) {
  return {
    spec: {
      dependent: { group: "compute.example.com", resource: "virtualmachines" },
      dependencies: Array.from({ length: count }, (_, i) => ({
        group: "network.example.com",
        resource: `type${i}`,
      })),
    },
  };
}

Deno.test("readCache() builds no cache for a kind with nothing to read with", () => {
  const options = { read: undefined, log: LOG, memo: new PlanMemo() };
  const onChange = () => {};
  assert.equal(readCache("exports", { ...options, onChange }), undefined);
  assert.equal(readCache("lockTargets", { ...options, onChange }), undefined);
  assert.equal(readCache("access", { ...options, onChange }), undefined);
});

Deno.test("readCache() runs at most its row's reads at once, tells each read's turn, and keys the plan's refs through its memo", async () => {
  const memo = new PlanMemo();
  const { read, running } = hanging();
  const turns: string[] = [];
  const cache = readCache("access", {
    read,
    onStart: (ref) => turns.push(ref.resource),
    log: LOG,
    memo,
    onChange: () => {},
  });
  assert.ok(cache !== undefined);
  const refs = accessNeeded("c1", ruleNaming(30), { memo });
  cache.want(refs);
  await settle();
  assert.equal(READ_CACHE_SPECS.access.atOnce, 16);
  assert.equal(running(), 16);
  assert.equal(turns.length, 16);
  assert.ok(refs.every((ref) => memo.accessKeys.has(ref)), "keys kept");
  await cache.stop();
  assert.equal(running(), 0);
  assert.equal(turns.length, 16, "the waiting reads never ran");
});

Deno.test("READ_CACHE_SPECS reads again soon only what is expected to change soon", () => {
  const { exports, lockTargets, access } = READ_CACHE_SPECS;
  assert.equal(exports.recheck({ found: false }), true);
  assert.equal(exports.recheck({ found: true, types: [] }), false);
  assert.equal(lockTargets.recheck({ served: false }), true);
  assert.equal(
    lockTargets.recheck({ served: true, namespaced: true }),
    false,
  );
  assert.equal(access.recheck(false), true);
  assert.equal(access.recheck(true), false);
  assert.deepEqual(
    [exports.atOnce, lockTargets.atOnce, access.atOnce],
    [8, 8, 16],
  );
});
