/**
 * The entrypoints as operators meet them: `--help` lists every flag, a bad
 * flag is a clear error with exit code 2, and a missing kubeconfig is named.
 */
import assert from "node:assert/strict";
import { DENO_RUN_FLAGS } from "./harness/components.ts";

const ROOT = new URL("../", import.meta.url).pathname;

async function run(
  entry: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...DENO_RUN_FLAGS, `${ROOT}${entry}`, ...args],
    env: { NO_COLOR: "1", KUBECONFIG: "" },
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return {
    code,
    stdout: decoder.decode(stdout),
    stderr: decoder.decode(stderr),
  };
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
