/**
 * APIs across workspaces for tests: apply the YAML files users apply, wait
 * for an APIExport's identity, bind an export and wait for `Bound`, and read
 * the export's virtual-workspace URLs from its endpoint slice.
 *
 * @module
 */
import type { IdentityName, KcpApi } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";

/** A permission claim as an APIBinding (v1alpha2) accepts it. */
export interface PermissionClaim {
  /** API group, `""` for core. */
  group: string;
  /** Resource, plural. */
  resource: string;
  /** Verbs granted. */
  verbs: readonly string[];
  /** The claimed resource's export identity; empty for built-in types. */
  identityHash?: string;
}

/** Options for {@linkcode bindExport}. */
export interface BindOptions {
  /** Workspace path of the APIExport. */
  exportPath: string;
  /** Name of the APIExport. */
  exportName: string;
  /** Name of the APIBinding. @default the export name */
  name?: string;
  /** Claims to accept (all of them, with `matchAll`). */
  acceptClaims?: readonly PermissionClaim[];
  /** Who binds. @default {"admin"} */
  identity?: IdentityName;
  /** How long binding may take. @default {60_000} */
  timeoutMs?: number;
}

interface Phased {
  status?: {
    phase?: string;
    identityHash?: string;
    endpoints?: { url: string }[];
  };
}

/**
 * `kubectl apply -f <files>` in a workspace: exactly what a user does with
 * the project's YAML. Returns kubectl's output.
 *
 * @throws {Error} If kubectl fails.
 */
export function applyFiles(
  kcp: KcpApi,
  workspace: string,
  files: readonly string[],
  options: { identity?: IdentityName } = {},
): Promise<string> {
  return kcp.kubectlOk(["apply", ...files.flatMap((f) => ["-f", f])], {
    workspace,
    identity: options.identity ?? "admin",
  });
}

/**
 * `kubectl apply` of objects given as values (sent as one `List` on stdin),
 * as a user does with a manifest.
 *
 * @throws {Error} If kubectl fails.
 */
export function applyObjects(
  kcp: KcpApi,
  workspace: string,
  objects: readonly unknown[],
): Promise<string> {
  return kcp.kubectlOk(["apply", "-f", "-"], {
    workspace,
    stdin: JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
  });
}

/** Waits until an APIExport has its `status.identityHash` and returns it. */
export function waitForExportIdentity(
  kcp: KcpApi,
  workspace: string,
  exportName: string,
): Promise<string> {
  return waitFor(`APIExport ${workspace}/${exportName} identity`, async () => {
    const exp = await kcp.request<Phased>(
      "GET",
      `/clusters/${workspace}/apis/apis.kcp.io/v1alpha2/apiexports/${exportName}`,
    );
    return exp.status?.identityHash || undefined;
  });
}

/**
 * Creates an APIBinding to an export in `workspace` (retrying while the
 * export is still settling) and waits until it is `Bound`.
 */
export async function bindExport(
  kcp: KcpApi,
  workspace: string,
  options: BindOptions,
): Promise<void> {
  const name = options.name ?? options.exportName;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const path = `/clusters/${workspace}/apis/apis.kcp.io/v1alpha2/apibindings`;
  const body = {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIBinding",
    metadata: { name },
    spec: {
      reference: {
        export: { path: options.exportPath, name: options.exportName },
      },
      permissionClaims: (options.acceptClaims ?? []).map((claim) => ({
        group: claim.group,
        resource: claim.resource,
        verbs: claim.verbs,
        ...(claim.identityHash ? { identityHash: claim.identityHash } : {}),
        selector: { matchAll: true },
        state: "Accepted",
      })),
    },
  };
  const identity = options.identity ?? "admin";
  await waitFor(`APIBinding ${workspace}/${name} to be created`, async () => {
    await kcp.request("POST", path, { body, identity }).catch((error) => {
      if (error?.status !== 409) throw error;
    });
    return true;
  }, { timeoutMs, intervalMs: 250 });
  await waitFor(`APIBinding ${workspace}/${name} to be Bound`, async () => {
    const binding = await kcp.request<Phased>("GET", `${path}/${name}`);
    return binding.status?.phase === "Bound" || undefined;
  }, { timeoutMs, intervalMs: 200 });
}

/**
 * Waits until the APIExportEndpointSlice `sliceName` (kcp creates one named
 * after each export) lists at least one URL, and returns the URLs.
 */
export function waitForEndpointUrls(
  kcp: KcpApi,
  workspace: string,
  sliceName: string,
): Promise<string[]> {
  return waitFor(`endpoint URLs of ${workspace}/${sliceName}`, async () => {
    const slice = await kcp.request<Phased>(
      "GET",
      `/clusters/${workspace}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/${sliceName}`,
    );
    const urls = (slice.status?.endpoints ?? []).map((e) => e.url);
    return urls.length > 0 ? urls : undefined;
  });
}
