import assert from "node:assert/strict";
import { gvrKey, typeName } from "./types.ts";

Deno.test("typeName() names a type <resource>.<group>, the core group by its resource alone", () => {
  const cases: { type: { group: string; resource: string }; want: string }[] = [
    {
      type: { group: "network.example.com", resource: "vpcs" },
      want: "vpcs.network.example.com",
    },
    { type: { group: "", resource: "namespaces" }, want: "namespaces" },
    {
      type: { group: "apps", resource: "deployments" },
      want: "deployments.apps",
    },
  ];
  for (const { type, want } of cases) assert.equal(typeName(type), want);
});

Deno.test("gvrKey() is group/version/resource, distinct per version and with an empty core group", () => {
  const cases: {
    gvr: { group: string; version: string; resource: string };
    want: string;
  }[] = [
    {
      gvr: {
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
      },
      want: "network.example.com/v1alpha1/vpcs",
    },
    {
      gvr: { group: "network.example.com", version: "v1", resource: "vpcs" },
      want: "network.example.com/v1/vpcs",
    },
    {
      gvr: { group: "", version: "v1", resource: "configmaps" },
      want: "/v1/configmaps",
    },
  ];
  for (const { gvr, want } of cases) assert.equal(gvrKey(gvr), want);
  assert.equal(
    new Set(cases.map(({ gvr }) => gvrKey(gvr))).size,
    cases.length,
  );
});
