/**
 * Reading an API server's answer: its body as text, given up once it is over
 * a bound of bytes or of the memory it would take once parsed (estimated from
 * its JSON as it arrives), and the JSON value it decodes to.
 *
 * @module
 */
import {
  KubeApiError,
  RESPONSE_TOO_LARGE,
  statusError,
} from "./kube_api_error.ts";

/**
 * A byte count as people read it: `4 MiB`, `512 KiB`, or `1000 bytes` when
 * it is no whole number of either.
 */
export function formatBytes(bytes: number): string {
  if (bytes >= MIB && bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes >= KIB && bytes % KIB === 0) return `${bytes / KIB} KiB`;
  return `${bytes} ${bytes === 1 ? "byte" : "bytes"}`;
}

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * The JSON value of an answer's text, or the error it stands for.
 *
 * @throws {KubeApiError} For a non-2xx answer (see {@linkcode statusError}),
 * or reason `InvalidResponse` for a 2xx one whose body is not JSON.
 */
export function decoded<T>(
  method: string,
  url: string,
  answer: { response: Response; text: string },
): T {
  const { response, text } = answer;
  if (!response.ok) throw statusError(method, url, response.status, text);
  if (text === "") return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new KubeApiError(
      `${method} ${url}: ${response.status} with a body that is not JSON`,
      {
        status: response.status,
        reason: "InvalidResponse",
        cause: error,
      },
    );
  }
}

/**
 * What one byte of JSON text costs in memory while it is decoded and
 * parsed (see {@linkcode estimateMemory}), by byte value.
 */
const MEMORY_WEIGHTS: Uint8Array = (() => {
  // The text, and its copy in what it parses into.
  const weights = new Uint8Array(256).fill(2);
  // Outside ASCII, the text may be a two-byte (UTF-16) string.
  weights.fill(3, 0x80);
  // An object or an array: V8 takes about 60 bytes for an empty one.
  weights[0x7b] = weights[0x5b] = 66;
  // A string's header (two quotes), a value's or a property's slot.
  weights[0x22] = weights[0x2c] = weights[0x3a] = 10;
  return weights;
})();

/**
 * The memory that JSON text takes while it is decoded and parsed,
 * estimated from its bytes alone (so it can be counted as they arrive):
 * each byte counts 2 (the text, and its copy in the parsed value), 3
 * outside ASCII (UTF-16 text); each `{` and `[` 64 more (the object or
 * array it opens); each `"`, `,` and `:` 8 more (a string's header, a
 * value's slot). Measured against V8's heap (Deno 2.9, text and parsed
 * value) on 4 MiB of each shape, the estimate is 1.0 to 2.6 times what
 * is taken (long strings 1.0, empty objects 1.2, nested arrays 1.3,
 * Kubernetes objects with `managedFields` 2.1), except 0.84 times for
 * short strings outside ASCII and 0.6 times for objects whose keys all
 * differ (each a new hidden class); a count of bytes is off by up to 25
 * times (`[[[[]]]]`).
 */
export function estimateMemory(bytes: Uint8Array): number {
  let total = 0;
  for (let i = 0; i < bytes.length; i++) total += MEMORY_WEIGHTS[bytes[i]!]!;
  return total;
}

/**
 * The body of `response` as text, read chunk by chunk and given up (the
 * body cancelled) as soon as its count (bytes, or estimated memory with
 * `limit.memory`) is over `limit.maxBytes`: no more than that is ever
 * held.
 *
 * @throws {KubeApiError} With reason {@linkcode RESPONSE_TOO_LARGE} and the
 * answer's status when the body is over the limit; the stream's own error
 * when reading fails.
 */
export async function boundedText(
  response: Response,
  limit: {
    method: string;
    url: string;
    maxBytes: number;
    memory: boolean;
    /** Called with the body's count once it is read whole. */
    counted?: (count: number) => void;
  },
): Promise<string> {
  /** `basis`: what the memory was estimated from. */
  const tooLarge = (basis: string) =>
    new KubeApiError(
      `${limit.method} ${limit.url}: ${
        limit.memory
          ? `the answer would take over ${
            formatBytes(limit.maxBytes)
          } of memory (estimated from ${basis})`
          : `the answer is over ${formatBytes(limit.maxBytes)}`
      }; stopped reading it`,
      { status: response.status, reason: RESPONSE_TOO_LARGE },
    );
  const body = response.body;
  if (body === null) return "";
  // Each byte counts at least 1, or 2 in memory.
  const declared = Number(response.headers.get("content-length") ?? 0);
  if (declared * (limit.memory ? 2 : 1) > limit.maxBytes) {
    await body.cancel().catch(() => {});
    throw tooLarge(`its Content-Length, ${formatBytes(declared)}`);
  }
  // A body of a declared length within the bound is read whole: Deno
  // reads it in one go, at half the CPU of reading its stream chunk by
  // chunk (`deno task bench cpu`). HTTP framing keeps it to that length;
  // it is counted again once in.
  if (response.headers.has("content-length")) {
    const bytes = await response.bytes();
    const counted = limit.memory ? estimateMemory(bytes) : bytes.byteLength;
    if (counted > limit.maxBytes) {
      throw tooLarge(`its ${formatBytes(bytes.byteLength)}`);
    }
    limit.counted?.(counted);
    return new TextDecoder().decode(bytes);
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let counted = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    counted += limit.memory ? estimateMemory(value) : value.byteLength;
    if (counted > limit.maxBytes) {
      chunks.length = 0;
      await reader.cancel().catch(() => {});
      throw tooLarge(`its first ${formatBytes(total)}`);
    }
    chunks.push(value);
  }
  let bytes: Uint8Array;
  if (chunks.length === 1) {
    bytes = chunks[0]!;
  } else {
    bytes = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, at);
      at += chunk.byteLength;
    }
  }
  chunks.length = 0;
  limit.counted?.(counted);
  return new TextDecoder().decode(bytes);
}
