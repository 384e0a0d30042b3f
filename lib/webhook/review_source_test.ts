import assert from "node:assert/strict";
import { Forbidden, UnknownWorkspace } from "./review_source.ts";

Deno.test("Forbidden names the verb and type refused and how to grant it, and keeps them for the cause", () => {
  const cases: {
    verb: "get" | "list";
    type: { group: string; resource: string };
    shown: string;
  }[] = [
    {
      verb: "list",
      type: { group: "compute.example.com", resource: "virtualmachines" },
      shown: "virtualmachines.compute.example.com",
    },
    {
      verb: "get",
      type: { group: "", resource: "namespaces" },
      shown: "namespaces",
    },
  ];
  for (const { verb, type, shown } of cases) {
    const error = new Forbidden(verb, type);
    assert.ok(error instanceof Error);
    assert.equal(error.name, "Forbidden");
    assert.deepEqual(error.permission, { verb, ...type });
    assert.ok(
      error.message.startsWith(
        `the webhook's identity may not ${verb} ${shown} in this workspace (403 Forbidden): ` +
          `grant "${verb}" on ${shown} to it in system:admin of every shard`,
      ),
      error.message,
    );
    assert.match(error.message, /controller grants --kubeconfig=/);
  }
});

Deno.test("UnknownWorkspace names the logical cluster, quoted, and what to check", () => {
  const cases = [
    { cluster: "consumer1", shown: '"consumer1"' },
    { cluster: 'a"b\nc', shown: JSON.stringify('a"b\nc') },
  ];
  for (const { cluster, shown } of cases) {
    const error = new UnknownWorkspace(cluster);
    assert.ok(error instanceof Error);
    assert.equal(error.name, "UnknownWorkspace");
    assert.ok(
      error.message.startsWith(
        `the dependency webhook cannot read the workspace ${shown}: `,
      ),
      error.message,
    );
    assert.match(error.message, /manifests\/kcp\/system-admin/);
  }
});
