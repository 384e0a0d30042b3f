/**
 * Whether the user behind a review may break glass: a SubjectAccessReview
 * in the consumer's logical cluster, through the front-proxy, for the verb
 * `bypass` on the virtual resource `protections` of our API group, as
 * Kubernetes asks for `escalate` on roles. Nothing stores `protections`:
 * the grant exists only to be asked about.
 *
 * @module
 */
import { GROUP } from "../rules/mod.ts";
import { clusterUrl, type KubeClient } from "../kcp/mod.ts";

/** The virtual resource a break-glass grant names. */
export const BYPASS_RESOURCE = "protections";

/** The verb a break-glass grant names. */
export const BYPASS_VERB = "bypass";

/** The user a review is about, as the AdmissionReview's `userInfo` has it. */
export interface ReviewUser {
  /** User name. */
  username?: string | undefined;
  /** User uid. */
  uid?: string | undefined;
  /** Groups. */
  groups?: readonly string[] | undefined;
  /** Extra attributes (kcp's scopes among them). */
  extra?: Readonly<Record<string, readonly string[]>> | undefined;
}

/** What to ask: may `user` bypass protection in this cluster and namespace. */
export interface BypassQuery {
  /** Logical cluster name of the consumer workspace. */
  cluster: string;
  /** The object's namespace; absent for a cluster-scoped object. */
  namespace?: string;
  /** The deleting user. */
  user: ReviewUser;
}

/** Answers whether a user may bypass protection. */
export interface BypassAuthorizer {
  /**
   * Whether the user is allowed `bypass` on `protections`.
   *
   * @throws {KubeApiError} When kcp cannot answer.
   */
  mayBypass(query: BypassQuery, signal: AbortSignal): Promise<boolean>;
}

/** A {@linkcode BypassAuthorizer} asking kcp with SubjectAccessReviews through the front-proxy. */
export class FrontProxyBypassAuthorizer implements BypassAuthorizer {
  readonly #client: KubeClient;
  readonly #base: string;

  /** Asks with `client` below `base` (the front-proxy URL without `/clusters/...`). */
  constructor(client: KubeClient, base: string) {
    this.#client = client;
    this.#base = base;
  }

  /** Whether the user is allowed `bypass` on `protections` in the cluster. */
  async mayBypass(query: BypassQuery, signal: AbortSignal): Promise<boolean> {
    const review = await this.#client.request<
      { status?: { allowed?: boolean } }
    >(
      "POST",
      `${
        clusterUrl(this.#base, query.cluster)
      }/apis/authorization.k8s.io/v1/subjectaccessreviews`,
      { body: subjectAccessReview(query), signal },
    );
    return review?.status?.allowed === true;
  }
}

/** The SubjectAccessReview that asks whether `query.user` may bypass protection. */
export function subjectAccessReview(query: BypassQuery): unknown {
  const { user } = query;
  return {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    spec: {
      user: user.username ?? "",
      ...(user.uid === undefined ? {} : { uid: user.uid }),
      groups: [...(user.groups ?? [])],
      ...(user.extra === undefined ? {} : {
        extra: Object.fromEntries(
          Object.entries(user.extra).map(([k, v]) => [k, [...v]]),
        ),
      }),
      resourceAttributes: {
        group: GROUP,
        resource: BYPASS_RESOURCE,
        verb: BYPASS_VERB,
        ...(query.namespace === undefined
          ? {}
          : { namespace: query.namespace }),
      },
    },
  };
}
