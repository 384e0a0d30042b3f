/**
 * kcp URL and name shapes: `/clusters/<name-or-path>` URLs, the front-proxy
 * base behind a workspace URL, and workspace paths versus logical cluster
 * names.
 *
 * @module
 */

const PATH_SEGMENT = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const CLUSTER_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// As Kubernetes' IsDNS1123Subdomain: labels of any length, 253 in all.
const DNS_SUBDOMAIN =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_SUBDOMAIN = 253;

/** Annotation in which kcp records the logical cluster of an object. */
export const CLUSTER_ANNOTATION = "kcp.io/cluster";

/**
 * The base URL of a kcp server or front-proxy: the URL with any
 * `/clusters/<...>` suffix and trailing slash cut off.
 *
 * @example Usage
 * ```ts
 * import { baseUrl } from "./urls.ts";
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

/**
 * `<base>/clusters/<cluster>`, for a logical cluster name, a workspace path or
 * `*`; the cluster goes in as one encoded path segment.
 *
 * @throws {TypeError} If `cluster` cannot be one path segment (see {@linkcode pathSegment}).
 */
export function clusterUrl(base: string, cluster: string): string {
  return `${base.replace(/\/+$/, "")}/clusters/${pathSegment(cluster)}`;
}

/**
 * `value` as one URL path segment: every character other than letters,
 * digits, `-._~` and the `:` and `*` that kcp paths use is percent-encoded,
 * so no value can add a segment, a query or a fragment.
 *
 * @example Usage
 * ```ts
 * import { pathSegment } from "./urls.ts";
 * pathSegment("root:org"); // "root:org"
 * pathSegment("a/b?c"); // "a%2Fb%3Fc"
 * ```
 *
 * @throws {TypeError} For `""`, `.` and `..`, which URL parsing would drop or
 * resolve against the previous segment (also when percent-encoded).
 */
export function pathSegment(value: string): string {
  if (value === "" || value === "." || value === "..") {
    throw new TypeError(
      `Cannot use '${value}' as a URL path segment`,
    );
  }
  // encodeURIComponent leaves letters, digits and -_.!~*'() as they are and
  // writes ":" as %3A; ":" and "*" are kept, !'() encoded too.
  return encodeURIComponent(value).replace(
    /[!'()]|%3A/g,
    (c) => c === "%3A" ? ":" : `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Whether `value` is a DNS-1123 label (a namespace name): lowercase
 * letters, digits and `-`, starting and ending with a letter or digit, at
 * most 63 characters.
 */
export function isDnsLabel(value: string): boolean {
  return DNS_LABEL.test(value);
}

/**
 * Whether `value` is a DNS-1123 subdomain (the name of a custom resource):
 * lowercase alphanumeric parts joined by `.` (with `-` inside a part), at
 * most 253 characters in all, as Kubernetes checks it.
 */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= MAX_SUBDOMAIN && DNS_SUBDOMAIN.test(value);
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
