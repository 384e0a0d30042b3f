import assert from "node:assert/strict";
import { BindingCache } from "./binding_cache.ts";

function counting(answer: (cluster: string) => Promise<string>) {
  const reads: string[] = [];
  let now = 0;
  const cache = new BindingCache<string>({
    ttlMs: 5_000,
    maxEntries: 2,
    now: () => now,
    read: (cluster) => {
      reads.push(cluster);
      return answer(cluster);
    },
  });
  return { cache, reads, advance: (ms: number) => now += ms };
}

const SIGNAL = new AbortController().signal;

Deno.test("BindingCache reads a cluster once within its time to live, and again after", async () => {
  const { cache, reads, advance } = counting((c) => Promise.resolve(`b-${c}`));
  assert.equal(await cache.get("c1", SIGNAL), "b-c1");
  assert.equal(await cache.get("c1", SIGNAL), "b-c1");
  assert.equal(await cache.get("c2", SIGNAL), "b-c2");
  assert.deepEqual(reads, ["c1", "c2"]);
  advance(5_000);
  await cache.get("c1", SIGNAL);
  assert.deepEqual(reads, ["c1", "c2", "c1"]);
});

Deno.test("BindingCache shares a read in flight and keeps no failure", async () => {
  let fail = true;
  const gate = Promise.withResolvers<void>();
  const { cache, reads } = counting(async (c) => {
    await gate.promise;
    if (fail) throw new Error("kcp away");
    return `b-${c}`;
  });
  const both = Promise.allSettled([
    cache.get("c1", SIGNAL),
    cache.get("c1", SIGNAL),
  ]);
  gate.resolve();
  const settled = await both;
  assert.ok(settled.every((s) => s.status === "rejected"));
  assert.deepEqual(reads, ["c1"]);
  fail = false;
  assert.equal(await cache.get("c1", SIGNAL), "b-c1");
  assert.deepEqual(reads, ["c1", "c1"]);
});

Deno.test("BindingCache keeps at most maxEntries clusters, dropping the oldest", async () => {
  const { cache, reads } = counting((c) => Promise.resolve(c));
  for (const c of ["a", "b", "c"]) await cache.get(c, SIGNAL);
  assert.equal(cache.size, 2);
  await cache.get("a", SIGNAL);
  assert.deepEqual(reads, ["a", "b", "c", "a"]);
});

Deno.test("BindingCache: a caller's abort ends its wait, not the shared read", async () => {
  const gate = Promise.withResolvers<string>();
  const { cache, reads } = counting(() => gate.promise);
  const caller = new AbortController();
  const first = cache.get("c1", caller.signal);
  const second = cache.get("c1", SIGNAL);
  caller.abort(new Error("review deadline"));
  await assert.rejects(first, /review deadline/);
  gate.resolve("b");
  assert.equal(await second, "b");
  assert.deepEqual(reads, ["c1"]);
});

Deno.test("BindingCache with a time to live of 0 reads every time", async () => {
  const reads: string[] = [];
  const cache = new BindingCache<string>({
    ttlMs: 0,
    read: (c) => {
      reads.push(c);
      return Promise.resolve(c);
    },
  });
  await cache.get("c1", SIGNAL);
  await cache.get("c1", SIGNAL);
  assert.deepEqual(reads, ["c1", "c1"]);
  assert.equal(cache.size, 0);
});

Deno.test("BindingCache.refresh() reads again whatever is held, and keeps the new answer", async () => {
  let answer = "old";
  const { cache, reads } = counting(() => Promise.resolve(answer));
  assert.equal(await cache.get("c1", SIGNAL), "old");
  answer = "new";
  assert.equal(await cache.get("c1", SIGNAL), "old");
  assert.equal(await cache.refresh("c1", SIGNAL), "new");
  assert.equal(await cache.get("c1", SIGNAL), "new");
  assert.deepEqual(reads, ["c1", "c1"]);
});
