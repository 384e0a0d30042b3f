import assert from "node:assert/strict";
import {
  connection,
  delay,
  DEP_CTRL_PATH,
  endpointSlice,
  type EventStream,
  FakeApi,
  json,
  logCollector,
  SLICE_PATH,
  status,
  streamed,
  waitUntil,
} from "../../testing/fakes.ts";
import {
  ExportWatcher,
  type ExportWatcherOptions,
  wildcardUrl,
} from "./export_watcher.ts";
import { KubeClient } from "./kube_client.ts";
import type {
  KubeList,
  KubeObject,
  ListOptions,
  WatchEvent,
  WatchOptions,
} from "./kube_types.ts";
import { createLogger } from "../runtime/mod.ts";

const EXPORT = "dependencies.opendefense.cloud";
const SELECTOR = "app.kubernetes.io/managed-by=dependency-controller";
/** The two collections every test follows. */
const COLLECTIONS = {
  rules: {
    path: "/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules",
  },
  configurations: {
    path:
      "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    labelSelector: SELECTOR,
  },
} as const;
type Name = keyof typeof COLLECTIONS;
/** Virtual-workspace paths of two endpoints (on the fake server). */
const E1 = `/services/apiexport/ws-a/${EXPORT}`;
const E2 = `/services/apiexport/ws-b/${EXPORT}`;

/** The fake-server path of a collection below an endpoint. */
function collectionPath(endpoint: string, name: Name): string {
  return `${endpoint}/clusters/*${COLLECTIONS[name].path}`;
}

function object(
  cluster: string,
  name: string,
  resourceVersion = "1",
): KubeObject {
  return {
    metadata: {
      name,
      resourceVersion,
      annotations: { "kcp.io/cluster": cluster },
    },
  };
}

function list(items: unknown[], resourceVersion = "100") {
  return { metadata: { resourceVersion }, items };
}

/**
 * A client that counts its lists and watches under way; a watch of a URL
 * containing one of `slowToEnd` takes a while to end.
 */
class TrackingClient extends KubeClient {
  open = 0;
  readonly slowToEnd = new Set<string>();

  override async list(url: string, options?: ListOptions): Promise<KubeList> {
    this.open++;
    try {
      return await super.list(url, options);
    } finally {
      this.open--;
    }
  }

  override async *watch(
    url: string,
    options?: WatchOptions,
  ): AsyncGenerator<WatchEvent> {
    this.open++;
    try {
      yield* super.watch(url, options);
    } finally {
      if ([...this.slowToEnd].some((part) => url.includes(part))) {
        await delay(50);
      }
      this.open--;
    }
  }
}

/** List bodies per endpoint path and collection (a body or a promise of one). */
type Bodies = Record<string, Partial<Record<Name, () => unknown>>>;

interface Harness {
  api: FakeApi;
  client: TrackingClient;
  watcher: ExportWatcher<Name>;
  /** How many times onChange was called. */
  changes: () => number;
  logs: Record<string, unknown>[];
  /** Calls `hook` with each log record as it is written, from now on. */
  onLog: (hook: (record: Record<string, unknown>) => void) => void;
  /** Lists received for a path. */
  lists: (path: string) => number;
  /** The n-th watch stream (from 0) of a path, once requested. */
  stream: (path: string, n?: number) => Promise<EventStream>;
  /** `<fake server><path>`. */
  url: (path: string) => string;
}

/**
 * Runs an ExportWatcher of {@linkcode COLLECTIONS} against a fake server that
 * serves the endpoint slice (`sliceList`) and, per endpoint path and
 * collection, the list body in `bodies`.
 */
async function withWatcher(
  sliceList: (base: string) => unknown | Promise<unknown>,
  bodies: Bodies,
  fn: (h: Harness) => Promise<void>,
  options: Partial<ExportWatcherOptions<Name>> = {},
): Promise<void> {
  const streams = new Map<string, EventStream[]>();
  const lists = new Map<string, number>();
  const api = new FakeApi(async (request, api) => {
    const path = request.url.pathname;
    const watch = request.url.searchParams.get("watch") === "true";
    let body: unknown;
    if (path === SLICE_PATH) {
      if (
        request.url.searchParams.get("fieldSelector") !==
          `metadata.name=${EXPORT}`
      ) {
        return json(status(400, "BadRequest", "wrong field selector"), 400);
      }
      body = watch ? undefined : await sliceList(api.url);
    } else {
      let found: (() => unknown) | undefined;
      for (const [endpoint, collections] of Object.entries(bodies)) {
        for (const name of Object.keys(COLLECTIONS) as Name[]) {
          if (path === collectionPath(endpoint, name)) {
            found = collections[name];
          }
        }
      }
      if (found === undefined) {
        return json(status(404, "NotFound", "no such path"), 404);
      }
      body = watch ? undefined : await found();
      if (body instanceof Response) return body;
    }
    if (watch) {
      const stream = api.stream();
      streams.set(path, [...(streams.get(path) ?? []), stream]);
      return streamed(stream);
    }
    lists.set(path, (lists.get(path) ?? 0) + 1);
    return json(body);
  });
  const client = new TrackingClient(connection(api.url));
  const logs = logCollector();
  let changes = 0;
  let onLog: (record: Record<string, unknown>) => void = () => {};
  const watcher = new ExportWatcher<Name>({
    client,
    workspaceUrl: `${api.url}${DEP_CTRL_PATH}`,
    apiExportName: EXPORT,
    collections: COLLECTIONS,
    log: createLogger({
      level: "debug",
      write: (line) => {
        logs.write(line);
        onLog(logs.records.at(-1)!);
      },
    }),
    onChange: () => changes++,
    backoff: { initialMs: 5, maxMs: 10 },
    ...options,
  });
  try {
    watcher.start();
    await fn({
      api,
      client,
      watcher,
      changes: () => changes,
      logs: logs.records,
      onLog: (hook) => onLog = hook,
      lists: (path) => lists.get(path) ?? 0,
      stream: async (path, n = 0) => {
        await waitUntil(
          `watch ${n} of ${path}`,
          () => (streams.get(path)?.length ?? 0) > n,
          10_000,
        );
        return streams.get(path)![n]!;
      },
      url: (path) => `${api.url}${path}`,
    });
  } finally {
    await watcher.stop();
    client.close();
    await api.close();
  }
}

/** `<endpoint path> <cluster>/<name>` of each tagged object, sorted. */
function tagged(
  h: Harness,
  objects: { endpoint: string; object: KubeObject }[],
): string[] {
  return objects.map(({ endpoint, object }) =>
    `${endpoint.slice(h.api.url.length)} ${
      object.metadata?.annotations?.["kcp.io/cluster"]
    }/${object.metadata?.name}`
  ).sort();
}

Deno.test("ExportWatcher is synced only once the slice exists and every collection of every endpoint is listed, a collection once it is", async () => {
  let releaseSlice!: () => void;
  const sliceListed = new Promise<void>((resolve) => releaseSlice = resolve);
  let releaseConfigurations!: () => void;
  const configurationsListed = new Promise<void>((resolve) =>
    releaseConfigurations = resolve
  );
  await withWatcher(
    async (base) => {
      await sliceListed;
      return list([endpointSlice(base, [E1, E2])]);
    },
    {
      [E1]: {
        rules: () => list([object("c1", "r1")]),
        configurations: () => list([]),
      },
      [E2]: {
        rules: () => list([]),
        configurations: async () => {
          await configurationsListed;
          return list([object("p2", "dependency-controller")]);
        },
      },
    },
    async (h) => {
      try {
        await waitUntil(
          "the slice list to be asked for",
          () => h.api.seen(SLICE_PATH).length === 1,
          10_000,
        );
        assert.equal(h.watcher.sliceFound, false);
        assert.equal(h.watcher.synced, false);
        assert.equal(h.watcher.collectionSynced("rules"), false, "no slice");
        assert.deepEqual(h.watcher.endpoints(), []);
        releaseSlice();
        await waitUntil("the slice", () => h.watcher.sliceFound, 10_000);
        await waitUntil(
          "three of the four collections listed",
          () =>
            h.lists(collectionPath(E1, "rules")) === 1 &&
            h.lists(collectionPath(E1, "configurations")) === 1 &&
            h.lists(collectionPath(E2, "rules")) === 1 &&
            h.watcher.items("rules").length === 1,
          10_000,
        );
        await waitUntil(
          "the list of E2's configurations to be asked for",
          () =>
            h.api.seen(collectionPath(E2, "configurations"), false).length ===
              1,
          10_000,
        );
        assert.equal(h.watcher.synced, false, "E2's configurations not listed");
        assert.equal(h.watcher.collectionSynced("rules"), true);
        assert.equal(h.watcher.collectionSynced("configurations"), false);
        assert.deepEqual(h.watcher.endpoints(), [h.url(E1), h.url(E2)]);
        releaseConfigurations();
        await waitUntil("synced", () => h.watcher.synced, 10_000);
        assert.equal(h.watcher.collectionSynced("configurations"), true);
        assert.deepEqual(tagged(h, h.watcher.items("configurations")), [
          `${E2} p2/dependency-controller`,
        ]);
      } finally {
        // A failed test must not leave the fake server waiting.
        releaseSlice();
        releaseConfigurations();
      }
    },
  );
});

Deno.test("ExportWatcher.items() tags objects with their endpoint and follows watch events", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1, E2])]),
    {
      [E1]: {
        rules: () => list([object("c1", "r1"), object("c2", "r2")]),
        configurations: () => list([object("p1", "dependency-controller")]),
      },
      [E2]: {
        rules: () => list([object("c3", "r3")]),
        configurations: () => list([]),
      },
    },
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      assert.deepEqual(tagged(h, h.watcher.items("rules")), [
        `${E1} c1/r1`,
        `${E1} c2/r2`,
        `${E2} c3/r3`,
      ]);
      assert.deepEqual(tagged(h, h.watcher.items("configurations")), [
        `${E1} p1/dependency-controller`,
      ]);

      // Watch events show up in items().
      const stream = await h.stream(collectionPath(E2, "rules"));
      stream.event("ADDED", object("c4", "r4", "101"));
      stream.event("DELETED", object("c3", "r3", "102"));
      await waitUntil(
        "r4 instead of r3",
        () =>
          tagged(h, h.watcher.items("rules"))
            .filter((item) => item.startsWith(`${E2} `))
            .join() === `${E2} c4/r4`,
        10_000,
      );
      assert.deepEqual(tagged(h, h.watcher.items("rules")), [
        `${E1} c1/r1`,
        `${E1} c2/r2`,
        `${E2} c4/r4`,
      ]);
    },
  );
});

Deno.test("ExportWatcher sends a collection's labelSelector on its list and watch only", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    { [E1]: { rules: () => list([]), configurations: () => list([]) } },
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      await h.stream(collectionPath(E1, "rules"));
      await h.stream(collectionPath(E1, "configurations"));
      const selectors = (name: Name, watch: boolean) =>
        h.api.seen(collectionPath(E1, name), watch).map((r) =>
          r.url.searchParams.get("labelSelector")
        );
      assert.deepEqual(selectors("configurations", false), [SELECTOR]);
      assert.deepEqual(selectors("configurations", true), [SELECTOR]);
      assert.deepEqual(selectors("rules", false), [null]);
      assert.deepEqual(selectors("rules", true), [null]);
      // The watch resumes from the list's resource version.
      const [watch] = h.api.seen(collectionPath(E1, "configurations"), true);
      assert.equal(watch?.url.searchParams.get("resourceVersion"), "100");
    },
  );
});

Deno.test("ExportWatcher starts and stops the informers of endpoints as the slice changes", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    {
      [E1]: {
        rules: () => list([object("c1", "r1")]),
        configurations: () => list([]),
      },
      [E2]: {
        rules: () => list([object("c2", "r2")]),
        configurations: () => list([object("p2", "dependency-controller")]),
      },
    },
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      assert.deepEqual(h.watcher.endpoints(), [h.url(E1)]);
      assert.equal(h.lists(collectionPath(E2, "rules")), 0);
      assert.equal(h.lists(collectionPath(E2, "configurations")), 0);
      const sliceStream = await h.stream(SLICE_PATH);
      const e1Streams = await Promise.all([
        h.stream(collectionPath(E1, "rules")),
        h.stream(collectionPath(E1, "configurations")),
      ]);

      sliceStream.event(
        "MODIFIED",
        endpointSlice(h.api.url, [E1, E2], { resourceVersion: "2" }),
      );
      await waitUntil(
        "both endpoints synced",
        () =>
          h.watcher.synced && h.watcher.endpoints().length === 2 &&
          h.watcher.items("rules").length === 2,
        10_000,
      );
      assert.deepEqual(h.watcher.endpoints(), [h.url(E1), h.url(E2)]);
      assert.equal(h.lists(collectionPath(E2, "rules")), 1);
      assert.equal(h.lists(collectionPath(E2, "configurations")), 1);
      assert.deepEqual(tagged(h, h.watcher.items("configurations")), [
        `${E2} p2/dependency-controller`,
      ]);

      sliceStream.event(
        "MODIFIED",
        endpointSlice(h.api.url, [E2], { resourceVersion: "3" }),
      );
      await waitUntil(
        "E1 dropped",
        () => h.watcher.endpoints().length === 1,
        10_000,
      );
      assert.deepEqual(h.watcher.endpoints(), [h.url(E2)]);
      assert.deepEqual(tagged(h, h.watcher.items("rules")), [`${E2} c2/r2`]);
      assert.equal(h.watcher.synced, true);
      await Promise.all(e1Streams.map((s) => s.closed));
      assert.deepEqual(e1Streams.map((s) => s.cancelled), [true, true]);
      // E1 is not listed again.
      assert.equal(h.lists(collectionPath(E1, "rules")), 1);
      assert.equal(h.lists(collectionPath(E1, "configurations")), 1);

      const messages = h.logs.map((r) => `${r.msg} ${r.url}`);
      assert.ok(messages.includes(`endpoint added, watching it ${h.url(E2)}`));
      assert.ok(
        messages.includes(
          `endpoint removed, no longer watching it ${h.url(E1)}`,
        ),
      );
    },
  );
});

Deno.test("ExportWatcher with a slice that lists no endpoints is synced with no items", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [])]),
    {},
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      assert.equal(h.watcher.sliceFound, true);
      assert.deepEqual(h.watcher.endpoints(), []);
      assert.deepEqual(h.watcher.items("rules"), []);
      assert.deepEqual(h.watcher.items("configurations"), []);
    },
  );
});

Deno.test("ExportWatcher without an endpoint slice stays unsynced and logs the error once until the slice appears", async () => {
  await withWatcher(
    () => list([]),
    {
      [E1]: { rules: () => list([]), configurations: () => list([]) },
    },
    async (h) => {
      const errors = () =>
        h.logs.filter((r) =>
          r.level === "error" &&
          /APIExportEndpointSlice does not exist/.test(String(r.msg))
        );
      await waitUntil("the error", () => errors().length === 1, 10_000);
      assert.equal(errors()[0]?.apiExportName, EXPORT);
      assert.equal(errors()[0]?.workspace, h.url(DEP_CTRL_PATH));
      assert.equal(h.watcher.sliceFound, false);
      assert.equal(h.watcher.synced, false);

      // "410 Gone": the slice is listed again, still missing; no new error.
      const first = await h.stream(SLICE_PATH);
      first.event("ERROR", status(410, "Expired", "too old resource version"));
      await waitUntil(
        "the second list of the slice",
        () => h.lists(SLICE_PATH) === 2,
        10_000,
      );
      const second = await h.stream(SLICE_PATH, 1);
      assert.equal(errors().length, 1);
      assert.equal(h.watcher.synced, false);

      // The slice appears: synced; it goes away: unsynced, reported again.
      second.event(
        "ADDED",
        endpointSlice(h.api.url, [E1], { resourceVersion: "101" }),
      );
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      assert.equal(errors().length, 1);
      second.event(
        "DELETED",
        endpointSlice(h.api.url, [E1], { resourceVersion: "102" }),
      );
      await waitUntil("the second error", () => errors().length === 2, 10_000);
      assert.equal(h.watcher.synced, false);
      assert.deepEqual(h.watcher.endpoints(), []);
    },
  );
});

Deno.test("ExportWatcher.failingWatches() counts the list+watch loops retrying after an error, and drops to 0 once they recover", async () => {
  let broken = true;
  await withWatcher(
    (base) => list([endpointSlice(base, [E1, E2])]),
    {
      [E1]: {
        rules: () =>
          broken
            ? json(status(500, "InternalError", "etcd is sad"), 500)
            : list(
              [],
            ),
        configurations: () => list([]),
      },
      [E2]: { rules: () => list([]), configurations: () => list([]) },
    },
    async (h) => {
      await waitUntil(
        "the other collections listed",
        () =>
          h.lists(collectionPath(E2, "rules")) > 0 &&
          h.lists(collectionPath(E1, "configurations")) > 0,
        10_000,
      );
      await waitUntil(
        "the failing list retried",
        () =>
          h.api.requests.filter((r) =>
            r.url.pathname === collectionPath(E1, "rules")
          ).length >= 2,
        10_000,
      );
      assert.equal(h.watcher.failingWatches(), 1);
      assert.equal(h.watcher.synced, false);
      broken = false;
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      assert.equal(h.watcher.failingWatches(), 0);
    },
  );
});

Deno.test("ExportWatcher coalesces a burst of watch events into fewer onChange calls", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    { [E1]: { rules: () => list([]), configurations: () => list([]) } },
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      const stream = await h.stream(collectionPath(E1, "rules"));
      // Let the calls of the lists happen before counting.
      await waitUntil("a first onChange", () => h.changes() > 0, 10_000);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const before = h.changes();
      // Five events in one chunk.
      stream.send(
        [1, 2, 3, 4, 5].map((n) =>
          `${
            JSON.stringify({
              type: "ADDED",
              object: object("c1", `r${n}`, String(100 + n)),
            })
          }\n`
        ).join(""),
      );
      await waitUntil(
        "five rules",
        () => h.watcher.items("rules").length === 5,
        10_000,
      );
      await waitUntil("onChange", () => h.changes() > before, 10_000);
      const calls = h.changes() - before;
      assert.ok(calls >= 1 && calls < 5, `onChange called ${calls} times`);
    },
  );
});

Deno.test("ExportWatcher.stop() closes every watch and stops calling onChange", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1, E2])]),
    {
      [E1]: { rules: () => list([]), configurations: () => list([]) },
      [E2]: { rules: () => list([]), configurations: () => list([]) },
    },
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      const streams = await Promise.all([
        h.stream(SLICE_PATH),
        h.stream(collectionPath(E1, "rules")),
        h.stream(collectionPath(E1, "configurations")),
        h.stream(collectionPath(E2, "rules")),
        h.stream(collectionPath(E2, "configurations")),
      ]);
      // E2 is being removed while the watcher stops: stop() waits for it too.
      streams[0]!.event(
        "MODIFIED",
        endpointSlice(h.api.url, [E1], { resourceVersion: "2" }),
      );
      await waitUntil(
        "E2 dropped",
        () => h.watcher.endpoints().length === 1,
        10_000,
      );
      const calls = h.changes();
      await h.watcher.stop();
      await Promise.all(streams.map((s) => s.closed));
      assert.deepEqual(streams.map((s) => s.cancelled), [
        true,
        true,
        true,
        true,
        true,
      ]);
      assert.deepEqual(h.watcher.endpoints(), []);
      assert.deepEqual(h.watcher.items("rules"), []);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(h.changes(), calls, "no onChange after stop()");
    },
  );
});

Deno.test("ExportWatcher.stop() right after a slice change waits for the informers of the removed endpoint and calls no onChange", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1, E2])]),
    {
      [E1]: { rules: () => list([]), configurations: () => list([]) },
      [E2]: { rules: () => list([]), configurations: () => list([]) },
    },
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      const streams = await Promise.all([
        h.stream(SLICE_PATH),
        h.stream(collectionPath(E2, "rules")),
        h.stream(collectionPath(E2, "configurations")),
      ]);
      h.client.slowToEnd.add(E2);
      let stopped: Promise<void> | undefined;
      let calls = 0;
      h.onLog((record) => {
        if (record.msg !== "endpoint removed, no longer watching it") return;
        // After the change (which schedules an onChange), before that runs.
        queueMicrotask(() => {
          calls = h.changes();
          stopped = h.watcher.stop();
        });
      });
      streams[0]!.event(
        "MODIFIED",
        endpointSlice(h.api.url, [E1], { resourceVersion: "2" }),
      );
      await waitUntil("stop()", () => stopped !== undefined, 10_000);
      await stopped;
      assert.equal(h.client.open, 0, "every list and watch has ended");
      await Promise.all(streams.map((s) => s.closed));
      await delay(20);
      assert.equal(h.changes(), calls, "no onChange after stop()");
    },
  );
});

Deno.test("ExportWatcher.stop() returns while the requests of an endpoint hang and ignore their abort", async () => {
  const base = "https://kcp.invalid";
  const signals: { url: string; signal: AbortSignal }[] = [];
  const client = {
    list(url: string, options: { signal: AbortSignal }) {
      signals.push({ url, signal: options.signal });
      return url.endsWith(SLICE_PATH)
        ? Promise.resolve(list([endpointSlice(base, [E1])]))
        : new Promise(() => {});
    },
    async *watch(url: string, options: { signal: AbortSignal }) {
      signals.push({ url, signal: options.signal });
      await new Promise(() => {});
      yield undefined as never;
    },
  } as unknown as KubeClient;
  const watcher = new ExportWatcher<Name>({
    client,
    workspaceUrl: `${base}${DEP_CTRL_PATH}`,
    apiExportName: EXPORT,
    collections: COLLECTIONS,
    log: createLogger({ write: () => {} }),
    onChange: () => {},
    stopTimeoutMs: 0,
  });
  watcher.start();
  // The slice's list and watch, and a list of each collection of E1.
  await waitUntil("every request", () => signals.length === 4, 10_000);
  await watcher.stop();
  assert.deepEqual(
    signals.map((s) => [s.url.slice(base.length), s.signal.aborted]).sort(),
    [
      [SLICE_PATH, true],
      [SLICE_PATH, true],
      [collectionPath(E1, "configurations"), true],
      [collectionPath(E1, "rules"), true],
    ],
  );
  assert.deepEqual(watcher.endpoints(), []);
});

Deno.test("ExportWatcher lists each collection again at relistIntervalMs, counts its lists, and leaves the slice's watch be", async () => {
  let rulesListed = 0;
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    {
      [E1]: {
        rules: () => {
          rulesListed++;
          return list(
            [{ ...object("c1", "r1"), spec: { added: rulesListed > 1 } }],
            String(100 + rulesListed),
          );
        },
        configurations: () => list([]),
      },
    },
    async (h) => {
      await waitUntil("synced", () => h.watcher.synced, 10_000);
      assert.equal(h.watcher.lists("rules"), 1);
      assert.equal(h.watcher.lists("configurations"), 1);
      await h.stream(collectionPath(E1, "rules"), 2);
      await h.stream(collectionPath(E1, "configurations"), 2);
      assert.ok(h.watcher.lists("rules") >= 3);
      assert.ok(h.watcher.lists("configurations") >= 3);
      assert.deepEqual(
        h.watcher.items("rules").map(({ object }) => object.spec),
        [{ added: true }],
      );
      assert.equal(h.lists(SLICE_PATH), 1, "the slice is listed once");
      assert.equal(h.watcher.failingWatches(), 0);
    },
    { relistIntervalMs: 50 },
  );
});

Deno.test("wildcardUrl() is a collection across all clusters of an endpoint", () => {
  assert.equal(
    wildcardUrl(
      "https://kcp.example:6443/services/apiexport/root:dep/x/",
      "/apis/g/v1/things",
    ),
    "https://kcp.example:6443/services/apiexport/root:dep/x/clusters/*/apis/g/v1/things",
  );
});
