/**
 * The command that grants the webhook its reads for the demo's types, as an
 * operator runs it (`deno task rbac` with the webhook's kubeconfig, applied
 * in `system:admin` as `system:masters`), with the demo's real kubeconfigs:
 * the walk-through runs exactly what it prints, and the list of commands to
 * try repeats it.
 *
 * @module
 */
import { basename, dirname } from "node:path";
import { type CommandResult, runCommand } from "../../testing/mod.ts";
import type { DevKcp } from "./kcp.ts";
import { shown } from "./output.ts";

/** Options for {@linkcode grantCommandLine}. */
export interface GrantCommandLineOptions {
  /** The webhook's kubeconfig, which `deno task rbac` reads the rules with. */
  webhookKubeconfig: string;
  /** A `system:masters` kubeconfig for one shard's `system:admin`. */
  adminKubeconfig: string;
  /** `--lock-types`: Lock target types the webhook may read. */
  lockTypes?: readonly string[];
  /** How Deno is typed. @default {"deno"} */
  deno?: string;
}

/**
 * `deno task rbac --kubeconfig=<webhook> [--lock-types=...] | kubectl
 * --kubeconfig=<system:admin> apply -f -`.
 */
export function grantCommandLine(options: GrantCommandLineOptions): string {
  const lockTypes = options.lockTypes ?? [];
  return [
    `${options.deno ?? "deno"} task rbac`,
    `--kubeconfig=${options.webhookKubeconfig}`,
    ...(lockTypes.length > 0 ? [`--lock-types=${lockTypes.join(",")}`] : []),
    "|",
    `kubectl --kubeconfig=${options.adminKubeconfig} apply -f -`,
  ].join(" ");
}

/** The grant for one shard. */
export interface Grant {
  /** The shard, with `--shards 2`. */
  shard: string | undefined;
  /** The webhook's kubeconfig, as shown. */
  webhookKubeconfig: string;
  /** The shard's `system:admin` kubeconfig, as shown. */
  adminKubeconfig: string;
  /** The command line ({@linkcode grantCommandLine}). */
  command: string;
}

/** How the running Deno is typed: `deno` once {@linkcode commandPath} is on `PATH`. */
export function denoCommand(): string {
  return basename(Deno.execPath()) === "deno" ? "deno" : Deno.execPath();
}

/**
 * What `PATH` needs in front for the printed commands: the running Deno's
 * directory and kubectl's.
 */
export function commandPath(kubectl: string): string {
  return [...new Set([dirname(Deno.execPath()), dirname(kubectl)])].join(":");
}

/** The grant of the demo's kcp: one, or one per shard with `--shards 2`. */
export async function demoGrants(kcp: DevKcp): Promise<Grant[]> {
  const webhookKubeconfig = shown(
    await kcp.api.kubeconfig("webhook", "root:dep-ctrl"),
  );
  const admins = kcp.sharded === undefined
    ? [{ shard: undefined, api: kcp.api }]
    : Object.values(kcp.sharded.shards).map((api) => ({
      shard: api.name as string | undefined,
      api,
    }));
  const grants: Grant[] = [];
  for (const { shard, api } of admins) {
    const adminKubeconfig = shown(
      await api.kubeconfig("shardAdmin", "system:admin"),
    );
    grants.push({
      shard,
      webhookKubeconfig,
      adminKubeconfig,
      command: grantCommandLine({
        webhookKubeconfig,
        adminKubeconfig,
        deno: denoCommand(),
      }),
    });
  }
  return grants;
}

/**
 * Runs a printed command line with bash (`pipefail`), with
 * {@linkcode commandPath} in front of `PATH`, in the current directory.
 */
export function runShell(
  command: string,
  options: { kubectl: string },
): Promise<CommandResult> {
  return runCommand("bash", ["-o", "pipefail", "-c", command], {
    env: {
      PATH: `${commandPath(options.kubectl)}:${Deno.env.get("PATH") ?? ""}`,
    },
  });
}
