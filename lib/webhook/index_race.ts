/**
 * A review of an idle index: its list, and the index's quiet proof (a
 * short watch showing the workspace unchanged since the index's position,
 * `index_reads.ts`), ordered by what the scope's last list cost:
 *
 * - **List first** (a scope not known to be slow): the list, and once it
 *   has taken longer than the freshness budget, beside it the proof; the
 *   first to answer decides and stops the other. A small workspace's list
 *   answers first and no proof is tried (its reads would only be cut).
 * - **Proof first** (the scope's last list was slower than the budget):
 *   the proof alone, and the list only when it fails. A workspace too
 *   large to list cheaply is then not moved through the webhook on every
 *   allowed delete, which would take the CPU other tenants' reviews need.
 *
 * Either way the answer is a list's: a proof that fails leaves it to the
 * list, and the list's time is recorded for the next review of the scope.
 *
 * @module
 */
import { valueWithin } from "../runtime/mod.ts";
import type { IdleIndexReply, IndexAnswer } from "./index_reads.ts";
import { addBlockers, type Blockers } from "./review_list.ts";

/** Options of {@linkcode listOrQuiet}. */
export interface ListOrQuietOptions {
  /** The review's signal (deadline and cancellation). */
  signal: AbortSignal;
  /**
   * Lists the scope into `found`, ending with `signal`; rejects when the
   * list fails.
   */
  list: (found: Blockers, signal: AbortSignal) => Promise<void>;
  /**
   * Where the answer goes: the proof's, or what the list found (also what
   * a list that failed had found by then).
   */
  found: Blockers;
  /** How many blockers `found` names. */
  maxNamed: number;
  /**
   * How long a proof tried first may take before it is stopped and the
   * scope listed. @default {QUIET_FIRST_LIMIT_MS}
   */
  quietLimitMs?: number;
}

/**
 * How long a proof tried first may take: kcp ends its watch after 3 s
 * (`index_service.ts`), and the consistent read before it takes about
 * 0.1 s; a proof still open past this is not waited for.
 */
export const QUIET_FIRST_LIMIT_MS = 4_000;

/**
 * Adds the dependents that refer to `options.found`, from the idle index's
 * proof or from the list, as ordered by `reply.quietFirst` (see the
 * module's header).
 *
 * @throws {Error} What the list throws, when it is the list that answers.
 */
export async function listOrQuiet(
  reply: IdleIndexReply,
  options: ListOrQuietOptions,
): Promise<void> {
  const { signal } = options;
  if (reply.quietFirst) {
    const stop = new AbortController();
    const answer = await valueWithin(
      reply.quiet(AbortSignal.any([signal, stop.signal])),
      options.quietLimitMs ?? QUIET_FIRST_LIMIT_MS,
    ).catch(() => undefined);
    stop.abort(new Error("the proof took too long"));
    if (answer !== undefined) {
      addBlockers(options.found, answer, options.maxNamed);
      return;
    }
    await timedList(reply, options);
    return;
  }
  const started = performance.now();
  const listed: Blockers = { named: [], total: 0 };
  const listing = new AbortController();
  const quieting = new AbortController();
  const list = options.list(listed, AbortSignal.any([signal, listing.signal]));
  const quiet = valueWithin(
    list.then(() => true, () => true),
    reply.freshnessMs,
  ).then((listedFirst) => {
    if (listedFirst !== true) {
      return reply.quiet(AbortSignal.any([signal, quieting.signal]));
    }
    reply.observe("idle");
    return undefined;
  });
  const first = await Promise.race<IndexAnswer | undefined>([
    list.then(() => undefined, () => undefined),
    quiet.catch(() => undefined).then(async (answer) =>
      answer ?? await list.then(() => undefined)
    ),
  ]);
  if (first !== undefined) {
    listing.abort(new Error("the dependents index answered"));
    // Stopped past the freshness budget: slow.
    reply.listTook(Infinity);
    addBlockers(options.found, first, options.maxNamed);
    return;
  }
  quieting.abort(new Error("the list answered"));
  try {
    await list;
    reply.listTook(performance.now() - started);
  } finally {
    addBlockers(options.found, listed, options.maxNamed);
  }
}

/** The list alone, its time recorded once it answers. */
async function timedList(
  reply: IdleIndexReply,
  options: ListOrQuietOptions,
): Promise<void> {
  const started = performance.now();
  const listed: Blockers = { named: [], total: 0 };
  try {
    await options.list(listed, options.signal);
    reply.listTook(performance.now() - started);
  } finally {
    addBlockers(options.found, listed, options.maxNamed);
  }
}
