/**
 * Where the dependents indexes are fed from: each kcp shard, read from the
 * `Shard` objects of the root workspace. On a shard, one wildcard
 * list+watch of a dependent type bound from one export
 * (`/clusters/*\/apis/<group>/<version>/<resource>:<identity hash>`) sees
 * that type in every workspace on the shard, and nothing of any other type
 * or export: the webhook needs `list` and `watch` on that one type in the
 * shard's `system:admin`, where it already may `list` it. A shard's
 * resource versions are its own (one etcd each), so each shard is its own
 * source, and a workspace's freshness is probed on the shard that holds it
 * (`/clusters/<workspace>/...` there; another shard does not know it).
 *
 * @module
 */
import { clusterUrl, pathSegment } from "../kcp/mod.ts";
import { isRecord } from "../runtime/mod.ts";
import type { IndexEndpoint } from "./index_keeper.ts";
import type { IndexSpec } from "./index_plan.ts";

/** Where kcp keeps its shards: `core.kcp.io/v1alpha1` `shards` in `root`. */
export const SHARDS_PATH = "/apis/core.kcp.io/v1alpha1/shards";

/** An identity hash as kcp computes it (hex of a SHA-256). */
const IDENTITY = /^[0-9a-f]{1,128}$/;

/** Options of {@linkcode shardEndpoints}. */
export interface ShardEndpointsOptions {
  /** Whether a shard's `http://` base URL is used (tests only). @default {false} */
  allowInsecureHttp?: boolean;
}

/**
 * One endpoint per shard, from `Shard` objects (`metadata.name`,
 * `spec.baseURL`), sorted by name. A shard without a usable base URL (not
 * absolute `https://`, or with a query or fragment) is left out.
 */
export function shardEndpoints(
  shards: readonly unknown[],
  options: ShardEndpointsOptions = {},
): IndexEndpoint[] {
  const endpoints = new Map<string, IndexEndpoint>();
  for (const shard of shards) {
    if (!isRecord(shard)) continue;
    const name = isRecord(shard.metadata) ? shard.metadata.name : undefined;
    const base = isRecord(shard.spec) ? shard.spec.baseURL : undefined;
    if (typeof name !== "string" || name === "" || typeof base !== "string") {
      continue;
    }
    const url = usableBase(base, options.allowInsecureHttp ?? false);
    if (url === undefined) continue;
    endpoints.set(name, shardEndpoint(name, url));
  }
  return [...endpoints.keys()].sort().map((name) => endpoints.get(name)!);
}

/** The endpoint of one shard at `base`. */
export function shardEndpoint(source: string, base: string): IndexEndpoint {
  return {
    source,
    collection: (spec, cluster) => collectionOn(base, spec, cluster),
  };
}

/**
 * The collection of `spec`'s type on the shard at `base`: across its
 * workspaces (`cluster` `*`, with the identity of the export it is bound
 * from), or in one workspace.
 *
 * @throws {TypeError} If the identity hash is not one, or a part is not a
 * path segment.
 */
export function collectionOn(
  base: string,
  spec: IndexSpec,
  cluster: string,
): string {
  const { group, version, resource } = spec.dependent;
  const api = group === ""
    ? `/api/${pathSegment(version)}`
    : `/apis/${pathSegment(group)}/${pathSegment(version)}`;
  if (cluster !== "*") {
    return `${clusterUrl(base, cluster)}${api}/${pathSegment(resource)}`;
  }
  if (!IDENTITY.test(spec.identity)) {
    throw new TypeError(
      `Cannot watch ${resource}.${group}: the export's identity hash is not one: current value is '${spec.identity}'`,
    );
  }
  return `${clusterUrl(base, "*")}${api}/${
    pathSegment(resource)
  }:${spec.identity}`;
}

/** `base` without a trailing slash when it is a URL a shard may have. */
function usableBase(base: string, insecure: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return undefined;
  }
  if (url.protocol !== "https:" && !(insecure && url.protocol === "http:")) {
    return undefined;
  }
  if (url.search !== "" || url.hash !== "" || url.username !== "") {
    return undefined;
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}
