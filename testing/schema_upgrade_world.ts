/**
 * The world of `tests/e2e/schema_upgrade_test.ts`: the dep-ctrl export as
 * release 0.2.0 shipped it (its Lock schema and APIExport from
 * `testing/fixtures/dep-ctrl-0.2.0/`, the DependencyRule schema and RBAC
 * from `manifests/kcp/dep-ctrl/`, which are 0.2.0's), a network provider
 * and a tenant bound to it, the components; the blocks of docs/operations.md,
 * "Schema upgrades" and "Removing the old schemas", to run as written with
 * kubectl's current context in the dep-ctrl workspace as its admin; and a
 * delete tried again and again while the schema changes under it.
 *
 * @module
 */
import { parse } from "yaml";
import {
  applyFiles,
  applyObjects,
  bindExport,
  waitForExportIdentity,
} from "./apis.ts";
import type { ComponentWorld } from "./component_suite.ts";
import { grantWebhookReads } from "./components.ts";
import { DocShell, operatorPath, type PathItem } from "./doc_shell.ts";
import type { DocStepsOptions } from "./doc_runs.ts";
import { isDenial } from "./delete_checks.ts";
import { dryRunDelete, type NamespacedTarget, targetsOf } from "./expect.ts";
import type { KcpServer } from "./kcp_server.ts";
import { exportedTarget, lockManifest } from "./objects.ts";
import { namespaceObject } from "./owners.ts";
import {
  DEP_CTRL_EXPORT,
  MANIFESTS,
  networkProvider,
  parentsOf,
  VWC_CLAIM,
} from "./topology.ts";
import { waitFor } from "./wait.ts";
import { createWorkspace } from "./workspaces.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const RELEASE_0_2_0 = `${ROOT}testing/fixtures/dep-ctrl-0.2.0/`;
const DOC = "docs/operations.md";
const DEP_CTRL = "root:dep-ctrl";

/** The schema an APIExport names for each of its resources, by resource. */
export type ExportSchemas = Record<string, string>;

/** The schemas the APIExport in `yamlText` (a file, or `-o yaml`) names. */
export function exportSchemas(yamlText: string): ExportSchemas {
  const resources: { name: string; schema: string }[] =
    parse(yamlText)?.spec?.resources ?? [];
  return Object.fromEntries(resources.map((r) => [r.name, r.schema]));
}

/** The schemas the APIExport of release 0.2.0 and that of this checkout name. */
export async function releaseSchemas(): Promise<
  { released: ExportSchemas; current: ExportSchemas }
> {
  return {
    released: exportSchemas(
      await Deno.readTextFile(`${RELEASE_0_2_0}apiexport.yaml`),
    ),
    current: exportSchemas(
      await Deno.readTextFile(`${MANIFESTS}kcp/dep-ctrl/apiexport.yaml`),
    ),
  };
}

/** What {@linkcode keepDeleting} saw. */
export interface DeleteAnswers {
  /** How many dry-run deletes were answered. */
  asked: number;
  /** How many went through. */
  allowed: number;
  /** The answers that were neither allowed nor the denial expected, each once. */
  others: string[];
}

/**
 * Runs `options.during` while trying a server-side dry-run delete of
 * `target` again and again, one after the other; answers what they got
 * once `during` is done (and stops trying if it throws).
 */
export async function keepDeleting(
  kcp: KcpServer,
  target: NamespacedTarget,
  options: { denial: string; during: () => Promise<void> },
): Promise<DeleteAnswers> {
  const answers: DeleteAnswers = { asked: 0, allowed: 0, others: [] };
  let done = false;
  const trying = (async () => {
    while (!done) {
      const error = await dryRunDelete(kcp, target);
      answers.asked++;
      if (error === "") answers.allowed++;
      else if (
        !isDenial(error, options.denial) && !answers.others.includes(error)
      ) answers.others.push(error);
    }
  })();
  try {
    await options.during();
  } finally {
    done = true;
    await trying;
  }
  return answers;
}

/** The denial of a delete of VPC `team-a/core` while Lock `team-a/prod` holds it. */
export const PROD_DENIAL =
  'cannot delete vpcs/core: locked by Lock team-a/prod ("production VPC"): deleting the Lock unlocks it; the skip-protection annotation does not';

/**
 * The components' `--export-relist-interval`: short, so that the test sees
 * the running components read again, under the new schema, what their
 * watches of the old one left out.
 */
export const RELIST_INTERVAL = "10s";

/** The workspaces, objects and doc blocks of the upgrade. */
export interface SchemaUpgradeWorld {
  /** The test's kcp. */
  kcp: KcpServer;
  /** The schemas 0.2.0's APIExport names. */
  released: ExportSchemas;
  /** The schemas this checkout's APIExport names. */
  current: ExportSchemas;
  /** `root:providers:network`, bound to dep-ctrl: VPCs. */
  network: string;
  /** `root:consumers:c1`, the tenant, bound to the provider and dep-ctrl. */
  tenant: string;
  /** A VPC of the tenant in `team-a`. */
  vpc(name: string): NamespacedTarget;
  /**
   * Lock `team-a/<name>` on VPC `<vpc>` against deletes, with `reason`,
   * and `spec.expiresAt` when given.
   */
  lock(
    name: string,
    options: { vpc: string; reason: string; expiresAt?: string },
  ): Record<string, unknown>;
  /** The blocks of "Schema upgrades": apply the manifests, check the export. */
  upgrade: PathItem[];
  /** The blocks of "Removing the old schemas". */
  removal: PathItem[];
  /**
   * The doc, and the shell its blocks run in: in the checkout, with kubectl
   * in the dep-ctrl workspace as its admin.
   */
  docs: DocStepsOptions;
  /** `kubectl get locks -n team-a` in the tenant, as its admin. */
  tenantLocks(): Promise<string>;
  /** Waits until Lock `team-a/<name>` of the tenant is Ready False Expired. */
  lockExpired(name: string): Promise<void>;
  /** What the live APIExport names. */
  liveSchemas(): Promise<ExportSchemas>;
  /** The APIResourceSchemas of the dep-ctrl workspace, by name. */
  schemaNames(): Promise<string[]>;
  /**
   * Installs dep-ctrl as 0.2.0 shipped it, `manifests/kcp/system-admin`,
   * the provider and the tenant (namespace `team-a`), then starts the
   * components ({@linkcode SchemaUpgradeWorld.startComponents}).
   */
  install(): Promise<void>;
  /**
   * Starts the webhook and the controller, each listing the export's
   * collections again every {@linkcode RELIST_INTERVAL}.
   */
  startComponents(): Promise<void>;
  /**
   * Grants the webhook's reads for the live Locks, VPCs allowed as a Lock
   * type (`controller grants --lock-types`), as an operator does once a
   * Lock names a type.
   */
  grantReads(): Promise<void>;
}

/** The world on `world`'s kcp; {@linkcode SchemaUpgradeWorld.install} builds it. */
export async function schemaUpgradeWorld(
  world: ComponentWorld,
): Promise<SchemaUpgradeWorld> {
  const { kcp } = world;
  const network = "root:providers:network";
  const tenant = "root:consumers:c1";
  const markdown = await Deno.readTextFile(`${ROOT}${DOC}`);
  // kubectl on PATH, the dep-ctrl admin's kubeconfig; removed with kcp's root.
  const home = await Deno.makeTempDir({ dir: kcp.rootDir, prefix: "doc-" });
  await Deno.mkdir(`${home}/bin`);
  await Deno.symlink(kcp.binaries.kubectl, `${home}/bin/kubectl`);
  const shell = new DocShell({
    cwd: ROOT,
    stateDir: `${home}/shell`,
    env: {
      PATH: `${home}/bin:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      HOME: home,
      KUBECONFIG: await kcp.kubeconfig("admin", DEP_CTRL),
    },
  });
  const startComponents = async () => {
    const args = [`--export-relist-interval=${RELIST_INTERVAL}`];
    await world.startComponents({ webhook: { args }, controller: { args } });
  };
  const getText = (args: string[]) =>
    kcp.kubectlOk(["get", ...args], { workspace: DEP_CTRL });
  return {
    kcp,
    ...await releaseSchemas(),
    network,
    tenant,
    vpc: (name) => targetsOf(tenant, "vpc")("team-a", name),
    lock: (name, { vpc, reason, expiresAt }) => {
      const lock = lockManifest(name, {
        namespace: "team-a",
        target: exportedTarget(network, { resource: "vpcs", name: vpc }),
        reason,
        operations: ["Delete"],
      });
      if (expiresAt === undefined) return lock;
      const spec = lock.spec as Record<string, unknown>;
      return { ...lock, spec: { ...spec, expiresAt } };
    },
    upgrade: operatorPath(markdown, "Schema upgrades"),
    removal: operatorPath(markdown, "Removing the old schemas"),
    docs: { doc: DOC, shell },
    tenantLocks: () =>
      kcp.kubectlOk(["get", "locks", "-n", "team-a"], { workspace: tenant }),
    lockExpired: async (name) => {
      const ready = '{.status.conditions[?(@.type=="Ready")]';
      await waitFor(
        `Lock team-a/${name} to be Ready False Expired`,
        async () => {
          const shown = await kcp.kubectlOk([
            "get",
            "lock",
            name,
            "-n",
            "team-a",
            "-o",
            `jsonpath=${ready}.status}/${ready}.reason}`,
          ], { workspace: tenant });
          return shown === "False/Expired" || undefined;
        },
        { timeoutMs: 90_000, intervalMs: 500 },
      );
    },
    liveSchemas: async () =>
      exportSchemas(
        await getText(["apiexport", DEP_CTRL_EXPORT, "-o", "yaml"]),
      ),
    schemaNames: async () =>
      (await getText([
        "apiresourceschemas",
        "-o",
        "jsonpath={.items[*].metadata.name}",
      ])).split(/\s+/).filter((n) => n !== ""),
    async install() {
      await createWorkspace(kcp, DEP_CTRL);
      const dir = `${MANIFESTS}kcp/dep-ctrl/`;
      await applyFiles(kcp, DEP_CTRL, [
        `${dir}apiresourceschema.yaml`,
        `${RELEASE_0_2_0}apiresourceschema-locks.yaml`,
        `${RELEASE_0_2_0}apiexport.yaml`,
        `${dir}rbac-controller.yaml`,
        `${dir}rbac-webhook.yaml`,
      ]);
      await kcp.kubectlOk(["apply", "-k", `${MANIFESTS}kcp/system-admin`], {
        workspace: "system:admin",
        identity: "shardAdmin",
      });
      await waitForExportIdentity(kcp, DEP_CTRL, DEP_CTRL_EXPORT);
      await networkProvider(kcp, network);
      for (const parent of parentsOf([network])) {
        await kcp.kubectlOk(
          ["apply", "-k", `${MANIFESTS}kcp/workspace-reader`],
          { workspace: parent },
        );
      }
      await createWorkspace(kcp, tenant);
      await bindExport(kcp, tenant, {
        exportPath: network,
        exportName: "network.example.com",
      });
      await bindExport(kcp, tenant, {
        exportPath: DEP_CTRL,
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      await waitFor(`vpcs and locks to be served in ${tenant}`, async () => {
        const r = await kcp.kubectl(["get", "vpcs,locks", "-A"], {
          workspace: tenant,
        });
        return r.code === 0 || undefined;
      });
      await applyObjects(kcp, tenant, [namespaceObject("team-a")]);
      await startComponents();
    },
    startComponents,
    async grantReads() {
      await grantWebhookReads(kcp, { lockTypes: ["vpcs.network.example.com"] });
    },
  };
}
