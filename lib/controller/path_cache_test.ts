import assert from "node:assert/strict";
import { createLogger } from "../runtime/mod.ts";
import { delay, waitUntil } from "../../testing/fakes.ts";
import { PathCache, type WantedPaths } from "./path_cache.ts";
import {
  WorkspaceResolutionError,
  type WorkspaceResolver,
} from "./workspace_resolver.ts";

/** A resolver whose answers the test sets, counting what it was asked. */
class ScriptedResolver
  implements Pick<WorkspaceResolver, "resolve" | "invalidate"> {
  readonly answers = new Map<string, string | WorkspaceResolutionError>();
  readonly asked: string[] = [];
  readonly invalidated: string[] = [];
  /** While set, answers wait for it. */
  gate: Promise<void> | undefined;

  async resolve(path: string): Promise<string> {
    this.asked.push(path);
    await this.gate;
    const answer = this.answers.get(path) ??
      new WorkspaceResolutionError(`workspace ${path} not found`, {
        path,
        reason: "NotFound",
      });
    if (answer instanceof Error) throw answer;
    return answer;
  }

  invalidate(path: string): void {
    this.invalidated.push(path);
  }

  count(path: string): number {
    return this.asked.filter((p) => p === path).length;
  }
}

function unavailable(path: string): WorkspaceResolutionError {
  return new WorkspaceResolutionError(`cannot resolve workspace ${path}`, {
    path,
    reason: "Unavailable",
  });
}

async function withCache(
  fn: (
    cache: PathCache,
    resolver: ScriptedResolver,
    changes: () => number,
  ) => Promise<void>,
  backoff = { initialMs: 20, maxMs: 40 },
): Promise<void> {
  const resolver = new ScriptedResolver();
  let changes = 0;
  const cache = new PathCache({
    resolver,
    log: createLogger({ write: () => {} }),
    onChange: () => changes++,
    backoff,
  });
  try {
    await fn(cache, resolver, () => changes);
  } finally {
    await cache.stop();
  }
}

const want = (
  paths: string[],
  more: Partial<WantedPaths> = {},
): WantedPaths => ({ paths, stale: [], bound: [], ...more });

Deno.test("PathCache resolves wanted paths in the background, reports each new answer, and drops paths no longer wanted", async () => {
  await withCache(async (cache, resolver, changes) => {
    resolver.answers.set("root:a", "cluster-a");
    resolver.answers.set("root:b", "cluster-b");
    cache.want(want(["root:a", "root:b"]));
    await waitUntil("both answers", () => cache.resolutions().size === 2);
    assert.deepEqual(cache.resolutions().get("root:a"), {
      cluster: "cluster-a",
    });
    assert.equal(changes(), 2);
    // Asked again with the same wants: known answers are not asked again.
    cache.want(want(["root:a", "root:b"]));
    assert.equal(resolver.count("root:a"), 1);
    cache.want(want(["root:b"]));
    assert.deepEqual([...cache.resolutions().keys()], ["root:b"]);
  });
});

Deno.test("PathCache retries a failing path after its backoff on its own, and reports the answer once it resolves", async () => {
  await withCache(async (cache, resolver, changes) => {
    resolver.answers.set("root:a", unavailable("root:a"));
    cache.want(want(["root:a"]));
    await waitUntil("the failure", () => cache.resolutions().has("root:a"));
    const failed = cache.resolutions().get("root:a")!;
    assert.ok(!("cluster" in failed) && failed.reason === "Unavailable");
    assert.equal(failed.definitive, false);
    // No further want(): the cache's own timer retries.
    await waitUntil("a retry", () => resolver.count("root:a") >= 2);
    resolver.answers.set("root:a", "cluster-a");
    await waitUntil(
      "the answer",
      () => "cluster" in (cache.resolutions().get("root:a") ?? {}),
    );
    assert.ok(changes() >= 2);
  });
});

Deno.test("PathCache.refresh() asks again for resolved paths and keeps the old answer meanwhile", async () => {
  await withCache(async (cache, resolver) => {
    resolver.answers.set("root:a", "old");
    cache.want(want(["root:a"]));
    await waitUntil("the answer", () => cache.resolutions().has("root:a"));
    const { promise: gate, resolve: open } = Promise.withResolvers<void>();
    resolver.gate = gate;
    resolver.answers.set("root:a", "new");
    cache.refresh();
    await waitUntil("the second request", () => resolver.count("root:a") === 2);
    assert.deepEqual(cache.resolutions().get("root:a"), { cluster: "old" });
    open();
    await waitUntil(
      "the new answer",
      () =>
        JSON.stringify(cache.resolutions().get("root:a")) ===
          JSON.stringify({ cluster: "new" }),
    );
  });
});

Deno.test("PathCache asks again for a stale path after dropping it from the resolver, with backoff while the answer stays the same", async () => {
  await withCache(async (cache, resolver) => {
    resolver.answers.set("root:a", "gone");
    cache.want(want(["root:a"]));
    await waitUntil("the answer", () => cache.resolutions().has("root:a"));
    cache.want(want(["root:a"], { stale: ["root:a"] }));
    await waitUntil("a stale re-read", () => resolver.count("root:a") === 2);
    assert.deepEqual(resolver.invalidated, ["root:a"]);
    // Same answer: the next stale want within the backoff asks nothing.
    await waitUntil(
      "the re-read to settle",
      () => resolver.invalidated.length === 1 && resolver.count("root:a") === 2,
    );
    cache.want(want(["root:a"], { stale: ["root:a"] }));
    assert.equal(resolver.count("root:a"), 2);
    // A recreated workspace answers with its new cluster.
    resolver.answers.set("root:a", "recreated");
    await waitUntil(
      "the recreated cluster",
      () =>
        JSON.stringify(cache.resolutions().get("root:a")) ===
          JSON.stringify({ cluster: "recreated" }),
    );
  }, { initialMs: 50, maxMs: 100 });
});

Deno.test("PathCache retries failing paths at once when the bound clusters change", async () => {
  await withCache(async (cache, resolver) => {
    resolver.answers.set("root:a", unavailable("root:a"));
    cache.want(want(["root:a"], { bound: ["x"] }));
    await waitUntil("the failure", () => cache.resolutions().has("root:a"));
    await delay(10); // lets the failed attempt end
    assert.equal(resolver.count("root:a"), 1);
    // Same bindings within the (long) backoff: not asked again.
    cache.want(want(["root:a"], { bound: ["x"] }));
    assert.equal(resolver.count("root:a"), 1);
    cache.want(want(["root:a"], { bound: ["x", "y"] }));
    assert.equal(resolver.count("root:a"), 2);
  }, { initialMs: 60_000, maxMs: 60_000 });
});

Deno.test("PathCache reports a missing workspace as definitive, once, and does not ask again for it before its backoff", async () => {
  await withCache(async (cache, resolver, changes) => {
    cache.want(want(["root:a"]));
    await waitUntil("the failure", () => cache.resolutions().has("root:a"));
    assert.deepEqual(cache.resolutions().get("root:a"), {
      reason: "NotFound",
      message: "workspace root:a not found",
      definitive: true,
    });
    // The passes that follow, within the (long) backoff: no resolving loop.
    for (let pass = 0; pass < 3; pass++) {
      cache.want(want(["root:a"]));
      assert.equal(resolver.count("root:a"), 1);
    }
    assert.equal(changes(), 1);
  }, { initialMs: 60_000, maxMs: 60_000 });
});
