import assert from "node:assert/strict";
import { parseLock } from "./api.ts";

function lock(
  spec: Record<string, unknown>,
  namespace = "team-a",
): Record<string, unknown> {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: { name: "prod", namespace },
    spec,
  };
}

const TARGET = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
  name: "core",
};

Deno.test("parseLock() accepts a Lock and defaults its operations to Delete", () => {
  const parsed = parseLock(lock({ target: TARGET, reason: "production" }));
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
  assert.deepEqual(parsed.lock.spec, {
    target: TARGET,
    reason: "production",
    operations: ["Delete"],
  });
});

Deno.test("parseLock() keeps an APIExport reference, Update, and a core target", () => {
  const parsed = parseLock(lock({
    target: {
      ...TARGET,
      apiExportRef: {
        path: "root:providers:network",
        name: "network.example.com",
      },
    },
    reason: "r",
    operations: ["Delete", "Update"],
  }));
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
  assert.deepEqual(parsed.lock.spec.operations, ["Delete", "Update"]);
  const core = parseLock(lock({
    target: { group: "", version: "v1", resource: "configmaps", name: "cfg" },
    reason: "r",
  }));
  assert.ok(core.ok, core.ok ? "" : core.error);
});

Deno.test("parseLock() lets a Lock lock its own namespace and no other", () => {
  const own = parseLock(lock({
    target: {
      group: "",
      version: "v1",
      resource: "namespaces",
      name: "team-a",
    },
    reason: "r",
  }));
  assert.ok(own.ok, own.ok ? "" : own.error);
  assert.deepEqual(
    parseLock(lock({
      target: {
        group: "",
        version: "v1",
        resource: "namespaces",
        name: "team-b",
      },
      reason: "r",
    })),
    {
      ok: false,
      error:
        "spec.target.name: a Lock can lock only its own namespace (team-a): current value is 'team-b'",
    },
  );
});

Deno.test("parseLock() names every problem", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ target: TARGET, reason: "" }, /spec\.reason: must not be empty/],
    [
      { target: TARGET, reason: "x".repeat(1025) },
      /spec\.reason: must be at most 1024 characters: current length is 1025/,
    ],
    [
      { target: TARGET, reason: "r", operations: [] },
      /spec\.operations: must list at least one operation/,
    ],
    [
      { target: TARGET, reason: "r", operations: ["Delete", "Delete"] },
      /spec\.operations: must not repeat an operation: current value is \[Delete, Delete\]/,
    ],
    [
      { target: TARGET, reason: "r", operations: ["Status"] },
      /spec\.operations\[0\]/,
    ],
    [
      { target: { ...TARGET, group: "Net" }, reason: "r" },
      /spec\.target\.group: must be empty \(the core group\) or a DNS subdomain: current value is 'Net'/,
    ],
    [
      { target: { ...TARGET, name: "a/b" }, reason: "r" },
      /spec\.target\.name: must be a DNS subdomain/,
    ],
    [{ target: TARGET }, /spec\.reason: is required/],
  ];
  for (const [spec, problem] of cases) {
    const parsed = parseLock(lock(spec));
    assert.equal(parsed.ok, false, JSON.stringify(spec));
    assert.match((parsed as { error: string }).error, problem);
  }
  assert.match(
    (parseLock({
      ...lock({ target: TARGET, reason: "r" }),
      metadata: { name: "x" },
    }) as {
      error: string;
    }).error,
    /metadata\.namespace: is required/,
  );
});

Deno.test("parseLock() keeps an RFC 3339 expiresAt, with Z or an offset", () => {
  for (
    const expiresAt of ["2026-12-01T18:00:00Z", "2026-12-01T19:00:00.5+01:00"]
  ) {
    const parsed = parseLock(lock({ target: TARGET, reason: "r", expiresAt }));
    assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
    assert.equal(parsed.lock.spec.expiresAt, expiresAt);
    assert.equal(parsed.expiryProblem, undefined);
  }
});

Deno.test("parseLock() holds a Lock with a malformed expiresAt as one without it, saying why", () => {
  for (const expiresAt of ["tomorrow", "2026-12-01 18:00:00", 1764612000]) {
    const parsed = parseLock(lock({ target: TARGET, reason: "r", expiresAt }));
    assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
    assert.equal(parsed.lock.spec.expiresAt, undefined);
    assert.match(
      parsed.expiryProblem ?? "",
      /^spec\.expiresAt: must be an RFC 3339 date-time/,
    );
  }
});

Deno.test("parseLock() refuses a Lock with a malformed expiresAt and another problem, naming both", () => {
  const parsed = parseLock(
    lock({ target: TARGET, reason: "", expiresAt: "x" }),
  );
  assert.equal(parsed.ok, false);
  assert.match(
    parsed.ok ? "" : parsed.error,
    /spec\.reason: .*spec\.expiresAt: |spec\.expiresAt: .*spec\.reason: /,
  );
});
