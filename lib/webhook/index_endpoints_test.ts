import assert from "node:assert/strict";
import { collectionOn, shardEndpoints } from "./index_endpoints.ts";
import type { IndexSpec } from "./index_plan.ts";

const SPEC: IndexSpec = {
  key: "compute.example.com/v1alpha1/virtualmachines:abc123",
  dependent: {
    group: "compute.example.com",
    version: "v1alpha1",
    resource: "virtualmachines",
  },
  identity: "abc123",
  paths: [],
  pathKeys: [],
};

function shard(name: unknown, baseURL: unknown) {
  return { metadata: { name }, spec: { baseURL } };
}

Deno.test("shardEndpoints() gives one endpoint per shard with a usable https base URL, by name", () => {
  const endpoints = shardEndpoints([
    shard("shard-1", "https://shard-1.example:6443/"),
    shard("root", "https://root.example:6443"),
    shard("plain", "http://plain.example:6443"),
    shard("query", "https://q.example:6443/?x=1"),
    shard("creds", "https://u:p@c.example:6443"),
    shard("", "https://empty.example"),
    shard("nourl", undefined),
    "not an object",
  ]);
  assert.deepEqual(endpoints.map((e) => e.source), ["root", "shard-1"]);
  assert.equal(
    endpoints[1]!.collection(SPEC, "*"),
    "https://shard-1.example:6443/clusters/*/apis/compute.example.com/v1alpha1/virtualmachines:abc123",
  );
  assert.equal(
    endpoints[0]!.collection(SPEC, "2abc"),
    "https://root.example:6443/clusters/2abc/apis/compute.example.com/v1alpha1/virtualmachines",
  );
  assert.deepEqual(
    shardEndpoints([shard("plain", "http://plain.example:6443")], {
      allowInsecureHttp: true,
    }).map((e) => e.source),
    ["plain"],
  );
});

Deno.test("collectionOn() keeps every part one path segment and refuses an identity that is not a hash", () => {
  assert.equal(
    collectionOn("https://k", {
      ...SPEC,
      dependent: { group: "", version: "v1", resource: "configmaps" },
    }, "c1"),
    "https://k/clusters/c1/api/v1/configmaps",
  );
  assert.throws(
    () => collectionOn("https://k", { ...SPEC, identity: "../x" }, "*"),
    /identity hash is not one/,
  );
  assert.throws(() => collectionOn("https://k", SPEC, ".."), TypeError);
});
