/**
 * Kubernetes' and kcp's name rules, written out independently of the code
 * under test: the oracle property and fuzz tests judge the code's
 * validation (and what reaches a URL) against.
 *
 * @module
 */

/** A DNS-1123 label as a regular expression source, unanchored. */
export const LABEL = "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?";
const LABEL_RE = new RegExp(`^${LABEL}$`);
const SUBDOMAIN_RE = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/** A DNS-1123 label (a namespace; also the shape of a logical cluster name). */
export function isLabel(value: unknown): value is string {
  return typeof value === "string" && value.length <= 63 &&
    LABEL_RE.test(value);
}

/** Kubernetes' IsDNS1123Subdomain: no limit on the length of one label. */
export function isSubdomain(value: unknown): value is string {
  return typeof value === "string" && value.length <= 253 &&
    SUBDOMAIN_RE.test(value);
}

/** A DNS-1123 subdomain whose labels are DNS-1123 labels, 63 characters at most. */
export function isSubdomainOfLabels(value: unknown): value is string {
  return isSubdomain(value) && value.split(".").every((l) => l.length <= 63);
}
