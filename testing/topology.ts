/**
 * The system's test topology, built the way operators and users build it:
 * a dep-ctrl workspace with `manifests/kcp/dep-ctrl` applied, a network
 * provider exporting VPCs and Subnets and a compute provider exporting
 * VirtualMachines and cluster-scoped VPCAttachments (both bound to the
 * dep-ctrl export, accepting its claim), consumers bound to both, the
 * per-shard `manifests/kcp/system-admin` RBAC, and
 * `manifests/kcp/workspace-reader` in root and every parent of a provider.
 *
 * @module
 */
import { relative } from "node:path";
import {
  applyFiles,
  bindExport,
  waitForEndpointUrls,
  waitForExportIdentity,
} from "./apis.ts";
import type { KcpApi } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";
import { createWorkspace, type WorkspaceRef } from "./workspaces.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const FIXTURES = `${ROOT}testing/fixtures/`;

/** Where the project's manifests live. */
export const MANIFESTS = `${ROOT}manifests/`;

/** The dep-ctrl APIExport's name. */
export const DEP_CTRL_EXPORT = "dependencies.opendefense.cloud";

/** The VWC claim providers accept when binding the dep-ctrl export. */
export const VWC_CLAIM = {
  group: "admissionregistration.k8s.io",
  resource: "validatingwebhookconfigurations",
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
} as const;

/** The workspaces of the topology. */
export interface Topology {
  /** `root:dep-ctrl`. */
  depCtrl: WorkspaceRef;
  /** The network provider (VPCs). */
  network: WorkspaceRef;
  /** The compute provider (VirtualMachines, and the rules). */
  compute: WorkspaceRef;
  /** Consumers bound to both providers. */
  consumers: WorkspaceRef[];
  /** The dep-ctrl export's virtual-workspace URLs. */
  endpointUrls: string[];
}

/** Options for {@linkcode buildTopology}. */
export interface TopologyOptions {
  /** Path of the network provider. @default {"root:providers:network"} */
  networkPath?: string;
  /** Path of the compute provider. @default {"root:providers:compute"} */
  computePath?: string;
  /** Consumer paths. @default {["root:consumers:c1", "root:consumers:c2"]} */
  consumerPaths?: string[];
}

/** Builds the topology and waits until every binding is Bound and every type served. */
export async function buildTopology(
  kcp: KcpApi,
  options: TopologyOptions = {},
): Promise<Topology> {
  const {
    networkPath = "root:providers:network",
    computePath = "root:providers:compute",
    consumerPaths = ["root:consumers:c1", "root:consumers:c2"],
  } = options;
  const depCtrl = await createWorkspace(kcp, "root:dep-ctrl");
  await kcp.kubectlOk(["apply", "-k", `${MANIFESTS}kcp/dep-ctrl`], {
    workspace: depCtrl.path,
  });
  await kcp.kubectlOk(["apply", "-k", `${MANIFESTS}kcp/system-admin`], {
    workspace: "system:admin",
    identity: "shardAdmin",
  });
  await waitForExportIdentity(kcp, depCtrl.path, DEP_CTRL_EXPORT);

  // The consumers' workspaces are made while the providers are, and each
  // consumer binds both providers at once: kcp establishes an API a binding
  // brings 5 s after it is installed (it runs its CRD handler as one of
  // three API servers), and binding after binding adds up.
  const [[network, compute], consumers] = await Promise.all([
    Promise.all([
      networkProvider(kcp, networkPath),
      provider(kcp, computePath, "compute.example.com", [
        `${FIXTURES}compute/apiresourceschema-virtualmachines.yaml`,
        `${FIXTURES}compute/apiresourceschema-vpcattachments.yaml`,
        `${FIXTURES}compute/apiexport.yaml`,
      ]),
    ]),
    Promise.all(consumerPaths.map((path) => createWorkspace(kcp, path))),
  ]);
  // The controller resolves rule paths parent by parent: it reads workspaces
  // in root and in every parent of a provider workspace.
  for (const parent of parentsOf([networkPath, computePath])) {
    await kcp.kubectlOk(["apply", "-k", `${MANIFESTS}kcp/workspace-reader`], {
      workspace: parent,
    });
  }
  const providers = [
    { exportPath: network.path, exportName: "network.example.com" },
    { exportPath: compute.path, exportName: "compute.example.com" },
  ];
  await Promise.all(consumers.map(async ({ path }) => {
    await Promise.all(providers.map((bind) => bindExport(kcp, path, bind)));
    for (const resource of ["vpcs", "virtualmachines"]) {
      await waitFor(`${resource} to be served in ${path}`, async () => {
        const r = await kcp.kubectl(["get", resource, "-A"], {
          workspace: path,
        });
        return r.code === 0 || undefined;
      });
    }
  }));
  const endpointUrls = await waitForEndpointUrls(
    kcp,
    depCtrl.path,
    DEP_CTRL_EXPORT,
  );
  return { depCtrl, network, compute, consumers, endpointUrls };
}

/** Every proper ancestor of the paths (`root`, `root:org`, ...), parents first. */
export function parentsOf(paths: readonly string[]): string[] {
  const parents = new Set<string>();
  for (const path of paths) {
    const segments = path.split(":");
    for (let i = 1; i < segments.length; i++) {
      parents.add(segments.slice(0, i).join(":"));
    }
  }
  return [...parents].sort((a, b) => a.split(":").length - b.split(":").length);
}

/**
 * Creates a network provider workspace at `path` (VPCs and Subnets), bound
 * to the dep-ctrl export with its claim accepted, as the topology's is.
 */
export function networkProvider(
  kcp: KcpApi,
  path: string,
): Promise<WorkspaceRef> {
  return provider(kcp, path, "network.example.com", [
    `${FIXTURES}network/apiresourceschema-vpcs.yaml`,
    `${FIXTURES}network/apiresourceschema-subnets.yaml`,
    `${FIXTURES}network/apiexport.yaml`,
  ]);
}

async function provider(
  kcp: KcpApi,
  path: string,
  exportName: string,
  files: string[],
): Promise<WorkspaceRef> {
  const ws = await createWorkspace(kcp, path);
  await applyFiles(kcp, ws.path, files);
  await waitForExportIdentity(kcp, ws.path, exportName);
  await bindExport(kcp, ws.path, {
    exportPath: "root:dep-ctrl",
    exportName: DEP_CTRL_EXPORT,
    acceptClaims: [VWC_CLAIM],
  });
  return ws;
}

/** Options for {@linkcode installWebhookConfig}. */
export interface WebhookConfigOptions {
  /** `https://.../validate`. */
  url: string;
  /** PEM CA of the webhook's serving certificate. */
  caPem: string;
  /** Protected group/version/resources. */
  resources: { group: string; version: string; resource: string }[];
}

/**
 * Installs the ValidatingWebhookConfiguration `dependency-controller` in a
 * provider workspace as kcp-admin (what the controller does through the
 * virtual workspace).
 */
export async function installWebhookConfig(
  kcp: KcpApi,
  workspace: string,
  options: WebhookConfigOptions,
): Promise<void> {
  const config = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: "dependency-controller" },
    webhooks: [{
      name: "dependency-controller.dependencies.opendefense.cloud",
      clientConfig: { url: options.url, caBundle: btoa(options.caPem) },
      rules: options.resources.map((r) => ({
        operations: ["DELETE"],
        apiGroups: [r.group],
        apiVersions: [r.version],
        resources: [r.resource],
        scope: "*",
      })),
      failurePolicy: "Fail",
      sideEffects: "None",
      admissionReviewVersions: ["v1"],
      timeoutSeconds: 10,
    }],
  };
  await kcp.kubectlOk(["apply", "-f", "-"], {
    workspace,
    stdin: JSON.stringify(config),
  });
}

/** One grant of an operator's `manifests/kcp/system-admin` overlay. */
export interface ReadGrant {
  /** API group. */
  group: string;
  /** Resources of the group. */
  resources: string[];
  /** `["get"]` for protected types, `["get", "list"]` for dependents. */
  verbs: string[];
}

/**
 * Grants the webhook's reads as an operator with a fixed list of provider
 * groups does: an overlay of `manifests/kcp/system-admin` that adds a
 * ClusterRole of its own with the label kcp aggregates into
 * `dependency-webhook:dependents-reader` (what its kustomization.yaml
 * shows), applied in `system:admin`.
 */
export async function applySystemAdminOverlay(
  kcp: KcpApi,
  grants: readonly ReadGrant[],
): Promise<void> {
  const dir = await Deno.makeTempDir({ dir: kcp.rootDir });
  try {
    const role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: {
        name: "dependency-webhook:reads:overlay",
        labels: {
          "dependencies.opendefense.cloud/aggregate-to-dependents-reader":
            "true",
        },
      },
      rules: grants.map((g) => ({
        apiGroups: [g.group],
        resources: g.resources,
        verbs: g.verbs,
      })),
    };
    await Deno.writeTextFile(`${dir}/reads.yaml`, JSON.stringify(role));
    await Deno.writeTextFile(
      `${dir}/kustomization.yaml`,
      [
        "resources:",
        // kustomize takes local bases by relative path.
        `  - ${relative(dir, `${MANIFESTS}kcp/system-admin`)}`,
        "  - reads.yaml",
        "",
      ].join("\n"),
    );
    await kcp.kubectlOk(["apply", "-k", dir], {
      workspace: "system:admin",
      identity: "shardAdmin",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * What the docs have an admin do before a tenant writes Locks: apply
 * `manifests/kcp/lock-editor` (the `dependencies:lock-editor` and
 * `dependencies:lock-viewer` ClusterRoles) in `workspace`, and let the
 * ordinary user (`user-1`) into it (`system:kcp:workspace:access`). Which
 * namespaces the user may lock in is each test's own RoleBindings.
 */
export async function applyLockEditor(
  kcp: KcpApi,
  workspace: string,
): Promise<void> {
  await kcp.kubectlOk(["apply", "-k", `${MANIFESTS}kcp/lock-editor`], {
    workspace,
  });
  await kcp.kubectlOk([
    "create",
    "clusterrolebinding",
    "user-1-access",
    "--clusterrole=system:kcp:workspace:access",
    "--user=user-1",
  ], { workspace });
}
