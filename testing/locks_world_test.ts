import assert from "node:assert/strict";
import { type ComponentWorld, worldPaths } from "./component_suite.ts";
import { locksWorld, relabel } from "./locks_world.ts";

Deno.test("relabel labels the VPC core with a new value each time", () => {
  const args = relabel("team-b");
  const first = args();
  const second = args();
  assert.deepEqual(first.slice(0, 5), ["label", "vpc", "core", "-n", "team-b"]);
  assert.equal(first.at(-1), "--overwrite");
  assert.match(first[5]!, /^tier=t-[0-9a-f]{8}$/);
  assert.notEqual(first[5], second[5]);
});

Deno.test("locksWorld names the workspaces under the prefix and locks the network provider's VPC core", () => {
  const kcp = {} as ComponentWorld["kcp"];
  const w = locksWorld({ kcp } as ComponentWorld, worldPaths("root:locks"));
  assert.equal(w.kcp, kcp);
  assert.equal(w.network, "root:locks:providers:network");
  assert.equal(w.c1, "root:locks:consumers:c1");
  assert.equal(w.c2, "root:locks:consumers:c2");
  assert.deepEqual(w.vpcTarget, {
    apiExportRef: {
      path: "root:locks:providers:network",
      name: "network.example.com",
    },
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
    name: "core",
  });
});
