/**
 * Whether the webhook's identity may read what a rule needs it to read:
 * `get` on each protected type (the object under review), `list` on the
 * dependent type when a dependency is read on the dependent (`fieldRef.from:
 * Dependent`, the default: the dependents are listed), `get` on it always
 * (the owners a protected object or its Namespace names are read one by
 * one, `from: Target` or `TargetNamespace`), and `get` on core `namespaces`
 * when a dependency is read on the protected object's Namespace
 * (`TargetNamespace`). Without them every delete of the protected type is
 * denied with 503 (fail closed), so a rule whose reads are not granted is
 * not `Enforced` but `WebhookCannotRead`, naming the permission and how to
 * grant it (`controller grants` prints each of these for the live rules).
 *
 * The controller asks kcp with a SubjectAccessReview about the webhook's
 * user in the rule's own workspace, through the front-proxy: kcp answers it
 * from the same grants the webhook's reads meet there (the ClusterRoles
 * bound in `system:admin` of that workspace's shard). The controller's
 * identity needs `create` on `subjectaccessreviews`
 * (`manifests/kcp/system-admin`). A review that cannot be made fails
 * nothing: the rule stays `Enforced`, saying what could not be checked.
 * While a read has been neither answered nor failed, an installed rule's
 * status waits for it (see `rule_status_plan.ts`); the reconciler bounds that
 * wait (`access_wait.ts`): a read still unanswered then counts as one that
 * could not be asked.
 *
 * @example Usage
 * ```ts
 * import { accessProblems } from "./webhook_access.ts";
 *
 * accessProblems([], new Map(), { user: "dependency-webhook" }); // { missing: [], unverified: [] }
 * ```
 *
 * @module
 */
import { clusterUrl, type KubeClient } from "../kcp/mod.ts";
import type { ReferenceSource } from "../rules/mod.ts";
import { isRecord, type Reading } from "../runtime/mod.ts";

/** One read the webhook must be allowed, in one workspace. */
export interface AccessRef {
  /** The logical cluster to ask in (the rule's own). */
  cluster: string;
  /** `get` or `list`; `watch` for the dependents index (`index_access.ts`). */
  verb: "get" | "list" | "watch";
  /** API group (`""`: core). */
  group: string;
  /** Plural resource. */
  resource: string;
  /** A subresource (`apiexports/content`); absent: the resource itself. */
  subresource?: string;
  /** One object's name; absent: every object. */
  name?: string;
}

/**
 * What the access checks remember between passes, held by the plan's memo
 * (`PlanMemo`): a pass asks for every rule's reads and their keys, and a
 * rule object (as parsed from the watch cache) does not change.
 */
export interface AccessMemo {
  /** The keys of the frozen refs {@linkcode accessNeeded} returns, computed once each. */
  readonly accessKeys: WeakMap<AccessRef, string>;
  /** {@linkcode accessNeeded}'s last answer per rule object. */
  readonly accessNeeded: WeakMap<
    AccessRuleTypes,
    { cluster: string; refs: readonly Readonly<AccessRef>[] }
  >;
}

/**
 * The key of an {@linkcode AccessRef} in the cache's readings: its fields
 * joined by newlines, which none of them can hold (a logical cluster name,
 * a verb, a DNS subdomain, DNS labels and a name), the subresource and the
 * name only when set. With a `memo`, the key of a frozen ref is computed
 * once.
 */
export function accessKey(
  ref: AccessRef,
  memo?: Pick<AccessMemo, "accessKeys">,
): string {
  // The refs accessNeeded() hands out are frozen: their keys are kept.
  const keys = memo !== undefined && Object.isFrozen(ref)
    ? memo.accessKeys
    : undefined;
  let key = keys?.get(ref);
  if (key === undefined) {
    key = `${ref.cluster}\n${ref.verb}\n${ref.group}\n${ref.resource}`;
    if (ref.subresource !== undefined || ref.name !== undefined) {
      key += `\n${ref.subresource ?? ""}\n${ref.name ?? ""}`;
    }
    keys?.set(ref, key);
  }
  return key;
}

/**
 * Asks kcp whether `user` may `ref.verb` `ref.resource` (its
 * `ref.subresource`, the object `ref.name`, when set) in `ref.cluster`
 * (every namespace), with a SubjectAccessReview through the front-proxy.
 *
 * @throws {KubeApiError} When kcp does not answer it (403, outage).
 */
export async function readWebhookAccess(
  client: KubeClient,
  base: string,
  ref: AccessRef,
  options: { user: string; signal?: AbortSignal },
): Promise<boolean> {
  const answer = await client.request<unknown>(
    "POST",
    `${
      clusterUrl(base, ref.cluster)
    }/apis/authorization.k8s.io/v1/subjectaccessreviews`,
    {
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: options.user,
          resourceAttributes: {
            verb: ref.verb,
            group: ref.group,
            resource: ref.resource,
            ...(ref.subresource === undefined
              ? {}
              : { subresource: ref.subresource }),
            ...(ref.name === undefined ? {} : { name: ref.name }),
          },
        },
      },
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    },
  );
  const status = isRecord(answer) && isRecord(answer.status)
    ? answer.status
    : {};
  return status.allowed === true;
}

/** The types a rule names, as {@linkcode accessNeeded} reads them. */
export interface AccessRuleTypes {
  spec: {
    dependent: { group: string; resource: string };
    dependencies: readonly {
      group: string;
      resource: string;
      /** Where the reference is read; absent: on the dependent. */
      fieldRef?: { from?: ReferenceSource | undefined };
    }[];
  };
}

/** Core Namespaces, read (metadata) for `fieldRef.from: TargetNamespace`. */
const NAMESPACES = { group: "", resource: "namespaces" };

/**
 * The reads a rule in `cluster` needs the webhook to be allowed, once each,
 * as frozen refs. With a `memo`, remembered per `rule` object, which must
 * not change afterwards: the same frozen list is returned to every caller
 * with that memo.
 */
export function accessNeeded(
  cluster: string,
  rule: AccessRuleTypes,
  options: { memo?: AccessMemo } = {},
): readonly Readonly<AccessRef>[] {
  const { memo } = options;
  const known = memo?.accessNeeded.get(rule);
  if (known !== undefined && known.cluster === cluster) return known.refs;
  const { dependent, dependencies } = rule.spec;
  const sources = new Set(
    dependencies.map((d) => d.fieldRef?.from ?? "Dependent"),
  );
  const refs = new Map<string, AccessRef>();
  const add = (ref: AccessRef) => {
    const key = accessKey(ref);
    if (!refs.has(key)) refs.set(key, Object.freeze(ref));
  };
  // Dependents are listed only for what they name; owners are read by name.
  if (sources.has("Dependent")) {
    add({ cluster, verb: "list", ...typeOf(dependent) });
  }
  add({ cluster, verb: "get", ...typeOf(dependent) });
  for (const d of dependencies) add({ cluster, verb: "get", ...typeOf(d) });
  if (sources.has("TargetNamespace")) {
    add({ cluster, verb: "get", ...NAMESPACES });
  }
  const frozen = Object.freeze([...refs.values()]);
  memo?.accessNeeded.set(rule, { cluster, refs: frozen });
  return frozen;
}

function typeOf(t: { group: string; resource: string }) {
  return { group: t.group, resource: t.resource };
}

/** What the answers say of a rule's reads. */
export interface AccessProblems {
  /** One message per read the webhook is not allowed. */
  missing: string[];
  /** One note per read that could not be asked about. */
  unverified: string[];
  /** How many reads have been neither answered nor failed yet (being asked). */
  unanswered: number;
}

/**
 * The reads of `needed` that kcp said the webhook may not make, those it
 * could not be asked about, and how many are still being asked (neither).
 */
export function accessProblems(
  needed: readonly AccessRef[],
  readings: ReadonlyMap<string, Reading<boolean>>,
  options: { user: string; memo?: Pick<AccessMemo, "accessKeys"> },
): AccessProblems {
  const problems: AccessProblems = {
    missing: [],
    unverified: [],
    unanswered: 0,
  };
  for (const ref of needed) {
    const reading = readings.get(accessKey(ref, options.memo));
    const type = ref.group === ""
      ? ref.resource
      : `${ref.resource}.${ref.group}`;
    if (reading?.answer === false) {
      problems.missing.push(
        `the webhook's identity ${options.user} may not ${ref.verb} ${type}, so every delete it protects is denied with 503: ` +
          `grant it in system:admin of every shard (controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -)`,
      );
    } else if (reading?.answer === undefined && reading?.error !== undefined) {
      problems.unverified.push(
        `whether ${options.user} may ${ref.verb} ${type}: ${reading.error}`,
      );
    } else if (reading?.answer === undefined) {
      problems.unanswered++;
    }
  }
  return problems;
}
