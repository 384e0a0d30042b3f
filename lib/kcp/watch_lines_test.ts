import assert from "node:assert/strict";
import fc from "fast-check";
import { KubeApiError, RESPONSE_TOO_LARGE } from "./kube_api_error.ts";
import { DEFAULT_MAX_LINE_BYTES, lineCap, watchLines } from "./watch_lines.ts";

const encoder = new TextEncoder();

/** A stream of `chunks` (text is encoded), closed after the last. */
function chunked(
  chunks: readonly (string | Uint8Array)[],
): ReadableStream<Uint8Array> {
  return ReadableStream.from(
    chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c),
  );
}

/** Every line of `body`. */
async function collect(
  body: ReadableStream<Uint8Array>,
  maxLineBytes?: number,
): Promise<string[]> {
  const lines: string[] = [];
  for await (
    const line of watchLines(
      body,
      maxLineBytes === undefined ? {} : { maxLineBytes },
    )
  ) lines.push(line);
  return lines;
}

/** The error `promise` rejects with, which must be a KubeApiError. */
async function apiError(promise: Promise<unknown>): Promise<KubeApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof KubeApiError, `got ${String(error)}`);
    return error;
  }
  assert.fail("expected a rejection");
}

/**
 * A stream that sends `chunk` again each time it is read, up to `limit`
 * bytes in all, and records what it sent and whether it was cancelled.
 */
function endless(chunk: Uint8Array, limit = 64 * 1024 * 1024) {
  const sent = { bytes: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent.bytes >= limit) return controller.close();
      sent.bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
    cancel() {
      sent.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { body, sent };
}

Deno.test("watchLines() yields trimmed lines, skips blank ones and yields a last line without a line end", async () => {
  assert.deepEqual(
    await collect(chunked(["a\nb\r\n\n  \r\n c \n", "d"])),
    ["a", "b", "c", "d"],
  );
  assert.deepEqual(await collect(chunked([])), []);
  assert.deepEqual(await collect(chunked(["\n\r\n", "", "\n"])), []);
  assert.deepEqual(await collect(chunked(["x\r"])), ["x"]);
});

Deno.test("watchLines() joins a line split across chunks, a character's bytes split too", async () => {
  const bytes = encoder.encode('{"name":"caf\u00e9 \u{1f600}"}\r\n{"b":1}');
  // Every chunk one byte: both characters' bytes cross chunk boundaries.
  const single = [...bytes].map((b) => Uint8Array.of(b));
  assert.deepEqual(await collect(chunked(single)), [
    '{"name":"caf\u00e9 \u{1f600}"}',
    '{"b":1}',
  ]);
  // The `\r` and the `\n` of a line end in different chunks.
  assert.deepEqual(await collect(chunked(["a\r", "\nb\r", "\n"])), ["a", "b"]);
});

Deno.test("watchLines() gives the lines of a naive split, however the bytes are chunked", async () => {
  const lineText = fc.string({ unit: "grapheme", maxLength: 12 })
    .filter((s) => !/[\r\n]/.test(s));
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.tuple(lineText, fc.constantFrom("\n", "\r\n")),
        { maxLength: 8 },
      ),
      fc.boolean(),
      fc.array(fc.nat(), { maxLength: 6 }),
      async (lines, lastEnded, cuts) => {
        let text = lines.map(([line, end]) => line + end).join("");
        if (!lastEnded && lines.length > 0) text = text.replace(/\r?\n$/, "");
        const bytes = encoder.encode(text);
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))]
          .sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let at = 0;
        for (const point of [...points, bytes.length]) {
          chunks.push(bytes.slice(at, point));
          at = point;
        }
        const expected = text.split("\n").map((l) => l.trim())
          .filter((l) => l !== "");
        assert.deepEqual(await collect(chunked(chunks)), expected);
      },
    ),
  );
});

Deno.test("watchLines() takes a line of maxLineBytes, its line end aside, and refuses one byte more", async () => {
  assert.deepEqual(await collect(chunked(["abcd\n"]), 4), ["abcd"]);
  assert.deepEqual(await collect(chunked(["abcd\r\n"]), 4), ["abcd"]);
  assert.deepEqual(await collect(chunked(["ab", "cd\r", "\n"]), 4), ["abcd"]);
  assert.deepEqual(await collect(chunked(["ab", "cd"]), 4), ["abcd"]);
  assert.deepEqual(await collect(chunked(["abcd\r"]), 4), ["abcd"]);
  for (
    const chunks of [
      ["abcde\n"],
      ["abcde"],
      ["ab", "cde"],
      ["ab", "cde", "\n"],
      ["ab", "cd", "\r\r\n"],
      ["ab", "cd", "e\r"],
      ["ok\nabcde\n"],
    ]
  ) {
    const error = await apiError(collect(chunked(chunks), 4));
    assert.equal(error.reason, RESPONSE_TOO_LARGE, chunks.join("|"));
    assert.equal(error.status, 200);
    assert.match(
      error.message,
      /^stream: a line of the stream is over 4 bytes/,
    );
  }
});

Deno.test("watchLines() names the request and status in the error of a line over the cap", async () => {
  const lines = watchLines(chunked(["x".repeat(2048)]), {
    maxLineBytes: 1024,
    what: "WATCH https://kcp/things",
    status: 203,
  });
  const error = await apiError(lines.next());
  assert.equal(error.status, 203);
  assert.equal(
    error.message,
    "WATCH https://kcp/things: a line of the stream is over 1 KiB; stopped reading it",
  );
});

Deno.test("watchLines() stops reading and cancels the stream as soon as a line passes the cap", async () => {
  const { body, sent } = endless(encoder.encode("x".repeat(1000)));
  const lines = watchLines(body, { maxLineBytes: 10_000 });
  const error = await apiError(lines.next());
  assert.equal(error.reason, RESPONSE_TOO_LARGE);
  assert.equal(sent.cancelled, true);
  assert.ok(sent.bytes <= 11_000, `read ${sent.bytes} bytes`);
});

Deno.test("watchLines() keeps reading lines forever as long as each is under the cap", async () => {
  const { body, sent } = endless(
    encoder.encode(`${"y".repeat(99)}\n`),
    1024 * 1024,
  );
  let count = 0;
  for await (const line of watchLines(body, { maxLineBytes: 100 })) {
    assert.equal(line.length, 99);
    count++;
  }
  assert.equal(count, Math.ceil(1024 * 1024 / 100));
  assert.equal(sent.cancelled, false);
});

Deno.test("watchLines() reads a line of many small chunks, and many lines of one chunk, in linear time", async () => {
  // A line of 8 MiB in 1 KiB chunks: a reader that searched or copied the
  // whole line so far for each chunk would touch 32 GiB.
  const line = "z".repeat(DEFAULT_MAX_LINE_BYTES);
  const bytes = encoder.encode(`${line}\n`);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 1024) {
    chunks.push(bytes.subarray(at, at + 1024));
  }
  const started = performance.now();
  const got = await collect(chunked(chunks));
  assert.equal(got.length, 1);
  assert.equal(got[0]!.length, line.length);
  // 200,000 short lines in one chunk.
  const many = encoder.encode('{"type":"BOOKMARK"}\n'.repeat(200_000));
  assert.equal((await collect(chunked([many]))).length, 200_000);
  // A generous bound, only to catch quadratic time (tens of seconds).
  const ms = performance.now() - started;
  assert.ok(ms < 10_000, `took ${Math.round(ms)} ms`);
});

Deno.test("watchLines() cancels the stream when the consumer stops early", async () => {
  const { body, sent } = endless(encoder.encode("a\n"));
  for await (const line of watchLines(body)) {
    assert.equal(line, "a");
    break;
  }
  assert.equal(sent.cancelled, true);
});

Deno.test("watchLines() passes the stream's own error on", async () => {
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent) return controller.error(new TypeError("connection reset"));
      sent = true;
      controller.enqueue(encoder.encode("a\nb"));
    },
  });
  const lines = watchLines(body);
  assert.deepEqual(await lines.next(), { done: false, value: "a" });
  await assert.rejects(lines.next(), { name: "TypeError" });
});

Deno.test("lineCap() defaults to 8 MiB and refuses a cap that is not a positive integer", async () => {
  assert.equal(DEFAULT_MAX_LINE_BYTES, 8 * 1024 * 1024);
  assert.equal(lineCap(undefined), DEFAULT_MAX_LINE_BYTES);
  assert.equal(lineCap(1), 1);
  for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => lineCap(bad), RangeError);
  }
  const { body, sent } = endless(encoder.encode("a\n"));
  await assert.rejects(
    watchLines(body, { maxLineBytes: 0 }).next(),
    RangeError,
  );
  assert.equal(sent.cancelled, true, "the stream is let go");
});
