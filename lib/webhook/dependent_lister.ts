/**
 * Lists dependents in a consumer workspace through the kcp front-proxy
 * (`<base>/clusters/<logical cluster>`), page by page over the client's
 * keep-alive connections. A page is read up to a cap on the memory it takes
 * (estimated from its JSON as it arrives) and held under a budget shared by
 * all lists, so no tenant's objects can exhaust the webhook's memory; a
 * page over the cap is asked for again with fewer objects, so big objects
 * still get their verdict.
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
  formatBytes,
  KubeApiError,
  type KubeClient,
  type KubeObject,
  pathSegment,
  RESPONSE_TOO_LARGE,
} from "../kcp/mod.ts";
import { isRecord, type Semaphore } from "../runtime/mod.ts";
import { boundResourcesOf } from "../exports/mod.ts";
import { BindingCache } from "./binding_cache.ts";

/**
 * Asks for the object's metadata only (`PartialObjectMetadata`), with plain
 * JSON as the fallback of a server that cannot convert.
 */
const METADATA_ONLY =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/**
 * The default of {@linkcode FrontProxyDependentSourceOptions.maxPageBytes}:
 * 8 MiB, which fits 500 Kubernetes objects of 2 KB with `managedFields`
 * (about 6 MB estimated), and a single object of up to about 1.3 MiB of
 * such JSON, or 4 MiB of mostly strings.
 */
export const DEFAULT_MAX_PAGE_BYTES = 8 * 1024 * 1024;

/** How much smaller each retry of a page over the byte cap asks for. */
const PAGE_SHRINK_FACTOR = 10;
/** How much larger the next page of a list may get, at most. */
const PAGE_GROWTH_FACTOR = 10;
/** The share of the byte cap a grown page is sized to fill. */
const PAGE_FILL = 0.75;

/** Options for {@linkcode FrontProxyDependentSource}. */
export interface FrontProxyDependentSourceOptions {
  /**
   * Objects per page, as long as pages stay under `maxPageBytes` (the
   * webhook's `--list-page-size` is 500), in the first page; later pages
   * grow while their objects are small (see {@linkcode FrontProxyDependentSource.pages}).
   * @default {10_000}
   */
  pageSize?: number;
  /**
   * Most memory one answer may take, a list page or the object under
   * review, estimated from its JSON as it arrives (`KubeClient`'s
   * `measure: "memory"`, about twice its bytes for usual objects). The
   * rest of a larger page is not read; the same page (same `continue`
   * token) is asked for again with a tenth of the objects, down to one,
   * and the list goes on with that smaller size. Only one object over it
   * fails the list. @default {8 MiB}
   */
  maxPageBytes?: number;
  /**
   * Memory of list pages being read or scanned at once across all lists
   * of all reviews, counted as `maxPageBytes` is: each page takes
   * `maxPageBytes` of it before it is asked for and gives it back when the
   * next page is asked for or the list ends (see `KubeClient`'s
   * `byteBudget`). Reads of single objects do not take from it.
   * @default {no bound}
   */
  bytesInFlight?: Semaphore;
  /**
   * How long a workspace's APIBindings, read for the identity check, are
   * used for its later reviews (see `binding_cache.ts`); 0 reads them for
   * every review. @default {0}
   */
  bindingsTtlMs?: number;
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
  readonly #maxPageBytes: number;
  readonly #bytesInFlight: Semaphore | undefined;
  readonly #bindings: BindingCache<ReadonlyMap<string, string>>;

  /** Lists with `client` below `base` (the front-proxy URL without `/clusters/...`). */
  constructor(
    client: KubeClient,
    base: string,
    options: FrontProxyDependentSourceOptions = {},
  ) {
    this.#client = client;
    this.#base = base;
    this.#pageSize = options.pageSize ?? 10_000;
    this.#maxPageBytes = options.maxPageBytes ?? DEFAULT_MAX_PAGE_BYTES;
    this.#bytesInFlight = options.bytesInFlight;
    this.#bindings = new BindingCache({
      ttlMs: options.bindingsTtlMs ?? 0,
      read: (cluster, signal) => this.#readBoundIdentities(cluster, signal),
    });
  }

  /**
   * Pages of the dependents a query selects. A page over `maxPageBytes` is
   * asked for again, from the same `continue` token, with a tenth of the
   * objects (down to one); the smaller size then holds for the rest of the
   * list, whose objects are likely as big. Until then, a full page that
   * took well under `maxPageBytes` makes the next one larger (up to ten
   * times, sized to fill three quarters of the cap at the last page's
   * size per object): kcp answers each further page of a list at several
   * times the cost of its first, so a long list of small objects is read
   * in as few pages as the cap allows.
   *
   * @throws {KubeApiError} The client's error; for a single object over
   * `maxPageBytes`, reason `ResponseTooLarge` and a message naming the
   * page sizes tried and the cap.
   */
  async *pages(
    query: DependentQuery,
    signal: AbortSignal,
  ): AsyncIterable<readonly unknown[]> {
    const url = collectionUrl(this.#base, query);
    let limit = this.#pageSize;
    let shrunk = false;
    let token: string | undefined;
    const tooLarge: number[] = [];
    for (;;) {
      let counted = 0;
      let full = false;
      try {
        // One page per request series, so the next may ask for another size.
        for await (
          const page of this.#client.listPages(url, {
            limit,
            signal,
            maxBytes: this.#maxPageBytes,
            measure: "memory",
            measured: (count) => counted = count,
            ...(token === undefined ? {} : { continue: token }),
            ...(this.#bytesInFlight === undefined
              ? {}
              : { byteBudget: this.#bytesInFlight }),
          })
        ) {
          const next = page.metadata.continue || undefined;
          full = page.items.length >= limit;
          yield page.items;
          token = next;
          break;
        }
      } catch (error) {
        if (
          !(error instanceof KubeApiError) ||
          error.reason !== RESPONSE_TOO_LARGE
        ) throw error;
        tooLarge.push(limit);
        if (limit === 1) {
          throw new KubeApiError(pageTooLarge(tooLarge, this.#maxPageBytes), {
            status: error.status,
            reason: RESPONSE_TOO_LARGE,
            cause: error,
          });
        }
        shrunk = true;
        limit = Math.max(1, Math.floor(limit / PAGE_SHRINK_FACTOR));
        continue;
      }
      if (token === undefined) return;
      if (full && !shrunk) {
        limit = grownLimit(limit, counted, this.#maxPageBytes);
      }
    }
  }

  /** The live object's uid, or `undefined` when it does not exist. */
  async liveUid(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const uid = (await this.liveMetadata(query, signal))?.uid;
    return typeof uid === "string" ? uid : undefined;
  }

  /** The live object's `metadata`, or `undefined` when it does not exist. */
  async liveMetadata(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    try {
      const object = await this.#client.get<KubeObject>(
        objectUrl(this.#base, query),
        {
          signal,
          accept: METADATA_ONLY,
          maxBytes: this.#maxPageBytes,
          measure: "memory",
        },
      );
      return isRecord(object?.metadata) ? object.metadata : undefined;
    } catch (error) {
      if (error instanceof KubeApiError && error.notFound) return undefined;
      throw error;
    }
  }

  /**
   * An owner, whole. With `query.namespace`, it is read there first: a 404
   * that names it means it does not exist, one that does not (the type is
   * cluster-scoped, or not served) reads it cluster-scoped. Any 404 there
   * means it does not exist.
   */
  async ownerObject(
    query: ObjectQuery,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    const read = (at: ObjectQuery) =>
      this.#client.get<Record<string, unknown>>(objectUrl(this.#base, at), {
        signal,
        maxBytes: this.#maxPageBytes,
        measure: "memory",
      });
    if (query.namespace !== undefined) {
      try {
        const found = await read(query);
        return isRecord(found) ? found : undefined;
      } catch (error) {
        if (!(error instanceof KubeApiError && error.notFound)) throw error;
        if (error.detailsName === query.name) return undefined;
      }
    }
    try {
      const found = await read({
        cluster: query.cluster,
        resource: query.resource,
        name: query.name,
      });
      return isRecord(found) ? found : undefined;
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
      {
        signal,
        accept: METADATA_ONLY,
        maxBytes: this.#maxPageBytes,
        measure: "memory",
      },
    );
    const stamp = object?.metadata?.deletionTimestamp;
    if (typeof stamp !== "string") return undefined;
    const date = new Date(stamp);
    return Number.isNaN(date.getTime()) ? undefined : date;
  }

  /**
   * The identity of the APIExport each type the workspace binds comes from,
   * by `<group>/<resource>`, from its APIBindings' bound resources.
   */
  boundIdentities(
    cluster: string,
    signal: AbortSignal,
    options: { fresh?: boolean } = {},
  ): Promise<ReadonlyMap<string, string>> {
    return options.fresh
      ? this.#bindings.refresh(cluster, signal)
      : this.#bindings.get(cluster, signal);
  }

  async #readBoundIdentities(
    cluster: string,
    signal: AbortSignal,
  ): Promise<ReadonlyMap<string, string>> {
    const list = await this.#client.list(
      `${
        clusterUrl(this.#base, cluster)
      }/apis/apis.kcp.io/v1alpha2/apibindings`,
      { limit: 500, signal, maxBytes: this.#maxPageBytes, measure: "memory" },
    );
    return boundIdentitiesOf(list.items);
  }
}

/**
 * `<group>/<resource>` to the identity hash of the export it is bound from,
 * read from APIBindings' `status.boundResources[].schema.identityHash`.
 */
export function boundIdentitiesOf(
  bindings: readonly unknown[],
): Map<string, string> {
  const identities = new Map<string, string>();
  for (const bound of boundResourcesOf(bindings)) {
    if (bound.identityHash === undefined) continue;
    identities.set(`${bound.group}/${bound.resource}`, bound.identityHash);
  }
  return identities;
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

/**
 * Why a list failed when even a page of one object was over the cap, read
 * after the validator's `listing <type> failed: `: `a page of 1 object
 * would take over 8 MiB of memory, as did pages of 500, 50 and 5: ...`.
 */
function pageTooLarge(sizes: readonly number[], maxBytes: number): string {
  const earlier = sizes.slice(0, -1);
  const also = earlier.length === 0
    ? ""
    : `, as did pages of ${
      earlier.length === 1
        ? earlier[0]
        : `${earlier.slice(0, -1).join(", ")} and ${earlier.at(-1)}`
    }`;
  return `a page of 1 object would take over ${
    formatBytes(maxBytes)
  } of memory${also}: a single object is too large for the webhook to read`;
}

/**
 * The next page's size after a full page of `limit` objects that took
 * `counted` of `maxPageBytes`: as many as fill {@linkcode PAGE_FILL} of it
 * at the same size per object, at most {@linkcode PAGE_GROWTH_FACTOR}
 * times `limit`, and never fewer than `limit`.
 */
export function grownLimit(
  limit: number,
  counted: number,
  maxPageBytes: number,
): number {
  const perObject = Math.max(1, counted) / limit;
  const fits = Math.floor((maxPageBytes * PAGE_FILL) / perObject);
  return Math.max(limit, Math.min(fits, limit * PAGE_GROWTH_FACTOR));
}
