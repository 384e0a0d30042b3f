/**
 * Test helpers for TLS: self-signed certificates made with `openssl`. Only
 * for `*_test.ts` files.
 *
 * @module
 */

/** A PEM certificate and its private key. */
export interface CertPair {
  /** PEM certificate. */
  cert: string;
  /** PEM private key. */
  key: string;
}

/**
 * Makes a self-signed P-256 server certificate for `127.0.0.1` with common
 * name `cn`, using the `openssl` command.
 *
 * @throws {Error} If `openssl` fails.
 */
export async function selfSignedCert(cn: string): Promise<CertPair> {
  const dir = await Deno.makeTempDir({ prefix: "dep-ctrl-cert-" });
  try {
    const output = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        `/CN=${cn}`,
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-addext",
        "basicConstraints=critical,CA:FALSE",
        "-keyout",
        `${dir}/tls.key`,
        "-out",
        `${dir}/tls.crt`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(
        `Cannot make a certificate with openssl: ${
          new TextDecoder().decode(output.stderr)
        }`,
      );
    }
    return {
      cert: await Deno.readTextFile(`${dir}/tls.crt`),
      key: await Deno.readTextFile(`${dir}/tls.key`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
