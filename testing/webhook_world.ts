/**
 * The world of the webhook steps, with no controller: the topology and the
 * webhook the first steps build and start ({@linkcode WebhookWorld}), the
 * demo rule's file, the RBAC a tenant is given, and what the steps send to
 * the webhook straight (an AdmissionReview, as anyone on its network
 * could) or read from it (how many reviews it answered).
 *
 * ```ts
 * import { kcpTest, kubectlDelete, startWebhook } from "./mod.ts";
 * import { reviewsAnswered, WebhookWorld } from "./webhook_world.ts";
 *
 * kcpTest("the webhook answers", async (kcp, step) => {
 *   const w = new WebhookWorld();
 *   await step("a review", async () => {
 *     w.webhook = await startWebhook(kcp);
 *     await kubectlDelete(kcp, w.inC1("vpc", "vpc-a"), { dryRun: true });
 *     console.log(await reviewsAnswered(w.webhook));
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import type { WebhookProcess } from "./components.ts";
import { type NamespacedTarget, targetsOf } from "./expect.ts";
import type { Topology } from "./topology.ts";

/** The demo rule `vm-dependencies` (VirtualMachine to VPC) as users apply it. */
export const VM_VPC_RULE_FILE: string = new URL(
  "./fixtures/compute/dependencyrule-vm-vpc.yaml",
  import.meta.url,
).pathname;

/** The `spec.cidr` of the webhook steps' VPCs. */
export const VPC_CIDR = "10.0.0.0/16";

/**
 * The webhook steps' topology and webhook, set by their first steps, and
 * the two consumers' paths.
 */
export class WebhookWorld {
  /** The topology, once built. */
  topo!: Topology;
  /** The webhook, once started. */
  webhook!: WebhookProcess;
  /** The first consumer's path. */
  c1 = "";
  /** The second consumer's path. */
  c2 = "";

  /** The object `name` of `type` in the first consumer's `default` namespace. */
  inC1(type: string, name: string): NamespacedTarget {
    return targetsOf(this.c1, type)("default", name);
  }
}

/** The webhook's answer to an AdmissionReview. */
export interface ReviewAnswer {
  /** Whether it allows the request. */
  allowed: boolean;
  /** Why not. */
  status?: { code: number; message: string };
}

/**
 * POSTs an AdmissionReview straight to the webhook, as anyone on its
 * network could, and returns its answer.
 *
 * @throws {AssertionError} If the webhook answers other than 200.
 */
export async function postReview(
  webhook: WebhookProcess,
  review: unknown,
): Promise<ReviewAnswer> {
  const client = Deno.createHttpClient({ caCerts: [webhook.cert.caPem] });
  try {
    const response = await fetch(webhook.url, {
      method: "POST",
      body: JSON.stringify(review),
      client,
    });
    assert.equal(response.status, 200);
    return (await response.json() as { response: ReviewAnswer }).response;
  } finally {
    client.close();
  }
}

/**
 * The DELETE review kcp would send for `object`, a live VPC as kubectl
 * shows it, from user `mallory`.
 */
export function deleteReviewOf(object: {
  metadata: { name: string; namespace: string };
}): unknown {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: crypto.randomUUID(),
      kind: { group: "network.example.com", version: "v1alpha1", kind: "VPC" },
      resource: {
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
      },
      name: object.metadata.name,
      namespace: object.metadata.namespace,
      operation: "DELETE",
      userInfo: { username: "mallory", groups: ["system:authenticated"] },
      oldObject: object,
      dryRun: false,
    },
  };
}

/** A ClusterRole named `name` with `rules`, for a workspace. */
export function clusterRole(
  name: string,
  rules: readonly unknown[],
): Record<string, unknown> {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name },
    rules,
  };
}

/** A ClusterRoleBinding `<role>-<user>` of the ClusterRole `role` to `user`. */
export function userRoleBinding(
  role: string,
  user: string,
): Record<string, unknown> {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `${role}-${user}` },
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: role,
    },
    subjects: [{
      apiGroup: "rbac.authorization.k8s.io",
      kind: "User",
      name: user,
    }],
  };
}

/**
 * How many reviews the webhook has answered, whatever the outcome: the
 * sum of `dependency_webhook_admission_reviews_total` on its /metrics.
 */
export async function reviewsAnswered(
  webhook: Pick<WebhookProcess, "get" | "metricsPort">,
): Promise<number> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return [
    ...text.matchAll(
      /^dependency_webhook_admission_reviews_total\{[^}]*\} (\d+)$/gm,
    ),
  ].reduce((sum, m) => sum + Number(m[1]), 0);
}
