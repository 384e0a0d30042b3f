/**
 * The webhook's in-memory index of DependencyRules: for a protected
 * group/version/resource, which dependent types to list and at which field
 * path they refer. It holds rule metadata only, never dependents.
 *
 * @module
 */
import {
  type ClusterRule,
  type FieldPath,
  formatFieldPath,
  type GroupVersionResource,
  gvrKey,
  parseFieldPath,
  ruleKey,
} from "../rules/mod.ts";

/** One way a protected type is referred to: a dependent type and the field that holds the name. */
export interface Protection {
  /** Key of the rule this comes from (`<cluster>/<name>`). */
  rule: string;
  /** The type that holds references, listed on DELETE. */
  dependent: GroupVersionResource & { kind: string };
  /** Where the reference lives in the dependent. */
  fieldPath: FieldPath;
  /** {@linkcode Protection.fieldPath} in canonical text form, e.g. `.spec.vpcRef.name`. */
  fieldPathText: string;
}

/** A protection with its dependent's key precomputed. */
interface IndexedProtection extends Protection {
  /** {@linkcode gvrKey} of the dependent. */
  dependentKey: string;
}

/** Rules indexed by the group/version/resource they protect. */
export class RuleRegistry {
  #rules = new Map<string, ClusterRule>();
  #index: Map<string, IndexedProtection[]> | undefined = new Map();
  #loaded = false;
  readonly #derived = new WeakMap<
    ClusterRule,
    {
      key: string;
      protections: readonly { target: string; protection: IndexedProtection }[];
    }
  >();

  /** Whether the rules have been loaded once (until then the webhook must not decide). */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** Number of rules registered. */
  get size(): number {
    return this.#rules.size;
  }

  /** Number of protected group/version/resources. */
  get protectedTypes(): number {
    return this.#indexed().size;
  }

  /** Replaces every rule at once and marks the registry loaded. */
  replace(rules: readonly ClusterRule[]): void {
    this.#rules = new Map(
      rules.map((r) => [ruleKey(r.cluster, r.rule.metadata.name), r]),
    );
    this.#index = undefined;
    this.#loaded = true;
  }

  /** Adds or replaces one rule; returns the one it replaced. */
  set(entry: ClusterRule): ClusterRule | undefined {
    const key = ruleKey(entry.cluster, entry.rule.metadata.name);
    const old = this.#rules.get(key);
    this.#rules.set(key, entry);
    this.#index = undefined;
    return old;
  }

  /** Removes one rule by cluster and name; returns whether it was there. */
  delete(cluster: string, name: string): boolean {
    const removed = this.#rules.delete(ruleKey(cluster, name));
    if (removed) this.#index = undefined;
    return removed;
  }

  /** The protections of a group/version/resource, in a stable order. */
  find(gvr: GroupVersionResource): readonly Protection[] {
    return this.#indexed().get(gvrKey(gvr)) ?? [];
  }

  #indexed(): Map<string, IndexedProtection[]> {
    if (this.#index !== undefined) return this.#index;
    const index = new Map<string, IndexedProtection[]>();
    const keys = [...this.#rules.keys()].sort();
    for (const key of keys) {
      const entry = this.#rules.get(key)!;
      for (const { target, protection } of this.#protectionsOf(key, entry)) {
        const list = index.get(target) ?? [];
        const duplicate = list.some((p) =>
          p.dependentKey === protection.dependentKey &&
          p.fieldPathText === protection.fieldPathText
        );
        if (!duplicate) list.push(protection);
        index.set(target, list);
      }
    }
    for (const list of index.values()) Object.freeze(list);
    this.#index = index;
    return index;
  }

  /** The protections one rule contributes, computed once per rule object. */
  #protectionsOf(
    key: string,
    entry: ClusterRule,
  ): readonly { target: string; protection: IndexedProtection }[] {
    const cached = this.#derived.get(entry);
    if (cached !== undefined && cached.key === key) return cached.protections;
    const { dependent } = entry.rule.spec;
    const dependentGvr = {
      group: dependent.group,
      version: dependent.version,
      resource: dependent.resource,
      kind: dependent.kind,
    };
    const protections = entry.rule.spec.dependencies.map((dependency) => {
      const fieldPath = parseFieldPath(dependency.fieldRef.path);
      return {
        target: gvrKey(dependency),
        protection: {
          rule: key,
          dependent: dependentGvr,
          dependentKey: gvrKey(dependentGvr),
          fieldPath,
          fieldPathText: formatFieldPath(fieldPath),
        },
      };
    });
    this.#derived.set(entry, { key, protections });
    return protections;
  }
}
