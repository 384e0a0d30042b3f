/**
 * The webhook's CA bundle as kcp wants it in a webhook configuration: the
 * PEM file's bytes, base64-encoded. Read again at every resync, so a
 * rotated CA reaches every configuration.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { errorText } from "../runtime/mod.ts";

const PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----";

/**
 * Reads a PEM CA bundle and returns it base64-encoded.
 *
 * @throws {Error} Naming the flag and path, if the file cannot be read or
 * holds no PEM certificate.
 */
export async function readCaBundle(path: string): Promise<string> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (error) {
    throw new Error(
      `Cannot read --webhook-ca-bundle-path ${path}: ${errorText(error)}`,
    );
  }
  if (!new TextDecoder().decode(bytes).includes(PEM_CERTIFICATE)) {
    throw new Error(
      `Cannot use --webhook-ca-bundle-path ${path}: it holds no PEM certificate`,
    );
  }
  return Buffer.from(bytes).toString("base64");
}
