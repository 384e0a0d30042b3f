import assert from "node:assert/strict";
import { FakeApi } from "../../testing/fake_api.ts";
import { binding, fakeContext, FakeWorkspace } from "../../testing/plugin.ts";
import { PluginError } from "./context.ts";
import { lockCommand, unlockCommand } from "./lock_command.ts";

const NETWORK = { path: "root:network", name: "network.example.com" };

/** A consumer workspace that binds VPCs and has VPC team-a/core and Namespace team-b. */
function consumer(): FakeWorkspace {
  const workspace = new FakeWorkspace("root:c1", {
    bindings: [
      binding(NETWORK, [{ group: "network.example.com", resource: "vpcs" }]),
    ],
    objects: [
      "network.example.com/vpcs/team-a/core",
      "/namespaces//team-b",
      "/configmaps/team-a/settings",
    ],
  });
  workspace.readiness = (lock) => ({
    status: "True",
    reason: "Enforced",
    message: `deleting ${
      (lock.spec as { target: { name: string } }).target.name
    } is denied`,
  });
  return workspace;
}

async function withWorkspace(
  workspace: FakeWorkspace,
  fn: (
    context: ReturnType<typeof fakeContext>,
    api: FakeApi,
  ) => Promise<void>,
): Promise<void> {
  const api = new FakeApi(workspace.handle);
  const context = fakeContext(api);
  try {
    await fn(context, api);
  } finally {
    context.client.close();
    await api.close();
  }
}

function failure(
  exitCode: number,
  pattern: RegExp,
): (error: unknown) => boolean {
  return (error) => {
    if (!(error instanceof PluginError)) return false;
    assert.match(error.message, pattern);
    assert.equal(error.exitCode, exitCode);
    return true;
  };
}

Deno.test("lock: a bound VPC gets a Lock with the export, is printed and waited for until Ready", async () => {
  const workspace = consumer();
  await withWorkspace(workspace, async (context) => {
    const code = await lockCommand(context, [
      "vpc/core",
      "--reason",
      "production VPC",
    ], { pollMs: 1 });
    assert.equal(code, 0);
    assert.deepEqual(workspace.locks.get("team-a/vpcs-core")?.spec, {
      target: {
        apiExportRef: NETWORK,
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        name: "core",
      },
      reason: "production VPC",
      operations: ["Delete"],
    });
    assert.equal(
      context.io.stdout,
      "lock.dependencies.opendefense.cloud/vpcs-core created\n" +
        "lock.dependencies.opendefense.cloud/vpcs-core is Ready: deleting core is denied\n",
    );
  });
});

Deno.test("lock: a Namespace is locked by a Lock in itself, a ConfigMap without apiExportRef", async () => {
  const workspace = consumer();
  await withWorkspace(workspace, async (context, api) => {
    await lockCommand(
      context,
      ["ns/team-b", "--reason", "home", "-o", "name"],
      {
        pollMs: 1,
      },
    );
    assert.equal(
      context.io.stdout,
      "lock.dependencies.opendefense.cloud/namespaces-team-b\n",
    );
    const home = workspace.locks.get("team-b/namespaces-team-b");
    assert.deepEqual((home?.spec as { target: unknown }).target, {
      group: "",
      version: "v1",
      resource: "namespaces",
      name: "team-b",
    });
    api.requests.length = 0;
    await lockCommand(context, [
      "configmap",
      "settings",
      "--reason",
      "config",
      "--name",
      "cfg",
      "--operations",
      "Delete,Update",
      "-o",
      "json",
    ], { pollMs: 1 });
    const printed = JSON.parse(
      context.io.stdout.split("\n").slice(1).join("\n"),
    );
    assert.equal(printed.metadata.name, "cfg");
    assert.equal(printed.status.conditions[0].reason, "Enforced");
    assert.equal("apiExportRef" in printed.spec.target, false);
    assert.deepEqual(printed.spec.operations, ["Delete", "Update"]);
    assert.ok(
      !api.requests.some((r) => r.url.pathname.endsWith("/apibindings")),
      "a core type is never looked up in the bindings",
    );
  });
});

Deno.test("lock: a second Lock for the same object needs --update, which replaces reason and operations", async () => {
  const workspace = consumer();
  await withWorkspace(workspace, async (context) => {
    await lockCommand(context, [
      "vpc/core",
      "--reason",
      "first",
      "--name",
      "prod",
    ], {
      pollMs: 1,
    });
    await assert.rejects(
      lockCommand(context, ["vpc/core", "--reason", "second"], { pollMs: 1 }),
      failure(
        2,
        /already locked in namespace team-a by Lock prod \("first"\): use --update/,
      ),
    );
    const code = await lockCommand(context, [
      "vpc/core",
      "--reason",
      "second",
      "--operations",
      "Delete,Update",
      "--update",
    ], { pollMs: 1 });
    assert.equal(code, 0);
    assert.equal(workspace.locks.size, 1);
    const prod = workspace.locks.get("team-a/prod");
    assert.equal((prod?.spec as { reason: string }).reason, "second");
    assert.deepEqual((prod?.spec as { operations: string[] }).operations, [
      "Delete",
      "Update",
    ]);
    assert.equal(prod?.metadata?.generation, 2);
    assert.match(
      context.io.stdout,
      /lock\.dependencies\.opendefense\.cloud\/prod updated\n/,
    );
  });
});

Deno.test("lock: --for sets spec.expiresAt by the command's clock and says until when; --update without it holds until deleted", async () => {
  const workspace = consumer();
  const now = () => Date.parse("2026-12-01T16:00:00Z");
  await withWorkspace(workspace, async (context, api) => {
    await assert.rejects(
      lockCommand(context, [
        "vpc/core",
        "--reason",
        "r",
        "--until",
        "2026-12-01T15:00:00Z",
      ], { pollMs: 1, now }),
      failure(2, /--until 2026-12-01T15:00:00Z has passed/),
    );
    assert.equal(api.requests.length, 0, "refused before anything is asked");
    const code = await lockCommand(context, [
      "vpc/core",
      "--reason",
      "migration",
      "--for",
      "2h",
    ], { pollMs: 1, now });
    assert.equal(code, 0);
    const spec = workspace.locks.get("team-a/vpcs-core")?.spec as {
      expiresAt?: string;
    };
    assert.equal(spec.expiresAt, "2026-12-01T18:00:00Z");
    assert.match(
      context.io.stdout,
      /vpcs-core is Ready until 2026-12-01T18:00:00Z: deleting core is denied\n$/,
    );
    api.requests.length = 0;
    await lockCommand(context, [
      "vpc/core",
      "--reason",
      "migration",
      "--update",
    ], { pollMs: 1, now });
    const patch = api.requests.find((r) => r.method === "PATCH");
    assert.deepEqual(JSON.parse(patch?.body ?? "{}").spec, {
      reason: "migration",
      operations: ["Delete"],
      expiresAt: null,
    });
  });
});

Deno.test("lock: Ready False exits 1 with the reason; no Ready in time exits 2; --timeout 0 does not wait", async () => {
  const workspace = consumer();
  await withWorkspace(workspace, async (context) => {
    workspace.readiness = () => ({
      status: "False",
      reason: "ProviderMismatch",
      message: "set spec.target.apiExportRef",
    });
    await assert.rejects(
      lockCommand(context, ["vpc/core", "--reason", "r"], { pollMs: 1 }),
      failure(
        1,
        /^Lock team-a\/vpcs-core is not in effect: ProviderMismatch: set spec\.target\.apiExportRef$/,
      ),
    );
    workspace.readiness = () => undefined;
    workspace.locks.clear();
    await assert.rejects(
      lockCommand(context, ["vpc/core", "--reason", "r", "--timeout", "20ms"], {
        pollMs: 1,
      }),
      failure(2, /^Lock team-a\/vpcs-core has no Ready condition after 0\.02s/),
    );
    workspace.locks.clear();
    assert.equal(
      await lockCommand(context, [
        "vpc/core",
        "--reason",
        "r",
        "--timeout",
        "0",
      ]),
      0,
    );
  });
});

Deno.test("lock: unknown types, missing objects, cluster-scoped types and denied writes exit 2 naming why", async () => {
  const workspace = consumer();
  workspace.types.push({
    group: "network.example.com",
    version: "v1alpha1",
    resource: "peerings",
    kind: "Peering",
    namespaced: false,
  });
  await withWorkspace(workspace, async (context) => {
    await assert.rejects(
      lockCommand(context, ["vpcz/core", "--reason", "r"]),
      failure(2, /^the server doesn't have a resource type "vpcz"$/),
    );
    await assert.rejects(
      lockCommand(context, ["vpc/missing", "--reason", "r"]),
      failure(
        2,
        /^vpcs\.network\.example\.com "missing" not found in namespace team-a$/,
      ),
    );
    await assert.rejects(
      lockCommand(context, ["peering/p", "--reason", "r"]),
      failure(2, /^peerings\.network\.example\.com is cluster-scoped/),
    );
    workspace.forbidden.add("create locks");
    await assert.rejects(
      lockCommand(context, ["vpc/core", "--reason", "r"]),
      failure(
        2,
        /^you may not create locks\.dependencies\.opendefense\.cloud in namespace team-a$/,
      ),
    );
    workspace.forbidden.add("list apibindings");
    await assert.rejects(
      lockCommand(context, ["vpc/core", "--reason", "r"]),
      failure(
        2,
        /^you may not list apibindings\.apis\.kcp\.io in workspace root:c1/,
      ),
    );
    assert.equal(workspace.locks.size, 0);
  });
});

Deno.test("unlock: deletes every Lock of the namespace on the object; nothing to unlock exits 1 unless --ignore-not-found", async () => {
  const workspace = consumer();
  await withWorkspace(workspace, async (context) => {
    for (const name of ["a", "b"]) {
      await lockCommand(context, [
        "vpc/core",
        "--reason",
        "r",
        "--name",
        name,
        "--update",
      ], {
        pollMs: 1,
      });
    }
    await lockCommand(context, ["cm/settings", "--reason", "r"], { pollMs: 1 });
    const before = context.io.stdout.length;
    assert.equal(
      await unlockCommand(context, ["vpcs.network.example.com/core"]),
      0,
    );
    assert.equal(
      context.io.stdout.slice(before),
      "lock.dependencies.opendefense.cloud/a deleted\n" +
        "lock.dependencies.opendefense.cloud/b deleted\n",
    );
    assert.deepEqual([...workspace.locks.keys()], [
      "team-a/configmaps-settings",
    ]);
    await assert.rejects(
      unlockCommand(context, ["vpc/core"]),
      failure(
        1,
        /^nothing locks vpcs\.network\.example\.com\/core in namespace team-a$/,
      ),
    );
    assert.equal(
      await unlockCommand(context, ["vpc/core", "--ignore-not-found"]),
      0,
    );
    workspace.forbidden.add("delete locks");
    await assert.rejects(
      unlockCommand(context, ["configmap/settings"]),
      failure(
        2,
        /^you may not delete locks\.dependencies\.opendefense\.cloud in namespace team-a$/,
      ),
    );
  });
});

Deno.test("lock: a workspace without the dep-ctrl binding serves no Locks", async () => {
  const workspace = consumer();
  workspace.types = workspace.types.filter((t) =>
    t.group !== "dependencies.opendefense.cloud"
  );
  const api = new FakeApi((request) =>
    request.url.pathname.includes("/apis/dependencies.opendefense.cloud/")
      ? new Response(
        JSON.stringify({ kind: "Status", code: 404, reason: "NotFound" }),
        { status: 404 },
      )
      : workspace.handle(request)
  );
  const context = fakeContext(api);
  try {
    await assert.rejects(
      lockCommand(context, ["vpc/core", "--reason", "r"]),
      failure(
        2,
        /^this workspace serves no Locks \(locks\.dependencies\.opendefense\.cloud\)/,
      ),
    );
  } finally {
    context.client.close();
    await api.close();
  }
});

Deno.test("lock and unlock print their usage for --help", async () => {
  const workspace = consumer();
  await withWorkspace(workspace, async (context, api) => {
    assert.equal(await lockCommand(context, ["--help"]), 0);
    assert.equal(await unlockCommand(context, ["-h"]), 0);
    assert.match(context.io.stdout, /^Usage: kubectl dependencies lock/);
    assert.match(context.io.stdout, /Usage: kubectl dependencies unlock/);
    assert.equal(api.requests.length, 0);
  });
});
