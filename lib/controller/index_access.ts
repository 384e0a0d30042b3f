/**
 * Whether the webhook's identity may feed its dependents index for a rule
 * (the webhook's `--dependents-index`; the controller checks it with its
 * own `--dependents-index`). A rule is indexed when it has no `spec.when`
 * (an expression may read any field, which the index does not keep) and
 * at least one dependency is read on the dependent (`fieldRef.from:
 * Dependent`, the default): owners named by the protected object or its
 * Namespace are read by name on each review, never indexed. For such a
 * rule the webhook needs, in the rule's own workspace (where its dependent
 * export is):
 *
 * - `watch` on the dependent type (besides the `get` and `list` that
 *   `webhook_access.ts` checks);
 * - `list` and `watch` on `apiexports/content` of the rule's dependent
 *   export, by name (`spec.dependent.apiExportName`): the index is fed
 *   through that export's virtual workspace;
 *
 * which `controller grants --dependents-index` grants, and `list` and
 * `watch` on `apiexportendpointslices`, where the webhook learns that
 * virtual workspace's URLs (`manifests/kcp/system-admin/dependents-index`).
 *
 * Without them the index cannot be fed and the webhook lists the dependents
 * on every review instead: deletes stay protected, only more slowly. So a
 * missing grant never changes a rule's Ready condition: it shows in its own
 * condition, `Indexed` (see `rule_status_plan.ts`), asked about with the
 * same SubjectAccessReviews and caches as the reads of `webhook_access.ts`.
 *
 * @example Usage
 * ```ts
 * import { indexAccessNeeded } from "./index_access.ts";
 *
 * indexAccessNeeded("c1", {
 *   spec: {
 *     dependent: {
 *       apiExportName: "compute.example.com",
 *       group: "compute.example.com",
 *       kind: "VirtualMachine",
 *       resource: "virtualmachines",
 *     },
 *     dependencies: [{ fieldRef: {} }],
 *   },
 * }).length; // 5
 * ```
 *
 * @module
 */
import type { ReferenceSource } from "../rules/mod.ts";
import type { Reading } from "../runtime/mod.ts";
import {
  accessKey,
  type AccessMemo,
  type AccessRef,
} from "./webhook_access.ts";

/** What {@linkcode indexAccessNeeded} and {@linkcode notIndexedReason} read of a rule. */
export interface IndexRuleTypes {
  spec: {
    dependent: {
      apiExportName: string;
      group: string;
      kind: string;
      resource: string;
    };
    dependencies: readonly {
      /** Where the reference is read; absent: on the dependent. */
      fieldRef?: { from?: ReferenceSource | undefined };
    }[];
    when?: string | undefined;
  };
}

/**
 * What the index checks remember between passes, held by the plan's memo
 * (`PlanMemo`), per rule object (which does not change).
 */
export interface IndexAccessMemo extends Pick<AccessMemo, "accessKeys"> {
  /** {@linkcode indexAccessNeeded}'s last answer per rule object. */
  readonly indexNeeded: WeakMap<
    IndexRuleTypes,
    { cluster: string; refs: readonly Readonly<AccessRef>[] }
  >;
}

/** The group of `apiexports` and `apiexportendpointslices`. */
const KCP_APIS = "apis.kcp.io";

/** The grant `controller grants --dependents-index` prints. */
export const INDEX_GRANTS_COMMAND =
  "controller grants --dependents-index --kubeconfig=<webhook kubeconfig> | kubectl apply -f -";

/** The grant `manifests/kcp/system-admin/dependents-index` holds. */
export const INDEX_SLICES_COMMAND =
  "kubectl apply -k manifests/kcp/system-admin/dependents-index";

/**
 * Why the webhook does not index `rule`'s dependents, or `undefined` when
 * it does (see the module's header).
 */
export function notIndexedReason(rule: IndexRuleTypes): string | undefined {
  const { dependent, dependencies, when } = rule.spec;
  const type = `${dependent.resource}.${dependent.group}`;
  if (when !== undefined) {
    return `not indexed: spec.when may read any field of a ${dependent.kind}, which the dependents index does not keep, so the webhook lists ${type} on each review`;
  }
  if (
    !dependencies.some((d) => (d.fieldRef?.from ?? "Dependent") === "Dependent")
  ) {
    return `not indexed: every dependency is read on the protected object or its Namespace (fieldRef.from Target or TargetNamespace), whose owners the webhook reads by name on each review`;
  }
  return undefined;
}

/**
 * The reads the webhook must be allowed, besides those of
 * `accessNeeded()`, to feed its dependents index for a rule in `cluster`,
 * as frozen refs; none for a rule it does not index. With a `memo`,
 * remembered per `rule` object, which must not change afterwards.
 */
export function indexAccessNeeded(
  cluster: string,
  rule: IndexRuleTypes,
  options: { memo?: IndexAccessMemo } = {},
): readonly Readonly<AccessRef>[] {
  const { memo } = options;
  const known = memo?.indexNeeded.get(rule);
  if (known !== undefined && known.cluster === cluster) return known.refs;
  const { dependent } = rule.spec;
  const refs: Readonly<AccessRef>[] = [];
  if (notIndexedReason(rule) === undefined) {
    const content = {
      cluster,
      group: KCP_APIS,
      resource: "apiexports",
      subresource: "content",
      name: dependent.apiExportName,
    };
    const slices = {
      cluster,
      group: KCP_APIS,
      resource: "apiexportendpointslices",
    };
    refs.push(
      {
        cluster,
        verb: "watch",
        group: dependent.group,
        resource: dependent.resource,
      },
      { ...content, verb: "list" },
      { ...content, verb: "watch" },
      { ...slices, verb: "list" },
      { ...slices, verb: "watch" },
    );
  }
  const frozen = Object.freeze(refs.map((ref) => Object.freeze(ref)));
  memo?.indexNeeded.set(rule, { cluster, refs: frozen });
  return frozen;
}

/** What the answers say of the reads that feed a rule's index. */
export interface IndexAccessProblems {
  /** Each read the webhook is not allowed, as `<verb> <what>`. */
  missing: string[];
  /** Whether one of them is on `apiexportendpointslices`. */
  slicesMissing: boolean;
  /** One note per read that could not be asked about. */
  unverified: string[];
  /** How many reads have been neither answered nor failed yet (being asked). */
  unanswered: number;
}

/**
 * The reads of `needed` that kcp said the webhook may not make, those it
 * could not be asked about, and how many are still being asked (neither).
 */
export function indexAccessProblems(
  needed: readonly AccessRef[],
  readings: ReadonlyMap<string, Reading<boolean>>,
  options: { user: string; memo?: Pick<AccessMemo, "accessKeys"> },
): IndexAccessProblems {
  const problems: IndexAccessProblems = {
    missing: [],
    slicesMissing: false,
    unverified: [],
    unanswered: 0,
  };
  for (const ref of needed) {
    const reading = readings.get(accessKey(ref, options.memo));
    if (reading?.answer === false) {
      problems.missing.push(`${ref.verb} ${describeRef(ref)}`);
      if (ref.resource === "apiexportendpointslices") {
        problems.slicesMissing = true;
      }
    } else if (reading?.answer === undefined && reading?.error !== undefined) {
      problems.unverified.push(
        `whether ${options.user} may ${ref.verb} ${
          describeRef(ref)
        }: ${reading.error}`,
      );
    } else if (reading?.answer === undefined) {
      problems.unanswered++;
    }
  }
  return problems;
}

/**
 * The message of a rule whose index the webhook may not feed: what it may
 * not do, what that costs, and how to grant it.
 */
export function cannotWatchMessage(
  rule: IndexRuleTypes,
  problems: Pick<IndexAccessProblems, "missing" | "slicesMissing">,
  options: { user: string },
): string {
  const { dependent } = rule.spec;
  const grants = problems.slicesMissing
    ? `${INDEX_GRANTS_COMMAND}, and ${INDEX_SLICES_COMMAND}`
    : INDEX_GRANTS_COMMAND;
  return `the webhook's identity ${options.user} may not ${
    problems.missing.join(", ")
  }, so it cannot feed its dependents index of ${dependent.resource}.${dependent.group} and lists them on every review instead (deletes stay protected, only more slowly): ` +
    `grant it in system:admin of every shard (${grants})`;
}

/** The message of a rule whose index the webhook may feed. */
export function indexedMessage(
  rule: IndexRuleTypes,
  options: { user: string },
): string {
  const { dependent } = rule.spec;
  return `the webhook's identity ${options.user} may watch ${dependent.resource}.${dependent.group} and the content of the APIExport ${dependent.apiExportName}: with --dependents-index, the webhook answers this rule's reviews from its dependents index`;
}

/** The message of a rule whose index reads could not all be asked about. */
export function indexNotCheckedMessage(unverified: readonly string[]): string {
  return `not checked whether the webhook may feed its dependents index: ${
    [...new Set(unverified)].join("; ")
  }`;
}

/** `<resource>.<group>`, with `/<subresource>` and ` <name>` when set. */
function describeRef(ref: AccessRef): string {
  const type = ref.group === "" ? ref.resource : `${ref.resource}.${ref.group}`;
  const sub = ref.subresource === undefined ? "" : `/${ref.subresource}`;
  const name = ref.name === undefined ? "" : ` ${ref.name}`;
  return `${type}${sub}${name}`;
}
