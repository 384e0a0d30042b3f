import assert from "node:assert/strict";
import { worldPaths } from "./component_suite.ts";
import { pluginGraphWorld } from "./plugin_graph_world.ts";

Deno.test("pluginGraphWorld(): the providers under the prefix, three rules, four types sorted, no kubeconfig yet", () => {
  const w = pluginGraphWorld(worldPaths("root:graph"));
  assert.equal(w.network, "root:graph:providers:network");
  assert.equal(w.compute, "root:graph:providers:compute");
  assert.deepEqual(w.rules, ["vm-vpc", "vm-nics", "attachment-vpc"]);
  assert.deepEqual(w.types, [...w.types].sort());
  assert.equal(w.types.length, 4);
  assert.equal(w.admin, "");
});
