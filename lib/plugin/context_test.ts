import assert from "node:assert/strict";
import { join } from "node:path";
import {
  EXIT_ERROR,
  EXIT_HELD,
  EXIT_OK,
  type KubeconfigFlags,
  kubeconfigPath,
  kubeconfigProblem,
  pluginContext,
  PluginError,
  type PluginIo,
  processIo,
} from "./context.ts";

/**
 * Runs `fn` with the environment variables `vars` set (`undefined`:
 * unset), then puts them back. Synchronous, so no other test of this file
 * runs in between.
 */
function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(
    Object.keys(vars).map((key) => [key, Deno.env.get(key)]),
  );
  const apply = (values: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) Deno.env.delete(key);
      else Deno.env.set(key, value);
    }
  };
  apply(vars);
  try {
    return fn();
  } finally {
    apply(saved);
  }
}

/** An io that drops what is written. */
const QUIET: PluginIo = { out: () => {}, err: () => {}, color: false };

/** A kubeconfig with contexts `main` (current, namespace `team-a`) and `other`. */
const KUBECONFIG = {
  apiVersion: "v1",
  kind: "Config",
  clusters: [
    {
      name: "c",
      cluster: { server: "https://kcp.example:6443/clusters/root:org:ws/" },
    },
    { name: "d", cluster: { server: "https://other.example/clusters/root:b" } },
  ],
  users: [{ name: "u", user: { token: "t0ken" } }],
  contexts: [
    { name: "main", context: { cluster: "c", user: "u", namespace: "team-a" } },
    { name: "other", context: { cluster: "d", user: "u" } },
  ],
  "current-context": "main",
};

Deno.test("the exit codes differ: nothing holds, something holds, an error", () => {
  assert.deepEqual([EXIT_OK, EXIT_HELD, EXIT_ERROR], [0, 1, 2]);
});

Deno.test("PluginError carries its message and exit code, an error's by default", () => {
  const cases: {
    options: { exitCode?: number } | undefined;
    exitCode: number;
  }[] = [
    { options: undefined, exitCode: EXIT_ERROR },
    { options: {}, exitCode: EXIT_ERROR },
    { options: { exitCode: EXIT_HELD }, exitCode: EXIT_HELD },
  ];
  for (const { options, exitCode } of cases) {
    const error = new PluginError("cannot do it", options);
    assert.ok(error instanceof Error);
    assert.equal(error.name, "PluginError");
    assert.equal(error.message, "cannot do it");
    assert.equal(error.exitCode, exitCode);
  }
});

Deno.test("kubeconfigPath() takes --kubeconfig, else $KUBECONFIG's first file, else ~/.kube/config", () => {
  const cases: {
    name: string;
    flags: KubeconfigFlags;
    env: Record<string, string | undefined>;
    want: string;
  }[] = [
    {
      name: "the flag wins",
      flags: { kubeconfig: "/flag/config" },
      env: { KUBECONFIG: "/env/config", HOME: "/home/u" },
      want: "/flag/config",
    },
    {
      name: "an empty flag counts as none",
      flags: { kubeconfig: "" },
      env: { KUBECONFIG: "/env/config", HOME: "/home/u" },
      want: "/env/config",
    },
    {
      name: "the first file of a list",
      flags: {},
      env: { KUBECONFIG: "::/env/a:/env/b", HOME: "/home/u" },
      want: "/env/a",
    },
    {
      name: "an empty $KUBECONFIG counts as none",
      flags: {},
      env: { KUBECONFIG: "", HOME: "/home/u" },
      want: join("/home/u", ".kube", "config"),
    },
    {
      name: "neither: the home directory's",
      flags: { kubeconfig: undefined },
      env: { KUBECONFIG: undefined, HOME: "/home/u" },
      want: join("/home/u", ".kube", "config"),
    },
    {
      name: "no home: the working directory's",
      flags: {},
      env: { KUBECONFIG: undefined, HOME: undefined },
      want: join(".", ".kube", "config"),
    },
  ];
  for (const { name, flags, env, want } of cases) {
    assert.equal(withEnv(env, () => kubeconfigPath(flags)), want, name);
  }
});

Deno.test("pluginContext() uses the kubeconfig's context, as the user, with the namespace the flags or the context give", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kubeconfig = `${dir}/config`;
    await Deno.writeTextFile(kubeconfig, JSON.stringify(KUBECONFIG));
    const cases: {
      name: string;
      flags: KubeconfigFlags;
      server: string;
      namespace: string;
    }[] = [
      {
        name:
          "the current context and its namespace, the server without its trailing slash",
        flags: { kubeconfig },
        server: "https://kcp.example:6443/clusters/root:org:ws",
        namespace: "team-a",
      },
      {
        name: "--namespace over the context's",
        flags: { kubeconfig, namespace: "team-b" },
        server: "https://kcp.example:6443/clusters/root:org:ws",
        namespace: "team-b",
      },
      {
        name: "--context, which names no namespace: default",
        flags: { kubeconfig, context: "other" },
        server: "https://other.example/clusters/root:b",
        namespace: "default",
      },
    ];
    for (const { name, flags, server, namespace } of cases) {
      const context = pluginContext(flags, QUIET);
      assert.equal(context.server, server, name);
      assert.equal(context.namespace, namespace, name);
      assert.equal(context.io, QUIET, name);
      assert.ok(context.client !== undefined, name);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pluginContext() turns a kubeconfig it cannot use into a PluginError with the reason", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kubeconfig = `${dir}/config`;
    await Deno.writeTextFile(kubeconfig, JSON.stringify(KUBECONFIG));
    const cases: { name: string; flags: KubeconfigFlags; want: RegExp }[] = [
      {
        name: "no such file",
        flags: { kubeconfig: `${dir}/missing` },
        want: /missing/,
      },
      {
        name: "no such context",
        flags: { kubeconfig, context: "nowhere" },
        want: /nowhere/,
      },
    ];
    for (const { name, flags, want } of cases) {
      assert.throws(() => pluginContext(flags, QUIET), (error: unknown) => {
        assert.ok(error instanceof PluginError, name);
        assert.equal(error.exitCode, EXIT_ERROR, name);
        assert.match(error.message, want, name);
        return true;
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pluginContext() without a kubeconfig says which file it looked for and how to name one", () => {
  const hint =
    "point kubectl dependencies at yours with --kubeconfig=<file> or the KUBECONFIG variable";
  const cases: {
    name: string;
    flags: KubeconfigFlags;
    env: Record<string, string | undefined>;
    want: string;
  }[] = [
    {
      name: "neither flag nor variable",
      flags: {},
      env: { KUBECONFIG: undefined, HOME: "/nonexistent/home" },
      want:
        "no kubeconfig at /nonexistent/home/.kube/config (the default, as neither --kubeconfig nor KUBECONFIG names one): " +
        hint,
    },
    {
      name: "the variable",
      flags: {},
      env: { KUBECONFIG: "/nonexistent/env:/other", HOME: "/h" },
      want:
        `no kubeconfig at /nonexistent/env (the first file of KUBECONFIG): ${hint}`,
    },
    {
      name: "the flag",
      flags: { kubeconfig: "/nonexistent/flag" },
      env: { KUBECONFIG: "/other", HOME: "/h" },
      want:
        `no kubeconfig at /nonexistent/flag (given by --kubeconfig): ${hint}`,
    },
  ];
  for (const { name, flags, env, want } of cases) {
    withEnv(
      env,
      () =>
        assert.throws(() => pluginContext(flags, QUIET), (error: unknown) => {
          assert.ok(error instanceof PluginError, name);
          assert.equal(error.message, want, name);
          return true;
        }),
    );
  }
  assert.equal(
    kubeconfigProblem(new Error("broken"), { path: "/k", from: "flag" }),
    "broken",
  );
});

Deno.test("processIo() has no colour with NO_COLOR set, nor when stdout is not a terminal", () => {
  assert.equal(withEnv({ NO_COLOR: "1" }, () => processIo()).color, false);
  assert.equal(
    withEnv({ NO_COLOR: undefined }, () => processIo()).color,
    Deno.stdout.isTerminal(),
  );
  assert.equal(
    withEnv({ NO_COLOR: "" }, () => processIo()).color,
    Deno.stdout.isTerminal(),
  );
});
