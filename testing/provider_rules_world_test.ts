import assert from "node:assert/strict";
import { parse } from "yaml";
import { type ComponentWorld, worldPaths } from "./component_suite.ts";
import {
  attachmentRule,
  day2World,
  lookalikeWorld,
  providersWorld,
} from "./provider_rules_world.ts";

Deno.test("attachmentRule() is the day-2 rule: VPCAttachments refer to the network provider's VPCs", () => {
  const rule = parse(attachmentRule("root:day2:providers:network")) as {
    kind: string;
    metadata: { name: string };
    spec: {
      dependent: { kind: string; resource: string };
      dependencies: {
        apiExportRef: { path: string; name: string };
        resource: string;
        fieldRef: { path: string; namespacePath: string };
      }[];
    };
  };
  assert.equal(rule.kind, "DependencyRule");
  assert.equal(rule.metadata.name, "vpcattachment-vpc");
  assert.equal(rule.spec.dependent.resource, "vpcattachments");
  assert.deepEqual(rule.spec.dependencies[0]!.apiExportRef, {
    path: "root:day2:providers:network",
    name: "network.example.com",
  });
  assert.deepEqual(rule.spec.dependencies[0]!.fieldRef, {
    path: ".spec.vpcRef.name",
    namespacePath: ".spec.vpcRef.namespace",
  });
});

Deno.test("day2World() protects the VPC core of c1 with the world's rule", () => {
  const w = day2World(worldPaths("root:day2"));
  assert.equal(w.c1, "root:day2:consumers:c1");
  assert.deepEqual(w.core, {
    workspace: w.c1,
    type: "vpc",
    namespace: "default",
    name: "core",
  });
  assert.equal(w.attachmentRule, attachmentRule("root:day2:providers:network"));
});

Deno.test("lookalikeWorld() puts the tenant under the prefix and finds the compute fixtures", async () => {
  const w = lookalikeWorld(worldPaths("root:lookalike"));
  assert.equal(w.tenant, "root:lookalike:tenants:t1");
  assert.equal(w.compute, "root:lookalike:providers:compute");
  const apiexport = await Deno.readTextFile(
    `${w.computeFixtures}apiexport.yaml`,
  );
  assert.match(apiexport, /compute\.example\.com/);
});

Deno.test("providersWorld() has a second network provider, c3 bound to it, and its topology once built", () => {
  const w = providersWorld(
    { kcp: {} } as ComponentWorld,
    worldPaths("root:twins"),
  );
  assert.equal(w.network2, "root:twins:providers:network2");
  assert.equal(w.c3, "root:twins:consumers:c3");
  assert.throws(() => w.topo, /not built yet/);
  const topo = { depCtrl: { path: "root:dep-ctrl" } } as typeof w.topo;
  w.topo = topo;
  assert.equal(w.topo, topo);
});
