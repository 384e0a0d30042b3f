/**
 * Where the binaries that the tests run come from: the `KCP_BIN` /
 * `KUBECTL_BIN` / `KCP_FRONT_PROXY_BIN` / `CACHE_SERVER_BIN` /
 * `MANIFEST_CHECK_BIN` / `HELM_BIN` overrides, or the
 * per-user cache that `deno task kcp:build` fills, keyed by version and by a
 * digest of the Go modules that pin the build. Each binary is found on its
 * own, so a cache directory that lacks one of them still serves the others.
 *
 * @module
 */

/** The kcp release the test suite builds and runs. */
export const KCP_VERSION = "v0.28.1";

/** The helm release that renders the chart in the tests (`helm/go.mod`). */
export const HELM_VERSION = "v3.22.0";

/** Absolute paths of the two binaries the kcp harness runs. */
export interface KcpBinaries {
  /** The `kcp` server. */
  kcp: string;
  /** `kubectl`, built from kcp's Kubernetes fork. */
  kubectl: string;
}

/**
 * Absolute paths of the binaries a sharded kcp runs: those of
 * {@linkcode KcpBinaries} plus the front-proxy and the external cache server,
 * built from the same kcp module.
 */
export interface ShardedKcpBinaries extends KcpBinaries {
  /** `kcp-front-proxy`, which routes `/clusters/<path>` to the right shard. */
  kcpFrontProxy: string;
  /** `cache-server`, the cache shared by every shard. */
  cacheServer: string;
}

/** Every binary the tests use, by its key in {@linkcode BINARIES}. */
export interface Binaries extends ShardedKcpBinaries {
  /**
   * `manifest-check`, which validates manifests with kube-apiserver's own
   * decoding, defaulting and validation code (`server/manifestcheck/`).
   */
  manifestCheck: string;
  /** `helm`, which renders `charts/dependency-controller` (`helm/`). */
  helm: string;
}

/** Where one binary comes from. */
export interface BinarySpec {
  /** Its file name in the cache directory. */
  file: string;
  /** The environment variable that names a binary to use instead. */
  env: string;
  /**
   * For a binary built from this repository's Go code rather than from a
   * pinned module: that code's directory (relative to this file). The cache
   * keeps a digest of it beside the binary (`<file>.sources`), and a cached
   * binary whose digest differs counts as missing, so that editing the code
   * rebuilds only this binary.
   */
  sources?: string;
  /**
   * For a binary whose Go module is pinned apart from kcp's (a key of
   * {@linkcode OWN_MODULES}): it is cached in a directory of its own,
   * {@linkcode binaryDir}, keyed by that module alone, so that a new pin
   * there rebuilds only this binary and a new kcp pin does not rebuild it.
   */
  ownModule?: keyof typeof OWN_MODULES;
}

/** Every binary by its key in {@linkcode Binaries}. */
export const BINARIES: Readonly<Record<keyof Binaries, BinarySpec>> = {
  kcp: { file: "kcp", env: "KCP_BIN" },
  kubectl: { file: "kubectl", env: "KUBECTL_BIN" },
  kcpFrontProxy: { file: "kcp-front-proxy", env: "KCP_FRONT_PROXY_BIN" },
  cacheServer: { file: "cache-server", env: "CACHE_SERVER_BIN" },
  manifestCheck: {
    file: "manifest-check",
    env: "MANIFEST_CHECK_BIN",
    sources: "server/manifestcheck",
  },
  helm: { file: "helm", env: "HELM_BIN", ownModule: "helm" },
};

/**
 * The Go modules whose `go.mod`/`go.sum` decide what gets built into
 * {@linkcode cacheDir}.
 */
export const GO_MODULES = ["server", "kubectl"] as const;

/**
 * Go modules pinned apart from kcp, by directory, with the release each
 * pins; their binaries are cached in {@linkcode binaryDir}.
 */
export const OWN_MODULES = { helm: HELM_VERSION } as const;

/** A Go wrapper module beside this file. */
export type GoModule = (typeof GO_MODULES)[number] | keyof typeof OWN_MODULES;

const HERE = new URL(".", import.meta.url);

/** Directory of one of the Go wrapper modules. */
export function moduleDir(name: GoModule): string {
  return new URL(`${name}/`, HERE).pathname;
}

/**
 * The cache directory for the binaries built from the current Go modules:
 * `${XDG_CACHE_HOME:-$HOME/.cache}/dependency-controller/kcp-<version>-<digest>`.
 */
export async function cacheDir(): Promise<string> {
  return `${cacheBase()}/kcp-${KCP_VERSION}-${await modulesDigest()}`;
}

/**
 * The cache directory of one binary: {@linkcode cacheDir}, or for a binary of
 * its own module (see {@linkcode BinarySpec.ownModule})
 * `${XDG_CACHE_HOME:-$HOME/.cache}/dependency-controller/<module>-<release>-<digest>`,
 * where the digest covers that module's `go.mod` and `go.sum`.
 */
export async function binaryDir(name: keyof Binaries): Promise<string> {
  const own = BINARIES[name].ownModule;
  if (own === undefined) return await cacheDir();
  return `${cacheBase()}/${own}-${OWN_MODULES[own]}-${await ownModuleDigest(
    own,
  )}`;
}

function cacheBase(): string {
  const base = Deno.env.get("XDG_CACHE_HOME") ??
    `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  return `${base}/dependency-controller`;
}

/**
 * Finds one binary: the file its override variable names when that is set,
 * otherwise the cached build. Returns `undefined` when it is not built yet.
 *
 * @throws {Deno.errors.NotFound} If the override names a file that does not exist.
 */
export async function findBinary(
  name: keyof Binaries,
): Promise<string | undefined> {
  const { file, env } = BINARIES[name];
  const override = Deno.env.get(env);
  if (override !== undefined) {
    if (await isFile(override)) return override;
    throw new Deno.errors.NotFound(`Cannot use ${env}: no file at ${override}`);
  }
  const path = `${await binaryDir(name)}/${file}`;
  if (!(await isFile(path))) return undefined;
  const digest = await sourcesDigest(name);
  if (digest !== undefined) {
    const stamp = await Deno.readTextFile(`${path}.sources`).catch(() => "");
    if (stamp.trim() !== digest) return undefined;
  }
  return path;
}

/**
 * The digest of a binary's {@linkcode BinarySpec.sources} (every file in
 * that directory), or `undefined` for a binary without sources here.
 */
export async function sourcesDigest(
  name: keyof Binaries,
): Promise<string | undefined> {
  const { sources } = BINARIES[name];
  if (sources === undefined) return undefined;
  const dir = new URL(`${sources}/`, HERE).pathname;
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile) files.push(entry.name);
  }
  const parts: string[] = [];
  for (const file of files.sort()) {
    parts.push(file, await Deno.readTextFile(`${dir}${file}`));
  }
  return await digestOf(parts);
}

/**
 * Finds `kcp` and `kubectl`: each override when `KCP_BIN` or `KUBECTL_BIN` is
 * set, otherwise the cached build. Returns `undefined` when either is not
 * built yet.
 *
 * @throws {Deno.errors.NotFound} If an override names a file that does not exist.
 */
export async function findKcpBinaries(): Promise<KcpBinaries | undefined> {
  const kcp = await findBinary("kcp");
  if (kcp === undefined) return undefined;
  const kubectl = await findBinary("kubectl");
  if (kubectl === undefined) return undefined;
  return { kcp, kubectl };
}

/**
 * Like {@linkcode findKcpBinaries}, but fails with instructions when the
 * binaries are missing: tests never skip silently.
 *
 * @throws {Error} If no binaries are found.
 */
export async function requireKcpBinaries(): Promise<KcpBinaries> {
  const found = await findKcpBinaries();
  if (found === undefined) {
    throw new Error(
      `Cannot find kcp ${KCP_VERSION}: run 'deno task kcp:build' or set KCP_BIN and KUBECTL_BIN`,
    );
  }
  return found;
}

/**
 * Finds the binaries of a sharded kcp ({@linkcode ShardedKcpBinaries}), each
 * from its override or the cache. Returns `undefined` when any is not built
 * yet.
 *
 * @throws {Deno.errors.NotFound} If an override names a file that does not exist.
 */
export async function findShardedKcpBinaries(): Promise<
  ShardedKcpBinaries | undefined
> {
  const base = await findKcpBinaries();
  if (base === undefined) return undefined;
  const kcpFrontProxy = await findBinary("kcpFrontProxy");
  if (kcpFrontProxy === undefined) return undefined;
  const cacheServer = await findBinary("cacheServer");
  if (cacheServer === undefined) return undefined;
  return { ...base, kcpFrontProxy, cacheServer };
}

/**
 * Like {@linkcode findShardedKcpBinaries}, but fails with instructions when
 * a binary is missing: tests never skip silently.
 *
 * @throws {Error} If any of the four binaries is not found.
 */
export async function requireShardedKcpBinaries(): Promise<
  ShardedKcpBinaries
> {
  const found = await findShardedKcpBinaries();
  if (found === undefined) {
    throw new Error(
      `Cannot find the sharded kcp ${KCP_VERSION} binaries: run 'deno task kcp:build' or set KCP_BIN, KUBECTL_BIN, KCP_FRONT_PROXY_BIN and CACHE_SERVER_BIN`,
    );
  }
  return found;
}

/**
 * The `manifest-check` binary, or an error with instructions when it is not
 * built.
 *
 * @throws {Error} If it is not found.
 */
export async function requireManifestCheck(): Promise<string> {
  const found = await findBinary("manifestCheck");
  if (found === undefined) {
    throw new Error(
      "Cannot find manifest-check: run 'deno task kcp:build' or set MANIFEST_CHECK_BIN",
    );
  }
  return found;
}

/**
 * The `helm` binary, or an error with instructions when it is not built.
 *
 * @throws {Error} If it is not found.
 */
export async function requireHelm(): Promise<string> {
  const found = await findBinary("helm");
  if (found === undefined) {
    throw new Error(
      `Cannot find helm ${HELM_VERSION}: run 'deno task kcp:build' or set HELM_BIN`,
    );
  }
  return found;
}

let modulesDigestOnce: Promise<string> | undefined;
const ownModuleDigests = new Map<GoModule, Promise<string>>();

/** The digest of the Go modules' go.mod and go.sum, read once per process. */
function modulesDigest(): Promise<string> {
  return modulesDigestOnce ??= readModulesDigest();
}

async function readModulesDigest(): Promise<string> {
  return await digestOf(await moduleFiles(GO_MODULES));
}

/** The digest of one own module's go.mod and go.sum, read once per process. */
function ownModuleDigest(name: keyof typeof OWN_MODULES): Promise<string> {
  let digest = ownModuleDigests.get(name);
  if (digest === undefined) {
    digest = moduleFiles([name]).then(digestOf);
    ownModuleDigests.set(name, digest);
  }
  return digest;
}

async function moduleFiles(names: readonly GoModule[]): Promise<string[]> {
  const parts: string[] = [];
  for (const name of names) {
    for (const file of ["go.mod", "go.sum"]) {
      parts.push(await Deno.readTextFile(`${moduleDir(name)}${file}`));
    }
  }
  return parts;
}

async function digestOf(parts: string[]): Promise<string> {
  const bytes = new TextEncoder().encode(parts.join("\0"));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.slice(0, 6), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
