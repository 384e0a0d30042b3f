import assert from "node:assert/strict";
import { cacheDir, findKcpBinaries, KCP_VERSION } from "./binaries.ts";

function withEnv(
  vars: Record<string, string | undefined>,
  fn: () => Promise<void>,
): Promise<void> {
  const saved = Object.fromEntries(
    Object.keys(vars).map((k) => [k, Deno.env.get(k)]),
  );
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, value] of Object.entries(v)) {
      if (value === undefined) Deno.env.delete(k);
      else Deno.env.set(k, value);
    }
  };
  apply(vars);
  return fn().finally(() => apply(saved));
}

Deno.test("cacheDir() is keyed by kcp version and a digest of the Go modules", async () => {
  await withEnv({ XDG_CACHE_HOME: "/var/cache/x" }, async () => {
    const dir = await cacheDir();
    assert.match(
      dir,
      new RegExp(
        `^/var/cache/x/dependency-controller/kcp-${KCP_VERSION}-[0-9a-f]{12}$`,
      ),
    );
    assert.equal(await cacheDir(), dir);
  });
});

Deno.test("findKcpBinaries() takes KCP_BIN and KUBECTL_BIN over the cache", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/kcp`, "");
    await Deno.writeTextFile(`${dir}/kubectl`, "");
    await withEnv(
      { KCP_BIN: `${dir}/kcp`, KUBECTL_BIN: `${dir}/kubectl` },
      async () => {
        assert.deepEqual(await findKcpBinaries(), {
          kcp: `${dir}/kcp`,
          kubectl: `${dir}/kubectl`,
        });
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("findKcpBinaries() rejects an override that names no file, and finds nothing in an empty cache", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await withEnv(
      { KCP_BIN: `${dir}/missing`, KUBECTL_BIN: undefined },
      async () => {
        await assert.rejects(
          findKcpBinaries(),
          /Cannot use KCP_BIN: no file at/,
        );
      },
    );
    await withEnv({
      KCP_BIN: undefined,
      KUBECTL_BIN: undefined,
      XDG_CACHE_HOME: dir,
    }, async () => {
      assert.equal(await findKcpBinaries(), undefined);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
