/**
 * The world of the tenancy steps, at `root`: the providers the provider's
 * rule fixture ({@linkcode RULE_FILE}) names, two tenants ({@linkcode C1}
 * writes Locks and tries rules, {@linkcode C2} is another consumer of the
 * same providers) with a namespace {@linkcode NS}, the rules a tenant
 * writes ({@linkcode tenantRule}), and the waits and checks that tell what
 * the webhook made of them ({@linkcode waitForWebhookToJudge},
 * {@linkcode deleteSucceeds}).
 *
 * ```ts
 * import { componentTest } from "./mod.ts";
 * import { C1, NS, tenantRule, waitForWebhookToJudge } from "./tenancy_world.ts";
 *
 * componentTest("a tenant's rule", {}, async (world, step) => {
 *   await step("write it", async () => {
 *     const { webhook } = await world.startComponents();
 *     const rule = tenantRule("reach-vpcs", {
 *       apiExportName: "compute.example.com",
 *       group: "compute.example.com",
 *       version: "v1alpha1",
 *       kind: "VirtualMachine",
 *       resource: "virtualmachines",
 *     });
 *     await world.kcp.kubectlOk(["apply", "-f", "-"], {
 *       workspace: C1,
 *       stdin: JSON.stringify(rule),
 *     });
 *     await waitForWebhookToJudge(webhook, 1);
 *     console.log(NS);
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import type { WebhookProcess } from "./components.ts";
import { attempt } from "./expect.ts";
import type { KcpApi } from "./kcp_server.ts";
import { sample } from "./metrics_text.ts";
import { dependencyRule, type RuleDependent } from "./rules.ts";
import { waitFor } from "./wait.ts";

/** The network provider, as the rule fixture {@linkcode RULE_FILE} names it. */
export const NETWORK = "root:providers:network";
/** The compute provider, where the provider's rule is. */
export const COMPUTE = "root:providers:compute";
/** Tenant A: binds the dep-ctrl export to write Locks (and tries rules). */
export const C1 = "root:consumers:c1";
/** Tenant B: another consumer of the same providers. */
export const C2 = "root:consumers:c2";
/** The namespace of both tenants' objects. */
export const NS = "team-a";
/** The provider's rule: VirtualMachines hold the VPCs they refer to. */
export const RULE_FILE: string = new URL(
  "./fixtures/compute/dependencyrule-vm-vpc.yaml",
  import.meta.url,
).pathname;
/** The network provider's APIExport. */
export const NETWORK_REF = { path: NETWORK, name: "network.example.com" };
/** The compute provider's APIExport. */
export const COMPUTE_REF = { path: COMPUTE, name: "compute.example.com" };
/** The reason of the tenant's Lock on a Secret, which no denial may quote. */
export const SECRET_REASON = "database credentials, ask #dba";
/** The reason of the tenant's Locks, unless one says otherwise. */
export const KEPT_REASON = "kept by the tenant";
/** How long the tenancy steps wait, and how often they look. */
export const TENANCY_WAIT = { timeoutMs: 90_000, intervalMs: 250 };

/** A rule's `spec.dependent`. */
export type Dependent = RuleDependent;

/**
 * A tenant's rule: `dependent` (whose `apiExportName` the tenant's
 * workspace does not have) refers to the network provider's VPCs through
 * `.metadata.name`, a field every object has.
 */
export function tenantRule(
  name: string,
  dependent: RuleDependent,
): unknown {
  return dependencyRule(name, {
    dependent,
    dependencies: [{
      path: NETWORK_REF.path,
      exportName: NETWORK_REF.name,
      resource: "vpcs",
      field: ".metadata.name",
    }],
  });
}

/** The webhook's rule counts by state, from its metrics. */
export async function ruleStates(
  webhook: WebhookProcess,
): Promise<Record<string, number | undefined>> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return Object.fromEntries(
    ["valid", "admitted", "refused", "pending"].map((state) => [
      state,
      sample(text, `dependency_webhook_rules{state="${state}"}`),
    ]),
  );
}

/**
 * Waits until the webhook has seen `valid` rules and judged each (admitted
 * or refused, none pending): only then does an allowed delete say anything
 * about a rule just created.
 */
export async function waitForWebhookToJudge(
  webhook: WebhookProcess,
  valid: number,
): Promise<void> {
  let last: Record<string, number | undefined> = {};
  try {
    await waitFor(
      `the webhook to judge all ${valid} rules`,
      async () => {
        last = await ruleStates(webhook);
        const judged = (last.admitted ?? NaN) + (last.refused ?? NaN);
        return last.valid === valid && last.pending === 0 &&
            judged === valid || undefined;
      },
      TENANCY_WAIT,
    );
  } catch (error) {
    throw new Error(
      `${(error as Error).message}; last rule states: ${JSON.stringify(last)}`,
    );
  }
}

/** The object {@linkcode deleteSucceeds} deletes. */
export interface DeletedObject {
  /** The workspace (path) it is in. */
  workspace: string;
  /** Its type as kubectl names it. */
  type: string;
  /** Its name. */
  name: string;
  /** Its namespace. */
  namespace: string;
}

/**
 * Deletes `object` and asserts it went: first dry runs until one is
 * allowed (the webhook may still be reading what just changed), then the
 * real delete, which must succeed at once. A failure names the webhook's
 * rule states.
 */
export async function deleteSucceeds(
  kcp: KcpApi,
  webhook: WebhookProcess,
  object: DeletedObject,
): Promise<void> {
  const { workspace } = object;
  const target = [object.type, object.name, "-n", object.namespace];
  await waitFor(
    `a dry-run delete of ${object.type}/${object.name} in ${workspace} to be allowed`,
    async () => {
      const error = await attempt(kcp, workspace, [
        "delete",
        ...target,
        "--dry-run=server",
      ]);
      if (error === "") return true;
      throw new Error(error);
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  const r = await kcp.kubectl(["delete", ...target], { workspace });
  assert.equal(
    r.code,
    0,
    `deleting ${object.type}/${object.name} in ${workspace} failed: ${r.stderr.trim()} (webhook rule states: ${
      JSON.stringify(await ruleStates(webhook))
    })`,
  );
  assert.doesNotMatch(r.stderr, /Conflict|ServiceUnavailable|denied/);
  const gone = await kcp.kubectl(["get", ...target], { workspace });
  assert.notEqual(gone.code, 0);
  assert.match(gone.stderr, /NotFound|not found/);
}
