/**
 * Lists dependents in a consumer workspace through the kcp front-proxy
 * (`<base>/clusters/<logical cluster>`), page by page over the client's
 * keep-alive connections.
 *
 * @module
 */
import type {
  DependentQuery,
  DependentSource,
  ObjectQuery,
} from "./deletion_validator.ts";
import {
  clusterUrl,
  KubeApiError,
  type KubeClient,
  type KubeObject,
  pathSegment,
} from "../kcp/mod.ts";

/**
 * Asks for the object's metadata only (`PartialObjectMetadata`), with plain
 * JSON as the fallback of a server that cannot convert.
 */
const METADATA_ONLY =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/** Options for {@linkcode FrontProxyDependentSource}. */
export interface FrontProxyDependentSourceOptions {
  /** Page size. @default {10_000} */
  pageSize?: number;
}

/**
 * The collection URL of a type in a cluster, optionally in one namespace.
 * Every part is one encoded path segment.
 *
 * @throws {TypeError} If a part is empty, `.` or `..`.
 */
export function collectionUrl(base: string, query: DependentQuery): string {
  const { group, version, resource } = query.dependent;
  const api = group === ""
    ? `/api/${pathSegment(version)}`
    : `/apis/${pathSegment(group)}/${pathSegment(version)}`;
  const scope = query.namespace === undefined
    ? ""
    : `/namespaces/${pathSegment(query.namespace)}`;
  return `${clusterUrl(base, query.cluster)}${api}${scope}/${
    pathSegment(resource)
  }`;
}

/**
 * The URL of one object. Every part is one encoded path segment.
 *
 * @throws {TypeError} If a part is empty, `.` or `..`.
 */
export function objectUrl(base: string, query: ObjectQuery): string {
  const collection = collectionUrl(base, {
    cluster: query.cluster,
    ...(query.namespace === undefined ? {} : { namespace: query.namespace }),
    dependent: query.resource,
  });
  return `${collection}/${pathSegment(query.name)}`;
}

/** A {@linkcode DependentSource} that lists through the front-proxy. */
export class FrontProxyDependentSource implements DependentSource {
  readonly #client: KubeClient;
  readonly #base: string;
  readonly #pageSize: number;

  /** Lists with `client` below `base` (the front-proxy URL without `/clusters/...`). */
  constructor(
    client: KubeClient,
    base: string,
    options: FrontProxyDependentSourceOptions = {},
  ) {
    this.#client = client;
    this.#base = base;
    this.#pageSize = options.pageSize ?? 10_000;
  }

  /** Pages of the dependents a query selects. */
  async *pages(
    query: DependentQuery,
    signal: AbortSignal,
  ): AsyncIterable<readonly unknown[]> {
    const url = collectionUrl(this.#base, query);
    for await (
      const page of this.#client.listPages(url, {
        limit: this.#pageSize,
        signal,
      })
    ) {
      yield page.items;
    }
  }

  /** The live object's uid, or `undefined` when it does not exist. */
  async liveUid(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    try {
      const object = await this.#client.get<KubeObject>(
        objectUrl(this.#base, query),
        { signal, accept: METADATA_ONLY },
      );
      const uid = object?.metadata?.uid;
      return typeof uid === "string" ? uid : undefined;
    } catch (error) {
      if (error instanceof KubeApiError && error.notFound) return undefined;
      throw error;
    }
  }

  /**
   * The `deletionTimestamp` of the workspace's `LogicalCluster`, or
   * `undefined` when it has none (or one that is not a date). A missing
   * LogicalCluster is an error here (the caller keeps its denial), not a
   * deleted workspace.
   */
  async workspaceDeletedAt(
    cluster: string,
    signal: AbortSignal,
  ): Promise<Date | undefined> {
    const object = await this.#client.get<KubeObject>(
      logicalClusterUrl(this.#base, cluster),
      { signal, accept: METADATA_ONLY },
    );
    const stamp = object?.metadata?.deletionTimestamp;
    if (typeof stamp !== "string") return undefined;
    const date = new Date(stamp);
    return Number.isNaN(date.getTime()) ? undefined : date;
  }
}

/**
 * The URL of a workspace's own `LogicalCluster` (always named `cluster`).
 *
 * @throws {TypeError} If `cluster` is empty, `.` or `..`.
 */
export function logicalClusterUrl(base: string, cluster: string): string {
  return `${
    clusterUrl(base, cluster)
  }/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`;
}
