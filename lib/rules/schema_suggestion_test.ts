import assert from "node:assert/strict";
import { parseFieldPath } from "./field_path.ts";
import { suggestPath } from "./schema_suggestion.ts";
import { pruneSchema, walkPath } from "./schema_walk.ts";

const S = { type: "string" };
const SCHEMA = pruneSchema({
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        vpcRef: { type: "object", properties: { name: S, namespace: S } },
        volumes: {
          type: "array",
          items: {
            type: "object",
            properties: {
              size: S,
              volumeRef: { type: "object", properties: { name: S } },
            },
          },
        },
        tags: { type: "array", items: S },
        cpu: { type: "integer" },
      },
    },
  },
});

/** The suggestion for a path that fails its walk. */
function suggest(text: string): string | undefined {
  const path = parseFieldPath(text);
  const walk = walkPath(SCHEMA, path);
  assert.ok(!walk.ok, `${text} should fail its walk`);
  return suggestPath(SCHEMA, { path, failure: walk.failure });
}

Deno.test("suggestPath() corrects misspelt fields, missing or extra [*] and unfinished paths", () => {
  assert.equal(suggest(".spec.vpcref.name"), ".spec.vpcRef.name");
  assert.equal(suggest(".spec.vpcRef.nmae"), ".spec.vpcRef.name");
  assert.equal(
    suggest(".spec.volume.volumRef.name"),
    ".spec.volumes[*].volumeRef.name",
  );
  assert.equal(suggest(".spec.vpcRef[*].name"), ".spec.vpcRef.name");
  assert.equal(suggest(".spec.tags"), ".spec.tags[*]");
  assert.equal(suggest(".spec.vpcRef"), ".spec.vpcRef.name");
  assert.equal(suggest(".spec.volumes"), ".spec.volumes[*].volumeRef.name");
});

Deno.test("suggestPath() gives the near name alone when the rest cannot be corrected, and nothing when no name is near", () => {
  assert.equal(suggest(".spec.volume[*].disk.name"), ".spec.volumes[*]...");
  assert.equal(suggest(".spec.flavor.name"), undefined);
  assert.equal(suggest(".spec.cpu"), undefined);
});
