import assert from "node:assert/strict";
import { parse } from "yaml";
import { exportSchemas, releaseSchemas } from "./schema_upgrade_world.ts";

Deno.test("exportSchemas reads the schema of each resource of an APIExport", () => {
  assert.deepEqual(
    exportSchemas(
      "kind: APIExport\nspec:\n  resources:\n" +
        "    - name: locks\n      schema: v1alpha1-1.locks.g\n" +
        "    - name: rules\n      schema: v1alpha1-2.rules.g\n",
    ),
    { locks: "v1alpha1-1.locks.g", rules: "v1alpha1-2.rules.g" },
  );
  assert.deepEqual(exportSchemas("kind: APIExport\n"), {});
});

Deno.test("release 0.2.0's fixture: its own Lock schema, this checkout's DependencyRule schema", async () => {
  const { released, current } = await releaseSchemas();
  assert.deepEqual(Object.keys(released).sort(), ["dependencyrules", "locks"]);
  // The 0.2.0 install applies this checkout's DependencyRule schema.
  assert.equal(released.dependencyrules, current.dependencyrules);
  assert.notEqual(released.locks, current.locks);
  const lockSchema = parse(
    await Deno.readTextFile(
      new URL(
        "fixtures/dep-ctrl-0.2.0/apiresourceschema-locks.yaml",
        import.meta.url,
      ),
    ),
  );
  assert.equal(lockSchema.metadata.name, released.locks);
  const spec = lockSchema.spec.versions[0].schema.properties.spec.properties;
  assert.ok("target" in spec);
  assert.ok(!("expiresAt" in spec));
});
