import assert from "node:assert/strict";
import { vmVpcRule } from "./rules.ts";

Deno.test("vmVpcRule() is the VM-to-VPC rule the demo and the docs declare", () => {
  assert.deepEqual(vmVpcRule("root:providers:network"), {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "vm-vpc" },
    spec: {
      dependent: {
        apiExportName: "compute.example.com",
        group: "compute.example.com",
        version: "v1alpha1",
        kind: "VirtualMachine",
        resource: "virtualmachines",
      },
      dependencies: [{
        apiExportRef: {
          path: "root:providers:network",
          name: "network.example.com",
        },
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpcRef.name" },
      }],
    },
  });
  assert.equal(
    (vmVpcRule("root:n", "other").metadata as { name: string }).name,
    "other",
  );
});
