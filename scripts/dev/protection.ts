/**
 * The walk-through's steps about protection itself: the compute provider's
 * DependencyRule (its YAML, the webhook's reads, the rule Ready), the dry
 * run that asks what blocks a delete, a delete confirmed by the object
 * being gone, and a Lock (its YAML) that keeps a VPC until it is deleted.
 *
 * @module
 */
import {
  bindExport,
  DEP_CTRL_EXPORT,
  type KcpApi,
  type KubectlResult,
  type Topology,
  VWC_CLAIM,
  waitFor,
} from "../../testing/mod.ts";
import { demoGrants, denoCommand, type Grant, runShell } from "./grant.ts";
import type { DevKcp } from "./kcp.ts";
import {
  dim,
  green,
  indent,
  kubectl,
  kubectlOk,
  note,
  red,
  secondsOf,
  showCommand,
  showFile,
  shown,
  step,
} from "./output.ts";
import { QUIET_MS, waitingFor } from "./waiting.ts";

/** The fixtures the walk-through applies, relative to the project. */
export const FIXTURES = "testing/fixtures";

/** Options for {@linkcode declareRule}. */
export interface DeclareRuleOptions {
  /** The demo topology. */
  topology: Topology;
  /** The kcp, for the `system:admin` kubeconfig of each shard. */
  dev: DevKcp;
}

/**
 * Step 5: the compute provider applies its DependencyRule (shown), the
 * webhook's reads are granted with the command an operator runs (shown and
 * run as printed), and the rule becomes Ready. Returns the grants.
 *
 * @throws {Error} If a command fails.
 */
export async function declareRule(
  kcp: KcpApi,
  options: DeclareRuleOptions,
): Promise<Grant[]> {
  const { topology, dev } = options;
  const compute = topology.compute.path;
  step(
    "The compute provider declares that a VirtualMachine depends on its VPC",
  );
  const rule = `${FIXTURES}/compute/dependencyrule-vm-vpc.yaml`;
  await showFile(rule);
  await kubectlOk(kcp, ["apply", "-f", rule], { workspace: compute });

  const grants = await demoGrants(dev);
  const kubectlBin = kcp.binaries.kubectl;
  note(
    "The webhook may read only what rules name; deno task rbac prints that:",
  );
  const print = `${denoCommand()} task rbac --kubeconfig=${
    grants[0]!.webhookKubeconfig
  }`;
  showCommand(print);
  const printed = await runShell(print, { kubectl: kubectlBin });
  if (printed.code !== 0) {
    throw new Error(`'${print}' failed: ${printed.stderr.trim()}`);
  }
  console.log(indent(printed.stdout, dim));
  note(
    dev.sharded === undefined
      ? "An operator applies it in system:admin, as system:masters:"
      : "An operator applies it in system:admin of each shard, as system:masters:",
  );
  for (const grant of grants) {
    showCommand(grant.command);
    const applied = await runShell(grant.command, { kubectl: kubectlBin });
    if (applied.code !== 0) {
      throw new Error(`'${grant.command}' failed: ${applied.stderr.trim()}`);
    }
    console.log(indent(applied.stdout));
  }

  note(
    "The rule is Ready once the webhook is installed and may read what it names:",
  );
  await kubectlOk(kcp, [
    "wait",
    "--for=condition=Ready",
    "dependencyrule/vm-dependencies",
    "--timeout=90s",
  ], {
    workspace: compute,
    during: (run) =>
      waitingFor(
        "the controller to install the webhook and report the rule Ready",
        run,
        { announce: false },
      ),
  });
  await kubectlOk(kcp, ["get", "dependencyrules"], { workspace: compute });
  note(
    "The controller installed the webhook in the network provider, where VPCs live:",
  );
  await kubectlOk(kcp, ["get", "validatingwebhookconfigurations"], {
    workspace: topology.network.path,
  });
  return grants;
}

/**
 * Step 7: `kubectl delete vpc vpc-a --dry-run=server`, asked until kcp's
 * admission calls the new webhook (typically within a second), shown with
 * the denial that names vm-1.
 */
export async function dryRunDenied(
  kcp: KcpApi,
  consumer: string,
): Promise<void> {
  const args = ["delete", "vpc", "vpc-a", "--dry-run=server"];
  const kubeconfig = shown(await kcp.kubeconfig("admin", consumer));
  showCommand(`kubectl --kubeconfig=${kubeconfig} ${args.join(" ")}`);
  const started = performance.now();
  let tries = 0;
  // kcp's admission sees a new webhook configuration once its cache has
  // it, and the webhook's new grant once RBAC has it.
  const denied = await waitingFor(
    "kcp to call the webhook for VPC deletes",
    waitFor("kcp to call the webhook for VPC deletes", async () => {
      tries++;
      const dry = await kcp.kubectl(args, { workspace: consumer });
      return /still referenced/.test(dry.stderr) ? dry : undefined;
    }, { timeoutMs: 30_000, intervalMs: 100 }),
    { quietMs: QUIET_MS },
  );
  console.log(indent(denied.stderr, red));
  if (tries > 1) {
    note(dim(
      `(asked ${tries} times: kcp's admission called the new webhook after ${
        secondsOf(performance.now() - started)
      })`,
    ));
  }
}

/** Options for {@linkcode deleteAndConfirm}. */
export interface DeleteAndConfirmOptions {
  /** The consumer workspace. */
  consumer: string;
  /** The VPC to delete. */
  vpc: string;
}

/**
 * `kubectl delete vpc <name>`, which must succeed, then `kubectl get vpc
 * <name>`, which must answer NotFound: both shown.
 *
 * @throws {Error} If the delete fails or the VPC is still there.
 */
export async function deleteAndConfirm(
  kcp: KcpApi,
  options: DeleteAndConfirmOptions,
): Promise<void> {
  const { consumer, vpc } = options;
  const allowed = await kubectl(kcp, ["delete", "vpc", vpc], {
    workspace: consumer,
  });
  if (allowed.code !== 0) {
    throw new Error(`Deleting the VPC ${vpc} failed: ${allowed.stderr.trim()}`);
  }
  console.log(indent(allowed.stdout, green));
  const gone = await kubectl(kcp, ["get", "vpc", vpc], { workspace: consumer });
  if (gone.code === 0 || !/\(NotFound\)/.test(gone.stderr)) {
    throw new Error(
      `The VPC ${vpc} is still there after its delete: ${gone.stdout}${gone.stderr}`,
    );
  }
  console.log(indent(gone.stderr));
}

/** The YAML files of the Lock step. */
export interface LockFiles {
  /** The VPC vpc-prod. */
  vpc: string;
  /** The Lock on it. */
  lock: string;
}

/** The VPC vpc-prod, which the Lock keeps. */
export const VPC_PROD_YAML = `# A consumer's production VPC.
apiVersion: network.example.com/v1alpha1
kind: VPC
metadata:
  name: vpc-prod
  namespace: default
spec:
  cidr: 10.1.0.0/16
`;

/**
 * A Lock on vpc-prod, whose type the network provider in `networkPath`
 * exports: its deletion is denied, with the reason, until the Lock is
 * deleted.
 */
export function lockYaml(networkPath: string): string {
  return `# Keeps the VPC vpc-prod until this Lock is deleted; the reason is in
# the denial. Locks come with the dep-ctrl export the consumer binds.
apiVersion: dependencies.opendefense.cloud/v1alpha1
kind: Lock
metadata:
  name: prod
  namespace: default
spec:
  target:
    apiExportRef:
      path: ${networkPath}
      name: network.example.com
    group: network.example.com
    version: v1alpha1
    resource: vpcs
    name: vpc-prod
  reason: "production VPC, ask #netops"
`;
}

/** Writes the Lock step's YAML files into `dir`. */
export async function writeLockFiles(
  dir: string,
  topology: Topology,
): Promise<LockFiles> {
  const files = { vpc: `${dir}/vpc-prod.yaml`, lock: `${dir}/lock-prod.yaml` };
  await Deno.writeTextFile(files.vpc, VPC_PROD_YAML);
  await Deno.writeTextFile(files.lock, lockYaml(topology.network.path));
  return files;
}

/** Options for {@linkcode lockWalkThrough}. */
export interface LockWalkThroughOptions {
  /** The demo topology. */
  topology: Topology;
  /** The consumer workspace. */
  consumer: string;
  /** The YAML files ({@linkcode writeLockFiles}). */
  files: LockFiles;
}

/**
 * Step 10 in one consumer: vpc-prod and its Lock applied (the Lock's YAML
 * shown), the delete denied with the reason, the Lock deleted, the VPC
 * deleted and gone.
 *
 * @throws {Error} If the locked VPC is deleted, or a command fails.
 */
export async function lockWalkThrough(
  kcp: KcpApi,
  options: LockWalkThroughOptions,
): Promise<void> {
  const { topology, consumer, files } = options;
  const workspace = consumer;
  note(
    `The consumer binds the dep-ctrl export (${topology.depCtrl.path}), which serves Locks.`,
  );
  await waitingFor(
    "the consumer's binding to the dep-ctrl export",
    bindExport(kcp, consumer, {
      exportPath: topology.depCtrl.path,
      exportName: DEP_CTRL_EXPORT,
      acceptClaims: [VWC_CLAIM],
    }),
    { quietMs: QUIET_MS },
  );
  await kubectlOk(kcp, ["apply", "-f", shown(files.vpc)], { workspace });
  await showFile(files.lock);
  await kubectlOk(kcp, ["apply", "-f", shown(files.lock)], { workspace });
  await untilDryRun(kcp, {
    workspace,
    what: ["vpc", "vpc-prod"],
    answered: (dry) => /locked by Lock/.test(dry.stderr),
    waiting: "the webhook to enforce the Lock",
    goal: "the Lock to be enforced",
  });
  const locked = await kubectl(kcp, ["delete", "vpc", "vpc-prod"], {
    workspace,
  });
  if (locked.code === 0) {
    throw new Error(`The locked VPC was deleted: ${locked.stdout}`);
  }
  console.log(indent(locked.stderr, red));
  await kubectlOk(kcp, ["get", "locks"], { workspace });
  await kubectlOk(kcp, ["delete", "lock", "prod"], { workspace });
  await untilDryRun(kcp, {
    workspace,
    what: ["vpc", "vpc-prod"],
    answered: (dry) => dry.code === 0,
    waiting: "the webhook to see the Lock deleted",
    goal: "the VPC to be deletable once unlocked",
  });
  await deleteAndConfirm(kcp, { consumer, vpc: "vpc-prod" });
}

/** Options for {@linkcode untilDryRun}. */
export interface UntilDryRunOptions {
  /** The workspace. */
  workspace: string;
  /** What to delete, as kubectl's arguments (`["vpc", "vpc-prod"]`). */
  what: readonly string[];
  /** Whether the dry run's answer is the one waited for. */
  answered: (dry: KubectlResult) => boolean;
  /** What the walk-through says it waits for. */
  waiting: string;
  /** What the wait is for, in its timeout's message. */
  goal: string;
}

/**
 * Asks `kubectl delete <what> --dry-run=server` until its answer is the
 * one waited for (kcp's admission and the webhook see a change within a
 * second or so; at most 60 s), saying meanwhile what it waits for.
 *
 * @throws {Error} When the answer does not come in time.
 */
export async function untilDryRun(
  kcp: KcpApi,
  options: UntilDryRunOptions,
): Promise<void> {
  const { workspace, answered } = options;
  const args = ["delete", ...options.what, "--dry-run=server"];
  await waitingFor(
    options.waiting,
    waitFor(
      options.goal,
      async () => answered(await kcp.kubectl(args, { workspace })) || undefined,
      { timeoutMs: 60_000, intervalMs: 200 },
    ),
    { quietMs: QUIET_MS },
  );
}
