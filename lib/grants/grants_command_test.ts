import assert from "node:assert/strict";
import { GRANTS_ENTRYPOINT, parseGrantsOptions } from "./grants_command.ts";
import { runEntrypoint } from "../runtime/mod.ts";
import { FakeApi, json, status } from "../../testing/fakes.ts";

Deno.test("parseGrantsOptions() reads the flags, with the default role name", () => {
  const parsed = parseGrantsOptions([
    "--kubeconfig=/k",
    "--lock-types=namespaces, vpcs.network.example.com,",
    "--timeout=5s",
  ]);
  assert.equal(parsed.help, false);
  if (parsed.help) return;
  assert.equal(parsed.options.kubeconfig, "/k");
  assert.deepEqual(
    [...parsed.options.lockTypes],
    ["namespaces", "vpcs.network.example.com"],
  );
  assert.equal(parsed.options.timeoutMs, 5_000);
  assert.equal(parsed.options.dependentsIndex, false);
  const indexed = parseGrantsOptions(["--kubeconfig=/k", "--dependents-index"]);
  assert.ok(!indexed.help && indexed.options.dependentsIndex);
  assert.equal(parsed.options.name, "dependency-webhook:reads:rules");
  assert.equal(parsed.options.logLevel, "warn");
});

Deno.test("parseGrantsOptions() refuses a role name kubectl could not apply", () => {
  for (const name of ["Upper", "a b", "-lead", "x".repeat(254), "../x"]) {
    assert.throws(
      () => parseGrantsOptions(["--kubeconfig=/k", `--name=${name}`]),
      /--name must be a ClusterRole name/,
      name,
    );
  }
  const parsed = parseGrantsOptions([
    "--kubeconfig=/k",
    "--name=dependency-webhook:reads:team-a",
  ]);
  assert.ok(!parsed.help && parsed.options.name.endsWith("team-a"));
});

Deno.test("controller grants answers --help and refuses bad flags before reading anything", async () => {
  const out: string[] = [];
  const err: string[] = [];
  const io = {
    out: (t: string) => out.push(t),
    err: (t: string) => err.push(t),
  };
  assert.equal(await runEntrypoint(["--help"], GRANTS_ENTRYPOINT, io), 0);
  assert.match(out.join("\n"), /^Usage: controller grants \[flags\]/);
  assert.match(out.join("\n"), /--lock-types=/);
  assert.equal(await runEntrypoint(["--bogus"], GRANTS_ENTRYPOINT, io), 2);
  assert.match(err.join("\n"), /^controller grants: .*bogus/);
});

Deno.test("controller grants names an unreadable kubeconfig in one sentence, without a stack", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/broken`, "clusters: [");
    const cases: [string, string][] = [
      [
        "/nonexistent/kubeconfig",
        "controller grants: Cannot load kubeconfig /nonexistent/kubeconfig: no such file",
      ],
      [
        dir,
        `controller grants: Cannot load kubeconfig ${dir}: it is a directory`,
      ],
      [
        `${dir}/broken`,
        `controller grants: Cannot load kubeconfig ${dir}/broken: not YAML or JSON: `,
      ],
    ];
    for (const [path, want] of cases) {
      const err: string[] = [];
      const lines: string[] = [];
      const code = await runEntrypoint(
        [`--kubeconfig=${path}`],
        GRANTS_ENTRYPOINT,
        {
          out: () => {},
          err: (t) => err.push(t),
          write: (line) => lines.push(line),
        },
      );
      assert.equal(code, 1, path);
      assert.equal(err.length, 1, path);
      assert.ok(err[0]!.startsWith(want), `${err[0]}`);
      assert.doesNotMatch(err[0]!, /\n|stack| {4}at /, path);
      assert.deepEqual(lines, [], path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("controller grants stops at once on a 401 or 403, naming the status, the workspace and what to check", async () => {
  const dir = await Deno.makeTempDir();
  for (
    const [code, want] of [
      [401, /401 Unauthorized .* in workspace root: .*kubeconfig .*token/],
      [403, /403 Forbidden .* in workspace root: .*\/clusters\/root:dep-ctrl/],
    ] as const
  ) {
    const api = new FakeApi(() =>
      json(
        status(code, code === 401 ? "Unauthorized" : "Forbidden", "no"),
        code,
      )
    );
    try {
      const kubeconfig = `${dir}/kubeconfig`;
      await Deno.writeTextFile(
        kubeconfig,
        JSON.stringify({
          apiVersion: "v1",
          kind: "Config",
          clusters: [{
            name: "k",
            cluster: { server: `${api.url}/clusters/root` },
          }],
          users: [{ name: "u", user: { token: "wrong" } }],
          contexts: [{ name: "k", context: { cluster: "k", user: "u" } }],
          "current-context": "k",
        }),
      );
      const said: string[] = [];
      const started = Date.now();
      const exit = await runEntrypoint(
        [
          `--kubeconfig=${kubeconfig}`,
          "--allow-insecure-http",
          "--timeout=30s",
        ],
        GRANTS_ENTRYPOINT,
        {
          out: () => {},
          err: (t) => said.push(t),
          write: (line) => said.push(line),
        },
      );
      assert.equal(exit, 1);
      assert.ok(Date.now() - started < 5_000, "no retries until --timeout");
      assert.match(said.join("\n"), want);
      assert.equal(api.requests.length, 1);
    } finally {
      await api.close();
    }
  }
  await Deno.remove(dir, { recursive: true });
});
