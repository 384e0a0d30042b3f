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
  ExportWatcher,
  KubeClient,
  type KubeObject,
  wildcardUrl,
} from "../kcp/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import {
  RULES_PATH,
  type RuleSnapshot,
  ruleSnapshot,
  ruleView,
} from "./rule_watcher.ts";

const EXPORT = "dependencies.opendefense.cloud";
const RULES_SUFFIX =
  "/clusters/*/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules";
/** Virtual-workspace paths of two endpoints (on the fake server). */
const E1 = `/services/apiexport/ws-a/${EXPORT}`;
const E2 = `/services/apiexport/ws-b/${EXPORT}`;

function rule(
  cluster: string,
  name: string,
  resourceVersion = "1",
  dependentVersion = "v1",
): KubeObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: {
      name,
      resourceVersion,
      annotations: { "kcp.io/cluster": cluster },
    },
    spec: {
      dependent: {
        apiExportName: "compute.test.io",
        group: "compute.test.io",
        version: dependentVersion,
        kind: "VirtualMachine",
        resource: "virtualmachines",
      },
      dependencies: [{
        apiExportRef: { path: "root:network", name: "network.test.io" },
        group: "network.test.io",
        version: "v1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpcRef.name" },
      }],
    },
  };
}

interface Harness {
  api: FakeApi;
  /** The export watcher of the rules collection alone. */
  watcher: ExportWatcher<"rules">;
  /** The rule view's current snapshot. */
  snapshot: () => RuleSnapshot;
  /** Every changed snapshot, as the watcher's onChange found it, in order. */
  snapshots: RuleSnapshot[];
  logs: Record<string, unknown>[];
  /** Lists and watches received for a path. */
  lists: (path: string) => number;
  /** The n-th watch stream (from 0) of a path, once requested. */
  stream: (path: string, n?: number) => Promise<EventStream>;
  /** Waits until the latest snapshot satisfies `check`. */
  until: (what: string, check: (s: RuleSnapshot) => boolean) => Promise<
    RuleSnapshot
  >;
}

/**
 * Runs an ExportWatcher of the rules and a rule view of it, as the webhook
 * does, against a fake server that serves the endpoint slice
 * (`sliceList`) and, for each endpoint path, `rules[path]` (a list body or
 * a promise of one).
 */
async function withWatcher(
  sliceList: (base: string) => unknown,
  rules: Record<string, () => unknown>,
  fn: (h: Harness) => Promise<void>,
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
        return json({ message: "wrong field selector" }, 400);
      }
      body = watch ? undefined : sliceList(api.url);
    } else {
      const endpoint = Object.keys(rules).find((e) =>
        path === `${e}${RULES_SUFFIX}`
      );
      if (endpoint === undefined) return json({ message: "no such path" }, 404);
      body = watch ? undefined : await rules[endpoint]!();
    }
    if (watch) {
      const stream = api.stream();
      streams.set(path, [...(streams.get(path) ?? []), stream]);
      return streamed(stream);
    }
    lists.set(path, (lists.get(path) ?? 0) + 1);
    return json(body);
  });
  const client = new KubeClient(connection(api.url));
  const logs = logCollector();
  const snapshots: RuleSnapshot[] = [];
  const log = createLogger({ level: "debug", write: logs.write });
  const watcher = new ExportWatcher({
    client,
    workspaceUrl: `${api.url}${DEP_CTRL_PATH}`,
    apiExportName: EXPORT,
    collections: { rules: { path: RULES_PATH } },
    log,
    onChange: () => {
      const changed = view.changed();
      if (changed !== undefined) snapshots.push(ruleSnapshot(changed));
    },
    backoff: { initialMs: 5, maxMs: 10 },
  });
  const view = ruleView(watcher, { collection: "rules", log });
  const full = (path: string) =>
    path === SLICE_PATH ? path : `${path}${RULES_SUFFIX}`;
  try {
    watcher.start();
    await fn({
      api,
      watcher,
      snapshot: () => ruleSnapshot(view.snapshot()),
      snapshots,
      logs: logs.records,
      lists: (path) => lists.get(full(path)) ?? 0,
      stream: async (path, n = 0) => {
        await waitUntil(
          `watch ${n} of ${path}`,
          () => (streams.get(full(path))?.length ?? 0) > n,
        );
        return streams.get(full(path))![n]!;
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

function ruleIds(snapshot: RuleSnapshot): string[] {
  return snapshot.rules.map((r) => `${r.cluster}/${r.rule.metadata.name}`)
    .sort();
}

function list(items: unknown[], resourceVersion = "100") {
  return { metadata: { resourceVersion }, items };
}

Deno.test("ruleView() snapshots become synced with the valid rules and list an invalid rule", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    {
      [E1]: () =>
        list([
          rule("c1", "r1"),
          rule("c1", "bad", "7", "v0"),
          rule("c2", "r2"),
        ]),
    },
    async (h) => {
      const snapshot = await h.until("synced", (s) => s.synced);
      assert.deepEqual(ruleIds(snapshot), ["c1/r1", "c2/r2"]);
      assert.equal(snapshot.invalid.length, 1);
      const [invalid] = snapshot.invalid;
      assert.equal(invalid?.cluster, "c1");
      assert.equal(invalid?.name, "bad");
      assert.match(
        invalid?.error ?? "",
        /spec\.dependent\.version: .*current value is 'v0'/,
      );
      assert.deepEqual(snapshot.endpoints, [`${h.api.url}${E1}`]);
      assert.equal(h.watcher.collectionSynced("rules"), true);
      assert.deepEqual(h.snapshot(), snapshot);
      const rule1 = snapshot.rules.find((r) => r.rule.metadata.name === "r1");
      assert.equal(rule1?.rule.spec.dependent.kind, "VirtualMachine");
    },
  );
});

Deno.test("ruleView() logs an invalid rule once per resource version", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    { [E1]: () => list([rule("c1", "bad", "7", "v0")]) },
    async (h) => {
      await h.until("synced", (s) => s.synced);
      const warnings = () =>
        h.logs.filter((r) => r.msg === "ignoring invalid DependencyRule");
      // More snapshots of the same invalid rule.
      h.snapshot();
      h.snapshot();
      const stream = await h.stream(E1);
      stream.event("ADDED", rule("c1", "ok", "8"));
      await h.until("the new rule", (s) => s.rules.length === 1);
      assert.equal(warnings().length, 1);
      assert.equal(warnings()[0]?.level, "warn");
      assert.equal(warnings()[0]?.cluster, "c1");
      assert.equal(warnings()[0]?.name, "bad");
      assert.match(String(warnings()[0]?.error), /'v0'/);
      // A new resource version of the still invalid rule is reported again.
      stream.event("MODIFIED", rule("c1", "bad", "9", "v0beta"));
      await waitUntil("the second warning", () => warnings().length === 2);
      assert.match(String(warnings()[1]?.error), /'v0beta'/);
      // A fixed rule moves from invalid to rules.
      stream.event("MODIFIED", rule("c1", "bad", "10"));
      const fixed = await h.until(
        "the fixed rule",
        (s) => s.rules.length === 2,
      );
      assert.deepEqual(fixed.invalid, []);
      assert.equal(warnings().length, 2);
    },
  );
});

Deno.test("ruleView() follows the endpoints as the endpoint slice changes", async () => {
  let releaseE2!: () => void;
  const e2Listed = new Promise<void>((resolve) => releaseE2 = resolve);
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    {
      [E1]: () => list([rule("c1", "r1")]),
      [E2]: async () => {
        await e2Listed;
        return list([rule("c2", "r2")]);
      },
    },
    async (h) => {
      const first = await h.until("synced", (s) => s.synced);
      assert.deepEqual(ruleIds(first), ["c1/r1"]);
      assert.equal(h.lists(E2), 0);
      const sliceStream = await h.stream(SLICE_PATH);
      const e1Stream = await h.stream(E1);

      sliceStream.event(
        "MODIFIED",
        endpointSlice(h.api.url, [E1, E2], { resourceVersion: "2" }),
      );
      await waitUntil(
        "the list of E2",
        () => h.api.seen(`${E2}${RULES_SUFFIX}`).length === 1,
      );
      const pending = h.snapshot();
      assert.equal(pending.synced, false, "not synced until E2 is listed");
      assert.deepEqual(pending.endpoints, [
        `${h.api.url}${E1}`,
        `${h.api.url}${E2}`,
      ]);
      releaseE2();
      const both = await h.until(
        "rules of both endpoints",
        (s) => s.synced && s.rules.length === 2,
      );
      assert.deepEqual(ruleIds(both), ["c1/r1", "c2/r2"]);
      assert.equal(h.lists(E2), 1);

      sliceStream.event(
        "MODIFIED",
        endpointSlice(h.api.url, [E2], { resourceVersion: "3" }),
      );
      const onlyE2 = await h.until(
        "E1 dropped",
        (s) => s.endpoints.length === 1,
      );
      assert.deepEqual(onlyE2.endpoints, [`${h.api.url}${E2}`]);
      assert.deepEqual(ruleIds(onlyE2), ["c2/r2"]);
      assert.equal(onlyE2.synced, true);
      await e1Stream.closed;
      assert.equal(e1Stream.cancelled, true, "E1's watch is closed");

      const messages = h.logs.map((r) => `${r.msg} ${r.url}`);
      assert.ok(
        messages.includes(
          `endpoint added, watching it ${h.api.url}${E2}`,
        ),
      );
      assert.ok(
        messages.includes(
          `endpoint removed, no longer watching it ${h.api.url}${E1}`,
        ),
      );
    },
  );
});

Deno.test("ruleView() shows the final state after a burst of events, changed at most once per change", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    { [E1]: () => list([]) },
    async (h) => {
      await h.until("synced", (s) => s.synced);
      const before = h.snapshots.length;
      const stream = await h.stream(E1);
      // Five events in one chunk.
      stream.send(
        [1, 2, 3, 4, 5].map((n) =>
          `${
            JSON.stringify({
              type: "ADDED",
              object: rule("c1", `r${n}`, String(100 + n)),
            })
          }\n`
        ).join(""),
      );
      const last = await h.until("five rules", (s) => s.rules.length === 5);
      assert.deepEqual(ruleIds(last), [
        "c1/r1",
        "c1/r2",
        "c1/r3",
        "c1/r4",
        "c1/r5",
      ]);
      const calls = h.snapshots.length - before;
      assert.ok(calls >= 1 && calls <= 5, `onChange called ${calls} times`);
    },
  );
});

Deno.test("ruleView().changed() does not report a status update (same generation), and reports a spec change", async () => {
  const withGeneration = (resourceVersion: string, generation: number) => {
    const object = rule("c1", "r1", resourceVersion);
    object.metadata!.generation = generation;
    object.metadata!.uid = "uid-1";
    return object;
  };
  await withWatcher(
    (base) => list([endpointSlice(base, [E1])]),
    { [E1]: () => list([withGeneration("1", 1)]) },
    async (h) => {
      const first = await h.until("the rule", (s) => s.rules.length === 1);
      const before = h.snapshots.length;
      const stream = await h.stream(E1);
      const status = withGeneration("2", 1);
      status.status = { conditions: [] };
      stream.event("MODIFIED", status);
      await delay(50); // lets the status update reach the store on its own
      // A spec change after it: the watcher reports that one.
      const changed = withGeneration("3", 2);
      (changed.spec as { dependencies: { fieldRef: { path: string } }[] })
        .dependencies[0]!.fieldRef.path = ".spec.otherRef.name";
      stream.event("MODIFIED", changed);
      const last = await h.until(
        "the spec change",
        (s) =>
          s.rules[0]?.rule.spec.dependencies[0]?.fieldRef.path ===
            ".spec.otherRef.name",
      );
      // Every snapshot reported after the first names the changed spec:
      // the status update alone reported nothing.
      const reported = h.snapshots.slice(before);
      assert.ok(reported.length >= 1);
      for (const snapshot of reported) {
        assert.notEqual(snapshot.rules[0], first.rules[0]);
        assert.equal(
          snapshot.rules[0]?.rule.spec.dependencies[0]?.fieldRef.path,
          ".spec.otherRef.name",
        );
      }
      assert.equal(last.rules.length, 1);
    },
  );
});

Deno.test("ruleView() with a slice that lists no endpoints is synced with no rules", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [])]),
    {},
    async (h) => {
      const snapshot = await h.until("synced", (s) => s.synced);
      assert.deepEqual(snapshot, {
        rules: [],
        invalid: [],
        synced: true,
        endpoints: [],
      });
    },
  );
});

Deno.test("ruleView() shows no endpoints once its watcher stopped, which closes the watches and changes nothing more", async () => {
  await withWatcher(
    (base) => list([endpointSlice(base, [E1, E2])]),
    { [E1]: () => list([rule("c1", "r1")]), [E2]: () => list([]) },
    async (h) => {
      await h.until("synced", (s) => s.synced);
      const streams = await Promise.all([
        h.stream(SLICE_PATH),
        h.stream(E1),
        h.stream(E2),
      ]);
      await h.watcher.stop();
      await Promise.all(streams.map((s) => s.closed));
      assert.deepEqual(streams.map((s) => s.cancelled), [true, true, true]);
      const calls = h.snapshots.length;
      await Promise.resolve();
      assert.equal(h.snapshots.length, calls);
      assert.deepEqual(h.snapshot().endpoints, []);
    },
  );
});

Deno.test("RULES_PATH below an endpoint is the all-clusters DependencyRule collection", () => {
  assert.equal(
    wildcardUrl(
      "https://kcp.example:6443/services/apiexport/root:dep/x/",
      RULES_PATH,
    ),
    "https://kcp.example:6443/services/apiexport/root:dep/x/clusters/*/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules",
  );
});

Deno.test("ruleView() without an endpoint slice stays unsynced and says why", async () => {
  await withWatcher(
    () => list([]),
    {},
    async (h) => {
      await waitUntil("the slice to be listed", () => h.lists(SLICE_PATH) > 0);
      await waitUntil(
        "an error naming the missing slice",
        () =>
          h.logs.some((r) =>
            r.level === "error" &&
            /APIExportEndpointSlice does not exist/.test(String(r.msg))
          ),
      );
      assert.equal(h.watcher.collectionSynced("rules"), false);
      assert.equal(h.snapshot().synced, false);
    },
  );
});
