import assert from "node:assert/strict";
import type { ComponentWorld } from "./component_suite.ts";
import {
  nicField,
  referencesWorld,
  vmWithNics,
  VPC_REF_FIELD,
  vpcAttachment,
} from "./references_world.ts";

Deno.test("vmWithNics() names each subnet in a NIC of its own, in order", () => {
  const vm = vmWithNics("team-a", "vm-pair", [
    { name: "net", namespace: "shared" },
    { name: "net" },
  ]) as {
    kind: string;
    metadata: { name: string; namespace: string };
    spec: { nics: { subnetRef: { name: string; namespace?: string } }[] };
  };
  assert.equal(vm.kind, "VirtualMachine");
  assert.deepEqual(vm.metadata, { name: "vm-pair", namespace: "team-a" });
  assert.deepEqual(vm.spec.nics, [
    { subnetRef: { name: "net", namespace: "shared" } },
    { subnetRef: { name: "net" } },
  ]);
});

Deno.test("vpcAttachment() is a cluster-scoped VPCAttachment naming the VPC", () => {
  assert.deepEqual(vpcAttachment("att-edge", { name: "edge" }), {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VPCAttachment",
    metadata: { name: "att-edge" },
    spec: { vpcRef: { name: "edge" } },
  });
});

Deno.test("nicField() and VPC_REF_FIELD match the fields as a denial shows them", () => {
  const nic = new RegExp(`\\(${nicField(2)}\\)$`);
  assert.match("VirtualMachine/vm (.spec.nics[2].subnetRef.name)", nic);
  assert.doesNotMatch("VirtualMachine/vm (.spec.nics[1].subnetRef.name)", nic);
  assert.doesNotMatch("VirtualMachine/vm (xspecxnics[2]xsubnetRefxname)", nic);
  assert.match(
    "VirtualMachine/vm (.spec.vpcRef.name)",
    new RegExp(`${VPC_REF_FIELD}$`),
  );
});

Deno.test("referencesWorld() is the topology at root, its topology read only once built", () => {
  const w = referencesWorld({ kcp: {} } as ComponentWorld);
  assert.equal(w.network, "root:providers:network");
  assert.equal(w.compute, "root:providers:compute");
  assert.deepEqual(w.subnet("shared", "net"), {
    workspace: "root:consumers:c1",
    type: "subnets",
    namespace: "shared",
    name: "net",
  });
  assert.equal(w.vpc("team-a", "core").type, "vpcs");
  assert.equal(w.c1, "");
  assert.throws(() => w.topo, /not built yet/);
  const topo = { depCtrl: { path: "root:dep-ctrl" } } as typeof w.topo;
  w.topo = topo;
  assert.equal(w.topo, topo);
});
