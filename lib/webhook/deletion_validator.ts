/**
 * The admission decision for a DELETE (and, where a Lock says so, an
 * UPDATE), in three steps: plan (`review_plan.ts`: the answer at once, or
 * what to read), reads (`review_reads.ts`: every read of the review at
 * once, each at most once, under one deadline), fold (`review_fold.ts`:
 * the verdict from the readings). When the fold denies for Locks or
 * references, whether kcp is deleting the workspace is read within what is
 * left of the same deadline and the readings are folded again. Fails
 * closed; never throws.
 *
 * @module
 */
import type { BypassAuthorizer } from "./access_review.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import { Deadline, type FairQueue } from "../runtime/mod.ts";
import type { RuleRegistry } from "./rule_registry.ts";
import type { LockIndex } from "../locks/mod.ts";
import type { IndexedDependents } from "./index_reads.ts";
import { planReview } from "./review_plan.ts";
import {
  type DependentSource,
  ReviewReader,
  type ReviewReadings,
  WORKSPACE_CHECK_TIMEOUT_MS,
} from "./review_reads.ts";
import { asksTeardown, foldReview, foldTeardown } from "./review_fold.ts";
import { busy, type Verdict } from "./verdicts.ts";

export type {
  DependentQuery,
  DependentSource,
  ObjectQuery,
} from "./review_reads.ts";
export {
  NOT_INITIALIZED_MESSAGE,
  type Outcome,
  type Permission,
  UNCONFIRMED_MESSAGE,
  type Verdict,
} from "./verdicts.ts";

/** What the admission server asks of a validator. */
export interface Validator {
  /** Decides one admission request. Never throws. */
  validate(
    request: AdmissionRequest,
    options?: ValidateOptions,
  ): Promise<Verdict>;
}

/** Options for {@linkcode DeletionValidator.validate}. */
export interface ValidateOptions {
  /**
   * The workspace path of the provider whose webhook configuration kcp
   * called: only rules about its export of the type apply.
   */
  provider?: string;
}

/** Options for {@linkcode DeletionValidator}. */
export interface DeletionValidatorOptions {
  /** Deadline for all reads of one review, well inside kcp's 10 s webhook timeout. @default {7_000} */
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
  /**
   * The clock, in ms since the epoch: when a Lock expires, how long a
   * workspace has been deleted. @default {Date.now}
   */
  now?: () => number;
  /**
   * The dependents indexes: a type they can answer for is not listed (see
   * `index_reads.ts`). @default {none: every dependent type is listed}
   */
  indexes?: IndexedDependents;
  /** How long a review waits for an index to show it is fresh. @default {200} */
  indexFreshnessMs?: number;
}

/** Decides reviews against the registry's rules and the Locks. */
export class DeletionValidator implements Validator {
  readonly #registry: RuleRegistry;
  readonly #source: DependentSource;
  readonly #options: DeletionValidatorOptions;

  /** Builds a validator over a registry and a source of dependents. */
  constructor(
    registry: RuleRegistry,
    source: DependentSource,
    options: DeletionValidatorOptions = {},
  ) {
    this.#registry = registry;
    this.#source = source;
    this.#options = options;
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
    const { locks, bypass, reviews } = this.#options;
    const step = planReview(request, {
      loaded: this.#registry.loaded && (locks?.loaded ?? true),
      protectionsOf: (resource) => this.#registry.find(resource),
      locks,
      now: (this.#options.now ?? Date.now)(),
      provider: options.provider,
      authorizedBypass: bypass !== undefined,
    });
    if ("verdict" in step) return step.verdict;
    const { plan } = step;
    const release = reviews === undefined
      ? () => {}
      : await reviews.acquire(plan.target.cluster, {
        timeoutMs: this.#options.queueTimeoutMs ?? 2_000,
      });
    if (release === undefined) {
      return busy(plan.uid, {
        target: plan.target,
        maxPerKey: reviews!.maxPerKey,
        capacity: reviews!.capacity,
      });
    }
    const deadline = new Deadline(this.#options.timeoutMs ?? 7_000, {
      what: "the review's reads",
    });
    try {
      const reader = new ReviewReader(this.#source, {
        deadline,
        bypass,
        maxNamed: this.#options.maxNamed ?? 10,
        indexes: this.#options.indexes,
        ...(this.#options.indexFreshnessMs === undefined
          ? {}
          : { indexFreshnessMs: this.#options.indexFreshnessMs }),
      });
      const readings = await reader.read(plan);
      const verdict = foldReview(plan, readings);
      if (!asksTeardown(verdict)) return verdict;
      const deletedAt = await reader.workspaceDeletedAt(
        plan.target.cluster,
        WORKSPACE_CHECK_TIMEOUT_MS,
      ).catch(() => undefined);
      return confirmedBy(
        foldTeardown(plan, readings, {
          verdict,
          deletedAt,
          now: (this.#options.now ?? Date.now)(),
          teardownOrderMs: this.#options.teardownOrderMs ?? 120_000,
        }),
        readings,
      );
    } finally {
      deadline.close();
      release();
    }
  }
}

/**
 * `verdict`, a denial because something holds the object, marked
 * `confirmed` when the live object matched the review (the hold table
 * records only such denials).
 */
function confirmedBy(verdict: Verdict, readings: ReviewReadings): Verdict {
  const { confirmed } = readings;
  return asksTeardown(verdict) && confirmed.status === "fulfilled" &&
      confirmed.value
    ? { ...verdict, confirmed: true }
    : verdict;
}
