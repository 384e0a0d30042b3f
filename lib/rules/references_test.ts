import assert from "node:assert/strict";
import { parseFieldPath } from "./field_path.ts";
import { referencesOf } from "./references.ts";

const NICS = {
  fieldPath: parseFieldPath(".spec.nics[*].subnetRef.name"),
  namespacePath: parseFieldPath(".spec.nics[*].subnetRef.namespace"),
};

Deno.test("referencesOf() pairs each name with the namespace of the same element", () => {
  const vm = {
    metadata: { name: "vm-1", namespace: "team-a" },
    spec: {
      nics: [
        { subnetRef: { name: "a", namespace: "shared" } },
        { subnetRef: { name: "b" } },
        { subnetRef: { name: "c", namespace: "" } },
        { subnetRef: { name: "d", namespace: 42 } },
        { subnetRef: { namespace: "shared" } },
        { subnetRef: { name: "", namespace: "shared" } },
        { subnetRef: { name: "g", namespace: "other" } },
      ],
    },
  };
  assert.deepEqual(referencesOf(vm, NICS), [
    { name: "a", namespace: "shared", indexes: [0] },
    { name: "b", namespace: "team-a", indexes: [1] },
    { name: "c", namespace: "team-a", indexes: [2] },
    { name: "d", namespace: "team-a", indexes: [3] },
    { name: "g", namespace: "other", indexes: [6] },
  ]);
});

Deno.test("referencesOf() reads a namespace path without [*] once for every element", () => {
  const vm = {
    metadata: { namespace: "team-a" },
    spec: {
      namespace: "shared",
      nics: [{ subnetRef: { name: "a" } }, { subnetRef: { name: "b" } }],
    },
  };
  assert.deepEqual(
    referencesOf(vm, {
      fieldPath: NICS.fieldPath,
      namespacePath: parseFieldPath(".spec.namespace"),
    }),
    [
      { name: "a", namespace: "shared", indexes: [0] },
      { name: "b", namespace: "shared", indexes: [1] },
    ],
  );
});

Deno.test("referencesOf() pairs elements in lists of lists", () => {
  const object = {
    metadata: { namespace: "own" },
    spec: {
      groups: [
        {
          namespace: "g0",
          members: [{ ref: { name: "m00" } }, {
            ref: { name: "m01", namespace: "x" },
          }],
        },
        { members: [{ ref: { name: "m10" } }] },
      ],
    },
  };
  assert.deepEqual(
    referencesOf(object, {
      fieldPath: parseFieldPath(".spec.groups[*].members[*].ref.name"),
      namespacePath: parseFieldPath(".spec.groups[*].namespace"),
    }),
    [
      { name: "m00", namespace: "g0", indexes: [0, 0] },
      { name: "m01", namespace: "g0", indexes: [0, 1] },
      { name: "m10", namespace: "own", indexes: [1, 0] },
    ],
  );
  assert.deepEqual(
    referencesOf(object, {
      fieldPath: parseFieldPath(".spec.groups[*].members[*].ref.name"),
      namespacePath: parseFieldPath(".spec.groups[*].members[*].ref.namespace"),
    }).map((r) => r.namespace),
    ["own", "x", "own"],
  );
});

Deno.test("referencesOf() without a namespace path refers to the dependent's own namespace", () => {
  const path = { fieldPath: parseFieldPath(".spec.vpcRef.name") };
  assert.deepEqual(
    referencesOf({
      metadata: { namespace: "team-a" },
      spec: { vpcRef: { name: "core", namespace: "shared" } },
    }, path),
    [{ name: "core", namespace: "team-a", indexes: [] }],
  );
  // A cluster-scoped dependent refers to no namespace.
  assert.deepEqual(
    referencesOf({ metadata: {}, spec: { vpcRef: { name: "core" } } }, path),
    [{ name: "core", namespace: "", indexes: [] }],
  );
  assert.deepEqual(referencesOf({ spec: { vpcRef: { name: "core" } } }, path), [
    { name: "core", namespace: "", indexes: [] },
  ]);
});

Deno.test("referencesOf() finds nothing in what is not an object", () => {
  for (const value of [null, undefined, "vm", 1, [], [{ spec: {} }]]) {
    assert.deepEqual(referencesOf(value, NICS), [], String(value));
  }
});

Deno.test("referencesOf() reads names and namespaces under quoted keys", () => {
  const fields = {
    fieldPath: parseFieldPath('.metadata.labels["network.example.com/owner"]'),
    namespacePath: parseFieldPath(
      '.metadata.annotations["network.example.com/owner-namespace"]',
    ),
  };
  const labelled = (labels: unknown, annotations: unknown) => ({
    metadata: { namespace: "team-a", labels, annotations },
  });
  assert.deepEqual(
    referencesOf(
      labelled(
        { "network.example.com/owner": "vpc-1", app: "web" },
        { "network.example.com/owner-namespace": "shared" },
      ),
      fields,
    ),
    [{ name: "vpc-1", namespace: "shared", indexes: [] }],
  );
  assert.deepEqual(
    referencesOf(
      labelled({ "network.example.com/owner": "vpc-1" }, {}),
      fields,
    ),
    [{ name: "vpc-1", namespace: "team-a", indexes: [] }],
  );
  // A key is one map key, never a path through nested objects.
  assert.deepEqual(
    referencesOf(
      labelled({ network: { example: { "com/owner": "vpc-1" } } }, {}),
      fields,
    ),
    [],
  );
  assert.deepEqual(referencesOf(labelled(undefined, undefined), fields), []);
  // Keys under lists pair element by element, like fields.
  const zones = {
    metadata: { namespace: "own" },
    spec: {
      byZone: {
        "eu-1": [{ name: "a", namespace: "x" }, { name: "b" }],
      },
    },
  };
  assert.deepEqual(
    referencesOf(zones, {
      fieldPath: parseFieldPath('.spec.byZone["eu-1"][*].name'),
      namespacePath: parseFieldPath('.spec.byZone["eu-1"][*].namespace'),
    }),
    [
      { name: "a", namespace: "x", indexes: [0] },
      { name: "b", namespace: "own", indexes: [1] },
    ],
  );
});
