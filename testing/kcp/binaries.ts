/**
 * Where the binaries that the tests run come from: the `KCP_BIN` /
 * `KUBECTL_BIN` / `KCP_FRONT_PROXY_BIN` / `CACHE_SERVER_BIN` /
 * `MANIFEST_CHECK_BIN` / `HELM_BIN` overrides, or the per-user cache that
 * `deno task kcp:build` fills, keyed by release and by a digest of the Go
 * module that pins the build. Two kcp releases are built side by side
 * ({@linkcode KCP_VERSIONS}); `KCP_VERSION` picks the one a test runs
 * (default {@linkcode DEFAULT_KCP_VERSION}). Each binary is found on its own,
 * so a cache directory that lacks one of them still serves the others.
 *
 * @module
 */

/** The kcp releases the tests build and run, newest first. */
export const KCP_VERSIONS = ["v0.31.2", "v0.28.1"] as const;

/** One of {@linkcode KCP_VERSIONS}. */
export type KcpVersion = (typeof KCP_VERSIONS)[number];

/**
 * The kcp release the tests and `deno task dev` run unless `KCP_VERSION`
 * (or an option) says otherwise: the newest this project can build, what
 * new users install.
 */
export const DEFAULT_KCP_VERSION: KcpVersion = "v0.31.2";

/** The helm release that renders the chart in the tests (`helm/go.mod`). */
export const HELM_VERSION = "v3.22.0";

/**
 * The Kubernetes fork commit `kubectl/go.mod` pins kubectl to (kcp v0.32.3's
 * pin): one kubectl for both kcp releases.
 */
export const KUBECTL_PIN = "e006560fc76a";

/** What a kcp release is built from. */
export interface KcpRelease {
  /** The Go wrapper module beside this file that pins it. */
  module: GoModule;
  /** The Kubernetes release of its fork, for the version stamp. */
  kubeVersion: string;
}

/** Every kcp release by version. */
export const KCP_RELEASES: Readonly<Record<KcpVersion, KcpRelease>> = {
  "v0.31.2": { module: "server-v0.31", kubeVersion: "v1.35.1" },
  "v0.28.1": { module: "server", kubeVersion: "v1.32.3" },
};

/**
 * The Go wrapper modules beside this file, by directory: the prefix of
 * their cache directory and the release each pins. A binary is cached in
 * `<prefix>-<release>-<digest>`, where the digest covers that module's
 * `go.mod` and `go.sum`, so a new pin of one module rebuilds only its
 * binaries.
 */
export const GO_MODULES = {
  "server-v0.31": { prefix: "kcp", release: "v0.31.2" },
  server: { prefix: "kcp", release: "v0.28.1" },
  kubectl: { prefix: "kubectl", release: KUBECTL_PIN },
  helm: { prefix: "helm", release: HELM_VERSION },
} as const;

/** A Go wrapper module beside this file. */
export type GoModule = keyof typeof GO_MODULES;

/**
 * The kcp release named by `KCP_VERSION`, or {@linkcode DEFAULT_KCP_VERSION}
 * when it is unset or empty.
 *
 * @throws {TypeError} If it names a release this project does not build.
 */
export function kcpVersionFromEnv(): KcpVersion {
  return parseKcpVersion(Deno.env.get("KCP_VERSION") || DEFAULT_KCP_VERSION);
}

/**
 * `text` as a kcp release this project builds.
 *
 * @throws {TypeError} If it names no such release.
 */
export function parseKcpVersion(text: string): KcpVersion {
  const found = KCP_VERSIONS.find((v) => v === text);
  if (found === undefined) {
    throw new TypeError(
      `Unknown kcp version ${JSON.stringify(text)}: this project builds ${
        KCP_VERSIONS.join(" and ")
      }`,
    );
  }
  return found;
}

/** Which kcp release a lookup is for. */
export interface KcpVersionOptions {
  /** @default {@linkcode kcpVersionFromEnv} */
  version?: KcpVersion;
}

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
   * The Go module it is built from, whatever the kcp release; absent for
   * the binaries of a kcp release (`kcp`, `kcp-front-proxy`, `cache-server`),
   * built from that release's module ({@linkcode KcpRelease.module}).
   */
  module?: GoModule;
}

/** Every binary by its key in {@linkcode Binaries}. */
export const BINARIES: Readonly<Record<keyof Binaries, BinarySpec>> = {
  kcp: { file: "kcp", env: "KCP_BIN" },
  kubectl: { file: "kubectl", env: "KUBECTL_BIN", module: "kubectl" },
  kcpFrontProxy: { file: "kcp-front-proxy", env: "KCP_FRONT_PROXY_BIN" },
  cacheServer: { file: "cache-server", env: "CACHE_SERVER_BIN" },
  manifestCheck: {
    file: "manifest-check",
    env: "MANIFEST_CHECK_BIN",
    sources: "server/manifestcheck",
    module: "server",
  },
  helm: { file: "helm", env: "HELM_BIN", module: "helm" },
};

const HERE = new URL(".", import.meta.url);

/** Directory of one of the Go wrapper modules. */
export function moduleDir(name: GoModule): string {
  return new URL(`${name}/`, HERE).pathname;
}

/** The Go module a binary is built from, for a kcp release. */
export function binaryModule(
  name: keyof Binaries,
  options: KcpVersionOptions = {},
): GoModule {
  return BINARIES[name].module ??
    KCP_RELEASES[options.version ?? kcpVersionFromEnv()].module;
}

/**
 * The cache directory of a kcp release's binaries:
 * `${XDG_CACHE_HOME:-$HOME/.cache}/dependency-controller/kcp-<version>-<digest>`,
 * where the digest covers the `go.mod` and `go.sum` of its module.
 */
export async function cacheDir(
  options: KcpVersionOptions = {},
): Promise<string> {
  return await binaryDir("kcp", options);
}

/**
 * The cache directory of one binary,
 * `${XDG_CACHE_HOME:-$HOME/.cache}/dependency-controller/<prefix>-<release>-<digest>`
 * for the module it is built from ({@linkcode GO_MODULES}).
 */
export async function binaryDir(
  name: keyof Binaries,
  options: KcpVersionOptions = {},
): Promise<string> {
  const module = binaryModule(name, options);
  const { prefix, release } = GO_MODULES[module];
  return `${cacheBase()}/${prefix}-${release}-${await moduleDigest(module)}`;
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
  options: KcpVersionOptions = {},
): Promise<string | undefined> {
  const { file, env } = BINARIES[name];
  const override = Deno.env.get(env);
  if (override !== undefined) {
    if (await isFile(override)) return override;
    throw new Deno.errors.NotFound(`Cannot use ${env}: no file at ${override}`);
  }
  const path = `${await binaryDir(name, options)}/${file}`;
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
export async function findKcpBinaries(
  options: KcpVersionOptions = {},
): Promise<KcpBinaries | undefined> {
  const kcp = await findBinary("kcp", options);
  if (kcp === undefined) return undefined;
  const kubectl = await findBinary("kubectl", options);
  if (kubectl === undefined) return undefined;
  return { kcp, kubectl };
}

/**
 * Like {@linkcode findKcpBinaries}, but fails with instructions when the
 * binaries are missing: tests never skip silently.
 *
 * @throws {Error} If no binaries are found.
 */
export async function requireKcpBinaries(
  options: KcpVersionOptions = {},
): Promise<KcpBinaries> {
  const version = options.version ?? kcpVersionFromEnv();
  const found = await findKcpBinaries({ version });
  if (found === undefined) {
    throw new Error(
      `Cannot find kcp ${version}: run 'deno task kcp:build' or set KCP_BIN and KUBECTL_BIN`,
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
export async function findShardedKcpBinaries(
  options: KcpVersionOptions = {},
): Promise<ShardedKcpBinaries | undefined> {
  const base = await findKcpBinaries(options);
  if (base === undefined) return undefined;
  const kcpFrontProxy = await findBinary("kcpFrontProxy", options);
  if (kcpFrontProxy === undefined) return undefined;
  const cacheServer = await findBinary("cacheServer", options);
  if (cacheServer === undefined) return undefined;
  return { ...base, kcpFrontProxy, cacheServer };
}

/**
 * Like {@linkcode findShardedKcpBinaries}, but fails with instructions when
 * a binary is missing: tests never skip silently.
 *
 * @throws {Error} If any of the four binaries is not found.
 */
export async function requireShardedKcpBinaries(
  options: KcpVersionOptions = {},
): Promise<ShardedKcpBinaries> {
  const version = options.version ?? kcpVersionFromEnv();
  const found = await findShardedKcpBinaries({ version });
  if (found === undefined) {
    throw new Error(
      `Cannot find the sharded kcp ${version} binaries: run 'deno task kcp:build' or set KCP_BIN, KUBECTL_BIN, KCP_FRONT_PROXY_BIN and CACHE_SERVER_BIN`,
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

const moduleDigests = new Map<GoModule, Promise<string>>();

/** The digest of one module's go.mod and go.sum, read once per process. */
function moduleDigest(name: GoModule): Promise<string> {
  let digest = moduleDigests.get(name);
  if (digest === undefined) {
    digest = moduleFiles([name]).then(digestOf);
    moduleDigests.set(name, digest);
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
