/**
 * Serving certificates for test webhooks: a throwaway CA and a leaf for
 * 127.0.0.1 signed by it, made with `openssl`, laid out as a Kubernetes TLS
 * Secret mount (`tls.crt`, `tls.key`).
 *
 * @module
 */
import { pathExists, runCommand } from "./process.ts";

/** A CA and a serving certificate in a directory. */
export interface ServingCert {
  /** Directory with `tls.crt` and `tls.key` (what `--tls-cert-dir` takes). */
  dir: string;
  /** The CA certificate, PEM: what a webhook configuration's `caBundle` carries. */
  caPem: string;
  /** The CA certificate's file (what `--webhook-ca-bundle-path` takes). */
  caFile: string;
}

/**
 * Creates a CA and a leaf certificate for `127.0.0.1` and `localhost` in
 * `dir`, with common name `cn`. Calling it again on the same directory
 * rotates the leaf (same CA).
 *
 * @throws {Error} With openssl's output if a step fails.
 */
export async function createServingCert(
  dir: string,
  options: { cn?: string } = {},
): Promise<ServingCert> {
  const cn = options.cn ?? "dependency-webhook";
  await Deno.mkdir(dir, { recursive: true });
  const ca = `${dir}/ca`;
  if (!(await pathExists(`${ca}.crt`))) {
    await openssl([
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      `${ca}.key`,
      "-out",
      `${ca}.crt`,
      "-days",
      "2",
      "-subj",
      "/CN=test webhook CA",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ]);
  }
  const ext = `${dir}/leaf.ext`;
  await Deno.writeTextFile(
    ext,
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n" +
      "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
  );
  await openssl([
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    `${dir}/next.key`,
    "-out",
    `${dir}/leaf.csr`,
    "-subj",
    `/CN=${cn}`,
  ]);
  await openssl([
    "x509",
    "-req",
    "-in",
    `${dir}/leaf.csr`,
    "-CA",
    `${ca}.crt`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${dir}/next.crt`,
    "-days",
    "2",
    "-extfile",
    ext,
  ]);
  // Replace both files by rename, as a Secret volume update does.
  await Deno.rename(`${dir}/next.key`, `${dir}/tls.key`);
  await Deno.rename(`${dir}/next.crt`, `${dir}/tls.crt`);
  return {
    dir,
    caPem: await Deno.readTextFile(`${ca}.crt`),
    caFile: `${ca}.crt`,
  };
}

async function openssl(args: string[]): Promise<void> {
  const { code, stderr } = await runCommand("openssl", args);
  if (code !== 0) throw new Error(`openssl ${args[0]} failed: ${stderr}`);
}
