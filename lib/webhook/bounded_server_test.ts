import assert from "node:assert/strict";
import {
  BEFORE_DEFAULTS_MS,
  beforeWatchdog,
  closeQuietly,
  delay,
  readResponse,
  send,
  silentTcp,
  silentTls,
  untilClosed,
  WATCHDOG_MS,
} from "../../testing/fakes.ts";
import { type CertPair, selfSignedCert } from "../../testing/self_signed.ts";
import type { IncomingMessage } from "node:http";
import {
  type BoundedTlsOptions,
  type BoundedTlsServer,
  type NodeHandler,
  serveBoundedTls,
} from "./bounded_server.ts";

const BIND = { hostname: "127.0.0.1", port: 0 };
/** Limits long enough never to fire during a test that is not about them. */
const LONG = {
  handshakeTimeoutMs: 120_000,
  headerTimeoutMs: 120_000,
  requestTimeoutMs: 120_000,
  idleTimeoutMs: 120_000,
} as const;

let pairs: Promise<[CertPair, CertPair]> | undefined;
/** Two different self-signed certificates, made once. */
function twoPairs(): Promise<[CertPair, CertPair]> {
  pairs ??= Promise.all([selfSignedCert("one"), selfSignedCert("two")]);
  return pairs;
}

/** Runs `fn` against a server on `handler`; shuts it down afterwards. */
async function withServer(
  options: Partial<BoundedTlsOptions>,
  handler: NodeHandler,
  fn: (server: BoundedTlsServer, pem: CertPair) => Promise<void>,
): Promise<void> {
  const [pem] = await twoPairs();
  const server = await serveBoundedTls(BIND, handler, { pem, ...options });
  try {
    await fn(server, pem);
  } finally {
    await server.shutdown();
  }
}

const hello: NodeHandler = (_req, res) =>
  Promise.resolve(void res.end("hello"));

/** The whole body of `req`. */
async function bodyOf(req: IncomingMessage): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of req) chunks.push(chunk as Uint8Array);
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

Deno.test("serveBoundedTls() passes method, URL, headers and body to the handler and writes its answer", async () => {
  const seen: string[] = [];
  await withServer(LONG, async (req, res) => {
    seen.push(
      `${req.method} ${req.url} ${req.headers["x-test"]} ${
        new TextDecoder().decode(await bodyOf(req))
      } ${req.socket.remoteAddress}`,
    );
    res.writeHead(201, {
      "content-type": "application/json",
      "content-length": "11",
      "set-cookie": ["a=1", "b=2"],
    });
    res.end('{"ok":true}');
  }, async (server, pem) => {
    const client = Deno.createHttpClient({ caCerts: [pem.cert] });
    try {
      const response = await fetch(
        `https://127.0.0.1:${server.port}/validate?x=1`,
        {
          client,
          method: "POST",
          headers: { "x-test": "yes" },
          body: "ping",
        },
      );
      assert.equal(response.status, 201);
      assert.equal(response.headers.get("content-type"), "application/json");
      assert.deepEqual(response.headers.getSetCookie(), ["a=1", "b=2"]);
      assert.equal(response.headers.get("content-length"), "11");
      assert.deepEqual(await response.json(), { ok: true });
    } finally {
      client.close();
    }
  });
  assert.deepEqual(seen, ["POST /validate?x=1 yes ping 127.0.0.1"]);
});

Deno.test("serveBoundedTls() streams a large request and a large response body", async () => {
  const size = 3 * 1024 * 1024 + 17;
  await withServer(LONG, async (req, res) => {
    const bytes = await bodyOf(req);
    for (let sent = 0; sent < 8; sent++) {
      if (!res.write(bytes)) {
        await new Promise((resolve) => res.once("drain", resolve));
      }
    }
    res.end();
  }, async (server, pem) => {
    const client = Deno.createHttpClient({ caCerts: [pem.cert] });
    try {
      const response = await fetch(`https://127.0.0.1:${server.port}/`, {
        client,
        method: "POST",
        body: new Uint8Array(size).fill(7),
      });
      const body = new Uint8Array(await response.arrayBuffer());
      assert.equal(body.length, 8 * size);
      assert.ok(body.every((b) => b === 7));
    } finally {
      client.close();
    }
  });
});

Deno.test("serveBoundedTls() answers 500 and reports the error when the handler throws", async () => {
  const errors: unknown[] = [];
  await withServer(
    { ...LONG, onError: (error) => errors.push(error) },
    () => Promise.reject(new Error("handler exploded")),
    async (server, pem) => {
      const client = Deno.createHttpClient({ caCerts: [pem.cert] });
      try {
        const response = await fetch(`https://127.0.0.1:${server.port}/`, {
          client,
        });
        assert.equal(response.status, 500);
        await response.body?.cancel();
      } finally {
        client.close();
      }
    },
  );
  assert.match(String(errors[0]), /handler exploded/);
});

Deno.test("serveBoundedTls() keeps a connection usable after a body the handler did not read, and answers a handler that gave up on a body", async () => {
  await withServer(LONG, async (req, res) => {
    if (req.url === "/ignore") return void res.end("ig");
    // Reads a little, then refuses the rest (like a body limit), which
    // flows on and is dropped.
    await new Promise((resolve) => req.once("data", resolve));
    res.writeHead(413).end("too large");
  }, async (server, pem) => {
    const conn = await silentTls(server.port, pem.cert);
    try {
      const body = "x".repeat(100_000);
      await send(
        conn,
        `POST /ignore HTTP/1.1\r\nhost: a\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
      assert.match(await readResponse(conn), /^HTTP\/1\.1 200 [^]*\r\n\r\nig$/);
      await send(conn, "GET /ignore HTTP/1.1\r\nhost: a\r\n\r\n");
      assert.match(
        await readResponse(conn),
        /^HTTP\/1\.1 200 [^]*\r\n\r\nig$/,
        "the same connection serves the next request",
      );
    } finally {
      closeQuietly(conn);
    }
    const client = Deno.createHttpClient({ caCerts: [pem.cert] });
    try {
      const response = await fetch(`https://127.0.0.1:${server.port}/limit`, {
        client,
        method: "POST",
        body: new Uint8Array(8 * 1024 * 1024),
      });
      assert.equal(response.status, 413);
      assert.equal(await response.text(), "too large");
    } finally {
      client.close();
    }
  });
});

Deno.test("serveBoundedTls() closes a TCP connection that sends no ClientHello after the handshake timeout", async () => {
  await withServer(
    { ...LONG, handshakeTimeoutMs: 300 },
    hello,
    async (server) => {
      const conn = await silentTcp(server.port);
      try {
        assert.equal(
          await beforeWatchdog(
            "the server to close",
            untilClosed(conn),
            { ms: BEFORE_DEFAULTS_MS },
          ),
          "",
        );
      } finally {
        closeQuietly(conn);
      }
    },
  );
});

Deno.test("serveBoundedTls() answers 408 and closes a TLS connection that sends no request, or half a request head (first or later on the connection), within the header timeout", async () => {
  await withServer(
    { ...LONG, headerTimeoutMs: 300 },
    hello,
    async (server, pem) => {
      const silent = await silentTls(server.port, pem.cert);
      const half = await silentTls(server.port, pem.cert);
      const later = await silentTls(server.port, pem.cert);
      try {
        await send(half, "GET / HTTP/1.1\r\nhost: a\r\n");
        await send(later, "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
        assert.match(await readResponse(later), /^HTTP\/1\.1 200 /);
        await send(later, "GET / HTTP/1.1\r\nhost: a\r\n");
        const closed = await beforeWatchdog(
          "the server to close all three",
          Promise.all([silent, half, later].map(untilClosed)),
          { ms: BEFORE_DEFAULTS_MS },
        );
        for (const text of closed) assert.match(text, /^HTTP\/1\.1 408 /);
      } finally {
        for (const conn of [silent, half, later]) closeQuietly(conn);
      }
    },
  );
});

Deno.test("serveBoundedTls() cuts off a request whose body trickles in slower than the request timeout", async () => {
  let bodies = 0;
  await withServer(
    { ...LONG, headerTimeoutMs: 300, requestTimeoutMs: 600 },
    async (req, res) => {
      await bodyOf(req);
      bodies++;
      res.end("read");
    },
    async (server, pem) => {
      const conn = await silentTls(server.port, pem.cert);
      try {
        await send(
          conn,
          "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 100\r\n\r\nabc",
        );
        const closed = await beforeWatchdog(
          "the server to cut the request off",
          untilClosed(conn),
          { ms: BEFORE_DEFAULTS_MS },
        );
        assert.doesNotMatch(closed, /read/);
        assert.equal(bodies, 0);
      } finally {
        closeQuietly(conn);
      }
    },
  );
});

Deno.test("serveBoundedTls() lets a body finish after the header timeout while within the request timeout", async () => {
  await withServer(
    { ...LONG, headerTimeoutMs: 300, requestTimeoutMs: 5_000 },
    async (req, res) => {
      res.end(`read ${(await bodyOf(req)).length}`);
    },
    async (server, pem) => {
      const conn = await silentTls(server.port, pem.cert);
      try {
        await send(
          conn,
          "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 6\r\n\r\nab",
        );
        // The body's last bytes arrive well past the header timeout.
        for (const part of ["cd", "ef"]) {
          await delay(250);
          await send(conn, part);
        }
        assert.match(await readResponse(conn), /\r\n\r\nread 6$/);
      } finally {
        closeQuietly(conn);
      }
    },
  );
});

Deno.test("serveBoundedTls() closes an idle keep-alive connection after the idle timeout", async () => {
  await withServer(
    { ...LONG, idleTimeoutMs: 2_000 },
    hello,
    async (server, pem) => {
      const conn = await silentTls(server.port, pem.cert);
      try {
        await send(conn, "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
        const response = await readResponse(conn);
        assert.match(response, /^HTTP\/1\.1 200 /);
        assert.match(response, /^connection: keep-alive$/im);
        // The timeout the server keeps to (Node's own default is 5 s).
        assert.match(response, /^keep-alive: timeout=2$/im);
        assert.equal(
          await beforeWatchdog("the server to close", untilClosed(conn)),
          "",
        );
      } finally {
        closeQuietly(conn);
      }
    },
  );
});

Deno.test("serveBoundedTls() closes a connection beyond maxConnections at once, and accepts again once one closes", async () => {
  await withServer(
    { ...LONG, maxConnections: 2 },
    hello,
    async (server, pem) => {
      const first = await silentTls(server.port, pem.cert);
      const second = await silentTls(server.port, pem.cert);
      const third = await silentTcp(server.port);
      try {
        assert.equal(
          await beforeWatchdog("the third to be closed", untilClosed(third)),
          "",
        );
        await send(second, "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
        assert.match(await readResponse(second), /^HTTP\/1\.1 200 [^]*hello$/);
        first.close();
        // The count drops once the server sees the close.
        let answered = "";
        for (let attempt = 0; attempt < 100 && answered === ""; attempt++) {
          const next = await silentTls(server.port, pem.cert).catch(() =>
            undefined
          );
          if (next === undefined) {
            await delay(50);
            continue;
          }
          try {
            await send(next, "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
            answered = await readResponse(next);
          } catch {
            await delay(50);
          } finally {
            closeQuietly(next);
          }
        }
        assert.match(answered, /^HTTP\/1\.1 200 [^]*hello$/);
      } finally {
        closeQuietly(first);
        closeQuietly(second);
        closeQuietly(third);
      }
    },
  );
});

Deno.test("serveBoundedTls().shutdown() closes silent TCP, silent TLS and half-request connections at once, long before the drain deadline", async () => {
  const [pem] = await twoPairs();
  const server = await serveBoundedTls(BIND, hello, {
    pem,
    ...LONG,
    drainTimeoutMs: WATCHDOG_MS * 2,
  });
  const tcp = await silentTcp(server.port);
  const tls = await silentTls(server.port, pem.cert);
  const half = await silentTls(server.port, pem.cert);
  try {
    await send(half, "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n");
    // Let the server take in all three before it stops.
    await delay(100);
    await beforeWatchdog("shutdown() to resolve", server.shutdown(), {
      ms: BEFORE_DEFAULTS_MS,
    });
    const closed = await beforeWatchdog(
      "the server to close all three",
      Promise.all([untilClosed(tcp), untilClosed(tls), untilClosed(half)]),
    );
    assert.equal(closed.length, 3);
    await assert.rejects(
      Deno.connect({ hostname: "127.0.0.1", port: server.port }),
      Deno.errors.ConnectionRefused,
    );
  } finally {
    closeQuietly(tcp);
    closeQuietly(tls);
    closeQuietly(half);
  }
});

Deno.test("serveBoundedTls().shutdown() stops accepting at once, closes idle connections and lets an in-flight request finish within the deadline", async () => {
  const { promise: inHandler, resolve: entered } = Promise.withResolvers<
    void
  >();
  const { promise: released, resolve: release } = Promise.withResolvers<
    void
  >();
  const [pem] = await twoPairs();
  const server = await serveBoundedTls(BIND, async (req, res) => {
    if (req.url === "/quick") return void res.end("ok");
    entered();
    await released;
    res.end("done");
  }, { pem, ...LONG, drainTimeoutMs: WATCHDOG_MS * 2 });
  const conn = await silentTls(server.port, pem.cert);
  const idle = await silentTls(server.port, pem.cert);
  try {
    await send(idle, "GET /quick HTTP/1.1\r\nhost: a\r\n\r\n");
    assert.match(await readResponse(idle), /^connection: keep-alive$/im);
    await send(conn, "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    await inHandler;
    let stopped = false;
    const stopping = server.shutdown().then(() => stopped = true);
    await assert.rejects(
      Deno.connect({ hostname: "127.0.0.1", port: server.port }),
      Deno.errors.ConnectionRefused,
      "no new connections while draining",
    );
    assert.equal(
      await beforeWatchdog("the idle connection to close", untilClosed(idle)),
      "",
    );
    await delay(100);
    assert.equal(stopped, false, "shutdown waits for the request");
    release();
    const response = await readResponse(conn);
    assert.match(response, /^HTTP\/1\.1 200 [^]*\r\n\r\ndone$/);
    assert.match(response, /^connection: close$/im);
    await beforeWatchdog("shutdown() to resolve", stopping);
  } finally {
    release();
    closeQuietly(conn);
    closeQuietly(idle);
  }
});

Deno.test("serveBoundedTls().shutdown() closes a request still running at the drain deadline", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  let aborted = false;
  const [pem] = await twoPairs();
  const server = await serveBoundedTls(BIND, async (_req, res) => {
    res.once("close", () => aborted = !res.writableFinished);
    await released;
    res.end("late");
  }, { pem, ...LONG, drainTimeoutMs: 300 });
  const conn = await silentTls(server.port, pem.cert);
  try {
    await send(conn, "GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    await delay(100);
    await beforeWatchdog("shutdown() to resolve", server.shutdown(), {
      ms: BEFORE_DEFAULTS_MS,
    });
    assert.equal(
      await beforeWatchdog("the server to close", untilClosed(conn)),
      "",
    );
    assert.equal(aborted, true, "the handler saw its request aborted");
  } finally {
    release();
    closeQuietly(conn);
  }
});

Deno.test("serveBoundedTls().setCertificate() serves new connections with the new certificate and refuses an unusable one", async () => {
  const [one, two] = await twoPairs();
  await withServer(LONG, hello, async (server) => {
    const trusts = async (ca: string) => {
      const client = Deno.createHttpClient({ caCerts: [ca] });
      try {
        const response = await fetch(`https://127.0.0.1:${server.port}/`, {
          client,
        });
        return await response.text() === "hello";
      } catch {
        return false;
      } finally {
        client.close();
      }
    };
    assert.equal(await trusts(one.cert), true);
    assert.equal(await trusts(two.cert), false);
    assert.throws(() =>
      server.setCertificate({ cert: "not a certificate\n", key: one.key })
    );
    assert.throws(() =>
      server.setCertificate({ cert: two.cert, key: one.key })
    );
    assert.equal(await trusts(one.cert), true, "the old certificate stays");
    server.setCertificate(two);
    assert.equal(await trusts(two.cert), true);
    assert.equal(await trusts(one.cert), false);
  });
});

Deno.test("serveBoundedTls() rejects when the port is taken, or the certificate is unusable", async () => {
  const [pem] = await twoPairs();
  const taken = Deno.listen(BIND);
  try {
    await assert.rejects(
      serveBoundedTls({ ...BIND, port: taken.addr.port }, hello, { pem }),
      /EADDRINUSE|in use/i,
    );
  } finally {
    taken.close();
  }
  await assert.rejects(
    serveBoundedTls(BIND, hello, {
      pem: { cert: "not a certificate\n", key: pem.key },
    }),
  );
});
