/**
 * The command line of `deno task dev`: its flags and its help, read before
 * anything is built or started, so `--help` and a mistyped flag answer at
 * once.
 *
 * @module
 */
import { resolve } from "node:path";
import {
  DEFAULT_KCP_VERSION,
  KCP_VERSIONS,
  type KcpVersion,
} from "../../testing/kcp/binaries.ts";

/** What `deno task dev` was asked to do. */
export interface DevOptions {
  /** Exit after the walk-through instead of running until Ctrl-C. */
  once: boolean;
  /** 1: one kcp process; 2: a sharded kcp behind kcp-front-proxy. */
  shards: 1 | 2;
  /** Where kcp's root directory, kubeconfigs and logs go (absolute), if given. */
  dir: string | undefined;
  /** The kcp release to run. */
  kcpVersion: KcpVersion;
}

/** The text of `deno task dev --help`. */
export const HELP =
  `Usage: deno task dev [--once] [--shards=1|2] [--kcp-version=<v>] [--dir=<path>]

Starts a local kcp with the demo topology, the controller and the webhook
(restarted when their source changes), and shows a delete being denied while
another object refers to it, then allowed once it does not.

  --once          exit after the walk-through instead of running until Ctrl-C
  --shards=<n>    1 (the default): one kcp process; 2: a sharded kcp (a cache
                  server, the root shard, shard-1 and kcp-front-proxy) with
                  the providers and a consumer on each shard, the components
                  and kubectl going through the front-proxy ('--shards 2'
                  works too)
  --kcp-version=<v>
                  the kcp release to run: ${
    KCP_VERSIONS.join(" (the default) or ")
  }
  --dir=<path>    where kcp's root directory, kubeconfigs and logs go
                  (default .dev/ in the project; removed at exit)
  --help, -h      show this help

Needs kcp and kubectl, which 'deno task dev' first builds from Go modules
unless they are cached (KCP_BIN and KUBECTL_BIN name your own), and openssl.
--shards 2 also needs kcp-front-proxy and cache-server, built the same way
(KCP_FRONT_PROXY_BIN and CACHE_SERVER_BIN name your own).
`;

/** Whether the arguments ask for the help (`--help` or `-h`, anywhere). */
export function wantsHelp(args: readonly string[]): boolean {
  return args.includes("--help") || args.includes("-h");
}

/**
 * Reads the flags: the options, or the message of a usage error. A
 * relative `--dir` is resolved against the current directory.
 */
export function parseDevArgs(args: readonly string[]): DevOptions | string {
  const options: DevOptions = {
    once: false,
    shards: 1,
    dir: undefined,
    kcpVersion: DEFAULT_KCP_VERSION,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--once") {
      options.once = true;
    } else if (arg.startsWith("--dir=")) {
      const dir = arg.slice("--dir=".length);
      if (dir === "") return "--dir needs a path";
      options.dir = resolve(dir);
    } else if (
      arg === "--kcp-version" || arg.startsWith("--kcp-version=")
    ) {
      const value = arg === "--kcp-version"
        ? args[++i]
        : arg.slice("--kcp-version=".length);
      const version = KCP_VERSIONS.find((v) => v === value);
      if (version === undefined) {
        return `--kcp-version must be ${KCP_VERSIONS.join(" or ")}${
          value === undefined ? "" : `, not '${value}'`
        }`;
      }
      options.kcpVersion = version;
    } else if (arg === "--shards" || arg.startsWith("--shards=")) {
      const value = arg === "--shards"
        ? args[++i]
        : arg.slice("--shards=".length);
      if (value !== "1" && value !== "2") {
        return value === undefined
          ? "--shards needs a value: 1 or 2"
          : `--shards must be 1 or 2, not '${value}'`;
      }
      options.shards = value === "1" ? 1 : 2;
    } else {
      return `Unknown argument ${arg}`;
    }
  }
  return options;
}

/**
 * The binaries `deno task dev` runs, as `testing/kcp/build.ts` names them:
 * built before anything starts unless they are cached.
 */
export function binariesFor(
  options: Pick<DevOptions, "shards" | "kcpVersion">,
): string[] {
  return [
    `--kcp-version=${options.kcpVersion}`,
    ...(options.shards > 1
      ? ["kcp", "kubectl", "kcp-front-proxy", "cache-server"]
      : ["kcp", "kubectl"]),
  ];
}
