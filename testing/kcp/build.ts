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
  KCP_VERSION,
  moduleDir,
  sourcesDigest,
} from "./binaries.ts";
import { buildWithProgress } from "./build_progress.ts";

/** One binary and the Go package and module that build it. */
export interface Target {
  name: keyof Binaries;
  module: GoModule;
  pkg: string;
  ldflags: string;
}

const KUBE_VERSION = "v1.32.3";

/**
 * The version stamp of kcp's Makefile (`LDFLAGS`), for every binary built
 * from the kcp module: what `/version` reports.
 */
const KCP_LDFLAGS = [
  `-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}+kcp-${KCP_VERSION}`,
  "-X k8s.io/component-base/version.gitMajor=1",
  "-X k8s.io/component-base/version.gitMinor=32",
  `-X k8s.io/client-go/pkg/version.gitVersion=${KUBE_VERSION}+kcp-${KCP_VERSION}`,
].join(" ");

/**
 * The Kubernetes minor release of the `k8s.io/*` modules `helm/go.mod`
 * requires (`v0.37.x`). Helm's own Makefile sets it from them: it is the
 * cluster version `helm template` assumes (`.Capabilities.KubeVersion`,
 * checked against the chart's `kubeVersion`) unless `--kube-version` is given.
 */
export const HELM_KUBE_MINOR = 37;

/** Every binary `kcp:build` provides, in build order. */
export const TARGETS: readonly Target[] = [
  {
    name: "kcp",
    module: "server",
    pkg: "github.com/kcp-dev/kcp/cmd/kcp",
    ldflags: KCP_LDFLAGS,
  },
  {
    name: "kubectl",
    module: "kubectl",
    pkg: "k8s.io/kubernetes/cmd/kubectl",
    ldflags: "",
  },
  {
    name: "kcpFrontProxy",
    module: "server",
    pkg: "github.com/kcp-dev/kcp/cmd/kcp-front-proxy",
    ldflags: KCP_LDFLAGS,
  },
  {
    name: "cacheServer",
    module: "server",
    pkg: "github.com/kcp-dev/kcp/cmd/cache-server",
    ldflags: KCP_LDFLAGS,
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
];

/** What a build would do: the binaries found, and the targets to build. */
export interface BuildPlan {
  found: Partial<Binaries>;
  missing: Target[];
}

/** Options for {@linkcode planBuild}. */
export interface PlanBuildOptions {
  /** Only these binaries (file names, e.g. `kcp`). @default every target */
  only?: readonly string[];
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
  const known = TARGETS.map((t) => BINARIES[t.name].file);
  const unknown = (options.only ?? []).filter((f) => !known.includes(f));
  if (unknown.length > 0) {
    throw new TypeError(
      `Cannot build ${unknown.join(", ")}: the binaries are ${
        known.join(", ")
      }`,
    );
  }
  const found: Partial<Binaries> = {};
  const missing: Target[] = [];
  for (const target of TARGETS) {
    const file = BINARIES[target.name].file;
    if (options.only !== undefined && !options.only.includes(file)) continue;
    const path = await findBinary(target.name);
    if (path === undefined) missing.push(target);
    else found[target.name] = path;
  }
  return { found, missing };
}

async function main(args: string[]): Promise<number> {
  const started = performance.now();
  let plan: BuildPlan;
  try {
    plan = await planBuild(args.length > 0 ? { only: args } : {});
  } catch (error) {
    console.error(
      `kcp:build: ${error instanceof Error ? error.message : error}`,
    );
    return 1;
  }
  const found = Object.entries(plan.found).map(([name, path]) =>
    `${BINARIES[name as keyof Binaries].file} ${path}`
  );
  if (found.length > 0) {
    const ms = (performance.now() - started).toFixed(1);
    console.log(`kcp:build: found in ${ms} ms: ${found.join(", ")}`);
  }
  if (plan.missing.length === 0) return 0;
  const built = new Map<string, string[]>();
  for (const target of plan.missing) {
    const file = BINARIES[target.name].file;
    const dir = await binaryDir(target.name);
    await Deno.mkdir(dir, { recursive: true });
    // Built beside its final name and renamed when complete, so the cache
    // never holds a partial binary under the name the harness looks for.
    const staging = `${dir}/${file}.partial-${Deno.pid}`;
    const t0 = performance.now();
    console.log(
      `kcp:build: building ${file} (${target.pkg})${
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
      `kcp:build: built ${file} in ${seconds(performance.now() - t0)}`,
    );
    built.set(dir, [...built.get(dir) ?? [], file]);
  }
  for (const [dir, files] of built) {
    const release = files.includes("helm")
      ? `helm ${HELM_VERSION}`
      : `kcp ${KCP_VERSION}`;
    console.log(`kcp:build: ${files.join(", ")} (${release}) in ${dir}`);
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

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
