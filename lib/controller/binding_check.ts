/**
 * Whether the controller may write a webhook configuration in a workspace:
 * the workspace must bind the dep-ctrl export and accept its claim on
 * ValidatingWebhookConfigurations, for every object (`selector.matchAll`;
 * kcp v0.31 also lets a binding accept a claim for labelled objects only,
 * and then refuses writes of any other) and for the verbs the controller
 * uses. Rules and Locks ask the same question, of the bindings as
 * {@linkcode bindingsByCluster} reads them.
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
  binding: Pick<BoundCluster, "claimAccepted" | "claimShortfall"> | undefined,
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
      message: binding.claimShortfall === undefined
        ? `${shown} binds ${exportRef} but has not accepted its ${CLAIMED} permission claim: set state Accepted on that claim in the APIBinding`
        : `${shown} binds ${exportRef} but accepts its ${CLAIMED} permission claim ${binding.claimShortfall}: accept it with selector matchAll: true and the verbs ${
          NEEDED_VERBS.join(", ")
        } in the APIBinding`,
    };
  }
  return undefined;
}

/** A workspace's dep-ctrl binding, as the plan reads it. */
export interface BoundCluster {
  /** The endpoint the binding was read through (writes there go through it). */
  endpoint: string;
  /**
   * Whether the claim on ValidatingWebhookConfigurations is accepted, for
   * every object and the verbs the controller uses.
   */
  claimAccepted: boolean;
  /**
   * When a binding accepts the claim but not for every object or not for
   * every verb the controller uses: how (for the message), e.g. `only for
   * objects matching a label selector`.
   */
  claimShortfall?: string;
}

/**
 * The verbs the controller uses on ValidatingWebhookConfigurations: read
 * and watch them, create, replace and delete its own. (A `patch` that only
 * refreshes an annotation is not needed for protection.)
 */
export const NEEDED_VERBS = [
  "get",
  "list",
  "watch",
  "create",
  "update",
  "delete",
] as const;

/** One permission claim of an APIBinding's spec, as far as it is read. */
export interface ClaimSpec {
  /** The claimed group (`""` or absent: the core group). */
  group?: string | undefined;
  /** The claimed resource. */
  resource?: string | undefined;
  /** `Accepted` or `Rejected`. */
  state?: string | undefined;
  /** The verbs accepted (kcp's `v1alpha2`). */
  verbs?: unknown;
  /** Which objects the claim covers (kcp's `v1alpha2`). */
  selector?: { matchAll?: unknown; [field: string]: unknown } | undefined;
}

/**
 * How an accepted claim falls short of what the controller needs, or
 * `undefined` when it does not: a selector other than `matchAll` (kcp v0.31
 * and later), or a verbs list without one the controller uses. A claim
 * without a selector or without verbs (older bindings) restricts neither.
 */
export function claimShortfall(claim: ClaimSpec): string | undefined {
  const selector = claim.selector;
  if (selector !== undefined && selector.matchAll !== true) {
    return "only for objects matching a label selector";
  }
  const verbs = claim.verbs;
  if (Array.isArray(verbs) && verbs.length > 0 && !verbs.includes("*")) {
    const missing = NEEDED_VERBS.filter((v) => !verbs.includes(v));
    if (missing.length > 0) return `without the verbs ${missing.join(", ")}`;
  }
  return undefined;
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
    const spec = source.object.spec as
      | { permissionClaims?: unknown }
      | undefined;
    const claims = Array.isArray(spec?.permissionClaims)
      ? spec.permissionClaims as ClaimSpec[]
      : [];
    const accepted = claims.filter((c) =>
      typeof c === "object" && c !== null &&
      (c.group ?? "") === VWC_GROUP && c.resource === VWC_RESOURCE &&
      c.state === "Accepted"
    );
    const shortfalls = accepted.map(claimShortfall);
    const claimAccepted = shortfalls.some((s) => s === undefined);
    const cluster = clusterOf(source.object);
    const known = result.get(cluster);
    if (known?.claimAccepted) continue;
    const shortfall = claimAccepted
      ? undefined
      : shortfalls.find((s) => s !== undefined) ?? known?.claimShortfall;
    result.set(cluster, {
      endpoint: known?.endpoint ?? source.endpoint,
      claimAccepted,
      ...(shortfall === undefined ? {} : { claimShortfall: shortfall }),
    });
  }
  return result;
}
