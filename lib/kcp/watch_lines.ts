/**
 * The lines of a watch stream, read as bytes and bounded: no line may grow
 * past a cap (a tenant's huge object, or a hostile server, would otherwise
 * grow it without limit), and every byte is looked at and copied a bounded
 * number of times, however the stream is chunked.
 *
 * @module
 */
import { KubeApiError, RESPONSE_TOO_LARGE } from "./kube_api_error.ts";
import { formatBytes } from "./response_body.ts";

/**
 * The default of {@linkcode WatchLinesOptions.maxLineBytes}: 8 MiB, the
 * webhook's default cap of a list page (its `DEFAULT_MAX_PAGE_BYTES`), which
 * is far more than any one Kubernetes object's event takes (etcd refuses
 * objects over about 1.5 MiB).
 */
export const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024;

/**
 * `maxLineBytes`, or {@linkcode DEFAULT_MAX_LINE_BYTES} when it is
 * `undefined`.
 *
 * @throws {RangeError} If it is not a positive integer.
 */
export function lineCap(maxLineBytes: number | undefined): number {
  if (maxLineBytes === undefined) return DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) {
    throw new RangeError(
      `Cannot read watch lines: maxLineBytes must be a positive integer: current value is ${maxLineBytes}`,
    );
  }
  return maxLineBytes;
}

/** Options of {@linkcode watchLines}. */
export interface WatchLinesOptions {
  /**
   * Most bytes of one line, without its line end (`\n` or `\r\n`). A line
   * over it fails the read (reason {@linkcode RESPONSE_TOO_LARGE}) as soon
   * as that many bytes of it have arrived: the stream is cancelled and no
   * more of it is held. @default {DEFAULT_MAX_LINE_BYTES}
   */
  maxLineBytes?: number;
  /**
   * What the error of a line over the cap names as the request, e.g.
   * `WATCH https://kcp/apis/g/v1/things`. @default {"stream"}
   */
  what?: string;
  /**
   * The `status` of that error: the HTTP status of the answer whose body
   * is read. @default {200}
   */
  status?: number;
}

/** The byte value of `\n`. */
const LF = 0x0a;
/** The byte value of `\r`. */
const CR = 0x0d;

/**
 * Splits a byte stream into its lines, decoded as UTF-8 and trimmed;
 * blank lines are skipped, and a last line without a line end is yielded
 * too. Lines are cut on bytes before they are decoded, so a character
 * split across chunks decodes whole. The stream is cancelled when the
 * consumer stops early or a line is over the cap.
 *
 * @throws {KubeApiError} With reason {@linkcode RESPONSE_TOO_LARGE} when a
 * line is over `maxLineBytes`; the stream's own error when reading fails.
 * @throws {RangeError} If `maxLineBytes` is not a positive integer.
 */
export async function* watchLines(
  body: ReadableStream<Uint8Array>,
  options: WatchLinesOptions = {},
): AsyncGenerator<string> {
  const { what = "stream", status = 200 } = options;
  let maxLineBytes: number;
  try {
    maxLineBytes = lineCap(options.maxLineBytes);
  } catch (error) {
    await body.cancel().catch(() => {});
    throw error;
  }
  const decoder = new TextDecoder();
  /** A line's bytes over the cap, `\r` aside. */
  const over = (bytes: number, last: number | undefined) =>
    bytes - (last === CR ? 1 : 0) > maxLineBytes;
  const tooLarge = () =>
    new KubeApiError(
      `${what}: a line of the stream is over ${
        formatBytes(maxLineBytes)
      }; stopped reading it`,
      { status, reason: RESPONSE_TOO_LARGE },
    );
  // The start of the line not ended yet: copies of the chunks' tails (so a
  // short tail never pins a large chunk), `held` bytes in all.
  let parts: Uint8Array[] = [];
  let held = 0;
  /** The line of the held parts and `tail`, decoded; the parts are let go. */
  const line = (tail: Uint8Array): string => {
    let bytes: Uint8Array;
    if (parts.length === 0) {
      bytes = tail;
    } else {
      bytes = new Uint8Array(held + tail.byteLength);
      let at = 0;
      for (const part of parts) {
        bytes.set(part, at);
        at += part.byteLength;
      }
      bytes.set(tail, at);
    }
    parts = [];
    held = 0;
    return decoder.decode(bytes).trim();
  };
  // Iterating the stream cancels it when the loop is left early.
  for await (const chunk of body) {
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(LF, start);
      if (end === -1) break;
      const tail = chunk.subarray(start, end);
      const last = tail.byteLength > 0
        ? tail[tail.byteLength - 1]
        : parts.at(-1)?.at(-1);
      if (over(held + tail.byteLength, last)) throw tooLarge();
      const text = line(tail);
      start = end + 1;
      if (text !== "") yield text;
    }
    if (start < chunk.byteLength) {
      const rest = chunk.slice(start);
      held += rest.byteLength;
      // A `\r` may still end the line, if a `\n` follows.
      if (over(held, rest[rest.byteLength - 1])) {
        parts = [];
        throw tooLarge();
      }
      parts.push(rest);
    }
  }
  if (held > 0) {
    if (over(held, parts.at(-1)?.at(-1))) throw tooLarge();
    const text = line(new Uint8Array());
    if (text !== "") yield text;
  }
}
