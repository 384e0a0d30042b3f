/**
 * Nested kcp workspaces for tests: create a path such as
 * `root:providers:network` parent by parent and wait until it is Ready and
 * reachable both by path and by logical cluster name.
 *
 * @module
 */
import { splitWorkspacePath } from "../lib/kcp/mod.ts";
import { type KcpApi, KcpRequestError } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";

/** A workspace the harness created. */
export interface WorkspaceRef {
  /** Its path, e.g. `root:providers:network`. */
  path: string;
  /** Its logical cluster name (`spec.cluster`). */
  cluster: string;
}

/**
 * The label kcp puts on every Shard object, holding the shard's name
 * (`--shard-name`): what {@linkcode CreateWorkspaceOptions.shard} selects on.
 */
export const SHARD_NAME_LABEL = "name";

/** Options for {@linkcode createWorkspace}. */
export interface CreateWorkspaceOptions {
  /** `spec.type` of the leaf; ancestors and, by default, the leaf take their parent's default type. */
  type?: { name: string; path: string };
  /**
   * The shard the leaf is placed on, by name (`spec.location.selector` on
   * the Shard's {@linkcode SHARD_NAME_LABEL} label); ancestors, and the leaf
   * without it, go where kcp schedules them. An existing leaf is reused
   * wherever it is.
   */
  shard?: string;
  /** How long each workspace may take to become Ready. @default {90_000} */
  timeoutMs?: number;
}

interface Workspace {
  spec?: { cluster?: string };
  status?: { phase?: string };
}

const WORKSPACES = "apis/tenancy.kcp.io/v1alpha1/workspaces";
/** A workspace's own LogicalCluster, after `/clusters/<cluster>/`. */
export const THIS_CLUSTER = "apis/core.kcp.io/v1alpha1/logicalclusters/cluster";

/**
 * Creates every missing workspace on `path` (which starts with `root:`),
 * waits for each to be Ready and reachable by path and by logical cluster
 * name, and returns the leaf. Existing workspaces are reused.
 *
 * @throws {RangeError} If `path` is not a `root:`-prefixed workspace path.
 */
export async function createWorkspace(
  kcp: KcpApi,
  path: string,
  options: CreateWorkspaceOptions = {},
): Promise<WorkspaceRef> {
  const segments = path.split(":");
  if (segments[0] !== "root" || segments.length < 2) {
    throw new RangeError(
      `Cannot create workspace '${path}': the path must start with 'root:'`,
    );
  }
  let ref: WorkspaceRef = { path: "root", cluster: "root" };
  for (let i = 1; i < segments.length; i++) {
    const leaf = i === segments.length - 1;
    const type = leaf ? options.type : undefined;
    const shard = leaf ? options.shard : undefined;
    ref = await ensureChild(kcp, ref.path, segments[i] as string, {
      ...(type === undefined ? {} : { type }),
      ...(shard === undefined ? {} : { shard }),
      timeoutMs: options.timeoutMs ?? 90_000,
    });
  }
  return ref;
}

/** The logical cluster name of an existing workspace path, read from its parent. */
export async function workspaceCluster(
  kcp: KcpApi,
  path: string,
): Promise<string> {
  const split = splitWorkspacePath(path);
  if (split === undefined) return "root";
  const { parent, name } = split;
  const ws = await kcp.request<Workspace>(
    "GET",
    `/clusters/${parent}/${WORKSPACES}/${name}`,
  );
  const cluster = ws.spec?.cluster;
  if (cluster === undefined) {
    throw new Error(`Workspace ${path} has no spec.cluster yet`);
  }
  return cluster;
}

async function ensureChild(
  kcp: KcpApi,
  parent: string,
  name: string,
  options: {
    type?: { name: string; path: string };
    shard?: string;
    timeoutMs: number;
  },
): Promise<WorkspaceRef> {
  const path = `${parent}:${name}`;
  const body = {
    apiVersion: "tenancy.kcp.io/v1alpha1",
    kind: "Workspace",
    metadata: { name },
    spec: {
      ...(options.type === undefined ? {} : { type: options.type }),
      ...(options.shard === undefined ? {} : {
        location: {
          selector: { matchLabels: { [SHARD_NAME_LABEL]: options.shard } },
        },
      }),
    },
  };
  // Creation can fail briefly while kcp's admission caches catch up with new
  // WorkspaceTypes; AlreadyExists means an earlier step or test made it.
  await waitFor(`workspace ${path} to be created`, async () => {
    try {
      await kcp.request("POST", `/clusters/${parent}/${WORKSPACES}`, { body });
    } catch (error) {
      if (!(error instanceof KcpRequestError && error.status === 409)) {
        throw error;
      }
    }
    return true;
  }, { timeoutMs: options.timeoutMs, intervalMs: 250 });
  const cluster = await waitFor(`workspace ${path} to be Ready`, async () => {
    const ws = await kcp.request<Workspace>(
      "GET",
      `/clusters/${parent}/${WORKSPACES}/${name}`,
    );
    return ws.status?.phase === "Ready" ? ws.spec?.cluster : undefined;
  }, { timeoutMs: options.timeoutMs, intervalMs: 200 });
  for (const address of [path, cluster]) {
    await waitFor(
      `workspace ${path} to be reachable at /clusters/${address}`,
      async () => {
        await kcp.request("GET", `/clusters/${address}/${THIS_CLUSTER}`);
        return true;
      },
      { timeoutMs: options.timeoutMs, intervalMs: 200 },
    );
  }
  return { path, cluster };
}
