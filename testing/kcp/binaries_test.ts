import assert from "node:assert/strict";
import { dirname } from "node:path";
import {
  BINARIES,
  type Binaries,
  binaryDir,
  cacheDir,
  DEFAULT_KCP_VERSION,
  findBinary,
  findKcpBinaries,
  findShardedKcpBinaries,
  HELM_VERSION,
  KCP_RELEASES,
  KCP_VERSIONS,
  kcpVersionFromEnv,
  moduleDir,
  parseKcpVersion,
  requireHelm,
  requireManifestCheck,
  requireShardedKcpBinaries,
  sourcesDigest,
} from "./binaries.ts";
import {
  HELM_KUBE_MINOR,
  parseBuildArgs,
  planBuild,
  type PlanBuildOptions,
  TARGETS,
} from "./build.ts";
import { runCommand } from "../mod.ts";

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

Deno.test("cacheDir() is keyed by kcp version and a digest of that release's Go module", async () => {
  await withEnv(
    { XDG_CACHE_HOME: "/var/cache/x", KCP_VERSION: undefined },
    async () => {
      const dirs = [];
      for (const version of KCP_VERSIONS) {
        const dir = await cacheDir({ version });
        assert.match(
          dir,
          new RegExp(
            `^/var/cache/x/dependency-controller/kcp-${version}-[0-9a-f]{12}$`,
          ),
        );
        dirs.push(dir);
      }
      assert.equal(new Set(dirs).size, KCP_VERSIONS.length);
      assert.equal(await cacheDir(), await cacheDir({ version: "v0.31.2" }));
      assert.match(
        await binaryDir("kubectl"),
        /\/dependency-controller\/kubectl-[0-9a-f]{12}-[0-9a-f]{12}$/,
      );
    },
  );
  await withEnv({ KCP_VERSION: "v0.28.1" }, async () => {
    assert.equal(await cacheDir(), await cacheDir({ version: "v0.28.1" }));
  });
});

Deno.test("KCP_VERSION picks the kcp release; the newest is the default; an unknown one is refused", async () => {
  assert.equal(DEFAULT_KCP_VERSION, KCP_VERSIONS[0]);
  const read = (value: string | undefined) =>
    withEnv({ KCP_VERSION: value }, () => {
      assert.equal(kcpVersionFromEnv(), value || "v0.31.2");
      return Promise.resolve();
    });
  await read(undefined);
  await read("");
  await read("v0.28.1");
  await withEnv({ KCP_VERSION: "v0.32.3" }, () => {
    assert.throws(
      () => kcpVersionFromEnv(),
      /Unknown kcp version "v0\.32\.3": this project builds v0\.31\.2 and v0\.28\.1/,
    );
    return Promise.resolve();
  });
  assert.equal(parseKcpVersion("v0.28.1"), "v0.28.1");
  assert.deepEqual(parseBuildArgs(["kcp", "--kcp-version=v0.28.1"]), {
    only: ["kcp"],
    versions: ["v0.28.1"],
  });
  assert.deepEqual(parseBuildArgs([]), {});
  assert.throws(() => parseBuildArgs(["--kcp-version=0.28"]), TypeError);
});

Deno.test("each kcp release is built from its own module with its own version stamp", async () => {
  for (const version of KCP_VERSIONS) {
    const { module, kubeVersion } = KCP_RELEASES[version];
    const goMod = await Deno.readTextFile(`${moduleDir(module)}go.mod`);
    assert.match(
      goMod,
      new RegExp(`^require github\\.com/kcp-dev/kcp ${version}$`, "m"),
    );
    const targets = TARGETS.filter((t) => t.version === version);
    assert.deepEqual(targets.map((t) => t.name), [
      "kcp",
      "kcpFrontProxy",
      "cacheServer",
    ]);
    for (const target of targets) {
      assert.equal(target.module, module);
      assert.match(
        target.ldflags,
        new RegExp(
          `gitVersion=${kubeVersion.replaceAll(".", "\\.")}\\+kcp-${version}`,
        ),
      );
    }
  }
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
        assert.deepEqual(await findKcpBinaries({ version: "v0.28.1" }), {
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

/**
 * A cache under a temporary XDG_CACHE_HOME holding the named binaries, each
 * in its own cache directory ({@linkcode binaryDir}); `fn` gets kcp's.
 */
async function withCache(
  files: string[],
  fn: (dir: string) => Promise<void>,
  env: Record<string, string | undefined> = {},
): Promise<void> {
  const home = await Deno.makeTempDir();
  try {
    await withEnv({
      XDG_CACHE_HOME: home,
      KCP_BIN: undefined,
      KUBECTL_BIN: undefined,
      KCP_FRONT_PROXY_BIN: undefined,
      CACHE_SERVER_BIN: undefined,
      MANIFEST_CHECK_BIN: undefined,
      HELM_BIN: undefined,
      KCP_VERSION: undefined,
      ...env,
    }, async () => {
      for (const file of files) {
        const name = (Object.keys(BINARIES) as (keyof Binaries)[])
          .find((n) => BINARIES[n].file === file) ?? "kcp";
        const dir = await binaryDir(name);
        await Deno.mkdir(dir, { recursive: true });
        await Deno.writeTextFile(`${dir}/${file}`, "");
      }
      await fn(await cacheDir());
    });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

/** Where the cache keeps one binary (for the default kcp release). */
async function cached(name: keyof Binaries): Promise<string> {
  return `${await binaryDir(name)}/${BINARIES[name].file}`;
}

/** Plans the binaries of the default kcp release and the others. */
function planDefault(options: PlanBuildOptions = {}) {
  return planBuild({ ...options, versions: [DEFAULT_KCP_VERSION] });
}

/** The binaries built from kcp's module beside kcp itself. */
const SHARDED = ["kcp-front-proxy", "cache-server"];

Deno.test("a cache from before manifest-check still serves kcp and kubectl, and only manifest-check gets built", async () => {
  await withCache(["kcp", "kubectl", ...SHARDED, "helm"], async (dir) => {
    assert.deepEqual(await findKcpBinaries(), {
      kcp: `${dir}/kcp`,
      kubectl: await cached("kubectl"),
    });
    assert.equal(await findBinary("manifestCheck"), undefined);
    await assert.rejects(
      requireManifestCheck(),
      /Cannot find manifest-check: run 'deno task kcp:build' or set MANIFEST_CHECK_BIN/,
    );
    const plan = await planDefault();
    assert.deepEqual(plan.found, {
      kcp: `${dir}/kcp`,
      kubectl: await cached("kubectl"),
      kcpFrontProxy: `${dir}/kcp-front-proxy`,
      cacheServer: `${dir}/cache-server`,
      helm: `${await binaryDir("helm")}/helm`,
    });
    assert.deepEqual(plan.missing.map((t) => [t.name, t.module, t.pkg]), [
      ["manifestCheck", "server", "./manifestcheck"],
    ]);
  });
});

Deno.test("a cache from before the sharded binaries still serves the others, and only kcp-front-proxy and cache-server get built", async () => {
  await withCache(["kcp", "kubectl", "helm"], async (dir) => {
    assert.deepEqual(await findKcpBinaries(), {
      kcp: `${dir}/kcp`,
      kubectl: await cached("kubectl"),
    });
    assert.equal(await findShardedKcpBinaries(), undefined);
    await assert.rejects(
      requireShardedKcpBinaries(),
      /Cannot find the sharded kcp v\d+\.\d+\.\d+ binaries: run 'deno task kcp:build' or set KCP_BIN, KUBECTL_BIN, KCP_FRONT_PROXY_BIN and CACHE_SERVER_BIN/,
    );
    const manifestCheck = await cached("manifestCheck");
    await Deno.mkdir(dirname(manifestCheck), { recursive: true });
    await Deno.writeTextFile(manifestCheck, "");
    await Deno.writeTextFile(
      `${manifestCheck}.sources`,
      `${await sourcesDigest("manifestCheck")}\n`,
    );
    assert.deepEqual(
      (await planDefault()).missing.map((t) => [t.name, t.module, t.pkg]),
      [
        [
          "kcpFrontProxy",
          "server-v0.31",
          "github.com/kcp-dev/kcp/cmd/kcp-front-proxy",
        ],
        [
          "cacheServer",
          "server-v0.31",
          "github.com/kcp-dev/kcp/cmd/cache-server",
        ],
      ],
    );
    assert.equal(await binaryDir("kcpFrontProxy"), dir, "beside kcp");
    assert.equal(await binaryDir("cacheServer"), dir, "beside kcp");
    await Deno.writeTextFile(`${dir}/kcp-front-proxy`, "");
    assert.equal(await findShardedKcpBinaries(), undefined);
    await Deno.writeTextFile(`${dir}/cache-server`, "");
    assert.deepEqual(await requireShardedKcpBinaries(), {
      kcp: `${dir}/kcp`,
      kubectl: await cached("kubectl"),
      kcpFrontProxy: `${dir}/kcp-front-proxy`,
      cacheServer: `${dir}/cache-server`,
    });
    assert.deepEqual((await planDefault()).missing, []);
  });
});

Deno.test("KCP_FRONT_PROXY_BIN and CACHE_SERVER_BIN override the cache", async () => {
  const other = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${other}/proxy`, "");
    await Deno.writeTextFile(`${other}/cache`, "");
    await withCache(["kcp", "kubectl"], async (dir) => {
      assert.deepEqual(await findShardedKcpBinaries(), {
        kcp: `${dir}/kcp`,
        kubectl: await cached("kubectl"),
        kcpFrontProxy: `${other}/proxy`,
        cacheServer: `${other}/cache`,
      });
      assert.deepEqual(
        (await planDefault({ only: ["kcp-front-proxy", "cache-server"] }))
          .missing,
        [],
      );
    }, {
      KCP_FRONT_PROXY_BIN: `${other}/proxy`,
      CACHE_SERVER_BIN: `${other}/cache`,
    });
    await withEnv({ CACHE_SERVER_BIN: `${other}/missing` }, async () => {
      await assert.rejects(
        findBinary("cacheServer"),
        /Cannot use CACHE_SERVER_BIN: no file at .*\/missing/,
      );
    });
  } finally {
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("the sharded binaries are built from kcp's module with kcp's version stamp", () => {
  for (const version of KCP_VERSIONS) {
    const kcp = TARGETS.find((t) => t.name === "kcp" && t.version === version);
    assert.ok(kcp);
    for (const name of ["kcpFrontProxy", "cacheServer"] as const) {
      const target = TARGETS.find((t) =>
        t.name === name && t.version === version
      );
      assert.ok(target);
      assert.equal(target.module, kcp.module);
      assert.equal(target.ldflags, kcp.ldflags);
    }
    assert.match(
      kcp.ldflags,
      new RegExp(`gitVersion=v1\\.\\d+\\.\\d+\\+kcp-${version}`),
    );
  }
});

Deno.test("planBuild({ only }) plans just the named binaries, as deno task dev asks for kcp and kubectl", async () => {
  await withCache(["kcp", "kubectl"], async (dir) => {
    const plan = await planDefault({ only: ["kcp", "kubectl"] });
    assert.deepEqual(plan.found, {
      kcp: `${dir}/kcp`,
      kubectl: await cached("kubectl"),
    });
    assert.deepEqual(plan.missing, []);
    assert.deepEqual(
      (await planDefault({ only: ["manifest-check"] })).missing.map((t) =>
        t.name
      ),
      ["manifestCheck"],
    );
    await assert.rejects(
      planBuild({ only: ["kcp", "kpc"] }),
      /Cannot build kpc: the binaries are kcp, kcp-front-proxy, cache-server, kubectl, manifest-check, helm$/,
    );
  });
});

Deno.test("a cached manifest-check counts only while its sources digest matches", async () => {
  const digest = await sourcesDigest("manifestCheck");
  assert.match(digest ?? "", /^[0-9a-f]{12}$/);
  assert.equal(await sourcesDigest("kcp"), undefined);
  await withCache([
    "kcp",
    "kubectl",
    ...SHARDED,
    "manifest-check",
    "helm",
  ], async () => {
    const path = await cached("manifestCheck");
    // No stamp: built by something else, or interrupted before the stamp.
    assert.equal(await findBinary("manifestCheck"), undefined);
    await Deno.writeTextFile(`${path}.sources`, "000000000000\n");
    assert.equal(await findBinary("manifestCheck"), undefined);
    assert.deepEqual(
      (await planDefault()).missing.map((t) => t.name),
      ["manifestCheck"],
    );
    await Deno.writeTextFile(`${path}.sources`, `${digest}\n`);
    assert.equal(await findBinary("manifestCheck"), path);
    assert.equal(await requireManifestCheck(), path);
    assert.deepEqual((await planDefault()).missing, []);
  });
});

Deno.test("MANIFEST_CHECK_BIN overrides the cache, and kcp:build then builds nothing", async () => {
  const other = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${other}/manifest-check`, "");
    await withCache(["kcp", "kubectl", ...SHARDED, "helm"], async (dir) => {
      assert.equal(
        await findBinary("manifestCheck"),
        `${other}/manifest-check`,
      );
      assert.deepEqual((await planDefault()).missing, []);
      const { code, stdout: out } = await runCommand(Deno.execPath(), [
        "run",
        "--allow-run",
        "--allow-env",
        "--allow-read",
        "--allow-write",
        new URL("./build.ts", import.meta.url).pathname,
        `--kcp-version=${DEFAULT_KCP_VERSION}`,
      ], { env: { NO_COLOR: "1", PATH: "" } });
      assert.equal(code, 0);
      assert.match(out, /^kcp:build: found in .* ms: kcp .*manifest-check /);
      assert.doesNotMatch(out, /building/);
      assert.deepEqual(
        await Array.fromAsync(Deno.readDir(dir), (e) => e.name).then((n) =>
          n.sort()
        ),
        ["cache-server", "kcp", "kcp-front-proxy"],
      );
    }, { MANIFEST_CHECK_BIN: `${other}/manifest-check` });
    await withEnv(
      { MANIFEST_CHECK_BIN: `${other}/missing` },
      async () => {
        await assert.rejects(
          findBinary("manifestCheck"),
          /Cannot use MANIFEST_CHECK_BIN: no file at .*\/missing/,
        );
      },
    );
  } finally {
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("helm is cached apart from kcp, keyed by its own module: a cache from before helm only gains helm", async () => {
  await withCache(["kcp", "kubectl"], async (dir) => {
    const helmDir = await binaryDir("helm");
    assert.match(
      helmDir,
      new RegExp(
        `/dependency-controller/helm-${HELM_VERSION}-[0-9a-f]{12}$`,
      ),
    );
    assert.equal(dirname(helmDir), dirname(dir), "beside kcp's cache");
    assert.equal(await binaryDir("kcp"), dir);
    assert.equal(
      await binaryDir("manifestCheck"),
      await cacheDir({ version: "v0.28.1" }),
      "built from kcp v0.28.1's module",
    );
    assert.equal(await findBinary("helm"), undefined);
    await assert.rejects(
      requireHelm(),
      /Cannot find helm v\d+\.\d+\.\d+: run 'deno task kcp:build' or set HELM_BIN/,
    );
    assert.deepEqual(
      (await planDefault({ only: ["kcp", "kubectl", "helm"] })).missing.map((
        t,
      ) => [t.name, t.module, t.pkg]),
      [["helm", "helm", "helm.sh/helm/v3/cmd/helm"]],
    );
    await Deno.mkdir(helmDir, { recursive: true });
    await Deno.writeTextFile(`${helmDir}/helm`, "");
    assert.equal(await requireHelm(), `${helmDir}/helm`);
    // kcp's cache holds no helm (and kubectl is cached apart too).
    assert.deepEqual(
      await Array.fromAsync(Deno.readDir(dir), (e) => e.name).then((n) =>
        n.sort()
      ),
      ["kcp"],
    );
  });
});

Deno.test("HELM_BIN overrides the cache", async () => {
  const other = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${other}/helm`, "");
    await withCache(["kcp", "kubectl"], async () => {
      assert.equal(await requireHelm(), `${other}/helm`);
      assert.deepEqual(
        (await planDefault({ only: ["helm"] })).missing,
        [],
      );
    }, { HELM_BIN: `${other}/helm` });
    await withEnv({ HELM_BIN: `${other}/missing` }, async () => {
      await assert.rejects(
        findBinary("helm"),
        /Cannot use HELM_BIN: no file at .*\/missing/,
      );
    });
  } finally {
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("the helm release and its Kubernetes version are those helm/go.mod pins", async () => {
  const goMod = await Deno.readTextFile(`${moduleDir("helm")}go.mod`);
  assert.match(
    goMod,
    new RegExp(`^require helm\\.sh/helm/v3 ${HELM_VERSION}$`, "m"),
  );
  assert.match(
    goMod,
    new RegExp(`^\\s+k8s\\.io/client-go v0\\.${HELM_KUBE_MINOR}\\.\\d+ `, "m"),
  );
  const helm = TARGETS.find((t) => t.name === "helm");
  assert.ok(helm);
  assert.match(helm.ldflags, new RegExp(`version\\.version=${HELM_VERSION}`));
  assert.match(
    helm.ldflags,
    new RegExp(`chartutil\\.k8sVersionMinor=${HELM_KUBE_MINOR}`),
  );
});
