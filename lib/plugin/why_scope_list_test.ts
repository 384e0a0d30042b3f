import assert from "node:assert/strict";
import { isBuiltinGroup, pageOf, scopeTypes } from "./why_scope_list.ts";

const DELETED = "2026-11-29T12:00:00Z";

const RESOURCES = {
  kind: "APIResourceList",
  resources: [
    { name: "vpcs", namespaced: true, kind: "VPC", verbs: ["list", "delete"] },
    { name: "vpcs/status", namespaced: true, kind: "VPC", verbs: ["get"] },
    {
      name: "vpcattachments",
      namespaced: false,
      kind: "VPCAttachment",
      verbs: ["list", "delete"],
    },
    { name: "readonly", namespaced: true, kind: "R", verbs: ["get", "list"] },
  ],
};

Deno.test("isBuiltinGroup(): core, unqualified, *.k8s.io, kcp's and the Locks' own groups", () => {
  for (
    const g of [
      "",
      "apps",
      "rbac.authorization.k8s.io",
      "core.kcp.io",
      "dependencies.opendefense.cloud",
    ]
  ) assert.equal(isBuiltinGroup(g), true, g);
  assert.equal(isBuiltinGroup("network.example.com"), false);
});

Deno.test("scopeTypes(): types that may be listed and deleted, namespaced only for a namespace", () => {
  const gv = { group: "network.example.com", version: "v1alpha1" };
  assert.deepEqual(
    scopeTypes(RESOURCES, {
      ...gv,
      scope: { kind: "namespace", name: "a" },
    }).map((t) => t.resource),
    ["vpcs"],
  );
  assert.deepEqual(
    scopeTypes(RESOURCES, { ...gv, scope: { kind: "workspace" } }).map((t) =>
      t.resource
    ),
    ["vpcattachments", "vpcs"],
  );
  assert.deepEqual(
    scopeTypes("nonsense", { ...gv, scope: { kind: "workspace" } }),
    [],
  );
});

Deno.test("pageOf(): each item named, with its deletion and its ownerReferences as listed; the continue token and the count left", () => {
  const type = {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "subnets",
    kind: "Subnet",
    namespaced: true,
  };
  const owners = [{
    apiVersion: "owners.example.com/v1alpha1",
    kind: "Project",
    name: "p-1",
  }];
  const page = pageOf({
    kind: "PartialObjectMetadataList",
    metadata: { continue: "next", remainingItemCount: 7 },
    items: [
      {
        metadata: {
          name: "s-1",
          namespace: "team-a",
          deletionTimestamp: DELETED,
          ownerReferences: owners,
        },
      },
      { metadata: { name: "s-2", namespace: "team-a" } },
      { metadata: { namespace: "team-a" } },
      "nonsense",
    ],
  }, type);
  assert.deepEqual(page, {
    items: [
      {
        object: {
          group: "network.example.com",
          version: "v1alpha1",
          resource: "subnets",
          kind: "Subnet",
          namespace: "team-a",
          name: "s-1",
        },
        deletionTimestamp: DELETED,
        ownerReferences: owners,
      },
      {
        object: {
          group: "network.example.com",
          version: "v1alpha1",
          resource: "subnets",
          kind: "Subnet",
          namespace: "team-a",
          name: "s-2",
        },
      },
    ],
    next: "next",
    remaining: 7,
  });
  assert.deepEqual(pageOf("nonsense", type), { items: [], remaining: 0 });
});
