import assert from "node:assert/strict";
import { connection, FakeApi, json, status } from "../../testing/fakes.ts";
import { KubeApiError, KubeClient } from "../kcp/mod.ts";
import { readExport } from "./export_reader.ts";

const EXPORT_URL =
  "/clusters/root:compute/apis/apis.kcp.io/v1alpha2/apiexports/compute.io";
const SCHEMA_URL = (name: string) =>
  `/clusters/root:compute/apis/apis.kcp.io/v1alpha1/apiresourceschemas/${name}`;

const VM_SCHEMA = {
  type: "object",
  description: "A virtual machine.",
  properties: {
    metadata: { type: "object" },
    spec: {
      type: "object",
      required: ["vpcRef"],
      properties: {
        vpcRef: {
          type: "object",
          description: "The VPC.",
          properties: { name: { type: "string", maxLength: 63 } },
        },
        volumes: {
          type: "array",
          items: {
            type: "object",
            properties: { name: { type: "string" } },
          },
        },
      },
    },
  },
};

/** A fake kcp answering the table's paths with JSON, others with 404. */
async function withKcp(
  answers: Record<string, unknown>,
  run: (client: KubeClient, base: string) => Promise<void>,
): Promise<void> {
  const api = new FakeApi((request) => {
    const answer = answers[request.url.pathname];
    if (answer === undefined) {
      return json(status(404, "NotFound", "not found"), 404);
    }
    if (answer instanceof Response) return answer;
    return json(answer);
  });
  const client = new KubeClient(connection(api.url));
  try {
    await run(client, api.url);
  } finally {
    client.close();
    await api.close();
  }
}

function apiExport(
  resources: { name: string; schema: string }[],
): Record<string, unknown> {
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIExport",
    metadata: { name: "compute.io" },
    spec: {
      resources: resources.map((r) => ({
        group: "compute.io",
        ...r,
        storage: { crd: {} },
      })),
    },
  };
}

Deno.test("readExport() keeps each served version's schema, pruned, beside the versions and kind", async () => {
  await withKcp({
    [EXPORT_URL]: apiExport([{
      name: "virtualmachines",
      schema: "v2.virtualmachines.compute.io",
    }]),
    [SCHEMA_URL("v2.virtualmachines.compute.io")]: {
      apiVersion: "apis.kcp.io/v1alpha1",
      kind: "APIResourceSchema",
      spec: {
        group: "compute.io",
        names: { kind: "VirtualMachine", plural: "virtualmachines" },
        versions: [
          { name: "v1", served: true, storage: true, schema: VM_SCHEMA },
          // CRD-style nesting is read too.
          {
            name: "v2",
            served: true,
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: { spec: { type: "string" } },
              },
            },
          },
          // Not served: neither version nor schema.
          { name: "v0", served: false, schema: VM_SCHEMA },
          // Served without a schema: a version without a schema entry.
          { name: "v3", served: true },
        ],
      },
    },
  }, async (client, base) => {
    const answer = await readExport(client, base, {
      workspace: "root:compute",
      name: "compute.io",
    });
    assert.deepEqual(answer, {
      found: true,
      types: [{
        group: "compute.io",
        resource: "virtualmachines",
        versions: ["v1", "v2", "v3"],
        kind: "VirtualMachine",
        schemas: {
          v1: {
            type: "object",
            properties: {
              metadata: { type: "object" },
              spec: {
                type: "object",
                properties: {
                  vpcRef: {
                    type: "object",
                    properties: { name: { type: "string" } },
                  },
                  volumes: {
                    type: "array",
                    items: {
                      type: "object",
                      properties: { name: { type: "string" } },
                    },
                  },
                },
              },
            },
          },
          v2: { type: "object", properties: { spec: { type: "string" } } },
        },
      }],
    });
  });
});

Deno.test("readExport() leaves out a resource whose schema does not exist, and says when the export does not", async () => {
  await withKcp({
    [EXPORT_URL]: apiExport([
      { name: "virtualmachines", schema: "v1.virtualmachines.compute.io" },
      { name: "disks", schema: "v1.disks.compute.io" },
    ]),
    [SCHEMA_URL("v1.disks.compute.io")]: {
      spec: {
        names: { kind: "Disk" },
        versions: [{ name: "v1", served: true, schema: { type: "object" } }],
      },
    },
  }, async (client, base) => {
    assert.deepEqual(
      await readExport(client, base, {
        workspace: "root:compute",
        name: "compute.io",
      }),
      {
        found: true,
        types: [{
          group: "compute.io",
          resource: "disks",
          versions: ["v1"],
          kind: "Disk",
          schemas: { v1: { type: "object" } },
        }],
      },
    );
    assert.deepEqual(
      await readExport(client, base, {
        workspace: "root:compute",
        name: "other.io",
      }),
      { found: false },
    );
  });
});

Deno.test("readExport() throws when a schema cannot be read", async () => {
  await withKcp({
    [EXPORT_URL]: apiExport([
      { name: "virtualmachines", schema: "v1.virtualmachines.compute.io" },
    ]),
    [SCHEMA_URL("v1.virtualmachines.compute.io")]: json(
      status(403, "Forbidden", "no"),
      403,
    ),
  }, async (client, base) => {
    await assert.rejects(
      readExport(client, base, {
        workspace: "root:compute",
        name: "compute.io",
      }),
      (error) => error instanceof KubeApiError && error.status === 403,
    );
  });
});

Deno.test("readExport() keeps the export's identity hash, and none when the status has none", async () => {
  await withKcp({
    [EXPORT_URL]: { ...apiExport([]), status: { identityHash: "abc123" } },
  }, async (client, base) => {
    assert.deepEqual(
      await readExport(client, base, {
        workspace: "root:compute",
        name: "compute.io",
      }),
      { found: true, types: [], identityHash: "abc123" },
    );
  });
  await withKcp({ [EXPORT_URL]: apiExport([]) }, async (client, base) => {
    assert.deepEqual(
      await readExport(client, base, {
        workspace: "root:compute",
        name: "compute.io",
      }),
      { found: true, types: [] },
    );
  });
});

Deno.test("readExport() marks a resource served from a virtual workspace (storage.virtual)", async () => {
  const disk = {
    spec: {
      names: { kind: "Disk" },
      versions: [{ name: "v1", served: true, schema: { type: "object" } }],
    },
  };
  const exported = apiExport([
    { name: "disks", schema: "v1.disks.compute.io" },
    { name: "snapshots", schema: "v1.snapshots.compute.io" },
  ]);
  const resources = (exported.spec as { resources: Record<string, unknown>[] })
    .resources;
  resources[1]!.storage = {
    virtual: {
      reference: {
        apiGroup: "cache.kcp.io",
        kind: "CachedResourceEndpointSlice",
        name: "snapshots",
      },
    },
  };
  await withKcp({
    [EXPORT_URL]: exported,
    [SCHEMA_URL("v1.disks.compute.io")]: disk,
    [SCHEMA_URL("v1.snapshots.compute.io")]: {
      spec: { ...disk.spec, names: { kind: "Snapshot" } },
    },
  }, async (client, base) => {
    const read = await readExport(client, base, {
      workspace: "root:compute",
      name: "compute.io",
    });
    assert.ok(read.found);
    assert.deepEqual(
      read.types.map((t) => [t.resource, t.virtual ?? false]),
      [["disks", false], ["snapshots", true]],
    );
  });
});
