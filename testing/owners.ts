/**
 * Owners for e2e tests: a provider exporting owner types (namespaced
 * Networks and cluster-scoped Projects, `testing/fixtures/owners/`) whose
 * rules protect the network provider's Subnets while the owner a Subnet
 * (or its Namespace) names exists (`fieldRef.from: Target` or
 * `TargetNamespace`), and the objects of that world as a tenant writes
 * them. `assertStatusTruth` proves such rules as it proves the others.
 *
 * ```ts
 * import { applyObjects, kcpTest, labelPath, ownerRule } from "./mod.ts";
 *
 * kcpTest("a Network holds its Subnets", async (kcp, step) => {
 *   await step("the rule", async () => {
 *     await applyObjects(kcp, "root:providers:owners", [
 *       ownerRule("subnet-owner", {
 *         owner: "Network",
 *         fieldRef: { from: "Target", path: labelPath("example.com/owner") },
 *       }),
 *     ]);
 *   });
 * });
 * ```
 *
 * @module
 */
import { applyFiles, bindExport } from "./apis.ts";
import { waitForExportIdentity } from "./apis.ts";
import type { KcpApi } from "./kcp_server.ts";
import { dependencyRule } from "./rules.ts";
import { DEP_CTRL_EXPORT, VWC_CLAIM } from "./topology.ts";
import { waitFor } from "./wait.ts";
import { createWorkspace, type WorkspaceRef } from "./workspaces.ts";

const FIXTURES = new URL("./fixtures/owners/", import.meta.url).pathname;

/** The owners provider's APIExport (and API group). */
export const OWNERS_EXPORT = "owners.example.com";

/**
 * Creates the owners provider at `path`: its APIResourceSchemas and
 * APIExport (Networks, Projects) applied as a provider applies them, and an
 * APIBinding to the dep-ctrl export accepting its claim, so that rules can
 * be written there.
 */
export async function ownersProvider(
  kcp: KcpApi,
  path: string,
): Promise<WorkspaceRef> {
  const ws = await createWorkspace(kcp, path);
  await applyFiles(kcp, ws.path, [
    `${FIXTURES}apiresourceschema-networks.yaml`,
    `${FIXTURES}apiresourceschema-projects.yaml`,
    `${FIXTURES}apiexport.yaml`,
  ]);
  await waitForExportIdentity(kcp, ws.path, OWNERS_EXPORT);
  await bindExport(kcp, ws.path, {
    exportPath: "root:dep-ctrl",
    exportName: DEP_CTRL_EXPORT,
    acceptClaims: [VWC_CLAIM],
  });
  return ws;
}

/**
 * Binds the owners provider's export (at `options.ownersPath`) in
 * `options.consumer` and waits until Networks, Projects and Subnets are
 * served there (the consumer binds the network provider already).
 */
export async function bindOwners(
  kcp: KcpApi,
  options: { consumer: string; ownersPath: string },
): Promise<void> {
  const { consumer } = options;
  await bindExport(kcp, consumer, {
    exportPath: options.ownersPath,
    exportName: OWNERS_EXPORT,
  });
  await waitFor(
    `networks and subnets to be served in ${consumer}`,
    async () => {
      const r = await kcp.kubectl(
        ["get", "networks,projects,subnets", "-A"],
        { workspace: consumer },
      );
      return r.code === 0 || undefined;
    },
  );
}

/**
 * An ownerReference kcp's garbage collector cannot resolve (no API serves
 * its group): while an object carries one, the collector leaves it alone
 * (it neither deletes the object nor drops its other, dangling, references),
 * so only the webhook decides what happens to it.
 */
export const GC_ANCHOR = {
  apiVersion: "gc-anchor.example.com/v1",
  kind: "Anchor",
  name: "anchor",
  uid: "00000000-0000-4000-8000-00000000a0c4",
} as const;

/** The owner types, as a rule's `spec.dependent` names them. */
export const OWNER_TYPES = {
  Network: { resource: "networks" },
  Project: { resource: "projects" },
} as const;

/** The kind of an owner type: `Network` or `Project`. */
export type OwnerKind = keyof typeof OWNER_TYPES;

/** Options for {@linkcode ownerRule}. */
export interface OwnerRuleOptions {
  /** The owner type (the rule's dependent). */
  owner: OwnerKind;
  /** Where the Subnet (or its Namespace) names its owner. */
  fieldRef: { from: "Target" | "TargetNamespace"; path: string };
  /** `spec.when`, CEL over the owner. */
  when?: string;
  /** `spec.protectWhile`. */
  protectWhile?: "Exists" | "Active";
  /** The network provider's workspace. @default {"root:providers:network"} */
  networkPath?: string;
}

/**
 * An owner rule for the owners provider, protecting the network provider's
 * Subnets while the owner they name exists.
 */
export function ownerRule(
  name: string,
  options: OwnerRuleOptions,
): Record<string, unknown> {
  const { owner, fieldRef, when, protectWhile } = options;
  return dependencyRule(name, {
    dependent: {
      apiExportName: OWNERS_EXPORT,
      group: OWNERS_EXPORT,
      version: "v1alpha1",
      kind: owner,
      resource: OWNER_TYPES[owner].resource,
    },
    ...(when === undefined ? {} : { when }),
    ...(protectWhile === undefined ? {} : { protectWhile }),
    dependencies: [{
      path: options.networkPath ?? "root:providers:network",
      resource: "subnets",
      from: fieldRef.from,
      field: fieldRef.path,
    }],
  });
}

/** `.metadata.labels["<key>"]`: a rule's path to a label. */
export function labelPath(key: string): string {
  return `.metadata.labels["${key}"]`;
}

/** A Namespace, with labels if given. */
export function namespaceObject(
  name: string,
  labels?: Record<string, string>,
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, ...(labels === undefined ? {} : { labels }) },
  };
}

/** Options for {@linkcode networkObject}. */
export interface NetworkOptions {
  /** `spec.deletionProtection`, the switch rules' `when` reads; absent if not given. */
  deletionProtection?: boolean;
  /** `metadata.finalizers`. */
  finalizers?: string[];
}

/** A namespaced Network (an owner), with its `spec.deletionProtection` switch if given. */
export function networkObject(
  namespace: string,
  name: string,
  options: NetworkOptions = {},
): Record<string, unknown> {
  return {
    apiVersion: `${OWNERS_EXPORT}/v1alpha1`,
    kind: "Network",
    metadata: {
      name,
      namespace,
      ...(options.finalizers === undefined
        ? {}
        : { finalizers: options.finalizers }),
    },
    spec: options.deletionProtection === undefined
      ? {}
      : { deletionProtection: options.deletionProtection },
  };
}

/** A cluster-scoped Project (an owner). */
export function projectObject(name: string): Record<string, unknown> {
  return {
    apiVersion: `${OWNERS_EXPORT}/v1alpha1`,
    kind: "Project",
    metadata: { name },
    spec: {},
  };
}

/** An entry of `metadata.ownerReferences`. */
export interface OwnerReference {
  /** The owner's `<group>/<version>`. */
  apiVersion: string;
  /** The owner's kind. */
  kind: string;
  /** The owner's name. */
  name: string;
  /** The owner's uid. */
  uid: string;
}

/** A Subnet of the network provider, with labels and ownerReferences as given. */
export function subnetObject(
  namespace: string,
  name: string,
  metadata: {
    labels?: Record<string, string>;
    ownerReferences?: readonly OwnerReference[];
  } = {},
): Record<string, unknown> {
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: "Subnet",
    metadata: { name, namespace, ...metadata },
    spec: { cidr: "10.0.0.0/24" },
  };
}

/** An ownerReference to the Network `name` with `uid`. */
export function networkRef(name: string, uid: string): OwnerReference {
  return {
    apiVersion: `${OWNERS_EXPORT}/v1alpha1`,
    kind: "Network",
    name,
    uid,
  };
}

/**
 * The webhook's denial of a delete of `subnets/<name>` that one owner
 * holds: `owner` as `<Kind>/<name>`, `field` what names it (with `of
 * namespace ...` or `, with <when>` as the webhook adds them).
 */
export function subnetOwnedBy(
  name: string,
  by: { owner: string; field: string },
): string {
  return `cannot delete subnets/${name}: it belongs to ${by.owner} (${by.field}), which still exists`;
}
