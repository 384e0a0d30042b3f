/**
 * The second step of a review: every read its plan asks for, made at once
 * under one {@linkcode Deadline}, each at most once. The live object (is it
 * the one the review describes?), the dependent lists (page by page, only
 * the dependents that refer to the object are kept, so memory stays
 * bounded), the bypass question, and, when the fold asks, whether kcp is
 * deleting the workspace. Failures become readings (settled results) for
 * the fold; nothing here decides.
 *
 * @module
 */
import { KubeApiError } from "../kcp/mod.ts";
import { type GroupVersionResource, gvrKey } from "../rules/mod.ts";
import { Deadline, DeadlineExceeded, errorText } from "../runtime/mod.ts";
import type { BypassAuthorizer } from "./access_review.ts";
import type { Protection } from "./rule_registry.ts";
import { planReads, type ReviewPlan } from "./review_plan.ts";
import { asRecord, quote, type ReviewTarget } from "./review_target.ts";
import type { Blocker, Permission } from "./verdicts.ts";
import { keepFirst, ownDependents, referringFields } from "./review_match.ts";

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
   * by `<group>/<resource>`; a type of the workspace's own has none. The
   * answer may be a few seconds old unless `options.fresh` asks for a new
   * read.
   *
   * @throws {KubeApiError} On failure.
   */
  boundIdentities(
    cluster: string,
    signal: AbortSignal,
    options?: { fresh?: boolean },
  ): Promise<ReadonlyMap<string, string>>;
}

/** The dependents that still refer to the object: the first few, and how many. */
export interface Blockers {
  /** The first `maxNamed` in (kind, namespace, name) order. */
  named: Blocker[];
  /** All of them. */
  total: number;
}

/** What a review read, each as a settled result. */
export interface ReviewReadings {
  /** Whether the live object is the one the review describes. */
  confirmed: PromiseSettledResult<boolean>;
  /** The dependents that refer to it; absent when nothing was listed. */
  blockers?: PromiseSettledResult<Blockers>;
  /** Whether kcp allows the user `bypass`; absent when not asked. */
  bypass?: PromiseSettledResult<boolean>;
}

/** Our identity may not read what a review needs: a setup problem to name. */
export class Forbidden extends Error {
  /** What kcp refused. */
  readonly permission: Permission;

  /** Builds the error for `verb` refused on `type`. */
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

/**
 * The workspace of a review could not be read at all: it does not exist (a
 * forged review), or the webhook has no access on its shard.
 */
export class UnknownWorkspace extends Error {
  /** Builds the error for the logical cluster `cluster`. */
  constructor(cluster: string) {
    super(
      `the dependency webhook cannot read the workspace ${quote(cluster)}: ` +
        "it does not exist, or the webhook's access is not granted on its shard " +
        "(manifests/kcp/system-admin in that shard's system:admin)",
    );
    this.name = "UnknownWorkspace";
  }
}

/** Options of {@linkcode ReviewReader}. */
export interface ReviewReaderOptions {
  /** The one deadline of every read of the review. */
  deadline: Deadline;
  /** Asks kcp about `bypass`; required for a plan that asks it. */
  bypass?: BypassAuthorizer | undefined;
  /** How many blockers to keep by name. @default {10} */
  maxNamed?: number;
}

/**
 * One review's reads against a {@linkcode DependentSource}: {@linkcode read}
 * makes those of a plan, {@linkcode workspaceDeletedAt} the LogicalCluster
 * read; each object or list is read at most once.
 */
export class ReviewReader {
  readonly #source: DependentSource;
  readonly #deadline: Deadline;
  readonly #bypass: BypassAuthorizer | undefined;
  readonly #maxNamed: number;
  #deletedAt: Promise<Date | undefined> | undefined;

  /** A reader for one review. */
  constructor(source: DependentSource, options: ReviewReaderOptions) {
    this.#source = source;
    this.#deadline = options.deadline;
    this.#bypass = options.bypass;
    this.#maxNamed = options.maxNamed ?? 10;
  }

  /**
   * Makes the reads of `plan` at once. A live object that is missing,
   * another, or unreadable ends the lists (their answer would not be used),
   * and so does the first list that fails. Never throws.
   */
  async read(plan: ReviewPlan): Promise<ReviewReadings> {
    const reads = planReads(plan);
    const lists = new AbortController();
    const stopLists = (reason: unknown) => {
      if (!lists.signal.aborted) lists.abort(reason);
    };
    const confirmation = this.#confirm(plan.target).then((confirmed) => {
      if (!confirmed) stopLists(new Error("review not confirmed"));
      return confirmed;
    }, (error) => {
      stopLists(error);
      throw error;
    });
    const listing = reads.lists.length === 0
      ? undefined
      : this.#findBlockers(reads.lists, plan.target, {
        cancel: lists.signal,
        boundIdentities: reads.boundIdentities,
      });
    const bypass = reads.bypass === undefined
      ? undefined
      : this.#askBypass(plan.target, reads.bypass);
    const [confirmed, blockers, allowed] = await Promise.allSettled([
      confirmation,
      listing,
      bypass,
    ]);
    return {
      confirmed,
      ...(listing === undefined
        ? {}
        : { blockers: blockers as PromiseSettledResult<Blockers> }),
      ...(bypass === undefined
        ? {}
        : { bypass: allowed as PromiseSettledResult<boolean> }),
    };
  }

  /**
   * When kcp marked the workspace for deletion, `undefined` while it has
   * not; read once per review, within `maxMs` and what is left of the
   * deadline.
   *
   * @throws {Error} When it cannot be read in time.
   */
  workspaceDeletedAt(
    cluster: string,
    maxMs = Infinity,
  ): Promise<Date | undefined> {
    if (this.#deletedAt === undefined) {
      const budget = Math.min(maxMs, this.#deadline.remainingMs());
      if (budget <= 0) {
        return Promise.reject(new Error("no time left to read the workspace"));
      }
      // Its own deadline, within the review's: the review's signal ends it.
      const within = new Deadline(budget, {
        what: "reading the workspace",
        signal: this.#deadline.signal,
      });
      this.#deletedAt = within.race(
        this.#source.workspaceDeletedAt(cluster, within.signal),
      ).finally(() => within.disarm());
      this.#deletedAt.catch(() => {});
    }
    return this.#deletedAt;
  }

  /** Whether the live object exists with the uid the review carries. */
  async #confirm(target: ReviewTarget): Promise<boolean> {
    const deadline = this.#deadline;
    try {
      const live = await deadline.race(this.#source.liveUid({
        cluster: target.cluster,
        ...(target.namespace === undefined
          ? {}
          : { namespace: target.namespace }),
        resource: target.resource,
        name: target.name,
      }, deadline.signal));
      return live === target.uid;
    } catch (error) {
      if (error instanceof DeadlineExceeded) {
        throw new Error(`no answer within ${error.timeoutMs} ms`);
      }
      if (error instanceof KubeApiError && error.status === 403) {
        // kcp answers 403 alike for a type not granted and for a logical
        // cluster that does not exist: only the first is a missing grant.
        const known = await this.workspaceDeletedAt(target.cluster).then(
          () => true,
          () => false,
        );
        throw known
          ? new Forbidden("get", target.resource)
          : new UnknownWorkspace(target.cluster);
      }
      throw error;
    }
  }

  /** Whether kcp allows the user `bypass` on protections in the workspace. */
  #askBypass(
    target: ReviewTarget,
    user: NonNullable<ReturnType<typeof planReads>["bypass"]>,
  ): Promise<boolean> {
    if (this.#bypass === undefined) {
      return Promise.reject(new Error("no bypass authorizer configured"));
    }
    return this.#deadline.race(this.#bypass.mayBypass({
      cluster: target.cluster,
      ...(target.namespace === undefined
        ? {}
        : { namespace: target.namespace }),
      user,
    }, this.#deadline.signal));
  }

  /** Lists each dependent type once; the first failure ends the others. */
  async #findBlockers(
    protections: readonly Protection[],
    target: ReviewTarget,
    options: { cancel: AbortSignal; boundIdentities: boolean },
  ): Promise<Blockers> {
    const byDependent = new Map<string, Protection[]>();
    for (const p of protections) {
      const key = gvrKey(p.dependent);
      byDependent.set(key, [...(byDependent.get(key) ?? []), p]);
    }
    const stop = new AbortController();
    const signal = AbortSignal.any([
      stop.signal,
      options.cancel,
      this.#deadline.signal,
    ]);
    const pending = new Map(byDependent);
    const found: Blockers = { named: [], total: 0 };
    // Which export each dependent type comes from in this workspace, read
    // beside the lists: a rule counts only dependents bound from its own
    // dependent export. Unreadable, every rule counts (fail closed).
    const readBound = (fresh: boolean) =>
      this.#deadline.race(
        this.#source.boundIdentities(target.cluster, signal, { fresh }),
      ).catch(() => undefined);
    const bound = options.boundIdentities
      ? readBound(false)
      : Promise.resolve(undefined);
    // An answer that would drop a rule is read again, fresh, once per
    // review: a kept answer may only ever make a rule count (fail closed).
    let fresh: Promise<ReadonlyMap<string, string> | undefined> | undefined;
    const freshBound = () => fresh ??= readBound(true);
    const lists = [...byDependent].map(([key, group]) =>
      this.#scan(group, target, { signal, bound, freshBound }, found).then(
        () => pending.delete(key),
        (error) => {
          if (!stop.signal.aborted) stop.abort(error);
          throw error;
        },
      )
    );
    try {
      // A source that ignores the signal still cannot hold the review past the deadline.
      await this.#deadline.race(Promise.all(lists));
    } catch (error) {
      if (
        error instanceof DeadlineExceeded ||
        signal.reason instanceof DeadlineExceeded
      ) {
        const reason = error instanceof DeadlineExceeded
          ? error
          : signal.reason as DeadlineExceeded;
        const names = [...pending.values()].map((g) =>
          `${g[0]!.dependent.resource}.${g[0]!.dependent.group}`
        );
        throw new DeadlineExceeded(
          `listing ${names.join(", ")}`,
          reason.timeoutMs,
        );
      }
      throw error;
    } finally {
      if (!stop.signal.aborted) stop.abort(new Error("review finished"));
    }
    return found;
  }

  /**
   * Lists one dependent type and records the items that refer to the
   * object. The dependent type is never the object's own: `webhook.ts`
   * loads the registry with `enforcedRules()`, which drops every rule with
   * a dependency on its own dependent type, so an object cannot block its
   * own deletion.
   */
  async #scan(
    all: readonly Protection[],
    target: ReviewTarget,
    options: {
      signal: AbortSignal;
      bound: Promise<ReadonlyMap<string, string> | undefined>;
      freshBound: () => Promise<ReadonlyMap<string, string> | undefined>;
    },
    found: Blockers,
  ): Promise<void> {
    const { signal } = options;
    const dependent = all[0]!.dependent;
    let group = all;
    // A rule with a namespace path lets a dependent in any namespace refer
    // to the object; without one, only its own namespace is read.
    const everyNamespace = target.namespace === undefined ||
      group.some((p) => p.namespacePath !== undefined);
    try {
      const pages = this.#source.pages({
        cluster: target.cluster,
        dependent,
        ...(everyNamespace ? {} : { namespace: target.namespace }),
      }, signal);
      let first = true;
      for await (const items of pages) {
        if (signal.aborted) return;
        if (first) {
          first = false;
          group = ownDependents(all, await options.bound);
          if (group.length < all.length) {
            group = ownDependents(all, await options.freshBound());
          }
          if (group.length === 0) return;
        }
        for (const item of items) {
          const paths = referringFields(item, group, target);
          if (paths.length === 0) continue;
          const metadata = asRecord(asRecord(item)?.metadata);
          found.total++;
          keepFirst(found.named, {
            kind: dependent.kind,
            namespace: typeof metadata?.namespace === "string"
              ? metadata.namespace
              : "",
            name: typeof metadata?.name === "string" ? metadata.name : "",
            paths,
          }, this.#maxNamed);
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
