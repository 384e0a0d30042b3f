import assert from "node:assert/strict";
import { collectionAt, sliceEndpoints } from "./index_endpoints.ts";
import type { IndexSpec } from "./index_plan.ts";

const SPEC: IndexSpec = {
  key: "compute.example.com/v1alpha1/virtualmachines:abc123",
  dependent: {
    group: "compute.example.com",
    version: "v1alpha1",
    resource: "virtualmachines",
  },
  identity: "abc123",
  export: { workspace: "p1", name: "compute.example.com" },
  paths: [],
  pathKeys: [],
};

const VW = "https://shard-1.example:6443/services/apiexport/p1/compute";

Deno.test("sliceEndpoints() gives one endpoint per usable virtual-workspace URL, sorted, once each", () => {
  const endpoints = sliceEndpoints([
    {
      status: {
        endpoints: [
          { url: `${VW}/` },
          { url: "https://root.example:6443/services/apiexport/p1/compute" },
          { url: "http://plain.example/services/apiexport/p1/compute" },
          { url: "https://q.example/x?y=1" },
          { url: "https://u:p@c.example/x" },
          { url: "not a url" },
          { nothing: true },
          "not an object",
        ],
      },
    },
    { status: { endpoints: [{ url: VW }] } },
    { status: "odd" },
    null,
  ]);
  assert.deepEqual(endpoints.map((e) => e.source), [
    "https://root.example:6443/services/apiexport/p1/compute",
    VW,
  ]);
  assert.equal(
    endpoints[1]!.collection(SPEC, "*"),
    `${VW}/clusters/*/apis/compute.example.com/v1alpha1/virtualmachines`,
  );
  assert.equal(
    endpoints[1]!.collection(SPEC, "2abc"),
    `${VW}/clusters/2abc/apis/compute.example.com/v1alpha1/virtualmachines`,
  );
  assert.deepEqual(
    sliceEndpoints([{
      status: { endpoints: [{ url: "http://plain.example/vw" }] },
    }], { allowInsecureHttp: true }).map((e) => e.source),
    ["http://plain.example/vw"],
  );
});

Deno.test("collectionAt() keeps every part one path segment", () => {
  assert.equal(
    collectionAt("https://k/vw", {
      ...SPEC,
      dependent: { group: "", version: "v1", resource: "configmaps" },
    }, "c1"),
    "https://k/vw/clusters/c1/api/v1/configmaps",
  );
  assert.throws(() => collectionAt("https://k", SPEC, ".."), TypeError);
  // A tenant's odd name cannot change where the request goes.
  assert.equal(
    collectionAt("https://k", SPEC, "a/b"),
    "https://k/clusters/a%2Fb/apis/compute.example.com/v1alpha1/virtualmachines",
  );
});
