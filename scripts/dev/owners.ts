/**
 * The walk-through's owner step: the network provider declares that a
 * Subnet belongs to the VPC its label names, protected while that VPC
 * exists with its deletion protection switched on (`fieldRef.from:
 * Target`, `when`, `protectWhile: Active`); a consumer's delete of such a
 * Subnet is denied, naming the VPC and the label, and goes through once the
 * switch is turned off.
 *
 * @module
 */
import type { KcpApi, Topology } from "../../testing/mod.ts";
import { type Grant, runShell } from "./grant.ts";
import { untilDryRun } from "./protection.ts";
import {
  green,
  indent,
  kubectl,
  kubectlOk,
  note,
  red,
  showCommand,
  showFile,
  shown,
} from "./output.ts";
import { waitingFor } from "./waiting.ts";

/** The label a Subnet names its VPC with. */
export const OWNER_LABEL = "network.example.com/vpc";

/**
 * The network provider's owner rule: a Subnet belongs to the VPC its label
 * names while that VPC has `spec.deletionProtection: true` and is not being
 * deleted. `networkPath` is the provider's workspace path.
 */
export function ownerRuleYaml(networkPath: string): string {
  return `# A Subnet belongs to the VPC its label names: it cannot be deleted while
# that VPC exists with its deletion protection on. Deleting the VPC itself
# (it has a deletionTimestamp) releases its Subnets.
apiVersion: dependencies.opendefense.cloud/v1alpha1
kind: DependencyRule
metadata:
  name: subnet-belongs-to-vpc
spec:
  dependent:
    apiExportName: network.example.com
    group: network.example.com
    version: v1alpha1
    kind: VPC
    resource: vpcs
  when: object.spec.deletionProtection == true
  protectWhile: Active
  dependencies:
    - apiExportRef:
        path: ${networkPath}
        name: network.example.com
      group: network.example.com
      version: v1alpha1
      resource: subnets
      fieldRef:
        from: Target
        path: .metadata.labels["${OWNER_LABEL}"]
`;
}

/** A consumer's VPC with its deletion protection on, and a Subnet of it. */
export const OWNED_SUBNET_YAML =
  `# A VPC with its deletion protection on, and a Subnet that names it.
apiVersion: network.example.com/v1alpha1
kind: VPC
metadata:
  name: vpc-net
  namespace: default
spec:
  cidr: 10.2.0.0/16
  deletionProtection: true
---
apiVersion: network.example.com/v1alpha1
kind: Subnet
metadata:
  name: subnet-1
  namespace: default
  labels:
    ${OWNER_LABEL}: vpc-net
spec:
  cidr: 10.2.1.0/24
`;

/** The owner step's YAML files. */
export interface OwnerFiles {
  /** The rule ({@linkcode ownerRuleYaml}). */
  rule: string;
  /** The VPC and its Subnet ({@linkcode OWNED_SUBNET_YAML}). */
  objects: string;
}

/** Writes the owner step's YAML files into `dir`. */
export async function writeOwnerFiles(
  dir: string,
  topology: Topology,
): Promise<OwnerFiles> {
  const files = {
    rule: `${dir}/rule-subnet-belongs-to-vpc.yaml`,
    objects: `${dir}/vpc-net.yaml`,
  };
  await Deno.writeTextFile(files.rule, ownerRuleYaml(topology.network.path));
  await Deno.writeTextFile(files.objects, OWNED_SUBNET_YAML);
  return files;
}

/** Options for {@linkcode declareOwnerRule}. */
export interface DeclareOwnerRuleOptions {
  /** The demo topology. */
  topology: Topology;
  /** The grant commands of the first rule, run again for this one's types. */
  grants: readonly Grant[];
  /** The YAML files ({@linkcode writeOwnerFiles}). */
  files: OwnerFiles;
}

/**
 * The network provider applies the owner rule (shown), the webhook's reads
 * are granted again (it now reads Subnets' metadata), and the rule becomes
 * Ready.
 *
 * @throws {Error} If a command fails.
 */
export async function declareOwnerRule(
  kcp: KcpApi,
  options: DeclareOwnerRuleOptions,
): Promise<void> {
  const { topology, grants, files } = options;
  const network = topology.network.path;
  await showFile(files.rule);
  await kubectlOk(kcp, ["apply", "-f", shown(files.rule)], {
    workspace: network,
  });
  note("The webhook now reads Subnets too: the operator grants it again.");
  for (const grant of grants) {
    showCommand(grant.command);
    const applied = await runShell(grant.command, {
      kubectl: kcp.binaries.kubectl,
    });
    if (applied.code !== 0) {
      throw new Error(`'${grant.command}' failed: ${applied.stderr.trim()}`);
    }
    console.log(indent(applied.stdout));
  }
  await kubectlOk(kcp, [
    "wait",
    "--for=condition=Ready",
    "dependencyrule/subnet-belongs-to-vpc",
    "--timeout=90s",
  ], {
    workspace: network,
    during: (run) =>
      waitingFor("the controller to report the owner rule Ready", run, {
        announce: false,
      }),
  });
  await kubectlOk(kcp, ["get", "dependencyrules"], { workspace: network });
}

/**
 * In one consumer: the VPC and its Subnet applied (shown), the Subnet's
 * delete denied naming the VPC and the label, the switch turned off, and
 * the delete let through.
 *
 * @throws {Error} If the protected Subnet is deleted, or a command fails.
 */
export async function ownerWalkThrough(
  kcp: KcpApi,
  options: { consumer: string; files: OwnerFiles },
): Promise<void> {
  const workspace = options.consumer;
  await showFile(options.files.objects);
  await kubectlOk(kcp, ["apply", "-f", shown(options.files.objects)], {
    workspace,
  });
  await untilDryRun(kcp, {
    workspace,
    what: ["subnet", "subnet-1"],
    answered: (dry) => /belongs to/.test(dry.stderr),
    waiting: "kcp to call the webhook for Subnet deletes",
    goal: "the owner rule to be enforced",
  });
  const denied = await kubectl(kcp, ["delete", "subnet", "subnet-1"], {
    workspace,
  });
  if (denied.code === 0) {
    throw new Error(`The protected Subnet was deleted: ${denied.stdout}`);
  }
  console.log(indent(denied.stderr, red));
  note("Turning the VPC's deletion protection off releases its Subnets:");
  await kubectlOk(kcp, [
    "patch",
    "vpc",
    "vpc-net",
    "--type=merge",
    "-p",
    '{"spec":{"deletionProtection":false}}',
  ], { workspace });
  const allowed = await kubectl(kcp, ["delete", "subnet", "subnet-1"], {
    workspace,
  });
  if (allowed.code !== 0) {
    throw new Error(
      `Deleting the released Subnet failed: ${allowed.stderr.trim()}`,
    );
  }
  console.log(indent(allowed.stdout, green));
}
