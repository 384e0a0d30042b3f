import assert from "node:assert/strict";
import { type ComponentWorld, worldPaths } from "./component_suite.ts";
import { labelPath } from "./owners.ts";
import {
  escape,
  GUARDED_BY_LABEL,
  ownerWorld,
  PROTECTION_SWITCH,
} from "./owner_world.ts";

/** An owners world whose kcp answers kubectlOk with the call it got. */
function world(): ComponentWorld {
  const kcp = {
    kubectlOk(args: readonly string[], options: { workspace: string }) {
      return Promise.resolve(`${options.workspace}: ${args.join(" ")}`);
    },
  };
  return { kcp } as unknown as ComponentWorld;
}

Deno.test("ownerWorld() has an owners provider and two consumers under the prefix", () => {
  const w = ownerWorld(world(), worldPaths("root:owners"));
  assert.equal(w.network, "root:owners:providers:network");
  assert.equal(w.compute, "root:owners:providers:compute");
  assert.equal(w.owners, "root:owners:providers:owners");
  assert.equal(w.c1, "root:owners:consumers:c1");
  assert.equal(w.c2, "root:owners:consumers:c2");
  assert.equal(w.depCtrl, "");
  const target = w.subnet("team-a", "s-1");
  assert.deepEqual(target, {
    workspace: w.c1,
    type: "subnet",
    namespace: "team-a",
    name: "s-1",
  });
  assert.deepEqual(w.inC2(target), { ...target, workspace: w.c2 });
});

Deno.test("ownerWorld().uidOf() reads metadata.uid in c1 unless told another workspace", async () => {
  const w = ownerWorld(world(), worldPaths("root:owners"));
  assert.equal(
    await w.uidOf(["network", "net-a", "-n", "team-a"]),
    "root:owners:consumers:c1: get network net-a -n team-a -o jsonpath={.metadata.uid}",
  );
  assert.equal(
    await w.uidOf(["project", "p-1"], w.c2),
    "root:owners:consumers:c2: get project p-1 -o jsonpath={.metadata.uid}",
  );
});

Deno.test("escape() lets a label path and the switch be matched literally", () => {
  const field = labelPath(GUARDED_BY_LABEL);
  const pattern = new RegExp(
    `^${escape(field)}, with ${escape(PROTECTION_SWITCH)}$`,
  );
  assert.match(`${field}, with ${PROTECTION_SWITCH}`, pattern);
  assert.doesNotMatch(
    `.metadata.labels["network.example.com/guarded-byX"], with ${PROTECTION_SWITCH}`,
    pattern,
  );
});
