/**
 * The world of the `kubectl dependencies why` end-to-end steps
 * (`tests/e2e/plugin_why_steps.ts`): a tenant's RBAC, an owner a tenant
 * deletes in the foreground while a dependent it owns is held, and a
 * second consumer where nothing is held.
 *
 * @module
 */
import { bindExport } from "./apis.ts";
import type { KcpApi } from "./kcp_server.ts";
import { OWNERS_EXPORT, subnetObject } from "./owners.ts";
import { waitFor } from "./wait.ts";
import { createWorkspace } from "./workspaces.ts";

/** A ClusterRole `name` with `rules` and its ClusterRoleBinding to `user`. */
export function clusterRoleFor(
  user: string,
  role: { name: string; rules: unknown[] },
): unknown[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: role.name },
      rules: role.rules,
    },
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
