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
} from "../../testing/fakes.ts";
import {
  clusterOf,
  Informer,
  type InformerOptions,
  objectKey,
} from "./informer.ts";
import { KubeClient } from "./kube_client.ts";
import type { KubeClientOptions, KubeObject } from "./kube_types.ts";
import { createLogger } from "../runtime/mod.ts";

const PATH = "/apis/g/v1/things";

function thing(
  name: string,
  resourceVersion: string,
  extra: Record<string, unknown> = {},
): KubeObject {
  return {
    metadata: {
      name,
      namespace: "default",
      resourceVersion,
      annotations: { "kcp.io/cluster": "c1" },
    },
    ...extra,
  };
}

/** Lists answered by `list(n)` (n counts from 1), watches by `watch(n, request)`. */
interface Script {
  list: (n: number, request: SeenRequest) => Response | Promise<Response>;
  watch?: (
    n: number,
    request: SeenRequest,
    api: FakeApi,
  ) => Response | Promise<Response>;
}

/** A running informer over a scripted fake API. */
interface Harness {
  api: FakeApi;
  informer: Informer;
  changes: () => number;
  lists: () => SeenRequest[];
  watches: () => SeenRequest[];
  logs: Record<string, unknown>[];
  /** The n-th watch stream (from 0), once it was requested. */
  stream: (n: number) => Promise<EventStream>;
}

/** Starts an informer on a scripted fake API, runs `fn`, cleans up. */
async function withInformer(
  script: Script,
  fn: (h: Harness) => Promise<void>,
  options: Partial<InformerOptions> = {},
  clientOptions: KubeClientOptions = {},
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
  const client = new KubeClient(connection(api.url), clientOptions);
  const logs = logCollector();
  let changes = 0;
  const informer = new Informer({
    client,
    url: `${api.url}${PATH}`,
    log: createLogger({ level: "debug", write: logs.write }),
    onChange: () => changes++,
    backoff: { initialMs: 5, maxMs: 10 },
    ...options,
  });
  try {
    informer.start();
    await fn({
      api,
      informer,
      changes: () => changes,
      lists: () => api.seen(PATH, false),
      watches: () => api.seen(PATH, true),
      logs: logs.records,
      stream: async (n) => {
        await waitUntil(`watch stream ${n}`, () => api.streams.length > n);
        return api.streams[n]!;
      },
    });
  } finally {
    await informer.stop();
    client.close();
    await api.close();
  }
}

function names(informer: Informer): string[] {
  return informer.items().map((i) => objectKey(i)).sort();
}

Deno.test("Informer keeps its store in step with a list and ADDED, MODIFIED, DELETED and BOOKMARK events", async () => {
  let releaseList!: () => void;
  const listed = new Promise<void>((resolve) => releaseList = resolve);
  await withInformer({
    list: async () => {
      await listed;
      return json({
        kind: "ThingList",
        metadata: { resourceVersion: "10" },
        items: [
          thing("a", "1"),
          thing("b", "2"),
          {
            metadata: {
              name: "a",
              namespace: "default",
              resourceVersion: "3",
              annotations: { "kcp.io/cluster": "c2" },
            },
          },
        ],
      });
    },
  }, async (h) => {
    await waitUntil("the list request", () => h.lists().length === 1);
    assert.equal(h.informer.synced, false, "not synced before the list");
    assert.deepEqual(h.informer.items(), []);
    releaseList();
    await waitUntil("synced", () => h.informer.synced);
    assert.deepEqual(names(h.informer), [
      "c1/default/a",
      "c1/default/b",
      "c2/default/a",
    ]);
    assert.equal(h.changes(), 1);
    assert.equal(h.informer.lastError, undefined);
    // Items got the list's kind.
    assert.equal(h.informer.items()[0]?.kind, "Thing");

    const stream = await h.stream(0);
    assert.equal(h.watches()[0]?.url.searchParams.get("resourceVersion"), "10");
    stream.event("ADDED", thing("c", "11"));
    stream.event("MODIFIED", thing("a", "12", { spec: { size: 2 } }));
    stream.event("DELETED", thing("b", "13"));
    await waitUntil("three changes", () => h.changes() === 4);
    stream.event("BOOKMARK", { metadata: { resourceVersion: "14" } });
    stream.end();
    // The re-watch starts after the bookmark's resource version.
    await h.stream(1);
    assert.equal(h.watches()[1]?.url.searchParams.get("resourceVersion"), "14");
    assert.equal(h.changes(), 4, "a bookmark is not a change");
    assert.deepEqual(names(h.informer), [
      "c1/default/a",
      "c1/default/c",
      "c2/default/a",
    ]);
    const a = h.informer.items().find((i) => objectKey(i) === "c1/default/a");
    assert.deepEqual(a?.spec, { size: 2 });
    assert.equal(h.lists().length, 1, "no relist");
  });
});

Deno.test("Informer lists again after an ERROR 410 event and replaces its store", async () => {
  await withInformer({
    list: (n) =>
      json(
        n === 1
          ? {
            metadata: { resourceVersion: "10" },
            items: [thing("a", "1"), thing("b", "2")],
          }
          : {
            metadata: { resourceVersion: "20" },
            items: [thing("b", "15"), thing("c", "16")],
          },
      ),
  }, async (h) => {
    const first = await h.stream(0);
    first.event("ADDED", thing("d", "11"));
    await waitUntil("the ADDED event", () => h.informer.items().length === 3);
    first.event("ERROR", status(410, "Expired", "too old resource version"));
    await waitUntil("a second list", () => h.lists().length === 2);
    await h.stream(1);
    assert.deepEqual(names(h.informer), ["c1/default/b", "c1/default/c"]);
    assert.equal(
      h.informer.items().find((i) => i.metadata?.name === "b")?.metadata
        ?.resourceVersion,
      "15",
    );
    assert.equal(h.watches()[1]?.url.searchParams.get("resourceVersion"), "20");
    assert.equal(h.informer.lastError, undefined, "410 is not an error");
    assert.ok(
      h.logs.some((r) => r.msg === "resource version expired, listing again"),
    );
  });
});

Deno.test("Informer lists again when the watch request answers 410 Gone", async () => {
  await withInformer({
    list: (n) =>
      json({
        metadata: { resourceVersion: String(n * 10) },
        items: n === 1 ? [thing("a", "1")] : [thing("z", "19")],
      }),
    watch: (n, _request, api) =>
      n === 1
        ? json(status(410, "Gone", "too old resource version: 10"), 410)
        : streamed(api.stream()),
  }, async (h) => {
    await h.stream(0);
    assert.equal(h.lists().length, 2);
    assert.deepEqual(names(h.informer), ["c1/default/z"]);
    assert.equal(h.watches()[1]?.url.searchParams.get("resourceVersion"), "20");
  });
});

Deno.test("Informer sets lastError on a failing list, retries with backoff and clears it on success", async () => {
  let failing = true;
  await withInformer({
    list: () =>
      failing ? json(status(500, "InternalError", "etcd is sad"), 500) : json({
        metadata: { resourceVersion: "5" },
        items: [thing("a", "1")],
      }),
  }, async (h) => {
    await waitUntil("three failed lists", () => h.lists().length >= 3);
    assert.match(h.informer.lastError ?? "", /500: etcd is sad/);
    assert.equal(h.informer.synced, false);
    assert.equal(h.changes(), 0);
    assert.ok(
      h.logs.some((r) =>
        r.msg === "list or watch failed, retrying" && r.level === "warn" &&
        typeof r.delayMs === "number"
      ),
    );
    failing = false;
    await waitUntil("synced", () => h.informer.synced);
    assert.equal(h.informer.lastError, undefined);
    assert.deepEqual(names(h.informer), ["c1/default/a"]);
    assert.equal(h.changes(), 1);
  });
});

Deno.test("Informer retries a server that does not answer within unansweredMaxMs, and starts over at its first answer", async () => {
  // kcp restarting: it answers 500, then nothing at all (the client's
  // deadline, 50 ms here, passes), then 403 while it starts, then lists.
  let mode: "500" | "silent" | "403" | "ok" = "500";
  let wake!: () => void;
  let woken = new Promise<void>((resolve) => wake = resolve);
  const failures = (h: Harness) =>
    h.logs.filter((r) => r.msg === "list or watch failed, retrying");
  const delays = (h: Harness, from: number) =>
    failures(h).slice(from).map((r) => r.delayMs as number);
  await withInformer({
    list: async () => {
      if (mode === "silent") await woken;
      if (mode === "500") return json(status(500, "InternalError", "x"), 500);
      if (mode === "403") return json(status(403, "Forbidden", "not yet"), 403);
      return json({ metadata: { resourceVersion: "5" }, items: [] });
    },
  }, async (h) => {
    await waitUntil("three 500s", () => failures(h).length >= 3);
    // Answered failures back off as before: 5, 10, 20 ms (jittered down).
    assert.ok(delays(h, 2)[0]! >= 10, `${delays(h, 0)}`);
    mode = "silent";
    const silent = () =>
      failures(h).filter((r) =>
        /no answer within 50 ms/.test(JSON.stringify(r.error))
      );
    await waitUntil(
      "six failures without an answer",
      () => silent().length >= 6,
    );
    const waits = silent().map((r) => r.delayMs as number);
    assert.ok(waits.every((ms) => ms <= 20), `${waits}`);
    // One warning that the server is away; the same failure again is debug.
    assert.deepEqual(
      silent().slice(0, 4).map((r) => r.level),
      ["warn", "debug", "debug", "debug"],
    );
    mode = "403";
    wake();
    woken = Promise.resolve();
    await waitUntil(
      "a 403",
      () => failures(h).some((r) => /not yet/.test(JSON.stringify(r.error))),
    );
    const back = failures(h).findIndex((r) =>
      /not yet/.test(JSON.stringify(r.error))
    );
    // The first answer after the silence starts over at initialMs.
    assert.ok(delays(h, back)[0]! <= 5, `${delays(h, back)}`);
    assert.equal(failures(h)[back]!.level, "warn");
    mode = "ok";
    await waitUntil("synced", () => h.informer.synced);
  }, {
    backoff: { initialMs: 5, maxMs: 60_000, unansweredMaxMs: 20 },
  }, { timeoutMs: 50 });
});

Deno.test("Informer retries a failed watch from the same resourceVersion without listing again", async () => {
  await withInformer({
    list: () => json({ metadata: { resourceVersion: "10" }, items: [] }),
  }, async (h) => {
    const first = await h.stream(0);
    first.event("ERROR", status(500, "InternalError", "watch broke"));
    const second = await h.stream(1);
    assert.equal(h.lists().length, 1);
    assert.equal(h.watches()[1]?.url.searchParams.get("resourceVersion"), "10");
    assert.match(h.informer.lastError ?? "", /watch broke/);
    second.event("ADDED", thing("a", "11"));
    await waitUntil("the event", () => h.informer.items().length === 1);
    assert.equal(h.informer.lastError, undefined, "an event is a success");
  });
});

Deno.test("Informer re-watches from the last resourceVersion when the server ends the watch", async () => {
  await withInformer({
    list: () => json({ metadata: { resourceVersion: "10" }, items: [] }),
  }, async (h) => {
    const first = await h.stream(0);
    first.event("ADDED", thing("a", "11"));
    first.event("MODIFIED", thing("a", "17"));
    first.end();
    await h.stream(1);
    assert.deepEqual(
      h.watches().map((w) => w.url.searchParams.get("resourceVersion")),
      ["10", "17"],
    );
    assert.equal(h.lists().length, 1, "a normal end does not relist");
    assert.equal(h.informer.lastError, undefined);
  });
});

Deno.test("Informer keeps one quiet watch open past the client's per-request timeoutMs", async () => {
  // The client's deadline (10 s by default, 100 ms here) is for getting an
  // answer; a watch is meant to stay open for watchTimeoutSeconds.
  await withInformer(
    {
      list: () => json({ metadata: { resourceVersion: "10" }, items: [] }),
    },
    async (h) => {
      await h.stream(0);
      await delay(300); // three deadlines' worth of a quiet watch
      assert.equal(h.informer.lastError, undefined);
      assert.equal(h.watches().length, 1, "the first watch is still the one");
      assert.equal(h.api.streams[0]?.cancelled, false);
    },
    { watchTimeoutSeconds: 60 },
    { timeoutMs: 100 },
  );
});

Deno.test("Informer passes fieldSelector and pageSize to list and watch, and watchTimeoutSeconds to watch", async () => {
  await withInformer({
    list: () => json({ metadata: { resourceVersion: "1" }, items: [] }),
  }, async (h) => {
    await h.stream(0);
    const list = h.lists()[0]!.url.searchParams;
    assert.equal(list.get("fieldSelector"), "metadata.name=x");
    assert.equal(list.get("limit"), "7");
    const watch = h.watches()[0]!.url.searchParams;
    assert.equal(watch.get("fieldSelector"), "metadata.name=x");
    assert.equal(watch.get("timeoutSeconds"), "9");
  }, { fieldSelector: "metadata.name=x", pageSize: 7, watchTimeoutSeconds: 9 });
});

Deno.test("Informer watches without a resourceVersion when the list has none", async () => {
  await withInformer({
    list: () => json({ metadata: {}, items: [] }),
  }, async (h) => {
    await h.stream(0);
    assert.equal(
      h.watches()[0]?.url.searchParams.has("resourceVersion"),
      false,
    );
  });
});

Deno.test("Informer.stop() ends a running watch and resolves", async () => {
  await withInformer({
    list: () => json({ metadata: { resourceVersion: "1" }, items: [] }),
  }, async (h) => {
    const stream = await h.stream(0);
    await h.informer.stop();
    await stream.closed;
    assert.equal(stream.cancelled, true, "the watch connection is closed");
    const requests = h.api.requests.length;
    assert.equal(requests, 2, "one list and one watch, nothing after stop");
  });
});

Deno.test("Informer.stop() interrupts a backoff sleep", async () => {
  await withInformer({
    list: () => json(status(503, "ServiceUnavailable", "later"), 503),
  }, async (h) => {
    await waitUntil("the failure", () => h.informer.lastError !== undefined);
    // The next attempt is a minute away: stop() must not wait for it (the
    // test's op sanitizer also fails on a leaked timer).
    await h.informer.stop();
    assert.equal(h.lists().length, 1);
  }, { backoff: { initialMs: 60_000, maxMs: 60_000 } });
});

Deno.test("Informer.stop() during a pending list resolves without an error being recorded", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  await withInformer({
    list: async () => {
      await released;
      return json({ metadata: {}, items: [] });
    },
  }, async (h) => {
    await waitUntil("the list request", () => h.lists().length === 1);
    try {
      await h.informer.stop();
      assert.equal(h.informer.synced, false);
      assert.equal(h.informer.lastError, undefined);
      assert.equal(h.changes(), 0);
    } finally {
      release();
    }
  });
});

/**
 * A client whose requests never answer and ignore their abort signal, as a
 * wedged connection would; it records the signals it was given.
 */
function hungClient(options: { listed?: boolean } = {}) {
  const signals: { kind: "list" | "watch"; signal: AbortSignal }[] = [];
  const client = {
    list(_url: string, list: { signal: AbortSignal }) {
      signals.push({ kind: "list", signal: list.signal });
      return options.listed
        ? Promise.resolve({ metadata: { resourceVersion: "1" }, items: [] })
        : new Promise(() => {});
    },
    async *watch(_url: string, watch: { signal: AbortSignal }) {
      signals.push({ kind: "watch", signal: watch.signal });
      await new Promise(() => {});
      yield undefined as never;
    },
  } as unknown as KubeClient;
  return { client, signals };
}

Deno.test("Informer.stop() aborts a list and returns while the list hangs regardless", async () => {
  const { client, signals } = hungClient();
  const informer = new Informer({
    client,
    url: `https://kcp.invalid${PATH}`,
    log: createLogger({ write: () => {} }),
    onChange: () => {},
    stopTimeoutMs: 0,
  });
  informer.start();
  await waitUntil("the list", () => signals.length === 1);
  await informer.stop();
  assert.deepEqual(signals.map((s) => [s.kind, s.signal.aborted]), [[
    "list",
    true,
  ]]);
  assert.equal(informer.synced, false);
  assert.equal(informer.lastError, undefined);
});

Deno.test("Informer.stop() aborts a watch and returns while its stream hangs regardless", async () => {
  const { client, signals } = hungClient({ listed: true });
  const informer = new Informer({
    client,
    url: `https://kcp.invalid${PATH}`,
    log: createLogger({ write: () => {} }),
    onChange: () => {},
    stopTimeoutMs: 0,
  });
  informer.start();
  await waitUntil("the watch", () => signals.length === 2);
  await informer.stop();
  assert.deepEqual(signals.map((s) => [s.kind, s.signal.aborted]), [
    ["list", true],
    ["watch", true],
  ]);
  assert.equal(informer.synced, true);
  assert.equal(informer.lastError, undefined);
});

Deno.test("Informer.stop() before start() resolves, and start() after stop() does nothing", async () => {
  const api = new FakeApi(() => json({ metadata: {}, items: [] }));
  const client = new KubeClient(connection(api.url));
  try {
    const informer = new Informer({
      client,
      url: `${api.url}${PATH}`,
      log: createLogger({ write: () => {} }),
      onChange: () => {},
    });
    assert.equal(informer.url, `${api.url}${PATH}`);
    await informer.stop();
    informer.start();
    await informer.stop();
    assert.equal(api.requests.length, 0);
    assert.equal(informer.synced, false);
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("objectKey() joins the kcp.io/cluster annotation, namespace and name", () => {
  assert.equal(
    objectKey({
      metadata: {
        name: "web",
        namespace: "prod",
        annotations: { "kcp.io/cluster": "2x5jd0ws3r7t", other: "x" },
      },
    }),
    "2x5jd0ws3r7t/prod/web",
  );
  assert.equal(
    objectKey({ metadata: { name: "rule" } }),
    "//rule",
    "cluster-scoped, no annotation",
  );
  assert.equal(objectKey({}), "//");
  assert.notEqual(
    objectKey({
      metadata: { name: "a", annotations: { "kcp.io/cluster": "c1" } },
    }),
    objectKey({
      metadata: { name: "a", annotations: { "kcp.io/cluster": "c2" } },
    }),
  );
});

Deno.test("clusterOf() and objectKey() read kcp's logical-cluster annotation", () => {
  const object = {
    metadata: {
      name: "a",
      namespace: "ns",
      annotations: { "kcp.io/cluster": "c1" },
    },
  };
  assert.equal(clusterOf(object), "c1");
  assert.equal(objectKey(object), "c1/ns/a");
  assert.equal(clusterOf({ metadata: { name: "b" } }), "");
  assert.equal(objectKey({ metadata: { name: "b" } }), "//b");
});

Deno.test("Informer lists again at relistIntervalMs and sees a field its watch did not carry", async () => {
  // kcp keeps serving a watch with the schema it began under; only a list
  // shows what a newer schema adds (here spec.expiresAt).
  const expiring = { spec: { expiresAt: "2030-01-01T00:00:00Z" } };
  await withInformer({
    list: (n) =>
      json({
        metadata: { resourceVersion: String(n * 10) },
        items: n === 1
          ? [thing("a", "1", { spec: {} })]
          : [thing("a", "1", { spec: {} }), thing("b", "11", expiring)],
      }),
  }, async (h) => {
    const first = await h.stream(0);
    first.event("ADDED", thing("b", "11", { spec: {} }));
    await waitUntil("the ADDED event", () => h.informer.items().length === 2);
    const b = () => h.informer.items().find((i) => i.metadata?.name === "b");
    assert.deepEqual(b()?.spec, {}, "the watch left the field out");
    await waitUntil("a second list", () => h.lists().length === 2);
    await h.stream(1);
    assert.deepEqual(b()?.spec, expiring.spec);
    assert.deepEqual(names(h.informer), ["c1/default/a", "c1/default/b"]);
    assert.equal(h.watches()[1]?.url.searchParams.get("resourceVersion"), "20");
    assert.equal(h.informer.lastError, undefined, "a relist is no error");
    assert.ok(
      h.logs.some((r) =>
        r.msg === "relist interval passed, listing again" &&
        r.relistIntervalMs === 100
      ),
    );
    assert.equal(
      h.logs.filter((r) => r.msg === "listed").length,
      2,
      "each list is logged",
    );
  }, { relistIntervalMs: 100 });
});

Deno.test("Informer keeps its objects while a relist is under way and when it fails, and replaces them once one succeeds", async () => {
  const secondAsked = Promise.withResolvers<void>();
  const second = Promise.withResolvers<void>();
  const third = Promise.withResolvers<void>();
  try {
    await withInformer({
      list: async (n) => {
        if (n === 1) {
          return json({
            metadata: { resourceVersion: "10" },
            items: [thing("a", "1"), thing("b", "2")],
          });
        }
        if (n === 2) {
          secondAsked.resolve();
          await second.promise;
          return json(status(500, "InternalError", "etcd is sad"), 500);
        }
        await third.promise;
        return json({
          metadata: { resourceVersion: "30" },
          items: [thing("b", "21"), thing("c", "22")],
        });
      },
    }, async (h) => {
      await waitUntil("synced", () => h.informer.synced);
      const changes = h.changes();
      await secondAsked.promise;
      assert.deepEqual(
        names(h.informer),
        ["c1/default/a", "c1/default/b"],
        "a relist under way leaves the store as it is",
      );
      second.resolve();
      await waitUntil(
        "the relist to fail",
        () => h.informer.lastError !== undefined,
      );
      assert.match(h.informer.lastError ?? "", /500: etcd is sad/);
      assert.deepEqual(
        names(h.informer),
        ["c1/default/a", "c1/default/b"],
        "a failed relist leaves the store as it is",
      );
      assert.equal(h.informer.synced, true);
      assert.equal(h.changes(), changes, "nothing changed");
      assert.ok(
        h.logs.some((r) =>
          r.msg === "list or watch failed, retrying" && r.level === "warn"
        ),
      );
      await waitUntil("the third list", () => h.lists().length === 3);
      third.resolve();
      await h.stream(1);
      assert.deepEqual(names(h.informer), ["c1/default/b", "c1/default/c"]);
      assert.equal(h.changes(), changes + 1, "replaced in one change");
      assert.equal(h.informer.lastError, undefined);
      assert.equal(
        h.watches()[1]?.url.searchParams.get("resourceVersion"),
        "30",
      );
    }, { relistIntervalMs: 50 });
  } finally {
    second.resolve();
    third.resolve();
  }
});

Deno.test("Informer with relistIntervalMs 0 lists again only after a 410", async () => {
  await withInformer({
    list: () => json({ metadata: { resourceVersion: "10" }, items: [] }),
  }, async (h) => {
    await h.stream(0);
    await delay(150);
    assert.equal(h.lists().length, 1);
    assert.equal(h.watches().length, 1);
  }, { relistIntervalMs: 0 });
});
