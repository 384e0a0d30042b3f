/**
 * The admission decision for a DELETE: which rules protect the type, which
 * dependents in the consumer's workspace still refer to the object, and the
 * answer. Pure given a {@linkcode DependentSource}; fails closed.
 *
 * @module
 */
import {
  BYPASS_RESOURCE,
  BYPASS_VERB,
  type BypassAuthorizer,
  type ReviewUser,
} from "./access_review.ts";
import {
  CLUSTER_ANNOTATION,
  isDnsLabel,
  isDnsSubdomain,
  isLogicalClusterName,
  KubeApiError,
} from "../kcp/mod.ts";
import {
  formatFieldPath,
  GROUP,
  type GroupVersionResource,
  gvrKey,
  referencesOf,
  SKIP_PROTECTION_ANNOTATION,
} from "../rules/mod.ts";
import {
  type AdmissionRequest,
  type AdmissionResponse,
  allow,
  deny,
  objectOf,
} from "./admission_review.ts";
import {
  compareStrings,
  errorText,
  type FairQueue,
  isRecord,
} from "../runtime/mod.ts";
import type { Protection, RuleRegistry } from "./rule_registry.ts";
import { lockedMessage, type LockHold, type LockIndex } from "../locks/mod.ts";

/** The exact denial while rules are not loaded (scripts match on it). */
export const NOT_INITIALIZED_MESSAGE =
  "dependency webhook not yet initialized, retry later";

/**
 * The one denial of a review that the live object does not confirm: the
 * object is gone, or its uid is not the one the review carries. It names
 * nothing, so a forged review learns nothing from it.
 */
export const UNCONFIRMED_MESSAGE =
  "cannot confirm the object being deleted: it no longer exists as the review describes it " +
  "(deleted or recreated meanwhile); retry the delete";

/** What to list: one dependent type in one logical cluster, one namespace or all. */
export interface DependentQuery {
  /** Logical cluster name of the consumer workspace. */
  cluster: string;
  /** Namespace to list in; absent means all namespaces. */
  namespace?: string;
  /** The dependent type. */
  dependent: GroupVersionResource;
}

/** One object: the one a review is about. */
export interface ObjectQuery {
  /** Logical cluster name of the consumer workspace. */
  cluster: string;
  /** Its namespace; absent for a cluster-scoped object. */
  namespace?: string;
  /** Its type. */
  resource: GroupVersionResource;
  /** Its name. */
  name: string;
}

/** Reads a consumer workspace: dependents page by page, and the live object under review. */
export interface DependentSource {
  /**
   * Pages of the dependents a query selects (so memory stays bounded).
   *
   * @throws {KubeApiError} On failure; `notFound` means the workspace does not serve the type.
   */
  pages(
    query: DependentQuery,
    signal: AbortSignal,
  ): AsyncIterable<readonly unknown[]>;
  /**
   * The `metadata.uid` of the live object, or `undefined` when it does not exist.
   *
   * @throws {KubeApiError} On any other failure.
   */
  liveUid(query: ObjectQuery, signal: AbortSignal): Promise<string | undefined>;
  /**
   * When kcp marked the logical cluster for deletion (the `deletionTimestamp`
   * of its `LogicalCluster` named `cluster`), or `undefined` while it is not
   * being deleted.
   *
   * @throws {KubeApiError} On failure, including a missing LogicalCluster.
   */
  workspaceDeletedAt(
    cluster: string,
    signal: AbortSignal,
  ): Promise<Date | undefined>;
  /**
   * The identity of the APIExport each type the workspace binds comes from,
   * by `<group>/<resource>`; a type of the workspace's own has none.
   *
   * @throws {KubeApiError} On failure.
   */
  boundIdentities(
    cluster: string,
    signal: AbortSignal,
  ): Promise<ReadonlyMap<string, string>>;
}

/** How a review ended, for metrics and logs. */
export type Outcome =
  | "allowed"
  | "allowed_skip"
  | "allowed_workspace_deleting"
  | "denied_referenced"
  | "denied_not_ready"
  | "denied_error"
  | "denied_invalid"
  | "denied_unconfirmed"
  | "denied_busy"
  | "denied_skip_unauthorized"
  | "denied_locked";

/** A decision: the response and why. */
export interface Verdict {
  /** The AdmissionReview response. */
  response: AdmissionResponse;
  /** Why, in one word. */
  outcome: Outcome;
  /** Number of blocking dependents found (denied_referenced only). */
  blockers?: number;
  /** The permission kcp refused our identity (denied_error only). */
  forbidden?: Permission;
}

/** A permission on a type: what a 403 refused. */
export interface Permission {
  /** The verb refused. */
  verb: "get" | "list";
  /** The type's API group (`""` for core). */
  group: string;
  /** The type's resource. */
  resource: string;
}

/** Options for {@linkcode DeletionValidator}. */
export interface DeletionValidatorOptions {
  /** Deadline for all lists of one review, well inside kcp's 10 s webhook timeout. @default {7_000} */
  timeoutMs?: number;
  /** How many blockers the message names before "and N more". @default {10} */
  maxNamed?: number;
  /**
   * Bounds the reviews that read kcp at once (one permit each), fair across
   * logical clusters: a workspace's reviews wait behind each other, not in
   * front of other workspaces'. A review that gets no permit within
   * `queueTimeoutMs` (or whose workspace has too many waiting) is denied as
   * busy.
   * @default {no bound}
   */
  reviews?: FairQueue;
  /** How long a review waits for a permit of `reviews`. @default {2_000} */
  queueTimeoutMs?: number;
  /**
   * When set, the skip-protection annotation counts only for users it
   * allows (`--skip-protection-mode=authorized`); unset, the annotation
   * alone lets a delete through, as in the reference implementation.
   */
  bypass?: BypassAuthorizer;
  /**
   * The Locks to apply: a DELETE (or, where a Lock says so, an UPDATE) of a
   * locked object is denied with 409, naming the Locks and their reasons;
   * the skip-protection annotation does not override a Lock. Unset, no
   * Locks apply and UPDATEs are allowed.
   */
  locks?: LockIndex;
  /**
   * How long after kcp marks a workspace for deletion references still
   * keep its teardown in dependency order; after it nothing in the
   * workspace is protected. Locks never hold in a workspace being deleted.
   * @default {120_000}
   */
  teardownOrderMs?: number;
  /** The clock, in ms since the epoch. @default {Date.now} */
  now?: () => number;
}

/** Decides one confirmed target. */
type Decide = (uid: string, target: Target) => Promise<Verdict>;

interface Blocker {
  kind: string;
  namespace: string;
  name: string;
  paths: string[];
}

/** The object a DELETE is about, read from a review and checked. */
interface Target {
  cluster: string;
  namespace?: string;
  name: string;
  uid: string;
  resource: GroupVersionResource;
}

/** Decides DELETE reviews against the registry's rules. */
export class DeletionValidator {
  readonly #registry: RuleRegistry;
  readonly #source: DependentSource;
  readonly #timeoutMs: number;
  readonly #maxNamed: number;
  readonly #reviews: FairQueue | undefined;
  readonly #queueTimeoutMs: number;
  readonly #bypass: BypassAuthorizer | undefined;
  readonly #locks: LockIndex | undefined;
  readonly #teardownOrderMs: number;
  readonly #now: () => number;

  /** Builds a validator over a registry and a source of dependents. */
  constructor(
    registry: RuleRegistry,
    source: DependentSource,
    options: DeletionValidatorOptions = {},
  ) {
    this.#registry = registry;
    this.#source = source;
    this.#timeoutMs = options.timeoutMs ?? 7_000;
    this.#maxNamed = options.maxNamed ?? 10;
    this.#reviews = options.reviews;
    this.#queueTimeoutMs = options.queueTimeoutMs ?? 2_000;
    this.#bypass = options.bypass;
    this.#locks = options.locks;
    this.#teardownOrderMs = options.teardownOrderMs ?? 120_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Decides one admission request. Never throws.
   *
   * With `options.provider` (the workspace path of the provider whose
   * webhook configuration kcp called), only the rules about that provider's
   * export of the type apply; without it, every rule about the type does.
   */
  async validate(
    request: AdmissionRequest,
    options: ValidateOptions = {},
  ): Promise<Verdict> {
    const { uid } = request;
    const locks = this.#locks;
    const lockOperation = request.operation === "DELETE"
      ? "Delete"
      : request.operation === "UPDATE" && locks !== undefined
      ? "Update"
      : undefined;
    if (lockOperation === undefined) {
      return { response: allow(uid), outcome: "allowed" };
    }
    if (!this.#registry.loaded || (locks !== undefined && !locks.loaded)) {
      return {
        response: deny(uid, {
          code: 503,
          reason: "ServiceUnavailable",
          message: NOT_INITIALIZED_MESSAGE,
        }),
        outcome: "denied_not_ready",
      };
    }
    const object = objectOf(request);
    if (object === undefined) {
      return invalid(
        uid,
        `cannot read the object being ${
          lockOperation === "Delete" ? "deleted" : "updated"
        }: the review carries no oldObject`,
      );
    }
    const annotations = asRecord(asRecord(object.metadata)?.annotations);
    const skip = annotations?.[SKIP_PROTECTION_ANNOTATION] === "true";
    // Without Locks the annotation alone decides, before anything is checked.
    if (skip && this.#bypass === undefined && locks === undefined) {
      return { response: allow(uid), outcome: "allowed_skip" };
    }
    const target = targetOf(request, object);
    if (typeof target === "string") return invalid(uid, target);
    const holds = locks?.find({
      cluster: target.cluster,
      group: target.resource.group,
      resource: target.resource.resource,
      ...(target.namespace === undefined
        ? {}
        : { namespace: target.namespace }),
      name: target.name,
      operation: lockOperation,
    }) ?? [];
    const { provider } = options;
    const found = lockOperation === "Delete"
      ? this.#registry.find(request.resource)
      : [];
    const protections = provider === undefined
      ? found
      : found.filter((p) => p.provider === provider);
    // How the delete is decided when no Lock holds the object.
    let unlocked: Decide | Verdict;
    if (skip && this.#bypass === undefined) {
      unlocked = { response: allow(uid), outcome: "allowed_skip" };
    } else if (protections.length === 0) {
      unlocked = { response: allow(uid), outcome: "allowed" };
    } else {
      unlocked = skip && this.#bypass !== undefined
        ? this.#authorizeSkip.bind(this, this.#bypass, request.userInfo)
        : this.#decide.bind(this, protections);
    }
    // A type some Lock in the cluster names is confirmed against the live
    // object first, held or not, so that a forged review cannot tell a
    // locked object from a free one.
    const covered = holds.length > 0 ||
      (locks?.covers({
        cluster: target.cluster,
        group: target.resource.group,
        resource: target.resource.resource,
      }) ?? false);
    if (!covered && !(unlocked instanceof Function)) return unlocked;
    const confirms = !skip && protections.length > 0;
    const decide: Decide = holds.length > 0
      // A Lock holds whatever the annotation says; with the annotation the
      // references are not named (it would let them through).
      ? this.#decideLocked.bind(this, holds, {
        protections: skip ? [] : protections,
        verb: lockOperation === "Delete" ? "delete" : "update",
      })
      : covered && !confirms
      ? this.#confirmFirst.bind(this, unlocked)
      : unlocked as Decide;
    const decideInTeardown = async (uid: string, target: Target) => {
      const started = performance.now();
      const verdict = await decide(uid, target);
      return await this.#unlessWorkspaceDeleting(verdict, {
        target,
        unlocked,
        budgetMs: this.#timeoutMs - (performance.now() - started),
      });
    };
    if (this.#reviews === undefined) return await decideInTeardown(uid, target);
    const release = await this.#reviews.acquire(target.cluster, {
      timeoutMs: this.#queueTimeoutMs,
    });
    if (release === undefined) {
      return {
        response: deny(uid, {
          code: 503,
          reason: "ServiceUnavailable",
          message:
            `cannot delete ${target.resource.resource}/${target.name}: the dependency webhook is busy ` +
            `with this workspace's deletes (at most ${this.#reviews.maxPerKey} of a workspace's ` +
            `${this.#reviews.capacity} reviews read kcp at once, and more wait); retry the delete`,
        }),
        outcome: "denied_busy",
      };
    }
    try {
      return await decideInTeardown(uid, target);
    } finally {
      release();
    }
  }

  /**
   * What a denial becomes when kcp is deleting the object's workspace (its
   * LogicalCluster has a `deletionTimestamp`): Locks no longer hold (they go
   * with the workspace), and references keep the teardown in dependency
   * order (dependents first) for `teardownOrderMs` after the mark, then no
   * longer hold either, so that a cycle or a stuck dependent cannot keep a
   * workspace for ever. Asked only of a verdict that would deny for Locks or
   * references (the allowed path costs nothing more); when it cannot be read
   * in time (within what is left of the review's deadline), the denial
   * stands (fail closed).
   */
  async #unlessWorkspaceDeleting(
    verdict: Verdict,
    context: { target: Target; unlocked: Decide | Verdict; budgetMs: number },
  ): Promise<Verdict> {
    if (
      verdict.outcome !== "denied_referenced" &&
      verdict.outcome !== "denied_locked"
    ) return verdict;
    const { target, unlocked, budgetMs } = context;
    const deletedAt = await this.#workspaceDeletedAt(
      target.cluster,
      Math.min(WORKSPACE_CHECK_TIMEOUT_MS, budgetMs),
    );
    if (deletedAt === undefined) return verdict;
    const released: Verdict = {
      response: allow(verdict.response.uid),
      outcome: "allowed_workspace_deleting",
    };
    if (this.#now() - deletedAt >= this.#teardownOrderMs) return released;
    if (verdict.outcome === "denied_referenced") return verdict;
    // Locked: decide again as if no Lock held it.
    const again = unlocked instanceof Function
      ? await unlocked(verdict.response.uid, target)
      : unlocked;
    return again.response.allowed ? released : again;
  }

  /**
   * When kcp marked the workspace for deletion (ms since the epoch), or
   * `undefined` when it has not or when that cannot be read in time.
   */
  async #workspaceDeletedAt(
    cluster: string,
    timeoutMs: number,
  ): Promise<number | undefined> {
    if (timeoutMs <= 0) return undefined;
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    try {
      const stamp = await Promise.race([
        this.#source.workspaceDeletedAt(cluster, deadline.signal),
        untilAborted(deadline.signal),
      ]);
      return stamp?.getTime();
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
      if (!deadline.signal.aborted) deadline.abort(new Error("answered"));
    }
  }

  /**
   * Honours the skip-protection annotation only for a user kcp allows
   * `bypass` on `protections` in the consumer's workspace; asks that and
   * reads the live object at once, and answers nothing about the user
   * unless the live object confirms the review.
   */
  async #authorizeSkip(
    bypass: BypassAuthorizer,
    user: ReviewUser | undefined,
    uid: string,
    target: Target,
  ): Promise<Verdict> {
    const shown = `${target.resource.resource}/${target.name}`;
    const deadline = AbortSignal.timeout(this.#timeoutMs);
    const [confirmed, allowed] = await Promise.allSettled([
      this.#confirm(target),
      bypass.mayBypass({
        cluster: target.cluster,
        ...(target.namespace === undefined
          ? {}
          : { namespace: target.namespace }),
        user: user ?? {},
      }, deadline),
    ]);
    if (confirmed.status === "fulfilled" && !confirmed.value) {
      return unconfirmed(uid);
    }
    const failed = confirmed.status === "rejected"
      ? confirmed.reason
      : allowed.status === "rejected"
      ? allowed.reason
      : undefined;
    if (failed !== undefined || allowed.status === "rejected") {
      return unavailable(uid, shown, {
        what: `cannot check whether you may bypass its protection (${
          errorText(failed)
        })`,
        until: "it can be checked",
        error: failed,
      });
    }
    if (allowed.value) return { response: allow(uid), outcome: "allowed_skip" };
    return {
      response: deny(uid, {
        code: 403,
        reason: "Forbidden",
        message:
          `cannot delete ${shown}: the ${SKIP_PROTECTION_ANNOTATION} annotation lets a delete through only for users ` +
          `allowed "${BYPASS_VERB}" on ${BYPASS_RESOURCE}.${GROUP} in this workspace, and ${
            JSON.stringify(user?.username ?? "")
          } is not: ask for that permission, or delete what still refers to the object first`,
      }),
      outcome: "denied_skip_unauthorized",
    };
  }

  /**
   * Confirms the review against the live object, then decides as `then`
   * does: how a review of a type that Locks cover is answered when no Lock
   * holds the object, so that it is answered as a held one would be when
   * forged. A type the webhook may not read is not confirmed: reading it is
   * not ours to grant (see `rbac.ts`), and the free object is let through.
   */
  async #confirmFirst(
    then: Decide | Verdict,
    uid: string,
    target: Target,
  ): Promise<Verdict> {
    const [confirmed] = await Promise.allSettled([this.#confirm(target)]);
    const forbidden = confirmed.status === "rejected" &&
      confirmed.reason instanceof Forbidden;
    if (!forbidden) {
      const refused = refusal(
        uid,
        `${target.resource.resource}/${target.name}`,
        confirmed,
      );
      if (refused !== undefined) return refused;
    }
    return then instanceof Function ? await then(uid, target) : then;
  }

  /**
   * Denies a locked object, naming its Locks (and, for a delete, what still
   * refers to it) once the live object confirms the review: a forged review
   * learns nothing, not even a Lock's reason. A failed list of dependents
   * does not matter: the Lock denies anyway.
   */
  async #decideLocked(
    holds: readonly LockHold[],
    options: { protections: readonly Protection[]; verb: "delete" | "update" },
    uid: string,
    target: Target,
  ): Promise<Verdict> {
    const shown = `${target.resource.resource}/${target.name}`;
    const [confirmed, listed] = await this.#readBoth(
      options.protections,
      target,
    );
    if (
      confirmed.status === "rejected" && confirmed.reason instanceof Forbidden
    ) {
      return lockedUnreadable(uid, { verb: options.verb, shown, target });
    }
    const refused = refusal(uid, shown, confirmed);
    if (refused !== undefined) return refused;
    const referenced = listed.status === "fulfilled" && listed.value.total > 0
      ? `; also ${
        referencedBy(listed.value.named, listed.value.total, target.namespace)
      }`
      : "";
    return {
      response: deny(uid, {
        code: 409,
        reason: "Conflict",
        message: `cannot ${options.verb} ${shown}: ${
          lockedMessage(holds)
        }${referenced}`,
      }),
      outcome: "denied_locked",
    };
  }

  /**
   * Reads the live object and lists the dependents at once; a failed or
   * negative confirmation ends the lists, whose answer would not be used.
   */
  #readBoth(
    protections: readonly Protection[],
    target: Target,
  ): Promise<
    [
      PromiseSettledResult<boolean>,
      PromiseSettledResult<{ named: Blocker[]; total: number }>,
    ]
  > {
    const cancel = new AbortController();
    const confirmation = this.#confirm(target).then((confirmed) => {
      if (!confirmed) cancel.abort(new Error("review not confirmed"));
      return confirmed;
    }, (error) => {
      cancel.abort(error);
      throw error;
    });
    return Promise.allSettled([
      confirmation,
      protections.length === 0
        ? Promise.resolve({ named: [], total: 0 })
        : this.#findBlockers(protections, target, cancel.signal),
    ]);
  }

  /**
   * Lists the dependents and fetches the live object at once; names
   * blockers only when the live object confirms the review.
   */
  async #decide(
    protections: readonly Protection[],
    uid: string,
    target: Target,
  ): Promise<Verdict> {
    const shown = `${target.resource.resource}/${target.name}`;
    const [confirmed, listed] = await this.#readBoth(protections, target);
    const refused = refusal(uid, shown, confirmed);
    if (refused !== undefined) return refused;
    if (listed.status === "rejected") {
      return unavailable(uid, shown, {
        what: listed.reason instanceof Forbidden
          ? listed.reason.message
          : `cannot check whether other objects still refer to it (${
            errorText(listed.reason)
          })`,
        until: listed.reason instanceof Forbidden
          ? "it may"
          : "they can be checked",
        error: listed.reason,
      });
    }
    const { named, total } = listed.value;
    if (total === 0) return { response: allow(uid), outcome: "allowed" };
    return {
      response: deny(uid, {
        code: 409,
        reason: "Conflict",
        message: blockedMessage(shown, named, total, target.namespace),
      }),
      outcome: "denied_referenced",
      blockers: total,
    };
  }

  /** Whether the live object exists with the uid the review carries. */
  async #confirm(target: Target): Promise<boolean> {
    const stop = new AbortController();
    const timer = setTimeout(
      () =>
        stop.abort(
          new Error(`no answer within ${this.#timeoutMs} ms`),
        ),
      this.#timeoutMs,
    );
    const stopped = new Promise<never>((_, reject) => {
      stop.signal.addEventListener("abort", () => reject(stop.signal.reason), {
        once: true,
      });
    });
    stopped.catch(() => {});
    try {
      const live = await Promise.race([
        this.#source.liveUid({
          cluster: target.cluster,
          ...(target.namespace === undefined
            ? {}
            : { namespace: target.namespace }),
          resource: target.resource,
          name: target.name,
        }, stop.signal),
        stopped,
      ]);
      return live === target.uid;
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 403) {
        // kcp answers 403 alike for a type not granted and for a logical
        // cluster that does not exist: only the first is a missing grant.
        const known = await Promise.race([
          this.#source.workspaceDeletedAt(target.cluster, stop.signal).then(
            () => true,
            () => false,
          ),
          stopped.catch(() => false),
        ]);
        throw known
          ? new Forbidden("get", target.resource)
          : new UnknownWorkspace(target.cluster);
      }
      throw error;
    } finally {
      clearTimeout(timer);
      if (!stop.signal.aborted) stop.abort(new Error("review finished"));
    }
  }

  async #findBlockers(
    protections: readonly Protection[],
    query: Target,
    cancel: AbortSignal,
  ): Promise<{ named: Blocker[]; total: number }> {
    const byDependent = new Map<string, Protection[]>();
    for (const p of protections) {
      const key = gvrKey(p.dependent);
      byDependent.set(key, [...(byDependent.get(key) ?? []), p]);
    }
    // One signal ends every list: the deadline, or the first list that fails.
    const stop = new AbortController();
    const pending = new Map(byDependent);
    const timer = setTimeout(() => {
      const names = [...pending.values()].map((g) =>
        `${g[0]!.dependent.resource}.${g[0]!.dependent.group}`
      );
      stop.abort(new DeadlineExceeded(this.#timeoutMs, names));
    }, this.#timeoutMs);
    const stopped = new Promise<never>((_, reject) => {
      stop.signal.addEventListener("abort", () => reject(stop.signal.reason), {
        once: true,
      });
    });
    stopped.catch(() => {});
    const onCancel = () => {
      if (!stop.signal.aborted) stop.abort(cancel.reason);
    };
    if (cancel.aborted) onCancel();
    cancel.addEventListener("abort", onCancel, { once: true });
    const found = { named: [] as Blocker[], total: 0 };
    // Which export each dependent type comes from in this workspace, read
    // beside the lists: a rule counts only dependents bound from its own
    // dependent export. Unreadable, every rule counts (fail closed).
    const bound = protections.some((p) => p.dependentIdentity !== undefined)
      ? Promise.race([
        this.#source.boundIdentities(query.cluster, stop.signal),
        stopped,
      ]).catch(() => undefined)
      : Promise.resolve(undefined);
    try {
      const lists = [...byDependent].map(([key, group]) =>
        this.#scan(group, query, { signal: stop.signal, bound }, found).then(
          () => pending.delete(key),
          (error) => {
            if (!stop.signal.aborted) stop.abort(error);
            throw stop.signal.reason;
          },
        )
      );
      // A source that ignores the signal still cannot hold the review past the deadline.
      await Promise.race([Promise.all(lists), stopped]);
    } finally {
      clearTimeout(timer);
      cancel.removeEventListener("abort", onCancel);
      if (!stop.signal.aborted) stop.abort(new Error("review finished"));
    }
    return found;
  }

  /**
   * Lists one dependent type and records the items that refer to the object.
   * The dependent type is never the object's own: `webhook.ts` loads the
   * registry with `enforcedRules()`, which drops every rule with a
   * dependency on its own dependent type, so an object cannot block its own
   * deletion.
   */
  async #scan(
    all: readonly Protection[],
    query: Target,
    options: {
      signal: AbortSignal;
      bound: Promise<ReadonlyMap<string, string> | undefined>;
    },
    found: { named: Blocker[]; total: number },
  ): Promise<void> {
    const { signal } = options;
    const dependent = all[0]!.dependent;
    let group = all;
    // A rule with a namespace path lets a dependent in any namespace refer
    // to the object; without one, only its own namespace is read.
    const everyNamespace = query.namespace === undefined ||
      group.some((p) => p.namespacePath !== undefined);
    try {
      const pages = this.#source.pages({
        cluster: query.cluster,
        dependent,
        ...(everyNamespace ? {} : { namespace: query.namespace }),
      }, signal);
      let first = true;
      for await (const items of pages) {
        if (signal.aborted) return;
        if (first) {
          first = false;
          group = ownDependents(all, await options.bound);
          if (group.length === 0) return;
        }
        for (const item of items) {
          const paths = referringFields(item, group, query);
          if (paths.length === 0) continue;
          const metadata = asRecord(asRecord(item)?.metadata);
          const blocker: Blocker = {
            kind: dependent.kind,
            namespace: typeof metadata?.namespace === "string"
              ? metadata.namespace
              : "",
            name: typeof metadata?.name === "string" ? metadata.name : "",
            paths,
          };
          found.total++;
          keepFirst(found.named, blocker, this.#maxNamed);
        }
      }
    } catch (error) {
      if (error instanceof KubeApiError && error.notFound) return;
      if (signal.reason instanceof DeadlineExceeded) throw signal.reason;
      if (error instanceof KubeApiError && error.status === 403) {
        throw new Forbidden("list", dependent);
      }
      throw new Error(
        `listing ${dependent.resource}.${dependent.group} failed: ${
          errorText(error)
        }`,
      );
    }
  }
}

/**
 * The verdict when the live object could not be read or does not confirm
 * the review; `undefined` when it confirms it.
 */
function refusal(
  uid: string,
  shown: string,
  confirmed: PromiseSettledResult<boolean>,
): Verdict | undefined {
  if (confirmed.status === "rejected") {
    return unavailable(uid, shown, {
      what: confirmed.reason instanceof Forbidden ||
          confirmed.reason instanceof UnknownWorkspace
        ? confirmed.reason.message
        : `cannot read the object itself (${errorText(confirmed.reason)})`,
      until: confirmed.reason instanceof Forbidden ||
          confirmed.reason instanceof UnknownWorkspace
        ? "it may"
        : "it can be read",
      error: confirmed.reason,
    });
  }
  return confirmed.value ? undefined : unconfirmed(uid);
}

/**
 * How long a denial waits at most to learn whether the workspace is being
 * deleted; never past what is left of the review's deadline.
 */
const WORKSPACE_CHECK_TIMEOUT_MS = 1_000;

/** Rejects with the signal's reason once it aborts. */
function untilAborted(signal: AbortSignal): Promise<never> {
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), {
      once: true,
    });
  });
  aborted.catch(() => {});
  return aborted;
}

/**
 * The protections whose rule's dependent export is the one the workspace
 * binds the dependent type from: a rule about another export's type of the
 * same group and resource (another provider's, or a tenant's look-alike)
 * says nothing of these objects. Without the bindings, all of them.
 */
function ownDependents(
  group: readonly Protection[],
  bound: ReadonlyMap<string, string> | undefined,
): readonly Protection[] {
  if (bound === undefined) return group;
  const { group: apiGroup, resource } = group[0]!.dependent;
  const identity = bound.get(`${apiGroup}/${resource}`);
  return group.filter((p) =>
    p.dependentIdentity === undefined || p.dependentIdentity === identity
  );
}

/** Most fields named per dependent in a denial; the rest are counted. */
const MAX_FIELDS_NAMED = 3;

/**
 * The fields of `item` (concrete, `.spec.nics[1].subnetRef.name`) that refer
 * to `query`: same name, and same namespace unless the object is
 * cluster-scoped. Past {@linkcode MAX_FIELDS_NAMED}, a last entry counts the
 * rest, so one dependent with a huge list cannot make a huge message.
 */
function referringFields(
  item: unknown,
  group: readonly Protection[],
  query: Target,
): string[] {
  const fields: string[] = [];
  let more = 0;
  for (const p of group) {
    for (const reference of referencesOf(item, p)) {
      if (reference.name !== query.name) continue;
      if (
        query.namespace !== undefined && reference.namespace !== query.namespace
      ) continue;
      if (fields.length < MAX_FIELDS_NAMED) {
        fields.push(formatFieldPath(p.fieldPath, reference.indexes));
      } else more++;
    }
  }
  if (more > 0) fields.push(`and ${more} more`);
  return fields;
}

/** Options for {@linkcode DeletionValidator.validate}. */
export interface ValidateOptions {
  /**
   * The workspace path of the provider whose webhook configuration kcp
   * called: only rules about its export of the type apply.
   */
  provider?: string;
}

/** Our identity may not read what a review needs: a setup problem to name. */
class Forbidden extends Error {
  readonly permission: Permission;
  constructor(verb: "get" | "list", type: GroupVersionResource) {
    const shown = type.group === ""
      ? type.resource
      : `${type.resource}.${type.group}`;
    super(
      `the webhook's identity may not ${verb} ${shown} in this workspace (403 Forbidden): ` +
        `grant "${verb}" on ${shown} to it in system:admin of every shard (controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -)`,
    );
    this.name = "Forbidden";
    this.permission = { verb, group: type.group, resource: type.resource };
  }
}

/** The deadline of a review passed. */
/**
 * The workspace of a review could not be read at all: it does not exist (a
 * forged review), or the webhook has no access on its shard.
 */
class UnknownWorkspace extends Error {
  constructor(cluster: string) {
    super(
      `the dependency webhook cannot read the workspace ${quote(cluster)}: ` +
        "it does not exist, or the webhook's access is not granted on its shard " +
        "(manifests/kcp/system-admin in that shard's system:admin)",
    );
  }
}

class DeadlineExceeded extends Error {
  constructor(timeoutMs: number, pending: readonly string[]) {
    super(
      `listing ${pending.join(", ")} did not finish within ${timeoutMs} ms`,
    );
    this.name = "DeadlineExceeded";
  }
}

/** Keeps `named` the `max` smallest blockers in (kind, namespace, name) order, whatever order they come in. */
function keepFirst(named: Blocker[], blocker: Blocker, max: number): void {
  named.push(blocker);
  named.sort(compareBlockers);
  if (named.length > max) named.pop();
}

/** (kind, namespace, name) in code-point order: the same on every locale. */
function compareBlockers(a: Blocker, b: Blocker): number {
  return compareStrings(a.kind, b.kind) ||
    compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name);
}

/** `cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name) and 2 more`. */
function blockedMessage(
  target: string,
  named: readonly Blocker[],
  total: number,
  namespace: string | undefined,
): string {
  return `cannot delete ${target}: ${referencedBy(named, total, namespace)}`;
}

/** `still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name) and 2 more`. */
function referencedBy(
  named: readonly Blocker[],
  total: number,
  namespace: string | undefined,
): string {
  const names = named.map((b) => {
    // A dependent in the object's own namespace goes by its name alone.
    const id = b.namespace !== "" && b.namespace !== namespace
      ? `${b.kind}/${b.namespace}/${b.name}`
      : `${b.kind}/${b.name}`;
    return `${id} (${b.paths.join(", ")})`;
  });
  const more = total > named.length ? ` and ${total - named.length} more` : "";
  return `still referenced by ${names.join(", ")}${more}`;
}

/**
 * The object a DELETE is about, with every part that goes into a URL
 * checked against Kubernetes' and kcp's name rules; or what is wrong.
 */
function targetOf(
  request: AdmissionRequest,
  object: Record<string, unknown>,
): Target | string {
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
  const namespaceObject = request.resource.group === "" &&
    request.resource.resource === "namespaces";
  const namespace = namespaceObject
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

/** A JSON rendering of a tenant's string, cut short when long. */
function quote(value: string): string {
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 80)}... (truncated)` : text;
}

/** Fail closed: the delete waits until the check can be made. */
function unavailable(
  uid: string,
  shown: string,
  problem: { what: string; until: string; error: unknown },
): Verdict {
  return {
    ...(problem.error instanceof Forbidden
      ? { forbidden: problem.error.permission }
      : {}),
    response: deny(uid, {
      code: 503,
      reason: "ServiceUnavailable",
      message: `cannot delete ${shown}: ${problem.what}; ` +
        `the delete is denied until ${problem.until}: retry later, or set the annotation ` +
        `${SKIP_PROTECTION_ANNOTATION}=true on the object to delete it anyway`,
    }),
    outcome: "denied_error",
  };
}

/**
 * The denial of a locked object the webhook may not read (a Secret, say:
 * the grant generator never grants it): without the live object the review
 * cannot be confirmed, so it names no Lock and no reason, only where to
 * look.
 */
function lockedUnreadable(
  uid: string,
  options: { verb: string; shown: string; target: Target },
): Verdict {
  const { target } = options;
  const namespace = target.namespace ??
    (target.resource.group === "" && target.resource.resource === "namespaces"
      ? target.name
      : undefined);
  const where = namespace === undefined
    ? "kubectl get locks --all-namespaces"
    : `kubectl get locks -n ${namespace}`;
  return {
    response: deny(uid, {
      code: 409,
      reason: "Conflict",
      message:
        `cannot ${options.verb} ${options.shown}: a Lock may hold it, and the dependency webhook may not read ` +
        `${target.resource.resource} to say which: see the Locks in its namespace (${where}); deleting the Lock unlocks it`,
    }),
    outcome: "denied_locked",
  };
}

/** The one generic denial of a review the live object does not confirm. */
function unconfirmed(uid: string): Verdict {
  return {
    response: deny(uid, {
      code: 409,
      reason: "Conflict",
      message: UNCONFIRMED_MESSAGE,
    }),
    outcome: "denied_unconfirmed",
  };
}

function invalid(uid: string, message: string): Verdict {
  return {
    response: deny(uid, { code: 400, reason: "BadRequest", message }),
    outcome: "denied_invalid",
  };
}

/** `value` when it is a JSON object, `undefined` otherwise: for `?.` chains. */
function asRecord(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}
