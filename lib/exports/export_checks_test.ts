import assert from "node:assert/strict";
import { pruneSchema } from "../rules/mod.ts";
import {
  checkExported,
  checkFieldRef,
  checkOwnerFieldRef,
  type ExportAnswer,
  exportKey,
  servedSchema,
} from "./export_checks.ts";

const NETWORK: ExportAnswer = {
  found: true,
  types: [
    { group: "net.io", resource: "vpcs", versions: ["v1", "v2"], kind: "VPC" },
    { group: "net.io", resource: "subnets", versions: ["v1"], kind: "Subnet" },
  ],
};
const REF = { workspace: "root:net", name: "net.io", shown: "root:net" };
const VPCS = { group: "net.io", version: "v1", resource: "vpcs" };

Deno.test("checkExported() passes a type the export serves in that version", () => {
  assert.deepEqual(checkExported({ answer: NETWORK }, REF, VPCS), { ok: true });
  assert.deepEqual(
    checkExported({ answer: NETWORK }, REF, { ...VPCS, version: "v2" }),
    { ok: true },
  );
});

Deno.test("checkExported() names a type the export does not serve, and what it does", () => {
  assert.deepEqual(
    checkExported({ answer: NETWORK }, REF, { ...VPCS, group: "nett.io" }),
    {
      ok: false,
      reason: "TypeNotExported",
      message:
        "the APIExport net.io in root:net does not export vpcs.nett.io: it exports subnets.net.io (v1), vpcs.net.io (v1, v2)",
    },
  );
  assert.deepEqual(
    checkExported({ answer: NETWORK }, REF, { ...VPCS, version: "v3" }),
    {
      ok: false,
      reason: "TypeNotExported",
      message:
        "the APIExport net.io in root:net serves vpcs.net.io only in v1, v2, not v3: it exports subnets.net.io (v1), vpcs.net.io (v1, v2)",
    },
  );
  assert.match(
    (checkExported({ answer: { found: true, types: [] } }, REF, VPCS) as {
      message: string;
    }).message,
    /does not export vpcs\.net\.io: it exports nothing$/,
  );
});

Deno.test("checkExported() names an export that does not exist", () => {
  assert.deepEqual(checkExported({ answer: { found: false } }, REF, VPCS), {
    ok: false,
    reason: "APIExportNotFound",
    message:
      "there is no APIExport net.io in root:net, which should serve vpcs.net.io",
  });
});

Deno.test("checkExported() fails nothing it could not read, and says why", () => {
  assert.deepEqual(checkExported(undefined, REF, VPCS), { ok: true });
  assert.deepEqual(checkExported({ error: "403 Forbidden" }, REF, VPCS), {
    ok: true,
    unverified:
      "cannot read the APIExport net.io in root:net to check vpcs.net.io: 403 Forbidden",
  });
});

Deno.test("checkExported() keeps deciding from the last answer while a new read fails", () => {
  assert.deepEqual(
    checkExported({ answer: NETWORK, error: "timeout" }, REF, VPCS),
    { ok: true },
  );
  const failed = checkExported(
    { answer: { found: false }, error: "timeout" },
    REF,
    VPCS,
  );
  assert.equal(failed.ok, false);
  assert.match(
    (failed as { message: string }).message,
    /\(as last read; reading it again failed: timeout\)$/,
  );
});

Deno.test("exportKey() tells workspaces and names apart", () => {
  assert.notEqual(
    exportKey({ workspace: "root:a", name: "b" }),
    exportKey({ workspace: "root", name: "a:b" }),
  );
});

const VM_SCHEMA = pruneSchema({
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        vpcRef: {
          type: "object",
          properties: {
            name: { type: "string" },
            namespace: { type: "string" },
          },
        },
        config: {
          type: "object",
          "x-kubernetes-preserve-unknown-fields": true,
        },
      },
    },
  },
});
const COMPUTE: ExportAnswer = {
  found: true,
  types: [{
    group: "compute.io",
    resource: "vms",
    versions: ["v1", "v2"],
    kind: "VM",
    schemas: { v1: VM_SCHEMA },
  }],
};
const VMS = { group: "compute.io", version: "v1", resource: "vms" };

Deno.test("servedSchema() gives the schema of the version the rule names, once read", () => {
  assert.deepEqual(servedSchema({ answer: COMPUTE }, VMS), {
    version: "v1",
    schema: VM_SCHEMA,
    stale: "",
  });
  // Served without a schema: known to have none.
  assert.deepEqual(
    servedSchema({ answer: COMPUTE }, { ...VMS, version: "v2" }),
    { version: "v2", stale: "" },
  );
  assert.deepEqual(servedSchema({ answer: COMPUTE, error: "timeout" }, VMS), {
    version: "v1",
    schema: VM_SCHEMA,
    stale: " (as last read; reading it again failed: timeout)",
  });
  // Nothing to check against: not read, no export, not served, no schemas read.
  for (
    const [reading, type] of [
      [undefined, VMS],
      [{ error: "403 Forbidden" }, VMS],
      [{ answer: { found: false } }, VMS],
      [{ answer: COMPUTE }, { ...VMS, version: "v3" }],
      [{ answer: COMPUTE }, { ...VMS, resource: "disks" }],
      [{ answer: NETWORK }, VPCS],
    ] as const
  ) {
    assert.equal(servedSchema(reading, type), undefined);
  }
});

Deno.test("checkFieldRef() checks path and namespacePath, naming each by its place in the rule", () => {
  const served = servedSchema({ answer: COMPUTE }, VMS)!;
  assert.deepEqual(
    checkFieldRef(served, {
      path: ".spec.vpcRef.name",
      namespacePath: ".spec.vpcRef.namespace",
    }, { index: 0 }),
    { problems: [], unchecked: [] },
  );
  assert.deepEqual(
    checkFieldRef(served, {
      path: ".spec.vpcRefs.name",
      namespacePath: ".spec.config.ns",
    }, { index: 2 }),
    {
      problems: [
        "spec.dependencies[2].fieldRef.path: .spec.vpcRefs: no such field; did you mean .spec.vpcRef.name?",
      ],
      unchecked: [
        "spec.dependencies[2].fieldRef.namespacePath below .spec.config",
      ],
    },
  );
  assert.deepEqual(
    checkFieldRef(
      servedSchema({ answer: COMPUTE, error: "timeout" }, VMS)!,
      { path: ".spec.vpcRef" },
      { index: 1 },
    ).problems,
    [
      "spec.dependencies[1].fieldRef.path: .spec.vpcRef: is an object, not a string; did you mean .spec.vpcRef.name? (as last read; reading it again failed: timeout)",
    ],
  );
});

Deno.test("checkFieldRef() fails nothing without a schema, and says what it did not check", () => {
  const none = servedSchema({ answer: COMPUTE }, { ...VMS, version: "v2" })!;
  assert.deepEqual(
    checkFieldRef(none, { path: ".spec.nope", namespacePath: ".spec.ns" }, {
      index: 0,
    }),
    {
      problems: [],
      unchecked: [
        "spec.dependencies[0].fieldRef.path (no schema for v2)",
        "spec.dependencies[0].fieldRef.namespacePath (no schema for v2)",
      ],
    },
  );
  assert.deepEqual(
    checkFieldRef({ version: "v1", schema: {}, stale: "" }, {
      path: ".spec.nope",
    }, { index: 0 }),
    {
      problems: [],
      unchecked: ["spec.dependencies[0].fieldRef.path (the schema is open)"],
    },
  );
});

Deno.test("checkFieldRef() checks a path against each schema as read: a schema read again with the field added passes it", () => {
  const before = pruneSchema({
    type: "object",
    properties: { spec: { type: "object", properties: {} } },
  });
  const after = pruneSchema({
    type: "object",
    properties: {
      spec: {
        type: "object",
        properties: {
          vpcRef: { type: "object", properties: { name: { type: "string" } } },
        },
      },
    },
  });
  const fieldRef = { path: ".spec.vpcRef.name" };
  const check = (schema: typeof before) =>
    checkFieldRef({ version: "v1", schema, stale: "" }, fieldRef, {
      index: 0,
    }).problems.length;
  assert.equal(check(before), 1);
  assert.equal(check(before), 1, "the same schema again");
  assert.equal(check(after), 0);
  assert.equal(check(before), 1);
});

Deno.test("checkOwnerFieldRef() checks a path read on the protected object or its Namespace against their metadata", () => {
  const field = "spec.dependencies[1].fieldRef.path";
  const cases: [
    string,
    "Target" | "TargetNamespace" | "Dependent" | undefined,
    string,
    { problems: RegExp | string[]; unchecked?: string[] },
  ][] = [
    ["a label", "Target", '.metadata.labels["example.com/owner"]', {
      problems: [],
    }],
    ["an annotation", "TargetNamespace", ".metadata.annotations.owner", {
      problems: [],
    }],
    ["ownerReferences", "Target", ".metadata.ownerReferences[*].name", {
      problems: [],
    }],
    ["its own name", "TargetNamespace", ".metadata.name", { problems: [] }],
    ["a typo in metadata", "Target", '.metadata.lables["example.com/owner"]', {
      problems:
        /^spec\.dependencies\[1\]\.fieldRef\.path: \.metadata\.lables: no such field/,
    }],
    [
      "ownerReferences without [*]",
      "Target",
      ".metadata.ownerReferences.name",
      {
        problems: [
          `${field}: .metadata.ownerReferences: is a list of objects, not an object; did you mean .metadata.ownerReferences[*].name?`,
        ],
      },
    ],
    ["a list, not a string", "TargetNamespace", ".metadata.finalizers", {
      problems: /: \.metadata\.finalizers: is a list of strings, not a string/,
    }],
    ["the spec of the protected object", "Target", ".spec.ownerRef.name", {
      problems: [
        `${field}: .spec: from: Target reads only the protected object's metadata, not .spec; use a path below .metadata, such as .metadata.labels["example.com/owner"] or .metadata.ownerReferences[*].name`,
      ],
    }],
    ["the spec of the Namespace", "TargetNamespace", ".spec.finalizers", {
      problems: [
        `${field}: .spec: from: TargetNamespace reads only the metadata of the protected object's Namespace, not .spec; use a path below .metadata, such as .metadata.labels["example.com/owner"]`,
      ],
    }],
    ["the kind", "Target", ".kind.name", {
      problems: /^[^:]+: \.kind: from: Target reads only/,
    }],
    ["open in ObjectMeta", "Target", ".metadata.managedFields[*].fieldsV1.x", {
      problems: [],
      unchecked: [`${field} below .metadata.managedFields[*].fieldsV1`],
    }],
    ["read on the dependent: checkFieldRef's", "Dependent", ".spec.x", {
      problems: [],
    }],
    ["from absent: the dependent", undefined, ".spec.x", { problems: [] }],
  ];
  for (const [what, from, path, want] of cases) {
    const check = checkOwnerFieldRef(
      from === undefined ? { path } : { from, path },
      { index: 1 },
    );
    if (want.problems instanceof RegExp) {
      assert.equal(check.problems.length, 1, what);
      assert.match(check.problems[0]!, want.problems, what);
    } else {
      assert.deepEqual(check.problems, want.problems, what);
    }
    assert.deepEqual(check.unchecked, want.unchecked ?? [], what);
  }
});

Deno.test("checkExported() refuses a type served from another virtual workspace (kcp v0.31's storage.virtual), saying so", () => {
  const answer: ExportAnswer = {
    found: true,
    types: [{ ...NETWORK.types[0]!, virtual: true }],
  };
  assert.deepEqual(checkExported({ answer }, REF, VPCS), {
    ok: false,
    reason: "TypeNotExported",
    message:
      "the APIExport net.io in root:net serves vpcs.net.io from a virtual workspace (storage.virtual), which dependency-controller does not protect or read: only types stored by kcp (storage.crd) can be covered",
  });
});
