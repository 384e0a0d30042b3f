/**
 * The controller scale bench's kcp: `providers` workspaces under
 * `root:scale`, each bound to the dep-ctrl export (claim accepted) and with
 * an APIExport `network.example.com` of its own that serves one VPC type
 * per rule it hosts (`vpcs` of group `g<i>.network.example.com` for rule
 * `scale-<i>`), and `providers * rulesPerProvider` DependencyRules in the
 * topology's compute workspace, whose dependent (VirtualMachines) its
 * APIExport `compute.example.com` serves and whose field path
 * (`.spec.vpcRef.name`) is in its schema. The webhook may read every type
 * the rules name: a ClusterRole of the bench's, labelled for aggregation
 * into `dependency-webhook:dependents-reader`, in `system:admin`. So every
 * rule can end `Ready=True/Enforced`.
 *
 * @module
 */
import {
  bindExport,
  buildTopology,
  createWorkspace,
  DEP_CTRL_EXPORT,
  dependencyRule,
  type KcpServer,
  MANIFESTS,
  VWC_CLAIM,
  waitFor,
} from "../testing/mod.ts";
import { createMany } from "./_webhook_fixtures.ts";

/** Where the bench's objects are. */
export interface ScaleSetup {
  /** Provider workspaces, by path and logical cluster, in rule order. */
  providers: { path: string; cluster: string }[];
  /** The rules' workspace (the topology's compute provider). */
  rules: { path: string; cluster: string };
  /** The rules' names, `scale-<i>`. */
  ruleNames: string[];
  /** The dep-ctrl export's virtual-workspace URL the controller uses. */
  endpoint: string;
}

/** The collection of DependencyRules below a workspace URL. */
export const RULES_PATH =
  "apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules";
/** The collection of webhook configurations below a workspace URL. */
export const VWC_PATH =
  "apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

const PARENT = "root:scale";
/** The name of each provider's own APIExport (what `dependencyRule` names). */
const PROVIDER_EXPORT = "network.example.com";
const SCHEMAS = "apis/apis.kcp.io/v1alpha1/apiresourceschemas";
const EXPORTS = "apis/apis.kcp.io/v1alpha2/apiexports";
const DEPENDENT_FIELD = ".spec.vpcRef.name";
const READS_ROLE = "dependency-webhook:reads:scale-bench";

/** The protected group of rule `i`: one type per rule. */
function groupOf(i: number): string {
  return `g${i}.network.example.com`;
}

/** Runs `work` over `items` with `concurrency` at a time. */
export async function eachLimited<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

function vpcSchema(group: string): Record<string, unknown> {
  return {
    apiVersion: "apis.kcp.io/v1alpha1",
    kind: "APIResourceSchema",
    metadata: { name: `v1alpha1.vpcs.${group}` },
    spec: {
      group,
      names: {
        kind: "VPC",
        listKind: "VPCList",
        plural: "vpcs",
        singular: "vpc",
      },
      scope: "Namespaced",
      versions: [{
        name: "v1alpha1",
        served: true,
        storage: true,
        schema: {
          type: "object",
          properties: {
            apiVersion: { type: "string" },
            kind: { type: "string" },
            metadata: { type: "object" },
            spec: { type: "object", properties: { cidr: { type: "string" } } },
          },
        },
      }],
    },
  };
}

function providerExport(groups: readonly string[]): Record<string, unknown> {
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIExport",
    metadata: { name: PROVIDER_EXPORT },
    spec: {
      resources: groups.map((group) => ({
        group,
        name: "vpcs",
        schema: `v1alpha1.vpcs.${group}`,
        storage: { crd: {} },
      })),
    },
  };
}

/**
 * One provider workspace: created, its schemas and APIExport, bound to the
 * dep-ctrl export with the configuration claim accepted.
 */
async function provider(
  kcp: KcpServer,
  path: string,
  groups: readonly string[],
): Promise<{ path: string; cluster: string }> {
  const ws = await createWorkspace(kcp, path);
  for (const group of groups) {
    await kcp.request("POST", `/clusters/${path}/${SCHEMAS}`, {
      body: vpcSchema(group),
    });
  }
  await kcp.request("POST", `/clusters/${path}/${EXPORTS}`, {
    body: providerExport(groups),
  });
  await bindExport(kcp, path, {
    exportPath: "root:dep-ctrl",
    exportName: DEP_CTRL_EXPORT,
    acceptClaims: [VWC_CLAIM],
  });
  return ws;
}

/**
 * Grants the webhook's reads of every type the rules name, as an operator
 * does: a labelled ClusterRole in `system:admin` (kcp aggregates it into
 * `dependency-webhook:dependents-reader`); waits until kcp says so for the
 * last type.
 */
async function grantReads(
  kcp: KcpServer,
  rulesWorkspace: string,
  groups: readonly string[],
): Promise<void> {
  const role = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: READS_ROLE,
      labels: {
        "dependencies.opendefense.cloud/aggregate-to-dependents-reader": "true",
      },
    },
    rules: [
      {
        apiGroups: ["compute.example.com"],
        resources: ["virtualmachines"],
        verbs: ["get", "list"],
      },
      { apiGroups: groups, resources: ["vpcs"], verbs: ["get"] },
    ],
  };
  await kcp.kubectlOk(["apply", "-f", "-"], {
    workspace: "system:admin",
    identity: "shardAdmin",
    stdin: JSON.stringify(role),
  });
  const last = groups[groups.length - 1]!;
  await waitFor(
    `the webhook's read of vpcs.${last} to be granted`,
    async () => {
      const review = await kcp.request<{ status?: { allowed?: boolean } }>(
        "POST",
        `/clusters/${rulesWorkspace}/apis/authorization.k8s.io/v1/subjectaccessreviews`,
        {
          body: {
            apiVersion: "authorization.k8s.io/v1",
            kind: "SubjectAccessReview",
            spec: {
              user: kcp.identity("webhook").user,
              resourceAttributes: {
                verb: "get",
                group: last,
                resource: "vpcs",
              },
            },
          },
        },
      );
      return review.status?.allowed === true || undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** Builds the topology, the providers, the rules and the webhook's grants. */
export async function setUpScale(
  kcp: KcpServer,
  options: { providers: number; rulesPerProvider: number },
): Promise<ScaleSetup> {
  const topo = await buildTopology(kcp, { consumerPaths: [] });
  await createWorkspace(kcp, PARENT);
  await kcp.kubectlOk(["apply", "-k", `${MANIFESTS}kcp/workspace-reader`], {
    workspace: PARENT,
  });
  const total = options.providers * options.rulesPerProvider;
  const width = Math.max(3, String(options.providers - 1).length);
  const paths = Array.from(
    { length: options.providers },
    (_, k) => `${PARENT}:p${String(k).padStart(width, "0")}`,
  );
  // Rule i protects a type of provider i % providers.
  const providers = new Array<{ path: string; cluster: string }>(
    options.providers,
  );
  await eachLimited([...paths.keys()], 8, async (k) => {
    const groups = Array.from(
      { length: options.rulesPerProvider },
      (_, j) => groupOf(k + j * options.providers),
    );
    providers[k] = await provider(kcp, paths[k]!, groups);
  });
  const ruleNames = Array.from({ length: total }, (_, i) => `scale-${i}`);
  await createMany(
    kcp,
    `/clusters/${topo.compute.path}/${RULES_PATH}`,
    total,
    (i) =>
      dependencyRule(ruleNames[i]!, {
        dependencies: [{
          path: paths[i % options.providers]!,
          group: groupOf(i),
          resource: "vpcs",
          field: DEPENDENT_FIELD,
        }],
      }),
  );
  await grantReads(
    kcp,
    topo.compute.path,
    Array.from({ length: total }, (_, i) => groupOf(i)),
  );
  return {
    providers,
    rules: topo.compute,
    ruleNames,
    endpoint: topo.endpointUrls[0]!,
  };
}

/** Deletes every webhook configuration and clears every rule's status. */
export async function resetScale(
  kcp: KcpServer,
  setup: ScaleSetup,
): Promise<void> {
  await eachLimited(setup.providers, 16, async ({ path }) => {
    await kcp.request("DELETE", `/clusters/${path}/${VWC_PATH}`);
  });
  await eachLimited(setup.ruleNames, 24, async (name) => {
    await kcp.request(
      "PATCH",
      `/clusters/${setup.rules.path}/${RULES_PATH}/${name}/status`,
      {
        body: { status: null },
        contentType: "application/merge-patch+json",
      },
    );
  });
}
