/**
 * Where the `kcp` and `kubectl` binaries that the tests run come from: the
 * `KCP_BIN` / `KUBECTL_BIN` overrides, or the per-user cache that
 * `deno task kcp:build` fills, keyed by kcp version and by a digest of the
 * Go modules that pin the build.
 *
 * @module
 */

/** The kcp release the test suite builds and runs. */
export const KCP_VERSION = "v0.28.1";

/** Absolute paths of the two binaries the harness runs. */
export interface KcpBinaries {
  /** The `kcp` server. */
  kcp: string;
  /** `kubectl`, built from kcp's Kubernetes fork. */
  kubectl: string;
}

/** The Go modules whose `go.mod`/`go.sum` decide what gets built. */
export const GO_MODULES = ["server", "kubectl"] as const;

const HERE = new URL(".", import.meta.url);

/** Directory of one of the Go wrapper modules. */
export function moduleDir(name: (typeof GO_MODULES)[number]): string {
  return new URL(`${name}/`, HERE).pathname;
}

/**
 * The cache directory for the binaries built from the current Go modules:
 * `${XDG_CACHE_HOME:-$HOME/.cache}/dependency-controller/kcp-<version>-<digest>`.
 */
export async function cacheDir(): Promise<string> {
  const base = Deno.env.get("XDG_CACHE_HOME") ??
    `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  return `${base}/dependency-controller/kcp-${KCP_VERSION}-${await modulesDigest()}`;
}

/**
 * Finds the binaries: both overrides when `KCP_BIN` or `KUBECTL_BIN` is set,
 * otherwise the cached build. Returns `undefined` when nothing is built yet.
 *
 * @throws {Deno.errors.NotFound} If an override names a file that does not exist.
 */
export async function findKcpBinaries(): Promise<KcpBinaries | undefined> {
  const cached = await cacheDir();
  const kcp = Deno.env.get("KCP_BIN") ?? `${cached}/kcp`;
  const kubectl = Deno.env.get("KUBECTL_BIN") ?? `${cached}/kubectl`;
  for (
    const [name, path] of [["KCP_BIN", kcp], ["KUBECTL_BIN", kubectl]] as const
  ) {
    if (!(await isFile(path))) {
      if (Deno.env.has(name)) {
        throw new Deno.errors.NotFound(
          `Cannot use ${name}: no file at ${path}`,
        );
      }
      return undefined;
    }
  }
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

async function modulesDigest(): Promise<string> {
  const parts: string[] = [];
  for (const name of GO_MODULES) {
    for (const file of ["go.mod", "go.sum"]) {
      parts.push(await Deno.readTextFile(`${moduleDir(name)}${file}`));
    }
  }
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
