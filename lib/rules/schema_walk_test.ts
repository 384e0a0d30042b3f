import assert from "node:assert/strict";
import { parseFieldPath } from "./field_path.ts";
import { checkSchemaPath } from "./schema_path.ts";
import {
  fieldNames,
  fieldOf,
  listDepth,
  OBJECT_META_SCHEMA,
  pruneSchema,
  shapeOf,
  walkPath,
} from "./schema_walk.ts";

Deno.test("pruneSchema() keeps only what the walk reads", () => {
  assert.deepEqual(
    pruneSchema({
      type: "object",
      description: "a VM",
      required: ["spec"],
      "x-kubernetes-validations": [{ rule: "true" }],
      properties: {
        spec: {
          type: "object",
          "x-kubernetes-preserve-unknown-fields": true,
          "x-kubernetes-embedded-resource": false,
          properties: { a: { type: "string", pattern: "^a$", maxLength: 3 } },
        },
        list: { type: "array", items: { type: "integer", format: "int32" } },
        map: { type: "object", additionalProperties: { type: "string" } },
        any: { type: "object", additionalProperties: true },
        port: {
          "x-kubernetes-int-or-string": true,
          anyOf: [{ type: "integer" }],
        },
        tmpl: { type: "object", "x-kubernetes-embedded-resource": true },
        bad: "not a schema",
      },
    }),
    {
      type: "object",
      properties: {
        spec: {
          type: "object",
          properties: { a: { type: "string" } },
          "x-kubernetes-preserve-unknown-fields": true,
        },
        list: { type: "array", items: { type: "integer" } },
        map: { type: "object", additionalProperties: { type: "string" } },
        any: { type: "object", additionalProperties: true },
        port: { "x-kubernetes-int-or-string": true },
        tmpl: { type: "object", "x-kubernetes-embedded-resource": true },
        bad: {},
      },
    },
  );
  assert.deepEqual(pruneSchema(undefined), {});
  assert.deepEqual(pruneSchema([{ type: "string" }]), {});
});

Deno.test("pruneSchema() keeps very deep schemas open instead of recursing on", () => {
  let deep: unknown = { type: "string" };
  for (let i = 0; i < 200; i++) {
    deep = { type: "object", properties: { a: deep } };
  }
  const pruned = pruneSchema(deep);
  const path = parseFieldPath(`.${new Array(200).fill("a").join(".")}`);
  const result = checkSchemaPath(pruned, path);
  assert.equal(result.ok, true);
  assert.ok(result.ok && result.open !== undefined && result.open.length > 0);
});

Deno.test("OBJECT_META_SCHEMA has ObjectMeta's string fields", () => {
  for (const name of ["name", "namespace", "generateName", "uid"]) {
    assert.deepEqual(
      OBJECT_META_SCHEMA.properties?.[name],
      { type: "string" },
      name,
    );
  }
});

Deno.test("walkPath() stops at the first bad segment, or says where the schema is open", () => {
  const schema = pruneSchema({
    type: "object",
    properties: {
      spec: {
        type: "object",
        properties: {
          tags: { type: "array", items: { type: "string" } },
          cpu: { type: "integer" },
          config: {
            type: "object",
            "x-kubernetes-preserve-unknown-fields": true,
          },
        },
      },
    },
  });
  const walk = (path: string) => walkPath(schema, parseFieldPath(path));
  assert.deepEqual(walk(".spec.tags[*]"), { ok: true });
  assert.deepEqual(walk(".metadata.name"), { ok: true });
  assert.deepEqual(walk(".spec.config.a.b"), {
    ok: true,
    open: ".spec.config",
  });
  const missing = walk(".spec.name");
  assert.equal(missing.ok, false);
  assert.ok(!missing.ok && missing.failure.kind === "field");
  assert.equal(missing.failure.at, ".spec.name");
  assert.equal(missing.failure.prefix, ".spec");
  const leaf = walk(".spec.cpu");
  assert.ok(!leaf.ok && leaf.failure.kind === "leaf");
  const notList = walk(".spec.cpu[*]");
  assert.ok(!notList.ok && notList.failure.kind === "notList");
  assert.equal(notList.failure.taken, 0);
  const notObject = walk(".spec.cpu.x");
  assert.ok(!notObject.ok && notObject.failure.kind === "notObject");
  assert.equal(notObject.failure.segment, 2);
});

Deno.test("shapeOf(), fieldOf(), fieldNames() and listDepth() read one schema node", () => {
  assert.equal(shapeOf({ type: "string" }), "string");
  assert.equal(shapeOf({ "x-kubernetes-int-or-string": true }), "intOrString");
  assert.equal(shapeOf({ properties: {} }), "object");
  assert.equal(shapeOf({ additionalProperties: false }), "object");
  assert.equal(shapeOf({ items: {} }), "array");
  assert.equal(shapeOf({ type: "null" }), "open");
  assert.equal(shapeOf({}), "open");
  const node = { type: "object", properties: { spec: { type: "string" } } };
  assert.deepEqual(fieldOf(node, "spec", false), { type: "string" });
  assert.equal(fieldOf(node, "kind", false), undefined);
  assert.deepEqual(fieldOf(node, "kind", true), { type: "string" });
  assert.equal(fieldOf(node, "metadata", true), OBJECT_META_SCHEMA);
  assert.equal(fieldOf({ additionalProperties: true }, "x", false), "open");
  assert.deepEqual(fieldNames(node, false), ["spec"]);
  assert.deepEqual(fieldNames(node, true), [
    "apiVersion",
    "kind",
    "metadata",
    "spec",
  ]);
  assert.equal(listDepth({ type: "string" }), 0);
  assert.equal(
    listDepth({ type: "array", items: { type: "array", items: {} } }),
    2,
  );
});

Deno.test("walkPath() walks a key like a field, into properties or a map's values, and writes it in brackets", () => {
  const schema = pruneSchema({
    type: "object",
    properties: {
      spec: {
        type: "object",
        properties: {
          byZone: {
            type: "object",
            additionalProperties: {
              type: "array",
              items: {
                type: "object",
                properties: { name: { type: "string" } },
              },
            },
          },
          owners: {
            type: "object",
            properties: { primary: { type: "string" } },
          },
          config: {
            type: "object",
            additionalProperties: true,
          },
        },
      },
    },
  });
  const walk = (path: string) => walkPath(schema, parseFieldPath(path));
  assert.deepEqual(walk('.spec.byZone["eu-1"][*].name'), { ok: true });
  assert.deepEqual(walk('.spec["owners"]["primary"]'), { ok: true });
  assert.deepEqual(walk('.metadata.labels["example.com/x"]'), { ok: true });
  assert.deepEqual(walk('.metadata.annotations["a.b/c"]'), { ok: true });
  assert.deepEqual(walk('.spec.config["a/b"].c'), {
    ok: true,
    open: ".spec.config",
  });
  const missing = walk('.spec.owners["x-1"].name');
  assert.ok(!missing.ok && missing.failure.kind === "field");
  assert.equal(missing.failure.segment, 2);
  assert.equal(missing.failure.at, '.spec.owners["x-1"]');
  assert.equal(missing.failure.prefix, ".spec.owners");
  const unlisted = walk('.spec.byZone["eu-1"].name');
  assert.ok(!unlisted.ok && unlisted.failure.kind === "notObject");
  assert.equal(unlisted.failure.at, '.spec.byZone["eu-1"]');
  const leaf = walk('.spec.byZone["eu-1"][*]');
  assert.ok(!leaf.ok && leaf.failure.kind === "leaf");
  assert.equal(leaf.failure.at, '.spec.byZone["eu-1"][*]');
  const notObject = walk('.spec.owners["primary"]["x"]');
  assert.ok(!notObject.ok && notObject.failure.kind === "notObject");
  assert.equal(notObject.failure.at, '.spec.owners["primary"]');
});

Deno.test("fieldOf() reads a map's values for any key, and a property first", () => {
  const map = {
    type: "object",
    properties: { fixed: { type: "integer" } },
    additionalProperties: { type: "string" },
  };
  assert.deepEqual(fieldOf(map, "fixed", false), { type: "integer" });
  assert.deepEqual(fieldOf(map, "example.com/x", false), { type: "string" });
  assert.deepEqual(fieldOf(map, "constructor", false), { type: "string" });
  assert.equal(
    fieldOf({ type: "object", properties: {} }, "x/y", false),
    undefined,
  );
  assert.deepEqual(
    fieldOf(OBJECT_META_SCHEMA.properties!["labels"]!, "a.b/c", false),
    { type: "string" },
  );
});
