import assert from "node:assert/strict";
import {
  API_VERSION,
  type Condition,
  CONDITION_REASONS,
  ConditionSchema,
  DependencyRuleSchema,
  type DependencyRuleStatus,
  DependencyRuleStatusSchema,
  GROUP,
  INDEXED_CONDITION,
  INDEXED_CONDITION_REASONS,
  KIND,
  parseDependencyRule,
  READY_CONDITION,
  ruleKey,
  VERSION,
  WEBHOOKS_INSTALLED_CONDITION,
} from "./api.ts";
import { FIELD_PATH_PATTERN, tryParseFieldPath } from "./field_path.ts";

type Key = string | number;

/** The rule from the reference documentation: a VM depends on its VPC. */
function validRule(): Record<string, unknown> {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: {
      name: "vm-dependencies",
      uid: "5f1c7c57-7d0a-4a4f-9a51-0d3c1d3bb0b1",
      generation: 2,
      resourceVersion: "1234",
      annotations: { "kcp.io/cluster": "2x5jd0ws3r7t" },
      labels: { team: "compute" },
      creationTimestamp: "2025-01-01T00:00:00Z",
      managedFields: [{ manager: "kubectl" }],
    },
    spec: {
      dependent: {
        apiExportName: "compute.test.io",
        group: "compute.test.io",
        version: "v1",
        kind: "VirtualMachine",
        resource: "virtualmachines",
      },
      dependencies: [
        {
          apiExportRef: {
            path: "root:network-provider",
            name: "network.test.io",
          },
          group: "network.test.io",
          version: "v1",
          resource: "vpcs",
          fieldRef: { path: ".spec.vpcRef.name" },
        },
      ],
    },
  };
}

/** A valid rule with the value at `path` replaced, or removed if `undefined`. */
function ruleWith(
  path: readonly Key[],
  value: unknown,
): Record<string, unknown> {
  const rule = validRule();
  let target: Record<Key, unknown> = rule;
  for (const key of path.slice(0, -1)) {
    target = target[key] as Record<Key, unknown>;
  }
  const last = path[path.length - 1];
  if (last === undefined) {
    throw new RangeError("Cannot edit rule: path is empty");
  }
  if (value === undefined) delete target[last];
  else target[last] = value;
  return rule;
}

function dotted(path: readonly Key[]): string {
  return path.map((key, i) =>
    typeof key === "number" ? `[${key}]` : i === 0 ? key : `.${key}`
  ).join("");
}

function errorOf(value: unknown): string {
  const result = parseDependencyRule(value);
  assert.equal(result.ok, false, "expected the value to be rejected");
  return result.ok ? "" : result.error;
}

interface FieldRule {
  paths: Key[][];
  accept: string[];
  reject: [string, string][];
}

const l63 = "a".repeat(63);

/** Values a field path or namespace path must be rejected with, and a part of the message. */
const FIELD_PATH_REJECTS: [string, string][] = [
  ["", "Cannot parse field path: path is empty: current value is ''"],
  [".", "current value is '.'"],
  [".spec", "at least 2 segments, found 1: current value is '.spec'"],
  ["spec", "current value is 'spec'"],
  [".spec..name", "current value is '.spec..name'"],
  [".spec.name.", "current value is '.spec.name.'"],
  [".spec.items[0].name", "array index: write [*]"],
  [".spec.*.name", "wildcard other than [*]"],
  [".spec.items[*.name", "brackets other than [*]"],
  [".spec.9a", "current value is '.spec.9a'"],
  [
    ".spec.a-b",
    "Cannot parse field path: segment 2 'a-b' is not an identifier: current value is '.spec.a-b'",
  ],
  [" .spec.a", "whitespace: current value is ' .spec.a'"],
];

const FIELD_RULES: Record<string, FieldRule> = {
  "DNS-subdomain names": {
    paths: [
      ["spec", "dependent", "apiExportName"],
      ["spec", "dependent", "group"],
      ["spec", "dependencies", 0, "group"],
      ["spec", "dependencies", 0, "apiExportRef", "name"],
    ],
    accept: [
      "a",
      "0",
      "compute.test.io",
      "a-b.c-d",
      "0abc.9",
      l63,
      `${l63}.${l63}.${l63}.${"d".repeat(61)}`,
    ],
    reject: [
      ["", "current value is ''"],
      ["Compute.io", "current value is 'Compute.io'"],
      ["-a", "current value is '-a'"],
      ["a-", "current value is 'a-'"],
      ["a-.b", "current value is 'a-.b'"],
      [".a", "current value is '.a'"],
      ["a.", "current value is 'a.'"],
      ["a..b", "current value is 'a..b'"],
      ["a_b", "current value is 'a_b'"],
      ["a b", "current value is 'a b'"],
      [`${l63}a.io`, "at most 63 characters"],
      [`${l63}.${l63}.${l63}.${"d".repeat(62)}`, "current length is 254"],
    ],
  },
  "versions": {
    paths: [
      ["spec", "dependent", "version"],
      ["spec", "dependencies", 0, "version"],
    ],
    accept: ["v1", "v1alpha1", "v2beta3", "v10", "v1beta10", "v3alpha12"],
    reject: [
      ["v0", "must look like v1, v1alpha1 or v2beta3: current value is 'v0'"],
      ["v01", "current value is 'v01'"],
      ["v1alpha", "current value is 'v1alpha'"],
      ["v1alpha0", "current value is 'v1alpha0'"],
      ["v1gamma1", "current value is 'v1gamma1'"],
      ["V1", "current value is 'V1'"],
      ["1", "current value is '1'"],
      ["v1 ", "current value is 'v1 '"],
      ["", "current value is ''"],
    ],
  },
  "kinds": {
    paths: [["spec", "dependent", "kind"]],
    accept: ["VirtualMachine", "V", "VM2", "A".repeat(63)],
    reject: [
      ["virtualMachine", "upper-case letter"],
      ["9VM", "current value is '9VM'"],
      ["Virtual-Machine", "current value is 'Virtual-Machine'"],
      ["Virtual_Machine", "current value is 'Virtual_Machine'"],
      ["", "current value is ''"],
      ["A".repeat(64), "at most 63 characters: current length is 64"],
    ],
  },
  "resources": {
    paths: [
      ["spec", "dependent", "resource"],
      ["spec", "dependencies", 0, "resource"],
    ],
    accept: ["vpcs", "virtualmachines", "v2s", l63],
    reject: [
      ["Vpcs", "starting with a letter: current value is 'Vpcs'"],
      ["2vpcs", "current value is '2vpcs'"],
      ["vpc-s", "current value is 'vpc-s'"],
      ["vpc.s", "current value is 'vpc.s'"],
      ["vpc_s", "current value is 'vpc_s'"],
      ["", "current value is ''"],
      [`${l63}a`, "at most 63 characters: current length is 64"],
    ],
  },
  "workspace paths": {
    paths: [["spec", "dependencies", 0, "apiExportRef", "path"]],
    accept: [
      "root",
      "root:org-1:team-2",
      "root:network-provider",
      `root:${l63}`,
    ],
    reject: [
      ["root:", "workspace path"],
      ["Root", "current value is 'Root'"],
      ["root::a", "current value is 'root::a'"],
      ["root:a_b", "current value is 'root:a_b'"],
      [":root", "current value is ':root'"],
      ["root:-a", "current value is 'root:-a'"],
      ["root:a b", "current value is 'root:a b'"],
      [`root:${l63}a`, `current value is 'root:${l63}a'`],
      ["", "current value is ''"],
    ],
  },
  "field paths": {
    paths: [["spec", "dependencies", 0, "fieldRef", "path"]],
    accept: [
      ".spec.vpcRef.name",
      "spec.vpcRef.name",
      ".a_b.C9",
      ".spec.vpcRefs[*].name",
      ".spec.refs[*]",
    ],
    reject: FIELD_PATH_REJECTS,
  },
  "namespace paths": {
    paths: [["spec", "dependencies", 0, "fieldRef", "namespacePath"]],
    accept: [
      ".spec.vpcRef.name",
      "spec.vpcRef.name",
      ".a_b.C9",
    ],
    reject: FIELD_PATH_REJECTS,
  },
};

for (const [name, { paths, accept, reject }] of Object.entries(FIELD_RULES)) {
  Deno.test(`parseDependencyRule() accepts valid ${name}`, () => {
    for (const path of paths) {
      for (const value of accept) {
        const result = parseDependencyRule(ruleWith(path, value));
        assert.ok(
          result.ok,
          `${dotted(path)} = '${value}': ${result.ok ? "" : result.error}`,
        );
      }
    }
  });

  Deno.test(`parseDependencyRule() rejects invalid ${name} naming path and value`, () => {
    for (const path of paths) {
      for (const [value, detail] of reject) {
        const error = errorOf(ruleWith(path, value));
        assert.ok(
          error.startsWith(`${dotted(path)}: `),
          `${dotted(path)} = '${value}': ${error}`,
        );
        assert.ok(
          error.includes(detail),
          `${dotted(path)} = '${value}': ${error}`,
        );
        assert.ok(!error.includes("; "), `one problem only: ${error}`);
      }
    }
  });
}

Deno.test("parseDependencyRule() accepts the reference rule and keeps its fields", () => {
  const result = parseDependencyRule(validRule());
  assert.ok(result.ok, result.ok ? "" : result.error);
  const { rule } = result;
  assert.equal(rule.apiVersion, API_VERSION);
  assert.equal(rule.kind, KIND);
  assert.deepEqual(rule.spec, validRule().spec);
  assert.equal(rule.metadata.name, "vm-dependencies");
  assert.equal(rule.metadata.generation, 2);
  assert.deepEqual(rule.metadata.annotations, {
    "kcp.io/cluster": "2x5jd0ws3r7t",
  });
  assert.deepEqual(rule.metadata.labels, { team: "compute" });
});

Deno.test("parseDependencyRule() keeps metadata fields the schema does not name", () => {
  const result = parseDependencyRule(validRule());
  assert.ok(result.ok);
  assert.equal(
    result.rule.metadata["creationTimestamp"],
    "2025-01-01T00:00:00Z",
  );
  assert.deepEqual(result.rule.metadata["managedFields"], [{
    manager: "kubectl",
  }]);
});

Deno.test("parseDependencyRule() accepts optional metadata and status", () => {
  const minimal = ruleWith(["metadata"], { name: "r" });
  const bare = parseDependencyRule(minimal);
  assert.ok(bare.ok, bare.ok ? "" : bare.error);
  assert.deepEqual(bare.rule.metadata, { name: "r" });
  assert.equal("status" in bare.rule, false);

  const status = { conditions: [{ type: "Ready", status: "True" }] };
  const withStatus = parseDependencyRule({ ...validRule(), status });
  assert.ok(withStatus.ok);
  assert.deepEqual(withStatus.rule.status, status);
});

Deno.test("parseDependencyRule() accepts several dependencies", () => {
  const subnets = {
    apiExportRef: {
      path: "root:providers:network",
      name: "network.example.com",
    },
    group: "network.example.com",
    version: "v1alpha1",
    resource: "subnets",
    fieldRef: { path: ".spec.subnetRef.name" },
  };
  const first =
    (validRule().spec as { dependencies: unknown[] }).dependencies[0];
  const result = parseDependencyRule(
    ruleWith(["spec", "dependencies"], [first, subnets]),
  );
  assert.ok(result.ok, result.ok ? "" : result.error);
  assert.equal(result.rule.spec.dependencies.length, 2);
  assert.equal(result.rule.spec.dependencies[1]?.resource, "subnets");
});

Deno.test("parseDependencyRule() rejects a wrong apiVersion or kind", () => {
  const cases: [Key[], unknown, string][] = [
    [
      ["apiVersion"],
      "dependencies.opendefense.cloud/v1",
      "apiVersion: must be 'dependencies.opendefense.cloud/v1alpha1': current value is 'dependencies.opendefense.cloud/v1'",
    ],
    [
      ["apiVersion"],
      "v1",
      "apiVersion: must be 'dependencies.opendefense.cloud/v1alpha1': current value is 'v1'",
    ],
    [
      ["kind"],
      "DependencyRuleList",
      "kind: must be 'DependencyRule': current value is 'DependencyRuleList'",
    ],
    [["kind"], 7, "kind: must be 'DependencyRule': current value is 7"],
    [["kind"], undefined, "kind: is required"],
    [["apiVersion"], undefined, "apiVersion: is required"],
  ];
  for (const [path, value, want] of cases) {
    assert.equal(errorOf(ruleWith(path, value)), want);
  }
});

Deno.test("parseDependencyRule() reports missing required fields", () => {
  const cases: Key[][] = [
    ["metadata"],
    ["metadata", "name"],
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
  for (const path of cases) {
    assert.equal(
      errorOf(ruleWith(path, undefined)),
      `${dotted(path)}: is required`,
    );
  }
});

Deno.test("parseDependencyRule() reports wrong types with the current value", () => {
  const cases: [Key[], unknown, string][] = [
    [["spec"], "x", "spec: must be an object: current value is 'x'"],
    [
      ["spec", "dependencies"],
      {},
      "spec.dependencies: must be an array: current value is an object",
    ],
    [
      ["spec", "dependencies", 0],
      null,
      "spec.dependencies[0]: must be an object: current value is null",
    ],
    [
      ["spec", "dependent", "group"],
      42,
      "spec.dependent.group: must be a string: current value is 42",
    ],
    [
      ["spec", "dependent", "kind"],
      ["VM"],
      "spec.dependent.kind: must be a string: current value is an array",
    ],
    [
      ["metadata", "name"],
      true,
      "metadata.name: must be a string: current value is true",
    ],
    [
      ["metadata", "generation"],
      1.5,
      "metadata.generation: must be an integer: current value is 1.5",
    ],
    [
      ["metadata", "uid"],
      7,
      "metadata.uid: must be a string: current value is 7",
    ],
    [
      ["metadata", "annotations", "kcp.io/cluster"],
      3,
      'metadata.annotations["kcp.io/cluster"]: must be a string: current value is 3',
    ],
    [
      ["metadata", "labels"],
      [],
      "metadata.labels: must be an object: current value is an array",
    ],
  ];
  for (const [path, value, want] of cases) {
    assert.equal(errorOf(ruleWith(path, value)), want);
  }
});

Deno.test("parseDependencyRule() rejects an empty name and an empty dependency list", () => {
  assert.equal(
    errorOf(ruleWith(["metadata", "name"], "")),
    "metadata.name: must not be empty",
  );
  assert.equal(
    errorOf(ruleWith(["spec", "dependencies"], [])),
    "spec.dependencies: must list at least one dependency: current value is an empty list",
  );
});

Deno.test("parseDependencyRule() reports every problem joined by semicolons", () => {
  const rule = ruleWith(["spec", "dependencies", 0, "version"], "v0");
  const spec = rule["spec"] as { dependent: Record<string, unknown> };
  spec.dependent["kind"] = "virtualMachine";
  rule["kind"] = "Other";
  const problems = errorOf(rule).split("; ");
  assert.deepEqual(problems, [
    "kind: must be 'DependencyRule': current value is 'Other'",
    "spec.dependent.kind: must start with an upper-case letter followed by letters and digits: current value is 'virtualMachine'",
    "spec.dependencies[0].version: must look like v1, v1alpha1 or v2beta3: current value is 'v0'",
  ]);
});

Deno.test("parseDependencyRule() reports problems in every dependency by index", () => {
  const first =
    (validRule().spec as { dependencies: unknown[] }).dependencies[0];
  const broken = {
    ...(first as object),
    resource: "Subnets",
    fieldRef: { path: ".spec" },
  };
  const error = errorOf(
    ruleWith(["spec", "dependencies"], [first, broken, broken]),
  );
  const paths = error.split("; ").map((problem) => problem.split(": ")[0]);
  assert.deepEqual(paths, [
    "spec.dependencies[1].resource",
    "spec.dependencies[1].fieldRef.path",
    "spec.dependencies[2].resource",
    "spec.dependencies[2].fieldRef.path",
  ]);
});

Deno.test("parseDependencyRule() rejects non-objects without throwing", () => {
  const cases: [unknown, string][] = [
    [null, "(root): must be an object: current value is null"],
    [[], "(root): must be an object: current value is an array"],
    ["x", "(root): must be an object: current value is 'x'"],
    [42, "(root): must be an object: current value is 42"],
    [true, "(root): must be an object: current value is true"],
    [undefined, "(root): is required"],
  ];
  for (const [value, want] of cases) {
    assert.deepEqual(parseDependencyRule(value), { ok: false, error: want });
  }
});

Deno.test("parseDependencyRule() reports an empty object's missing fields", () => {
  assert.equal(
    errorOf({}),
    "apiVersion: is required; kind: is required; metadata: is required; spec: is required",
  );
});

Deno.test("parseDependencyRule() does not throw on a value whose getter throws", () => {
  const hostile = validRule();
  Object.defineProperty(hostile, "spec", {
    enumerable: true,
    get() {
      throw new Error("boom");
    },
  });
  assert.deepEqual(parseDependencyRule(hostile), {
    ok: false,
    error: "(root): cannot read value: boom",
  });
});

Deno.test("DependencyRuleSchema drops unknown fields outside metadata", () => {
  const parsed = DependencyRuleSchema.parse({ ...validRule(), extra: 1 });
  assert.equal("extra" in parsed, false);
  assert.equal("creationTimestamp" in parsed.metadata, true);
});

Deno.test("API_VERSION is GROUP and VERSION joined by a slash", () => {
  assert.equal(API_VERSION, `${GROUP}/${VERSION}`);
});

Deno.test("ruleKey() joins logical cluster and name", () => {
  assert.equal(
    ruleKey("2x5jd0ws3r7t", "vm-dependencies"),
    "2x5jd0ws3r7t/vm-dependencies",
  );
  assert.notEqual(ruleKey("a", "b"), ruleKey("b", "a"));
});

Deno.test("FIELD_PATH_PATTERN accepts exactly what parseFieldPath() does", () => {
  const values = [
    ...FIELD_RULES["field paths"]?.accept ?? [],
    ...(FIELD_RULES["field paths"]?.reject ?? []).map(([value]) => value),
    "spec.a",
    "spec[0].x",
    "spec[*].x",
    "spec[*][*].x[*]",
    "spec.[*]",
    "spec.x[*]*",
    "spec.x[**]",
    "spec.*.x",
    "_._",
    "$a.b",
    ".spec.a\n",
    "..spec.a",
    // Quoted map keys.
    '.metadata.labels["network.example.com/owner"]',
    '.metadata.annotations["a.b/c"]',
    '.spec.owners["x"].name',
    '.spec.byZone["eu-1"][*].name',
    ".metadata.ownerReferences[*].name",
    'spec["k"]',
    '.spec.m[*]["a_b"][*][*]["C.9"]',
    `.spec.m["a${"-".repeat(315)}b"]`,
    `.spec.m["a${"-".repeat(316)}b"]`,
    '.spec.m[""]',
    '.spec.m["a',
    '.spec.m["a"b"]',
    '.spec.m["a:b"]',
    '.spec.m["a\\b"]',
    ".spec.m['a']",
    '.spec.m["-a"]',
    '.spec.m["a."]',
    '.spec.m["__proto__"]',
    '["spec"].name',
    '.spec.["x"]',
    '.spec.m["x"]y',
    '.spec.m["x"][0]',
    '.spec.m["x"].',
    '.spec.m["a b"]',
    '.spec.m["x"]\n',
  ];
  assert.ok(values.length > 40);
  for (const value of values) {
    assert.equal(
      FIELD_PATH_PATTERN.test(value),
      tryParseFieldPath(value) !== undefined,
      `'${value}'`,
    );
  }
});

Deno.test("ConditionSchema and DependencyRuleStatusSchema read a controller-written status", () => {
  const ready: Condition = {
    type: READY_CONDITION,
    status: "False",
    reason: "WebhooksNotInstalled",
    message: "waiting for the webhook in root:compute",
    lastTransitionTime: "2025-01-01T00:00:00Z",
  };
  const installed: Condition = {
    ...ready,
    type: WEBHOOKS_INSTALLED_CONDITION,
    status: "Unknown",
    observedGeneration: 2,
  };
  const status: DependencyRuleStatus = {
    observedGeneration: 2,
    conditions: [ready, installed],
  };
  assert.deepEqual(DependencyRuleStatusSchema.parse(status), status);
  assert.deepEqual(DependencyRuleStatusSchema.parse({}), {});
  assert.equal(READY_CONDITION, "Ready");
  assert.equal(WEBHOOKS_INSTALLED_CONDITION, "WebhooksInstalled");
  for (
    const broken of [
      { ...ready, status: "Yes" },
      { ...ready, lastTransitionTime: "2025-01-01" },
      { ...ready, reason: "" },
      { ...ready, observedGeneration: -1 },
    ]
  ) {
    assert.equal(
      ConditionSchema.safeParse(broken).success,
      false,
      JSON.stringify(broken),
    );
  }
});

Deno.test("parseDependencyRule() accepts a rule whose status is garbage", () => {
  for (const status of ["garbage", 7, null, { conditions: "x" }]) {
    const result = parseDependencyRule({ ...validRule(), status });
    assert.ok(result.ok, result.ok ? "" : result.error);
    assert.deepEqual(result.rule.status, status);
  }
});

/** The valid rule with its first dependency's `fieldRef` replaced. */
function withFieldRef(fieldRef: Record<string, string>): unknown {
  const rule = validRule() as {
    spec: { dependencies: Record<string, unknown>[] };
  };
  rule.spec.dependencies[0]!.fieldRef = fieldRef;
  return rule;
}

Deno.test("parseDependencyRule() keeps a namespace path that pairs with the path", () => {
  const fieldRef = {
    path: ".spec.nics[*].subnetRef.name",
    namespacePath: ".spec.nics[*].subnetRef.namespace",
  };
  const result = parseDependencyRule(withFieldRef(fieldRef));
  assert.ok(result.ok, result.ok ? "" : result.error);
  assert.deepEqual(result.rule.spec.dependencies[0]?.fieldRef, fieldRef);
  // A rule without one keeps having none.
  const plain = parseDependencyRule(validRule());
  assert.ok(plain.ok);
  assert.equal(
    "namespacePath" in plain.rule.spec.dependencies[0]!.fieldRef,
    false,
  );
});

Deno.test("parseDependencyRule() names a namespace path whose [*] are not the path's", () => {
  const result = parseDependencyRule(withFieldRef({
    path: ".spec.nics[*].subnetRef.name",
    namespacePath: ".spec.zones[*].namespace",
  }));
  assert.deepEqual(result, {
    ok: false,
    error:
      "spec.dependencies[0].fieldRef.namespacePath: its [*] must be those of the path at the same place, so that both read the same list element: '.spec.zones[*].namespace' does not pair with '.spec.nics[*].subnetRef.name': current value is '.spec.zones[*].namespace'",
  });
});

Deno.test("INDEXED_CONDITION has its own reasons, none a Ready reason, each one a status accepts", () => {
  assert.equal(INDEXED_CONDITION, "Indexed");
  const ready = new Set<string>(CONDITION_REASONS);
  for (const reason of INDEXED_CONDITION_REASONS) {
    assert.ok(!ready.has(reason), reason);
    const condition: Condition = {
      type: INDEXED_CONDITION,
      status: "False",
      reason,
      message: "m",
      lastTransitionTime: "2025-01-01T00:00:00Z",
    };
    assert.deepEqual(
      DependencyRuleStatusSchema.parse({ conditions: [condition] }),
      { conditions: [condition] },
    );
  }
});
