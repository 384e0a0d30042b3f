/**
 * The tally of statuses a pass plans: which objects need a status write
 * ({@linkcode StatusAction}, the status built from the conditions a plan
 * wants, transition times kept where a condition's status did not change),
 * which show it already, and how many objects show each Ready condition.
 * It writes nothing: the applier does. Shared by the rules' and the Locks'
 * conditions.
 *
 * @module
 */
import {
  type Condition,
  type DependencyRuleStatus,
  READY_CONDITION,
} from "../rules/mod.ts";
import { clusterOf, type EndpointObject, type KubeObject } from "../kcp/mod.ts";
import { isRecord } from "../runtime/mod.ts";
import type { WebhookClientSettings } from "./webhook_config.ts";

/** What every status is computed from. */
export interface StatusContext {
  /** Webhook client settings, or why they cannot be read. */
  settings: WebhookClientSettings | { error: string };
  /** The last failed write per provider cluster, if it failed. */
  installErrors: ReadonlyMap<string, string>;
  /** Provider clusters with a configuration write still to make. */
  pendingClusters: ReadonlySet<string>;
  /** The current time, RFC 3339, for new condition transitions. */
  now: string;
  /** What earlier passes found, kept by whoever runs the passes (`PlanMemo`). */
  memo: ShownMemo;
}

/**
 * What the tally remembers between passes: the conditions each object was
 * last found to show. The plan hands out the same conditions while they do
 * not change, and the watch cache the same object while it does not
 * change, so most objects are found up to date by one lookup.
 */
export interface ShownMemo {
  /** The conditions each object was last found to show. */
  readonly shown: WeakMap<KubeObject, readonly Condition[]>;
}

/** The desired status of one rule or Lock. */
export interface StatusAction {
  /** The object's logical cluster. */
  cluster: string;
  /** The object's name. */
  name: string;
  /** A Lock's namespace; absent for a DependencyRule. */
  namespace?: string;
  /** Endpoint the object was read from. */
  endpoint: string;
  /** The resourceVersion the status was computed from. */
  resourceVersion: string;
  /** The status to write. */
  status: DependencyRuleStatus;
}

/** Status writes, and the objects counted by their Ready condition's `<status>/<reason>`. */
export interface PlannedStatuses {
  /** Status writes (only where the status differs and is settled). */
  statuses: StatusAction[];
  /** Objects by their Ready condition's status and reason, for metrics. */
  ready: Map<string, number>;
}

/** Whether the object already shows `status` (transition times aside). */
export function statusUpToDate(
  object: KubeObject,
  status: DependencyRuleStatus,
): boolean {
  const current = object.status as DependencyRuleStatus | undefined;
  if (current?.observedGeneration !== status.observedGeneration) return false;
  const have = currentConditions(object);
  const want = status.conditions ?? [];
  if (have.length !== want.length) return false;
  return want.every((w) => {
    const h = have.find((c) => c.type === w.type);
    return h !== undefined && h.status === w.status &&
      h.reason === w.reason && h.message === w.message &&
      h.observedGeneration === w.observedGeneration;
  });
}

/** Status writes being planned, and the Ready conditions counted. */
export class StatusTally {
  /** The status writes planned so far. */
  readonly statuses: StatusAction[] = [];
  /** The objects counted so far, by their Ready condition's `<status>/<reason>`. */
  readonly ready = new Map<string, number>();
  readonly #memo: ShownMemo;

  /** Builds an empty tally that remembers in `memo` what objects show. */
  constructor(memo: ShownMemo) {
    this.#memo = memo;
  }

  /** Counts one object as its Ready condition. */
  count(condition: Condition): void {
    const label = `${condition.status}/${condition.reason}`;
    this.ready.set(label, (this.ready.get(label) ?? 0) + 1);
  }

  /** Counts an object whose status is not settled as the Ready condition it shows, if any. */
  countShown(object: KubeObject): void {
    const shown = currentConditions(object).find((c) =>
      c.type === READY_CONDITION
    );
    if (shown !== undefined) this.count(shown);
  }

  /** Plans writing `conditions` unless the object shows them already. */
  write(
    source: EndpointObject,
    options: { now: string; conditions: Condition[]; namespace?: string },
  ): void {
    const { object } = source;
    // Most objects show their status already: compare before building one.
    if (this.#shows(object, options.conditions)) return;
    const status = statusFor(object, options);
    this.statuses.push({
      cluster: clusterOf(object),
      name: object.metadata?.name ?? "",
      ...(options.namespace === undefined
        ? {}
        : { namespace: options.namespace }),
      endpoint: source.endpoint,
      resourceVersion: object.metadata?.resourceVersion ?? "",
      status,
    });
  }

  /**
   * Whether the object shows `conditions` for its generation already, as
   * {@linkcode statusUpToDate} would find the status built from them.
   */
  #shows(object: KubeObject, conditions: readonly Condition[]): boolean {
    // The plan hands out the same conditions while they do not change, and
    // the watch cache the same object while it does not change.
    const { shown } = this.#memo;
    if (shown.get(object) === conditions) return true;
    const generation = object.metadata?.generation;
    const current = object.status as DependencyRuleStatus | undefined;
    if (current?.observedGeneration !== generation) return false;
    const have = currentConditions(object);
    if (have.length !== conditions.length) return false;
    const found = conditions.every((w) => {
      const h = have.find((c) => c.type === w.type);
      return h !== undefined && h.status === w.status &&
        h.reason === w.reason && h.message === w.message &&
        h.observedGeneration === generation;
    });
    if (found) shown.set(object, conditions);
    return found;
  }
}

/** The status to show, keeping transition times of unchanged conditions. */
function statusFor(
  object: KubeObject,
  options: { now: string; conditions: readonly Condition[] },
): DependencyRuleStatus {
  const generation = object.metadata?.generation;
  const previous = currentConditions(object);
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: options.conditions.map((c) => {
      const before = previous.find((p) => p.type === c.type);
      return {
        ...c,
        ...(generation === undefined ? {} : { observedGeneration: generation }),
        lastTransitionTime: before !== undefined && before.status === c.status
          ? before.lastTransitionTime
          : options.now,
      };
    }),
  };
}

/** The object's conditions, those malformed left out. */
function currentConditions(object: KubeObject): Condition[] {
  const status = object.status as { conditions?: unknown } | undefined;
  const conditions = status?.conditions;
  if (!Array.isArray(conditions)) return [];
  return conditions.filter((c): c is Condition =>
    isRecord(c) && typeof c.type === "string" &&
    typeof c.status === "string" && typeof c.lastTransitionTime === "string"
  );
}
