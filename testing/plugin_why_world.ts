/**
 * The world of the `kubectl dependencies why` end-to-end steps
 * (`tests/e2e/plugin_why_steps.ts`): the providers, an owners provider and
 * two consumers under a prefix, the tenant's kubeconfig once written and
 * its RBAC, the namespaces and names the steps use, `why` run as a tenant
 * runs it and its output as an assertion's message, the JSON the steps
 * read, finalizers that keep objects while their namespace goes, an owner
 * a tenant deletes in the foreground while a dependent it owns is held,
 * and a second consumer where nothing is held.
 *
 * ```ts ignore
 * import { componentTest, worldPaths } from "./mod.ts";
 * import { pluginWhyWorld, runWhy, WHY_NS } from "./plugin_why_world.ts";
 *
 * componentTest("why", {}, async (world, step) => {
 *   const w = pluginWhyWorld(worldPaths("root:why"));
 *   await step("why", async () => {
 *     w.tenant = await world.kcp.kubeconfig("user", w.c1);
 *     console.log((await runWhy(w.tenant, ["vpc/core", "-n", WHY_NS])).stdout);
 *   });
 * });
 * ```
 *
 * @module
 */
import { bindExport } from "./apis.ts";
import type { WorldPaths } from "./component_suite.ts";
import type { KcpApi } from "./kcp_server.ts";
import { OWNERS_EXPORT, subnetObject } from "./owners.ts";
import { runPlugin } from "./plugin.ts";
import type { CommandResult } from "./process.ts";
import { waitFor } from "./wait.ts";
import { clusterRole } from "./webhook_world.ts";
import { createWorkspace } from "./workspaces.ts";

/** The tenant's namespace. */
export const WHY_NS = "team-a";
/** The namespace a tenant deletes in the namespace step. */
export const GONE_NS = "team-gone";
/** The namespace of a Subnet whose owner is deleted in the foreground. */
export const FOREGROUND_NS = "team-fg";
/** The cluster-scoped owner deleted in the foreground. */
export const FOREGROUND_PROJECT = "p-fg";
/** The label through which a VPC refers to a VM (the cycle's rule). */
export const VM_LABEL = "example.com/vm";
/** The reason of the tenant's Locks. */
export const WHY_REASON = "the VM of record, ask #compute";
/** What a cause's line says of when its blocker began to hold, as a pattern. */
export const SINCE_PATTERN =
  "; since \\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z \\(\\d+[smhd] ago\\)";
/** An RFC 3339 time as kube writes a creationTimestamp. */
export const KUBE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** What the why steps act on and keep, from {@linkcode pluginWhyWorld}. */
export interface PluginWhyWorld {
  /** The network provider. */
  readonly network: string;
  /** The compute provider. */
  readonly compute: string;
  /** The owners provider, at `<prefix>:providers:owners`. */
  readonly owners: string;
  /** The tenant's consumer. */
  readonly c1: string;
  /** A consumer where nothing is held. */
  readonly c2: string;
  /** The tenant's kubeconfig for c1, once written. */
  tenant: string;
}

/** The why world under `paths`: no kubeconfig yet. */
export function pluginWhyWorld(paths: WorldPaths): PluginWhyWorld {
  return {
    network: paths.network,
    compute: paths.compute,
    owners: `${paths.prefix}:providers:owners`,
    c1: paths.consumer("c1"),
    c2: paths.consumer("c2"),
    tenant: "",
  };
}

/** Runs `kubectl dependencies why <args>` through kubectl with `kubeconfig`. */
export function runWhy(
  kubeconfig: string,
  args: string[],
): Promise<CommandResult> {
  return runPlugin(["why", ...args], { kubeconfig });
}

/** `result` as the assertion message: what the plugin printed. */
export function shown(result: CommandResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}--- stderr\n${result.stderr}`;
}

/** The JSON of `why -o json`, as far as the steps read it. */
export interface WhyJson {
  /** The object asked about. */
  object: { kind: string; namespace: string; name: string };
  /** What became of the question. */
  state: string;
  /** Whether a delete is denied. */
  held?: boolean;
  /** Why it could not be asked. */
  error?: string;
  /** What holds it. */
  causes?: Record<string, unknown>[];
  /** With `--recursive`: what holds each blocker. */
  children?: WhyJson[];
}

/** The JSON of `why namespace/<ns> -o json`, as far as the steps read it. */
export interface ScopeJson {
  /** The namespace or workspace. */
  scope: { kind: string; name: string; deletionTimestamp?: string };
  /** `held`, `free` or `unknown`. */
  state: string;
  /** The objects named. */
  objects: {
    object: { namespace: string; name: string };
    state: string;
    causes?: Record<string, unknown>[];
    deletingOwners?: { object: { name: string } }[];
  }[];
}

/** `manifest` with a finalizer no controller removes: it stays while being deleted. */
export function withFinalizer(
  manifest: Record<string, unknown>,
): Record<string, unknown> {
  return {
    ...manifest,
    metadata: {
      ...(manifest.metadata as Record<string, unknown>),
      finalizers: ["example.com/keep"],
    },
  };
}

/** A ClusterRole `name` with `rules` and its ClusterRoleBinding to `user`. */
export function clusterRoleFor(
  user: string,
  role: { name: string; rules: unknown[] },
): unknown[] {
  return [
    clusterRole(role.name, role.rules),
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: role.name },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: role.name,
      },
      subjects: [{
        apiGroup: "rbac.authorization.k8s.io",
        kind: "User",
        name: user,
      }],
    },
  ];
}

/** A tenant who may read VPCs, Subnets, VMs and Networks, and delete all but Networks. */
export function tenantRbac(user: string): unknown[] {
  return clusterRoleFor(user, {
    name: "why-tenant",
    rules: [
      { nonResourceURLs: ["/"], verbs: ["access"] },
      {
        apiGroups: ["network.example.com", "compute.example.com"],
        resources: ["vpcs", "subnets", "virtualmachines"],
        verbs: ["get", "list", "delete"],
      },
      {
        apiGroups: ["owners.example.com"],
        resources: ["networks"],
        verbs: ["get", "list"],
      },
    ],
  });
}

/** The tenant may read and delete namespaces. */
export function namespaceRbac(user: string): unknown[] {
  return clusterRoleFor(user, {
    name: "why-tenant-namespaces",
    rules: [{
      apiGroups: [""],
      resources: ["namespaces"],
      verbs: ["get", "list", "delete"],
    }],
  });
}

/** The tenant may read Projects: `why` reads an object's owners by name. */
export function projectReadRbac(user: string): unknown[] {
  return clusterRoleFor(user, {
    name: "why-tenant-owner-reads",
    rules: [{
      apiGroups: [OWNERS_EXPORT],
      resources: ["projects"],
      verbs: ["get"],
    }],
  });
}

/**
 * A Subnet owned by the Project `project` (its uid as kcp gave it), with
 * `blockOwnerDeletion`: the Project's foreground deletion waits for it.
 */
export function subnetOwnedByProject(
  namespace: string,
  name: string,
  project: { name: string; uid: string },
): Record<string, unknown> {
  const subnet = subnetObject(namespace, name);
  return {
    ...subnet,
    metadata: {
      ...(subnet.metadata as Record<string, unknown>),
      ownerReferences: [{
        apiVersion: `${OWNERS_EXPORT}/v1alpha1`,
        kind: "Project",
        name: project.name,
        uid: project.uid,
        blockOwnerDeletion: true,
      }],
    },
  };
}

/**
 * A consumer workspace at `path` bound to the network provider at
 * `networkPath` alone, once VPCs are served there.
 */
export async function networkConsumer(
  kcp: KcpApi,
  options: { path: string; networkPath: string },
): Promise<void> {
  const { path } = options;
  await createWorkspace(kcp, path);
  await bindExport(kcp, path, {
    exportPath: options.networkPath,
    exportName: "network.example.com",
  });
  await waitFor(`vpcs to be served in ${path}`, async () => {
    const r = await kcp.kubectl(["get", "vpcs", "-A"], { workspace: path });
    return r.code === 0 || undefined;
  });
}
