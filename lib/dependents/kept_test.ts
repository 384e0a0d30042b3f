import assert from "node:assert/strict";
import fc from "fast-check";
import {
  compareDecimals,
  compareHits,
  type IndexHit,
  isOlder,
  Kept,
  readObject,
  readRefs,
  reverseKey,
  scopeKey,
  sharedIndexes,
  Source,
} from "./kept.ts";
import { parseFieldPath } from "../rules/mod.ts";

/** A kept dependent with one reference to `refName`. */
function kept(
  cluster: string,
  namespace: string,
  name: string,
  refName = "vpc-a",
): Kept {
  return new Kept(
    cluster,
    namespace,
    name,
    `uid-${name}`,
    "1",
    false,
    0,
    0,
    namespace,
    refName,
    [],
    undefined,
  );
}

Deno.test("compareDecimals() orders decimals of any length as BigInt does", () => {
  const sign = (n: number | undefined) => n === undefined ? n : Math.sign(n);
  assert.equal(sign(compareDecimals("9", "10")), -1);
  assert.equal(sign(compareDecimals("10", "9")), 1);
  assert.equal(sign(compareDecimals("007", "7")), 0);
  assert.equal(sign(compareDecimals("0", "000")), 0);
  assert.equal(
    sign(compareDecimals("18446744073709551616", "18446744073709551615")),
    1,
  );
  fc.assert(
    fc.property(
      fc.stringMatching(/^[0-9]{1,30}$/),
      fc.stringMatching(/^[0-9]{1,30}$/),
      (a, b) => {
        const x = BigInt(a);
        const y = BigInt(b);
        assert.equal(sign(compareDecimals(a, b)), x < y ? -1 : x > y ? 1 : 0);
      },
    ),
  );
});

Deno.test("compareDecimals() and isOlder() claim no order unless both sides are decimal", () => {
  for (
    const odd of ["", "-1", "+1", " 1", "1 ", "1.0", "1e3", "0x10", "\u0661"]
  ) {
    assert.equal(compareDecimals(odd, "5"), undefined, JSON.stringify(odd));
    assert.equal(compareDecimals("5", odd), undefined, JSON.stringify(odd));
    assert.equal(isOlder(odd, "5"), false, JSON.stringify(odd));
    assert.equal(isOlder("5", odd), false, JSON.stringify(odd));
  }
  assert.equal(isOlder("9", "10"), true);
  assert.equal(isOlder("10", "10"), false);
  assert.equal(isOlder("010", "10"), false);
  assert.equal(isOlder("11", "10"), false);
});

Deno.test("readObject() reads what it can of a malformed object and skips one without a name", () => {
  for (
    const object of [
      undefined,
      null,
      "vm-1",
      42,
      ["vm-1"],
      {},
      { metadata: null },
      { metadata: ["vm-1"] },
      { metadata: "vm-1" },
      { metadata: {} },
      { metadata: { name: "" } },
      { metadata: { name: 7 } },
      { metadata: { name: ["vm-1"] } },
    ]
  ) {
    assert.equal(readObject(object), undefined, JSON.stringify(object));
  }
  assert.deepEqual(
    readObject({
      metadata: {
        name: "vm-1",
        namespace: 3,
        uid: {},
        resourceVersion: 10,
        deletionTimestamp: "",
        annotations: ["kcp.io/cluster"],
      },
    }),
    {
      cluster: "",
      namespace: "",
      name: "vm-1",
      uid: "",
      resourceVersion: "",
      deleting: false,
    },
  );
  assert.equal(
    readObject({
      metadata: { name: "vm-1", annotations: { "kcp.io/cluster": 1 } },
    })?.cluster,
    "",
  );
  assert.deepEqual(
    readObject({
      metadata: {
        name: "vm-1",
        namespace: "ns",
        uid: "u1",
        resourceVersion: "10",
        deletionTimestamp: "2026-01-01T00:00:00Z",
        annotations: { "kcp.io/cluster": "C" },
      },
      spec: "anything",
    }),
    {
      cluster: "C",
      namespace: "ns",
      name: "vm-1",
      uid: "u1",
      resourceVersion: "10",
      deleting: true,
    },
  );
});

Deno.test("readRefs() reads each path's references, skips non-string names and never throws on a tenant's object", () => {
  const paths = [
    { fieldPath: parseFieldPath(".spec.vpcRef.name") },
    { fieldPath: parseFieldPath(".spec.nics[*].subnetRef.name") },
  ];
  const refs = readRefs({
    metadata: { name: "vm-1", namespace: "ns" },
    spec: {
      vpcRef: { name: "vpc-a" },
      nics: [{ subnetRef: { name: "s1" } }, { subnetRef: { name: 7 } }],
    },
  }, paths);
  assert.deepEqual(
    refs?.map((r) => [r.path, r.refNamespace, r.refName, [...r.indexes]]),
    [[0, "ns", "vpc-a", []], [1, "ns", "s1", [0]]],
  );
  assert.deepEqual(readRefs("not an object", paths), []);
  assert.deepEqual(readRefs({ spec: { vpcRef: [] } }, paths), []);
});

Deno.test("scopeKey() and reverseKey() give different pairs different keys, whatever the strings hold", () => {
  const pairs: [string, string][] = [
    ["a", "bc"],
    ["ab", "c"],
    ["a\u0000", "b"],
    ["a", "\u0000b"],
    ["1\u0000a", ""],
    ["", "1\u0000a"],
    ["", ""],
  ];
  for (const key of [scopeKey, reverseKey]) {
    const keys = new Set(pairs.map(([a, b]) => key(a, b)));
    assert.equal(keys.size, pairs.length);
    fc.assert(
      fc.property(
        fc.tuple(fc.string(), fc.string()),
        fc.tuple(fc.string(), fc.string()),
        ([a, b], [c, d]) => {
          assert.equal(key(a, b) === key(c, d), a === c && b === d);
        },
      ),
    );
  }
});

Deno.test("sharedIndexes() shares the common short lists and freezes every list", () => {
  assert.equal(sharedIndexes([]), sharedIndexes([]));
  assert.equal(sharedIndexes([3]), sharedIndexes([3]));
  assert.deepEqual(sharedIndexes([3]), [3]);
  const input = [1, 2];
  const long = sharedIndexes(input);
  assert.deepEqual(long, [1, 2]);
  assert.notEqual(long, input);
  assert.notEqual(sharedIndexes([1000]), sharedIndexes([1000]));
  assert.deepEqual(sharedIndexes([1000]), [1000]);
  for (const indexes of [[], [0], [255], [256], [1, 2]]) {
    assert.ok(Object.isFrozen(sharedIndexes(indexes)), `${indexes}`);
  }
});

Deno.test("compareHits() orders by namespace, name, path and indexes (a prefix first), then the rest", () => {
  const hit = (h: Partial<IndexHit>): IndexHit => ({
    cluster: "C",
    namespace: "ns",
    name: "vm",
    uid: "u",
    resourceVersion: "1",
    deleting: false,
    path: 0,
    indexes: [],
    ...h,
  });
  const ordered = [
    hit({ namespace: "" }),
    hit({ name: "a" }),
    hit({}),
    hit({ deleting: true }),
    hit({ resourceVersion: "2" }),
    hit({ uid: "v" }),
    hit({ cluster: "D" }),
    hit({ indexes: [0] }),
    hit({ indexes: [0, 5] }),
    hit({ indexes: [1] }),
    hit({ path: 1 }),
    hit({ name: "z" }),
    hit({ namespace: "other" }),
  ];
  for (let i = 0; i < ordered.length; i++) {
    for (let j = 0; j < ordered.length; j++) {
      const order = Math.sign(compareHits(ordered[i]!, ordered[j]!));
      assert.equal(order, Math.sign(i - j), `${i} against ${j}`);
    }
  }
});

Deno.test("Kept keeps its first reference in its own fields and the others in more", () => {
  const k = kept("C", "ns", "vm-1");
  assert.equal(k.refCount, 1);
  assert.deepEqual(
    [k.ref(0).path, k.ref(0).refNamespace, k.ref(0).refName],
    [0, "ns", "vpc-a"],
  );
  k.setRefs([
    { path: 1, refNamespace: "a", refName: "x", indexes: [0] },
    { path: 1, refNamespace: "b", refName: "y", indexes: [1] },
  ]);
  assert.equal(k.refCount, 2);
  assert.deepEqual(
    [0, 1].map((i) => {
      const { path, refNamespace, refName, indexes } = k.ref(i);
      return { path, refNamespace, refName, indexes };
    }),
    [
      { path: 1, refNamespace: "a", refName: "x", indexes: [0] },
      { path: 1, refNamespace: "b", refName: "y", indexes: [1] },
    ],
  );
  k.setRefs([{ path: 0, refNamespace: "c", refName: "z", indexes: [] }]);
  assert.equal(k.refCount, 1);
  assert.equal(k.more, undefined);
  assert.equal(k.ref(0).refName, "z");
});

Deno.test("Source finds, adds and deletes dependents by cluster, namespace and name", () => {
  const source = new Source();
  const a = kept("C", "ns", "a");
  const b = kept("C", "ns", "b");
  const other = kept("D", "ns", "a");
  source.add(a);
  assert.equal(source.find("C", "ns", "a"), a);
  assert.equal(source.find("C", "ns", "b"), undefined);
  source.add(b);
  source.add(other);
  assert.equal(source.find("C", "ns", "a"), a);
  assert.equal(source.find("C", "ns", "b"), b);
  assert.equal(source.find("D", "ns", "a"), other);
  assert.equal(source.find("C", "other", "a"), undefined);
  assert.deepEqual(new Set(source.all()), new Set([a, b, other]));
  // Only the very object kept is deleted, not another of the same identity.
  assert.equal(source.delete(kept("C", "ns", "a")), false);
  assert.equal(source.delete(a), true);
  assert.equal(source.delete(a), false);
  assert.equal(source.find("C", "ns", "a"), undefined);
  assert.equal(source.find("C", "ns", "b"), b);
  assert.equal(source.delete(b), true);
  assert.equal(source.delete(other), true);
  assert.deepEqual(source.all(), []);
  assert.equal(source.synced, false);
  assert.equal(source.watermark, undefined);
  assert.equal(source.generation, 0);
});
