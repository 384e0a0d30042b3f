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
  streamed,
  waitUntil,
} from "../../testing/fakes.ts";
import {
  type CollectionSnapshot,
  type CollectionView,
  ExportWatcher,
  KubeClient,
  type KubeObject,
  wildcardUrl,
} from "../kcp/mod.ts";
import { RULES_PATH } from "../rules/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import type { ClusterLock } from "./lock_index.ts";
import { LOCKS_PATH, lockView } from "./lock_watcher.ts";

const EXPORT = "dependencies.opendefense.cloud";
/** The virtual-workspace path of the one endpoint (on the fake server). */
const ENDPOINT = `/services/apiexport/ws-a/${EXPORT}`;
const LOCKS = `${ENDPOINT}/clusters/*${LOCKS_PATH}`;
const RULES = `${ENDPOINT}/clusters/*${RULES_PATH}`;

/** A Lock of VPC `core` in namespace `team-a` of `cluster`. */
function lock(
  cluster: string,
  name: string,
  options: { resourceVersion?: string; reason?: string; generation?: number } =
    {},
): KubeObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: {
      name,
      namespace: "team-a",
      uid: `uid-${name}`,
      resourceVersion: options.resourceVersion ?? "1",
      ...(options.generation === undefined
        ? {}
        : { generation: options.generation }),
      annotations: { "kcp.io/cluster": cluster },
    },
    spec: {
      target: {
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        name: "core",
      },
      reason: options.reason ?? "production",
    },
  };
}

function list(items: unknown[], resourceVersion = "100") {
  return { metadata: { resourceVersion }, items };
}

interface Harness {
  api: FakeApi;
  /** The one export watcher, of the rules and the Locks. */
  watcher: ExportWatcher<"rules" | "locks">;
  /** The Lock view of it. */
  locks: CollectionView<"rules" | "locks", ClusterLock>;
  /** Every changed Lock snapshot, as the watcher's onChange found it. */
  snapshots: CollectionSnapshot<ClusterLock>[];
  logs: Record<string, unknown>[];
  /** The n-th watch stream (from 0) of a path, once requested. */
  stream: (path: string, n?: number) => Promise<EventStream>;
  /** Waits until the latest changed snapshot satisfies `check`. */
  until: (
    what: string,
    check: (s: CollectionSnapshot<ClusterLock>) => boolean,
  ) => Promise<CollectionSnapshot<ClusterLock>>;
}

/**
 * Runs one ExportWatcher of the rules and the Locks with a view of each, as
 * the webhook does, against a fake server with one endpoint that serves
 * `locks()` and `rules()` as the list bodies.
 */
async function withLocks(
  bodies: {
    locks: () => unknown;
    rules?: () => unknown;
    /** The watcher's relist interval; none by default. */
    relistIntervalMs?: number;
  },
  fn: (h: Harness) => Promise<void>,
  sliceList: (base: string) => unknown = (base) =>
    list([endpointSlice(base, [ENDPOINT])]),
): Promise<void> {
  const streams = new Map<string, EventStream[]>();
  const api = new FakeApi(async (request, api) => {
    const path = request.url.pathname;
    const watch = request.url.searchParams.get("watch") === "true";
    if (watch) {
      const stream = api.stream();
      streams.set(path, [...(streams.get(path) ?? []), stream]);
      return streamed(stream);
    }
    if (path === SLICE_PATH) return json(sliceList(api.url));
    if (path === LOCKS) return json(await bodies.locks());
    if (path === RULES) return json(await (bodies.rules ?? (() => list([])))());
    return json({ message: "no such path" }, 404);
  });
  const client = new KubeClient(connection(api.url));
  const logs = logCollector();
  const log = createLogger({ level: "debug", write: logs.write });
  const snapshots: CollectionSnapshot<ClusterLock>[] = [];
  const watcher = new ExportWatcher<"rules" | "locks">({
    client,
    workspaceUrl: `${api.url}${DEP_CTRL_PATH}`,
    apiExportName: EXPORT,
    collections: { rules: { path: RULES_PATH }, locks: { path: LOCKS_PATH } },
    log,
    onChange: () => {
      const changed = locks.changed();
      if (changed !== undefined) snapshots.push(changed);
    },
    backoff: { initialMs: 5, maxMs: 10 },
    relistIntervalMs: bodies.relistIntervalMs ?? 0,
  });
  const locks = lockView(watcher, { collection: "locks", log });
  try {
    watcher.start();
    await fn({
      api,
      watcher,
      locks,
      snapshots,
      logs: logs.records,
      stream: async (path, n = 0) => {
        await waitUntil(
          `watch ${n} of ${path}`,
          () => (streams.get(path)?.length ?? 0) > n,
        );
        return streams.get(path)![n]!;
      },
      until: async (what, check) => {
        await waitUntil(what, () => {
          const last = snapshots.at(-1);
          return last !== undefined && check(last);
        });
        return snapshots.at(-1)!;
      },
    });
  } finally {
    await watcher.stop();
    client.close();
    await api.close();
  }
}

/** `<cluster>/<namespace>/<name>` of each Lock, sorted. */
function lockIds(snapshot: CollectionSnapshot<ClusterLock>): string[] {
  return snapshot.items.map((l) =>
    `${l.cluster}/${l.lock.metadata.namespace}/${l.lock.metadata.name}`
  ).sort();
}

Deno.test("lockView() parses the valid Locks and lists an invalid one with why", async () => {
  const invalid = lock("c1", "bad", { resourceVersion: "7", reason: "" });
  await withLocks(
    { locks: () => list([lock("c1", "prod"), invalid, lock("c2", "prod")]) },
    async (h) => {
      const snapshot = await h.until("synced", (s) => s.synced);
      assert.deepEqual(lockIds(snapshot), ["c1/team-a/prod", "c2/team-a/prod"]);
      const parsed = snapshot.items.find((l) => l.cluster === "c1");
      assert.deepEqual(parsed?.lock.spec.operations, ["Delete"]);
      assert.equal(parsed?.lock.spec.reason, "production");
      assert.equal(snapshot.invalid.length, 1);
      const [entry] = snapshot.invalid;
      assert.deepEqual(
        [entry?.cluster, entry?.namespace, entry?.name],
        ["c1", "team-a", "bad"],
      );
      assert.match(entry?.error ?? "", /spec\.reason: must not be empty/);
      assert.deepEqual(snapshot.endpoints, [`${h.api.url}${ENDPOINT}`]);
      assert.deepEqual(h.locks.snapshot(), snapshot);
    },
  );
});

Deno.test("lockView() warns about an invalid Lock once per resource version", async () => {
  await withLocks(
    { locks: () => list([lock("c1", "bad", { reason: "" })]) },
    async (h) => {
      await h.until("synced", (s) => s.synced);
      const warnings = () =>
        h.logs.filter((r) => r.msg === "ignoring invalid Lock");
      h.locks.snapshot();
      h.locks.snapshot();
      const stream = await h.stream(LOCKS);
      stream.event("ADDED", lock("c1", "ok", { resourceVersion: "8" }));
      await h.until("the new Lock", (s) => s.items.length === 1);
      assert.equal(warnings().length, 1);
      const [first] = warnings();
      assert.equal(first?.level, "warn");
      assert.deepEqual(
        [first?.cluster, first?.namespace, first?.name],
        ["c1", "team-a", "bad"],
      );
      assert.match(String(first?.error), /spec\.reason/);
      // A new resource version of the still invalid Lock is warned about again.
      stream.event(
        "MODIFIED",
        lock("c1", "bad", { resourceVersion: "9", reason: "" }),
      );
      await waitUntil("the second warning", () => warnings().length === 2);
      // A fixed Lock moves from invalid to items.
      stream.event("MODIFIED", lock("c1", "bad", { resourceVersion: "10" }));
      const fixed = await h.until(
        "the fixed Lock",
        (s) => s.items.length === 2,
      );
      assert.deepEqual(fixed.invalid, []);
      assert.equal(warnings().length, 2);
    },
  );
});

Deno.test("lockView().changed() hands on a snapshot after each change of the Locks, and none for a status update", async () => {
  await withLocks(
    { locks: () => list([lock("c1", "prod", { generation: 1 })]) },
    async (h) => {
      const first = await h.until("synced", (s) => s.synced);
      assert.equal(h.locks.changed(), undefined, "nothing changed since");
      const stream = await h.stream(LOCKS);
      const before = h.snapshots.length;
      const status = lock("c1", "prod", {
        resourceVersion: "2",
        generation: 1,
      });
      status.status = { conditions: [] };
      stream.event("MODIFIED", status);
      await delay(50); // lets the status update reach the store on its own
      assert.equal(h.snapshots.length, before, "a status update is no change");
      assert.equal(h.locks.snapshot().items[0], first.items[0]);
      stream.event("ADDED", lock("c2", "prod", { resourceVersion: "3" }));
      const added = await h.until(
        "the added Lock",
        (s) => s.items.length === 2,
      );
      assert.deepEqual(lockIds(added), ["c1/team-a/prod", "c2/team-a/prod"]);
      stream.event("DELETED", lock("c1", "prod", { resourceVersion: "4" }));
      const deleted = await h.until(
        "the deleted Lock",
        (s) => s.items.length === 1,
      );
      assert.deepEqual(lockIds(deleted), ["c2/team-a/prod"]);
    },
  );
});

Deno.test("lockView() is synced once the Locks are listed, whether or not the rules are", async () => {
  const { promise: rulesListed, resolve: listRules } = Promise.withResolvers<
    void
  >();
  await withLocks(
    {
      locks: () => list([lock("c1", "prod")]),
      rules: async () => {
        await rulesListed;
        return list([]);
      },
    },
    async (h) => {
      const snapshot = await h.until("synced", (s) => s.synced);
      assert.equal(h.watcher.collectionSynced("locks"), true);
      assert.equal(
        h.watcher.collectionSynced("rules"),
        false,
        "the rules are still listed",
      );
      assert.equal(h.watcher.synced, false);
      assert.deepEqual(lockIds(snapshot), ["c1/team-a/prod"]);
      listRules();
      await waitUntil("the rules", () => h.watcher.collectionSynced("rules"));
      assert.equal(h.watcher.synced, true);
    },
  );
});

Deno.test("lockView() parses a Lock again once it is listed again, though its generation did not change", async () => {
  // A watch opened under an older Lock schema left spec.expiresAt out; the
  // relist shows the same version of the Lock with it.
  let listed = 0;
  const expiresAt = "2030-01-01T00:00:00Z";
  await withLocks(
    {
      locks: () => {
        listed++;
        const object = lock("c1", "prod", { generation: 1 });
        if (listed > 1) {
          (object.spec as Record<string, unknown>).expiresAt = expiresAt;
        }
        return list([object]);
      },
      relistIntervalMs: 50,
    },
    async (h) => {
      const first = await h.until("synced", (s) => s.synced);
      assert.equal(first.items[0]?.lock.spec.expiresAt, undefined);
      const relisted = await h.until(
        "the Lock with its expiry",
        (s) => s.items[0]?.lock.spec.expiresAt !== undefined,
      );
      assert.equal(relisted.items[0]?.lock.spec.expiresAt, expiresAt);
      assert.deepEqual(lockIds(relisted), ["c1/team-a/prod"]);
      assert.ok(h.watcher.lists("locks") >= 2);
    },
  );
});

Deno.test("lockView() without an endpoint slice is not synced", async () => {
  await withLocks(
    { locks: () => list([]) },
    async (h) => {
      await waitUntil(
        "an error naming the missing slice",
        () =>
          h.logs.some((r) =>
            r.level === "error" &&
            /APIExportEndpointSlice does not exist/.test(String(r.msg))
          ),
      );
      assert.equal(h.locks.snapshot().synced, false);
      assert.deepEqual(h.locks.snapshot().items, []);
    },
    () => list([]),
  );
});

Deno.test("LOCKS_PATH below an endpoint is the all-clusters Lock collection", () => {
  assert.equal(
    wildcardUrl(
      "https://kcp.example:6443/services/apiexport/root:dep/x/",
      LOCKS_PATH,
    ),
    "https://kcp.example:6443/services/apiexport/root:dep/x/clusters/*/apis/dependencies.opendefense.cloud/v1alpha1/locks",
  );
});
