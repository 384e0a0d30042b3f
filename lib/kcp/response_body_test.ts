import assert from "node:assert/strict";
import { KubeApiError, RESPONSE_TOO_LARGE } from "./kube_api_error.ts";
import {
  boundedText,
  decoded,
  estimateMemory,
  formatBytes,
} from "./response_body.ts";

Deno.test("estimateMemory() counts 2 a byte, 3 outside ASCII, 64 more for { and [, 8 more for a quote, comma or colon", () => {
  const encoder = new TextEncoder();
  assert.equal(estimateMemory(new Uint8Array()), 0);
  assert.equal(estimateMemory(encoder.encode("abc 12")), 12);
  assert.equal(estimateMemory(encoder.encode("\u00e9")), 6);
  // { " a " : [ 1 , " \u00e9 " ] }
  assert.equal(
    estimateMemory(encoder.encode('{"a":[1,"\u00e9"]}')),
    66 + 10 + 2 + 10 + 10 + 66 + 2 + 10 + 10 + 6 + 10 + 2 + 2,
  );
});

Deno.test("formatBytes() names whole MiB and KiB and counts bytes otherwise", () => {
  assert.equal(formatBytes(4 * 1024 * 1024), "4 MiB");
  assert.equal(formatBytes(512 * 1024), "512 KiB");
  assert.equal(formatBytes(1536 * 1024), "1536 KiB");
  assert.equal(formatBytes(1000), "1000 bytes");
  assert.equal(formatBytes(1), "1 byte");
});

Deno.test("boundedText() reads a body of up to maxBytes and refuses one over it, keeping the answer's status", async () => {
  const limit = {
    method: "GET",
    url: "https://kcp/x",
    maxBytes: 4,
    memory: false,
  };
  assert.equal(await boundedText(new Response("abcd"), limit), "abcd");
  assert.equal(await boundedText(new Response(null), limit), "");
  const error = await boundedText(
    new Response("abcde", { status: 500 }),
    limit,
  ).catch((e) => e);
  assert.ok(error instanceof KubeApiError);
  assert.equal(error.status, 500);
  assert.equal(error.reason, RESPONSE_TOO_LARGE);
  assert.equal(
    error.message,
    "GET https://kcp/x: the answer is over 4 bytes; stopped reading it",
  );
});

Deno.test("decoded() parses JSON, gives undefined for an empty body and throws for an error answer or a body that is not JSON", () => {
  const answer = (text: string, status = 200) => ({
    response: new Response(null, { status }),
    text,
  });
  assert.deepEqual(decoded("GET", "https://kcp/x", answer('{"a":1}')), {
    a: 1,
  });
  assert.equal(decoded("GET", "https://kcp/x", answer("")), undefined);
  assert.throws(
    () => decoded("GET", "https://kcp/x", answer("{")),
    (e) => e instanceof KubeApiError && e.reason === "InvalidResponse",
  );
  assert.throws(
    () =>
      decoded(
        "GET",
        "https://kcp/x",
        answer('{"reason":"NotFound","message":"gone"}', 404),
      ),
    (e) => e instanceof KubeApiError && e.notFound && e.reason === "NotFound",
  );
});

Deno.test("boundedText() reads a body of a declared length whole and still refuses one whose parsed memory is over the bound", async () => {
  const limit = {
    method: "GET",
    url: "https://kcp/x",
    maxBytes: 200,
    memory: true,
  };
  const sized = (text: string) =>
    new Response(text, {
      headers: {
        "content-length": String(new TextEncoder().encode(text).length),
      },
    });
  assert.equal(await boundedText(sized('{"a":1}'), limit), '{"a":1}');
  // 20 bytes pass the declared-length check (2 a byte), but 20 arrays
  // would take 20 * 66 by the estimate.
  const error = await boundedText(sized("[".repeat(10) + "]".repeat(10)), limit)
    .catch((e) => e);
  assert.ok(error instanceof KubeApiError);
  assert.equal(error.reason, RESPONSE_TOO_LARGE);
  assert.match(error.message, /estimated from its 20 bytes/);
  // A declared length already over the bound is refused unread.
  const declared = await boundedText(sized("x".repeat(101)), limit)
    .catch((e) => e);
  assert.match(
    declared.message,
    /estimated from its Content-Length, 101 bytes/,
  );
});
