/**
 * The index against a list: random histories of dependents created,
 * updated and deleted on two sources, delivered to the index late, in
 * bursts, with stale repeats, bookmarks, malformed objects, resyncs from a
 * snapshot of the live state, unsyncs and dropped sources. After every
 * step, for every object that could be under review, the index names
 * exactly the fields a list of what it was told would find, computed
 * independently with `referencesOf` (once a source is caught up, what it
 * was told is the live state, so this is what a list finds); and it claims
 * freshness at a resourceVersion only when every event up to it was
 * delivered.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseFieldPath, referencesOf } from "../rules/mod.ts";
import type { IndexedPath, IndexEvent, IndexHit } from "./kept.ts";
import { DependentsIndex } from "./dependents_index.ts";

const PATHS: readonly IndexedPath[] = [
  { fieldPath: parseFieldPath(".spec.vpcRef.name") },
  {
    fieldPath: parseFieldPath(".spec.nics[*].subnetRef.name"),
    namespacePath: parseFieldPath(".spec.nics[*].subnetRef.namespace"),
  },
  { fieldPath: parseFieldPath(".spec.groups[*].items[*].name") },
];

const SOURCES = ["s1", "s2"];
const CLUSTERS = ["C1", "C2"];
const NAMESPACES = ["", "n1", "n2"];
const NAMES = ["d1", "d2", "d3"];
const UIDS = ["u1", "u2"];
/** What a reference may say: targets, an empty name, odd strings, not a string. */
const TARGET_VALUES: unknown[] = ["t1", "t2", "", "t\u0000", 42];
/** What a namespace path may find. */
const NAMESPACE_VALUES: unknown[] = [undefined, "", "n1", "n2", "n3", null];
/** The objects a review may ask about. */
const QUERY_CLUSTERS = [...CLUSTERS, "C3"];
const QUERY_NAMESPACES = [undefined, "", "n1", "n2", "n3"];
const QUERY_NAMES = ["t1", "t2", "t\u0000", "d1"];

/** One step of a history. */
type Step =
  | {
    kind: "put";
    source: number;
    cluster: number;
    namespace: number;
    name: number;
    uid: number;
    deleting: boolean;
    spec: Record<string, unknown>;
  }
  | {
    kind: "delete";
    source: number;
    cluster: number;
    namespace: number;
    name: number;
  }
  | { kind: "bookmark"; source: number }
  | { kind: "noise"; source: number; object: unknown }
  | { kind: "deliver"; source: number; count: number }
  | { kind: "resync"; source: number; reverse: boolean }
  | { kind: "stale"; source: number; pick: number }
  | { kind: "unsync"; source: number }
  | { kind: "drop"; source: number };

const index = (n: number) => fc.nat({ max: n - 1 });
/** Mostly the two targets, so that dependents meet under them. */
const target = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...TARGET_VALUES.slice(0, 2)) },
  { weight: 2, arbitrary: fc.constantFrom(...TARGET_VALUES.slice(2)) },
);

const spec: fc.Arbitrary<Record<string, unknown>> = fc.record({
  vpcRef: fc.record({ name: target }),
  nics: fc.array(
    fc.record({
      subnetRef: fc.record({
        name: target,
        namespace: fc.constantFrom(...NAMESPACE_VALUES),
      }, { requiredKeys: ["name"] }),
    }),
    { maxLength: 3 },
  ),
  groups: fc.array(
    fc.record({
      items: fc.array(fc.record({ name: target }), { maxLength: 2 }),
    }),
    { maxLength: 2 },
  ),
}, { requiredKeys: [] });

const malformed = fc.constantFrom<unknown>(
  null,
  "x",
  [],
  { metadata: null },
  { metadata: { name: "" }, spec: { vpcRef: { name: "t1" } } },
  { metadata: { name: 3 }, spec: { vpcRef: { name: "t1" } } },
);

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("put" as const),
      source: index(SOURCES.length),
      cluster: index(CLUSTERS.length),
      namespace: index(NAMESPACES.length),
      name: index(NAMES.length),
      uid: index(UIDS.length),
      deleting: fc.boolean(),
      spec,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("delete" as const),
      source: index(SOURCES.length),
      cluster: index(CLUSTERS.length),
      namespace: index(NAMESPACES.length),
      name: index(NAMES.length),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("bookmark" as const),
      source: index(SOURCES.length),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("noise" as const),
      source: index(SOURCES.length),
      object: malformed,
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("deliver" as const),
      source: index(SOURCES.length),
      count: fc.integer({ min: 1, max: 6 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("resync" as const),
      source: index(SOURCES.length),
      reverse: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("stale" as const),
      source: index(SOURCES.length),
      pick: fc.nat(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("unsync" as const),
      source: index(SOURCES.length),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("drop" as const),
      source: index(SOURCES.length),
    }),
  },
);

/** A logged watch event and the resourceVersion it carries, if any. */
interface Logged {
  rv: number | undefined;
  event: IndexEvent;
}

/** One source as the server has it and as the index was told it. */
class ModelSource {
  /** The last resourceVersion the server gave. */
  counter = 0;
  /** The server's live objects by cluster/namespace/name. */
  readonly live = new Map<string, Record<string, unknown>>();
  /** Every watch event, in order. */
  readonly log: Logged[] = [];
  /** How many events of the log the index was told. */
  delivered = 0;
  /** The objects the index was told of, by key: what a list of them finds. */
  readonly told = new Map<string, Record<string, unknown>>();
  /** Earlier versions the index was told, by key, for stale repeats. */
  readonly history = new Map<string, IndexEvent[]>();
  /** Whether the index should call it synced. */
  synced = false;
  /** Dropped: nothing is delivered until the next resync. */
  dropped = false;
  /** The highest resourceVersion whose events the index was all told. */
  toldRv = 0;
}

function object(
  step: Extract<Step, { kind: "put" }>,
  rv: number,
): Record<string, unknown> {
  const namespace = NAMESPACES[step.namespace]!;
  return {
    metadata: {
      name: NAMES[step.name]!,
      ...(namespace === "" ? {} : { namespace }),
      uid: UIDS[step.uid]!,
      resourceVersion: String(rv),
      annotations: { "kcp.io/cluster": CLUSTERS[step.cluster]! },
      ...(step.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: structuredClone(step.spec),
  };
}

function key(cluster: number, namespace: number, name: number): string {
  return `${CLUSTERS[cluster]}/${NAMESPACES[namespace]}/${NAMES[name]}`;
}

function keyOf(o: Record<string, unknown>): string {
  const metadata = o.metadata as Record<string, unknown>;
  const annotations = metadata.annotations as Record<string, string>;
  return `${annotations["kcp.io/cluster"]}/${
    metadata.namespace ?? ""
  }/${metadata.name}`;
}

/** Tells the index the next logged event, as the model expects it to take it. */
function deliver(
  idx: DependentsIndex,
  name: string,
  source: ModelSource,
): void {
  const { rv, event } = source.log[source.delivered++]!;
  assert.equal(idx.apply(name, event), true);
  // A malformed object (no resourceVersion either) changes nothing.
  if (rv === undefined) return;
  const o = event.object as Record<string, unknown>;
  if (event.type === "ADDED" || event.type === "MODIFIED") {
    source.told.set(keyOf(o), o);
    const h = source.history.get(keyOf(o)) ?? [];
    h.push(event);
    source.history.set(keyOf(o), h);
  } else if (event.type === "DELETED" && source.told.has(keyOf(o))) {
    source.told.delete(keyOf(o));
    source.history.delete(keyOf(o));
  }
  source.toldRv = Math.max(source.toldRv, rv);
}

/** What a list of the objects the index was told finds for one object. */
function expected(
  sources: readonly ModelSource[],
  query: { cluster: string; namespace?: string; name: string },
): IndexHit[] {
  const hits: IndexHit[] = [];
  for (const source of sources) {
    for (const o of source.told.values()) {
      const metadata = o.metadata as Record<string, unknown>;
      const annotations = metadata.annotations as Record<string, string>;
      if (annotations["kcp.io/cluster"] !== query.cluster) continue;
      PATHS.forEach((path, p) => {
        for (const r of referencesOf(o, path)) {
          if (r.name !== query.name) continue;
          if (
            query.namespace !== undefined && r.namespace !== query.namespace
          ) {
            continue;
          }
          hits.push({
            cluster: query.cluster,
            namespace: (metadata.namespace as string | undefined) ?? "",
            name: metadata.name as string,
            uid: metadata.uid as string,
            resourceVersion: metadata.resourceVersion as string,
            deleting: metadata.deletionTimestamp !== undefined,
            path: p,
            indexes: r.indexes,
          });
        }
      });
    }
  }
  return hits;
}

function canonical(hits: readonly IndexHit[]): string[] {
  return hits.map((h) => JSON.stringify(h)).sort();
}

/** Whether `hits` is in (namespace, name, path, indexes) order. */
function sorted(hits: readonly IndexHit[]): boolean {
  const order = (
    h: IndexHit,
  ): unknown[] => [h.namespace, h.name, h.path, ...h.indexes];
  for (let i = 1; i < hits.length; i++) {
    const a = order(hits[i - 1]!);
    const b = order(hits[i]!);
    for (let j = 0; j < Math.max(a.length, b.length); j++) {
      if (a[j] === b[j]) continue;
      if (a[j] === undefined) break;
      if (b[j] === undefined || a[j]! > b[j]!) return false;
      break;
    }
  }
  return true;
}

function check(
  idx: DependentsIndex,
  sources: readonly ModelSource[],
  where: string,
): void {
  for (const cluster of QUERY_CLUSTERS) {
    for (const namespace of QUERY_NAMESPACES) {
      for (const name of QUERY_NAMES) {
        const query = {
          cluster,
          name,
          ...(namespace === undefined ? {} : { namespace }),
        };
        const hits = idx.referrers(query);
        assert.deepEqual(
          canonical(hits),
          canonical(expected(sources, query)),
          `${where}: ${JSON.stringify(query)}`,
        );
        assert.ok(sorted(hits), `${where}: order of ${JSON.stringify(query)}`);
      }
    }
  }
  for (const source of sources) {
    // Caught up, what the index was told is the live state: the list.
    if (!source.dropped && source.delivered === source.log.length) {
      assert.deepEqual(source.told, source.live, `${where}: model`);
    }
  }
  let kept = 0;
  for (const source of sources) {
    for (const o of source.told.values()) {
      if (PATHS.some((p) => referencesOf(o, p).length > 0)) kept++;
    }
  }
  assert.equal(idx.size, kept, `${where}: size`);
  SOURCES.forEach((name, s) => {
    const source = sources[s]!;
    assert.equal(idx.synced(name), source.synced, `${where}: synced(${name})`);
    for (let rv = 0; rv <= source.counter + 1; rv++) {
      if (idx.freshAt(name, String(rv))) {
        assert.ok(
          source.synced && rv <= source.toldRv,
          `${where}: freshAt(${name}, ${rv}) though told up to ${source.toldRv}`,
        );
        assert.ok(
          source.log.every((e, i) =>
            e.rv === undefined || e.rv > rv || i < source.delivered
          ),
          `${where}: freshAt(${name}, ${rv}) with an event up to it not told`,
        );
      }
    }
    if (source.synced && source.delivered === source.log.length) {
      assert.equal(
        idx.freshAt(name, String(source.counter)),
        true,
        `${where}: ${name} caught up at ${source.counter} yet not fresh`,
      );
    }
  });
}

function run(steps: readonly Step[]): void {
  const idx = new DependentsIndex(PATHS, { maxDependents: 1_000 });
  const sources = SOURCES.map(() => new ModelSource());
  steps.forEach((step, n) => {
    const name = SOURCES[step.source]!;
    const source = sources[step.source]!;
    const where = `step ${n} (${step.kind} ${name})`;
    switch (step.kind) {
      case "put": {
        const k = key(step.cluster, step.namespace, step.name);
        const o = object(step, ++source.counter);
        const type = source.live.has(k) ? "MODIFIED" : "ADDED";
        source.live.set(k, o);
        source.log.push({ rv: source.counter, event: { type, object: o } });
        break;
      }
      case "delete": {
        const k = key(step.cluster, step.namespace, step.name);
        const was = source.live.get(k);
        // A DELETED of an object never seen is logged too: the index ignores it.
        const o = structuredClone(
          was ?? object({
            kind: "put",
            source: step.source,
            cluster: step.cluster,
            namespace: step.namespace,
            name: step.name,
            uid: 0,
            deleting: false,
            spec: {},
          }, 0),
        );
        (o.metadata as Record<string, unknown>).resourceVersion = String(
          ++source.counter,
        );
        source.live.delete(k);
        source.log.push({
          rv: source.counter,
          event: { type: "DELETED", object: o },
        });
        break;
      }
      case "bookmark":
        source.log.push({
          rv: ++source.counter,
          event: {
            type: "BOOKMARK",
            object: { metadata: { resourceVersion: String(source.counter) } },
          },
        });
        break;
      case "noise":
        source.log.push({
          rv: undefined,
          event: { type: "MODIFIED", object: step.object },
        });
        break;
      case "deliver":
        if (source.dropped) break;
        for (
          let i = 0;
          i < step.count && source.delivered < source.log.length;
          i++
        ) deliver(idx, name, source);
        break;
      case "resync": {
        idx.startResync(name);
        assert.equal(idx.synced(name), false, where);
        const listed = [...source.live.values()];
        if (step.reverse) listed.reverse();
        for (const o of listed) assert.equal(idx.upsert(name, o), true, where);
        idx.finishResync(name, String(source.counter));
        source.told.clear();
        source.history.clear();
        for (const o of listed) {
          source.told.set(keyOf(o), o);
          source.history.set(keyOf(o), [{ type: "ADDED", object: o }]);
        }
        source.delivered = source.log.length;
        source.toldRv = source.counter;
        source.synced = true;
        source.dropped = false;
        break;
      }
      case "stale": {
        // An earlier version of an object the index keeps, told again. Of
        // an object it does not keep (deleted, or without references) it
        // knows no version to judge by, and a watch never repeats one.
        const older: IndexEvent[] = [];
        for (const [k, h] of source.history) {
          const now = source.told.get(k);
          if (now === undefined) continue;
          if (!PATHS.some((p) => referencesOf(now, p).length > 0)) continue;
          older.push(...h.slice(0, -1));
        }
        if (older.length === 0 || source.dropped) break;
        const again = older[step.pick % older.length]!;
        const type = step.pick % 3 === 0 ? "DELETED" : again.type;
        assert.equal(idx.apply(name, { type, object: again.object }), true);
        break;
      }
      case "unsync":
        idx.unsync(name);
        source.synced = false;
        break;
      case "drop":
        idx.dropSource(name);
        source.told.clear();
        source.history.clear();
        source.synced = false;
        source.dropped = true;
        source.toldRv = 0;
        break;
    }
    check(idx, sources, where);
  });
  assert.equal(idx.overflowed, false);
}

Deno.test("DependentsIndex names exactly what a list of what it was told finds, and claims freshness only when told everything", () => {
  fc.assert(
    fc.property(
      fc.array(step, { minLength: 1, maxLength: 80, size: "max" }),
      run,
    ),
    { numRuns: 200 },
  );
});

Deno.test("DependentsIndex agrees with a list on a history that resyncs and repeats itself", () => {
  const put = (
    source: number,
    name: number,
    spec: Record<string, unknown>,
  ): Step => ({
    kind: "put",
    source,
    cluster: 0,
    namespace: 1,
    name,
    uid: 0,
    deleting: false,
    spec,
  });
  run([
    put(0, 0, { vpcRef: { name: "t1" } }),
    put(0, 0, { nics: [{ subnetRef: { name: "t1", namespace: "n2" } }] }),
    { kind: "deliver", source: 0, count: 1 },
    { kind: "resync", source: 0, reverse: false },
    put(0, 1, { groups: [{ items: [{ name: "t2" }, { name: "t2" }] }] }),
    { kind: "deliver", source: 0, count: 1 },
    put(0, 1, { vpcRef: { name: "t2" } }),
    { kind: "deliver", source: 0, count: 1 },
    { kind: "stale", source: 0, pick: 1 },
    { kind: "stale", source: 0, pick: 0 },
    { kind: "bookmark", source: 0 },
    { kind: "delete", source: 0, cluster: 0, namespace: 1, name: 2 },
    { kind: "deliver", source: 0, count: 6 },
    { kind: "unsync", source: 0 },
    { kind: "resync", source: 1, reverse: true },
    { kind: "drop", source: 0 },
    { kind: "resync", source: 0, reverse: true },
  ]);
});
