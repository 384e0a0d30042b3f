import assert from "node:assert/strict";
import { parse } from "yaml";
import { lockYaml, VPC_PROD_YAML } from "./protection.ts";

Deno.test("lockYaml() is a Lock on vpc-prod whose reason keeps its '#'", () => {
  assert.deepEqual(parse(lockYaml("root:providers:network")), {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: { name: "prod", namespace: "default" },
    spec: {
      target: {
        apiExportRef: {
          path: "root:providers:network",
          name: "network.example.com",
        },
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        name: "vpc-prod",
      },
      reason: "production VPC, ask #netops",
    },
  });
});

Deno.test("VPC_PROD_YAML is the VPC the Lock names", () => {
  assert.deepEqual(parse(VPC_PROD_YAML), {
    apiVersion: "network.example.com/v1alpha1",
    kind: "VPC",
    metadata: { name: "vpc-prod", namespace: "default" },
    spec: { cidr: "10.1.0.0/16" },
  });
});
