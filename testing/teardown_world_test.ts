import assert from "node:assert/strict";
import type { Seen } from "./deletion_order.ts";
import {
  assertOrdered,
  assertReleasedWithVpc,
  PAIRS,
  TEARDOWN_HOLD,
  vmVpcPairs,
} from "./teardown_world.ts";

/** A `deleted` event of `kind` `name` in `ns` at `revision`. */
function deleted(
  kind: "VPC" | "VirtualMachine",
  name: string,
  options: { ns: string; revision: number },
): Seen {
  return {
    resource: kind === "VPC" ? "vpcs" : "virtualmachines",
    kind,
    namespace: options.ns,
    name,
    event: "deleted",
    revision: BigInt(options.revision),
    at: 0,
  };
}

/** Every pair in `ns`, each VPC `vpcAfter` revisions after its VM. */
function pairsDeleted(ns: string, vpcAfter: number): Seen[] {
  return Array.from({ length: PAIRS }, (_, i) => [
    deleted("VirtualMachine", `vm-${i}`, { ns, revision: 10 * i + 5 }),
    deleted("VPC", `vpc-${i}`, { ns, revision: 10 * i + 5 + vpcAfter }),
  ]).flat();
}

Deno.test("vmVpcPairs makes held VirtualMachines each referring to its VPC", () => {
  const objects = vmVpcPairs("ordered") as {
    kind: string;
    metadata: { name: string; namespace: string; finalizers?: string[] };
    spec: { vpcRef?: { name: string } };
  }[];
  assert.equal(objects.length, 2 * PAIRS);
  const vms = objects.filter((o) => o.kind === "VirtualMachine");
  assert.deepEqual(
    vms.map((vm) => [vm.metadata.name, vm.spec.vpcRef?.name]),
    Array.from({ length: PAIRS }, (_, i) => [`vm-${i}`, `vpc-${i}`]),
  );
  for (const o of objects) assert.equal(o.metadata.namespace, "ordered");
  for (const vm of vms) {
    assert.deepEqual(vm.metadata.finalizers, [TEARDOWN_HOLD]);
  }
});

Deno.test("assertOrdered passes only when every VPC went after its VirtualMachine", () => {
  assertOrdered(pairsDeleted("app", 1), "app");
  assert.throws(() => assertOrdered(pairsDeleted("app", -1), "app"), /vpc-0/);
  assert.throws(
    () => assertOrdered(pairsDeleted("other", 1), "app"),
    /the watch saw vm-0 deleted/,
  );
  assert.throws(
    () =>
      assertOrdered(
        pairsDeleted("app", 1).filter((s) => s.name !== "vpc-2"),
        "app",
      ),
    /the watch saw vpc-2 deleted/,
  );
});

Deno.test("assertReleasedWithVpc wants every VirtualMachine once, each while its VPC existed", () => {
  const all = Array.from({ length: PAIRS }, (_, i) => ({
    vm: `vm-${i}`,
    vpcExisted: true,
    at: i,
  }));
  assertReleasedWithVpc(all.toReversed());
  assert.throws(() => assertReleasedWithVpc(all.slice(1)));
  assert.throws(() => assertReleasedWithVpc([...all, all[0]!]));
  assert.throws(
    () =>
      assertReleasedWithVpc([
        { ...all[0]!, vpcExisted: false },
        ...all.slice(1),
      ]),
    /the VPC of vm-0 existed/,
  );
});
