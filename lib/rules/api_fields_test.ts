import assert from "node:assert/strict";
import { isWorkspacePath } from "../kcp/mod.ts";
import {
  dnsSubdomainField,
  fieldPathField,
  kindField,
  resourceField,
  stringLength,
  versionField,
  WORKSPACE_PATH_PATTERN,
  workspacePathField,
} from "./api_fields.ts";

const l63 = "a".repeat(63);

/** The one message of a field's rejection of `value`. */
function problem(
  field: { safeParse(value: unknown): unknown },
  value: unknown,
) {
  const result = field.safeParse(value) as {
    success: boolean;
    error?: { issues: { message: string }[] };
  };
  assert.equal(result.success, false, `${JSON.stringify(value)} accepted`);
  assert.equal(result.error?.issues.length, 1);
  return result.error!.issues[0]!.message;
}

Deno.test("each field keeps its description for the generated schema", () => {
  for (
    const field of [
      dnsSubdomainField("d"),
      versionField("d"),
      kindField("d"),
      resourceField("d"),
      workspacePathField("d"),
      fieldPathField("d"),
    ]
  ) {
    assert.equal(field.description, "d");
  }
});

Deno.test("dnsSubdomainField() words what is wrong: characters, a label, the length", () => {
  const field = dnsSubdomainField("d");
  assert.equal(field.parse("compute.test.io"), "compute.test.io");
  assert.match(problem(field, "a_b"), /^must be a DNS subdomain \(lowercase/);
  assert.match(
    problem(field, `${l63}a.io`),
    /parts have at most 63 characters: current value is/,
  );
  assert.match(
    problem(field, `${l63}.${l63}.${l63}.${"d".repeat(62)}`),
    /at most 253 characters: current length is 254$/,
  );
});

Deno.test("versionField(), kindField() and resourceField() name the current value", () => {
  assert.equal(
    problem(versionField("d"), "v0"),
    "must look like v1, v1alpha1 or v2beta3: current value is 'v0'",
  );
  assert.match(problem(kindField("d"), "vm"), /upper-case letter.*'vm'$/);
  assert.match(
    problem(kindField("d"), "A".repeat(64)),
    /at most 63 characters: current length is 64$/,
  );
  assert.match(problem(resourceField("d"), "Vpcs"), /current value is 'Vpcs'$/);
  assert.match(
    problem(resourceField("d"), `${l63}a`),
    /current length is 64$/,
  );
});

Deno.test("workspacePathField() and fieldPathField() explain a bad path", () => {
  assert.match(
    problem(workspacePathField("d"), "root:"),
    /workspace path of lowercase segments/,
  );
  assert.equal(
    problem(fieldPathField("d"), ".spec.a-b"),
    "Cannot parse field path: segment 2 'a-b' is not an identifier: current value is '.spec.a-b'",
  );
  assert.equal(fieldPathField("d").parse(".spec.a[*].b"), ".spec.a[*].b");
});

Deno.test("stringLength() is a string's length, 0 for anything else", () => {
  assert.equal(stringLength("abc"), 3);
  assert.equal(stringLength(3), 0);
  assert.equal(stringLength(undefined), 0);
});

Deno.test("WORKSPACE_PATH_PATTERN accepts exactly what isWorkspacePath() does", () => {
  const values = [
    "root",
    "root:org-1:team-2",
    "root:network-provider",
    `root:${l63}`,
    "root:",
    "Root",
    "root::a",
    "root:a_b",
    ":root",
    "root:-a",
    "root:a b",
    `root:${l63}a`,
    "",
    "a::b",
    "root:a:b:c",
    `${l63}:${l63}`,
    "root\n",
  ];
  for (const value of values) {
    assert.equal(
      WORKSPACE_PATH_PATTERN.test(value),
      isWorkspacePath(value),
      `'${value}'`,
    );
  }
});
