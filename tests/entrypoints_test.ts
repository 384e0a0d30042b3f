/**
 * The entrypoints as operators meet them: `--help` lists every flag, a bad
 * flag is a clear error with exit code 2, and a missing kubeconfig is named.
 */
import assert from "node:assert/strict";
import { DENO_RUN_FLAGS } from "./harness/components.ts";
import { type CommandResult, runCommand } from "./harness/process.ts";

const ROOT = new URL("../", import.meta.url).pathname;

function run(entry: string, args: string[]): Promise<CommandResult> {
  return runCommand(Deno.execPath(), [
    "run",
    ...DENO_RUN_FLAGS,
    `${ROOT}${entry}`,
    ...args,
  ], { env: { NO_COLOR: "1", KUBECONFIG: "" } });
}

Deno.test("webhook.ts --help lists every flag with its default", async () => {
  const { code, stdout } = await run("webhook.ts", ["--help"]);
  assert.equal(code, 0);
  for (
    const flag of [
      "--kubeconfig",
      '--api-export-name=<value>\n      Name of the dep-ctrl APIExport (default "dependencies.opendefense.cloud")',
      "--webhook-bind-address=<value>",
      "--webhook-port",
      "--tls-cert-dir=<value>",
      '(default "/etc/webhook-tls")',
      "--health-probe-bind-address",
      '(default ":8081")',
      "--metrics-bind-address",
      '(default ":8080")',
      "--kcp-base-host",
      "--log-level",
      "--list-timeout",
    ]
  ) {
    assert.ok(stdout.includes(flag), `--help lacks ${flag}:\n${stdout}`);
  }
});

Deno.test("webhook.ts rejects an unknown flag and a missing kubeconfig with exit code 2", async () => {
  const unknown = await run("webhook.ts", ["--no-such-flag"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /webhook: Cannot parse flags: .*no-such-flag/);
  const missing = await run("webhook.ts", []);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--kubeconfig \(or KUBECONFIG\) is required/);
});

Deno.test("webhook.ts exits 1 with a JSON log line naming an unreadable kubeconfig", async () => {
  const { code, stderr } = await run("webhook.ts", [
    "--kubeconfig=/nonexistent/kubeconfig",
  ]);
  assert.equal(code, 1);
  const line = JSON.parse(stderr.trim().split("\n").at(-1)!) as {
    level: string;
    msg: string;
    error: { message: string };
  };
  assert.equal(line.level, "error");
  assert.equal(line.msg, "cannot start");
  assert.match(
    line.error.message,
    /Cannot load kubeconfig \/nonexistent\/kubeconfig/,
  );
});

Deno.test("controller.ts --help lists every flag with its default", async () => {
  const { code, stdout } = await run("controller.ts", ["--help"]);
  assert.equal(code, 0);
  for (
    const flag of [
      "--kubeconfig",
      '(default "dependencies.opendefense.cloud")',
      "--kcp-base-host",
      "--webhook-url=<value>",
      "--webhook-ca-bundle-path=<value>",
      "--webhook-timeout",
      "--resync-period",
      "--health-probe-bind-address",
      '(default ":8081")',
      "--metrics-bind-address",
      '(default ":8080")',
      "--leader-elect\n",
      "--leader-election-namespace",
      "--leader-election-id",
      "--log-level",
    ]
  ) {
    assert.ok(stdout.includes(flag), `--help lacks ${flag}:\n${stdout}`);
  }
});

Deno.test("controller.ts names a missing required flag with exit code 2", async () => {
  const unknown = await run("controller.ts", ["--no-such-flag"]);
  assert.equal(unknown.code, 2);
  assert.match(
    unknown.stderr,
    /controller: Cannot parse flags: .*no-such-flag/,
  );
  const noUrl = await run("controller.ts", [
    "--kubeconfig=/nonexistent",
    "--webhook-ca-bundle-path=/nonexistent",
  ]);
  assert.equal(noUrl.code, 2);
  assert.match(noUrl.stderr, /--webhook-url is required/);
});

Deno.test("controller.ts exits 1 with a JSON log line naming an unreadable CA bundle", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kubeconfig = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{
          name: "kcp",
          cluster: { server: "https://127.0.0.1:1/clusters/root:dep-ctrl" },
        }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "c", context: { cluster: "kcp", user: "u" } }],
        "current-context": "c",
      }),
    );
    const { code, stderr } = await run("controller.ts", [
      `--kubeconfig=${kubeconfig}`,
      "--webhook-url=https://webhook.example:9443/validate",
      `--webhook-ca-bundle-path=${dir}/missing-ca.crt`,
    ]);
    assert.equal(code, 1);
    const line = JSON.parse(stderr.trim().split("\n").at(-1)!);
    assert.equal(line.level, "error");
    assert.equal(line.msg, "cannot start");
    assert.match(line.error.message, /missing-ca\.crt/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
