/**
 * The least privilege the webhook's identity needs in consumer workspaces,
 * computed from the DependencyRules: `list` on every dependent type and
 * `get` on every protected type, per group and resource, never `*`. Applied
 * in `system:admin` of every shard (it then holds in every workspace there)
 * as a ClusterRole of its own with {@linkcode AGGREGATE_LABEL}: kcp
 * aggregates it into {@linkcode DEPENDENTS_READER_ROLE}, which
 * `manifests/kcp/system-admin` binds and whose rules it never sets, so
 * applying those manifests again keeps every grant.
 *
 * What tenants write never widens it: Locks add `get` on their target types
 * only where an operator allowed the type by name, and no rule or Lock ever
 * makes it grant a type of {@linkcode NEVER_GRANTED} (Secrets, ConfigMaps,
 * credentials and RBAC), whose objects would let the webhook read other
 * tenants' data. A Lock whose type is not granted still holds; its denial
 * then names no reason (`deletion_validator.ts`).
 *
 * @example Usage
 * ```ts
 * import { webhookReadsRole } from "./rbac.ts";
 *
 * const role = webhookReadsRole([]); // { kind: "ClusterRole", rules: [] ... }
 * ```
 *
 * @module
 */
import { type DependencyRule, typeName } from "../rules/mod.ts";
import type { Lock } from "../locks/mod.ts";
import { compareStrings } from "../runtime/mod.ts";

/**
 * The aggregated ClusterRole `manifests/kcp/system-admin` binds to the
 * webhook: kcp fills its rules from every ClusterRole with
 * {@linkcode AGGREGATE_LABEL}.
 */
export const DEPENDENTS_READER_ROLE = "dependency-webhook:dependents-reader";
/** The label (value `"true"`) that adds a ClusterRole's grants to the webhook's. */
export const AGGREGATE_LABEL =
  "dependencies.opendefense.cloud/aggregate-to-dependents-reader";
/** The name of the ClusterRole printed for the live rules and Locks. */
export const RULE_READS_ROLE = "dependency-webhook:reads:rules";

/**
 * Types the webhook is never granted, whatever a rule or Lock names, as
 * `<resource>.<group>` (`<resource>` for core): their objects are tenants'
 * secrets and credentials, or RBAC.
 */
export const NEVER_GRANTED: ReadonlySet<string> = new Set([
  "secrets",
  "configmaps",
  "serviceaccounts",
  "serviceaccounts/token",
  "roles.rbac.authorization.k8s.io",
  "rolebindings.rbac.authorization.k8s.io",
  "clusterroles.rbac.authorization.k8s.io",
  "clusterrolebindings.rbac.authorization.k8s.io",
  "certificatesigningrequests.certificates.k8s.io",
  "tokenreviews.authentication.k8s.io",
]);

/** One RBAC policy rule. */
export interface PolicyRule {
  /** API groups (`""` is core). */
  apiGroups: string[];
  /** Resources. */
  resources: string[];
  /** Verbs. */
  verbs: string[];
  /** The objects it is narrowed to, by name; absent: all of the resources. */
  resourceNames?: string[];
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

/** Options of {@linkcode webhookReadsRole}. */
export interface WebhookReadsOptions {
  /** The ClusterRole's name. @default {RULE_READS_ROLE} */
  name?: string;
  /** The Locks; a Lock adds `get` on its target's type only if `lockTypes` names it. */
  locks?: readonly Lock[];
  /**
   * The Lock target types an operator allows the webhook to read, as
   * `<resource>.<group>` (`<resource>` for core). @default {none}
   */
  lockTypes?: ReadonlySet<string>;
  /**
   * Whether the webhook keeps its dependents index (`--dependents-index`):
   * then `watch` too on each dependent type (the same objects `list` reads,
   * over time), and `list` and `watch` on the content of each rule's
   * dependent export, by name (`apiexports/content`: the index is fed
   * through the export's virtual workspace). @default {false}
   */
  watch?: boolean;
}

/**
 * The ClusterRole that lets the webhook read what `rules` name: `get` and
 * `list` on each dependent type (it lists them; an owner type is read by
 * name, or listed when an object names more owners than a review looks up
 * one by one; with `options.watch`, `watch` too, for the dependents
 * index), `get` on each
 * protected type (it reads the object under review), `get` on core
 * `namespaces` for a rule that reads the owner on the Namespace
 * (`from: TargetNamespace`), and `get` on the target types of
 * Locks that `options.lockTypes` allows. One policy rule per group and set
 * of verbs, resources named one by one: never a wildcard, so a provider's
 * rule grants nothing beyond the types it names, and never a type of
 * {@linkcode NEVER_GRANTED}.
 */
export function webhookReadsRole(
  rules: readonly DependencyRule[],
  options: WebhookReadsOptions = {},
): ClusterRole {
  const verbs = new Map<string, Set<string>>();
  const grant = (group: string, resource: string, ...add: string[]) => {
    if (NEVER_GRANTED.has(typeName({ group, resource }))) return;
    const key = JSON.stringify([group, resource]);
    const set = verbs.get(key) ?? new Set<string>();
    for (const verb of add) set.add(verb);
    verbs.set(key, set);
  };
  for (const rule of rules) {
    const { dependent, dependencies } = rule.spec;
    // It lists dependents that name the object, and reads an owner the
    // object (or its Namespace) names: by name, or with one list of the
    // owner type when the object names more owners than it looks up.
    grant(dependent.group, dependent.resource, "get", "list");
    if (options.watch) grant(dependent.group, dependent.resource, "watch");
    for (const d of dependencies) {
      grant(d.group, d.resource, "get");
      // The Namespace's metadata, where it names the owner.
      if (d.fieldRef.from === "TargetNamespace") grant("", "namespaces", "get");
    }
  }
  // A locked object is read (metadata only) before a Lock's denial, where
  // the operator allowed its type.
  for (const lock of options.locks ?? []) {
    const { group, resource } = lock.spec.target;
    if (options.lockTypes?.has(typeName({ group, resource }))) {
      grant(group, resource, "get");
    }
  }
  const exports = new Set<string>();
  if (options.watch) {
    for (const rule of rules) exports.add(rule.spec.dependent.apiExportName);
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
      name: options.name ?? RULE_READS_ROLE,
      labels: {
        "app.kubernetes.io/part-of": "dependency-controller",
        [AGGREGATE_LABEL]: "true",
      },
    },
    rules: [
      ...byGroupAndVerbs.values(),
      ...(exports.size === 0 ? [] : [{
        apiGroups: ["apis.kcp.io"],
        resources: ["apiexports/content"],
        resourceNames: [...exports].sort(compareStrings),
        verbs: ["list", "watch"],
      }]),
    ],
  };
}
