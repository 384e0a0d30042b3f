/**
 * Whether the controller may write a webhook configuration in a workspace:
 * the workspace must bind the dep-ctrl export and accept its claim on
 * ValidatingWebhookConfigurations. Rules and Locks ask the same question,
 * of the bindings as {@linkcode bindingsByCluster} reads them.
 *
 * @module
 */
import { clusterOf, type EndpointObject } from "../kcp/mod.ts";

const CLAIMED = "validatingwebhookconfigurations.admissionregistration.k8s.io";

/** Why a configuration cannot be written in a workspace. */
export interface BindingProblem {
  /** `ProviderNotBound` or `ClaimNotAccepted`. */
  reason: "ProviderNotBound" | "ClaimNotAccepted";
  /** What is missing and what to do. */
  message: string;
}

/**
 * The problem with a workspace's dep-ctrl binding, or `undefined` when the
 * controller may write there.
 *
 * @param binding The workspace's binding, if it has one.
 * @param options `shown`: how messages name the workspace; `exportRef`: the
 * dep-ctrl export as `<path>:<name>`.
 */
export function bindingProblem(
  binding: { claimAccepted: boolean } | undefined,
  options: { shown: string; exportRef: string },
): BindingProblem | undefined {
  const { shown, exportRef } = options;
  if (binding === undefined) {
    return {
      reason: "ProviderNotBound",
      message:
        `${shown} has not bound the APIExport ${exportRef}: create an APIBinding to it there that accepts the ${CLAIMED} claim`,
    };
  }
  if (!binding.claimAccepted) {
    return {
      reason: "ClaimNotAccepted",
      message:
        `${shown} binds ${exportRef} but has not accepted its ${CLAIMED} permission claim: set state Accepted on that claim in the APIBinding`,
    };
  }
  return undefined;
}

/** A workspace's dep-ctrl binding, as the plan reads it. */
export interface BoundCluster {
  /** The endpoint the binding was read through (writes there go through it). */
  endpoint: string;
  /** Whether the claim on ValidatingWebhookConfigurations is accepted. */
  claimAccepted: boolean;
}

const VWC_GROUP = "admissionregistration.k8s.io";
const VWC_RESOURCE = "validatingwebhookconfigurations";

/**
 * The dep-ctrl APIBindings by logical cluster. Several bindings to the
 * export in one workspace: any one that accepts the claim counts.
 */
export function bindingsByCluster(
  bindings: readonly EndpointObject[],
): Map<string, BoundCluster> {
  const result = new Map<string, BoundCluster>();
  for (const source of bindings) {
    const claims = (source.object.spec as {
      permissionClaims?: {
        group?: string;
        resource?: string;
        state?: string;
      }[];
    } | undefined)?.permissionClaims ?? [];
    const claimAccepted = claims.some((c) =>
      (c.group ?? "") === VWC_GROUP && c.resource === VWC_RESOURCE &&
      c.state === "Accepted"
    );
    const cluster = clusterOf(source.object);
    const known = result.get(cluster);
    result.set(cluster, {
      endpoint: source.endpoint,
      claimAccepted: claimAccepted || (known?.claimAccepted ?? false),
    });
  }
  return result;
}
