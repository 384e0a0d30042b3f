/**
 * Test helpers for servers with bounded connections: raw clients that stay
 * silent or send by hand, and a watchdog. Only for `*_test.ts` files.
 *
 * @module
 */
import assert from "node:assert/strict";

/**
 * A bound no test may reach: only a server that ignores a limit gets there.
 * Tests compare against it, never against a tight time.
 */
export const WATCHDOG_MS = 20_000;

/**
 * A bound for what a limit of a few hundred milliseconds makes happen: ten
 * times that, yet below the 5 s default timeouts, so a limit that never
 * reached the server fails the test.
 */
export const BEFORE_DEFAULTS_MS = 3_000;

/**
 * `promise`, or a failure naming `what` once `ms` (the watchdog) runs out.
 */
export async function beforeWatchdog<T>(
  what: string,
  promise: Promise<T>,
  options: { ms?: number } = {},
): Promise<T> {
  const { ms = WATCHDOG_MS } = options;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`Timed out after ${ms} ms waiting for: ${what}`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads `conn` until the server closes it and returns what it sent; a reset
 * or an unclean TLS end counts as closed too.
 */
export async function untilClosed(conn: Deno.Conn): Promise<string> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(16 * 1024);
  let text = "";
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) return text;
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
    }
  } catch {
    return text;
  }
}

/** A TCP connection that never sends a byte. */
export function silentTcp(port: number): Promise<Deno.TcpConn> {
  return Deno.connect({ hostname: "127.0.0.1", port });
}

/** A TLS connection, handshake done, that has not sent a request. */
export async function silentTls(
  port: number,
  ca: string,
): Promise<Deno.TlsConn> {
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port,
    caCerts: [ca],
  });
  await conn.handshake();
  return conn;
}

/** Sends `text` on `conn`. */
export async function send(conn: Deno.Conn, text: string): Promise<void> {
  const bytes = new TextEncoder().encode(text);
  for (let sent = 0; sent < bytes.length;) {
    sent += await conn.write(bytes.subarray(sent));
  }
}

/** Reads from `conn` one whole response that has a content-length. */
export async function readResponse(conn: Deno.Conn): Promise<string> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(16 * 1024);
  let text = "";
  for (;;) {
    const head = text.indexOf("\r\n\r\n");
    if (head >= 0) {
      const length = /^content-length: (\d+)$/im.exec(text.slice(0, head));
      if (length && text.length >= head + 4 + Number(length[1])) return text;
    }
    const n = await conn.read(buffer);
    if (n === null) return text;
    text += decoder.decode(buffer.subarray(0, n), { stream: true });
  }
}

/** Closes `conn`, ignoring one the server closed already. */
export function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}

/** Fails unless connecting to `port` on loopback is refused. */
export async function assertRefused(port: number): Promise<void> {
  await assert.rejects(
    Deno.connect({ hostname: "127.0.0.1", port }),
    Deno.errors.ConnectionRefused,
  );
}
