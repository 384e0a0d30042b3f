import assert from "node:assert/strict";
import { parseFieldPath } from "../rules/mod.ts";
import type { IndexedPath, IndexEvent, IndexHit } from "./kept.ts";
import { DependentsIndex } from "./dependents_index.ts";
import { IndexBudget } from "./index_budget.ts";

const VPC: IndexedPath = { fieldPath: parseFieldPath(".spec.vpcRef.name") };
const NICS: IndexedPath = {
  fieldPath: parseFieldPath(".spec.nics[*].subnetRef.name"),
  namespacePath: parseFieldPath(".spec.nics[*].subnetRef.namespace"),
};
const PATHS = [VPC, NICS];

/** A dependent as a watch gives it. */
interface Vm {
  name: string;
  cluster?: string;
  namespace?: string;
  uid?: string;
  rv?: string;
  vpc?: unknown;
  nics?: unknown;
  deleting?: string;
}

function vm(v: Vm): Record<string, unknown> {
  return {
    metadata: {
      name: v.name,
      ...(v.namespace === undefined ? {} : { namespace: v.namespace }),
      uid: v.uid ?? `uid-${v.name}`,
      resourceVersion: v.rv ?? "1",
      annotations: { "kcp.io/cluster": v.cluster ?? "C" },
      ...(v.deleting === undefined ? {} : { deletionTimestamp: v.deleting }),
    },
    spec: {
      ...(v.vpc === undefined ? {} : { vpcRef: { name: v.vpc } }),
      ...(v.nics === undefined ? {} : { nics: v.nics }),
    },
  };
}

function event(type: IndexEvent["type"], v: Vm): IndexEvent {
  return { type, object: vm(v) };
}

function bookmark(rv: string): IndexEvent {
  return { type: "BOOKMARK", object: { metadata: { resourceVersion: rv } } };
}

function hit(
  v: Vm,
  path = 0,
  indexes: readonly number[] = [],
): IndexHit {
  return {
    cluster: v.cluster ?? "C",
    namespace: v.namespace ?? "",
    name: v.name,
    uid: v.uid ?? `uid-${v.name}`,
    resourceVersion: v.rv ?? "1",
    deleting: v.deleting !== undefined && v.deleting !== "",
    path,
    indexes,
  };
}

/** An index with source "s" synced at rv "1" over `objects`. */
function listed(
  objects: readonly Vm[],
  max = 1000,
  paths: readonly IndexedPath[] = PATHS,
): DependentsIndex {
  const index = new DependentsIndex(paths, { maxDependents: max });
  index.startResync("s");
  for (const o of objects) assert.equal(index.upsert("s", vm(o)), true);
  index.finishResync("s", "1");
  return index;
}

/** The names of the dependents referring to `name` in namespace `ns` of cluster C. */
function names(
  index: DependentsIndex,
  name: string,
  namespace?: string,
  cluster = "C",
): string[] {
  return index.referrers({
    cluster,
    name,
    ...(namespace === undefined ? {} : { namespace }),
  }).map((h) => h.name);
}

Deno.test("DependentsIndex keeps a list and answers who refers to an object", async (t) => {
  await t.step(
    "a resync makes the source synced at the list's watermark",
    () => {
      const index = new DependentsIndex(PATHS, { maxDependents: 10 });
      assert.equal(index.synced("s"), false);
      assert.equal(index.watermark("s"), undefined);
      index.startResync("s");
      const a = { name: "vm-a", namespace: "ns", vpc: "vpc-1", rv: "5" };
      assert.equal(index.upsert("s", vm(a)), true);
      assert.equal(index.synced("s"), false);
      index.finishResync("s", "7");
      assert.equal(index.synced("s"), true);
      assert.equal(index.watermark("s"), "7");
      assert.equal(index.size, 1);
      assert.deepEqual(
        index.referrers({ cluster: "C", namespace: "ns", name: "vpc-1" }),
        [
          hit(a),
        ],
      );
      assert.deepEqual(index.paths, PATHS);
    },
  );

  await t.step("a dependent without references is not kept", () => {
    const index = listed([
      { name: "vm-a", namespace: "ns" },
      { name: "vm-b", namespace: "ns", vpc: "" },
      { name: "vm-c", namespace: "ns", vpc: 42 },
    ]);
    assert.equal(index.size, 0);
  });

  await t.step(
    "the deletionTimestamp shows as deleting, an empty one does not",
    () => {
      const index = listed([
        {
          name: "vm-a",
          namespace: "ns",
          vpc: "v",
          deleting: "2026-01-01T00:00:00Z",
        },
        { name: "vm-b", namespace: "ns", vpc: "v", deleting: "" },
      ]);
      assert.deepEqual(
        index.referrers({ cluster: "C", namespace: "ns", name: "v" }).map((
          h,
        ) => [
          h.name,
          h.deleting,
        ]),
        [["vm-a", true], ["vm-b", false]],
      );
    },
  );

  await t.step(
    "the cluster comes from kcp.io/cluster, and other clusters never answer",
    () => {
      const index = listed([
        { name: "vm-a", namespace: "ns", vpc: "v", cluster: "C" },
        { name: "vm-b", namespace: "ns", vpc: "v", cluster: "D" },
      ]);
      assert.deepEqual(names(index, "v", "ns", "C"), ["vm-a"]);
      assert.deepEqual(names(index, "v", "ns", "D"), ["vm-b"]);
      assert.deepEqual(names(index, "v", undefined, "D"), ["vm-b"]);
      assert.deepEqual(names(index, "v", "ns", "E"), []);
    },
  );
});

Deno.test("DependentsIndex follows watch events", async (t) => {
  await t.step("MODIFIED moves a reference: the old target loses it", () => {
    const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v1" }]);
    assert.equal(
      index.apply(
        "s",
        event("MODIFIED", {
          name: "vm-a",
          namespace: "ns",
          vpc: "v2",
          rv: "2",
        }),
      ),
      true,
    );
    assert.deepEqual(names(index, "v1", "ns"), []);
    assert.deepEqual(names(index, "v1"), []);
    assert.deepEqual(names(index, "v2", "ns"), ["vm-a"]);
    assert.equal(index.size, 1);
    assert.equal(index.watermark("s"), "2");
  });

  await t.step(
    "MODIFIED that removes the last reference drops the dependent",
    () => {
      const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v1" }]);
      index.apply(
        "s",
        event("MODIFIED", { name: "vm-a", namespace: "ns", rv: "2" }),
      );
      assert.equal(index.size, 0);
      assert.deepEqual(names(index, "v1"), []);
      index.apply(
        "s",
        event("MODIFIED", {
          name: "vm-a",
          namespace: "ns",
          vpc: "v3",
          rv: "3",
        }),
      );
      assert.equal(index.size, 1);
      assert.deepEqual(names(index, "v3", "ns"), ["vm-a"]);
    },
  );

  await t.step("MODIFIED updates uid, resourceVersion and deleting", () => {
    const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
    const later = {
      name: "vm-a",
      namespace: "ns",
      vpc: "v",
      rv: "3",
      uid: "other",
      deleting: "2026-01-01T00:00:00Z",
    };
    index.apply("s", event("MODIFIED", later));
    assert.deepEqual(
      index.referrers({ cluster: "C", namespace: "ns", name: "v" }),
      [
        hit(later),
      ],
    );
  });

  await t.step(
    "ADDED of a new dependent, DELETED of it and of unknown ones",
    () => {
      const index = listed([]);
      index.apply(
        "s",
        event("ADDED", { name: "vm-a", namespace: "ns", vpc: "v", rv: "2" }),
      );
      assert.deepEqual(names(index, "v", "ns"), ["vm-a"]);
      assert.equal(
        index.apply(
          "s",
          event("DELETED", {
            name: "vm-x",
            namespace: "ns",
            vpc: "v",
            rv: "3",
          }),
        ),
        true,
      );
      assert.deepEqual(names(index, "v", "ns"), ["vm-a"]);
      index.apply(
        "s",
        event("DELETED", { name: "vm-a", namespace: "ns", vpc: "v", rv: "4" }),
      );
      assert.deepEqual(names(index, "v", "ns"), []);
      assert.equal(index.size, 0);
      assert.equal(index.watermark("s"), "4");
    },
  );

  await t.step(
    "DELETED reads only the identity: its references need not match",
    () => {
      const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
      index.apply("s", {
        type: "DELETED",
        object: {
          metadata: {
            name: "vm-a",
            namespace: "ns",
            resourceVersion: "2",
            annotations: { "kcp.io/cluster": "C" },
          },
        },
      });
      assert.equal(index.size, 0);
    },
  );

  await t.step(
    "an event older than the kept version changes nothing, nor the watermark",
    () => {
      const index = listed([]);
      const now = { name: "vm-a", namespace: "ns", vpc: "v2", rv: "10" };
      index.apply("s", event("ADDED", now));
      index.apply("s", event("MODIFIED", { ...now, vpc: "v1", rv: "9" }));
      assert.deepEqual(names(index, "v1"), []);
      assert.deepEqual(index.referrers({ cluster: "C", name: "v2" }), [
        hit(now),
      ]);
      index.apply("s", event("MODIFIED", { ...now, vpc: undefined, rv: "8" }));
      index.apply("s", event("DELETED", { ...now, rv: "9" }));
      assert.deepEqual(index.referrers({ cluster: "C", name: "v2" }), [
        hit(now),
      ]);
      assert.equal(index.watermark("s"), "10");
      assert.equal(index.freshAt("s", "10"), true);
    },
  );

  await t.step("versions compare as integers, not as text", () => {
    const index = listed([]);
    const now = { name: "vm-a", namespace: "ns", vpc: "v1", rv: "9" };
    index.apply("s", event("ADDED", now));
    index.apply("s", event("MODIFIED", { ...now, vpc: "v2", rv: "10" }));
    assert.deepEqual(names(index, "v2"), ["vm-a"]);
    assert.equal(index.watermark("s"), "10");
    index.apply("s", bookmark("9"));
    assert.equal(index.watermark("s"), "10");
    index.apply("s", event("MODIFIED", { ...now, vpc: "v3", rv: "0011" }));
    assert.deepEqual(names(index, "v3"), ["vm-a"]);
    assert.equal(index.watermark("s"), "0011");
    assert.equal(index.freshAt("s", "11"), true);
    assert.equal(index.freshAt("s", "12"), false);
  });

  await t.step(
    "a version that is not a decimal is applied, and never stale",
    () => {
      const index = listed([]);
      const now = { name: "vm-a", namespace: "ns", vpc: "v1", rv: "9" };
      index.apply("s", event("ADDED", now));
      index.apply("s", event("MODIFIED", { ...now, vpc: "v2", rv: "opaque" }));
      assert.deepEqual(names(index, "v2"), ["vm-a"]);
      assert.equal(index.watermark("s"), "opaque");
      assert.equal(index.freshAt("s", "1"), false);
      index.apply("s", event("MODIFIED", { ...now, vpc: "v3", rv: "3" }));
      assert.deepEqual(names(index, "v3"), ["vm-a"]);
      assert.equal(index.watermark("s"), "3");
    },
  );

  await t.step("BOOKMARK moves only the watermark, and never back", () => {
    const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
    assert.equal(index.apply("s", bookmark("20")), true);
    assert.equal(index.watermark("s"), "20");
    assert.equal(index.size, 1);
    index.apply("s", bookmark("15"));
    assert.equal(index.watermark("s"), "20");
    index.apply("s", { type: "BOOKMARK", object: { metadata: {} } });
    index.apply("s", {
      type: "BOOKMARK",
      object: { metadata: { resourceVersion: 30 } },
    });
    index.apply("s", { type: "BOOKMARK", object: null });
    assert.equal(index.watermark("s"), "20");
    assert.deepEqual(names(index, "v", "ns"), ["vm-a"]);
  });

  await t.step(
    "an event of another type, or not an event, changes nothing",
    () => {
      const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
      const error = {
        type: "ERROR",
        object: { metadata: { resourceVersion: "50" } },
      };
      assert.equal(index.apply("s", error as unknown as IndexEvent), true);
      assert.equal(index.apply("s", null as unknown as IndexEvent), true);
      assert.equal(index.apply("s", "x" as unknown as IndexEvent), true);
      assert.equal(index.watermark("s"), "1");
      assert.equal(index.size, 1);
    },
  );
});

Deno.test("DependentsIndex resyncs, unsyncs and drops sources", async (t) => {
  await t.step("a resync drops what the new list did not have", () => {
    const index = listed([
      { name: "vm-a", namespace: "ns", vpc: "v" },
      { name: "vm-b", namespace: "ns", vpc: "v" },
    ]);
    index.startResync("s");
    assert.equal(index.synced("s"), false);
    assert.equal(index.freshAt("s", "1"), false);
    index.upsert("s", vm({ name: "vm-b", namespace: "ns", vpc: "v", rv: "3" }));
    index.upsert("s", vm({ name: "vm-c", namespace: "ns", vpc: "v", rv: "4" }));
    // Until it ends, what the source had is still answered.
    assert.deepEqual(names(index, "v", "ns"), ["vm-a", "vm-b", "vm-c"]);
    index.finishResync("s", "5");
    assert.deepEqual(names(index, "v", "ns"), ["vm-b", "vm-c"]);
    assert.equal(index.size, 2);
    assert.equal(index.synced("s"), true);
    assert.equal(index.freshAt("s", "5"), true);
  });

  await t.step(
    "a resync keeps the newer kept version of a listed object",
    () => {
      const index = listed([]);
      index.apply(
        "s",
        event("ADDED", { name: "vm-a", namespace: "ns", vpc: "new", rv: "9" }),
      );
      index.startResync("s");
      index.upsert(
        "s",
        vm({ name: "vm-a", namespace: "ns", vpc: "old", rv: "8" }),
      );
      index.finishResync("s", "8");
      assert.deepEqual(names(index, "new"), ["vm-a"]);
      assert.deepEqual(names(index, "old"), []);
    },
  );

  await t.step(
    "the list's watermark stands even when lower than before",
    () => {
      const index = listed([]);
      index.apply("s", bookmark("100"));
      index.startResync("s");
      index.finishResync("s", "90");
      assert.equal(index.watermark("s"), "90");
      assert.equal(index.freshAt("s", "95"), false);
      assert.equal(index.freshAt("s", "90"), true);
    },
  );

  await t.step("a resync drops one source's objects only", () => {
    const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
    index.startResync("t");
    index.upsert("t", vm({ name: "vm-a", namespace: "ns", vpc: "v" }));
    index.finishResync("t", "3");
    index.startResync("s");
    index.finishResync("s", "2");
    assert.deepEqual(names(index, "v", "ns"), ["vm-a"]);
    assert.equal(index.size, 1);
  });

  await t.step("unsync keeps the objects but no freshness", () => {
    const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
    index.apply("s", bookmark("4"));
    index.unsync("s");
    index.unsync("unknown");
    assert.equal(index.synced("s"), false);
    assert.equal(index.freshAt("s", "1"), false);
    assert.equal(index.watermark("s"), "4");
    assert.deepEqual(names(index, "v", "ns"), ["vm-a"]);
    index.startResync("s");
    index.upsert("s", vm({ name: "vm-a", namespace: "ns", vpc: "v" }));
    index.finishResync("s", "6");
    assert.equal(index.freshAt("s", "6"), true);
  });

  await t.step("dropSource forgets the source and only it", () => {
    const index = listed([
      { name: "vm-a", namespace: "ns", vpc: "v" },
      { name: "vm-b", namespace: "ns", nics: [{ subnetRef: { name: "v" } }] },
    ]);
    index.startResync("t");
    index.upsert(
      "t",
      vm({ name: "vm-c", cluster: "D", namespace: "ns", vpc: "v" }),
    );
    index.finishResync("t", "3");
    index.dropSource("s");
    index.dropSource("unknown");
    assert.equal(index.synced("s"), false);
    assert.equal(index.watermark("s"), undefined);
    assert.deepEqual(names(index, "v"), []);
    assert.deepEqual(names(index, "v", undefined, "D"), ["vm-c"]);
    assert.equal(index.size, 1);
    assert.equal(index.synced("t"), true);
  });

  await t.step(
    "finishResync without startResync drops what was not seen since the last",
    () => {
      const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
      index.finishResync("s", "2");
      assert.deepEqual(names(index, "v", "ns"), ["vm-a"]);
    },
  );
});

Deno.test("DependentsIndex.freshAt() claims only what it can show", async (t) => {
  const index = listed([]);
  index.apply("s", bookmark("120"));
  const cases: [string, boolean][] = [
    ["1", true],
    ["119", true],
    ["120", true],
    ["0120", true],
    ["121", false],
    ["99999999999999999999999", false],
    ["", false],
    ["12a", false],
    ["-1", false],
    [" 1", false],
    ["1.0", false],
    ["+1", false],
    ["1e2", false],
  ];
  for (const [rv, fresh] of cases) {
    await t.step(`at ${JSON.stringify(rv)}: ${fresh}`, () => {
      assert.equal(index.freshAt("s", rv), fresh);
    });
  }
  await t.step("an unknown or unsynced source is never fresh", () => {
    assert.equal(index.freshAt("other", "1"), false);
    const unsynced = new DependentsIndex(PATHS, { maxDependents: 1 });
    unsynced.apply("s", bookmark("5"));
    assert.equal(unsynced.watermark("s"), "5");
    assert.equal(unsynced.freshAt("s", "1"), false);
  });
  await t.step("a watermark that is not a decimal is never fresh", () => {
    const odd = listed([]);
    odd.startResync("s");
    odd.finishResync("s", "abc");
    assert.equal(odd.freshAt("s", "abc"), false);
    assert.equal(odd.freshAt("s", "0"), false);
  });
  await t.step("integers past 2^53 compare exactly", () => {
    const big = listed([]);
    big.apply("s", bookmark("9007199254740993"));
    assert.equal(big.freshAt("s", "9007199254740993"), true);
    assert.equal(big.freshAt("s", "9007199254740994"), false);
  });
});

Deno.test("DependentsIndex answers namespaced and cluster-scoped objects as the review does", async (t) => {
  const index = listed([
    { name: "vm-a", namespace: "ns-1", vpc: "v" },
    { name: "vm-b", namespace: "ns-2", vpc: "v" },
    { name: "vm-c", vpc: "v" },
    {
      name: "vm-d",
      namespace: "ns-1",
      nics: [{ subnetRef: { name: "v", namespace: "ns-3" } }],
    },
  ]);

  await t.step("a namespaced object: only references in its namespace", () => {
    assert.deepEqual(names(index, "v", "ns-1"), ["vm-a"]);
    assert.deepEqual(names(index, "v", "ns-2"), ["vm-b"]);
    assert.deepEqual(names(index, "v", "ns-3"), ["vm-d"]);
    assert.deepEqual(names(index, "v", "other"), []);
  });

  await t.step('a cluster-scoped dependent refers to the namespace ""', () => {
    assert.deepEqual(names(index, "v", ""), ["vm-c"]);
  });

  await t.step("a cluster-scoped object: any reference namespace", () => {
    assert.deepEqual(
      index.referrers({ cluster: "C", name: "v" }).map((
        h,
      ) => [h.namespace, h.name, h.path]),
      [["", "vm-c", 0], ["ns-1", "vm-a", 0], ["ns-1", "vm-d", 1], [
        "ns-2",
        "vm-b",
        0,
      ]],
    );
  });

  await t.step("another name is not a match", () => {
    assert.deepEqual(names(index, "w"), []);
    assert.deepEqual(names(index, "V"), []);
  });
});

Deno.test("DependentsIndex reads list paths and namespace paths as referencesOf does", async (t) => {
  await t.step("one hit per referring field, with its indexes, sorted", () => {
    const nics = [
      { subnetRef: { name: "s1", namespace: "shared" } },
      { subnetRef: { name: "s2" } },
      { subnetRef: { name: "s1" } },
      { subnetRef: { name: "s1", namespace: "" } },
      { subnetRef: { name: "s1", namespace: "shared" } },
    ];
    const a = { name: "vm-a", namespace: "own", nics, vpc: "s1" };
    const index = listed([a]);
    assert.equal(index.size, 1);
    assert.deepEqual(
      index.referrers({ cluster: "C", namespace: "shared", name: "s1" }),
      [
        hit(a, 1, [0]),
        hit(a, 1, [4]),
      ],
    );
    assert.deepEqual(
      index.referrers({ cluster: "C", namespace: "own", name: "s1" }),
      [
        hit(a, 0, []),
        hit(a, 1, [2]),
        hit(a, 1, [3]),
      ],
    );
    assert.deepEqual(
      index.referrers({ cluster: "C", name: "s1" }).map((
        h,
      ) => [h.path, h.indexes]),
      [[0, []], [1, [0]], [1, [2]], [1, [3]], [1, [4]]],
    );
    assert.deepEqual(names(index, "s2", "own"), ["vm-a"]);
  });

  await t.step("lists of lists give both indexes, large ones too", () => {
    const groups = parseFieldPath(".spec.groups[*].items[*].name");
    const items = Array.from(
      { length: 300 },
      (_, i) => ({ name: i === 299 ? "x" : "y" }),
    );
    const index = new DependentsIndex([{ fieldPath: groups }], {
      maxDependents: 5,
    });
    index.startResync("s");
    index.upsert("s", {
      metadata: { name: "g", annotations: { "kcp.io/cluster": "C" } },
      spec: { groups: [{ items: [{ name: "x" }] }, { items }] },
    });
    index.finishResync("s", "1");
    assert.deepEqual(
      index.referrers({ cluster: "C", name: "x" }).map((h) => h.indexes),
      [[0, 0], [1, 299]],
    );
    assert.equal(index.referrers({ cluster: "C", name: "y" }).length, 299);
  });

  await t.step(
    "MODIFIED with fewer list elements leaves no stale field behind",
    () => {
      const index = listed([{
        name: "vm-a",
        namespace: "ns",
        nics: [{ subnetRef: { name: "s" } }, { subnetRef: { name: "s" } }],
      }]);
      index.apply(
        "s",
        event("MODIFIED", {
          name: "vm-a",
          namespace: "ns",
          rv: "2",
          nics: [{ subnetRef: { name: "s" } }],
        }),
      );
      assert.deepEqual(
        index.referrers({ cluster: "C", name: "s" }).map((h) => h.indexes),
        [[0]],
      );
      index.apply(
        "s",
        event("MODIFIED", {
          name: "vm-a",
          namespace: "ns",
          rv: "3",
          nics: [{ subnetRef: { name: "t" } }, {
            subnetRef: { name: "s", namespace: "x" },
          }],
        }),
      );
      assert.deepEqual(names(index, "s", "ns"), []);
      assert.deepEqual(names(index, "s", "x"), ["vm-a"]);
      assert.deepEqual(names(index, "t", "ns"), ["vm-a"]);
    },
  );

  await t.step(
    "several dependents under one object, and one leaving it",
    () => {
      const index = listed(
        ["a", "b", "c"].map((n) => ({
          name: `vm-${n}`,
          namespace: "ns",
          vpc: "v",
        })),
      );
      assert.deepEqual(names(index, "v", "ns"), ["vm-a", "vm-b", "vm-c"]);
      index.apply(
        "s",
        event("DELETED", { name: "vm-b", namespace: "ns", rv: "2" }),
      );
      assert.deepEqual(names(index, "v", "ns"), ["vm-a", "vm-c"]);
      index.apply(
        "s",
        event("DELETED", { name: "vm-a", namespace: "ns", rv: "3" }),
      );
      assert.deepEqual(names(index, "v", "ns"), ["vm-c"]);
      index.apply(
        "s",
        event("DELETED", { name: "vm-c", namespace: "ns", rv: "4" }),
      );
      assert.deepEqual(names(index, "v"), []);
      assert.equal(index.size, 0);
    },
  );

  await t.step("the same dependent in two sources answers twice", () => {
    const index = listed([{ name: "vm-a", namespace: "ns", vpc: "v" }]);
    index.startResync("t");
    index.upsert(
      "t",
      vm({ name: "vm-a", namespace: "ns", vpc: "v", uid: "u2" }),
    );
    index.finishResync("t", "1");
    assert.deepEqual(
      index.referrers({ cluster: "C", name: "v" }).map((h) => h.uid),
      ["u2", "uid-vm-a"],
    );
    assert.equal(index.size, 2);
  });
});

Deno.test("DependentsIndex skips malformed objects and keeps odd strings apart", async (t) => {
  await t.step("nothing malformed throws or is kept", () => {
    const index = new DependentsIndex(PATHS, { maxDependents: 10 });
    index.startResync("s");
    const bad: unknown[] = [
      undefined,
      null,
      42,
      "vm",
      [],
      [vm({ name: "vm-a", vpc: "v" })],
      {},
      { metadata: null },
      { metadata: "x", spec: { vpcRef: { name: "v" } } },
      { metadata: { name: 7 }, spec: { vpcRef: { name: "v" } } },
      { metadata: { name: "" }, spec: { vpcRef: { name: "v" } } },
      { metadata: { name: "vm-b" }, spec: null },
      { metadata: { name: "vm-c" }, spec: { nics: "not a list" } },
      {
        metadata: { name: "vm-d" },
        spec: { nics: [null, 1, "x", [], { subnetRef: [] }] },
      },
      { metadata: { name: "vm-e" }, spec: { vpcRef: { name: { x: 1 } } } },
    ];
    for (const object of bad) {
      assert.equal(index.upsert("s", object), true);
      for (
        const type of ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"] as const
      ) {
        assert.equal(index.apply("s", { type, object }), true);
      }
    }
    index.finishResync("s", "1");
    assert.equal(index.size, 0);
    assert.equal(index.synced("s"), true);
  });

  await t.step("odd metadata is read as far as it goes", () => {
    const index = new DependentsIndex(PATHS, { maxDependents: 10 });
    index.upsert("s", {
      metadata: {
        name: "vm-a",
        namespace: 3,
        uid: null,
        resourceVersion: 5,
        deletionTimestamp: true,
        annotations: { "kcp.io/cluster": ["C"] },
      },
      spec: { vpcRef: { name: "v" } },
    });
    assert.deepEqual(index.referrers({ cluster: "", name: "v" }), [{
      cluster: "",
      namespace: "",
      name: "vm-a",
      uid: "",
      resourceVersion: "",
      deleting: false,
      path: 0,
      indexes: [],
    }]);
  });

  await t.step("NUL and other odd strings never make two objects one", () => {
    const index = listed([
      {
        name: "vm-a",
        namespace: "ns",
        nics: [{ subnetRef: { name: "c", namespace: "a\u0000b" } }],
      },
      {
        name: "vm-b",
        namespace: "ns",
        nics: [{ subnetRef: { name: "b\u0000c", namespace: "a" } }],
      },
      { name: "vm-c", namespace: "ns", vpc: "__proto__" },
      { name: "__proto__", namespace: "constructor", vpc: "hasOwnProperty" },
      { name: "vm-e", cluster: "1\u00000", namespace: "x", vpc: "v" },
      { name: "vm-f", cluster: "1", namespace: "\u00000x", vpc: "v" },
    ]);
    assert.equal(index.size, 6);
    assert.deepEqual(names(index, "c", "a\u0000b"), ["vm-a"]);
    assert.deepEqual(names(index, "b\u0000c", "a"), ["vm-b"]);
    assert.deepEqual(names(index, "c", "a"), []);
    assert.deepEqual(names(index, "b\u0000c", "a\u0000b"), []);
    assert.deepEqual(names(index, "__proto__", "ns"), ["vm-c"]);
    assert.deepEqual(names(index, "hasOwnProperty"), ["__proto__"]);
    assert.deepEqual(names(index, "v", "x", "1\u00000"), ["vm-e"]);
    assert.deepEqual(names(index, "v", "0x", "1"), []);
    assert.deepEqual(names(index, "v", "\u00000x", "1"), ["vm-f"]);
    assert.deepEqual(names(index, "v", undefined, "1"), ["vm-f"]);
  });

  await t.step("a field path that throws skips the object", () => {
    const index = new DependentsIndex(PATHS, { maxDependents: 10 });
    const spec = {};
    Object.defineProperty(spec, "vpcRef", {
      enumerable: true,
      get() {
        throw new Error("hostile");
      },
    });
    assert.equal(index.upsert("s", { metadata: { name: "vm-a" }, spec }), true);
    assert.equal(index.size, 0);
  });
});

Deno.test("DependentsIndex overflows past its limits and then answers nothing", async (t) => {
  await t.step(
    "past a budget shared with other indexes, giving its room back",
    () => {
      const shared = new IndexBudget({ maxDependents: 3, maxReferences: 5 });
      const first = new DependentsIndex(PATHS, { maxDependents: 10, shared });
      const second = new DependentsIndex(PATHS, { maxDependents: 10, shared });
      first.startResync("s");
      first.finishResync("s", "1");
      second.startResync("s");
      second.finishResync("s", "1");
      const add = (index: DependentsIndex, name: string, nics: string[] = []) =>
        index.apply(
          "s",
          event("ADDED", {
            name,
            namespace: "ns",
            vpc: "v",
            nics: nics.map((n) => ({ subnetRef: { name: n } })),
          }),
        );
      assert.equal(add(first, "vm-a"), true);
      assert.equal(add(first, "vm-b"), true);
      assert.deepEqual([shared.dependents, shared.references], [2, 2]);
      // A replacement that names more counts the difference.
      assert.equal(add(first, "vm-b", ["n1", "n2"]), true);
      assert.deepEqual([shared.dependents, shared.references], [2, 4]);
      // A deletion gives its room back.
      assert.equal(
        first.apply("s", event("DELETED", { name: "vm-a", namespace: "ns" })),
        true,
      );
      assert.deepEqual([shared.dependents, shared.references], [1, 3]);
      assert.equal(add(second, "vm-c"), true);
      assert.deepEqual([shared.dependents, shared.references], [2, 4]);
      // Over the shared references (6 > 5): the second index overflows, and
      // lets go of what it kept; the first keeps its own.
      assert.equal(add(second, "vm-d", ["n1"]), false);
      assert.equal(second.overflowed, true);
      assert.equal(first.overflowed, false);
      assert.deepEqual([shared.dependents, shared.references], [1, 3]);
      assert.deepEqual(
        first.referrers({ cluster: "C", namespace: "ns", name: "v" })
          .map((h) => h.name),
        ["vm-b"],
      );
      // Closing an index no longer wanted gives back the rest.
      first.close();
      assert.equal(first.size, 0);
      assert.deepEqual([shared.dependents, shared.references], [0, 0]);
    },
  );
  await t.step("past maxDependents", () => {
    const index = new DependentsIndex(PATHS, { maxDependents: 2 });
    index.startResync("s");
    assert.equal(
      index.upsert("s", vm({ name: "vm-a", namespace: "ns", vpc: "v" })),
      true,
    );
    // Not kept, so not counted.
    assert.equal(
      index.upsert("s", vm({ name: "vm-x", namespace: "ns" })),
      true,
    );
    assert.equal(
      index.apply(
        "s",
        event("ADDED", { name: "vm-b", namespace: "ns", vpc: "v" }),
      ),
      true,
    );
    // Replacing a kept one adds nothing.
    assert.equal(
      index.upsert("s", vm({ name: "vm-b", namespace: "ns", vpc: "w" })),
      true,
    );
    index.finishResync("s", "1");
    index.startResync("t");
    index.finishResync("t", "1");
    assert.equal(index.size, 2);
    assert.equal(index.overflowed, false);
    assert.equal(
      index.apply(
        "s",
        event("ADDED", { name: "vm-c", namespace: "ns", vpc: "v" }),
      ),
      false,
    );
    assert.equal(index.overflowed, true);
    assert.equal(index.size, 0);
    assert.equal(index.synced("s"), false);
    assert.equal(index.synced("t"), false);
    assert.equal(index.freshAt("t", "1"), false);
    assert.equal(index.watermark("s"), undefined);
    assert.deepEqual(index.referrers({ cluster: "C", name: "v" }), []);
    assert.deepEqual(
      index.referrers({ cluster: "C", namespace: "ns", name: "w" }),
      [],
    );
    assert.equal(
      index.upsert("s", vm({ name: "vm-d", namespace: "ns", vpc: "v" })),
      false,
    );
    assert.equal(index.apply("s", bookmark("9")), false);
    index.startResync("s");
    index.finishResync("s", "10");
    assert.equal(index.synced("s"), false);
    assert.equal(index.size, 0);
    assert.equal(index.overflowed, true);
  });

  await t.step("maxDependents 0 overflows at the first kept dependent", () => {
    const index = new DependentsIndex(PATHS, { maxDependents: 0 });
    assert.equal(index.upsert("s", vm({ name: "vm-x" })), true);
    assert.equal(index.upsert("s", vm({ name: "vm-a", vpc: "v" })), false);
    assert.equal(index.overflowed, true);
  });

  await t.step("past maxReferences", () => {
    const index = new DependentsIndex(PATHS, {
      maxDependents: 10,
      maxReferences: 3,
    });
    const nics = (n: number) =>
      Array.from({ length: n }, () => ({ subnetRef: { name: "s" } }));
    assert.equal(index.upsert("s", vm({ name: "vm-a", nics: nics(2) })), true);
    assert.equal(
      index.upsert("s", vm({ name: "vm-a", nics: nics(3), rv: "2" })),
      true,
    );
    assert.equal(
      index.upsert("s", vm({ name: "vm-a", nics: nics(1), rv: "3" })),
      true,
    );
    assert.equal(index.upsert("s", vm({ name: "vm-b", nics: nics(2) })), true);
    assert.equal(
      index.upsert("s", vm({ name: "vm-a", nics: nics(2), rv: "4" })),
      false,
    );
    assert.equal(index.overflowed, true);
  });

  await t.step("limits must be numbers of at least 0", () => {
    assert.throws(
      () => new DependentsIndex(PATHS, { maxDependents: -1 }),
      RangeError,
    );
    assert.throws(
      () => new DependentsIndex(PATHS, { maxDependents: NaN }),
      RangeError,
    );
    assert.throws(
      () => new DependentsIndex(PATHS, { maxDependents: 1, maxReferences: -1 }),
      RangeError,
    );
    assert.equal(new DependentsIndex([], { maxDependents: Infinity }).size, 0);
  });
});

/** 100 000 dependents, each in one of 1 000 clusters and 5 namespaces, with one reference to its own VPC. */
function fill(index: DependentsIndex, count: number): void {
  index.startResync("s");
  for (let i = 0; i < count; i++) {
    index.upsert("s", {
      metadata: {
        name: `vm-${i}`,
        namespace: `ns-${i % 5}`,
        uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        resourceVersion: String(1_000_000 + i),
        annotations: {
          "kcp.io/cluster": `2abcdef${String(i % 1000).padStart(9, "0")}`,
        },
      },
      spec: { vpcRef: { name: `vpc-${i}` } },
    });
  }
  index.finishResync("s", "2000000");
}

Deno.test("DependentsIndex keeps 100 000 dependents and lets go of them all", () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = Deno.memoryUsage().heapUsed;
  const index = new DependentsIndex([VPC], { maxDependents: 100_000 });
  fill(index, 100_000);
  assert.equal(index.size, 100_000);
  assert.equal(index.overflowed, false);
  assert.deepEqual(
    index.referrers({
      cluster: "2abcdef000000007",
      namespace: "ns-2",
      name: "vpc-7",
    })
      .map((h) => h.name),
    ["vm-7"],
  );
  if (gc !== undefined) {
    // A measurement, not a check: run with --v8-flags=--expose-gc to see it.
    gc();
    const mib = (Deno.memoryUsage().heapUsed - before) / 2 ** 20;
    console.log(`heap per 100 000 dependents: ${mib.toFixed(1)} MiB`);
  }
  index.dropSource("s");
  assert.equal(index.size, 0);
  assert.deepEqual(
    index.referrers({ cluster: "2abcdef000000007", name: "vpc-7" }),
    [],
  );
});
