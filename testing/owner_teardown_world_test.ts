import assert from "node:assert/strict";
import type { Components, ComponentWorld } from "./component_suite.ts";
import { ownerTeardownWorld } from "./owner_teardown_world.ts";

Deno.test("ownerTeardownWorld() drives c1 of root:unheld and of root:held, and reads the running webhook", () => {
  const webhook = { url: "https://127.0.0.1:1" } as Components["webhook"];
  const world = {
    kcp: {},
    components: () => ({ webhook }),
  } as unknown as ComponentWorld;
  const w = ownerTeardownWorld(world);
  assert.equal(w.unheld.network, "root:unheld:providers:network");
  assert.equal(w.held.compute, "root:held:providers:compute");
  assert.equal(w.c1.workspace, "root:unheld:consumers:c1");
  assert.equal(w.heldC1.workspace, "root:held:consumers:c1");
  assert.equal(w.c1.kcp, world.kcp);
  assert.equal(w.webhook, webhook);
});
