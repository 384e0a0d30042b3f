import assert from "node:assert/strict";
import { parseLock } from "./api.ts";
import { type ClusterLock, lockedMessage, LockIndex } from "./lock_index.ts";

function clusterLock(
  cluster: string,
  name: string,
  spec: {
    target: Record<string, unknown>;
    reason: string;
    operations?: string[];
    expiresAt?: string;
  },
  namespace = "team-a",
  creationTimestamp?: unknown,
): ClusterLock {
  const parsed = parseLock({
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: {
      name,
      namespace,
      ...(creationTimestamp === undefined ? {} : { creationTimestamp }),
    },
    spec,
  });
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
  return { cluster, lock: parsed.lock };
}

const VPC = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
  name: "core",
};
/** The clock every query reads, fixed. */
const NOW = { now: Date.parse("2026-12-01T12:00:00Z") };
const QUERY = {
  cluster: "c1",
  group: "network.example.com",
  resource: "vpcs",
  namespace: "team-a",
  name: "core",
  operation: "Delete" as const,
};

Deno.test("LockIndex.find() names the Locks on an object for an operation, sorted", () => {
  const index = new LockIndex();
  assert.equal(index.loaded, false);
  index.replace([
    clusterLock("c1", "z-lock", { target: VPC, reason: "second" }),
    clusterLock("c1", "a-lock", {
      target: VPC,
      reason: "first",
      operations: ["Delete", "Update"],
    }),
  ]);
  assert.equal(index.loaded, true);
  assert.deepEqual(index.find(QUERY, NOW), [
    { namespace: "team-a", name: "a-lock", reason: "first" },
    { namespace: "team-a", name: "z-lock", reason: "second" },
  ]);
  assert.deepEqual(index.find({ ...QUERY, operation: "Update" }, NOW), [
    { namespace: "team-a", name: "a-lock", reason: "first" },
  ]);
});

Deno.test("LockIndex.find() holds whatever the version and nothing else", () => {
  const index = new LockIndex();
  index.replace([clusterLock("c1", "l", { target: VPC, reason: "r" })]);
  // Another object, namespace, workspace or type is not locked.
  for (
    const other of [
      { name: "other" },
      { namespace: "team-b" },
      { cluster: "c2" },
      { resource: "subnets" },
      { group: "network.example.org" },
    ]
  ) {
    assert.deepEqual(
      index.find({ ...QUERY, ...other }, NOW),
      [],
      JSON.stringify(other),
    );
  }
});

Deno.test("LockIndex.find() lets a Lock on a Namespace hold the namespace object itself", () => {
  const index = new LockIndex();
  index.replace([
    clusterLock("c1", "ns", {
      target: {
        group: "",
        version: "v1",
        resource: "namespaces",
        name: "team-a",
      },
      reason: "tenant home",
    }),
  ]);
  const namespaceQuery = {
    cluster: "c1",
    group: "",
    resource: "namespaces",
    name: "team-a",
    operation: "Delete" as const,
  };
  assert.equal(index.find(namespaceQuery, NOW).length, 1);
  // kcp may send the namespace's own name as the request's namespace.
  assert.equal(
    index.find({ ...namespaceQuery, namespace: "team-a" }, NOW).length,
    1,
  );
  assert.deepEqual(index.find({ ...namespaceQuery, name: "team-b" }, NOW), []);
});

Deno.test("lockedMessage() quotes reasons, names three Locks and counts the rest", () => {
  assert.equal(
    lockedMessage([{
      namespace: "team-a",
      name: "prod",
      reason: 'ask "netops"',
    }]),
    'locked by Lock team-a/prod ("ask \\"netops\\""): deleting the Lock unlocks it; the skip-protection annotation does not',
  );
  const many = ["a", "b", "c", "d", "e"].map((name) => ({
    namespace: "ns",
    name,
    reason: name,
  }));
  assert.match(
    lockedMessage(many),
    /^locked by Lock ns\/a \("a"\), Lock ns\/b \("b"\), Lock ns\/c \("c"\) and 2 more: /,
  );
});

Deno.test("LockIndex.covers() says whether a Lock in the cluster names the type, whatever its object", () => {
  const index = new LockIndex();
  index.replace([clusterLock("c1", "prod", {
    target: { group: "", version: "v1", resource: "secrets", name: "db" },
    reason: "production",
  })]);
  assert.equal(
    index.covers({ cluster: "c1", group: "", resource: "secrets" }),
    true,
  );
  assert.equal(
    index.covers({ cluster: "c2", group: "", resource: "secrets" }),
    false,
  );
  assert.equal(
    index.covers({ cluster: "c1", group: "", resource: "configmaps" }),
    false,
  );
});

Deno.test("LockIndex.find() holds an expiring Lock until expiresAt plus the skew allowance, by the query's clock", () => {
  const index = new LockIndex({ expirySkewMs: 5_000 });
  index.replace([
    clusterLock("c1", "window", {
      target: VPC,
      reason: "maintenance window",
      expiresAt: "2026-12-01T12:00:00Z",
    }),
    clusterLock("c1", "forever", { target: VPC, reason: "production" }),
  ]);
  const at = (text: string) => ({ now: Date.parse(text) });
  assert.deepEqual(
    index.find(QUERY, at("2026-12-01T11:59:59Z")).map((h) => h.name),
    ["forever", "window"],
  );
  // Past expiresAt but within the allowance: a clock ahead never lets go early.
  assert.deepEqual(
    index.find(QUERY, at("2026-12-01T12:00:04.999Z")).map((h) => h.name),
    ["forever", "window"],
  );
  assert.deepEqual(
    index.find(QUERY, at("2026-12-01T12:00:05Z")).map((h) => h.name),
    ["forever"],
  );
  assert.deepEqual(index.find(QUERY, at("2026-12-01T11:00:00Z"))[1], {
    namespace: "team-a",
    name: "window",
    reason: "maintenance window",
    expiresAt: "2026-12-01T12:00:00Z",
  });
  // An expired Lock still names its type: a forged review learns nothing.
  assert.equal(
    index.covers({ cluster: "c1", group: VPC.group, resource: VPC.resource }),
    true,
  );
});

Deno.test("LockIndex.find() with a zero allowance lets go at expiresAt; an offset is read as the same instant", () => {
  const index = new LockIndex({ expirySkewMs: 0 });
  index.replace([clusterLock("c1", "window", {
    target: VPC,
    reason: "r",
    expiresAt: "2026-12-01T13:00:00+01:00",
  })]);
  assert.equal(
    index.find(QUERY, { now: Date.parse("2026-12-01T11:59:59.999Z") }).length,
    1,
  );
  assert.equal(
    index.find(QUERY, { now: Date.parse("2026-12-01T12:00:00Z") }).length,
    0,
  );
});

Deno.test("lockedMessage() says until when an expiring Lock holds", () => {
  assert.match(
    lockedMessage([{
      namespace: "team-a",
      name: "prod",
      reason: "window",
      expiresAt: "2026-12-01T12:00:00Z",
    }]),
    /^locked by Lock team-a\/prod \("window", until 2026-12-01T12:00:00Z\): /,
  );
});

Deno.test("LockIndex.find() names since when a Lock holds: its creationTimestamp when RFC 3339", () => {
  const index = new LockIndex();
  index.replace([
    clusterLock(
      "c1",
      "a",
      { target: VPC, reason: "r" },
      "team-a",
      "2026-11-29T12:00:00Z",
    ),
    clusterLock("c1", "b", { target: VPC, reason: "r" }, "team-a", "noon"),
    clusterLock("c1", "c", { target: VPC, reason: "r" }, "team-a", 12),
  ]);
  assert.deepEqual(index.find(QUERY, NOW), [
    {
      namespace: "team-a",
      name: "a",
      reason: "r",
      since: "2026-11-29T12:00:00Z",
    },
    { namespace: "team-a", name: "b", reason: "r" },
    { namespace: "team-a", name: "c", reason: "r" },
  ]);
});
