import assert from "node:assert/strict";
import {
  checkExported,
  type ExportAnswer,
  exportKey,
} from "./export_checks.ts";

const NETWORK: ExportAnswer = {
  found: true,
  types: [
    { group: "net.io", resource: "vpcs", versions: ["v1", "v2"], kind: "VPC" },
    { group: "net.io", resource: "subnets", versions: ["v1"], kind: "Subnet" },
  ],
};
const REF = { workspace: "root:net", name: "net.io", shown: "root:net" };
const VPCS = { group: "net.io", version: "v1", resource: "vpcs" };

Deno.test("checkExported() passes a type the export serves in that version", () => {
  assert.deepEqual(checkExported({ answer: NETWORK }, REF, VPCS), { ok: true });
  assert.deepEqual(
    checkExported({ answer: NETWORK }, REF, { ...VPCS, version: "v2" }),
    { ok: true },
  );
});

Deno.test("checkExported() names a type the export does not serve, and what it does", () => {
  assert.deepEqual(
    checkExported({ answer: NETWORK }, REF, { ...VPCS, group: "nett.io" }),
    {
      ok: false,
      reason: "TypeNotExported",
      message:
        "the APIExport net.io in root:net does not export vpcs.nett.io: it exports subnets.net.io (v1), vpcs.net.io (v1, v2)",
    },
  );
  assert.deepEqual(
    checkExported({ answer: NETWORK }, REF, { ...VPCS, version: "v3" }),
    {
      ok: false,
      reason: "TypeNotExported",
      message:
        "the APIExport net.io in root:net serves vpcs.net.io only in v1, v2, not v3: it exports subnets.net.io (v1), vpcs.net.io (v1, v2)",
    },
  );
  assert.match(
    (checkExported({ answer: { found: true, types: [] } }, REF, VPCS) as {
      message: string;
    }).message,
    /does not export vpcs\.net\.io: it exports nothing$/,
  );
});

Deno.test("checkExported() names an export that does not exist", () => {
  assert.deepEqual(checkExported({ answer: { found: false } }, REF, VPCS), {
    ok: false,
    reason: "APIExportNotFound",
    message:
      "there is no APIExport net.io in root:net, which should serve vpcs.net.io",
  });
});

Deno.test("checkExported() fails nothing it could not read, and says why", () => {
  assert.deepEqual(checkExported(undefined, REF, VPCS), { ok: true });
  assert.deepEqual(checkExported({ error: "403 Forbidden" }, REF, VPCS), {
    ok: true,
    unverified:
      "cannot read the APIExport net.io in root:net to check vpcs.net.io: 403 Forbidden",
  });
});

Deno.test("checkExported() keeps deciding from the last answer while a new read fails", () => {
  assert.deepEqual(
    checkExported({ answer: NETWORK, error: "timeout" }, REF, VPCS),
    { ok: true },
  );
  const failed = checkExported(
    { answer: { found: false }, error: "timeout" },
    REF,
    VPCS,
  );
  assert.equal(failed.ok, false);
  assert.match(
    (failed as { message: string }).message,
    /\(as last read; reading it again failed: timeout\)$/,
  );
});

Deno.test("exportKey() tells workspaces and names apart", () => {
  assert.notEqual(
    exportKey({ workspace: "root:a", name: "b" }),
    exportKey({ workspace: "root", name: "a:b" }),
  );
});
