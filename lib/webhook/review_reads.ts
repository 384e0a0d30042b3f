/**
 * The second step of a review: every read its plan asks for, made at once
 * under one {@linkcode Deadline}, each at most once. The live object (is it
 * the one the review describes?), the dependent lists (page by page, only
 * the dependents that refer to the object are kept, so memory stays
 * bounded), the owners the object names, the bypass question, and, when the
 * fold asks, whether kcp is deleting the workspace. While reading, it
 * matches each dependent and owner read against the rules (names, fields,
 * `protectWhile` and `when`, evaluated within the review's budget), so
 * only what refers to the object and protects now is kept. Failures become
 * readings (settled results); the verdict is the fold's.
 *
 * @module
 */
import { KubeApiError } from "../kcp/mod.ts";
import { gvrKey } from "../rules/mod.ts";
import { Deadline, DeadlineExceeded, errorText } from "../runtime/mod.ts";
import type { BypassAuthorizer } from "./access_review.ts";
import type { Protection } from "./rule_registry.ts";
import { planReads, type ReviewPlan } from "./review_plan.ts";
import type { ReviewTarget } from "./review_target.ts";
import { REVIEW_WHEN_BUDGET } from "./protects_now.ts";
import { WhenBudget } from "../when/mod.ts";
import { readOwners } from "./review_owner_reads.ts";
import {
  type DependentSource,
  Forbidden,
  UnknownWorkspace,
} from "./review_source.ts";

export {
  type DependentQuery,
  type DependentSource,
  Forbidden,
  type ObjectQuery,
  UnknownWorkspace,
} from "./review_source.ts";
import type { Unread } from "./verdicts.ts";
import type { ReviewReadings } from "./review_readings.ts";
import type { OwnerFindings } from "./review_owners.ts";
import {
  addBlockers,
  type Blockers,
  listBlockers,
  type ListBlockersOptions,
  listsEveryNamespace,
  unreadList,
} from "./review_list.ts";
import { listOrQuiet } from "./index_race.ts";
import {
  answerFromIndex,
  type IndexedDependents,
  type IndexReply,
} from "./index_reads.ts";

export type { Blockers } from "./review_list.ts";

export type { ReviewReadings } from "./review_readings.ts";

/** Options of {@linkcode ReviewReader}. */
export interface ReviewReaderOptions {
  /** The one deadline of every read of the review. */
  deadline: Deadline;
  /** Asks kcp about `bypass`; required for a plan that asks it. */
  bypass?: BypassAuthorizer | undefined;
  /** How many blockers to keep by name. @default {10} */
  maxNamed?: number;
  /**
   * The webhook's dependents indexes: a type they can answer for is not
   * listed (see `index_reads.ts`). @default {none: every type is listed}
   */
  indexes?: IndexedDependents | undefined;
  /**
   * How long a review waits for an index to show it is fresh before it
   * lists instead. @default {200}
   */
  indexFreshnessMs?: number;
}

/**
 * How long a denial waits at most to learn whether the workspace is being
 * deleted; never past what is left of the review's deadline.
 */
export const WORKSPACE_CHECK_TIMEOUT_MS = 1_000;

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
  readonly #indexes: IndexedDependents | undefined;
  readonly #indexFreshnessMs: number;
  #deletedAt: Promise<Date | undefined> | undefined;
  #cachedBound: Promise<ReadonlyMap<string, string> | undefined> | undefined;
  /** What this review's `when` evaluations may spend together. */
  readonly #whenBudget = new WhenBudget(REVIEW_WHEN_BUDGET);
  #freshBound: Promise<ReadonlyMap<string, string> | undefined> | undefined;

  /** A reader for one review. */
  constructor(source: DependentSource, options: ReviewReaderOptions) {
    this.#source = source;
    this.#deadline = options.deadline;
    this.#bypass = options.bypass;
    this.#maxNamed = options.maxNamed ?? 10;
    this.#indexes = options.indexes;
    this.#indexFreshnessMs = options.indexFreshnessMs ?? 200;
  }

  /**
   * Makes the reads of `plan` at once. A live object that is missing,
   * another, or unreadable ends the lists (their answer would not be used);
   * a list that fails does not end the others, so that the denial names
   * what they find and each type not read. Never throws.
   */
  async read(plan: ReviewPlan): Promise<ReviewReadings> {
    const reads = planReads(plan);
    const lists = new AbortController();
    const stopLists = (reason: unknown) => {
      if (!lists.signal.aborted) lists.abort(reason);
    };
    const whole = reads.owners.length > 0 || reads.namespaceOwners.length > 0;
    const live = this.#live(plan.target, whole);
    live.catch(() => {});
    const confirmation = live.then((metadata) => {
      const confirmed = metadata?.uid === plan.target.uid;
      if (!confirmed) stopLists(new Error("review not confirmed"));
      return confirmed;
    }, (error) => {
      stopLists(error);
      throw error;
    });
    const found: Blockers = { named: [], total: 0 };
    const unread: Unread[] = [];
    const listing = reads.lists.length === 0
      ? undefined
      : this.#findBlockers(reads.lists, plan.target, {
        cancel: lists.signal,
        boundIdentities: reads.boundIdentities,
        found,
        unread,
      });
    const owners = whole
      ? readOwners(this.#source, {
        target: plan.target,
        owners: reads.owners,
        namespaceOwners: reads.namespaceOwners,
        live,
        deadline: this.#deadline,
        budget: this.#whenBudget,
        bound: (fresh) => this.#bound(plan.target.cluster, fresh),
      })
      : undefined;
    const bypass = reads.bypass === undefined
      ? undefined
      : this.#askBypass(plan.target, reads.bypass);
    const [confirmed, blockers, allowed, held] = await Promise.allSettled([
      confirmation,
      listing,
      bypass,
      owners,
    ]);
    return {
      confirmed,
      ...(listing === undefined
        ? {}
        : { blockers: blockers as PromiseSettledResult<Blockers> }),
      ...(bypass === undefined
        ? {}
        : { bypass: allowed as PromiseSettledResult<boolean> }),
      ...(owners === undefined
        ? {}
        : { owners: held as PromiseSettledResult<OwnerFindings> }),
      ...(blockers.status === "rejected" && unread.length > 0
        ? { unread, partial: found }
        : {}),
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

  /**
   * Starts the workspace read a denial makes ({@linkcode workspaceDeletedAt}
   * with {@linkcode WORKSPACE_CHECK_TIMEOUT_MS}) beside the other reads,
   * once the index names dependents that may still refer (a denial is then
   * likely, and the workspace is one where they live): the denial then
   * waits for one round trip, not two in a row. An allowed review never
   * asks for it; a failure here is the denial's to handle.
   */
  #readWorkspaceEarly(cluster: string): void {
    this.workspaceDeletedAt(cluster, WORKSPACE_CHECK_TIMEOUT_MS).catch(
      () => {},
    );
  }

  /**
   * The live object's metadata (`whole`), or only its uid; `undefined`
   * when it does not exist.
   */
  async #live(
    target: ReviewTarget,
    whole: boolean,
  ): Promise<Record<string, unknown> | undefined> {
    const deadline = this.#deadline;
    const query = {
      cluster: target.cluster,
      ...(target.namespace === undefined
        ? {}
        : { namespace: target.namespace }),
      resource: target.resource,
      name: target.name,
    };
    try {
      if (whole) {
        return await deadline.race(
          this.#source.liveMetadata(query, deadline.signal),
        );
      }
      const uid = await deadline.race(
        this.#source.liveUid(query, deadline.signal),
      );
      return uid === undefined ? undefined : { uid };
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

  /**
   * Which export each type of the workspace is bound from, read once per
   * review (`fresh`: once more, bypassing the cache); `undefined` when it
   * cannot be read (then every rule counts: fail closed).
   */
  #bound(
    cluster: string,
    fresh: boolean,
  ): Promise<ReadonlyMap<string, string> | undefined> {
    const kept = fresh ? this.#freshBound : this.#cachedBound;
    if (kept !== undefined) return kept;
    const read = this.#deadline.race(
      this.#source.boundIdentities(cluster, this.#deadline.signal, { fresh }),
    ).catch(() => undefined);
    if (fresh) this.#freshBound = read;
    else this.#cachedBound = read;
    return read;
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

  /**
   * Lists each dependent type once, into `options.found`. A failed list
   * does not end the others (the answer names what they find), but fails
   * the whole: every type not read goes to `options.unread`, and the first
   * failure is thrown.
   */
  async #findBlockers(
    protections: readonly Protection[],
    target: ReviewTarget,
    options: {
      cancel: AbortSignal;
      boundIdentities: boolean;
      found: Blockers;
      unread: Unread[];
    },
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
    const { found, unread } = options;
    const failures: unknown[] = [];
    // Which export each dependent type comes from in this workspace, read
    // beside the lists: a rule counts only dependents bound from its own
    // dependent export. Unreadable, every rule counts (fail closed).
    const bound = options.boundIdentities
      ? this.#bound(target.cluster, false)
      : Promise.resolve(undefined);
    // An answer that would drop a rule is read again, fresh, once per
    // review: a kept answer may only ever make a rule count (fail closed).
    const freshBound = () => this.#bound(target.cluster, true);
    const lists = [...byDependent].map(([key, group]) =>
      this.#scan(group, target, { signal, bound, freshBound }, found).then(
        () => pending.delete(key),
        (error) => {
          // Cut by the deadline: named below with the others not read.
          if (signal.reason instanceof DeadlineExceeded) throw error;
          pending.delete(key);
          failures.push(error);
          unread.push(unreadList(group[0]!.dependent, error));
          throw error;
        },
      )
    );
    try {
      // A source that ignores the signal still cannot hold the review past the deadline.
      await this.#deadline.race(Promise.allSettled(lists));
      if (signal.reason instanceof DeadlineExceeded) throw signal.reason;
    } catch (error) {
      if (
        error instanceof DeadlineExceeded ||
        signal.reason instanceof DeadlineExceeded
      ) {
        const reason = error instanceof DeadlineExceeded
          ? error
          : signal.reason as DeadlineExceeded;
        const late = [...pending.values()].map((g) => g[0]!.dependent);
        for (const type of late) {
          unread.push({
            verb: "list",
            type: { group: type.group, resource: type.resource },
            why: `no answer within ${reason.timeoutMs} ms`,
          });
        }
        throw new DeadlineExceeded(
          `listing ${late.map((t) => `${t.resource}.${t.group}`).join(", ")}`,
          reason.timeoutMs,
        );
      }
      throw error;
    } finally {
      if (!stop.signal.aborted) stop.abort(new Error("review finished"));
    }
    if (failures.length > 0) throw failures[0];
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
    // A rule with a namespace path lets a dependent in any namespace refer
    // to the object; without one, only its own namespace is read.
    const everyNamespace = listsEveryNamespace(all, target);
    try {
      const reply = this.#indexes === undefined
        ? { list: "now" as const }
        : await this.#fromIndex(all, target, signal);
      if ("answer" in reply) {
        addBlockers(found, reply.answer, this.#maxNamed);
        return;
      }
      if (reply.list === "now") {
        await listBlockers(all, target, {
          ...options,
          everyNamespace,
          ...this.#listing(found),
        });
        return;
      }
      // The index is idle: the list and its quiet proof (index_race.ts).
      await listOrQuiet(reply, {
        signal,
        found,
        maxNamed: this.#maxNamed,
        list: (listed, listSignal) =>
          listBlockers(all, target, {
            ...options,
            signal: listSignal,
            everyNamespace,
            ...this.#listing(listed),
          }),
      });
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

  /** What a list of this review needs besides its query, filling `found`. */
  #listing(
    found: Blockers,
  ): Pick<ListBlockersOptions, "source" | "budget" | "maxNamed" | "found"> {
    return {
      source: this.#source,
      budget: this.#whenBudget,
      maxNamed: this.#maxNamed,
      found,
    };
  }

  /** What the indexes say of one dependent type (see `index_reads.ts`). */
  #fromIndex(
    group: readonly Protection[],
    target: ReviewTarget,
    signal: AbortSignal,
  ): Promise<IndexReply> {
    return answerFromIndex(group, target, {
      indexes: this.#indexes!,
      source: this.#source,
      signal,
      budget: this.#whenBudget,
      maxNamed: this.#maxNamed,
      freshnessMs: this.#freshnessMs(),
      onNamed: () => this.#readWorkspaceEarly(target.cluster),
    });
  }

  /**
   * How long the index may take to show it is fresh: `--index-freshness-
   * timeout`, and at most a quarter of what is left of the deadline.
   */
  #freshnessMs(): number {
    return Math.min(this.#indexFreshnessMs, this.#deadline.remainingMs() / 4);
  }
}
