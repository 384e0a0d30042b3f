import assert from "node:assert/strict";
import {
  type FieldPath,
  formatFieldPath,
  pairingProblem,
  parseFieldPath,
  resolveFieldPath,
  resolveFieldPathAt,
  tryParseFieldPath,
} from "./field_path.ts";

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
