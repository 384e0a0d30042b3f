import assert from "node:assert/strict";
import { loadKubeConnection } from "./kube_config.ts";

const CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";

async function withKubeconfig(
  config: unknown,
  fn: (path: string, dir: string) => void,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/config`;
    await Deno.writeTextFile(
      path,
      typeof config === "string" ? config : JSON.stringify(config),
    );
    fn(path, dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function kubeconfig(
  cluster: Record<string, unknown>,
  user: Record<string, unknown>,
): unknown {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster }],
    users: [{ name: "u", user }],
    contexts: [
      { name: "main", context: { cluster: "c", user: "u" } },
      { name: "other", context: { cluster: "c", user: "u" } },
    ],
    "current-context": "main",
  };
}

Deno.test("loadKubeConnection() reads server, base, CA data and token", async () => {
  await withKubeconfig(
    kubeconfig(
      {
        server: "https://kcp.example:6443/clusters/root:dep-ctrl",
        "certificate-authority-data": btoa(CA),
      },
      { token: "t0ken" },
    ),
    (path) => {
      assert.deepEqual(loadKubeConnection(path), {
        server: "https://kcp.example:6443/clusters/root:dep-ctrl",
        base: "https://kcp.example:6443",
        caPem: CA,
        insecureSkipTlsVerify: false,
        token: "t0ken",
      });
    },
  );
});

Deno.test("loadKubeConnection() reads client certificates and CA from files relative to the kubeconfig", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/ca.crt`, CA);
    await Deno.writeTextFile(`${dir}/client.crt`, "CERT");
    await Deno.writeTextFile(`${dir}/client.key`, "KEY");
    const path = `${dir}/config`;
    await Deno.writeTextFile(
      path,
      JSON.stringify(kubeconfig(
        { server: "https://kcp.example", "certificate-authority": "ca.crt" },
        { "client-certificate": "client.crt", "client-key": "client.key" },
      )),
    );
    const connection = loadKubeConnection(path);
    assert.equal(connection.caPem, CA);
    assert.equal(connection.certPem, "CERT");
    assert.equal(connection.keyPem, "KEY");
    assert.equal(connection.token, undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadKubeConnection() selects a named context and rejects an unknown one", async () => {
  await withKubeconfig(
    kubeconfig({ server: "https://a.example" }, { token: "x" }),
    (path) => {
      assert.equal(
        loadKubeConnection(path, { context: "other" }).server,
        "https://a.example",
      );
      assert.throws(
        () => loadKubeConnection(path, { context: "nope" }),
        /has no context 'nope'/,
      );
    },
  );
});

Deno.test("loadKubeConnection() keeps insecure-skip-tls-verify", async () => {
  await withKubeconfig(
    kubeconfig({
      server: "https://a.example",
      "insecure-skip-tls-verify": true,
    }, { token: "x" }),
    (path) =>
      assert.equal(loadKubeConnection(path).insecureSkipTlsVerify, true),
  );
});

Deno.test("loadKubeConnection() refuses exec plugins and half a client certificate", async () => {
  await withKubeconfig(
    kubeconfig({ server: "https://a.example" }, {
      exec: { command: "x", apiVersion: "client.authentication.k8s.io/v1" },
    }),
    (path) =>
      assert.throws(
        () => loadKubeConnection(path),
        /uses exec, an auth provider or basic auth/,
      ),
  );
  await withKubeconfig(
    kubeconfig({ server: "https://a.example" }, {
      "client-certificate-data": btoa("CERT"),
    }),
    (path) => assert.throws(() => loadKubeConnection(path), /without a key/),
  );
});

Deno.test("loadKubeConnection() names the file when it is missing or broken", () => {
  assert.throws(
    () => loadKubeConnection("/nonexistent/kubeconfig"),
    (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.equal(
        error.message,
        "Cannot load kubeconfig /nonexistent/kubeconfig: no such file",
      );
      assert.ok(error.cause instanceof Deno.errors.NotFound);
      return true;
    },
  );
});

Deno.test("loadKubeConnection() reads a YAML kubeconfig, resolving a relative CA file against its directory", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/ca.crt`, CA);
    await Deno.writeTextFile(
      `${dir}/config`,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "  - name: c",
        "    cluster:",
        "      server: https://kcp.example/clusters/root",
        "      certificate-authority: ca.crt",
        "users:",
        "  - name: u",
        "    user:",
        "      token: abc",
        "contexts:",
        "  - name: main",
        "    context: {cluster: c, user: u}",
        "current-context: main",
        "",
      ].join("\n"),
    );
    assert.deepEqual(loadKubeConnection(`${dir}/config`), {
      server: "https://kcp.example/clusters/root",
      base: "https://kcp.example",
      caPem: CA,
      insecureSkipTlsVerify: false,
      token: "abc",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadKubeConnection() names what is wrong in a malformed kubeconfig", async () => {
  await withKubeconfig("clusters: [ {", (path) => {
    assert.throws(() => loadKubeConnection(path), /Cannot load kubeconfig /);
  });
  await withKubeconfig({ clusters: [{ name: "c", cluster: {} }] }, (path) => {
    assert.throws(
      () => loadKubeConnection(path),
      /Cannot load kubeconfig .*: clusters\[0\]\.cluster\.server: is required$/,
    );
  });
  await withKubeconfig(
    {
      ...kubeconfig({ server: "https://k" }, {}) as object,
      "current-context": "nope",
    },
    (path) => {
      assert.throws(
        () => loadKubeConnection(path),
        /its current context 'nope' does not exist/,
      );
    },
  );
});

Deno.test("loadKubeConnection() keeps the context's namespace, when it names one", async () => {
  const config = kubeconfig({ server: "https://kcp.example:6443" }, {
    token: "t",
  }) as { contexts: { context: Record<string, unknown> }[] };
  config.contexts[1]!.context.namespace = "team-a";
  await withKubeconfig(config, (path) => {
    assert.equal(loadKubeConnection(path).namespace, undefined);
    assert.equal(
      loadKubeConnection(path, { context: "other" }).namespace,
      "team-a",
    );
  });
});
