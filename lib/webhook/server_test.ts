import assert from "node:assert/strict";
import {
  assertRefused,
  beforeWatchdog,
  closeQuietly,
  logCollector,
  readResponse,
  send,
  silentTcp,
  silentTls,
  untilClosed,
  waitUntil,
} from "../../testing/fakes.ts";
import { type CertPair, selfSignedCert } from "../../testing/self_signed.ts";
import { createLogger } from "../runtime/mod.ts";
import type { ConnectionLimits } from "./bounded_server.ts";
import { serveTls } from "./server.ts";

const BIND = { hostname: "127.0.0.1", port: 0 };
/** Writes a certificate pair to `dir/tls.crt` and `dir/tls.key`. */
async function writePair(dir: string, pair: CertPair): Promise<void> {
  await Deno.writeTextFile(`${dir}/tls.key`, pair.key);
  await Deno.writeTextFile(`${dir}/tls.crt`, pair.cert);
}

/** GET / over HTTPS trusting only `ca`, on a fresh connection. */
async function getTrusting(port: number, ca: string): Promise<string> {
  const client = Deno.createHttpClient({ caCerts: [ca] });
  try {
    const response = await fetch(`https://127.0.0.1:${port}/`, { client });
    return `${response.status} ${await response.text()}`;
  } finally {
    client.close();
  }
}

/** Whether GET / trusting only `ca` succeeds. */
async function accepts(port: number, ca: string): Promise<boolean> {
  try {
    await getTrusting(port, ca);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `check` resolves true (bounded). */
async function eventually(
  what: string,
  check: () => Promise<boolean>,
): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`Timed out waiting for: ${what}`);
}

let pairs: Promise<[CertPair, CertPair]> | undefined;
/** Two different self-signed certificates (CN first, CN second), made once. */
function twoPairs(): Promise<[CertPair, CertPair]> {
  pairs ??= Promise.all([selfSignedCert("first"), selfSignedCert("second")]);
  return pairs;
}

/**
 * Serves `hello` with serveTls, within `limits`, from a temp dir holding
 * `pair`, runs `fn`, cleans up.
 */
async function withTls(
  pair: CertPair,
  fn: (
    server: { port: number; shutdown(): Promise<void> },
    dir: string,
    logs: Record<string, unknown>[],
  ) => Promise<void>,
  limits: ConnectionLimits = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "dep-ctrl-tls-" });
  const logs = logCollector();
  try {
    await writePair(dir, pair);
    const server = await serveTls(
      BIND,
      (_req, res) => Promise.resolve(void res.end("hello")),
      {
        ...limits,
        certFile: `${dir}/tls.crt`,
        keyFile: `${dir}/tls.key`,
        log: createLogger({ level: "debug", write: logs.write }),
        reloadIntervalMs: 50,
      },
    );
    let down = false;
    try {
      await fn(
        {
          port: server.port,
          shutdown: async () => {
            down = true;
            await server.shutdown();
          },
        },
        dir,
        logs.records,
      );
    } finally {
      if (!down) await server.shutdown();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("serveTls() rejects when the first certificate cannot be read", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dep-ctrl-tls-" });
  try {
    await assert.rejects(
      serveTls(BIND, (_req, res) => Promise.resolve(void res.end("x")), {
        certFile: `${dir}/missing.crt`,
        keyFile: `${dir}/missing.key`,
        log: createLogger({ write: () => {} }),
      }),
      Deno.errors.NotFound,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serveTls() rejects an address in use with one sentence naming it and --webhook-bind-address", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dep-ctrl-tls-" });
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  try {
    await writePair(dir, (await twoPairs())[0]);
    await assert.rejects(
      serveTls(
        { hostname: "127.0.0.1", port },
        (_req, res) => Promise.resolve(void res.end("x")),
        {
          certFile: `${dir}/tls.crt`,
          keyFile: `${dir}/tls.key`,
          log: createLogger({ write: () => {} }),
        },
      ),
      new Error(
        `cannot listen on 127.0.0.1:${port} for admission reviews: the address is in use; pass --webhook-bind-address=<host>:<port> to use another`,
      ),
    );
  } finally {
    taken.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test(
  "serveTls() serves HTTPS and picks up a rotated certificate without a restart",
  async () => {
    const [first, second] = await twoPairs();
    await withTls(first, async (server, dir, logs) => {
      assert.equal(await getTrusting(server.port, first.cert), "200 hello");
      assert.equal(
        await accepts(server.port, second.cert),
        false,
        "the second certificate is not served yet",
      );
      await writePair(dir, second);
      await eventually(
        "a connection trusting only the new certificate",
        () => accepts(server.port, second.cert),
      );
      assert.equal(await getTrusting(server.port, second.cert), "200 hello");
      assert.equal(
        await accepts(server.port, first.cert),
        false,
        "new connections no longer get the old certificate",
      );
      const reload = logs.find((r) => r.msg === "reloaded the TLS certificate");
      assert.equal(reload?.level, "info");
      await server.shutdown();
      await assertRefused(server.port);
    });
  },
);

Deno.test(
  "serveTls() keeps the current certificate when the new one is garbage, and logs an error",
  async () => {
    const [first, second] = await twoPairs();
    const old = Deno.createHttpClient({ caCerts: [first.cert] });
    try {
      await withTls(first, async (server, dir, logs) => {
        const get = async () => {
          const response = await fetch(`https://127.0.0.1:${server.port}/`, {
            client: old,
          });
          return `${response.status} ${await response.text()}`;
        };
        assert.equal(await get(), "200 hello");
        await Deno.writeTextFile(`${dir}/tls.crt`, "not a certificate\n");
        await waitUntil("the error log", () =>
          logs.some((r) =>
            r.msg ===
              "cannot use the new TLS certificate, keeping the current one"
          ));
        const error = logs.find((r) =>
          r.msg ===
            "cannot use the new TLS certificate, keeping the current one"
        );
        assert.equal(error?.level, "error");
        assert.equal(await get(), "200 hello", "the old client still works");
        assert.equal(
          await getTrusting(server.port, first.cert),
          "200 hello",
          "new connections still get the old certificate",
        );
        // A good pair afterwards is picked up.
        await writePair(dir, second);
        await eventually(
          "the new certificate",
          () => accepts(server.port, second.cert),
        );
        await server.shutdown();
        await assertRefused(server.port);
      });
    } finally {
      old.close();
    }
  },
);

Deno.test(
  "serveTls() keeps the current certificate when the files cannot be read, and logs a warning",
  async () => {
    const [first] = await twoPairs();
    await withTls(first, async (server, dir, logs) => {
      await Deno.remove(`${dir}/tls.key`);
      await waitUntil(
        "the warning",
        () =>
          logs.some((r) =>
            r.msg === "cannot read the TLS certificate, keeping the current one"
          ),
      );
      const warning = logs.find((r) =>
        r.msg === "cannot read the TLS certificate, keeping the current one"
      );
      assert.equal(warning?.level, "warn");
      assert.equal(await getTrusting(server.port, first.cert), "200 hello");
    });
  },
);

Deno.test("serveTls() passes its connection limits to the bounded server: a connection beyond maxConnections is closed at once", async () => {
  const [first] = await twoPairs();
  await withTls(first, async (server) => {
    const kept = await silentTls(server.port, first.cert);
    const extra = await silentTcp(server.port);
    try {
      assert.equal(
        await beforeWatchdog("the extra one to be closed", untilClosed(extra)),
        "",
      );
      await send(kept, "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
      assert.match(await readResponse(kept), /^HTTP\/1\.1 200 [^]*hello$/);
    } finally {
      closeQuietly(kept);
      closeQuietly(extra);
    }
  }, {
    maxConnections: 1,
    handshakeTimeoutMs: 120_000,
    headerTimeoutMs: 120_000,
  });
});
