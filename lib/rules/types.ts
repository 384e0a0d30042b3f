/**
 * The rule types both components share: a type as the API server names it,
 * and a rule together with the logical cluster it lives in.
 *
 * @module
 */
import type { DependencyRule } from "./api.ts";

/** A group/version/resource; `group` is `""` for the core group. */
export interface GroupVersionResource {
  /** API group, `""` for core. */
  group: string;
  /** Version, e.g. `v1alpha1`. */
  version: string;
  /** Plural resource, e.g. `vpcs`. */
  resource: string;
}

/** A rule together with the logical cluster it lives in. */
export interface ClusterRule {
  /** Logical cluster name (the `kcp.io/cluster` annotation). */
  cluster: string;
  /** The validated rule. */
  rule: DependencyRule;
}

/**
 * How a type is named to people and in keys: `<resource>.<group>`, or
 * `<resource>` for the core group (`vpcs.network.example.com`, `namespaces`).
 */
export function typeName(type: { group: string; resource: string }): string {
  return type.group === "" ? type.resource : `${type.resource}.${type.group}`;
}

/** `group/version/resource` (the core group is empty: `/v1/configmaps`). */
export function gvrKey(gvr: GroupVersionResource): string {
  return `${gvr.group}/${gvr.version}/${gvr.resource}`;
}
