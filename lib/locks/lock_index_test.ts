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
  },
  namespace = "team-a",
): ClusterLock {
  const parsed = parseLock({
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: { name, namespace },
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
  assert.deepEqual(index.find(QUERY), [
    { namespace: "team-a", name: "a-lock", reason: "first" },
    { namespace: "team-a", name: "z-lock", reason: "second" },
  ]);
  assert.deepEqual(index.find({ ...QUERY, operation: "Update" }), [
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
      index.find({ ...QUERY, ...other }),
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
  assert.equal(index.find(namespaceQuery).length, 1);
  // kcp may send the namespace's own name as the request's namespace.
  assert.equal(
    index.find({ ...namespaceQuery, namespace: "team-a" }).length,
    1,
  );
  assert.deepEqual(index.find({ ...namespaceQuery, name: "team-b" }), []);
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
