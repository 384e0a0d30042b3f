import assert from "node:assert/strict";
import { dirname } from "node:path";
import { commandPath, grantCommandLine, runShell } from "./grant.ts";

Deno.test("grantCommandLine() pipes deno task rbac into kubectl apply in system:admin", () => {
  assert.equal(
    grantCommandLine({
      webhookKubeconfig:
        ".dev/kcp/kubeconfigs/webhook@root_dep-ctrl.kubeconfig",
      adminKubeconfig:
        ".dev/kcp/kubeconfigs/shardAdmin@system_admin.kubeconfig",
    }),
    "deno task rbac --kubeconfig=.dev/kcp/kubeconfigs/webhook@root_dep-ctrl.kubeconfig | kubectl --kubeconfig=.dev/kcp/kubeconfigs/shardAdmin@system_admin.kubeconfig apply -f -",
  );
  assert.equal(
    grantCommandLine({
      webhookKubeconfig: "w",
      adminKubeconfig: "a",
      lockTypes: ["namespaces", "vpcs.network.example.com"],
      deno: "/opt/deno2",
    }),
    "/opt/deno2 task rbac --kubeconfig=w --lock-types=namespaces,vpcs.network.example.com | kubectl --kubeconfig=a apply -f -",
  );
});

Deno.test("runShell() finds deno and kubectl through commandPath() and fails with the pipe", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kubectl = `${dir}/kubectl`;
    await Deno.writeTextFile(kubectl, '#!/bin/sh\necho "kubectl $*"; cat\n');
    await Deno.chmod(kubectl, 0o755);
    assert.equal(
      commandPath(kubectl),
      `${dirname(Deno.execPath())}:${dir}`,
    );
    const ok = await runShell(
      "deno --version | kubectl --kubeconfig=a apply -f -",
      { kubectl },
    );
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^kubectl --kubeconfig=a apply -f -\ndeno \d/);
    const failed = await runShell("false | kubectl apply -f -", { kubectl });
    assert.notEqual(
      failed.code,
      0,
      "pipefail: the first command's failure counts",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
