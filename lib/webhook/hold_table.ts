/**
 * "Blocked by what, since when": the objects the webhook has denied
 * recently, what held each at its last denial, and since when. Only a
 * denial the live object confirmed (its uid matched the review's) is
 * recorded: a forged review adds nothing.
 *
 * Bounded: at most `capacity` entries, at most
 * {@linkcode MAX_HOLD_CAUSE_BYTES} of causes per entry, and an entry not
 * denied again for `ttlMs` is forgotten. An allowed delete of an object
 * forgets it at once. Shared fairly between workspaces: when the table is
 * over `capacity`, the entry that goes is the one denied longest ago in
 * the workspace (logical cluster) with the most entries, so a workspace
 * loses entries only to one with as many or more, and one tenant's flood
 * of denials evicts only its own. The entry held longest (the earliest
 * first denial, what `dependency_webhook_oldest_hold_seconds` measures)
 * never goes for room: only its TTL or an allowed delete removes it.
 *
 * @module
 */
import type { Cause, Hold, HoldsReport } from "../causes/mod.ts";
import type { AdmissionRequest } from "./admission_review.ts";
import { objectOf } from "./admission_review.ts";
import { reviewTarget } from "./review_target.ts";
import type { Outcome, Verdict } from "./verdicts.ts";

/** The most bytes of causes (as JSON) one entry keeps; the rest are counted. */
export const MAX_HOLD_CAUSE_BYTES = 4_096;

/** How long an entry not denied again is kept, by default: one hour. */
export const DEFAULT_HOLD_TTL_MS = 3_600_000;

/** The outcomes that mean something holds the object. */
const HELD: ReadonlySet<Outcome> = new Set([
  "denied_referenced",
  "denied_owned",
  "denied_locked",
]);

/** The outcomes that let the delete through: nothing holds it now. */
const RELEASED: ReadonlySet<Outcome> = new Set([
  "allowed",
  "allowed_skip",
  "allowed_workspace_deleting",
]);

/** Options of {@linkcode HoldTable}. */
export interface HoldTableOptions {
  /** The most entries kept. */
  capacity: number;
  /** How long an entry not denied again is kept. @default {DEFAULT_HOLD_TTL_MS} */
  ttlMs?: number;
  /** The clock, ms since the epoch. @default {Date.now} */
  now?: () => number;
}

interface Entry {
  key: string;
  hold: Omit<Hold, "firstDenied" | "lastDenied">;
  first: number;
  last: number;
}

/** The table; see the module's description. */
export class HoldTable {
  readonly #capacity: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** In order of last denial, oldest first (a Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>();
  /** The same entries by workspace, each in order of last denial. */
  readonly #byCluster = new Map<string, Map<string, Entry>>();
  #dropped = 0;

  /** An empty table. */
  constructor(options: HoldTableOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1) {
      throw new RangeError(
        `capacity must be a positive integer: current value is ${options.capacity}`,
      );
    }
    this.#capacity = options.capacity;
    this.#ttlMs = options.ttlMs ?? DEFAULT_HOLD_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** How many entries it holds now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Takes a DELETE review's verdict into account: a denial because
   * something holds the object, confirmed against the live object
   * (`verdict.confirmed`), records it (a dry run does not: it asks, it
   * does not wait), an allowed delete forgets it, anything else changes
   * nothing.
   */
  observe(request: AdmissionRequest, verdict: Verdict): void {
    if (request.operation !== "DELETE") return;
    const held = HELD.has(verdict.outcome);
    if (!held && !RELEASED.has(verdict.outcome)) return;
    // Most reviews are allowed deletes: with nothing held, nothing to forget.
    if (!held && this.#entries.size === 0) return;
    // A denial the live object did not confirm may be a forged review.
    if (held && (verdict.confirmed !== true || request.dryRun === true)) return;
    const object = objectOf(request);
    if (object === undefined) return;
    const target = reviewTarget(request, object);
    if (typeof target === "string") return;
    const { cluster, namespace = "", name, resource } = target;
    const key = JSON.stringify([
      cluster,
      resource.group,
      resource.resource,
      namespace,
      name,
    ]);
    const now = this.#now();
    this.#expire(now);
    if (!held) {
      const gone = this.#entries.get(key);
      if (gone !== undefined) this.#remove(gone);
      return;
    }
    const before = this.#entries.get(key);
    if (before !== undefined) this.#remove(before);
    const entry: Entry = {
      key,
      hold: {
        cluster,
        group: resource.group,
        resource: resource.resource,
        namespace,
        name,
        outcome: verdict.outcome,
        causes: boundedCauses(verdict.causes ?? []),
        count: (before?.hold.count ?? 0) + 1,
      },
      first: before?.first ?? now,
      last: now,
    };
    this.#entries.set(key, entry);
    let own = this.#byCluster.get(cluster);
    if (own === undefined) this.#byCluster.set(cluster, own = new Map());
    own.set(key, entry);
    while (this.#entries.size > this.#capacity) {
      const victim = this.#victim();
      if (victim === undefined) break;
      this.#remove(victim);
      this.#dropped++;
    }
  }

  /**
   * The entry to drop for room: the one denied longest ago in the
   * workspace with the most entries (among as many, the one denied
   * longest ago of their oldest), never the entry held longest.
   */
  #victim(): Entry | undefined {
    const keep = this.#longestHeld();
    let victim: Entry | undefined;
    let size = 0;
    for (const own of this.#byCluster.values()) {
      if (own.size < size) continue;
      let oldest: Entry | undefined;
      for (const entry of own.values()) {
        if (entry !== keep) {
          oldest = entry;
          break;
        }
      }
      if (oldest === undefined) continue;
      if (
        victim === undefined || own.size > size || oldest.last < victim.last
      ) {
        victim = oldest;
        size = own.size;
      }
    }
    return victim;
  }

  /** The entry first denied longest ago. */
  #longestHeld(): Entry | undefined {
    let oldest: Entry | undefined;
    for (const entry of this.#entries.values()) {
      if (oldest === undefined || entry.first < oldest.first) oldest = entry;
    }
    return oldest;
  }

  /** Removes `entry` from both indexes. */
  #remove(entry: Entry): void {
    this.#entries.delete(entry.key);
    const own = this.#byCluster.get(entry.hold.cluster);
    own?.delete(entry.key);
    if (own?.size === 0) this.#byCluster.delete(entry.hold.cluster);
  }

  /** The report `/holds.json` answers: longest held first. */
  report(): HoldsReport {
    const now = this.#now();
    this.#expire(now);
    const holds = [...this.#entries.values()]
      .sort((a, b) => a.first - b.first)
      .map((e): Hold => ({
        ...e.hold,
        firstDenied: new Date(e.first).toISOString(),
        lastDenied: new Date(e.last).toISOString(),
      }));
    return {
      now: new Date(now).toISOString(),
      capacity: this.#capacity,
      dropped: this.#dropped,
      holds,
    };
  }

  /** Seconds since the first denial of the longest-held entry; 0 when none. */
  oldestAgeSeconds(): number {
    const now = this.#now();
    this.#expire(now);
    let first = Infinity;
    for (const e of this.#entries.values()) first = Math.min(first, e.first);
    return first === Infinity ? 0 : Math.max(0, (now - first) / 1000);
  }

  /** Forgets the entries last denied more than the TTL ago (oldest first). */
  #expire(now: number): void {
    for (const entry of this.#entries.values()) {
      if (now - entry.last <= this.#ttlMs) return;
      this.#remove(entry);
    }
  }
}

/**
 * The first causes that fit in {@linkcode MAX_HOLD_CAUSE_BYTES} as JSON,
 * and a count of the references and owners left out.
 */
export function boundedCauses(causes: readonly Cause[]): Cause[] {
  const kept: Cause[] = [];
  let bytes = 0;
  const more = { Reference: 0, Owner: 0 };
  for (const cause of causes) {
    const size = JSON.stringify(cause).length;
    if (bytes + size <= MAX_HOLD_CAUSE_BYTES) {
      kept.push(cause);
      bytes += size;
    } else if (cause.type === "More") {
      more[cause.of] += cause.count;
    } else if (cause.type === "Reference" || cause.type === "Owner") {
      more[cause.type]++;
    }
  }
  for (const kind of ["Reference", "Owner"] as const) {
    if (more[kind] === 0) continue;
    const at = kept.findIndex((c) => c.type === "More" && c.of === kind);
    const counted = at === -1 ? 0 : (kept[at] as { count: number }).count;
    const merged: Cause = {
      type: "More",
      of: kind,
      count: counted + more[kind],
    };
    if (at === -1) kept.push(merged);
    else kept[at] = merged;
  }
  return kept;
}
