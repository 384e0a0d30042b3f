/**
 * How long a rule's status waits for kcp's answers about the webhook's
 * reads (see `webhook_access.ts`). The plan leaves out the status of an
 * installed rule while a read it needs has been neither answered nor
 * failed, so that a rule is written once, with the answer, rather than
 * first without it and again with it. This bounds that wait, per read:
 *
 * - until the read has been sent and `waitMs` has passed since (longer than
 *   one attempt that reaches the client's deadline and its retry), a read
 *   that failed without ever being answered (a timeout, kcp busy at a cold
 *   start) still counts as being asked: it is retried with backoff, and
 *   its answer usually comes within the wait;
 * - and at most `maxWaitMs` after a pass first asked for it, however long
 *   it waited for its turn to be sent (thousands of reads at a cold start
 *   go out a few at a time);
 * - once the wait is over, a read still unanswered counts as one that
 *   could not be asked (its failure, "not answered within N s", or "not
 *   sent within N s" when it never got its turn): the
 *   rule is written, `Enforced` with a note, as for any read that cannot
 *   be made, and written again when the answer comes.
 *
 * A read that was answered once keeps its answer (a later failed read
 * keeps it too), so only a read asked for the first time waits: at a cold
 * start, or for a rule or type that is new.
 *
 * @example Usage
 * ```ts
 * import { AccessWait } from "./access_wait.ts";
 *
 * let now = 0;
 * const wait = new AccessWait({ waitMs: 1_000, maxWaitMs: 5_000, now: () => now });
 * wait.want(["k"]);
 * wait.sent("k");
 * wait.view(new Map([["k", { error: "timeout" }]])).readings.has("k"); // false: still waiting
 * now = 1_000;
 * wait.view(new Map()).readings.get("k"); // { error: "not answered within 1 s" }
 * ```
 *
 * @module
 */
import type { Reading } from "../runtime/mod.ts";

/** Options for {@linkcode AccessWait}. */
export interface AccessWaitOptions {
  /** How long a read sent may stay unanswered before it counts as not asked. */
  waitMs: number;
  /** How long a read wanted may stay unanswered, sent or not, before it counts as not asked. */
  maxWaitMs: number;
  /** The clock, in milliseconds. @default {performance.now} */
  now?: () => number;
}

/** When a read was first wanted, and first sent. */
interface Asked {
  wanted: number;
  sent?: number;
}

/** What the plan sees of the answers, and when that changes next. */
export interface AccessView {
  /** The readings, as the plan is to see them. */
  readings: ReadonlyMap<string, Reading<boolean>>;
  /** When the next wait ends (by the clock), if a read is waited for. */
  nextAt?: number;
}

/** When each read was first wanted and sent, and the view the plan gets of them. */
export class AccessWait {
  readonly #waitMs: number;
  readonly #maxWaitMs: number;
  readonly #now: () => number;
  #asked = new Map<string, Asked>();

  /** Builds a wait that knows of no read yet. */
  constructor(options: AccessWaitOptions) {
    this.#waitMs = options.waitMs;
    this.#maxWaitMs = options.maxWaitMs;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Sets the reads wanted now (by key): a new one is waited for from now,
   * one wanted before keeps its times, and one not wanted any more is
   * forgotten.
   */
  want(keys: Iterable<string>): void {
    const now = this.#now();
    const asked = new Map<string, Asked>();
    for (const key of keys) {
      asked.set(key, this.#asked.get(key) ?? { wanted: now });
    }
    this.#asked = asked;
  }

  /** Notes that a wanted read is being sent (the first time counts). */
  sent(key: string): void {
    const asked = this.#asked.get(key);
    if (asked !== undefined) asked.sent ??= this.#now();
  }

  /**
   * `readings` as the plan is to see them: a failure of a read never
   * answered is left out while its wait runs (the read counts as being
   * asked), and a read unanswered when its wait is over gets a failure if
   * it has none. `readings` itself is returned when nothing differs.
   */
  view(readings: ReadonlyMap<string, Reading<boolean>>): AccessView {
    const now = this.#now();
    let view: Map<string, Reading<boolean>> | undefined;
    let nextAt: number | undefined;
    for (const [key, asked] of this.#asked) {
      const reading = readings.get(key);
      if (reading?.answer !== undefined) continue;
      const due = Math.min(
        asked.wanted + this.#maxWaitMs,
        (asked.sent ?? Infinity) + this.#waitMs,
      );
      if (now < due) {
        nextAt = nextAt === undefined ? due : Math.min(nextAt, due);
        if (reading !== undefined) {
          view ??= new Map(readings);
          view.delete(key);
        }
      } else if (reading?.error === undefined) {
        view ??= new Map(readings);
        view.set(key, {
          error: asked.sent === undefined
            ? `not sent within ${
              seconds(this.#maxWaitMs)
            } s, behind the controller's other reviews`
            : `not answered within ${seconds(this.#waitMs)} s`,
        });
      }
    }
    return {
      readings: view ?? readings,
      ...(nextAt === undefined ? {} : { nextAt }),
    };
  }
}

/** Milliseconds as whole seconds, rounded up. */
function seconds(ms: number): number {
  return Math.ceil(ms / 1000);
}
