/**
 * What a review reads from, and the failures that name a setup problem:
 * the {@linkcode DependentSource} interface (dependents page by page, the
 * live object, owners, the workspace's deletion mark and bindings), and
 * {@linkcode Forbidden} and {@linkcode UnknownWorkspace}.
 *
 * @module
 */
import { type GroupVersionResource, typeName } from "../rules/mod.ts";
import type { Permission } from "./verdicts.ts";
import { quote } from "./review_target.ts";

/** What to list: one dependent type in one logical cluster, one namespace or all. */
export interface DependentQuery {
  /** Logical cluster name of the consumer workspace. */
  cluster: string;
  /** Namespace to list in; absent means all namespaces. */
  namespace?: string;
  /** The dependent type. */
  dependent: GroupVersionResource;
}

/** One object: the one a review is about. */
export interface ObjectQuery {
  /** Logical cluster name of the consumer workspace. */
  cluster: string;
  /** Its namespace; absent for a cluster-scoped object. */
  namespace?: string;
  /** Its type. */
  resource: GroupVersionResource;
  /** Its name. */
  name: string;
}

/** Reads a consumer workspace: dependents page by page, and the live object under review. */
export interface DependentSource {
  /**
   * Pages of the dependents a query selects (so memory stays bounded).
   *
   * @throws {KubeApiError} On failure; `notFound` means the workspace does not serve the type.
   */
  pages(
    query: DependentQuery,
    signal: AbortSignal,
  ): AsyncIterable<readonly unknown[]>;
  /**
   * The `metadata.uid` of the live object, or `undefined` when it does not exist.
   *
   * @throws {KubeApiError} On any other failure.
   */
  liveUid(query: ObjectQuery, signal: AbortSignal): Promise<string | undefined>;
  /**
   * The `metadata` of the live object (its labels, annotations and
   * ownerReferences included), or `undefined` when it does not exist.
   *
   * @throws {KubeApiError} On any other failure.
   */
  liveMetadata(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined>;
  /**
   * An owner, whole: looked up in `query.namespace` when given and the type
   * is namespaced there, else cluster-scoped; `undefined` when it does not
   * exist (or the workspace does not serve its type).
   *
   * @throws {KubeApiError} On any other failure.
   */
  ownerObject(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined>;
  /**
   * When kcp marked the logical cluster for deletion (the `deletionTimestamp`
   * of its `LogicalCluster` named `cluster`), or `undefined` while it is not
   * being deleted.
   *
   * @throws {KubeApiError} On failure, including a missing LogicalCluster.
   */
  workspaceDeletedAt(
    cluster: string,
    signal: AbortSignal,
  ): Promise<Date | undefined>;
  /**
   * The identity of the APIExport each type the workspace binds comes from,
   * by `<group>/<resource>`; a type of the workspace's own has none. The
   * answer may be a few seconds old unless `options.fresh` asks for a new
   * read.
   *
   * @throws {KubeApiError} On failure.
   */
  boundIdentities(
    cluster: string,
    signal: AbortSignal,
    options?: { fresh?: boolean },
  ): Promise<ReadonlyMap<string, string>>;
}

/** Our identity may not read what a review needs: a setup problem to name. */
export class Forbidden extends Error {
  /** What kcp refused. */
  readonly permission: Permission;

  /** Builds the error for `verb` refused on `type`. */
  constructor(
    verb: "get" | "list",
    type: { group: string; resource: string },
  ) {
    const shown = typeName(type);
    super(
      `the webhook's identity may not ${verb} ${shown} in this workspace (403 Forbidden): ` +
        `grant "${verb}" on ${shown} to it in system:admin of every shard (controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -)`,
    );
    this.name = "Forbidden";
    this.permission = { verb, group: type.group, resource: type.resource };
  }
}

/**
 * The workspace of a review could not be read at all: it does not exist (a
 * forged review), or the webhook has no access on its shard.
 */
export class UnknownWorkspace extends Error {
  /** Builds the error for the logical cluster `cluster`. */
  constructor(cluster: string) {
    super(
      `the dependency webhook cannot read the workspace ${quote(cluster)}: ` +
        "it does not exist, or the webhook's access is not granted on its shard " +
        "(manifests/kcp/system-admin in that shard's system:admin)",
    );
    this.name = "UnknownWorkspace";
  }
}
