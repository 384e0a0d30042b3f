import assert from "node:assert/strict";
import { boundResourcesOf } from "./bound_resources.ts";

Deno.test("boundResourcesOf() lists each bound type with its identity and export, in order, skipping what is malformed", () => {
  assert.deepEqual(
    boundResourcesOf([
      "junk",
      { status: { boundResources: "no" } },
      {
        spec: { reference: { export: { path: "root:net", name: "net.io" } } },
        status: {
          boundResources: [
            {
              group: "net.io",
              resource: "vpcs",
              schema: { identityHash: "h1" },
            },
            { group: "net.io", resource: "subnets", schema: {} },
            { group: 7, resource: "bad" },
          ],
        },
      },
      {
        spec: { reference: { export: { name: "local.io" } } },
        status: {
          boundResources: [{ group: "local.io", resource: "things" }],
        },
      },
    ]),
    [
      {
        group: "net.io",
        resource: "vpcs",
        identityHash: "h1",
        export: { path: "root:net", name: "net.io" },
      },
      {
        group: "net.io",
        resource: "subnets",
        export: { path: "root:net", name: "net.io" },
      },
      { group: "local.io", resource: "things", export: { name: "local.io" } },
    ],
  );
});
