/**
 * kcp URL and name shapes: `/clusters/<name-or-path>` URLs, the front-proxy
 * base behind a workspace URL, and workspace paths versus logical cluster
 * names.
 *
 * @module
 */

const PATH_SEGMENT = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const CLUSTER_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The base URL of a kcp server or front-proxy: the URL with any
 * `/clusters/<...>` suffix and trailing slash cut off.
 *
 * @example Usage
 * ```ts
 * import { baseUrl } from "./kcp.ts";
 * baseUrl("https://kcp.example:6443/clusters/root:dep-ctrl"); // "https://kcp.example:6443"
 * ```
 *
 * @throws {TypeError} If `server` is not an absolute http(s) URL.
 */
export function baseUrl(server: string): string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new TypeError(
      `Cannot parse kcp server URL: current value is '${server}'`,
    );
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError(
      `Cannot use kcp server URL with scheme '${url.protocol}': current value is '${server}'`,
    );
  }
  const at = url.pathname.indexOf("/clusters/");
  const path = at === -1 ? url.pathname : url.pathname.slice(0, at);
  return `${url.origin}${path.replace(/\/+$/, "")}`;
}

/** `<base>/clusters/<cluster>`, for a logical cluster name, a workspace path or `*`. */
export function clusterUrl(base: string, cluster: string): string {
  return `${base.replace(/\/+$/, "")}/clusters/${cluster}`;
}

/**
 * Whether `value` is a workspace path such as `root` or `root:org-1:team-2`:
 * lowercase DNS-label segments joined by `:`.
 */
export function isWorkspacePath(value: string): boolean {
  return value.split(":").every((segment) => PATH_SEGMENT.test(segment));
}

/**
 * Whether `value` can be a logical cluster name (`root`, or the hash-like
 * `spec.cluster` of a workspace): one segment, no `:`.
 */
export function isLogicalClusterName(value: string): boolean {
  return CLUSTER_NAME.test(value);
}

/**
 * Splits a workspace path into its parent path and its last segment, or
 * `undefined` for `root` (which has no parent).
 *
 * @throws {TypeError} If `path` is not a workspace path.
 */
export function splitWorkspacePath(
  path: string,
): { parent: string; name: string } | undefined {
  if (!isWorkspacePath(path)) {
    throw new TypeError(
      `Cannot split workspace path: current value is '${path}'`,
    );
  }
  const at = path.lastIndexOf(":");
  if (at === -1) return undefined;
  return { parent: path.slice(0, at), name: path.slice(at + 1) };
}
