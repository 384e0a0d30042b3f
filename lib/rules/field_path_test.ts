import assert from "node:assert/strict";
import {
  type FieldPath,
  formatFieldPath,
  parseFieldPath,
  resolveFieldPath,
  tryParseFieldPath,
} from "./field_path.ts";

const VALID: [string, FieldPath][] = [
  [".spec.vpcRef.name", ["spec", "vpcRef", "name"]],
  ["spec.vpcRef.name", ["spec", "vpcRef", "name"]],
  [".a_b.C9", ["a_b", "C9"]],
  ["_x._", ["_x", "_"]],
  [".metadata.name", ["metadata", "name"]],
];

const INVALID: [string, RegExp][] = [
  ["", /path is empty/],
  [".", /segment 1 is empty/],
  [".spec", /at least 2 segments, found 1/],
  ["spec", /at least 2 segments, found 1/],
  [".spec..name", /segment 2 is empty/],
  [".spec.name.", /segment 3 is empty/],
  ["..spec.name", /segment 1 is empty/],
  [".spec.items[0].name", /segment 2 'items\[0\]' has an array index/],
  [".spec.*.name", /segment 2 '\*' has a wildcard/],
  [".spec.9a", /segment 2 '9a' is not an identifier/],
  [".spec.a-b", /segment 2 'a-b' is not an identifier/],
  [" .spec.a", /path contains whitespace/],
  [".spec.a ", /path contains whitespace/],
  [".spec.\ta", /path contains whitespace/],
];

Deno.test("parseFieldPath() accepts dot notation with or without a leading dot", () => {
  for (const [text, want] of VALID) {
    assert.deepEqual(parseFieldPath(text), want, text);
  }
});

Deno.test("parseFieldPath() returns a frozen path", () => {
  assert.ok(Object.isFrozen(parseFieldPath(".spec.vpcRef.name")));
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
    [["spec", "vpcRef", "name"], ".spec.vpcRef.name"],
    [["a_b", "C9"], ".a_b.C9"],
    [[], ""],
  ];
  for (const [path, want] of cases) assert.equal(formatFieldPath(path), want);
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

Deno.test("resolveFieldPath() returns the string leaf", () => {
  const cases: [FieldPath, string][] = [
    [["spec", "vpcRef", "name"], "vpc-1"],
    [["metadata", "name"], "vm-1"],
    [["spec", "nested", "deeper", "value"], "deep"],
    [["spec", "emptyName"], ""],
  ];
  for (const [path, want] of cases) {
    assert.equal(resolveFieldPath(VM, path), want, formatFieldPath(path));
  }
});

Deno.test("resolveFieldPath() returns undefined for missing fields", () => {
  const cases: FieldPath[] = [
    ["spec", "subnetRef", "name"],
    ["spec", "vpcRef", "namespace"],
    ["status", "phase"],
    ["spec", "vpcRef", "name", "extra"],
  ];
  for (const path of cases) {
    assert.equal(resolveFieldPath(VM, path), undefined, formatFieldPath(path));
  }
});

Deno.test("resolveFieldPath() returns undefined for a non-string leaf", () => {
  const cases: FieldPath[] = [
    ["spec", "replicas"],
    ["spec", "enabled"],
    ["spec", "nothing"],
    ["spec", "vpcRef"],
    ["spec", "tags"],
  ];
  for (const path of cases) {
    assert.equal(resolveFieldPath(VM, path), undefined, formatFieldPath(path));
  }
});

Deno.test("resolveFieldPath() returns undefined for a non-map intermediate", () => {
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
    assert.equal(resolveFieldPath(object, ["spec", "name"]), undefined, what);
  }
});

Deno.test("resolveFieldPath() returns undefined when the root is not a map", () => {
  for (const root of [null, undefined, "spec", 42, true, ["spec"]]) {
    assert.equal(
      resolveFieldPath(root, ["spec", "name"]),
      undefined,
      String(root),
    );
  }
});

Deno.test("resolveFieldPath() returns undefined for an empty path", () => {
  assert.equal(resolveFieldPath(VM, []), undefined);
  assert.equal(resolveFieldPath("a string", []), undefined);
});

Deno.test("resolveFieldPath() ignores keys inherited from the prototype", () => {
  assert.equal(resolveFieldPath({}, ["constructor", "name"]), undefined);
  assert.equal(
    resolveFieldPath({ spec: {} }, ["spec", "constructor", "name"]),
    undefined,
  );
  assert.equal(
    resolveFieldPath({}, ["__proto__", "constructor", "name"]),
    undefined,
  );
  assert.equal(
    resolveFieldPath({ spec: {} }, ["spec", "__proto__", "x"]),
    undefined,
  );
  const inherited = Object.create({ spec: { name: "inherited" } });
  assert.equal(resolveFieldPath(inherited, ["spec", "name"]), undefined);
});

Deno.test("resolveFieldPath() reads an own __proto__ key from parsed JSON", () => {
  const object: unknown = JSON.parse('{"spec":{"__proto__":{"name":"own"}}}');
  assert.equal(resolveFieldPath(object, ["spec", "__proto__", "name"]), "own");
});

Deno.test("resolveFieldPath() walks objects without a prototype", () => {
  const spec = Object.assign(Object.create(null), { name: "vpc-1" });
  assert.equal(resolveFieldPath({ spec }, ["spec", "name"]), "vpc-1");
});
