import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { loadYaml } from "@kubernetes/client-node";
import {
  DependencyRuleStatusSchema,
  FIELD_PATH_PATTERN,
  GROUP,
  KIND,
  parseDependencyRule,
  PLURAL,
  READY_CONDITION,
  VERSION,
} from "../lib/rules/mod.ts";
import { isRecord } from "../lib/runtime/mod.ts";
import {
  API_EXPORT_FILE,
  API_RESOURCE_SCHEMA_FILE,
  apiResourceSchema,
  apiResourceSchemaYaml,
  DEPENDENCY_RULES,
  LOCKS,
  type OpenApiSchema,
  setApiExportSchema,
} from "./crd_schema.ts";
import {
  dependency,
  validRule as fixtureRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../testing/fakes.ts";

type Key = string | number;

const REGENERATE = "run `deno task schema` to regenerate it";

const GENERATED = apiResourceSchema();

/** The one version's OpenAPI schema. */
function rootSchema(): OpenApiSchema {
  const [version] = GENERATED.spec.versions;
  assert.ok(version, "the APIResourceSchema has a version");
  return version.schema;
}

/** A valid rule (a VM depends on its VPC) as plain data. */
function validRule(): Record<string, unknown> {
  return structuredClone(
    fixtureRule("vm-dependencies", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
  );
}

/** `base` with the value at `path` replaced, or removed if `undefined`. */
function withValue(
  base: Record<string, unknown>,
  path: readonly Key[],
  value: unknown,
): Record<string, unknown> {
  const copy = structuredClone(base);
  let target: Record<Key, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    target = target[key] as Record<Key, unknown>;
  }
  const last = path[path.length - 1];
  if (last === undefined) throw new RangeError("Cannot edit: path is empty");
  if (value === undefined) delete target[last];
  else target[last] = value;
  return copy;
}

/**
 * A small OpenAPI checker: the problems Kubernetes would find in `value`
 * for the keywords the generated schema uses. Unknown fields are pruned by
 * Kubernetes, not rejected, so they are not problems here either.
 */
function openApiProblems(
  schema: OpenApiSchema,
  value: unknown,
  path = "",
): string[] {
  const at = path === "" ? "(root)" : path;
  if (!hasType(schema.type, value)) return [`${at}: not ${schema.type}`];
  const problems: string[] = [];
  if (
    schema.enum !== undefined && !schema.enum.some((item) => item === value)
  ) {
    problems.push(`${at}: not in enum`);
  }
  if (typeof value === "string") {
    if (schema.maxLength !== undefined && value.length > schema.maxLength) {
      problems.push(`${at}: longer than ${schema.maxLength}`);
    }
    if (schema.minLength !== undefined && value.length < schema.minLength) {
      problems.push(`${at}: shorter than ${schema.minLength}`);
    }
    if (
      schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)
    ) {
      problems.push(`${at}: does not match ${schema.pattern}`);
    }
    if (schema.format === "date-time" && !isDateTime(value)) {
      problems.push(`${at}: not a date-time`);
    }
  }
  if (typeof value === "number" && schema.minimum !== undefined) {
    if (value < schema.minimum) problems.push(`${at}: below ${schema.minimum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      problems.push(`${at}: fewer than ${schema.minItems} items`);
    }
    if (schema.items !== undefined) {
      for (const [index, item] of value.entries()) {
        problems.push(
          ...openApiProblems(schema.items, item, `${path}[${index}]`),
        );
      }
    }
  } else if (isRecord(value)) {
    for (const name of schema.required ?? []) {
      if (!(name in value)) problems.push(`${at}: ${name} is required`);
    }
    for (const [name, child] of Object.entries(schema.properties ?? {})) {
      if (value[name] !== undefined) {
        const childPath = path === "" ? name : `${path}.${name}`;
        problems.push(...openApiProblems(child, value[name], childPath));
      }
    }
  }
  return problems;
}

function hasType(type: OpenApiSchema["type"], value: unknown): boolean {
  switch (type) {
    case "object":
      return isRecord(value);
    case "array":
      return Array.isArray(value);
    case "integer":
      return Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "string":
      return typeof value === "string";
    case "boolean":
      return typeof value === "boolean";
  }
}

/** RFC 3339, as Kubernetes' `date-time` format reads it. */
function isDateTime(value: string): boolean {
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(
    value,
  ) && !Number.isNaN(Date.parse(value));
}

/** Every node of a schema with where it is. */
function* nodes(
  schema: OpenApiSchema,
  path = "(root)",
): Generator<[string, OpenApiSchema]> {
  yield [path, schema];
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    yield* nodes(child, `${path}.${name}`);
  }
  if (schema.items !== undefined) yield* nodes(schema.items, `${path}[]`);
}

Deno.test("the committed APIResourceSchemas are the generated ones", async () => {
  const committed = await Deno.readTextFile(API_RESOURCE_SCHEMA_FILE);
  assert.ok(
    committed === apiResourceSchemaYaml(),
    `manifests/kcp/dep-ctrl/apiresourceschema.yaml is out of date: ${REGENERATE}`,
  );
  assert.equal(DEPENDENCY_RULES.file.href, API_RESOURCE_SCHEMA_FILE.href);
  assert.ok(
    await Deno.readTextFile(LOCKS.file) === apiResourceSchemaYaml(LOCKS),
    `manifests/kcp/dep-ctrl/apiresourceschema-locks.yaml is out of date: ${REGENERATE}`,
  );
});

Deno.test("apiResourceSchema(LOCKS) describes a namespaced Lock with its columns and default", () => {
  const schema = apiResourceSchema(LOCKS);
  assert.match(
    schema.metadata.name,
    /^v1alpha1-[0-9a-f]{8}\.locks\.dependencies\.opendefense\.cloud$/,
  );
  assert.equal(schema.spec.scope, "Namespaced");
  assert.deepEqual(schema.spec.names, {
    kind: "Lock",
    listKind: "LockList",
    plural: "locks",
    singular: "lock",
    shortNames: ["deplock"],
    categories: ["dependencies"],
  });
  const [version] = schema.spec.versions;
  assert.deepEqual(
    version!.additionalPrinterColumns.map((c) => c.name),
    ["Target", "Resource", "Reason", "Ready", "Status", "Expires", "Age"],
  );
  // REASON is the human reason, STATUS the condition's reason.
  const columns = new Map(
    version!.additionalPrinterColumns.map((c) => [c.name, c]),
  );
  assert.equal(columns.get("Reason")?.jsonPath, ".spec.reason");
  // A string, not a date: kubectl shows a future date as <invalid>.
  assert.deepEqual(
    [columns.get("Expires")?.type, columns.get("Expires")?.jsonPath],
    ["string", ".spec.expiresAt"],
  );
  const expiresAt = version!.schema.properties?.spec?.properties?.expiresAt;
  assert.deepEqual(
    [expiresAt?.type, expiresAt?.format],
    ["string", "date-time"],
  );
  assert.equal(
    columns.get("Status")?.jsonPath,
    '.status.conditions[?(@.type=="Ready")].reason',
  );
  for (const name of ["Enforced", "TargetTypeUnknown", "ProviderMismatch"]) {
    assert.match(
      columns.get("Status")?.description ?? "",
      new RegExp(`\\b${name}\\b`),
    );
  }
  const spec = version!.schema.properties!.spec!;
  // operations has a default, so only target and reason are required.
  assert.deepEqual(spec.required?.sort(), ["reason", "target"]);
  assert.deepEqual(spec.properties!.operations!.default, ["Delete"]);
});

Deno.test("the committed apiexport.yaml names the generated schema", async () => {
  const text = await Deno.readTextFile(API_EXPORT_FILE);
  const apiExport = loadYaml<
    { spec: { resources: { name: string; schema: string }[] } }
  >(text);
  for (const source of [DEPENDENCY_RULES, LOCKS]) {
    const resource = apiExport.spec.resources.find((item) =>
      item.name === source.names.plural
    );
    assert.equal(
      resource?.schema,
      apiResourceSchema(source).metadata.name,
      `manifests/kcp/dep-ctrl/apiexport.yaml names another schema: ${REGENERATE}`,
    );
  }
  assert.equal(PLURAL, DEPENDENCY_RULES.names.plural);
});

Deno.test("apiResourceSchemaYaml() starts with a do-not-edit header and round-trips", () => {
  const text = apiResourceSchemaYaml();
  assert.match(
    text,
    /^# Generated by `deno task schema` from lib\/rules\/api\.ts/,
  );
  assert.ok(text.includes("do not edit by hand"));
  assert.ok(text.endsWith("\n"));
  // `deno fmt` rewrites single-quoted YAML scalars with double quotes.
  assert.doesNotMatch(text, /(: |- )'/, "double quotes, as deno fmt writes");
  const loaded = JSON.parse(JSON.stringify(loadYaml(text)));
  assert.deepEqual(loaded, apiResourceSchema());
});

Deno.test("apiResourceSchema() describes a cluster-scoped DependencyRule", () => {
  const schema = apiResourceSchema();
  assert.equal(schema.apiVersion, "apis.kcp.io/v1alpha1");
  assert.equal(schema.kind, "APIResourceSchema");
  assert.deepEqual(schema.spec.names, {
    kind: KIND,
    listKind: "DependencyRuleList",
    plural: PLURAL,
    singular: "dependencyrule",
    shortNames: ["deprule"],
    categories: ["dependencies"],
  });
  assert.equal(schema.spec.group, GROUP);
  assert.equal(schema.spec.scope, "Cluster");
  assert.equal(schema.spec.versions.length, 1);
  const [version] = schema.spec.versions;
  assert.ok(version);
  assert.equal(version.name, VERSION);
  assert.equal(version.served, true);
  assert.equal(version.storage, true);
  assert.deepEqual(version.subresources, { status: {} });
  assert.deepEqual(
    version.additionalPrinterColumns.map((column) => [
      column.name,
      column.type,
      column.jsonPath,
    ]),
    [
      ["Dependent", "string", ".spec.dependent.resource"],
      ["Target", "string", ".spec.dependencies[0].resource"],
      ["Path", "string", ".spec.dependencies[0].fieldRef.path"],
      ["Ready", "string", '.status.conditions[?(@.type=="Ready")].status'],
      ["Reason", "string", '.status.conditions[?(@.type=="Ready")].reason'],
      ["Age", "date", ".metadata.creationTimestamp"],
    ],
  );
  // The Reason column lists every reason the controller writes.
  const reason = version.additionalPrinterColumns.find((c) =>
    c.name === "Reason"
  );
  for (const name of ["Enforced", "TypeNotExported", "APIExportNotFound"]) {
    assert.match(reason?.description ?? "", new RegExp(`\\b${name}\\b`));
  }
  assert.equal(READY_CONDITION, "Ready");
  const root = version.schema;
  assert.deepEqual(root.required, ["spec"]);
  assert.deepEqual(Object.keys(root.properties ?? {}), [
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "status",
  ]);
  assert.deepEqual(root.properties?.["metadata"], { type: "object" });
});

/** The `fieldRef` of the first dependency in a DependencyRule's schema. */
function fieldRefSchema(root: OpenApiSchema): OpenApiSchema | undefined {
  return root.properties?.["spec"]?.properties?.["dependencies"]?.items
    ?.properties?.["fieldRef"];
}

Deno.test("the fieldRef paths of the generated and committed schemas have FIELD_PATH_PATTERN as their pattern", async () => {
  const committed = loadYaml<ReturnType<typeof apiResourceSchema>>(
    await Deno.readTextFile(API_RESOURCE_SCHEMA_FILE),
  );
  const [version] = committed.spec.versions;
  for (
    const [what, root] of [
      ["generated", rootSchema()],
      ["committed", version?.schema],
    ] as const
  ) {
    assert.ok(root !== undefined, what);
    const fieldRef = fieldRefSchema(root);
    for (const name of ["path", "namespacePath"]) {
      assert.equal(
        fieldRef?.properties?.[name]?.pattern,
        FIELD_PATH_PATTERN.source,
        `${what} fieldRef.${name}: ${REGENERATE}`,
      );
    }
  }
});

Deno.test("apiResourceSchema() is named after a hash of its spec", () => {
  const first = apiResourceSchema();
  assert.equal(apiResourceSchema().metadata.name, first.metadata.name);
  const match =
    /^v1alpha1-([0-9a-f]{8})\.dependencyrules\.dependencies\.opendefense\.cloud$/
      .exec(first.metadata.name);
  assert.ok(match, first.metadata.name);
  // The hash is of the spec with its keys sorted, so a reordering of keys in
  // the generator does not rename the schema, but any other change does.
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : isRecord(value)
      ? Object.fromEntries(
        Object.keys(value).sort().map((key) => [key, canonical(value[key])]),
      )
      : value;
  const hash = createHash("sha256").update(
    JSON.stringify(canonical(first.spec)),
  ).digest("hex");
  assert.equal(match[1], hash.slice(0, 8));
});

Deno.test("setApiExportSchema() replaces only the schema name", () => {
  const text = [
    "# comment: schema: kept",
    "spec:",
    "  resources:",
    "    - group: dependencies.opendefense.cloud",
    "      name: dependencyrules",
    "      schema: v1alpha1.dependencyrules.dependencies.opendefense.cloud  ",
    "      storage:",
    "        crd: {}",
    "",
  ].join("\n");
  const name =
    "v1alpha1-0123abcd.dependencyrules.dependencies.opendefense.cloud";
  assert.equal(
    setApiExportSchema(text, name),
    text.replace(
      "v1alpha1.dependencyrules",
      "v1alpha1-0123abcd.dependencyrules",
    ),
  );
  assert.throws(
    () => setApiExportSchema("spec: {}\n", name),
    (error) => error instanceof SyntaxError && /found 0/.test(error.message),
  );
  const twice = `${text}${text}`;
  assert.throws(
    () => setApiExportSchema(twice, name),
    (error) => error instanceof SyntaxError && /found 2/.test(error.message),
  );
});

Deno.test("the generated schema is structural", () => {
  const seen = new Set<string>();
  for (const [path, node] of nodes(rootSchema())) {
    seen.add(path);
    assert.equal(typeof node.type, "string", `${path} has a type`);
    const record = node as unknown as Record<string, unknown>;
    for (
      const keyword of [
        "$ref",
        "$defs",
        "$schema",
        "definitions",
        "additionalProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "const",
        "default",
      ]
    ) {
      assert.equal(keyword in record, false, `${path} has no ${keyword}`);
    }
    for (const name of node.required ?? []) {
      assert.ok(name in (node.properties ?? {}), `${path} defines ${name}`);
    }
    for (const key of node["x-kubernetes-list-map-keys"] ?? []) {
      assert.equal(node["x-kubernetes-list-type"], "map", path);
      assert.ok(node.items?.required?.includes(key), `${path} requires ${key}`);
    }
  }
  assert.ok(seen.has("(root).spec.dependencies[].fieldRef.path"));
  assert.ok(seen.has("(root).status.conditions[].lastTransitionTime"));
});

Deno.test("the generated status schema lists conditions by type, like metav1.Condition", () => {
  const status = rootSchema().properties?.["status"];
  assert.ok(status);
  assert.equal(status.required, undefined, "status fields are optional");
  const conditions = status.properties?.["conditions"];
  assert.ok(conditions);
  assert.equal(conditions.type, "array");
  assert.equal(conditions["x-kubernetes-list-type"], "map");
  assert.deepEqual(conditions["x-kubernetes-list-map-keys"], ["type"]);
  const condition = conditions.items;
  assert.ok(condition);
  assert.deepEqual(
    [...(condition.required ?? [])].sort(),
    ["lastTransitionTime", "message", "reason", "status", "type"],
  );
  const fields = condition.properties ?? {};
  assert.deepEqual(fields["status"]?.enum, ["True", "False", "Unknown"]);
  assert.equal(fields["lastTransitionTime"]?.format, "date-time");
  assert.equal(fields["lastTransitionTime"]?.pattern, undefined);
  assert.equal(fields["reason"]?.type, "string");
  assert.equal(fields["message"]?.type, "string");
  assert.deepEqual(fields["observedGeneration"], {
    type: "integer",
    description: "The metadata.generation the condition was set for.",
    minimum: 0,
    format: "int64",
  });
  assert.equal(status.properties?.["observedGeneration"]?.format, "int64");
});

const l63 = "a".repeat(63);
const DNS_SUBDOMAINS = [
  "a",
  "0",
  "compute.test.io",
  "a-b.c-d",
  l63,
  `${l63}a`,
  `${l63}a.io`,
  `${l63}.${l63}.${l63}.${"d".repeat(61)}`,
  `${l63}.${l63}.${l63}.${"d".repeat(62)}`,
  "",
  "A",
  "Compute.io",
  "-a",
  "a-",
  ".a",
  "a.",
  "a..b",
  "a_b",
  "a b",
];
const VERSIONS = [
  "v1",
  "v1alpha1",
  "v2beta3",
  "v10",
  "v0",
  "v01",
  "v1alpha",
  "v1alpha0",
  "V1",
  "",
];
const RESOURCES = ["vpcs", "v2s", l63, `${l63}a`, "Vpcs", "2vpcs", "vpc-s", ""];

/** Values to try at each string field, valid and invalid ones. */
const STRING_FIELDS: [Key[], string[]][] = [
  [["spec", "dependent", "apiExportName"], DNS_SUBDOMAINS],
  [["spec", "dependent", "group"], DNS_SUBDOMAINS],
  [["spec", "dependencies", 0, "group"], DNS_SUBDOMAINS],
  [["spec", "dependencies", 0, "apiExportRef", "name"], DNS_SUBDOMAINS],
  [["spec", "dependent", "version"], VERSIONS],
  [["spec", "dependencies", 0, "version"], VERSIONS],
  [["spec", "dependent", "kind"], [
    "VirtualMachine",
    "V",
    "VM2",
    "A".repeat(63),
    "A".repeat(64),
    "virtualMachine",
    "9VM",
    "Virtual-Machine",
    "",
  ]],
  [["spec", "dependent", "resource"], RESOURCES],
  [["spec", "dependencies", 0, "resource"], RESOURCES],
  [["spec", "dependencies", 0, "apiExportRef", "path"], [
    "root",
    "root:org-1:team-2",
    "root:network-provider",
    `root:${l63}`,
    `root:${l63}a`,
    "Root",
    "root:",
    "a::b",
    ":root",
    "root:-a",
    "root:a_b",
    "",
  ]],
  [["spec", "dependencies", 0, "fieldRef", "path"], [
    ".spec.vpcRef.name",
    "spec.a",
    ".a_b.C9",
    ".spec",
    "spec",
    "spec[0].x",
    "spec.*.x",
    ".spec..name",
    ".spec.name.",
    ".spec.a-b",
    " .spec.a",
    "",
    // Quoted map keys.
    '.metadata.labels["network.example.com/owner"]',
    '.metadata.annotations["a.b/c"]',
    '.spec.byZone["eu-1"][*].name',
    `.spec.m["a${"-".repeat(315)}b"]`,
    `.spec.m["a${"-".repeat(316)}b"]`,
    '.spec.m[""]',
    ".spec.m['a']",
    '.spec.m["a"',
    '.spec.m["a:b"]',
    '.spec.m["-a"]',
    '["spec"].name',
    '.spec.["x"]',
  ]],
];

const REQUIRED_FIELDS: Key[][] = [
  ["spec"],
  ["spec", "dependent"],
  ["spec", "dependencies"],
  ["spec", "dependent", "apiExportName"],
  ["spec", "dependent", "group"],
  ["spec", "dependent", "version"],
  ["spec", "dependent", "kind"],
  ["spec", "dependent", "resource"],
  ["spec", "dependencies", 0, "apiExportRef"],
  ["spec", "dependencies", 0, "apiExportRef", "path"],
  ["spec", "dependencies", 0, "apiExportRef", "name"],
  ["spec", "dependencies", 0, "group"],
  ["spec", "dependencies", 0, "version"],
  ["spec", "dependencies", 0, "resource"],
  ["spec", "dependencies", 0, "fieldRef"],
  ["spec", "dependencies", 0, "fieldRef", "path"],
];

/** Asserts that zod and the OpenAPI schema agree on `rule`. */
function assertSameVerdict(rule: Record<string, unknown>, what: string): void {
  const zod = parseDependencyRule(rule);
  const openApi = openApiProblems(rootSchema(), rule);
  assert.equal(
    openApi.length === 0,
    zod.ok,
    `${what}: zod ${zod.ok ? "accepts" : `rejects (${zod.error})`}, OpenAPI ${
      openApi.length === 0 ? "accepts" : `rejects (${openApi.join("; ")})`
    }`,
  );
}

Deno.test("zod and the OpenAPI schema agree on every string field", () => {
  let accepted = 0;
  let rejected = 0;
  for (const [path, values] of STRING_FIELDS) {
    for (const value of values) {
      const rule = withValue(validRule(), path, value);
      assertSameVerdict(rule, `${path.join(".")} = '${value}'`);
      if (parseDependencyRule(rule).ok) accepted++;
      else rejected++;
    }
  }
  assert.ok(accepted > 20 && rejected > 50, `${accepted}/${rejected}`);
});

Deno.test("zod and the OpenAPI schema agree on missing fields, wrong types and lists", () => {
  assertSameVerdict(validRule(), "the valid rule");
  for (const path of REQUIRED_FIELDS) {
    assertSameVerdict(withValue(validRule(), path, undefined), `no ${path}`);
  }
  const cases: [Key[], unknown][] = [
    [["spec", "dependencies"], []],
    [["spec", "dependencies"], {}],
    [["spec", "dependencies", 0], null],
    [["spec", "dependencies", 0], "x"],
    [["spec", "dependent"], []],
    [["spec", "dependent", "group"], 42],
    [["spec", "dependent", "kind"], ["VM"]],
    [["spec", "dependencies", 0, "fieldRef"], ".spec.a"],
    [["spec"], "x"],
  ];
  for (const [path, value] of cases) {
    assertSameVerdict(
      withValue(validRule(), path, value),
      `${path.join(".")} = ${JSON.stringify(value)}`,
    );
  }
  const rule = validRule();
  const spec = rule["spec"] as { dependencies: unknown[] };
  const [first] = spec.dependencies;
  assertSameVerdict(
    withValue(rule, ["spec", "dependencies"], [first, first, first]),
    "three dependencies",
  );
});

Deno.test("zod and the OpenAPI schema agree on status values", () => {
  const status = rootSchema().properties?.["status"];
  assert.ok(status);
  const ready = {
    type: READY_CONDITION,
    status: "True",
    reason: "WebhooksInstalled",
    message: "",
    lastTransitionTime: "2025-01-01T00:00:00Z",
    observedGeneration: 3,
  };
  const cases: [unknown, boolean][] = [
    [{}, true],
    [{ observedGeneration: 0, conditions: [] }, true],
    [{ conditions: [ready] }, true],
    [{
      conditions: [{
        ...ready,
        lastTransitionTime: "2025-01-01T00:00:00.123+02:00",
      }],
    }, true],
    [{ conditions: [{ ...ready, type: "example.com/Ready" }] }, true],
    [
      { conditions: [withValue(ready, ["observedGeneration"], undefined)] },
      true,
    ],
    [{ conditions: [{ ...ready, status: "Maybe" }] }, false],
    [{ conditions: [{ ...ready, lastTransitionTime: "yesterday" }] }, false],
    [{ conditions: [{ ...ready, reason: "" }] }, false],
    [{ conditions: [{ ...ready, reason: "Not ready" }] }, false],
    [{ conditions: [{ ...ready, type: "" }] }, false],
    [{ conditions: [{ ...ready, observedGeneration: -1 }] }, false],
    [{ conditions: [{ ...ready, observedGeneration: 1.5 }] }, false],
    [{ conditions: [withValue(ready, ["type"], undefined)] }, false],
    [{ conditions: [withValue(ready, ["message"], undefined)] }, false],
    [{ conditions: {} }, false],
    [{ observedGeneration: "1" }, false],
    ["garbage", false],
  ];
  for (const [value, valid] of cases) {
    const what = JSON.stringify(value);
    assert.equal(
      DependencyRuleStatusSchema.safeParse(value).success,
      valid,
      `zod on ${what}`,
    );
    assert.equal(
      openApiProblems(status, value).length === 0,
      valid,
      `OpenAPI on ${what}`,
    );
  }
});

Deno.test("parseDependencyRule() ignores a status the OpenAPI schema would reject", () => {
  // The controller overwrites status, so a rule with a broken one still parses.
  const rule = { ...validRule(), status: { conditions: "garbage" } };
  assert.ok(parseDependencyRule(rule).ok);
  assert.notEqual(openApiProblems(rootSchema(), rule).length, 0);
});
