/**
 * `deno task kcp:build`: builds `kcp` and `kubectl` from the Go wrapper
 * modules beside this file into the per-user cache, unless they are cached
 * already or `KCP_BIN`/`KUBECTL_BIN` name them. Prints what it did and how
 * long it took.
 *
 * @module
 */
import {
  cacheDir,
  findKcpBinaries,
  KCP_VERSION,
  type KcpBinaries,
  moduleDir,
} from "./binaries.ts";

/** One binary and the Go package and module that build it. */
interface Target {
  name: keyof KcpBinaries;
  module: "server" | "kubectl";
  pkg: string;
  ldflags: string;
}

const KUBE_VERSION = "v1.32.3";

const TARGETS: readonly Target[] = [
  {
    name: "kcp",
    module: "server",
    pkg: "github.com/kcp-dev/kcp/cmd/kcp",
    ldflags: [
      `-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}+kcp-${KCP_VERSION}`,
      "-X k8s.io/component-base/version.gitMajor=1",
      "-X k8s.io/component-base/version.gitMinor=32",
      `-X k8s.io/client-go/pkg/version.gitVersion=${KUBE_VERSION}+kcp-${KCP_VERSION}`,
    ].join(" "),
  },
  {
    name: "kubectl",
    module: "kubectl",
    pkg: "k8s.io/kubernetes/cmd/kubectl",
    ldflags: "",
  },
];

async function main(): Promise<number> {
  const started = performance.now();
  const found = await findKcpBinaries();
  if (found !== undefined) {
    const ms = (performance.now() - started).toFixed(1);
    console.log(
      `kcp:build: found kcp ${KCP_VERSION} in ${ms} ms: ${found.kcp}, ${found.kubectl}`,
    );
    return 0;
  }
  const dir = await cacheDir();
  const staging = `${dir}.partial-${Deno.pid}`;
  await Deno.mkdir(staging, { recursive: true });
  try {
    for (const target of TARGETS) {
      const t0 = performance.now();
      console.log(
        `kcp:build: building ${target.name} (${target.pkg}); a cold build takes minutes`,
      );
      await goBuild(target, `${staging}/${target.name}`);
      console.log(
        `kcp:build: built ${target.name} in ${seconds(performance.now() - t0)}`,
      );
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.rename(staging, dir);
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    console.error(
      `kcp:build: ${error instanceof Error ? error.message : error}`,
    );
    return 1;
  }
  console.log(`kcp:build: kcp ${KCP_VERSION} and kubectl are in ${dir}`);
  console.log(`kcp:build: total ${seconds(performance.now() - started)}`);
  return 0;
}

async function goBuild(target: Target, output: string): Promise<void> {
  const args = ["build", "-trimpath", "-o", output];
  if (target.ldflags !== "") args.push("-ldflags", target.ldflags);
  args.push(target.pkg);
  let child;
  try {
    child = new Deno.Command("go", {
      args,
      cwd: moduleDir(target.module),
      env: {
        CGO_ENABLED: "0",
        // The checksum database does not list kcp's fork pseudo-versions;
        // the committed go.sum still pins every module's hash.
        GONOSUMDB: "github.com/kcp-dev/*",
        GOFLAGS: "-mod=readonly",
        GOTOOLCHAIN: "auto",
      },
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(
        "Cannot build kcp: 'go' is not on PATH (install Go or set KCP_BIN and KUBECTL_BIN)",
      );
    }
    throw error;
  }
  const status = await child.status;
  if (!status.success) {
    throw new Error(
      `Cannot build ${target.name}: 'go ${
        args.join(" ")
      }' exited with ${status.code}`,
    );
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

if (import.meta.main) Deno.exit(await main());
