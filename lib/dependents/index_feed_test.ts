import assert from "node:assert/strict";
import {
  connection,
  delay,
  type EventStream,
  FakeApi,
  json,
  logCollector,
  type SeenRequest,
  status,
  streamed,
  waitUntil,
} from "../../testing/fake_api.ts";
import { KubeClient, type KubeObject } from "../kcp/mod.ts";
import { parseFieldPath } from "../rules/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import { DependentsIndex } from "./dependents_index.ts";
import type { IndexEvent } from "./kept.ts";
import {
  IndexFeed,
  type IndexFeedOptions,
  type IndexFeedState,
} from "./index_feed.ts";

const PATH = "/clusters/*/apis/g/v1/vms";
const SOURCE = "shard-1";

/** A dependent in cluster c1, namespace ns, that refers to `ref`. */
function vm(
  name: string,
  resourceVersion: string,
  ref = "vpc-a",
  extra: Record<string, unknown> = {},
): KubeObject {
  return {
    metadata: {
      name,
      namespace: "ns",
      uid: `uid-${name}`,
      resourceVersion,
      annotations: { "kcp.io/cluster": "c1" },
    },
    spec: { ref: { name: ref } },
    ...extra,
  };
}

/** `name@resourceVersion` of an object, as the recording index notes it. */
function label(object: unknown): string {
  const metadata = (object as KubeObject | undefined)?.metadata;
  return `${metadata?.name ?? ""}@${metadata?.resourceVersion ?? ""}`;
}

/** The real index, noting every call the feed makes. */
class RecordingIndex extends DependentsIndex {
  readonly calls: string[] = [];
  /** The limit, shown as the feed's overflow warning looks for it. */
  readonly maxDependents: number;

  constructor(maxDependents = 1_000) {
    super([{ fieldPath: parseFieldPath(".spec.ref.name") }], {
      maxDependents,
    });
    this.maxDependents = maxDependents;
  }

  override startResync(source: string): void {
    this.calls.push(`startResync ${source}`);
    super.startResync(source);
  }

  override upsert(source: string, object: unknown): boolean {
    this.calls.push(`upsert ${label(object)}`);
    return super.upsert(source, object);
  }

  override finishResync(source: string, rv: string): void {
    this.calls.push(`finishResync ${rv}`);
    super.finishResync(source, rv);
  }

  override apply(source: string, event: IndexEvent): boolean {
    this.calls.push(`${event.type} ${label(event.object)}`);
    return super.apply(source, event);
  }

  override unsync(source: string): void {
    this.calls.push(`unsync ${source}`);
    super.unsync(source);
  }

  /** The names of the dependents that refer to `ref` in c1/ns. */
  referring(ref: string): string[] {
    return this.referrers({ cluster: "c1", namespace: "ns", name: ref })
      .map((hit) => hit.name);
  }
}

/** Lists answered by `list(n)` (n counts from 1), watches by `watch(n)`. */
interface Script {
  list: (n: number, request: SeenRequest) => Response | Promise<Response>;
  watch?: (
    n: number,
    request: SeenRequest,
    api: FakeApi,
  ) => Response | Promise<Response>;
}

/** A running feed over a scripted fake API. */
interface Harness {
  api: FakeApi;
  feed: IndexFeed;
  index: RecordingIndex;
  states: IndexFeedState[];
  applied: () => number;
  lists: () => SeenRequest[];
  watches: () => SeenRequest[];
  logs: Record<string, unknown>[];
  /** The n-th watch stream (from 0), once it was requested. */
  stream: (n: number) => Promise<EventStream>;
}

/** Starts a feed on a scripted fake API, runs `fn`, cleans up. */
async function withFeed(
  script: Script,
  fn: (h: Harness) => Promise<void>,
  options: Partial<IndexFeedOptions> = {},
  index = new RecordingIndex(),
): Promise<void> {
  let lists = 0;
  let watches = 0;
  const api = new FakeApi((request, api) => {
    if (request.url.pathname !== PATH) return json({}, 404);
    if (request.url.searchParams.get("watch") === "true") {
      watches++;
      return script.watch
        ? script.watch(watches, request, api)
        : streamed(api.stream());
    }
    lists++;
    return script.list(lists, request);
  });
  const client = new KubeClient(connection(api.url));
  const logs = logCollector();
  const states: IndexFeedState[] = [];
  let applied = 0;
  const feed = new IndexFeed({
    client,
    url: `${api.url}${PATH}`,
    source: SOURCE,
    index,
    log: createLogger({ level: "debug", write: logs.write }),
    backoff: { initialMs: 5, maxMs: 10 },
    onState: (state) => states.push(state),
    onApplied: () => applied++,
    ...options,
  });
  try {
    feed.start();
    await fn({
      api,
      feed,
      index,
      states,
      applied: () => applied,
      lists: () => api.seen(PATH, false),
      watches: () => api.seen(PATH, true),
      logs: logs.records,
      stream: async (n) => {
        await waitUntil(`watch stream ${n}`, () => api.streams.length > n);
        return api.streams[n]!;
      },
    });
  } finally {
    await feed.stop();
    client.close();
    await api.close();
  }
}

/** A list page answer. */
function page(
  resourceVersion: string,
  items: KubeObject[],
  next?: string,
): Response {
  return json({
    kind: "VmList",
    apiVersion: "g/v1",
    metadata: next === undefined
      ? { resourceVersion }
      : { resourceVersion, continue: next },
    items,
  });
}

Deno.test("IndexFeed lists page by page into a resync, applies watch events and bookmarks, and watches again from the watermark", async () => {
  let callsAtSecondPage: string[] = [];
  let index!: RecordingIndex;
  await withFeed({
    list: (_n, request) => {
      if (request.url.searchParams.get("continue") === "p2") {
        callsAtSecondPage = [...index.calls];
        return page("10", [vm("c", "9", "vpc-b")]);
      }
      return page("10", [vm("a", "7"), vm("b", "8")], "p2");
    },
  }, async (h) => {
    index = h.index;
    const first = await h.stream(0);
    assert.equal(h.feed.state, "synced");
    assert.deepEqual(h.states, ["syncing", "synced"]);
    assert.equal(h.feed.lastError, undefined);
    assert.deepEqual(
      h.lists().map((r) => [
        r.url.searchParams.get("limit"),
        r.url.searchParams.get("continue"),
      ]),
      [["2", null], ["2", "p2"]],
    );
    // The second page was asked for once the first was in the index.
    assert.deepEqual(callsAtSecondPage, [
      `startResync ${SOURCE}`,
      "upsert a@7",
      "upsert b@8",
    ]);
    assert.equal(h.index.synced(SOURCE), true);
    assert.deepEqual(h.index.referring("vpc-a"), ["a", "b"]);
    assert.deepEqual(h.index.referring("vpc-b"), ["c"]);
    assert.equal(h.applied(), 1, "the finished list");

    const watch = h.watches()[0]!.url.searchParams;
    assert.equal(watch.get("resourceVersion"), "10");
    assert.equal(watch.get("allowWatchBookmarks"), "true");
    const timeout = Number(watch.get("timeoutSeconds"));
    assert.ok(timeout >= 300 && timeout <= 375, `timeoutSeconds ${timeout}`);

    first.event("ADDED", vm("d", "11"));
    first.event("MODIFIED", vm("a", "12", "vpc-b"));
    first.event("DELETED", vm("b", "13"));
    first.event("BOOKMARK", { metadata: { resourceVersion: "14" } });
    await waitUntil("the bookmark", () => h.applied() === 5);
    assert.deepEqual(h.index.referring("vpc-a"), ["d"]);
    assert.deepEqual(h.index.referring("vpc-b"), ["a", "c"]);
    assert.equal(h.index.watermark(SOURCE), "14");
    first.end();
    await h.stream(1);
    assert.equal(
      h.watches()[1]!.url.searchParams.get("resourceVersion"),
      "14",
      "the next watch starts at the watermark",
    );
    assert.equal(h.lists().length, 2, "a watch that ends is no relist");
    assert.deepEqual(h.index.calls, [
      `startResync ${SOURCE}`,
      "upsert a@7",
      "upsert b@8",
      "upsert c@9",
      "finishResync 10",
      "ADDED d@11",
      "MODIFIED a@12",
      "DELETED b@13",
      "BOOKMARK @14",
    ]);
    assert.deepEqual(h.states, ["syncing", "synced"]);
  }, { pageSize: 2 });
});

Deno.test("IndexFeed asks again for a page over maxPageBytes (measured as memory) with a tenth of the objects, from the same token", async () => {
  // 50 objects of about 1 KB: 50 KB of JSON, about 100 KB of memory.
  const padded = (name: string) =>
    vm(name, "1", "vpc-a", { pad: "x".repeat(1_000) });
  await withFeed({
    list: (_n, request) => {
      const limit = Number(request.url.searchParams.get("limit"));
      const token = request.url.searchParams.get("continue");
      const items = Array.from(
        { length: limit },
        (_, i) => padded(`${token ?? "p1"}-${i}`),
      );
      return page("10", items, token === null ? "p2" : undefined);
    },
  }, async (h) => {
    await h.stream(0);
    assert.deepEqual(
      h.lists().map((r) => [
        r.url.searchParams.get("limit"),
        r.url.searchParams.get("continue"),
      ]),
      [["50", null], ["5", null], ["5", "p2"]],
    );
    assert.equal(h.index.size, 10);
    assert.equal(h.feed.state, "synced");
  }, { pageSize: 50, maxPageBytes: 64 * 1024 });
});

Deno.test("IndexFeed fails when one object is over maxPageBytes, naming the page sizes tried", async () => {
  await withFeed({
    list: () =>
      page("10", [vm("big", "1", "vpc-a", { pad: "y".repeat(5_000) })]),
  }, async (h) => {
    await waitUntil("a failure", () => h.feed.state === "failed");
    assert.match(
      h.feed.lastError ?? "",
      /\(pages of 20, 2, 1 objects tried\): one object is over 8 KiB/,
    );
    assert.deepEqual(
      h.lists().slice(0, 3).map((r) => r.url.searchParams.get("limit")),
      ["20", "2", "1"],
    );
    assert.equal(h.index.synced(SOURCE), false);
  }, { pageSize: 20, maxPageBytes: 8 * 1024 });
});

Deno.test("IndexFeed lists again after an ERROR 410 event, neither failing nor unsyncing", async () => {
  await withFeed({
    list: (n) =>
      n === 1
        ? page("10", [vm("a", "1"), vm("b", "2")])
        : page("20", [vm("b", "15"), vm("c", "16")]),
  }, async (h) => {
    const first = await h.stream(0);
    first.event("ADDED", vm("d", "11"));
    await waitUntil("the event", () => h.index.referring("vpc-a").length === 3);
    first.event("ERROR", status(410, "Expired", "too old resource version"));
    await h.stream(1);
    assert.equal(h.lists().length, 2);
    assert.deepEqual(h.index.referring("vpc-a"), ["b", "c"]);
    assert.equal(h.watches()[1]!.url.searchParams.get("resourceVersion"), "20");
    assert.equal(h.feed.lastError, undefined, "410 is not an error");
    assert.deepEqual(h.states, ["syncing", "synced", "syncing", "synced"]);
    assert.ok(!h.index.calls.some((c) => c.startsWith("unsync")));
    assert.ok(
      h.logs.some((r) => r.msg === "resource version expired, listing again"),
    );
  });
});

Deno.test("IndexFeed lists again when the watch request answers 410 Gone", async () => {
  await withFeed({
    list: (n) => page(String(n * 10), [vm(n === 1 ? "a" : "z", "1")]),
    watch: (n, _request, api) =>
      n === 1
        ? json(status(410, "Gone", "too old resource version: 10"), 410)
        : streamed(api.stream()),
  }, async (h) => {
    await h.stream(0);
    assert.equal(h.lists().length, 2);
    assert.deepEqual(h.index.referring("vpc-a"), ["z"]);
    assert.equal(h.watches()[1]!.url.searchParams.get("resourceVersion"), "20");
    assert.equal(h.feed.state, "synced");
  });
});

Deno.test("IndexFeed unsyncs, fails and backs off on a failing list, and syncs once it answers", async () => {
  let failing = true;
  await withFeed({
    list: () =>
      failing
        ? json(status(500, "InternalError", "etcd is sad"), 500)
        : page("5", [vm("a", "1")]),
  }, async (h) => {
    await waitUntil("three failed lists", () => h.lists().length >= 3);
    assert.match(h.feed.lastError ?? "", /500: etcd is sad/);
    assert.equal(h.index.synced(SOURCE), false);
    assert.ok(h.states.includes("failed"));
    assert.ok(h.index.calls.includes(`unsync ${SOURCE}`));
    const warnings = h.logs.filter((r) =>
      r.msg === "dependents index feed failed, listing again"
    );
    assert.ok(warnings.length >= 2);
    for (const warning of warnings) {
      assert.equal(warning.level, "warn");
      assert.equal(warning.url, `${h.api.url}${PATH}`);
      assert.equal(warning.source, SOURCE);
      assert.ok(
        typeof warning.delayMs === "number" && warning.delayMs >= 2 &&
          warning.delayMs <= 10,
        `delayMs ${warning.delayMs}`,
      );
    }
    failing = false;
    await waitUntil("synced", () => h.feed.state === "synced");
    assert.equal(h.feed.lastError, undefined);
    assert.equal(h.index.synced(SOURCE), true);
    assert.deepEqual(h.index.referring("vpc-a"), ["a"]);
    assert.deepEqual(h.states.slice(0, 3), ["syncing", "failed", "syncing"]);
    assert.equal(h.states.at(-1), "synced");
  });
});

Deno.test("IndexFeed unsyncs and lists again, not only watches again, after a watch fails", async () => {
  await withFeed({
    list: (n) => page(String(n * 10), [vm("a", "1")]),
  }, async (h) => {
    const first = await h.stream(0);
    first.event("ERROR", status(500, "InternalError", "watch broke"));
    await h.stream(1);
    assert.equal(h.lists().length, 2, "listed again");
    assert.equal(h.watches()[1]!.url.searchParams.get("resourceVersion"), "20");
    assert.deepEqual(h.index.calls, [
      `startResync ${SOURCE}`,
      "upsert a@1",
      "finishResync 10",
      `unsync ${SOURCE}`,
      `startResync ${SOURCE}`,
      "upsert a@1",
      "finishResync 20",
    ]);
    assert.deepEqual(h.states, [
      "syncing",
      "synced",
      "failed",
      "syncing",
      "synced",
    ]);
    assert.equal(h.feed.lastError, undefined, "cleared by the list");
  });
});

Deno.test("IndexFeed fails the watch on an event over maxLineBytes, then lists again", async () => {
  await withFeed({
    list: (n) => page(String(n * 10), []),
  }, async (h) => {
    const first = await h.stream(0);
    first.event("ADDED", vm("huge", "11", "vpc-a", { pad: "z".repeat(500) }));
    await h.stream(1);
    assert.equal(h.lists().length, 2);
    assert.ok(h.states.includes("failed"));
    assert.ok(
      h.logs.some((r) =>
        r.msg === "dependents index feed failed, listing again" &&
        /over 256 bytes/.test(JSON.stringify(r.error))
      ),
    );
    assert.equal(first.cancelled, true, "the stream was hung up");
  }, { maxLineBytes: 256 });
});

Deno.test("IndexFeed stops for good when the index overflows on a listed object, warning once", async () => {
  await withFeed(
    {
      list: () => page("10", [vm("a", "1"), vm("b", "2"), vm("c", "3")]),
    },
    async (h) => {
      await waitUntil("overflowed", () => h.feed.state === "overflowed");
      await delay(50);
      assert.equal(h.lists().length, 1);
      assert.equal(h.watches().length, 0, "no watch after an overflow");
      assert.deepEqual(h.states, ["syncing", "overflowed"]);
      assert.equal(h.index.overflowed, true);
      assert.match(h.feed.lastError ?? "", /index is full/);
      const warnings = h.logs.filter((r) => r.level === "warn");
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0]!.url, `${h.api.url}${PATH}`);
      assert.equal(warnings[0]!.source, SOURCE);
      assert.equal(warnings[0]!.maxDependents, 1);
      assert.equal("maxReferences" in warnings[0]!, false);
      assert.deepEqual(h.index.calls, [
        `startResync ${SOURCE}`,
        "upsert a@1",
        "upsert b@2",
      ]);
    },
    {},
    new RecordingIndex(1),
  );
});

Deno.test("IndexFeed stops for good when the index overflows on a watch event, hanging up the watch", async () => {
  await withFeed(
    {
      list: () => page("10", [vm("a", "1")]),
    },
    async (h) => {
      const first = await h.stream(0);
      first.event("ADDED", vm("b", "11"));
      await waitUntil("overflowed", () => h.feed.state === "overflowed");
      await first.closed;
      assert.equal(first.cancelled, true);
      await delay(50);
      assert.equal(h.watches().length, 1);
      assert.equal(h.lists().length, 1);
      assert.equal(h.logs.filter((r) => r.level === "warn").length, 1);
      await h.feed.stop();
      assert.equal(h.feed.state, "stopped");
      assert.deepEqual(h.states, [
        "syncing",
        "synced",
        "overflowed",
        "stopped",
      ]);
    },
    {},
    new RecordingIndex(1),
  );
});

Deno.test("IndexFeed waits a backoff before watching again when a watch ends at once, empty", async () => {
  await withFeed({
    list: () => page("10", []),
    watch: (_n, _request, api) => {
      const stream = api.stream();
      stream.end();
      return streamed(stream);
    },
  }, async (h) => {
    await waitUntil("three watches", () => h.watches().length >= 3);
    assert.equal(h.lists().length, 1);
    assert.equal(h.feed.state, "synced");
    assert.ok(
      h.logs.some((r) =>
        r.msg === "watch ended at once, waiting before the next" &&
        typeof r.delayMs === "number"
      ),
    );
  });
});

Deno.test("IndexFeed jitters the watch timeout with the backoff's random source", async () => {
  await withFeed({
    list: () => page("10", []),
  }, async (h) => {
    await h.stream(0);
    assert.equal(
      h.watches()[0]!.url.searchParams.get("timeoutSeconds"),
      "113",
      "100 s and half of a quarter more",
    );
  }, {
    watchTimeoutSeconds: 100,
    backoff: { initialMs: 5, maxMs: 10, random: () => 0.5 },
  });
});

Deno.test("IndexFeed.stop() ends a running watch, unsyncs the source and says stopped", async () => {
  await withFeed({
    list: () => page("1", [vm("a", "1")]),
  }, async (h) => {
    const stream = await h.stream(0);
    await h.feed.stop();
    await stream.closed;
    assert.equal(stream.cancelled, true, "the watch connection is closed");
    assert.equal(h.feed.state, "stopped");
    assert.equal(h.index.synced(SOURCE), false);
    assert.equal(h.index.calls.at(-1), `unsync ${SOURCE}`);
    assert.deepEqual(h.states, ["syncing", "synced", "stopped"]);
    assert.equal(h.api.requests.length, 2, "one list and one watch");
    assert.equal(h.feed.lastError, undefined);
  });
});

Deno.test("IndexFeed.stop() interrupts a backoff sleep", async () => {
  await withFeed({
    list: () => json(status(503, "ServiceUnavailable", "later"), 503),
  }, async (h) => {
    await waitUntil("the failure", () => h.feed.lastError !== undefined);
    // The next attempt is a minute away: stop() must not wait for it (the
    // test's op sanitizer also fails on a leaked timer).
    await h.feed.stop();
    assert.equal(h.lists().length, 1);
    assert.equal(h.feed.state, "stopped");
  }, { backoff: { initialMs: 60_000, maxMs: 60_000 } });
});

/**
 * A client whose requests never answer and ignore their abort signal, as a
 * wedged connection would; it records the signals it was given.
 */
function hungClient(options: { listed?: boolean } = {}) {
  const signals: { kind: "list" | "watch"; signal: AbortSignal }[] = [];
  const client = {
    async *listPages(_url: string, list: { signal: AbortSignal }) {
      signals.push({ kind: "list", signal: list.signal });
      if (options.listed) {
        yield { metadata: { resourceVersion: "1" }, items: [vm("a", "1")] };
        return;
      }
      await new Promise(() => {});
    },
    async *watch(_url: string, watch: { signal: AbortSignal }) {
      signals.push({ kind: "watch", signal: watch.signal });
      await new Promise(() => {});
      yield undefined as never;
    },
  } as unknown as KubeClient;
  return { client, signals };
}

for (const listed of [false, true]) {
  const what = listed ? "a watch" : "a list";
  Deno.test(`IndexFeed.stop() aborts ${what} and resolves within about a second while it hangs regardless`, async () => {
    const { client, signals } = hungClient({ listed });
    const index = new RecordingIndex();
    const feed = new IndexFeed({
      client,
      url: `https://kcp.invalid${PATH}`,
      source: SOURCE,
      index,
      log: createLogger({ write: () => {} }),
    });
    feed.start();
    await waitUntil(what, () => signals.length === (listed ? 2 : 1));
    assert.equal(feed.state, listed ? "synced" : "syncing");
    const started = performance.now();
    await feed.stop();
    const ms = performance.now() - started;
    assert.ok(ms < 2_500, `stop() took ${Math.round(ms)} ms`);
    assert.ok(signals.every((s) => s.signal.aborted));
    assert.equal(feed.state, "stopped");
    assert.equal(feed.lastError, undefined);
    assert.equal(index.synced(SOURCE), false);
    assert.equal(index.calls.at(-1), `unsync ${SOURCE}`);
  });
}

Deno.test("IndexFeed.stop() before start() resolves, and start() after stop() does nothing", async () => {
  const api = new FakeApi(() => json({ metadata: {}, items: [] }));
  const client = new KubeClient(connection(api.url));
  try {
    const states: IndexFeedState[] = [];
    const index = new RecordingIndex();
    const feed = new IndexFeed({
      client,
      url: `${api.url}${PATH}`,
      source: SOURCE,
      index,
      log: createLogger({ write: () => {} }),
      onState: (state) => states.push(state),
    });
    assert.equal(feed.state, "stopped");
    await feed.stop();
    feed.start();
    await feed.stop();
    assert.equal(api.requests.length, 0);
    assert.deepEqual(states, []);
    assert.deepEqual(index.calls, []);
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("new IndexFeed() refuses sizes and timeouts that are not positive integers", () => {
  const base = {
    client: {} as KubeClient,
    url: `https://kcp.invalid${PATH}`,
    source: SOURCE,
    index: new RecordingIndex(),
    log: createLogger({ write: () => {} }),
  };
  for (
    const bad of [
      { pageSize: 0 },
      { maxPageBytes: -1 },
      { maxLineBytes: 1.5 },
      { watchTimeoutSeconds: Number.NaN },
    ]
  ) {
    assert.throws(
      () => new IndexFeed({ ...base, ...bad }),
      (error: unknown) =>
        error instanceof RangeError &&
        error.message.includes(Object.keys(bad)[0]!),
    );
  }
  assert.throws(
    () => new IndexFeed({ ...base, backoff: { initialMs: 0 } }),
    RangeError,
  );
  assert.equal(new IndexFeed(base).state, "stopped");
});

Deno.test("IndexFeed.start() twice runs one loop", async () => {
  await withFeed({
    list: () => page("1", []),
  }, async (h) => {
    h.feed.start();
    await h.stream(0);
    await delay(20);
    assert.equal(h.lists().length, 1);
    assert.equal(h.watches().length, 1);
  });
});
