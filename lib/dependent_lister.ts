/**
 * Lists dependents in a consumer workspace through the kcp front-proxy
 * (`<base>/clusters/<logical cluster>`), page by page over the client's
 * keep-alive connections.
 *
 * @module
 */
import type { DependentQuery, DependentSource } from "./deletion_validator.ts";
import { clusterUrl } from "./kcp.ts";
import type { KubeClient } from "./kube_client.ts";

/** Options for {@linkcode FrontProxyDependentSource}. */
export interface FrontProxyDependentSourceOptions {
  /** Page size. @default {10_000} */
  pageSize?: number;
}

/** The collection URL of a type in a cluster, optionally in one namespace. */
export function collectionUrl(base: string, query: DependentQuery): string {
  const { group, version, resource } = query.dependent;
  const api = group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
  const scope = query.namespace === undefined
    ? ""
    : `/namespaces/${encodeURIComponent(query.namespace)}`;
  return `${clusterUrl(base, query.cluster)}${api}${scope}/${resource}`;
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
}
