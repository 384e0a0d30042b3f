/**
 * What a review read ({@linkcode ReviewReadings}): what the reader
 * (`review_reads.ts`) gives the fold (`review_fold.ts`). Types only.
 *
 * @module
 */
import type { Blockers } from "./review_list.ts";
import type { OwnerFindings } from "./review_owners.ts";
import type { Unread } from "./verdicts.ts";

/** What a review read, each as a settled result. */
export interface ReviewReadings {
  /** Whether the live object is the one the review describes. */
  confirmed: PromiseSettledResult<boolean>;
  /** The dependents that refer to it; absent when nothing was listed. */
  blockers?: PromiseSettledResult<Blockers>;
  /** Whether kcp allows the user `bypass`; absent when not asked. */
  bypass?: PromiseSettledResult<boolean>;
  /** The owners the object (or its Namespace) names that hold it; absent when no rule reads them. */
  owners?: PromiseSettledResult<OwnerFindings>;
  /**
   * When `blockers` failed: the dependent types that could not be listed,
   * each with why (the first failure is `blockers`' reason).
   */
  unread?: Unread[];
  /** When `blockers` failed: what the lists that did answer found. */
  partial?: Blockers;
}
