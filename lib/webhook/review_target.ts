/**
 * The object a review is about, read from the AdmissionReview and checked:
 * every part that goes into a URL (logical cluster, namespace, name) is
 * validated against Kubernetes' and kcp's name rules before use, so a
 * crafted review cannot change where the webhook sends a request.
 *
 * @module
 */
import {
  CLUSTER_ANNOTATION,
  isDnsLabel,
  isDnsSubdomain,
  isLogicalClusterName,
} from "../kcp/mod.ts";
import type { GroupVersionResource } from "../rules/mod.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import { isRecord } from "../runtime/mod.ts";

/** The object a review is about, checked. */
export interface ReviewTarget {
  /** The consumer's logical cluster, from the `kcp.io/cluster` annotation. */
  cluster: string;
  /** Its namespace; absent for a cluster-scoped object (and a Namespace). */
  namespace?: string;
  /** Its name. */
  name: string;
  /** The `metadata.uid` the review carries, confirmed against the live object. */
  uid: string;
  /** Its type. */
  resource: GroupVersionResource;
}

/**
 * The object `request` is about, with every part that goes into a URL
 * checked; or what is wrong, as a message for a 400 answer.
 *
 * @param request The review's request.
 * @param object The object it carries (`oldObject` for a DELETE).
 */
export function reviewTarget(
  request: AdmissionRequest,
  object: Record<string, unknown>,
): ReviewTarget | string {
  const metadata = asRecord(object.metadata);
  const cluster = asRecord(metadata?.annotations)?.[CLUSTER_ANNOTATION];
  if (typeof cluster !== "string" || cluster === "") {
    return `cannot tell the workspace of the object being deleted: it has no ${CLUSTER_ANNOTATION} annotation`;
  }
  if (!isLogicalClusterName(cluster)) {
    return `cannot tell the workspace of the object being deleted: its ${CLUSTER_ANNOTATION} annotation is not a logical cluster name: current value is ${
      quote(cluster)
    }`;
  }
  // For each item of a DELETECOLLECTION kcp sends an empty request.name.
  const name = typeof metadata?.name === "string" && metadata.name !== ""
    ? metadata.name
    : request.name;
  if (name === "") return "cannot tell the name of the object being deleted";
  if (!isDnsSubdomain(name)) {
    return `cannot use the name of the object being deleted: it is not a DNS-1123 subdomain: current value is ${
      quote(name)
    }`;
  }
  if (request.name !== "" && request.name !== name) {
    return `the review names ${quote(request.name)} but carries the object ${
      quote(name)
    }`;
  }
  // For a Namespace the API server sets request.namespace to its own name;
  // the object itself is cluster-scoped.
  const namespace = isNamespaceType(request.resource)
    ? undefined
    : request.namespace || undefined;
  if (namespace !== undefined && !isDnsLabel(namespace)) {
    return `cannot use the namespace of the object being deleted: it is not a DNS-1123 label: current value is ${
      quote(namespace)
    }`;
  }
  const uid = metadata?.uid;
  if (typeof uid !== "string" || uid === "") {
    return "cannot confirm the object being deleted: it has no metadata.uid";
  }
  return {
    cluster,
    ...(namespace === undefined ? {} : { namespace }),
    name,
    uid,
    resource: {
      group: request.resource.group,
      version: request.resource.version,
      resource: request.resource.resource,
    },
  };
}

/** `vpcs/vpc-a`: how messages name the target. */
export function shownTarget(target: ReviewTarget): string {
  return `${target.resource.resource}/${target.name}`;
}

/** Whether the type is core `namespaces`. */
export function isNamespaceType(
  type: { group: string; resource: string },
): boolean {
  return type.group === "" && type.resource === "namespaces";
}

/** A JSON rendering of a tenant's string, cut short when long. */
export function quote(value: string): string {
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 80)}... (truncated)` : text;
}

/** `value` when it is a JSON object, `undefined` otherwise: for `?.` chains. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}
