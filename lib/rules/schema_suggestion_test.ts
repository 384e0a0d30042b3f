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

const MAPS = pruneSchema({
  type: "object",
  properties: {
    "top-level": {
      type: "object",
      properties: { name: S },
    },
    spec: {
      type: "object",
      properties: {
        byZone: {
          type: "object",
          additionalProperties: {
            type: "array",
            items: { type: "object", properties: { "ref-name": S } },
          },
        },
        owners: {
          type: "object",
          properties: {
            "backup-1": { type: "object", properties: { name: S } },
          },
        },
        "kebab-list": { type: "array", items: S },
      },
    },
  },
});

/** The suggestion for a path that fails its walk in MAPS. */
function suggestIn(text: string): string | undefined {
  const path = parseFieldPath(text);
  const walk = walkPath(MAPS, path);
  assert.ok(!walk.ok, `${text} should fail its walk`);
  return suggestPath(MAPS, { path, failure: walk.failure });
}

Deno.test("suggestPath() keeps keys as keys, and writes fields that are no identifiers as keys", () => {
  const cases: [string, string][] = [
    // [*] added to, or dropped from, a key.
    ['.spec.byZone["eu-1"].refname', '.spec.byZone["eu-1"][*]["ref-name"]'],
    ['.spec.byZone["eu-1"][*][*]', '.spec.byZone["eu-1"][*]["ref-name"]'],
    // A key's list completed down to a string that is no identifier.
    ['.spec.byZone["eu-1"]', '.spec.byZone["eu-1"][*]["ref-name"]'],
    // A misspelt field that is no identifier.
    [".spec.owners.backup.name", '.spec.owners["backup-1"].name'],
    [".spec.kebablist", '.spec["kebab-list"][*]'],
    // A misspelt key that is a field.
    ['.spec["ownrs"]["backup-1"].name', '.spec.owners["backup-1"].name'],
  ];
  for (const [text, want] of cases) {
    const suggestion = suggestIn(text);
    assert.equal(suggestion, want, text);
    assert.deepEqual(walkPath(MAPS, parseFieldPath(want)), { ok: true }, want);
  }
  // The partial suggestion writes a key too.
  assert.equal(
    suggestIn(".spec.owners.backup.nothing.here"),
    '.spec.owners["backup-1"]...',
  );
});

Deno.test("suggestPath() never suggests a key as the first segment", () => {
  // top-level is near, but a path cannot start with ["top-level"].
  assert.equal(suggestIn(".toplevel.name"), undefined);
});
