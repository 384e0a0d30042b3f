/**
 * The entrypoints as operators meet them: `--help` lists every flag, a bad
 * flag is a clear error with exit code 2, and a missing kubeconfig is named.
 */
import assert from "node:assert/strict";
import {
  ALLOW_INSECURE_HTTP_FLAG,
  API_EXPORT_NAME_FLAG,
  EXPORT_RELIST_INTERVAL_FLAG,
  kcpBaseHostFlag,
  KUBECONFIG_FLAG,
  LOG_LEVEL_FLAG,
  SERVICE_BIND_FLAGS,
} from "../lib/kcp/mod.ts";
import { CONTROLLER_FLAGS } from "../lib/controller/mod.ts";
import type { FlagSpec } from "../lib/runtime/mod.ts";
import { WEBHOOK_FLAGS } from "../lib/webhook/mod.ts";
import {
  type CommandResult,
  createServingCert,
  DENO_RUN_FLAGS,
  freePorts,
  runCommand,
  waitFor,
} from "../testing/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** `deno run` of the entrypoint `entry` with `args`, and no kubeconfig. */
function runEntrypoint(entry: string, args: string[]): Promise<CommandResult> {
  return runCommand(Deno.execPath(), [
    "run",
    ...DENO_RUN_FLAGS,
    `${ROOT}${entry}`,
    ...args,
  ], { env: { NO_COLOR: "1", KUBECONFIG: "" } });
}

Deno.test("webhook.ts --help lists every flag with its default", async () => {
  const { code, stdout } = await runEntrypoint("webhook.ts", ["--help"]);
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
  const unknown = await runEntrypoint("webhook.ts", ["--no-such-flag"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /webhook: Cannot parse flags: .*no-such-flag/);
  const missing = await runEntrypoint("webhook.ts", []);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--kubeconfig \(or KUBECONFIG\) is required/);
});

Deno.test("webhook.ts exits 1 with a JSON log line naming an unreadable kubeconfig", async () => {
  const { code, stderr } = await runEntrypoint("webhook.ts", [
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
  const { code, stdout } = await runEntrypoint("controller.ts", ["--help"]);
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
  const unknown = await runEntrypoint("controller.ts", ["--no-such-flag"]);
  assert.equal(unknown.code, 2);
  assert.match(
    unknown.stderr,
    /controller: Cannot parse flags: .*no-such-flag/,
  );
  const noUrl = await runEntrypoint("controller.ts", [
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
    const { code, stderr } = await runEntrypoint("controller.ts", [
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

/** A kubeconfig whose server is `server`, with a token, in a temp dir. */
async function kubeconfigFor(dir: string, server: string): Promise<string> {
  const path = `${dir}/kubeconfig`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return path;
}

Deno.test("deno run -A webhook.ts, as a user types it, serves TLS and exits 0 on SIGTERM while silent TCP and TLS clients hold connections", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cert = await createServingCert(`${dir}/tls`);
    const [port, health] = freePorts(2) as [number, number];
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}webhook.ts`,
        `--kubeconfig=${await kubeconfigFor(
          dir,
          "https://127.0.0.1:1/clusters/root:dep-ctrl",
        )}`,
        `--tls-cert-dir=${cert.dir}`,
        `--webhook-bind-address=127.0.0.1:${port}`,
        `--health-probe-bind-address=127.0.0.1:${health}`,
        "--metrics-bind-address=0",
      ],
      cwd: ROOT,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const silent: Deno.Conn[] = [];
    try {
      await waitFor("the webhook to serve its probes", async () => {
        const r = await fetch(`http://127.0.0.1:${health}/healthz`)
          .catch(() => undefined);
        await r?.body?.cancel();
        return r?.status === 200 || undefined;
      });
      const client = Deno.createHttpClient({ caCerts: [cert.caPem] });
      const answer = await fetch(`https://127.0.0.1:${port}/validate`, {
        method: "POST",
        body: "{}",
        client,
      });
      await answer.body?.cancel();
      client.close();
      assert.equal(answer.status, 400);
      // Clients that connect and send nothing, with and without a TLS
      // handshake, must not keep the process alive after SIGTERM.
      silent.push(await Deno.connect({ hostname: "127.0.0.1", port }));
      const tls = await Deno.connectTls({
        hostname: "127.0.0.1",
        port,
        caCerts: [cert.caPem],
      });
      await tls.handshake();
      silent.push(tls);
    } finally {
      child.kill("SIGTERM");
    }
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const { code } = await Promise.race([
      child.status,
      new Promise<never>((_, reject) => {
        watchdog = setTimeout(
          () => reject(new Error("still running 30 s after SIGTERM")),
          30_000,
        );
      }),
    ]).finally(() => clearTimeout(watchdog));
    assert.equal(code, 0, await stderr);
    for (const conn of silent) conn.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("webhook.ts and controller.ts refuse an http:// kcp server unless --allow-insecure-http", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kubeconfig = await kubeconfigFor(
      dir,
      "http://127.0.0.1:1/clusters/root:dep-ctrl",
    );
    const flags: Record<string, string[]> = {
      "webhook.ts": ["--tls-cert-dir=/nonexistent"],
      "controller.ts": [
        "--webhook-url=https://webhook.example:9443/validate",
        "--webhook-ca-bundle-path=/nonexistent",
      ],
    };
    for (const [entry, extra] of Object.entries(flags)) {
      const { code, stderr } = await runEntrypoint(entry, [
        `--kubeconfig=${kubeconfig}`,
        ...extra,
      ]);
      assert.equal(code, 1, entry);
      assert.match(
        stderr,
        /Cannot talk to kcp over plain http \(http:\/\/127\.0\.0\.1:1\/clusters\/root:dep-ctrl\)/,
        entry,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The flags both components share. */
const SHARED_FLAGS: readonly FlagSpec[] = [
  KUBECONFIG_FLAG,
  API_EXPORT_NAME_FLAG,
  kcpBaseHostFlag("either"),
  EXPORT_RELIST_INTERVAL_FLAG,
  ...SERVICE_BIND_FLAGS,
  LOG_LEVEL_FLAG,
  ALLOW_INSECURE_HTTP_FLAG,
];

Deno.test("both components take the shared flags, each once", () => {
  for (const table of [CONTROLLER_FLAGS, WEBHOOK_FLAGS]) {
    const names = table.map((f) => f.name);
    for (const shared of SHARED_FLAGS) {
      assert.equal(
        names.filter((n) => n === shared.name).length,
        1,
        `${shared.name} in ${names.join(", ")}`,
      );
    }
    assert.ok(table.includes(KUBECONFIG_FLAG));
    assert.ok(table.includes(LOG_LEVEL_FLAG));
  }
});
