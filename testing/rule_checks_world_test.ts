import assert from "node:assert/strict";
import type { KcpApi, KubectlResult } from "./kcp_server.ts";
import { protectedTypes, vmRuleWith } from "./rule_checks_world.ts";

interface Rule {
  spec: {
    dependent: { resource: string };
    dependencies: {
      apiExportRef: { path: string; name: string };
      group: string;
      resource: string;
      fieldRef: { path: string };
    }[];
  };
}

Deno.test("vmRuleWith() writes the VM rule right unless told otherwise", () => {
  const right = vmRuleWith("root:providers:network", "vm-vpc") as Rule;
  assert.equal(right.spec.dependent.resource, "virtualmachines");
  assert.deepEqual(right.spec.dependencies, [{
    apiExportRef: {
      path: "root:providers:network",
      name: "network.example.com",
    },
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
    fieldRef: { path: ".spec.vpcRef.name" },
  }]);
  const typos = vmRuleWith("root:n", "typo", {
    group: "network.exampel.com",
    exportName: "network.example.org",
    dependentResource: "virtualmachinez",
  }) as Rule;
  assert.equal(typos.spec.dependent.resource, "virtualmachinez");
  assert.equal(typos.spec.dependencies[0]!.group, "network.exampel.com");
  assert.deepEqual(typos.spec.dependencies[0]!.apiExportRef, {
    path: "root:n",
    name: "network.example.org",
  });
});

Deno.test("protectedTypes() lists the configuration's group/resource pairs, none without one", async () => {
  const answering = (result: KubectlResult) => {
    const calls: { args: readonly string[]; workspace?: string }[] = [];
    const kcp = {
      kubectl(args: readonly string[], options?: { workspace?: string }) {
        calls.push({ args, ...options });
        return Promise.resolve(result);
      },
    } as unknown as KcpApi;
    return { kcp, calls };
  };
  const config = {
    webhooks: [
      {
        rules: [
          { apiGroups: ["network.example.com"], resources: ["vpcs"] },
          { apiGroups: ["network.example.com"], resources: ["subnets"] },
        ],
      },
    ],
  };
  const found = answering({
    code: 0,
    stdout: JSON.stringify(config),
    stderr: "",
  });
  assert.deepEqual(await protectedTypes(found.kcp, "root:n"), [
    "network.example.com/vpcs",
    "network.example.com/subnets",
  ]);
  assert.deepEqual(found.calls, [{
    args: [
      "get",
      "validatingwebhookconfigurations",
      "dependency-controller",
      "-o",
      "json",
    ],
    workspace: "root:n",
  }]);
  const none = answering({ code: 1, stdout: "", stderr: "NotFound" });
  assert.deepEqual(await protectedTypes(none.kcp, "root:n"), []);
});
