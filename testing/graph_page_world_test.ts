import assert from "node:assert/strict";
import { graphPageWorld, subnetVpcLabelRule } from "./graph_page_world.ts";

Deno.test("graphPageWorld(): the workspaces under root, two rules enforced and two in a cycle, nothing started", () => {
  const w = graphPageWorld();
  assert.equal(w.network, "root:providers:network");
  assert.equal(w.c1, "root:consumers:c1");
  assert.deepEqual(w.rules.map((r) => [r.workspace, r.name, r.reason]), [
    ["root:providers:compute", "vm-network", "Enforced"],
    ["root:providers:owners", "network-owner", "Enforced"],
    ["root:providers:network", "subnet-vpc", "DependencyCycle"],
    ["root:providers:network", "vpc-subnet", "DependencyCycle"],
  ]);
  assert.deepEqual(w.clusters, {});
  assert.equal(w.controller, undefined);
  assert.equal(w.graph, undefined);
});

Deno.test("subnetVpcLabelRule(): Subnets name a VPC of the network provider in a label", () => {
  const rule = subnetVpcLabelRule("root:p:network") as {
    metadata: { name: string };
    spec: { dependencies: Record<string, unknown>[] };
  };
  assert.equal(rule.metadata.name, "subnet-vpc");
  assert.deepEqual(rule.spec.dependencies, [{
    apiExportRef: { path: "root:p:network", name: "network.example.com" },
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
    fieldRef: { path: '.metadata.labels["network.example.com/vpc"]' },
  }]);
});
