import assert from "node:assert/strict";
import { dependencyRule, RULE_DEPENDENTS, vmVpcRule } from "./rules.ts";

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

Deno.test("dependencyRule() writes a Subnet or an explicit dependent, owner fields, when and protectWhile, another export", () => {
  assert.deepEqual(
    dependencyRule("subnet-vpc", {
      dependent: "Subnet",
      dependencies: [{ path: "root:n", resource: "vpcs", field: ".spec.x" }],
    }).spec,
    {
      dependent: {
        apiExportName: "network.example.com",
        group: "network.example.com",
        version: "v1alpha1",
        kind: "Subnet",
        resource: "subnets",
      },
      dependencies: [{
        apiExportRef: { path: "root:n", name: "network.example.com" },
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        fieldRef: { path: ".spec.x" },
      }],
    },
  );
  const owner = {
    apiExportName: "owners.example.com",
    group: "owners.example.com",
    version: "v1alpha1",
    kind: "Project",
    resource: "projects",
  };
  assert.deepEqual(
    dependencyRule("owns", {
      dependent: owner,
      when: "object.spec.on",
      protectWhile: "Active",
      dependencies: [{
        path: "root:c",
        resource: "virtualmachines",
        from: "Target",
        field: ".metadata.ownerReferences[*].name",
        exportName: "other.example.com",
      }],
    }).spec,
    {
      dependent: owner,
      when: "object.spec.on",
      protectWhile: "Active",
      dependencies: [{
        apiExportRef: { path: "root:c", name: "other.example.com" },
        group: "compute.example.com",
        version: "v1alpha1",
        resource: "virtualmachines",
        fieldRef: { from: "Target", path: ".metadata.ownerReferences[*].name" },
      }],
    },
  );
  assert.deepEqual(
    Object.values(RULE_DEPENDENTS).map((d) => d.resource),
    ["virtualmachines", "vpcattachments", "vpcs", "subnets"],
  );
});
