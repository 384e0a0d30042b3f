/**
 * The walk-through of `deno task dev`: kcp and the demo topology, the two
 * components, a DependencyRule (its YAML shown, the webhook's reads granted
 * with the command an operator runs), a server-side dry run asking what
 * would block a delete, the denied delete, the allowed one (and the VPC
 * gone), a Lock (its YAML shown) that keeps a VPC until it is deleted,
 * and an owner rule whose switch on the VPC protects the Subnets it owns.
 *
 * @module
 */
import type { KcpVersion } from "../../testing/kcp/binaries.ts";
import {
  buildTopology,
  createServingCert,
  type KcpApi,
  type Topology,
  workspaceShard,
} from "../../testing/mod.ts";
import { startDevController, startDevWebhook } from "./components.ts";
import type { Grant } from "./grant.ts";
import {
  PLACEMENT,
  placeWorkspaces,
  type Running,
  startSharded,
  startSingle,
  waitForDepCtrlUrls,
} from "./kcp.ts";
import {
  bold,
  cyan,
  dim,
  indent,
  kubectl,
  kubectlOk,
  note,
  red,
  shown,
  step,
} from "./output.ts";
import {
  declareRule,
  deleteAndConfirm,
  dryRunDenied,
  FIXTURES,
  lockWalkThrough,
  writeLockFiles,
} from "./protection.ts";
import {
  declareOwnerRule,
  ownerWalkThrough,
  writeOwnerFiles,
} from "./owners.ts";
import { QUIET_MS, waitingFor } from "./waiting.ts";
import { whyWalkThrough } from "./why.ts";

/** How many steps `deno task dev` numbers: the walk-through's and the last. */
export const STEPS = 12;

/** What the walk-through built, for the "how to use it" output. */
export interface Walked {
  /** The demo topology. */
  topology: Topology;
  /** The shard of each workspace, with `--shards 2`. */
  shardOf: ReadonlyMap<string, string>;
  /** The commands that grant the webhook its reads, one per shard. */
  grants: Grant[];
  /** The directory of kcp's root, the kubeconfigs, logs and YAML files. */
  dir: string;
}

/** Options for {@linkcode walkThrough}. */
export interface WalkThroughOptions {
  /** The directory of kcp's root, the kubeconfigs, logs and YAML files. */
  dir: string;
  /** 1: one kcp process; 2: a sharded kcp. */
  shards: 1 | 2;
  /** The kcp release to run. */
  kcpVersion: KcpVersion;
  /** Called when a component restarts because `path` changed. */
  onRestart: (component: string, path: string) => void;
}

/** Runs steps 1 to 11, adding what it starts to `running`. */
export async function walkThrough(
  running: Running,
  options: WalkThroughOptions,
): Promise<Walked> {
  const sharded = options.shards > 1;
  const kcp = sharded
    ? await startSharded(running, options)
    : await startSingle(running, options);
  const { topology, shardOf } = await demoTopology(kcp, sharded);

  step("Starting the webhook as user dependency-webhook");
  const cert = await createServingCert(`${kcp.rootDir}/webhook-tls`);
  const webhook = await running.add(
    "webhook",
    await startDevWebhook(kcp, {
      cert,
      onRestart: (path) => options.onRestart("webhook", path),
    }),
  );
  await waitingFor("the webhook to answer /readyz", webhook.waitReady(), {
    quietMs: QUIET_MS,
  });
  note(`admission: ${webhook.url}`);
  note(
    `probes:    http://127.0.0.1:${webhook.healthPort}/readyz   metrics: http://127.0.0.1:${webhook.metricsPort}/metrics`,
  );
  note(
    `holds:     http://127.0.0.1:${webhook.metricsPort}/holds.json (what its denials wait on, since when)`,
  );
  note(`log:       ${shown(webhook.logFile)} (JSON lines)`);

  step("Starting the controller as user dependency-controller");
  const controller = await running.add(
    "controller",
    await startDevController(kcp, {
      webhook,
      onRestart: (path) => options.onRestart("controller", path),
    }),
  );
  await waitingFor(
    "the controller to answer /readyz",
    controller.waitReady(),
    { quietMs: QUIET_MS },
  );
  note(
    `probes:    http://127.0.0.1:${controller.healthPort}/readyz   metrics: http://127.0.0.1:${controller.metricsPort}/metrics`,
  );
  note(
    `graph:     http://127.0.0.1:${controller.metricsPort}/graph (open it in a browser: the rules as a picture; /graph.json as data)`,
  );
  note(`log:       ${shown(controller.logFile)} (JSON lines)`);

  const grants = await declareRule(kcp, { topology, dev: running.kcp! });

  // One consumer shows it; with shards, one consumer on each shard.
  const consumers = sharded
    ? topology.consumers.map((c) => c.path)
    : [topology.consumers[0]!.path];
  /** With shards, names the consumer (and its shard) the lines below are about. */
  const about = (consumer: string) => {
    if (sharded) {
      note(`${bold(consumer)} ${dim(`(shard ${shardOf.get(consumer)})`)}:`);
    }
  };

  step(
    sharded
      ? "A consumer on each shard creates a VPC and a VirtualMachine in it"
      : `A consumer creates a VPC and a VirtualMachine in it`,
  );
  for (const consumer of consumers) {
    about(consumer);
    for (const file of ["network/vpc-a.yaml", "compute/vm-1.yaml"]) {
      await kubectlOk(kcp, ["apply", "-f", `${FIXTURES}/${file}`], {
        workspace: consumer,
      });
    }
  }

  step("What would block deleting the VPC? A dry run asks the webhook");
  for (const consumer of consumers) {
    about(consumer);
    await dryRunDenied(kcp, consumer);
    await whyWalkThrough(kcp, {
      consumer,
      object: "vpc/vpc-a",
      expect: "VirtualMachine default/vm-1",
    });
  }
  note(
    `${
      bold("Look:")
    } --dry-run=server runs the admission webhooks and deletes nothing: the answer names what blocks the delete; kubectl dependencies why reads the same answer's causes and asks again about each blocker.`,
  );

  step("Deleting the VPC while the VM uses it is denied");
  for (const consumer of consumers) {
    about(consumer);
    const denied = await kubectl(kcp, ["delete", "vpc", "vpc-a"], {
      workspace: consumer,
    });
    if (denied.code === 0) {
      throw new Error(
        `The VPC was deleted although vm-1 refers to it: ${denied.stdout}`,
      );
    }
    console.log(indent(denied.stderr, red));
  }
  note(
    `${
      bold("Look:")
    } the webhook names the VirtualMachine that still refers to the VPC${
      sharded ? ", on either shard" : ""
    }.`,
  );

  step("Deleting the VM, then the VPC, succeeds");
  for (const consumer of consumers) {
    about(consumer);
    await kubectlOk(kcp, ["delete", "virtualmachine", "vm-1"], {
      workspace: consumer,
    });
    await deleteAndConfirm(kcp, { consumer, vpc: "vpc-a" });
  }
  note(
    `${
      bold("Look:")
    } nothing refers to vpc-a any more, so the delete went through: the VPC is gone.`,
  );

  step("A Lock with a reason keeps a VPC until the Lock is deleted");
  const files = await writeLockFiles(options.dir, topology);
  for (const consumer of consumers) {
    about(consumer);
    await lockWalkThrough(kcp, { topology, consumer, files });
  }
  note(
    `${
      bold("Look:")
    } the Lock's reason is in the denial; deleting the Lock unlocked the VPC.`,
  );

  step(
    "An owner rule: a Subnet belongs to its VPC while the VPC's protection is on",
  );
  const owned = await writeOwnerFiles(options.dir, topology);
  await declareOwnerRule(kcp, { topology, grants, files: owned });
  for (const consumer of consumers) {
    about(consumer);
    await ownerWalkThrough(kcp, { consumer, files: owned });
  }
  note(
    `${
      bold("Look:")
    } the reference is on the Subnet (its label), not on the VPC: no list, one read of the VPC; its switch decides.`,
  );
  return { topology, shardOf, grants, dir: options.dir };
}

/** Step 2: the demo topology (placed on the shards with `--shards 2`). */
async function demoTopology(
  kcp: KcpApi,
  sharded: boolean,
): Promise<{ topology: Topology; shardOf: Map<string, string> }> {
  const shardOf = new Map<string, string>();
  const settling =
    "the demo's workspaces, APIExports and APIBindings to be ready";
  const hint = { hint: "(about half a minute)" };
  let topology: Topology;
  if (sharded) {
    step(
      "Placing workspaces on the shards, building the demo topology and applying manifests/kcp",
    );
    topology = await waitingFor(
      settling,
      placeWorkspaces(kcp).then(() =>
        buildTopology(kcp, {
          networkPath: PLACEMENT.network.path,
          computePath: PLACEMENT.compute.path,
          consumerPaths: PLACEMENT.consumers.map((c) => c.path),
        })
      ),
      hint,
    );
    for (
      const path of [
        "root",
        "root:providers",
        topology.depCtrl.path,
        topology.network.path,
        topology.compute.path,
        ...topology.consumers.map((c) => c.path),
      ]
    ) shardOf.set(path, await workspaceShard(kcp, path));
  } else {
    step("Building the demo topology and applying manifests/kcp");
    topology = await waitingFor(settling, buildTopology(kcp), hint);
  }
  const on = (paths: readonly string[] | "every") =>
    sharded
      ? `${
        cyan(
          (paths === "every"
            ? "every shard"
            : paths.map((p) => shardOf.get(p) ?? "?").join(", ")).padEnd(13),
        )
      } `
      : "";
  for (
    const [path, what, where] of [
      [
        topology.depCtrl.path,
        "manifests/kcp/dep-ctrl: the DependencyRule API, its export, the components' RBAC",
        [topology.depCtrl.path],
      ],
      [
        "system:admin",
        "manifests/kcp/system-admin: the webhook may list dependents on this shard",
        "every",
      ],
      [
        "root, root:providers",
        "manifests/kcp/workspace-reader: the controller may resolve workspace paths",
        ["root", "root:providers"],
      ],
      [
        topology.network.path,
        "network provider: exports VPCs, binds dep-ctrl",
        [topology.network.path],
      ],
      [
        topology.compute.path,
        "compute provider: exports VirtualMachines, binds dep-ctrl",
        [topology.compute.path],
      ],
      ...topology.consumers.map((c) =>
        [c.path, "consumer: binds both providers", [c.path]] as const
      ),
    ] as const
  ) note(`${bold(path.padEnd(24))} ${on(where)}${what}`);
  if (sharded) {
    // Each shard with a binding to the dep-ctrl export (here the providers')
    // gets its own URL; the components list and watch through each.
    const count = new Set(
      [topology.network.path, topology.compute.path].map((p) => shardOf.get(p)),
    ).size;
    const urls = await waitingFor(
      "the dep-ctrl export's virtual workspace URLs",
      waitForDepCtrlUrls(kcp, topology, { count }),
      { quietMs: QUIET_MS },
    );
    note(
      `The dep-ctrl export's virtual workspace has one URL per shard that binds it:`,
    );
    for (const url of urls) note(`  ${dim(url)}`);
  }
  return { topology, shardOf };
}
