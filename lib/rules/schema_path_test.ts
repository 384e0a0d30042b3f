import assert from "node:assert/strict";
import { parseFieldPath } from "./field_path.ts";
import { checkSchemaPath, type SchemaPathCheck } from "./schema_path.ts";
import { pruneSchema, type SchemaNode } from "./schema_walk.ts";

const S = { type: "string" };
const ref = { type: "object", properties: { name: S, namespace: S } };

/** A VirtualMachine-like schema, as an APIResourceSchema has it. */
const VM: SchemaNode = pruneSchema({
  type: "object",
  description: "dropped",
  properties: {
    apiVersion: S,
    kind: S,
    metadata: { type: "object" },
    spec: {
      type: "object",
      properties: {
        vpcRef: ref,
        cpu: { type: "integer", minimum: 1 },
        port: { "x-kubernetes-int-or-string": true },
        tags: { type: "array", items: S },
        matrix: { type: "array", items: { type: "array", items: S } },
        volumes: {
          type: "array",
          items: {
            type: "object",
            properties: { size: S, volumeRef: ref },
          },
        },
        nics: {
          type: "array",
          items: { type: "object", properties: { subnetRef: ref } },
        },
        selector: { type: "object", additionalProperties: S },
        refsByName: { type: "object", additionalProperties: ref },
        anything: { type: "object", additionalProperties: true },
        config: {
          type: "object",
          "x-kubernetes-preserve-unknown-fields": true,
        },
        extra: {
          type: "object",
          "x-kubernetes-preserve-unknown-fields": true,
          properties: { known: { type: "integer" } },
        },
        raw: { "x-kubernetes-preserve-unknown-fields": true },
        untyped: {},
        template: {
          type: "object",
          "x-kubernetes-embedded-resource": true,
          properties: { spec: { type: "object", properties: { x: S } } },
        },
        empty: { type: "object" },
      },
    },
  },
});

function check(path: string): SchemaPathCheck {
  return checkSchemaPath(VM, parseFieldPath(path));
}

const OK: [string, string | undefined][] = [
  [".spec.vpcRef.name", undefined],
  ["spec.vpcRef.namespace", undefined],
  [".spec.nics[*].subnetRef.name", undefined],
  [".spec.volumes[*].volumeRef.name", undefined],
  [".spec.tags[*]", undefined],
  [".spec.matrix[*][*]", undefined],
  [".spec.port", undefined],
  // Map keys are segments.
  [".spec.selector.app", undefined],
  [".spec.refsByName.primary.name", undefined],
  // ObjectMeta, whatever the schema says of metadata.
  [".metadata.name", undefined],
  [".metadata.namespace", undefined],
  [".metadata.generateName", undefined],
  [".metadata.labels.app", undefined],
  [".metadata.annotations.owner", undefined],
  [".metadata.ownerReferences[*].name", undefined],
  [".metadata.ownerReferences[*].uid", undefined],
  // An embedded resource has apiVersion, kind and metadata too.
  [".spec.template.metadata.name", undefined],
  [".spec.template.kind", undefined],
  [".spec.template.spec.x", undefined],
  // Open subtrees: not checked below the open node.
  [".spec.config.vpc.name", ".spec.config"],
  [".spec.extra.anything.name", ".spec.extra"],
  [".spec.anything.a.b", ".spec.anything"],
  [".spec.raw.name", ".spec.raw"],
  [".spec.raw[*].name", ".spec.raw"],
  [".spec.untyped.name", ".spec.untyped"],
  [".spec.untyped", ".spec.untyped"],
  // Quoted keys read maps, and fields, alike.
  ['.metadata.labels["x/y"]', undefined],
  ['.metadata.labels["network.example.com/owner"]', undefined],
  ['.metadata.annotations["a.b/c"]', undefined],
  ['.metadata["labels"]["app"]', undefined],
  ['.metadata["name"]', undefined],
  ['.spec.selector["a/b"]', undefined],
  ['.spec.refsByName["p-1"].name', undefined],
  ['.spec["vpcRef"]["name"]', undefined],
  ['.spec.template["metadata"]["name"]', undefined],
  ['.spec.template["kind"]', undefined],
  ['.spec.anything["a"].b', ".spec.anything"],
  ['.spec.config["example.com/x"]', ".spec.config"],
];

Deno.test("checkSchemaPath() accepts paths the schema has, and says where it is open", () => {
  for (const [path, open] of OK) {
    const result = check(path);
    assert.deepEqual(
      result,
      open === undefined ? { ok: true } : { ok: true, open },
      path,
    );
  }
});

const WRONG: [string, string][] = [
  // A typo, with the whole corrected path.
  [
    ".spec.volume[*].volumeRef.name",
    ".spec.volume: no such field; did you mean .spec.volumes[*].volumeRef.name?",
  ],
  [
    ".spec.vpcref.name",
    ".spec.vpcref: no such field; did you mean .spec.vpcRef.name?",
  ],
  [
    ".spec.vpcRef.nmae",
    ".spec.vpcRef.nmae: no such field; did you mean .spec.vpcRef.name?",
  ],
  [
    ".metdata.name",
    ".metdata: no such field; did you mean .metadata.name?",
  ],
  [
    ".metadata.label.app",
    ".metadata.label: no such field; did you mean .metadata.labels.app?",
  ],
  // A typo whose list lacks its [*]: both corrected.
  [
    ".spec.nic.subnetRef.name",
    ".spec.nic: no such field; did you mean .spec.nics[*].subnetRef.name?",
  ],
  // Two typos.
  [
    ".spec.volume[*].volumRef.name",
    ".spec.volume: no such field; did you mean .spec.volumes[*].volumeRef.name?",
  ],
  // Nothing near: the fields that are there.
  [
    ".spec.flavor.name",
    ".spec.flavor: no such field; .spec has anything, config, cpu, empty, extra, matrix, nics, port, ...",
  ],
  [
    ".status.name",
    ".status: no such field; the object has apiVersion, kind, metadata, spec",
  ],
  [
    ".spec.empty.name",
    ".spec.empty.name: no such field; .spec.empty has no fields",
  ],
  // apiVersion, kind and metadata are known only at the top and in embedded resources.
  [
    ".spec.vpcRef.kind",
    ".spec.vpcRef.kind: no such field; .spec.vpcRef has name, namespace",
  ],
  [
    ".spec.nics[*].metadata.name",
    ".spec.nics[*].metadata: no such field; .spec.nics[*] has subnetRef",
  ],
  // Only the near name when the rest cannot be corrected.
  [
    ".spec.volume[*].disk.name",
    ".spec.volume: no such field; did you mean .spec.volumes[*]...?",
  ],
  // The leaf is not a string.
  [
    ".spec.volumes",
    ".spec.volumes: is a list of objects, not a string; did you mean .spec.volumes[*].volumeRef.name?",
  ],
  [
    ".spec.vpcRef",
    ".spec.vpcRef: is an object, not a string; did you mean .spec.vpcRef.name?",
  ],
  [
    ".spec.tags",
    ".spec.tags: is a list of strings, not a string; did you mean .spec.tags[*]?",
  ],
  [".spec.cpu", ".spec.cpu: is an integer, not a string"],
  [".spec.selector", ".spec.selector: is a map of strings, not a string"],
  [".metadata.labels", ".metadata.labels: is a map of strings, not a string"],
  [".metadata.generation", ".metadata.generation: is an integer, not a string"],
  [
    ".spec.matrix[*]",
    ".spec.matrix[*]: is a list of strings, not a string; did you mean .spec.matrix[*][*]?",
  ],
  // [*] on something that is no list.
  [
    ".spec.vpcRef[*].name",
    ".spec.vpcRef: is an object, not a list; did you mean .spec.vpcRef.name?",
  ],
  [
    ".spec.nics[*][*].subnetRef.name",
    ".spec.nics[*]: is an object, not a list; did you mean .spec.nics[*].subnetRef.name?",
  ],
  [".spec.selector[*]", ".spec.selector: is a map of strings, not a list"],
  // A field of a list without [*], or of a string.
  [
    ".spec.nics.subnetRef.name",
    ".spec.nics: is a list of objects, not an object; did you mean .spec.nics[*].subnetRef.name?",
  ],
  [
    ".spec.vpcRef.name.first",
    ".spec.vpcRef.name: is a string, not an object; did you mean .spec.vpcRef.name?",
  ],
  [".spec.cpu.count", ".spec.cpu: is an integer, not an object"],
  // A known field beside unknown ones is checked.
  [".spec.extra.known", ".spec.extra.known: is an integer, not a string"],
  // A key where there is no map.
  [
    '.spec.vpcRef["nmae"]',
    '.spec.vpcRef["nmae"]: no such field, and .spec.vpcRef is not a map; did you mean .spec.vpcRef.name?',
  ],
  [
    '.spec.empty["x"]',
    '.spec.empty["x"]: no such field, and .spec.empty is not a map; .spec.empty has no fields',
  ],
  [
    '.spec.vpcRef["x/y"]',
    '.spec.vpcRef["x/y"]: no such field, and .spec.vpcRef is not a map; .spec.vpcRef has name, namespace',
  ],
  ['.spec.cpu["x"]', ".spec.cpu: is an integer, not a map"],
  [
    '.spec.vpcRef.name["x"]',
    ".spec.vpcRef.name: is a string, not a map; did you mean .spec.vpcRef.name?",
  ],
  // A key in a map of the wrong values.
  [
    '.spec.selector["a"][*]',
    '.spec.selector["a"]: is a string, not a list; did you mean .spec.selector["a"]?',
  ],
  [
    '.spec.refsByName["p-1"]',
    '.spec.refsByName["p-1"]: is an object, not a string; did you mean .spec.refsByName["p-1"].name?',
  ],
  [
    '.metadata.labels["a"].name',
    '.metadata.labels["a"]: is a string, not an object; did you mean .metadata.labels["a"]?',
  ],
];

Deno.test("checkSchemaPath() names the first bad segment, what is there and the nearest path", () => {
  for (const [path, message] of WRONG) {
    const result = check(path);
    assert.equal(result.ok, false, path);
    assert.equal(result.ok ? "" : result.message, message, path);
  }
});

Deno.test("checkSchemaPath() returns the parts of a mismatch, and every suggestion passes", () => {
  assert.deepEqual(check(".spec.volume[*].volumeRef.name"), {
    ok: false,
    at: ".spec.volume",
    problem: "no such field",
    suggestion: ".spec.volumes[*].volumeRef.name",
    message:
      ".spec.volume: no such field; did you mean .spec.volumes[*].volumeRef.name?",
  });
  assert.deepEqual(check(".spec.cpu"), {
    ok: false,
    at: ".spec.cpu",
    problem: "is an integer, not a string",
    message: ".spec.cpu: is an integer, not a string",
  });
  for (const [path] of WRONG) {
    const result = check(path);
    if (result.ok || result.suggestion === undefined) continue;
    if (result.suggestion.endsWith("...")) continue;
    assert.deepEqual(check(result.suggestion), { ok: true }, result.suggestion);
  }
});

/** A type with maps and fields that are not identifiers. */
const MAPS: SchemaNode = pruneSchema({
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        byZone: {
          type: "object",
          additionalProperties: { type: "array", items: ref },
        },
        owners: {
          type: "object",
          properties: { primary: ref, "backup-1": ref, "not a key": ref },
        },
        "kebab-field": S,
        mixed: {
          type: "object",
          properties: { fixed: { type: "integer" } },
          additionalProperties: S,
        },
      },
    },
  },
});

Deno.test("checkSchemaPath() walks a key into a map's values, or into a field of that name", () => {
  const check = (text: string) => checkSchemaPath(MAPS, parseFieldPath(text));
  for (
    const text of [
      '.spec.byZone["eu-1"][*].name',
      '.spec.byZone["eu-1"][*].namespace',
      '.spec.owners["primary"].name',
      '.spec.owners["backup-1"].name',
      '.spec["kebab-field"]',
      // A key that is no field of a map with both reads the map's values.
      '.spec.mixed["other"]',
      ".spec.mixed.other",
    ]
  ) {
    assert.deepEqual(check(text), { ok: true }, text);
  }
  // A key that is a field of the map is read as that field.
  assert.deepEqual(check('.spec.mixed["fixed"]'), {
    ok: false,
    at: '.spec.mixed["fixed"]',
    problem: "is an integer, not a string",
    message: '.spec.mixed["fixed"]: is an integer, not a string',
  });
  assert.deepEqual(check('.spec.owners["x"].name'), {
    ok: false,
    at: '.spec.owners["x"]',
    problem: "no such field, and .spec.owners is not a map",
    message:
      '.spec.owners["x"]: no such field, and .spec.owners is not a map; .spec.owners has backup-1, not a key, primary',
  });
});

Deno.test("checkSchemaPath() suggests fields that are no identifiers as keys, and keys as fields where they can be", () => {
  const cases: [string, string][] = [
    [".spec.owners.backup.name", '.spec.owners["backup-1"].name'],
    [".spec.kebabfield", '.spec["kebab-field"]'],
    ['.spec.owners["primry"].name', ".spec.owners.primary.name"],
    ['.spec.byZone["eu-1"].name', '.spec.byZone["eu-1"][*].name'],
    ['.spec.byZone["eu-1"][*]', '.spec.byZone["eu-1"][*].name'],
    ['.spec.byZone["eu-1"][*][*].name', '.spec.byZone["eu-1"][*].name'],
  ];
  for (const [text, suggestion] of cases) {
    const result = checkSchemaPath(MAPS, parseFieldPath(text));
    assert.ok(!result.ok, text);
    assert.equal(result.suggestion, suggestion, text);
    assert.deepEqual(
      checkSchemaPath(MAPS, parseFieldPath(suggestion)),
      { ok: true },
      suggestion,
    );
  }
  // A name that can be written neither way is not suggested.
  const result = checkSchemaPath(
    MAPS,
    parseFieldPath(".spec.owners.notakey.name"),
  );
  assert.ok(!result.ok);
  assert.equal(result.suggestion, undefined);
});

Deno.test("checkSchemaPath() on a schema open at the top checks nothing", () => {
  for (const schema of [{}, { "x-kubernetes-preserve-unknown-fields": true }]) {
    assert.deepEqual(
      checkSchemaPath(pruneSchema(schema), parseFieldPath(".spec.x")),
      { ok: true, open: "" },
    );
  }
  // metadata is known even so, since it is every object's.
  assert.deepEqual(
    checkSchemaPath(
      pruneSchema({ type: "object" }),
      parseFieldPath(".metadata.nam"),
    ),
    {
      ok: false,
      at: ".metadata.nam",
      problem: "no such field",
      suggestion: ".metadata.name",
      message: ".metadata.nam: no such field; did you mean .metadata.name?",
    },
  );
});

Deno.test("checkSchemaPath() reads own fields only", () => {
  const result = checkSchemaPath(
    pruneSchema({ type: "object", properties: { spec: { type: "object" } } }),
    parseFieldPath(".spec.constructor"),
  );
  assert.equal(result.ok, false);
  const proto = pruneSchema(
    JSON.parse(
      '{"type":"object","properties":{"spec":{"type":"object","properties":{"__proto__":{"type":"string"}}}}}',
    ),
  );
  assert.deepEqual(
    checkSchemaPath(proto, parseFieldPath(".spec.__proto__")),
    { ok: true },
  );
  assert.deepEqual(
    checkSchemaPath(proto, parseFieldPath(".spec.toString")).ok,
    false,
  );
});

Deno.test("checkSchemaPath() names the object itself when the top is no object", () => {
  assert.deepEqual(
    checkSchemaPath({ type: "string" }, parseFieldPath(".spec.name")),
    {
      ok: false,
      at: "",
      problem: "is a string, not an object",
      message: "the object: is a string, not an object",
    },
  );
  // A type the walk does not know is left open.
  assert.deepEqual(
    checkSchemaPath(
      pruneSchema({ type: "object", properties: { spec: { type: "null" } } }),
      parseFieldPath(".spec.name"),
    ),
    { ok: true, open: ".spec" },
  );
});
