import assert from "node:assert/strict";
import { type ComponentWorld, worldPaths } from "./component_suite.ts";
import { pluginLockWorld } from "./plugin_lock_world.ts";

Deno.test("pluginLockWorld(): the consumer under the prefix; team-a's Locks listed there as the tenant", async () => {
  const calls: unknown[] = [];
  const kcp = {
    kubectlOk(args: readonly string[], options: unknown) {
      calls.push([args, options]);
      return Promise.resolve("NAME ...");
    },
  };
  const w = pluginLockWorld(
    { kcp } as unknown as ComponentWorld,
    worldPaths("root:lock"),
  );
  assert.equal(w.network, "root:lock:providers:network");
  assert.equal(w.compute, "root:lock:providers:compute");
  assert.equal(w.c1, "root:lock:consumers:c1");
  assert.equal(w.tenant, "");
  assert.equal(w.expiresAt, "");
  assert.equal(await w.locksInTeamA(), "NAME ...");
  assert.deepEqual(calls, [[
    ["get", "locks", "-n", "team-a"],
    { identity: "user", workspace: "root:lock:consumers:c1" },
  ]]);
});
