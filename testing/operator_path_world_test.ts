import assert from "node:assert/strict";
import {
  assertPortsFree,
  GUIDE,
  PLAIN_PATH,
  tokenLinePatterns,
} from "./operator_path_world.ts";

Deno.test("tokenLinePatterns: each line of step 1's token file, a token standing for any characters but a comma", () => {
  const markdown = `# Guide\n\n## ${PLAIN_PATH}\n\n\`\`\`text\n` +
    "<admin token>,admin,1,system:masters\n<webhook token>,webhook,2\n" +
    "```\n";
  const patterns = tokenLinePatterns(markdown);
  assert.equal(patterns.length, 2);
  assert.ok(patterns[0]!.test("abc123,admin,1,system:masters"));
  assert.ok(!patterns[0]!.test("a,b,admin,1,system:masters"));
  assert.ok(!patterns[0]!.test("abc123,admin,1,system:mastersX"));
  assert.ok(patterns[1]!.test("t.k+n,webhook,2"));
});

Deno.test("tokenLinePatterns reads the guide's own token file", async () => {
  const markdown = await Deno.readTextFile(
    new URL(`../${GUIDE}`, import.meta.url),
  );
  assert.ok(tokenLinePatterns(markdown).length > 0);
});

Deno.test("assertPortsFree names a port that is taken", () => {
  const listener = Deno.listen({ port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  try {
    assert.throws(
      () => assertPortsFree([port]),
      new RegExp(`port :${port} is taken on this host`),
    );
  } finally {
    listener.close();
  }
  assertPortsFree([port]);
});
