import assert from "node:assert/strict";
import {
  exportedTarget,
  lockManifest,
  subnetManifest,
  vmManifest,
  vpcManifest,
} from "./objects.ts";

Deno.test("vpcManifest() writes what is given and nothing else", () => {
  assert.deepEqual(vpcManifest("core"), {
    apiVersion: "network.example.com/v1alpha1",
    kind: "VPC",
    metadata: { name: "core", namespace: "default" },
    spec: {},
  });
  assert.deepEqual(
    vpcManifest("edge", {
      namespace: "team-a",
      labels: { tier: "gold" },
      annotations: { note: "x" },
      cidr: "10.0.0.0/16",
    }),
    {
      apiVersion: "network.example.com/v1alpha1",
      kind: "VPC",
      metadata: {
        name: "edge",
        namespace: "team-a",
        labels: { tier: "gold" },
        annotations: { note: "x" },
      },
      spec: { cidr: "10.0.0.0/16" },
    },
  );
  assert.equal(subnetManifest("s-1").kind, "Subnet");
});

Deno.test("vmManifest() names its VPCs and merges further spec fields", () => {
  assert.deepEqual(vmManifest("vm-1").spec, {});
  assert.deepEqual(
    vmManifest("vm-1", {
      vpc: "a",
      altVpc: "b",
      spec: { nics: [{ subnetRef: { name: "s" } }] },
    }).spec,
    {
      vpcRef: { name: "a" },
      altVpcRef: { name: "b" },
      nics: [{ subnetRef: { name: "s" } }],
    },
  );
});

Deno.test("lockManifest() on an exported type names the export; operations only if given", () => {
  const target = exportedTarget("root:providers:compute", {
    resource: "virtualmachines",
    name: "vm-1",
  });
  assert.deepEqual(target, {
    apiExportRef: {
      path: "root:providers:compute",
      name: "compute.example.com",
    },
    group: "compute.example.com",
    version: "v1alpha1",
    resource: "virtualmachines",
    name: "vm-1",
  });
  assert.deepEqual(lockManifest("keep", { target, reason: "r" }).spec, {
    target,
    reason: "r",
  });
  assert.deepEqual(
    lockManifest("keep", {
      namespace: "team-a",
      target,
      reason: "r",
      operations: ["Delete", "Update"],
    }),
    {
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "Lock",
      metadata: { name: "keep", namespace: "team-a" },
      spec: { target, reason: "r", operations: ["Delete", "Update"] },
    },
  );
});
