import assert from "node:assert/strict";
import fc from "fast-check";
import {
  FIELD_PATH_PATTERN,
  type FieldPath,
  type FieldSegment,
  fieldSegment,
  formatFieldName,
  formatFieldPath,
  isFieldName,
  isMapKey,
  MAX_KEY_LENGTH,
  pairingProblem,
  parseFieldPath,
  resolveFieldPath,
  resolveFieldPathAt,
  tryParseFieldPath,
} from "./field_path.ts";

/** Fixed, so that a failure is reproducible; fast-check prints the path to replay. */
const SEED = 20260517;
const RUNS = 2000;

/** Segments without lists, as the reference grammar has them. */
function plain(...names: string[]): FieldPath {
  return names.map((name) => ({ name, lists: 0 }));
}

const VALID: [string, FieldPath][] = [
  [".spec.vpcRef.name", plain("spec", "vpcRef", "name")],
  ["spec.vpcRef.name", plain("spec", "vpcRef", "name")],
  [".a_b.C9", plain("a_b", "C9")],
  ["_x._", plain("_x", "_")],
  [".metadata.name", plain("metadata", "name")],
  [".spec.nics[*].subnetRef.name", [
    { name: "spec", lists: 0 },
    { name: "nics", lists: 1 },
    { name: "subnetRef", lists: 0 },
    { name: "name", lists: 0 },
  ]],
  ["spec.groups[*].members[*].ref.name", [
    { name: "spec", lists: 0 },
    { name: "groups", lists: 1 },
    { name: "members", lists: 1 },
    { name: "ref", lists: 0 },
    { name: "name", lists: 0 },
  ]],
  [".spec.matrix[*][*].name", [
    { name: "spec", lists: 0 },
    { name: "matrix", lists: 2 },
    { name: "name", lists: 0 },
  ]],
  [".spec.names[*]", [{ name: "spec", lists: 0 }, { name: "names", lists: 1 }]],
  ["spec[*].name", [{ name: "spec", lists: 1 }, { name: "name", lists: 0 }]],
  // Quoted map keys.
  ['.metadata.labels["network.example.com/owner"]', [
    { name: "metadata", lists: 0 },
    { name: "labels", lists: 0 },
    { name: "network.example.com/owner", key: true, lists: 0 },
  ]],
  ['.metadata.annotations["a.b/c"]', [
    { name: "metadata", lists: 0 },
    { name: "annotations", lists: 0 },
    { name: "a.b/c", key: true, lists: 0 },
  ]],
  ['.spec.owners["x"].name', [
    { name: "spec", lists: 0 },
    { name: "owners", lists: 0 },
    { name: "x", key: true, lists: 0 },
    { name: "name", lists: 0 },
  ]],
  ['.spec.byZone["eu-1"][*].name', [
    { name: "spec", lists: 0 },
    { name: "byZone", lists: 0 },
    { name: "eu-1", key: true, lists: 1 },
    { name: "name", lists: 0 },
  ]],
  ['spec["k"]', [{ name: "spec", lists: 0 }, {
    name: "k",
    key: true,
    lists: 0,
  }]],
  ['.spec.m[*]["a_b"][*][*]["C.9"]', [
    { name: "spec", lists: 0 },
    { name: "m", lists: 1 },
    { name: "a_b", key: true, lists: 2 },
    { name: "C.9", key: true, lists: 0 },
  ]],
  [`.spec.m["${"a".repeat(317)}"]`, [
    { name: "spec", lists: 0 },
    { name: "m", lists: 0 },
    { name: "a".repeat(317), key: true, lists: 0 },
  ]],
];

const INVALID: [string, RegExp][] = [
  ["", /path is empty/],
  [".", /segment 1 is empty/],
  [".spec", /at least 2 segments, found 1/],
  ["spec", /at least 2 segments, found 1/],
  [".spec[*]", /at least 2 segments, found 1/],
  [".spec..name", /segment 2 is empty/],
  [".spec.name.", /segment 3 is empty/],
  ["..spec.name", /segment 1 is empty/],
  [".spec.items[0].name", /segment 2 'items\[0\]' has an array index/],
  [".spec.items[].name", /segment 2 'items\[\]' has an array index/],
  [
    ".spec.items[*.name",
    /segment 2 'items\[\*' has brackets other than \[\*\]/,
  ],
  [".spec.[*].name", /segment 2 '\[\*\]' has brackets other than \[\*\]/],
  [".spec.items[*]x.name", /segment 2 'items\[\*\]x' has brackets/],
  [".spec.*.name", /segment 2 '\*' has a wildcard other than \[\*\]/],
  [".spec.items*.name", /segment 2 'items\*' has a wildcard/],
  [".spec.9a", /segment 2 '9a' is not an identifier/],
  [".spec.a-b", /segment 2 'a-b' is not an identifier/],
  [" .spec.a", /path contains whitespace/],
  [".spec.a ", /path contains whitespace/],
  [".spec.\ta", /path contains whitespace/],
  [".spec.items[ * ].name", /path contains whitespace/],
  // Quoted map keys.
  ['.spec.m[""]', /segment 3 '\[""\]' has an empty key/],
  ['.spec.m["a', /segment 3 '\["a' has an unterminated key: end it with "\]/],
  ['.spec.m["a.b].c', /segment 3 '\["a\.b\]\.c' has an unterminated key/],
  ['.spec.m["a"b"]', /segment 3 '\["a"b"\]' does not end its key with "\]/],
  ['.spec.m["a:b"]', /segment 3 '\["a:b"\]' has a key with ':'/],
  ['.spec.m["a\\b"]', /has a key with '\\'.*; there is no escaping/],
  [`.spec.m["a'b"]`, /has a key with '''/],
  ['.spec.m["a[b"]', /has a key with '\['/],
  ['.spec.m["a]b"]', /has a key with '\]'/],
  ['.spec.m["a*"]', /has a key with '\*'/],
  ['.spec.m["a,b"]', /has a key with ','/],
  ['.spec.m["\u00e9"]', /has a key with '\u00e9'/],
  [".spec.m['a']", /segment 3 '\['a'\]' quotes its key with single quotes/],
  [".spec.m['a.b'].c", /segment 3 '\['a\.b'\]' quotes its key with single/],
  [".spec.m['a", /segment 3 '\['a' quotes its key with single quotes/],
  ['.spec.m["-a"]', /does not start and end with a letter or digit/],
  ['.spec.m["a."]', /does not start and end with a letter or digit/],
  ['.spec.m["/"]', /does not start and end with a letter or digit/],
  ['.spec.m["_a"]', /does not start and end with a letter or digit/],
  [
    `.spec.m["${"a".repeat(318)}"]`,
    /has a key of 318 characters, more than 317/,
  ],
  ['["spec"].name', /segment 1 '\["spec"\]' is a key: a path starts with/],
  ['.["spec"].name', /segment 1 '\["spec"\]' is a key/],
  ['["a"]', /segment 1 '\["a"\]' is a key/],
  ['.spec.["x"]', /segment 2 '\["x"\]' follows a dot: .* '\.spec\["x"\]'/],
  ['.spec.m["x"]y', /segment 3 '\["x"\]y' has 'y' after its key/],
  ['.spec.m["x"][0]', /segment 3 '\["x"\]\[0\]' has an array index/],
  ['.spec.m["x"][*', /segment 3 '\["x"\]\[\*' has brackets other than/],
  ['.spec.m["x"]*', /has a wildcard other than \[\*\] after a key/],
  ['.spec.m["x"].', /segment 4 is empty/],
  ['.spec.m["x"]..a', /segment 4 is empty/],
  ['.spec.m["x"] ', /path contains whitespace/],
  ['.spec.m["a b"]', /path contains whitespace/],
  ['spec["k', /segment 2 '\["k' has an unterminated key/],
  [".spec.m[x]", /segment 2 'm\[x\]' has brackets other than \[\*\]/],
  ['.spec.9a["x"]', /segment 2 '9a' is not an identifier/],
  ['.spec.m"x"', /segment 2 'm"x"' is not an identifier/],
];

Deno.test("parseFieldPath() accepts dot notation, leading dot optional, [*] after any segment", () => {
  for (const [text, want] of VALID) {
    assert.deepEqual(parseFieldPath(text), want, text);
  }
});

Deno.test("parseFieldPath() returns a frozen path of frozen segments", () => {
  const path = parseFieldPath(".spec.nics[*].name");
  assert.ok(Object.isFrozen(path));
  assert.ok(path.every((segment) => Object.isFrozen(segment)));
});

Deno.test("parseFieldPath() throws SyntaxError naming the problem", () => {
  for (const [text, problem] of INVALID) {
    assert.throws(
      () => parseFieldPath(text),
      SyntaxError,
      JSON.stringify(text),
    );
    assert.throws(() => parseFieldPath(text), problem, JSON.stringify(text));
  }
});

Deno.test("parseFieldPath() shows the current value in its message", () => {
  assert.throws(() => parseFieldPath(".spec.a-b"), {
    name: "SyntaxError",
    message:
      "Cannot parse field path: segment 2 'a-b' is not an identifier: current value is '.spec.a-b'",
  });
  assert.throws(() => parseFieldPath(".spec.nics[1].name"), {
    message:
      "Cannot parse field path: segment 2 'nics[1]' has an array index: write [*] for every element of a list: current value is '.spec.nics[1].name'",
  });
  assert.throws(() => parseFieldPath(""), {
    message: "Cannot parse field path: path is empty: current value is ''",
  });
});

Deno.test("parseFieldPath() names what is wrong with a key", () => {
  const cases: [string, string][] = [
    ['.spec.m[""]', `segment 3 '[""]' has an empty key`],
    ['.spec.m["a', `segment 3 '["a' has an unterminated key: end it with "]`],
    [
      '.spec.m["a:b"]',
      `segment 3 '["a:b"]' has a key with ':', which a key cannot hold: a key has letters, digits, '.', '_', '-' and '/'`,
    ],
    [
      ".spec.m['a']",
      `segment 3 '['a']' quotes its key with single quotes: write ["a"]`,
    ],
    [
      '.spec.m["-a"]',
      `segment 3 '["-a"]' has a key that does not start and end with a letter or digit`,
    ],
    [
      '.metadata.labels.["a/b"]',
      `segment 3 '["a/b"]' follows a dot: write a key right after its map, as in '.metadata.labels["a/b"]'`,
    ],
    [
      '["metadata"].name',
      `segment 1 '["metadata"]' is a key: a path starts with a field name`,
    ],
    [
      '.spec.m["x"]y',
      `segment 3 '["x"]y' has 'y' after its key: only [*] may follow a key, and a field follows a dot`,
    ],
  ];
  for (const [text, problem] of cases) {
    assert.throws(() => parseFieldPath(text), {
      name: "SyntaxError",
      message:
        `Cannot parse field path: ${problem}: current value is '${text}'`,
    });
  }
});

Deno.test("isFieldName(), isMapKey() and fieldSegment() tell how a name can be written", () => {
  for (const name of ["a", "_", "vpcRef", "a_1"]) {
    assert.ok(isFieldName(name), name);
    assert.deepEqual(fieldSegment(name, 1), { name, lists: 1 });
  }
  for (const name of ["a-b", "example.com/owner", "9", "a_b.c", "eu-1"]) {
    assert.ok(!isFieldName(name), name);
    assert.ok(isMapKey(name), name);
    assert.deepEqual(fieldSegment(name), { name, key: true, lists: 0 });
  }
  assert.ok(isMapKey("app"));
  assert.ok(isMapKey("a".repeat(MAX_KEY_LENGTH)));
  for (
    const name of [
      "",
      "-a",
      "a-",
      "a.",
      "a b",
      'a"b',
      "a\\b",
      "a'b",
      "a:b",
      `a${"-".repeat(MAX_KEY_LENGTH - 1)}b`,
    ]
  ) {
    assert.ok(!isMapKey(name), name);
    assert.equal(fieldSegment(name), undefined, name);
  }
  assert.ok(Object.isFrozen(fieldSegment("a")));
  assert.equal(MAX_KEY_LENGTH, 253 + 1 + 63);
});

Deno.test("formatFieldName() writes a field with a dot and a key in brackets", () => {
  assert.equal(formatFieldName({ name: "spec", lists: 2 }), ".spec");
  assert.equal(
    formatFieldName({ name: "a/b", key: true, lists: 1 }),
    '["a/b"]',
  );
});

Deno.test("tryParseFieldPath() returns the path for valid input", () => {
  for (const [text, want] of VALID) {
    assert.deepEqual(tryParseFieldPath(text), want, text);
  }
});

Deno.test("tryParseFieldPath() returns undefined instead of throwing", () => {
  for (const [text] of INVALID) {
    assert.equal(tryParseFieldPath(text), undefined, JSON.stringify(text));
  }
});

Deno.test("formatFieldPath() writes the canonical form with a leading dot", () => {
  const cases: [FieldPath, string][] = [
    [plain("spec", "vpcRef", "name"), ".spec.vpcRef.name"],
    [plain("a_b", "C9"), ".a_b.C9"],
    [[], ""],
    [VALID[7]![1], ".spec.matrix[*][*].name"],
    [parseFieldPath('metadata.labels["a/b"]'), '.metadata.labels["a/b"]'],
    [
      [
        { name: "spec", lists: 0 },
        { name: "x", key: true, lists: 1 },
        { name: "name", lists: 0 },
      ],
      '.spec["x"][*].name',
    ],
    // A key that could be a field stays a key.
    [parseFieldPath('.spec.m["app"]'), '.spec.m["app"]'],
  ];
  for (const [path, want] of cases) assert.equal(formatFieldPath(path), want);
});

Deno.test("formatFieldPath() puts the indexes given in place of [*], in order", () => {
  const path = parseFieldPath(".spec.groups[*].members[*].ref.name");
  assert.equal(
    formatFieldPath(path, [2, 0]),
    ".spec.groups[2].members[0].ref.name",
  );
  assert.equal(
    formatFieldPath(path, [2]),
    ".spec.groups[2].members[*].ref.name",
  );
  assert.equal(
    formatFieldPath(parseFieldPath(".spec.matrix[*][*].name"), [1, 3]),
    ".spec.matrix[1][3].name",
  );
  assert.equal(
    formatFieldPath(parseFieldPath('.spec.byZone["eu-1"][*].name'), [4]),
    '.spec.byZone["eu-1"][4].name',
  );
});

Deno.test("formatFieldPath() round-trips through parseFieldPath()", () => {
  for (const [text, path] of VALID) {
    assert.deepEqual(
      parseFieldPath(formatFieldPath(parseFieldPath(text))),
      path,
    );
  }
  assert.equal(
    formatFieldPath(parseFieldPath("spec.vpcRef.name")),
    ".spec.vpcRef.name",
  );
});

const VM = {
  metadata: { name: "vm-1", labels: { app: "web" } },
  spec: {
    vpcRef: { name: "vpc-1" },
    replicas: 3,
    enabled: true,
    nothing: null,
    tags: ["a", "b"],
    nested: { deeper: { value: "deep" } },
    emptyName: "",
  },
};

/** The strings found at `text`, in order. */
function values(object: unknown, text: string): string[] {
  return resolveFieldPath(object, parseFieldPath(text)).map((m) => m.value);
}

Deno.test("resolveFieldPath() returns the string leaf of a path without lists", () => {
  const cases: [string, string][] = [
    [".spec.vpcRef.name", "vpc-1"],
    [".metadata.name", "vm-1"],
    [".spec.nested.deeper.value", "deep"],
    [".spec.emptyName", ""],
  ];
  for (const [text, want] of cases) {
    assert.deepEqual(resolveFieldPath(VM, parseFieldPath(text)), [
      { value: want, indexes: [] },
    ], text);
  }
});

Deno.test("resolveFieldPath() finds nothing at missing fields", () => {
  for (
    const text of [
      ".spec.subnetRef.name",
      ".spec.vpcRef.namespace",
      ".status.phase",
      ".spec.vpcRef.name.extra",
    ]
  ) {
    assert.deepEqual(values(VM, text), [], text);
  }
});

Deno.test("resolveFieldPath() finds nothing at a non-string leaf", () => {
  for (
    const text of [
      ".spec.replicas",
      ".spec.enabled",
      ".spec.nothing",
      ".spec.vpcRef",
      ".spec.tags",
    ]
  ) {
    assert.deepEqual(values(VM, text), [], text);
  }
});

Deno.test("resolveFieldPath() finds nothing through a non-map intermediate", () => {
  const cases: [string, unknown][] = [
    ["string", { spec: "vpc-1" }],
    ["number", { spec: 42 }],
    ["boolean", { spec: false }],
    ["array", { spec: [{ name: "vpc-1" }] }],
    ["array with a matching own key", {
      spec: Object.assign([], { name: "x" }),
    }],
    ["null", { spec: null }],
  ];
  for (const [what, object] of cases) {
    assert.deepEqual(values(object, ".spec.name"), [], what);
  }
});

Deno.test("resolveFieldPath() finds nothing when the root is not a map", () => {
  for (const root of [null, undefined, "spec", 42, true, ["spec"]]) {
    assert.deepEqual(values(root, ".spec.name"), [], String(root));
  }
});

Deno.test("resolveFieldPath() finds nothing for an empty path", () => {
  assert.deepEqual(resolveFieldPath(VM, []), []);
  assert.deepEqual(resolveFieldPath("a string", []), []);
});

Deno.test("resolveFieldPath() ignores keys inherited from the prototype", () => {
  assert.deepEqual(values({}, ".constructor.name"), []);
  assert.deepEqual(values({ spec: {} }, ".spec.constructor.name"), []);
  assert.deepEqual(values({}, ".__proto__.constructor.name"), []);
  assert.deepEqual(values({ spec: {} }, ".spec.__proto__.x"), []);
  assert.deepEqual(values({ spec: [] }, ".spec[*].length"), []);
  const inherited = Object.create({ spec: { name: "inherited" } });
  assert.deepEqual(values(inherited, ".spec.name"), []);
});

Deno.test("resolveFieldPath() reads an own __proto__ key from parsed JSON", () => {
  const object: unknown = JSON.parse('{"spec":{"__proto__":{"name":"own"}}}');
  assert.deepEqual(values(object, ".spec.__proto__.name"), ["own"]);
});

Deno.test("resolveFieldPath() walks objects without a prototype", () => {
  const spec = Object.assign(Object.create(null), { name: "vpc-1" });
  assert.deepEqual(values({ spec }, ".spec.name"), ["vpc-1"]);
});

const MULTI_NIC = {
  spec: {
    nics: [
      { subnetRef: { name: "a" } },
      { subnetRef: { name: 7 } },
      { other: true },
      "not a map",
      null,
      { subnetRef: { name: "b" } },
      { subnetRef: { name: "a" } },
    ],
    names: ["x", 1, "y"],
    groups: [
      { members: [{ ref: { name: "g0m0" } }, { ref: { name: "g0m1" } }] },
      { members: "not a list" },
      {},
      { members: [{ ref: { name: "g3m0" } }] },
    ],
    matrix: [["m00", "m01"], "not a list", [], ["m30"]],
  },
};

Deno.test("resolveFieldPath() finds every element of a list, with its index, skipping the rest", () => {
  assert.deepEqual(
    resolveFieldPath(MULTI_NIC, parseFieldPath(".spec.nics[*].subnetRef.name")),
    [
      { value: "a", indexes: [0] },
      { value: "b", indexes: [5] },
      { value: "a", indexes: [6] },
    ],
  );
  assert.deepEqual(
    resolveFieldPath(MULTI_NIC, parseFieldPath(".spec.names[*]")),
    [{ value: "x", indexes: [0] }, { value: "y", indexes: [2] }],
  );
});

Deno.test("resolveFieldPath() walks lists in lists", () => {
  assert.deepEqual(
    resolveFieldPath(
      MULTI_NIC,
      parseFieldPath(".spec.groups[*].members[*].ref.name"),
    ),
    [
      { value: "g0m0", indexes: [0, 0] },
      { value: "g0m1", indexes: [0, 1] },
      { value: "g3m0", indexes: [3, 0] },
    ],
  );
  assert.deepEqual(
    resolveFieldPath(MULTI_NIC, parseFieldPath(".spec.matrix[*][*]")),
    [
      { value: "m00", indexes: [0, 0] },
      { value: "m01", indexes: [0, 1] },
      { value: "m30", indexes: [3, 0] },
    ],
  );
});

Deno.test("resolveFieldPath() finds nothing where [*] meets something other than a list", () => {
  for (
    const object of [
      { spec: { nics: { subnetRef: { name: "a" } } } },
      { spec: { nics: "a" } },
      { spec: { nics: null } },
      { spec: {} },
    ]
  ) {
    assert.deepEqual(values(object, ".spec.nics[*].subnetRef.name"), []);
  }
  assert.deepEqual(values({ spec: { nics: [] } }, ".spec.nics[*].name"), []);
});

Deno.test("resolveFieldPathAt() reads the element the indexes point at", () => {
  const path = parseFieldPath(".spec.groups[*].members[*].ref.name");
  assert.equal(resolveFieldPathAt(MULTI_NIC, path, [0, 1]), "g0m1");
  assert.equal(resolveFieldPathAt(MULTI_NIC, path, [3, 0]), "g3m0");
  assert.equal(resolveFieldPathAt(MULTI_NIC, path, [1, 0]), undefined);
  assert.equal(resolveFieldPathAt(MULTI_NIC, path, [9, 0]), undefined);
  assert.equal(resolveFieldPathAt(MULTI_NIC, path, [-1, 0]), undefined);
  assert.equal(resolveFieldPathAt(MULTI_NIC, path, [0]), undefined);
  assert.equal(
    resolveFieldPathAt(VM, parseFieldPath(".spec.vpcRef.name"), []),
    "vpc-1",
  );
  assert.equal(
    resolveFieldPathAt(VM, parseFieldPath(".spec.vpcRef.name"), [4]),
    "vpc-1",
  );
  assert.equal(resolveFieldPathAt(VM, [], []), undefined);
  assert.equal(
    resolveFieldPathAt({ spec: [] }, parseFieldPath(".spec.length"), []),
    undefined,
  );
});

Deno.test("pairingProblem() lets a namespace path share the path's lists, or have none", () => {
  const path = parseFieldPath(".spec.groups[*].members[*].ref.name");
  for (
    const text of [
      ".spec.groups[*].members[*].ref.namespace",
      ".spec.groups[*].members[*].namespace",
      ".spec.groups[*].namespace",
      ".spec.namespace",
      ".metadata.labels.ns",
    ]
  ) {
    assert.equal(pairingProblem(path, parseFieldPath(text)), undefined, text);
  }
});

Deno.test("pairingProblem() names a namespace path whose [*] are not the path's", () => {
  const path = parseFieldPath(".spec.groups[*].members[*].ref.name");
  for (
    const text of [
      ".spec.other[*].namespace",
      ".spec.groups.members[*].namespace",
      ".spec.groups[*].members[*].ref.ns[*]",
      ".spec.groups[*][*].namespace",
      ".status.groups[*].namespace",
    ]
  ) {
    const problem = pairingProblem(path, parseFieldPath(text));
    assert.ok(problem !== undefined, text);
    assert.match(problem, /must be those of the path at the same place/);
    assert.ok(problem.includes(`'${formatFieldPath(parseFieldPath(text))}'`));
  }
  assert.ok(
    pairingProblem(
      parseFieldPath(".spec.vpcRef.name"),
      parseFieldPath(".spec.refs[*].namespace"),
    ) !== undefined,
  );
});

const LABELLED = {
  metadata: {
    name: "subnet-1",
    labels: {
      app: "web",
      "network.example.com/owner": "vpc-1",
      "a.b": "dotted",
      constructor: "own",
    },
    annotations: { "a.b/c": "annotated", "example.com/n": 7 },
  },
  spec: {
    owners: { x: { name: "owner-x" }, "y-1": { name: "owner-y" } },
    byZone: {
      "eu-1": [{ name: "a" }, { other: true }, { name: "b" }],
      "us-2": "not a list",
    },
    a: { b: "not a.b" },
  },
};

Deno.test("resolveFieldPath() reads a quoted key as a map entry", () => {
  const cases: [string, string[]][] = [
    ['.metadata.labels["network.example.com/owner"]', ["vpc-1"]],
    ['.metadata.annotations["a.b/c"]', ["annotated"]],
    ['.metadata.labels["app"]', ["web"]],
    // A key with dots is one key, not a path.
    ['.metadata.labels["a.b"]', ["dotted"]],
    ['.spec["a.b"]', []],
    ['.spec.owners["x"].name', ["owner-x"]],
    ['.spec.owners["y-1"].name', ["owner-y"]],
    ['.spec["owners"]["x"]["name"]', ["owner-x"]],
    // Missing keys, non-string leaves, non-list under [*].
    ['.metadata.labels["missing"]', []],
    ['.metadata.annotations["example.com/n"]', []],
    ['.spec.byZone["us-2"][*].name', []],
    ['.spec.owners["x"]', []],
  ];
  for (const [text, want] of cases) {
    assert.deepEqual(values(LABELLED, text), want, text);
  }
});

Deno.test("resolveFieldPath() reads a key exactly as a field of that name", () => {
  for (
    const [field, key] of [
      [".metadata.labels.app", '.metadata.labels["app"]'],
      [".spec.owners.x.name", '.spec.owners["x"].name'],
      [".spec.byZone.x[*].name", '.spec.byZone["x"][*].name'],
    ] as const
  ) {
    for (
      const object of [LABELLED, { spec: { byZone: { x: [{ name: "z" }] } } }]
    ) {
      assert.deepEqual(
        resolveFieldPath(object, parseFieldPath(key)),
        resolveFieldPath(object, parseFieldPath(field)),
        key,
      );
    }
  }
});

Deno.test("resolveFieldPath() walks a list under a key, with its indexes", () => {
  assert.deepEqual(
    resolveFieldPath(LABELLED, parseFieldPath('.spec.byZone["eu-1"][*].name')),
    [{ value: "a", indexes: [0] }, { value: "b", indexes: [2] }],
  );
});

Deno.test("resolveFieldPath() reads own keys only, never inherited ones", () => {
  // An own key named constructor is read; an inherited one is not.
  assert.deepEqual(values(LABELLED, '.metadata.labels["constructor"]'), [
    "own",
  ]);
  assert.deepEqual(
    values({ metadata: { labels: {} } }, '.metadata.labels["constructor"]'),
    [],
  );
  assert.deepEqual(values({ spec: {} }, '.spec["constructor"]["name"]'), []);
  assert.deepEqual(values({ spec: {} }, '.spec["toString"]'), []);
  assert.deepEqual(values({ spec: "abc" }, '.spec["length"]'), []);
  assert.deepEqual(values({ spec: ["a"] }, '.spec["0"]'), []);
  const inherited = {
    metadata: { labels: Object.create({ app: "inherited" }) },
  };
  assert.deepEqual(values(inherited, '.metadata.labels["app"]'), []);
  const object: unknown = JSON.parse(
    '{"metadata":{"labels":{"constructor":"json"}}}',
  );
  assert.deepEqual(values(object, '.metadata.labels["constructor"]'), ["json"]);
  // __proto__ cannot be a key: keys start and end with a letter or digit.
  assert.equal(tryParseFieldPath('.metadata.labels["__proto__"]'), undefined);
});

Deno.test("resolveFieldPathAt() reads through keys", () => {
  const path = parseFieldPath('.spec.byZone["eu-1"][*].name');
  assert.equal(resolveFieldPathAt(LABELLED, path, [2]), "b");
  assert.equal(resolveFieldPathAt(LABELLED, path, [1]), undefined);
  assert.equal(
    resolveFieldPathAt(
      LABELLED,
      parseFieldPath('.metadata.labels["network.example.com/owner"]'),
      [],
    ),
    "vpc-1",
  );
  assert.equal(
    resolveFieldPathAt(
      { metadata: { labels: {} } },
      parseFieldPath('.metadata.labels["constructor"]'),
      [],
    ),
    undefined,
  );
});

Deno.test("pairingProblem() compares keys too", () => {
  const path = parseFieldPath('.spec.byZone["eu-1"][*].ref.name');
  for (
    const text of [
      '.spec.byZone["eu-1"][*].ref.namespace',
      '.spec.byZone["eu-1"][*].namespace',
      '.metadata.labels["example.com/ns"]',
      ".spec.byZone.namespace",
    ]
  ) {
    assert.equal(pairingProblem(path, parseFieldPath(text)), undefined, text);
  }
  for (
    const text of [
      // The same entry, but written as a field: not the same segments.
      ".spec.byZone.eu_1[*].namespace",
      '.spec.byZone["eu-2"][*].namespace',
      '.spec["byZone"]["eu-1"][*].namespace',
    ]
  ) {
    const problem = pairingProblem(path, parseFieldPath(text));
    assert.ok(problem !== undefined, text);
    assert.ok(problem.includes(`'${formatFieldPath(parseFieldPath(text))}'`));
  }
  assert.ok(
    pairingProblem(
      parseFieldPath('.spec.m["a"][*].name'),
      parseFieldPath(".spec.m.a[*].namespace"),
    ) !== undefined,
  );
});

// ---------------------------------------------------------------------------
// Properties: FIELD_PATH_PATTERN and parseFieldPath() accept the same
// strings, and formatting round-trips.

const identifier = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,5}$/);
const key = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.stringMatching(
      /^[A-Za-z0-9]([-A-Za-z0-9_./]{0,10}[A-Za-z0-9])?$/,
    ),
  },
  // Around the longest key.
  {
    weight: 1,
    arbitrary: fc.integer({ min: MAX_KEY_LENGTH - 3, max: MAX_KEY_LENGTH }).map(
      (length) => `a${"./-_".repeat(80).slice(0, length - 2)}Z`,
    ),
  },
);

const field = fc.tuple(identifier, fc.nat(2)).map((
  [name, lists],
): FieldSegment => ({ name, lists }));
const keyed = fc.tuple(key, fc.nat(2)).map((
  [name, lists],
): FieldSegment => ({ name, key: true, lists }));

/** A valid path as segments, and how it is written (leading dot or not). */
const validPath = fc.tuple(
  fc.boolean(),
  field,
  fc.array(fc.oneof(field, keyed), { minLength: 1, maxLength: 4 }),
).map(([dot, first, rest]) => {
  const segments: FieldPath = [first, ...rest];
  return { segments, text: _write(segments, dot) };
});

/** Writes `segments` without formatFieldPath(), with or without the leading dot. */
function _write(segments: FieldPath, dot: boolean): string {
  let text = "";
  for (const segment of segments) {
    text += segment.key ? `["${segment.name}"]` : `.${segment.name}`;
    text += "[*]".repeat(segment.lists);
  }
  return dot ? text : text.slice(1);
}

/** Characters that matter to the grammar, and a few that never may appear. */
const ALPHABET = [
  ".",
  "[",
  "]",
  "*",
  '"',
  "'",
  "/",
  "-",
  "_",
  "a",
  "Z",
  "0",
  "9",
  "\\",
  " ",
  "\n",
  ":",
  "$",
  "\u00e9",
];

/** A valid path with one to three characters inserted, replaced or deleted. */
const mutatedPath = fc.tuple(
  validPath,
  fc.array(
    fc.tuple(
      fc.constantFrom("insert", "replace", "delete"),
      fc.nat(),
      fc.constantFrom(...ALPHABET),
    ),
    { minLength: 1, maxLength: 3 },
  ),
).map(([{ text }, edits]) => {
  let mutated = text;
  for (const [edit, at, character] of edits) {
    const index = at % (mutated.length + 1);
    if (edit === "insert") {
      mutated = mutated.slice(0, index) + character + mutated.slice(index);
    } else {
      const rest = mutated.slice(index + 1);
      mutated = mutated.slice(0, index) +
        (edit === "replace" ? character : "") + rest;
    }
  }
  return mutated;
});

const anyString = fc.oneof(
  { weight: 2, arbitrary: validPath.map(({ text }) => text) },
  { weight: 4, arbitrary: mutatedPath },
  {
    weight: 2,
    arbitrary: fc.string({ unit: fc.constantFrom(...ALPHABET), maxLength: 24 }),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 24 }) },
  // Keys around the longest, valid or not.
  {
    weight: 1,
    arbitrary: fc.integer({ min: MAX_KEY_LENGTH - 2, max: MAX_KEY_LENGTH + 2 })
      .map((length) => `.spec.m["a${"-".repeat(length - 2)}b"]`),
  },
);

Deno.test("property: FIELD_PATH_PATTERN accepts exactly what parseFieldPath() does", () => {
  const unicode = new RegExp(FIELD_PATH_PATTERN.source, "u");
  let accepted = 0;
  let rejected = 0;
  fc.assert(
    fc.property(anyString, (text) => {
      const parsed = tryParseFieldPath(text) !== undefined;
      if (parsed) accepted++;
      else rejected++;
      assert.equal(FIELD_PATH_PATTERN.test(text), parsed, JSON.stringify(text));
      // JSON-schema validators may compile a pattern in Unicode mode.
      assert.equal(unicode.test(text), parsed, JSON.stringify(text));
    }),
    { seed: SEED, numRuns: RUNS },
  );
  assert.ok(
    accepted > RUNS / 10 && rejected > RUNS / 10,
    `${accepted}/${rejected}`,
  );
});

Deno.test("property: a valid path parses to its segments, and formatting round-trips", () => {
  fc.assert(
    fc.property(validPath, ({ segments, text }) => {
      const parsed = parseFieldPath(text);
      assert.deepEqual(parsed, segments, text);
      const formatted = formatFieldPath(parsed);
      assert.equal(formatted, _write(segments, true));
      assert.deepEqual(parseFieldPath(formatted), parsed, formatted);
      assert.ok(FIELD_PATH_PATTERN.test(formatted), formatted);
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

Deno.test("property: every accepted string formats to a path that parses the same", () => {
  fc.assert(
    fc.property(anyString, (text) => {
      const parsed = tryParseFieldPath(text);
      if (parsed === undefined) return;
      const formatted = formatFieldPath(parsed);
      assert.deepEqual(parseFieldPath(formatted), parsed, text);
      assert.equal(formatFieldPath(parseFieldPath(formatted)), formatted);
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

Deno.test("FIELD_PATH_PATTERN is plain enough for RE2 and ECMA-262 alike", () => {
  const source = FIELD_PATH_PATTERN.source;
  assert.equal(FIELD_PATH_PATTERN.flags, "");
  // No lookaround, backreferences, named groups or lazy quantifiers.
  assert.doesNotMatch(source, /\(\?[=!<]|\\[1-9]|\\k<|[*+?}]\?/);
  // RE2 refuses counted repetitions above 1000.
  for (const [, count] of source.matchAll(/\{(?:\d+,)?(\d+)\}/g)) {
    assert.ok(Number(count) <= 1000, `{${count}}`);
  }
  assert.ok(source.startsWith("^") && source.endsWith("$"));
  // A key's first and last character, and up to MAX_KEY_LENGTH - 2 between.
  assert.ok(source.includes(`{0,${MAX_KEY_LENGTH - 2}}`));
});
