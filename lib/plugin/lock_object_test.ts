import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { isDnsSubdomain, type KubeObject } from "../kcp/mod.ts";
import { parseLock } from "../locks/mod.ts";
import { PluginError } from "./context.ts";
import {
  buildLock,
  defaultLockName,
  formatObject,
  lockRef,
  locksObject,
  lockToUpdate,
  parseLockArgs,
  parseOperations,
  parseUnlockArgs,
  readinessOf,
} from "./lock_object.ts";

const VPCS = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
};

function usageError(pattern: RegExp): (error: unknown) => boolean {
  return (error) =>
    error instanceof PluginError && error.exitCode === 2 &&
    pattern.test(error.message);
}

function lock(
  name: string,
  target: { group: string; resource: string; name: string },
  extra: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: { name, namespace: "team-a" },
    spec: {
      target: { ...target, version: "v1alpha1" },
      reason: `reason of ${name}`,
      operations: ["Delete"],
    },
    ...extra,
  };
}

/** The clock of every parse: 2026-12-01T16:00:00Z. */
const AT = { now: Date.parse("2026-12-01T16:00:00Z") };

Deno.test("parseLockArgs() reads <type>/<name> or <type> <name> and every flag, with defaults", () => {
  assert.deepEqual(parseLockArgs(["vpc/core", "--reason", "prod"], AT), {
    type: "vpc",
    name: "core",
    reason: "prod",
    operations: ["Delete"],
    update: false,
    timeoutMs: 60_000,
  });
  assert.deepEqual(
    parseLockArgs([
      "vpcs.network.example.com",
      "core",
      "--reason=prod",
      "--operations",
      "update,Delete",
      "--update",
      "--name",
      "mine",
      "--timeout",
      "2m",
      "-o",
      "yaml",
      "-n",
      "team-b",
      "--for",
      "90m",
    ], AT),
    {
      type: "vpcs.network.example.com",
      name: "core",
      reason: "prod",
      operations: ["Update", "Delete"],
      expiresAt: "2026-12-01T17:30:00Z",
      update: true,
      lockName: "mine",
      timeoutMs: 120_000,
      output: "yaml",
    },
  );
  assert.equal(
    (parseLockArgs(["vpc/core", "--reason", "r", "--timeout", "0"], AT) as {
      timeoutMs: number;
    }).timeoutMs,
    0,
  );
  assert.deepEqual(
    (parseLockArgs(
      ["vpc/core", "--reason", "r", "--until", "2026-12-02T00:00:00Z"],
      AT,
    ) as { expiresAt?: string }).expiresAt,
    "2026-12-02T00:00:00Z",
  );
  assert.deepEqual(parseLockArgs(["--help"], AT), { help: true });
});

Deno.test("parseLockArgs() refuses what it cannot use, as a usage error", () => {
  const cases: [string[], RegExp][] = [
    [["vpc/core"], /--reason is required/],
    [["vpc/core", "--reason", " "], /--reason is required/],
    [["vpc", "--reason", "r"], /want one object as <type>\/<name>/],
    [["vpc/", "--reason", "r"], /want one object/],
    [["vpc/a", "vpc/b", "--reason", "r"], /want one object/],
    [
      ["vpc/core", "--reason", "r", "-o", "wide"],
      /-o must be yaml, json or name/,
    ],
    [
      ["vpc/core", "--reason", "r", "--operations", "Create"],
      /--operations must list Delete or Update/,
    ],
    [["vpc/core", "--reason", "r", "--timeout", "soon"], /--timeout/],
    [["vpc/core", "--reason", "r", "--for", "0s"], /--for: /],
    [
      ["vpc/core", "--reason", "r", "--until", "2026-12-01T15:59:59Z"],
      /--until .* has passed/,
    ],
    [
      [
        "vpc/core",
        "--reason",
        "r",
        "--for",
        "1h",
        "--until",
        "2027-01-01T00:00:00Z",
      ],
      /--for and --until .*give one/,
    ],
    [
      ["vpc/core", "--reason", "r", "--force"],
      /^lock: .*--force.*\(see --help\)/,
    ],
  ];
  for (const [args, pattern] of cases) {
    assert.throws(
      () => parseLockArgs(args, AT),
      usageError(pattern),
      args.join(" "),
    );
  }
});

Deno.test("parseUnlockArgs() reads the object, --ignore-not-found and -o name", () => {
  assert.deepEqual(parseUnlockArgs(["namespace/team-b"]), {
    type: "namespace",
    name: "team-b",
    ignoreNotFound: false,
  });
  assert.deepEqual(
    parseUnlockArgs(["vpc", "core", "--ignore-not-found", "-o", "name"]),
    { type: "vpc", name: "core", ignoreNotFound: true, output: "name" },
  );
  assert.throws(
    () => parseUnlockArgs(["vpc/core", "-o", "yaml"]),
    usageError(/-o must be name/),
  );
});

Deno.test("parseOperations() takes Delete and Update in any case, once each", () => {
  assert.deepEqual(parseOperations("delete"), ["Delete"]);
  assert.deepEqual(parseOperations("Delete, UPDATE,delete"), [
    "Delete",
    "Update",
  ]);
  assert.throws(() => parseOperations(""), PluginError);
});

Deno.test("defaultLockName() is <resource>-<name>, or a deterministic hashed DNS subdomain of at most 253 characters", () => {
  assert.equal(defaultLockName("vpcs", "core"), "vpcs-core");
  assert.equal(defaultLockName("namespaces", "team-a"), "namespaces-team-a");
  const long = `${"a".repeat(200)}.${"b".repeat(52)}`;
  assert.ok(isDnsSubdomain(long));
  const named = defaultLockName("virtualmachines", long);
  assert.ok(named.length <= 253, `${named.length}`);
  assert.ok(isDnsSubdomain(named), named);
  assert.equal(named, defaultLockName("virtualmachines", long));
  assert.notEqual(named, defaultLockName("virtualmachines", `${long}x`));
  // A cut that would end on a dot or a dash drops it.
  const dotted = `${"a".repeat(241)}.${"b".repeat(11)}`;
  const cut = defaultLockName("vpcs", dotted);
  assert.ok(isDnsSubdomain(cut), cut);
  assert.ok(cut.length <= 253);
});

Deno.test("buildLock() writes a valid Lock, with apiExportRef only for a bound type", () => {
  const bound = buildLock({
    namespace: "team-a",
    name: "vpcs-core",
    type: VPCS,
    object: "core",
    apiExportRef: { path: "root:network", name: "network.example.com" },
    reason: "production VPC",
    operations: ["Delete", "Update"],
  });
  assert.deepEqual(bound, {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: { name: "vpcs-core", namespace: "team-a" },
    spec: {
      target: {
        apiExportRef: { path: "root:network", name: "network.example.com" },
        ...VPCS,
        name: "core",
      },
      reason: "production VPC",
      operations: ["Delete", "Update"],
    },
  });
  assert.ok(parseLock(bound).ok);
  const own = buildLock({
    namespace: "team-b",
    name: "namespaces-team-b",
    type: { group: "", version: "v1", resource: "namespaces" },
    object: "team-b",
    apiExportRef: undefined,
    reason: "home",
    operations: ["Delete"],
  });
  assert.equal(
    "apiExportRef" in (own.spec as { target: object }).target,
    false,
  );
  assert.throws(
    () =>
      buildLock({
        namespace: "team-a",
        name: "vpcs-core",
        type: VPCS,
        object: "core",
        reason: "x".repeat(2000),
        operations: ["Delete"],
      }),
    usageError(
      /^Cannot write this Lock: spec\.reason: must be at most 1024 characters/,
    ),
  );
});

Deno.test("buildLock() writes spec.expiresAt when given, and refuses one the API would not read", () => {
  const options = {
    namespace: "team-a",
    name: "vpcs-core",
    type: VPCS,
    object: "core",
    reason: "migration",
    operations: ["Delete"] as const,
  };
  const expiring = buildLock({
    ...options,
    operations: [...options.operations],
    expiresAt: "2026-12-01T18:00:00Z",
  });
  assert.equal(
    (expiring.spec as { expiresAt?: string }).expiresAt,
    "2026-12-01T18:00:00Z",
  );
  assert.equal(
    "expiresAt" in (buildLock({ ...options, operations: ["Delete"] })
      .spec as object),
    false,
  );
  assert.throws(
    () =>
      buildLock({
        ...options,
        operations: ["Delete"],
        expiresAt: "2026-12-01 18:00",
      }),
    usageError(/^Cannot write this Lock: spec\.expiresAt: must be an RFC 3339/),
  );
});

Deno.test("locksObject() matches group, resource and name, whatever the version or export", () => {
  const target = {
    group: "network.example.com",
    resource: "vpcs",
    name: "core",
  };
  assert.ok(locksObject(lock("a", target), target));
  assert.ok(!locksObject(lock("a", { ...target, name: "edge" }), target));
  assert.ok(!locksObject(lock("a", { ...target, group: "other.io" }), target));
  assert.ok(
    !locksObject(lock("a", { ...target, resource: "subnets" }), target),
  );
  assert.ok(!locksObject({ spec: null }, target));
  assert.ok(!locksObject("junk", target));
});

Deno.test("readinessOf() reads the Ready condition of the current generation only", () => {
  const condition = (status: string, observedGeneration?: number) => ({
    metadata: { generation: 2 },
    status: {
      conditions: [
        { type: "Other", status: "False", reason: "X", message: "" },
        {
          type: "Ready",
          status,
          reason: status === "True" ? "Enforced" : "ProviderMismatch",
          message: "why",
          ...(observedGeneration === undefined ? {} : { observedGeneration }),
        },
      ],
    },
  });
  assert.deepEqual(readinessOf(condition("True", 2)), {
    state: "ready",
    reason: "Enforced",
    message: "why",
  });
  assert.deepEqual(readinessOf(condition("False")), {
    state: "not-ready",
    reason: "ProviderMismatch",
    message: "why",
  });
  assert.deepEqual(readinessOf(condition("True", 1)), { state: "pending" });
  assert.deepEqual(readinessOf(condition("Unknown", 2)), { state: "pending" });
  assert.deepEqual(readinessOf({ metadata: {} }), { state: "pending" });
  assert.deepEqual(readinessOf(undefined), { state: "pending" });
});

Deno.test("lockToUpdate() creates, refuses a second Lock without --update, and picks the Lock to update", () => {
  const target = {
    group: "network.example.com",
    resource: "vpcs",
    name: "core",
  };
  const other = { ...target, name: "edge" };
  const options = {
    namespace: "team-a",
    lockName: "vpcs-core",
    named: false,
    update: false,
  };
  assert.equal(lockToUpdate([lock("x", other)], target, options), undefined);
  assert.throws(
    () => lockToUpdate([lock("prod", target)], target, options),
    usageError(
      /^vpcs\.network\.example\.com\/core is already locked in namespace team-a by Lock prod \("reason of prod"\): use --update/,
    ),
  );
  assert.throws(
    () => lockToUpdate([lock("vpcs-core", other)], target, options),
    usageError(/a Lock named vpcs-core already exists .* locks another object/),
  );
  const update = { ...options, update: true };
  const prod = lock("prod", target);
  assert.equal(lockToUpdate([prod, lock("x", other)], target, update), prod);
  assert.equal(lockToUpdate([], target, update), undefined);
  assert.throws(
    () => lockToUpdate([prod, lock("second", target)], target, update),
    usageError(
      /locked in namespace team-a by several Locks \(prod, second\): say which to update with --name/,
    ),
  );
  const named = { ...update, named: true, lockName: "second" };
  const second = lock("second", target);
  assert.equal(lockToUpdate([prod, second], target, named), second);
  assert.equal(
    lockToUpdate([prod], target, { ...named, lockName: "new" }),
    undefined,
  );
  assert.throws(
    () => lockToUpdate([lock("second", other)], target, named),
    usageError(/locks another object/),
  );
});

Deno.test("lockRef() and formatObject() print a Lock as kubectl does, without managed fields", () => {
  assert.equal(lockRef("prod"), "lock.dependencies.opendefense.cloud/prod");
  const object = lock(
    "prod",
    { group: "", resource: "configmaps", name: "c" },
    {
      status: { conditions: [] },
    },
  );
  object.metadata = { ...object.metadata, managedFields: [{ manager: "x" }] };
  const json = JSON.parse(formatObject(object, "json"));
  assert.equal(json.metadata.managedFields, undefined);
  assert.equal(json.metadata.name, "prod");
  assert.deepEqual(parseYaml(formatObject(object, "yaml")), json);
});
