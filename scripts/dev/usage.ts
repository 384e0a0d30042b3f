/**
 * What `deno task dev` prints once the walk-through is done and it keeps
 * running: where everything is, and commands to try, with the demo's real
 * kubeconfigs.
 *
 * @module
 */
import { SHARD_NAMES } from "../../testing/mod.ts";
import { commandPath } from "./grant.ts";
import type { DevKcp } from "./kcp.ts";
import { bold, cyan, dim, green, shown } from "./output.ts";
import { FIXTURES } from "./protection.ts";
import type { Walked } from "./walk_through.ts";

/** Prints how to use the running system, and how to stop it. */
export async function printUsage(kcp: DevKcp, walked: Walked): Promise<void> {
  const { topology, shardOf, grants } = walked;
  const api = kcp.api;
  const sharded = kcp.sharded;
  const shardNote = (path: string) =>
    sharded === undefined ? "" : `, shard ${shardOf.get(path)}`;
  const consumer = topology.consumers[0]!.path;
  const consumerConfig = shown(await api.kubeconfig("admin", consumer));
  const computeConfig = shown(
    await api.kubeconfig("admin", topology.compute.path),
  );
  const rootConfig = shown(await api.kubeconfig("admin", "root"));
  let other = "";
  if (sharded !== undefined) {
    const second = topology.consumers[1]!.path;
    const secondConfig = shown(await api.kubeconfig("admin", second));
    other = `
  ${dim(`# the consumer ${second}${shardNote(second)}, protected alike`)}
  ${
      cyan(
        `kubectl --kubeconfig=${secondConfig} apply -f ${FIXTURES}/network/vpc-a.yaml -f ${FIXTURES}/compute/vm-1.yaml`,
      )
    }
  ${
      cyan(
        `kubectl --kubeconfig=${secondConfig} delete vpc vpc-a --dry-run=server`,
      )
    }   ${dim("# denied, naming vm-1")}
`;
  }
  const where = sharded === undefined
    ? "Try it yourself (kcp admin kubeconfigs, one per workspace):"
    : `kcp-front-proxy: ${api.baseUrl}  (${
      SHARD_NAMES.map((name) =>
        `shard ${name}: ${sharded.shards[name].baseUrl}`
      ).join(", ")
    })
Try it yourself (kcp admin kubeconfigs through the front-proxy, one per workspace):`;
  const grantLines = grants.map((grant) => `  ${cyan(grant.command)}`)
    .join("\n");
  console.log(`
${green("The system is running.")} ${where}

  ${cyan(`export PATH=${commandPath(api.binaries.kubectl)}:$PATH`)}   ${
    dim("# this kubectl and deno")
  }
  ${cyan(`export KUBECONFIG=${consumerConfig}`)}   ${
    dim(`# ${consumer}${shardNote(consumer)}`)
  }
  ${
    cyan(
      `kubectl apply -f ${FIXTURES}/network/vpc-a.yaml -f ${FIXTURES}/compute/vm-1.yaml`,
    )
  }
  ${cyan("kubectl delete vpc vpc-a --dry-run=server")}   ${
    dim("# what would block this delete? denied, naming vm-1")
  }
  ${
    cyan(
      "kubectl annotate vpc vpc-a dependencies.opendefense.cloud/skip-protection=true",
    )
  }   ${dim("# break glass")}
${other}
  ${
    dim(
      `# the rules and their status, in the compute provider${
        shardNote(topology.compute.path)
      }`,
    )
  }
  ${cyan(`kubectl --kubeconfig=${computeConfig} get dependencyrules -o yaml`)}
  ${
    dim(
      `# after a rule names a new type: the webhook's reads, in system:admin${
        sharded === undefined ? "" : " of each shard"
      } (--lock-types=<resource>.<group> for Locks on other types)`,
    )
  }
${grantLines}
  ${dim("# all workspaces")}
  ${cyan(`kubectl --kubeconfig=${rootConfig} get workspaces`)}

Kubeconfigs for every identity and workspace${
    sharded === undefined ? "" : " (through the front-proxy)"
  }: ${shown(`${api.rootDir}/kubeconfigs/`)}
Component logs (JSON lines): ${shown(api.rootDir)}/{webhook,controller}.log
Edit controller.ts, webhook.ts or lib/: the component restarts by itself.
${bold("Press Ctrl-C to stop")} (kcp, both components, and ${
    shown(walked.dir)
  }/ are removed).`);
}
