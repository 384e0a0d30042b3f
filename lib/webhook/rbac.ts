/**
 * The least privilege the webhook's identity needs in consumer workspaces,
 * computed from the DependencyRules: `list` on every dependent type and
 * `get` on every protected type, per group and resource, never `*`. Applied
 * in `system:admin` of every shard (it then holds in every workspace there).
 *
 * @example Usage
 * ```ts
 * import { dependentsReaderRole } from "./rbac.ts";
 *
 * const role = dependentsReaderRole([]); // { kind: "ClusterRole", rules: [] ... }
 * ```
 *
 * @module
 */
import type { DependencyRule } from "../rules/mod.ts";
import type { Lock } from "../locks/mod.ts";
import { compareStrings } from "../runtime/mod.ts";

/** The ClusterRole's name; `manifests/kcp/system-admin` binds it to the webhook. */
export const DEPENDENTS_READER_ROLE = "dependency-webhook:dependents-reader";

/** One RBAC policy rule. */
export interface PolicyRule {
  /** API groups (`""` is core). */
  apiGroups: string[];
  /** Resources. */
  resources: string[];
  /** Verbs. */
  verbs: string[];
}

/** A ClusterRole, as `kubectl apply` takes it. */
export interface ClusterRole {
  /** `rbac.authorization.k8s.io/v1`. */
  apiVersion: "rbac.authorization.k8s.io/v1";
  /** `ClusterRole`. */
  kind: "ClusterRole";
  /** Name and labels. */
  metadata: { name: string; labels: Record<string, string> };
  /** The grants, sorted by group, then resource. */
  rules: PolicyRule[];
}

/**
 * The ClusterRole that lets the webhook read what `rules` name: `get` and
 * `list` on each dependent type (it lists them), `get` on each protected
 * type (it reads the object under review). One policy rule per group and
 * set of verbs, resources named one by one: never a wildcard, so a
 * provider's rule grants nothing beyond the types it names.
 */
export function dependentsReaderRole(
  rules: readonly DependencyRule[],
  options: { locks?: readonly Lock[] } = {},
): ClusterRole {
  const verbs = new Map<string, Set<string>>();
  const grant = (group: string, resource: string, ...add: string[]) => {
    const key = JSON.stringify([group, resource]);
    const set = verbs.get(key) ?? new Set<string>();
    for (const verb of add) set.add(verb);
    verbs.set(key, set);
  };
  for (const rule of rules) {
    const { dependent, dependencies } = rule.spec;
    grant(dependent.group, dependent.resource, "get", "list");
    for (const d of dependencies) grant(d.group, d.resource, "get");
  }
  // A locked object is read (metadata only) before a Lock's denial.
  for (const lock of options.locks ?? []) {
    grant(lock.spec.target.group, lock.spec.target.resource, "get");
  }
  const byGroupAndVerbs = new Map<string, PolicyRule>();
  for (
    const [key, set] of [...verbs].sort(([a], [b]) => compareStrings(a, b))
  ) {
    const [group, resource] = JSON.parse(key) as [string, string];
    const sorted = [...set].sort(compareStrings);
    const id = JSON.stringify([group, sorted]);
    const rule = byGroupAndVerbs.get(id) ??
      { apiGroups: [group], resources: [], verbs: sorted };
    rule.resources.push(resource);
    byGroupAndVerbs.set(id, rule);
  }
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: DEPENDENTS_READER_ROLE,
      labels: { "app.kubernetes.io/part-of": "dependency-controller" },
    },
    rules: [...byGroupAndVerbs.values()],
  };
}
