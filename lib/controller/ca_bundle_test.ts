import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readCaBundle } from "./ca_bundle.ts";

const PEM =
  "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUXk=\n-----END CERTIFICATE-----\n";

Deno.test("readCaBundle() returns the file's bytes base64-encoded", async () => {
  const path = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(path, PEM);
    const encoded = await readCaBundle(path);
    assert.equal(Buffer.from(encoded, "base64").toString(), PEM);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("readCaBundle() names the flag and path of a missing file", async () => {
  await assert.rejects(
    readCaBundle("/nonexistent/ca.crt"),
    /Cannot read --webhook-ca-bundle-path \/nonexistent\/ca\.crt/,
  );
});

Deno.test("readCaBundle() refuses a file without a PEM certificate", async () => {
  const path = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(path, "not a certificate");
    await assert.rejects(readCaBundle(path), /holds no PEM certificate/);
  } finally {
    await Deno.remove(path);
  }
});
