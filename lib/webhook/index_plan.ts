/**
 * Which dependents the webhook indexes, pure: from the admitted rules'
 * protections, one index per dependent type and export identity, with every
 * field path the rules read of that type. A protection is indexed only when
 * its dependent holds the reference (`from: Dependent`), its rule has no
 * `when` (an expression may read any field, which the index does not keep)
 * and the identity of its dependent export is known (the index watches the
 * objects bound from that export, and no others). Every other protection
 * keeps today's list on each review.
 *
 * @module
 */
import { formatFieldPath, type GroupVersionResource } from "../rules/mod.ts";
import type { IndexedPath } from "../dependents/mod.ts";
import type { Protection } from "./rule_registry.ts";

/** One index the webhook keeps: a dependent type, as bound from one export. */
export interface IndexSpec {
  /** `<group>/<version>/<resource>:<identity>`: names the index. */
  key: string;
  /** The dependent type. */
  dependent: GroupVersionResource;
  /** The identity hash of the export it is bound from. */
  identity: string;
  /** That export: its workspace (logical cluster) and name. */
  export: { workspace: string; name: string };
  /** Every path the rules read of it, in a stable order. */
  paths: IndexedPath[];
  /** Each path's text (`.spec.vpcRef.name|.spec.vpcRef.namespace`), as in `paths`. */
  pathKeys: string[];
}

/** Where a protection's references are kept: which index, which of its paths. */
export interface IndexRoute {
  /** The {@linkcode IndexSpec.key}. */
  key: string;
  /** The path's text, one of {@linkcode IndexSpec.pathKeys}. */
  pathKey: string;
}

/** The key of the index of a dependent type bound from the export `identity`. */
export function indexKey(
  dependent: GroupVersionResource,
  identity: string,
): string {
  return `${dependent.group}/${dependent.version}/${dependent.resource}:${identity}`;
}

/**
 * Where the index keeps the references `p` reads, or `undefined` when its
 * dependents are listed on each review instead (see the module's header).
 */
export function indexRoute(p: Protection): IndexRoute | undefined {
  if (p.from !== "Dependent") return undefined;
  if (p.when !== undefined) return undefined;
  if (p.dependentIdentity === undefined || p.dependentIdentity === "") {
    return undefined;
  }
  return {
    key: indexKey(p.dependent, p.dependentIdentity),
    pathKey: pathKeyOf(p),
  };
}

/**
 * The indexes the protections need, by key. Two protections that read the
 * same path of the same type share it; paths are sorted, so the same rules
 * give the same specs whatever their order (and an unchanged spec keeps its
 * index).
 */
export function indexSpecs(
  protections: Iterable<Protection>,
): Map<string, IndexSpec> {
  const paths = new Map<
    string,
    { p: Protection; byKey: Map<string, IndexedPath> }
  >();
  for (const p of protections) {
    const route = indexRoute(p);
    if (route === undefined) continue;
    let entry = paths.get(route.key);
    if (entry === undefined) {
      entry = { p, byKey: new Map() };
      paths.set(route.key, entry);
    }
    if (!entry.byKey.has(route.pathKey)) {
      entry.byKey.set(route.pathKey, {
        fieldPath: p.fieldPath,
        ...(p.namespacePath === undefined
          ? {}
          : { namespacePath: p.namespacePath }),
      });
    }
  }
  const specs = new Map<string, IndexSpec>();
  for (const key of [...paths.keys()].sort()) {
    const { p, byKey } = paths.get(key)!;
    const pathKeys = [...byKey.keys()].sort();
    specs.set(key, {
      key,
      dependent: {
        group: p.dependent.group,
        version: p.dependent.version,
        resource: p.dependent.resource,
      },
      identity: p.dependentIdentity!,
      export: {
        workspace: p.dependentExport.workspace,
        name: p.dependentExport.name,
      },
      paths: pathKeys.map((k) => byKey.get(k)!),
      pathKeys,
    });
  }
  return specs;
}

/** Whether two specs read the same paths of the same type (so one index serves both). */
export function sameSpec(a: IndexSpec, b: IndexSpec): boolean {
  return a.key === b.key && a.pathKeys.length === b.pathKeys.length &&
    a.pathKeys.every((k, i) => k === b.pathKeys[i]);
}

/** A protection's path and namespace path, as one text. */
function pathKeyOf(p: Protection): string {
  return p.namespacePath === undefined
    ? p.fieldPathText
    : `${p.fieldPathText}|${formatFieldPath(p.namespacePath)}`;
}
