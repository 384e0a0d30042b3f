/**
 * Where a dependents index is fed from: the virtual workspace of the export
 * its type is bound from, one URL per shard (the export's
 * APIExportEndpointSlice, `status.endpoints[].url`). There, one wildcard
 * list+watch (`<url>/clusters/*\/apis/<group>/<version>/<resource>`) sees
 * the type in every workspace that binds the export, and nothing bound from
 * any other export. kcp authorizes it by `apiexports/content` (list, watch)
 * on that export in the provider's workspace; a shard's own wildcard
 * (`/clusters/*` on the shard) is open only to `system:masters`, which
 * could read and write everything (docs/dependents_index.md, "Access").
 *
 * Each URL is its own source: its resource versions are its shard's. A
 * workspace's freshness is probed with a read of its objects of the type
 * through each URL (`<url>/clusters/<workspace>/...`), which kcp serves
 * from the same watch cache as the wildcard.
 *
 * @module
 */
import { clusterUrl } from "../kcp/mod.ts";
import { collectionUrl } from "./dependent_lister.ts";
import { isRecord } from "../runtime/mod.ts";
import type { IndexEndpoint } from "./index_keeper.ts";
import type { IndexSpec } from "./index_plan.ts";

/** Where a workspace keeps its endpoint slices. */
export const ENDPOINT_SLICES_PATH =
  "/apis/apis.kcp.io/v1alpha1/apiexportendpointslices";

/** Options of {@linkcode sliceEndpoints}. */
export interface SliceEndpointsOptions {
  /** Whether an `http://` URL is used (tests only). @default {false} */
  allowInsecureHttp?: boolean;
}

/**
 * One endpoint per virtual-workspace URL of the slices (`status.endpoints[].url`),
 * sorted and without repeats. A URL that is not absolute `https://`, or has
 * a query, fragment or credentials, is left out.
 */
export function sliceEndpoints(
  slices: readonly unknown[],
  options: SliceEndpointsOptions = {},
): IndexEndpoint[] {
  const urls = new Set<string>();
  for (const slice of slices) {
    const status = isRecord(slice) ? slice.status : undefined;
    const endpoints = isRecord(status) ? status.endpoints : undefined;
    if (!Array.isArray(endpoints)) continue;
    for (const endpoint of endpoints) {
      const url = isRecord(endpoint) ? endpoint.url : undefined;
      if (typeof url !== "string") continue;
      const usable = usableUrl(url, options.allowInsecureHttp ?? false);
      if (usable !== undefined) urls.add(usable);
    }
  }
  return [...urls].sort().map((url) => exportEndpoint(url));
}

/** The endpoint of one virtual-workspace URL of an export. */
export function exportEndpoint(url: string): IndexEndpoint {
  return {
    source: url,
    collection: (spec, cluster) => collectionAt(url, spec, cluster),
  };
}

/**
 * The collection of `spec`'s type at the virtual-workspace URL `url`:
 * across its workspaces (`cluster` `*`), or in one.
 *
 * @throws {TypeError} If a part is not one path segment.
 */
export function collectionAt(
  url: string,
  spec: IndexSpec,
  cluster: string,
): string {
  return collectionUrl(url, { cluster, dependent: spec.dependent });
}

/** The URL of the endpoint slices of `workspace`, narrowed to `name`'s. */
export function sliceCollection(base: string, workspace: string): string {
  return `${clusterUrl(base, workspace)}${ENDPOINT_SLICES_PATH}`;
}

/** `url` without a trailing slash when a virtual workspace may have it. */
function usableUrl(text: string, insecure: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
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
