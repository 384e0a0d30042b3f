import assert from "node:assert/strict";
import { z } from "zod";
import { validateWith } from "./validation.ts";

const Thing = z.object({
  kind: z.literal("Thing"),
  operation: z.enum(["CREATE", "DELETE"]).optional(),
  spec: z.object({
    items: z.array(z.object({ name: z.string() })).optional(),
    count: z.int().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    title: z.string().min(1, { error: "must not be empty" }).optional(),
    size: z.string().max(3).optional(),
  }),
});

function problems(
  value: unknown,
  options: { root?: string; limit?: number } = {},
): string {
  const checked = validateWith(Thing, value, options);
  assert.ok(!checked.ok, "expected a failure");
  return checked.error;
}

Deno.test("validateWith() returns the parsed value when the schema accepts it", () => {
  const checked = validateWith(Thing, {
    kind: "Thing",
    spec: { items: [{ name: "a" }] },
    extra: true,
  });
  assert.deepEqual(checked, {
    ok: true,
    data: { kind: "Thing", spec: { items: [{ name: "a" }] } },
  });
});

Deno.test("validateWith() words missing fields, wrong types and wrong values with the current value", () => {
  const cases: [unknown, string][] = [
    [{ spec: {} }, "kind: is required"],
    [{ kind: "Thing" }, "spec: is required"],
    [
      { kind: "Other", spec: {} },
      "kind: must be 'Thing': current value is 'Other'",
    ],
    [{ kind: 7, spec: {} }, "kind: must be 'Thing': current value is 7"],
    [
      { kind: "Thing", operation: "PATCH", spec: {} },
      "operation: must be one of 'CREATE', 'DELETE': current value is 'PATCH'",
    ],
    [
      { kind: "Thing", spec: "x" },
      "spec: must be an object: current value is 'x'",
    ],
    [
      { kind: "Thing", spec: { items: {} } },
      "spec.items: must be an array: current value is an object",
    ],
    [
      { kind: "Thing", spec: { items: [null] } },
      "spec.items[0]: must be an object: current value is null",
    ],
    [
      { kind: "Thing", spec: { items: [{ name: [] }] } },
      "spec.items[0].name: must be a string: current value is an array",
    ],
    [
      { kind: "Thing", spec: { count: 1.5 } },
      "spec.count: must be an integer: current value is 1.5",
    ],
    [
      { kind: "Thing", spec: { labels: { "kcp.io/cluster": 3 } } },
      'spec.labels["kcp.io/cluster"]: must be a string: current value is 3',
    ],
    [
      { kind: "Thing", spec: { labels: { "1a": true } } },
      'spec.labels["1a"]: must be a string: current value is true',
    ],
  ];
  for (const [value, expected] of cases) {
    assert.equal(problems(value), expected);
  }
});

Deno.test("validateWith() keeps the schema's own message, and zod's for other problems", () => {
  assert.equal(
    problems({ kind: "Thing", spec: { title: "" } }),
    "spec.title: must not be empty",
  );
  assert.match(
    problems({ kind: "Thing", spec: { size: "abcd" } }),
    /^spec\.size: Too big: /,
  );
});

Deno.test("validateWith() names the value itself (root), or by the given root", () => {
  assert.equal(
    problems(null),
    "(root): must be an object: current value is null",
  );
  assert.equal(problems(undefined), "(root): is required");
  assert.equal(
    problems(42, { root: "request" }),
    "request: must be an object: current value is 42",
  );
  assert.equal(
    problems({ kind: "Thing", spec: { items: [{}] } }, { root: "request" }),
    "request.spec.items[0].name: is required",
  );
});

Deno.test("validateWith() lists every problem, or the first `limit` and a count of the rest", () => {
  const value = { kind: 1, operation: 2, spec: 3 };
  assert.equal(
    problems(value),
    "kind: must be 'Thing': current value is 1; " +
      "operation: must be one of 'CREATE', 'DELETE': current value is 2; " +
      "spec: must be an object: current value is 3",
  );
  assert.equal(
    problems(value, { limit: 1 }),
    "kind: must be 'Thing': current value is 1 (and 2 more)",
  );
  assert.equal(problems(value, { limit: 3 }), problems(value));
});

Deno.test("validateWith() cuts a long current value short", () => {
  const long = "x".repeat(1_000);
  const error = problems({ kind: "Thing", spec: long });
  assert.equal(
    error,
    `spec: must be an object: current value is '${
      "x".repeat(60)
    }...' (truncated)`,
  );
  const exact = "y".repeat(60);
  assert.equal(
    problems({ kind: "Thing", spec: exact }),
    `spec: must be an object: current value is '${exact}'`,
  );
});
