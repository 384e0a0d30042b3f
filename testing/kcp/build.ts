/**
 * `deno task kcp:build`: builds `kcp`, `kubectl`, `kcp-front-proxy`,
 * `cache-server`, `manifest-check` and `helm` from the Go wrapper modules
 * beside this file into the per-user cache. Each binary is built only when it
 * is neither cached already nor named by its override (`KCP_BIN`,
 * `KUBECTL_BIN`, `KCP_FRONT_PROXY_BIN`, `CACHE_SERVER_BIN`,
 * `MANIFEST_CHECK_BIN`, `HELM_BIN`), so a cache from before one of them
 * existed only gains that binary. Prints what it did and how long it took,
 * and while a binary builds a heartbeat with the time spent and the packages
 * compiled out of those to compile (`build_progress.ts`): every 10 s, or one
 * line redrawn in place on a terminal. Arguments name the binaries to
 * provide (`kcp kubectl` for `deno task dev`); none means all.
 * `--kcp-version=<v>` (repeatable) limits the binaries of a kcp release
 * (`kcp`, `kcp-front-proxy`, `cache-server`) to those releases; by default
 * both releases of {@linkcode KCP_VERSIONS} are built.
 *
 * @module
 */
import {
  BINARIES,
  type Binaries,
  binaryDir,
  findBinary,
  type GoModule,
  HELM_VERSION,
  KCP_RELEASES,
  KCP_VERSIONS,
  type KcpVersion,
  moduleDir,
  parseKcpVersion,
  sourcesDigest,
} from "./binaries.ts";
import { buildWithProgress } from "./build_progress.ts";

/** One binary and the Go package and module that build it. */
export interface Target {
  name: keyof Binaries;
  module: GoModule;
  pkg: string;
  ldflags: string;
  /** For a binary of a kcp release: which release. */
  version?: KcpVersion;
}

/**
 * The version stamp of kcp's Makefile (`LDFLAGS`), for every binary built
 * from a kcp release's module: what `/version` reports.
 */
export function kcpLdflags(version: KcpVersion): string {
  const kube = KCP_RELEASES[version].kubeVersion;
  const minor = kube.split(".")[1];
  return [
    `-X k8s.io/component-base/version.gitVersion=${kube}+kcp-${version}`,
    "-X k8s.io/component-base/version.gitMajor=1",
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    `-X k8s.io/client-go/pkg/version.gitVersion=${kube}+kcp-${version}`,
  ].join(" ");
}

/** The binaries of one kcp release, built from its module. */
function releaseTargets(version: KcpVersion): Target[] {
  const module = KCP_RELEASES[version].module;
  const ldflags = kcpLdflags(version);
  const cmd = "github.com/kcp-dev/kcp/cmd";
  return [
    { name: "kcp", module, pkg: `${cmd}/kcp`, ldflags, version },
    {
      name: "kcpFrontProxy",
      module,
      pkg: `${cmd}/kcp-front-proxy`,
      ldflags,
      version,
    },
    {
      name: "cacheServer",
      module,
      pkg: `${cmd}/cache-server`,
      ldflags,
      version,
    },
  ];
}

/**
 * The Kubernetes minor release of the `k8s.io/*` modules `helm/go.mod`
 * requires (`v0.37.x`). Helm's own Makefile sets it from them: it is the
 * cluster version `helm template` assumes (`.Capabilities.KubeVersion`,
 * checked against the chart's `kubeVersion`) unless `--kube-version` is given.
 */
export const HELM_KUBE_MINOR = 37;

/**
 * Every binary `kcp:build` provides, in build order: the newest kcp release
 * and kubectl first (what `deno task dev` needs), then the rest.
 */
export const TARGETS: readonly Target[] = [
  ...releaseTargets(KCP_VERSIONS[0]),
  {
    name: "kubectl",
    module: "kubectl",
    pkg: "k8s.io/kubernetes/cmd/kubectl",
    ldflags: "",
  },
  {
    name: "manifestCheck",
    module: "server",
    pkg: "./manifestcheck",
    ldflags: "",
  },
  {
    name: "helm",
    module: "helm",
    pkg: "helm.sh/helm/v3/cmd/helm",
    ldflags: [
      `-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
      ...["chartutil", "lint/rules"].flatMap((pkg) => [
        `-X helm.sh/helm/v3/pkg/${pkg}.k8sVersionMajor=1`,
        `-X helm.sh/helm/v3/pkg/${pkg}.k8sVersionMinor=${HELM_KUBE_MINOR}`,
      ]),
    ].join(" "),
  },
  ...KCP_VERSIONS.slice(1).flatMap(releaseTargets),
];

/**
 * What a build would do: the binaries found, by key (a kcp release's
 * binaries other than the newest's as `<key>@<version>`), and the targets to
 * build.
 */
export interface BuildPlan {
  found: Record<string, string>;
  missing: Target[];
}

/** The key of a target in {@linkcode BuildPlan.found}. */
export function foundKey(target: Target): string {
  return target.version === undefined || target.version === KCP_VERSIONS[0]
    ? target.name
    : `${target.name}@${target.version}`;
}

/** Options for {@linkcode planBuild}. */
export interface PlanBuildOptions {
  /** Only these binaries (file names, e.g. `kcp`). @default every target */
  only?: readonly string[];
  /**
   * Only these kcp releases' binaries (`kcp`, `kcp-front-proxy`,
   * `cache-server`). @default every release
   */
  versions?: readonly KcpVersion[];
}

/**
 * Finds each binary ({@linkcode findBinary}) and lists the targets that are
 * missing.
 *
 * @throws {Deno.errors.NotFound} If an override names a file that does not exist.
 * @throws {TypeError} If `only` names no known binary.
 */
export async function planBuild(
  options: PlanBuildOptions = {},
): Promise<BuildPlan> {
  const known = [...new Set(TARGETS.map((t) => BINARIES[t.name].file))];
  const unknown = (options.only ?? []).filter((f) => !known.includes(f));
  if (unknown.length > 0) {
    throw new TypeError(
      `Cannot build ${unknown.join(", ")}: the binaries are ${
        known.join(", ")
      }`,
    );
  }
  const found: Record<string, string> = {};
  const missing: Target[] = [];
  for (const target of TARGETS) {
    const file = BINARIES[target.name].file;
    if (options.only !== undefined && !options.only.includes(file)) continue;
    const version = target.version;
    if (
      version !== undefined &&
      !(options.versions ?? [version]).includes(version)
    ) {
      continue;
    }
    const path = await findBinary(
      target.name,
      version === undefined ? {} : { version },
    );
    if (path === undefined) missing.push(target);
    else found[foundKey(target)] = path;
  }
  return { found, missing };
}

async function main(args: string[]): Promise<number> {
  const started = performance.now();
  let plan: BuildPlan;
  try {
    plan = await planBuild(parseBuildArgs(args));
  } catch (error) {
    console.error(
      `kcp:build: ${error instanceof Error ? error.message : error}`,
    );
    return 1;
  }
  const found = TARGETS.flatMap((target) => {
    const path = plan.found[foundKey(target)];
    return path === undefined ? [] : [`${label(target)} ${path}`];
  });
  if (found.length > 0) {
    const ms = (performance.now() - started).toFixed(1);
    console.log(`kcp:build: found in ${ms} ms: ${found.join(", ")}`);
  }
  if (plan.missing.length === 0) return 0;
  const built = new Map<string, string[]>();
  for (const target of plan.missing) {
    const file = BINARIES[target.name].file;
    const dir = await binaryDir(
      target.name,
      target.version === undefined ? {} : { version: target.version },
    );
    await Deno.mkdir(dir, { recursive: true });
    // Built beside its final name and renamed when complete, so the cache
    // never holds a partial binary under the name the harness looks for.
    const staging = `${dir}/${file}.partial-${Deno.pid}`;
    const t0 = performance.now();
    console.log(
      `kcp:build: building ${label(target)} (${target.pkg})${
        target.name === "manifestCheck" ? "" : "; a cold build takes minutes"
      }`,
    );
    try {
      await goBuild(target, staging);
      await Deno.rename(staging, `${dir}/${file}`);
      const digest = await sourcesDigest(target.name);
      if (digest !== undefined) {
        await Deno.writeTextFile(`${dir}/${file}.sources`, `${digest}\n`);
      }
    } catch (error) {
      await Deno.remove(staging).catch(() => {});
      console.error(
        `kcp:build: ${error instanceof Error ? error.message : error}`,
      );
      return 1;
    }
    console.log(
      `kcp:build: built ${label(target)} in ${seconds(performance.now() - t0)}`,
    );
    built.set(dir, [...built.get(dir) ?? [], file]);
  }
  for (const [dir, files] of built) {
    console.log(`kcp:build: ${files.join(", ")} in ${dir}`);
  }
  console.log(`kcp:build: total ${seconds(performance.now() - started)}`);
  return 0;
}

/**
 * The environment of every build: static binaries, and the module pins of
 * the committed `go.sum`.
 */
const GO_ENV = {
  CGO_ENABLED: "0",
  // The checksum database does not list kcp's fork pseudo-versions;
  // the committed go.sum still pins every module's hash.
  GONOSUMDB: "github.com/kcp-dev/*",
  GOFLAGS: "-mod=readonly",
  GOTOOLCHAIN: "auto",
};

/**
 * Builds `target` into `output`, printing a heartbeat with the packages
 * compiled out of those to compile ({@linkcode buildWithProgress}).
 */
async function goBuild(target: Target, output: string): Promise<void> {
  const flags = ["-trimpath", "-o", output];
  if (target.ldflags !== "") flags.push("-ldflags", target.ldflags);
  const file = BINARIES[target.name].file;
  try {
    await buildWithProgress({
      cwd: moduleDir(target.module),
      env: GO_ENV,
      flags,
      pkg: target.pkg,
      label: `kcp:build: ${file}`,
    });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(
        `Cannot build ${file}: 'go' is not on PATH (install Go or set ${
          BINARIES[target.name].env
        })`,
      );
    }
    throw new Error(`Cannot build ${file}: ${errorMessage(error)}`);
  }
}

/** A binary's file name, with its kcp release for a release's binary. */
function label(target: Target): string {
  const file = BINARIES[target.name].file;
  return target.version === undefined ? file : `${file} ${target.version}`;
}

/**
 * The command line of `kcp:build`: binary names, and `--kcp-version=<v>`
 * (repeatable) to build only those kcp releases' binaries.
 *
 * @throws {TypeError} If a version is unknown.
 */
export function parseBuildArgs(args: readonly string[]): PlanBuildOptions {
  const only: string[] = [];
  const versions: KcpVersion[] = [];
  for (const arg of args) {
    const match = /^--kcp-version=(.*)$/.exec(arg);
    if (match) versions.push(parseKcpVersion(match[1] ?? ""));
    else only.push(arg);
  }
  return {
    ...(only.length > 0 ? { only } : {}),
    ...(versions.length > 0 ? { versions } : {}),
  };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
