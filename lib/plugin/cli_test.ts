// deno-lint-ignore-file no-control-regex
import assert from "node:assert/strict";
import { type Cause, statusCause } from "../causes/mod.ts";
import { KubeClient } from "../kcp/mod.ts";
import { connection } from "../../testing/fake_api.ts";
import { createServingCert } from "../../testing/tls.ts";
import {
  COMMANDS,
  helpText,
  main,
  type PluginCommand,
  splitArgs,
} from "./cli.ts";
import {
  type KubeconfigFlags,
  type PluginContext,
  PluginError,
  type PluginIo,
} from "./context.ts";
import { WHY_USAGE } from "./why.ts";

/** What a run wrote. */
interface Captured extends PluginIo {
  stdout: string;
  stderr: string;
}

function capture(): Captured {
  const io: Captured = {
    stdout: "",
    stderr: "",
    color: false,
    out: (text) => void (io.stdout += text),
    err: (text) => void (io.stderr += text),
  };
  return io;
}

Deno.test("splitArgs: kubeconfig flags in every spelling, wherever they stand; the first word is the command", () => {
  assert.deepEqual(
    splitArgs([
      "--kubeconfig",
      "/k",
      "why",
      "vpc/core",
      "-n",
      "team-a",
      "--context=ctx",
      "-o",
      "json",
      "--recursive",
    ]),
    {
      flags: { kubeconfig: "/k", namespace: "team-a", context: "ctx" },
      command: "why",
      rest: ["vpc/core", "-o", "json", "--recursive"],
      help: false,
    },
  );
  assert.deepEqual(splitArgs(["why", "-nteam-b", "vpc", "core"]).flags, {
    namespace: "team-b",
  });
  assert.deepEqual(
    splitArgs(["why", "-n=team-c", "--namespace", "team-d", "x/y"]).flags,
    { namespace: "team-d" },
  );
  assert.deepEqual(splitArgs(["--kubeconfig=/a", "--context", "c"]), {
    flags: { kubeconfig: "/a", context: "c" },
    rest: [],
    help: false,
  });
  // A value of -o before the command is no command.
  assert.deepEqual(splitArgs(["-o", "json", "why", "vpc/x"]), {
    flags: {},
    command: "why",
    rest: ["-o", "json", "vpc/x"],
    help: false,
  });
  // After --, nothing is a flag of ours.
  assert.deepEqual(splitArgs(["why", "--", "-n", "x"]), {
    flags: {},
    command: "why",
    rest: ["--", "-n", "x"],
    help: false,
  });
  assert.equal(splitArgs(["lock", "--help"]).help, true);
  assert.equal(splitArgs(["-h"]).help, true);
});

Deno.test("splitArgs: a kubeconfig flag without a value is a usage error", () => {
  for (
    const args of [["why", "-n"], ["--kubeconfig"], ["--context="], ["-n="]]
  ) {
    assert.throws(
      () => splitArgs(args),
      (error: unknown) =>
        error instanceof PluginError && error.exitCode === 2 &&
        /needs a value/.test(error.message),
      args.join(" "),
    );
  }
});

/** Fake commands recording what they were given. */
function fakeCommands(
  run: PluginCommand["run"],
): Record<string, PluginCommand> {
  return {
    why: { summary: "Say why", usage: "why usage\n", run },
    lock: { summary: "Lock it", usage: "lock usage\n", run },
  };
}

/** A context whose client goes nowhere, recording the flags it was made from and whether it was closed. */
function fakeContext(seen: { flags?: KubeconfigFlags; closed: boolean }) {
  return (flags: KubeconfigFlags, io: PluginIo): PluginContext => {
    seen.flags = flags;
    const client = new KubeClient(connection("http://127.0.0.1:1"));
    const close = client.close.bind(client);
    client.close = () => {
      seen.closed = true;
      close();
    };
    return {
      client,
      server: "https://kcp/clusters/root:c1",
      namespace: flags.namespace ?? "default",
      io,
    };
  };
}

Deno.test("main: dispatches to the command with its arguments, the context from the kubeconfig flags, and closes it", async () => {
  const seen: { flags?: KubeconfigFlags; closed: boolean } = { closed: false };
  const calls: { args: string[]; namespace: string }[] = [];
  const io = capture();
  const code = await main(
    ["why", "vpc/core", "-n", "team-a", "--kubeconfig=/k", "-R"],
    io,
    {
      commands: fakeCommands((args, context) => {
        calls.push({ args, namespace: context.namespace });
        return Promise.resolve(1);
      }),
      contextOf: fakeContext(seen),
    },
  );
  assert.equal(code, 1);
  assert.deepEqual(calls, [{ args: ["vpc/core", "-R"], namespace: "team-a" }]);
  assert.deepEqual(seen.flags, { namespace: "team-a", kubeconfig: "/k" });
  assert.equal(seen.closed, true);
  assert.equal(io.stderr, "");
});

Deno.test("main: help goes to stdout with exit 0, without a kubeconfig", async () => {
  const commands = fakeCommands(() => Promise.reject(new Error("not run")));
  const contextOf = () => {
    throw new Error("no context for help");
  };
  const cases: [string[], string][] = [
    [["help"], helpText(commands)],
    [["--help"], helpText(commands)],
    [["-h"], helpText(commands)],
    [["help", "help"], helpText(commands)],
    [["help", "lock"], "lock usage\n"],
    [["why", "--help"], "why usage\n"],
    [["-n", "x", "lock", "vpc/a", "-h"], "lock usage\n"],
  ];
  for (const [args, expected] of cases) {
    const io = capture();
    assert.equal(
      await main(args, io, { commands, contextOf }),
      0,
      args.join(" "),
    );
    assert.equal(io.stdout, expected, args.join(" "));
    assert.equal(io.stderr, "");
  }
});

Deno.test("main: no command, an unknown one, or help for one: usage errors with exit 2 on stderr", async () => {
  const commands = fakeCommands(() => Promise.resolve(0));
  const none = capture();
  assert.equal(await main([], none, { commands }), 2);
  assert.equal(none.stdout, "");
  assert.equal(none.stderr, helpText(commands));
  const unknown = capture();
  assert.equal(await main(["frob", "\u001b[2J"], unknown, { commands }), 2);
  assert.equal(
    unknown.stderr,
    'error: unknown command "frob": want one of why, lock, help (see kubectl dependencies --help)\n',
  );
  const hostile = capture();
  assert.equal(await main(["\u001b[2Jx"], hostile, { commands }), 2);
  assert.match(hostile.stderr, /unknown command "\\u\{1b\}\[2Jx"/);
  const helpFor = capture();
  assert.equal(await main(["help", "frob"], helpFor, { commands }), 2);
  assert.match(
    helpFor.stderr,
    /^error: no help for "frob": want one of why, lock\n$/,
  );
});

Deno.test("main: a failure is a message on stderr, each line printable, with its exit code; anything else exits 2", async () => {
  const seen = { closed: false };
  const failing = (error: unknown) => fakeCommands(() => Promise.reject(error));
  const io = capture();
  assert.equal(
    await main(["why", "x/y"], io, {
      commands: failing(
        new PluginError("held\nby \u001b[31mevil", { exitCode: 1 }),
      ),
      contextOf: fakeContext(seen),
    }),
    1,
  );
  assert.equal(io.stderr, "error: held\nby \\u{1b}[31mevil\n");
  assert.equal(seen.closed, true);
  const other = capture();
  assert.equal(
    await main(["lock", "x/y"], other, {
      commands: failing(new TypeError("boom")),
      contextOf: fakeContext({ closed: false }),
    }),
    2,
  );
  assert.equal(other.stderr, "error: boom\n");
  const badKubeconfig = capture();
  assert.equal(
    await main(
      ["why", "x/y", "--kubeconfig", "/nonexistent/kubeconfig"],
      badKubeconfig,
    ),
    2,
  );
  assert.match(badKubeconfig.stderr, /^error: .*\/nonexistent\/kubeconfig/);
});

Deno.test("main: the commands are why, lock, unlock and graph, each with its usage", () => {
  assert.deepEqual(Object.keys(COMMANDS), ["why", "lock", "unlock", "graph"]);
  assert.equal(COMMANDS.why!.usage, WHY_USAGE);
  const help = helpText();
  for (const name of ["why", "lock", "unlock", "graph", "help"]) {
    assert.match(help, new RegExp(`^  ${name} +\\S`, "m"), name);
  }
  for (
    const flag of ["--kubeconfig", "--context", "-n, --namespace", "-h, --help"]
  ) {
    assert.ok(help.includes(flag), flag);
  }
});

// ------------------------------------------------- through a kubeconfig

const WORKSPACE = "/clusters/root:consumers:c1";
const VPC_PATH =
  `${WORKSPACE}/apis/network.example.com/v1alpha1/namespaces/team-a/vpcs/core`;

const LOCK: Cause = {
  type: "Lock",
  lock: { namespace: "team-a", name: "prod" },
  reason: "production \u001b[31mVPC",
};

/** A TLS API server with VPCs, answering a dry-run delete of team-a/core with a Lock's denial. */
function serve(
  cert: { cert: string; key: string },
  seen: Request[],
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...cert,
    onListen: () => {},
  }, (request) => {
    seen.push(request);
    const path = new URL(request.url).pathname;
    const body = (value: unknown, status = 200) =>
      new Response(JSON.stringify(value), {
        status,
        headers: { "content-type": "application/json" },
      });
    if (request.headers.get("authorization") !== "Bearer tenant-token") {
      return body({ kind: "Status", code: 401, message: "Unauthorized" }, 401);
    }
    if (path === `${WORKSPACE}/api/v1`) return body({ resources: [] });
    if (path === `${WORKSPACE}/apis`) {
      return body({
        groups: [{
          name: "network.example.com",
          versions: [{ version: "v1alpha1" }],
          preferredVersion: { version: "v1alpha1" },
        }],
      });
    }
    if (path === `${WORKSPACE}/apis/network.example.com/v1alpha1`) {
      return body({
        resources: [{
          name: "vpcs",
          singularName: "vpc",
          namespaced: true,
          kind: "VPC",
        }],
      });
    }
    if (request.method === "DELETE" && path === VPC_PATH) {
      return body({
        kind: "Status",
        code: 409,
        reason: "Conflict",
        message:
          'admission webhook "d" denied the request: cannot delete vpcs/core: locked by Lock team-a/prod',
        details: { causes: [statusCause(LOCK)] },
      }, 409);
    }
    return body({ kind: "Status", code: 404, message: "not found" }, 404);
  });
}

Deno.test("main: why through a kubeconfig, as its user, over TLS: a locked VPC exits 1 naming the Lock", async () => {
  const dir = await Deno.makeTempDir({ prefix: "why-cli-" });
  const served = await createServingCert(`${dir}/tls`);
  const cert = {
    cert: await Deno.readTextFile(`${served.dir}/tls.crt`),
    key: await Deno.readTextFile(`${served.dir}/tls.key`),
  };
  const seen: Request[] = [];
  const server = serve(cert, seen);
  try {
    const kubeconfig = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "other",
        clusters: [{
          name: "kcp",
          cluster: {
            server: `https://127.0.0.1:${server.addr.port}${WORKSPACE}`,
            "certificate-authority-data": btoa(served.caPem),
          },
        }],
        users: [
          { name: "tenant", user: { token: "tenant-token" } },
          { name: "nobody", user: { token: "wrong" } },
        ],
        contexts: [
          {
            name: "tenant",
            context: { cluster: "kcp", user: "tenant", namespace: "team-a" },
          },
          { name: "other", context: { cluster: "kcp", user: "nobody" } },
        ],
      }),
    );
    const io = capture();
    const code = await main(
      ["why", "vpc/core", `--kubeconfig=${kubeconfig}`, "--context", "tenant"],
      io,
    );
    assert.equal(io.stderr, "");
    assert.equal(code, 1);
    assert.equal(
      io.stdout,
      "VPC team-a/core is held by:\n\u2514\u2500\u2500 locked by Lock team-a/prod (reason: production \\u{1b}[31mVPC)\n",
    );
    const deletes = seen.filter((r) => r.method === "DELETE");
    assert.equal(deletes.length, 1);
    assert.equal(new URL(deletes[0]!.url).search, "?dryRun=All");

    const json = capture();
    assert.equal(
      await main([
        "why",
        "vpc",
        "core",
        "-o",
        "json",
        "--kubeconfig",
        kubeconfig,
        "--context=tenant",
      ], json),
      1,
    );
    const parsed = JSON.parse(json.stdout);
    assert.equal(parsed.held, true);
    assert.deepEqual(parsed.causes, [LOCK]);
    assert.doesNotMatch(json.stdout, /\x1b/);

    // The current context's user is not accepted: exit 2, naming it.
    const refused = capture();
    assert.equal(
      await main(["why", "vpc/core", "--kubeconfig", kubeconfig], refused),
      2,
    );
    assert.match(refused.stderr, /^error: .*401/);
    assert.equal(refused.stdout, "");
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("main: a usage error is named before any kubeconfig is read", async () => {
  for (
    const [args, message] of [
      [["why"], /why: which object\?/],
      [["why", "vpc/x", "-o", "wide"], /-o must be one of/],
      [["lock", "vpc/x"], /--reason is required/],
    ] as const
  ) {
    const io = capture();
    const code = await main(
      [...args, "--kubeconfig=/nonexistent/kubeconfig"],
      io,
    );
    assert.equal(code, 2, args.join(" "));
    assert.match(io.stderr, message);
    assert.doesNotMatch(io.stderr, /nonexistent/);
  }
});
