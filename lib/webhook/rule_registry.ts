/**
 * The webhook's in-memory index of DependencyRules: for a protected
 * group/version/resource, which dependent types to list and at which field
 * paths they refer (name, and namespace when the rule says where). It holds rule metadata only, never dependents.
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
  type ProtectWhile,
  type ReferenceSource,
  ruleKey,
} from "../rules/mod.ts";
import {
  type CompiledWhen,
  compileWhen,
  WhenEnvironment,
} from "../when/mod.ts";

/**
 * A rule's `when`, compiled once per rule object: the compiled expression, or why it
 * does not compile (then it protects: fail closed).
 */
export type RuleWhen =
  | { source: string; compiled: CompiledWhen }
  | { source: string; error: string };

/** The path that reads an owner from `metadata.ownerReferences`. */
export const OWNER_REFERENCES_PATH = ".metadata.ownerReferences[*].name";

/** One way a protected type is referred to: a dependent type and the field that holds the name. */
export interface Protection {
  /** Key of the rule this comes from (`<cluster>/<name>`). */
  rule: string;
  /**
   * Workspace path of the provider whose export of the protected type the
   * rule is about (`apiExportRef.path`): another provider may export a type
   * of the same group and resource to other consumers.
   */
  provider: string;
  /**
   * The rule's dependent type. With `from: Dependent` it holds the
   * references and is listed on each review; with `from: Target` or
   * `TargetNamespace` it is the owner's type, never listed: the protected
   * object (or its Namespace) names its owners, each read by name.
   */
  dependent: GroupVersionResource & { kind: string };
  /**
   * Where the reference lives: in the dependent, or with `from: Target` or
   * `TargetNamespace` in the protected object or its Namespace.
   */
  fieldPath: FieldPath;
  /** {@linkcode Protection.fieldPath} in canonical text form, e.g. `.spec.vpcRef.name`. */
  fieldPathText: string;
  /**
   * Where the dependent holds the referenced object's namespace
   * (`fieldRef.namespacePath`); absent, the dependent's own namespace.
   */
  namespacePath?: FieldPath;
  /**
   * The APIExport the rule's dependent type comes from: in the rule's own
   * workspace (its logical cluster), named by `spec.dependent.apiExportName`.
   */
  dependentExport: { workspace: string; name: string };
  /**
   * The identity of the APIExport the rule's dependent type comes from (in
   * the rule's own workspace): only dependents of a consumer that binds the
   * type from that export are the rule's. Absent when unknown (then every
   * dependent of the group and resource counts: fail closed).
   */
  dependentIdentity?: string;
  /**
   * Which object holds the reference (`fieldRef.from`): the dependent
   * (listed), the target (which names its owner of the dependent type), or
   * the target's Namespace (which names that owner).
   */
  from: ReferenceSource;
  /** How long a dependent (or owner) protects (`spec.protectWhile`). */
  protectWhile: ProtectWhile;
  /** The rule's `when`: only a dependent (or owner) it is true for protects. */
  when?: RuleWhen;
  /**
   * Whether the path reads `metadata.ownerReferences` of the target (or its
   * Namespace): then only entries of the dependent's kind and group count,
   * and an owner counts only with the uid the entry names.
   */
  ownerReferences: boolean;
}

/** A protection with what deduplication compares precomputed. */
interface IndexedProtection extends Protection {
  /**
   * The dependent's {@linkcode gvrKey} and the field path text: two
   * protections of a type with the same identity are one.
   */
  identity: string;
}

/** The protections one rule contributes, each with the type it protects. */
type RuleProtections = readonly {
  target: string;
  protection: IndexedProtection;
}[];

/** Rules indexed by the group/version/resource they protect. */
export class RuleRegistry {
  #index = new Map<string, readonly IndexedProtection[]>();
  #loaded = false;
  /**
   * Each rule object's protections: the rule watcher hands on the same
   * object while a rule is unchanged, so a rebuild parses only what changed.
   */
  /** The one CEL environment of every rule's `when` (compileWhen). */
  readonly #whenEnvironment = new WhenEnvironment();
  readonly #derived = new WeakMap<
    ClusterRule,
    {
      key: string;
      dependentIdentity: string | undefined;
      protections: RuleProtections;
    }
  >();

  /** Whether the rules have been loaded once (until then the webhook must not decide). */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** Number of protected group/version/resources. */
  get protectedTypes(): number {
    return this.#index.size;
  }

  /**
   * Replaces every rule at once, rebuilds the index and marks the registry
   * loaded. When two rules have the same cluster and name, the later one
   * counts. The rebuild takes time linear in the protections (after sorting
   * the rule keys).
   */
  replace(
    rules: readonly ClusterRule[],
    options: {
      /** The identity of each rule's dependent export, by rule key. */
      identities?: ReadonlyMap<string, string>;
    } = {},
  ): void {
    const byKey = new Map<string, ClusterRule>();
    for (const entry of rules) {
      byKey.set(ruleKey(entry.cluster, entry.rule.metadata.name), entry);
    }
    const index = new Map<string, IndexedProtection[]>();
    const seen = new Map<string, Set<string>>();
    // Rules in key order, so find() answers the same whatever the input order
    // and the first rule (by key) that gives a protection is the one named.
    for (const key of [...byKey.keys()].sort()) {
      const entry = byKey.get(key)!;
      const identity = options.identities?.get(key);
      for (
        const { target, protection } of this.#protectionsOf(
          key,
          entry,
          identity,
        )
      ) {
        let list = index.get(target);
        let identities = seen.get(target);
        if (list === undefined || identities === undefined) {
          list = [];
          identities = new Set();
          index.set(target, list);
          seen.set(target, identities);
        }
        if (identities.has(protection.identity)) continue;
        identities.add(protection.identity);
        list.push(protection);
      }
    }
    for (const list of index.values()) Object.freeze(list);
    this.#index = index;
    this.#loaded = true;
  }

  /** Every protection of every protected type (for the dependents index). */
  *all(): Iterable<Protection> {
    for (const list of this.#index.values()) yield* list;
  }

  /** The protections of a group/version/resource, in a stable order. */
  find(gvr: GroupVersionResource): readonly Protection[] {
    return this.#index.get(gvrKey(gvr)) ?? [];
  }

  /** The protections one rule contributes, computed once per rule object. */
  #protectionsOf(
    key: string,
    entry: ClusterRule,
    dependentIdentity: string | undefined,
  ): RuleProtections {
    const cached = this.#derived.get(entry);
    if (
      cached !== undefined && cached.key === key &&
      cached.dependentIdentity === dependentIdentity
    ) return cached.protections;
    const { dependent } = entry.rule.spec;
    const dependentGvr = {
      group: dependent.group,
      version: dependent.version,
      resource: dependent.resource,
      kind: dependent.kind,
    };
    const dependentKey = gvrKey(dependentGvr);
    const { when: source } = entry.rule.spec;
    const protectWhile = entry.rule.spec.protectWhile ?? "Exists";
    let when: RuleWhen | undefined;
    if (source !== undefined) {
      const compiled = compileWhen(source, {
        environment: this.#whenEnvironment,
      });
      when = compiled.ok
        ? { source, compiled: compiled.when }
        : { source, error: compiled.error };
    }
    const protections = entry.rule.spec.dependencies.map((dependency) => {
      const fieldPath = parseFieldPath(dependency.fieldRef.path);
      const fieldPathText = formatFieldPath(fieldPath);
      const { namespacePath } = dependency.fieldRef;
      const from = dependency.fieldRef.from ?? "Dependent";
      const namespaced = namespacePath === undefined
        ? undefined
        : parseFieldPath(namespacePath);
      return {
        target: gvrKey(dependency),
        protection: {
          rule: key,
          provider: dependency.apiExportRef.path,
          dependentExport: {
            workspace: entry.cluster,
            name: dependent.apiExportName,
          },
          dependent: dependentGvr,
          fieldPath,
          fieldPathText,
          ...(namespaced === undefined ? {} : { namespacePath: namespaced }),
          ...(dependentIdentity === undefined ? {} : { dependentIdentity }),
          from,
          protectWhile,
          ...(when === undefined ? {} : { when }),
          ownerReferences: from !== "Dependent" &&
            fieldPathText === OWNER_REFERENCES_PATH,
          identity: JSON.stringify([
            from,
            protectWhile,
            source ?? "",
            dependency.apiExportRef.path,
            dependentKey,
            fieldPathText,
            namespaced === undefined ? "" : formatFieldPath(namespaced),
            dependentIdentity ?? "",
          ]),
        },
      };
    });
    this.#derived.set(entry, { key, dependentIdentity, protections });
    return protections;
  }
}
