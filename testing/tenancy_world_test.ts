import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { NETWORK, RULE_FILE, tenantRule } from "./tenancy_world.ts";

Deno.test("tenantRule makes a dependent refer to the network provider's VPCs by .metadata.name", () => {
  const dependent = {
    apiExportName: "rbac.authorization.k8s.io",
    group: "rbac.authorization.k8s.io",
    version: "v1",
    kind: "ClusterRole",
    resource: "clusterroles",
  };
  assert.deepEqual(tenantRule("reach-roles", dependent), {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "reach-roles" },
    spec: {
      dependent,
      dependencies: [{
        apiExportRef: { path: NETWORK, name: "network.example.com" },
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        fieldRef: { path: ".metadata.name" },
      }],
    },
  });
});

Deno.test("RULE_FILE is the provider's rule fixture, naming the network provider", () => {
  assert.ok(existsSync(RULE_FILE), RULE_FILE);
  assert.match(Deno.readTextFileSync(RULE_FILE), new RegExp(NETWORK));
});
