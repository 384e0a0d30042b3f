/**
 * `kubectl dependencies` against a server that misbehaves as real kcp
 * never does: it redirects elsewhere, or answers discovery without end.
 * The plugin follows no redirect and stops reading an answer at
 * {@linkcode MAX_READ_BYTES}, each failure a sentence.
 */
import assert from "node:assert/strict";
import { createServingCert } from "../../testing/tls.ts";
import { main } from "./cli.ts";
import { MAX_READ_BYTES, type PluginIo } from "./context.ts";

const WORKSPACE = "/clusters/root:consumers:c1";

/** What a run wrote. */
function capture(): PluginIo & { stdout: string; stderr: string } {
  const io = {
    stdout: "",
    stderr: "",
    color: false,
    out: (text: string) => void (io.stdout += text),
    err: (text: string) => void (io.stderr += text),
  };
  return io;
}

/**
 * Runs `fn` with a TLS server on 127.0.0.1 answering `handler`, and a
 * kubeconfig (its path) whose server is the workspace on it, trusting it.
 */
async function withServer(
  handler: (request: Request) => Response,
  fn: (kubeconfig: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "plugin-edges-" });
  const served = await createServingCert(`${dir}/tls`);
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(`${served.dir}/tls.crt`),
    key: await Deno.readTextFile(`${served.dir}/tls.key`),
    onListen: () => {},
  }, handler);
  try {
    const kubeconfig = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "tenant",
        clusters: [{
          name: "kcp",
          cluster: {
            server: `https://127.0.0.1:${server.addr.port}${WORKSPACE}`,
            "certificate-authority-data": btoa(served.caPem),
          },
        }],
        users: [{ name: "tenant", user: { token: "tenant-token" } }],
        contexts: [{
          name: "tenant",
          context: { cluster: "kcp", user: "tenant", namespace: "team-a" },
        }],
      }),
    );
    await fn(kubeconfig);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("kubectl dependencies follows no redirect to another origin, plain http included, and says so", async () => {
  const stolen: Request[] = [];
  const elsewhere = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => {
      stolen.push(request);
      return Response.json({ groups: [] });
    },
  );
  try {
    const target = `http://127.0.0.1:${elsewhere.addr.port}/apis`;
    await withServer(
      () => new Response(null, { status: 302, headers: { location: target } }),
      async (kubeconfig) => {
        const io = capture();
        const code = await main(
          ["why", "vpc/core", `--kubeconfig=${kubeconfig}`],
          io,
        );
        assert.equal(code, 2);
        assert.equal(io.stdout, "");
        assert.match(
          io.stderr,
          new RegExp(
            `^error: cannot discover the APIs in workspace root:consumers:c1: ` +
              `GET https://127\\.0\\.0\\.1:\\d+${WORKSPACE}/apis: the server answered 302, ` +
              `a redirect to ${
                target.replaceAll(".", "\\.")
              }; redirects are not followed`,
          ),
        );
      },
    );
    assert.equal(stolen.length, 0, "the token went elsewhere");
  } finally {
    await elsewhere.shutdown();
  }
});

Deno.test("kubectl dependencies stops reading an endless discovery answer at its bound, and says so", async () => {
  let sent = 0;
  let cancelled = false;
  const chunk = new TextEncoder().encode(
    `{"groups":[${'{"name":"x","versions":[]},'.repeat(2_000)}`,
  );
  const rssBefore = Deno.memoryUsage().rss;
  await withServer((request) => {
    if (new URL(request.url).pathname !== `${WORKSPACE}/apis`) {
      return Response.json({ resources: [] });
    }
    return new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
        cancel() {
          cancelled = true;
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  }, async (kubeconfig) => {
    const io = capture();
    const code = await main(
      ["why", "vpc/core", `--kubeconfig=${kubeconfig}`],
      io,
    );
    assert.equal(code, 2);
    assert.match(
      io.stderr,
      /^error: cannot discover the APIs in workspace root:consumers:c1: GET https:\/\/\S+\/apis: the answer is over 32 MiB; stopped reading it\n$/,
    );
  });
  assert.ok(cancelled, "the answer was read to its end");
  // The server stops once the client stops reading: the bound, and what
  // was in flight.
  assert.ok(sent < MAX_READ_BYTES + 32 * 1024 * 1024, `sent ${sent} bytes`);
  const grown = Deno.memoryUsage().rss - rssBefore;
  assert.ok(grown < 512 * 1024 * 1024, `grew ${grown} bytes`);
});
