/**
 * The shape of the webhook's `/holds.json`: the objects it has denied
 * recently, what held each and since when. The webhook writes it; the
 * controller's graph page and tools read it with
 * {@linkcode parseHoldsReport}.
 *
 * @module
 */
import { z } from "zod";
import { type Cause, parseCause } from "./causes.ts";

/** An object the webhook has denied, and what held it last. */
export interface Hold {
  /** The object's logical cluster. */
  cluster: string;
  /** API group, `""` for core. */
  group: string;
  /** Plural resource. */
  resource: string;
  /** Namespace, `""` when cluster-scoped. */
  namespace: string;
  /** Name. */
  name: string;
  /** The last denial's outcome (`denied_referenced`, `denied_owned`, `denied_locked`). */
  outcome: string;
  /** What held it at the last denial, the first few. */
  causes: Cause[];
  /** The first denial, ISO 8601. */
  firstDenied: string;
  /** The last denial, ISO 8601. */
  lastDenied: string;
  /** Denials since the first. */
  count: number;
}

/** The whole `/holds.json` answer. */
export interface HoldsReport {
  /** When it was written, ISO 8601. */
  now: string;
  /** The most entries the table keeps. */
  capacity: number;
  /** Entries dropped (oldest first) to stay within it, since the start. */
  dropped: number;
  /** The entries, longest held first. */
  holds: Hold[];
}

const HoldSchema = z.object({
  cluster: z.string().max(256),
  group: z.string().max(253),
  resource: z.string().max(253),
  namespace: z.string().max(63),
  name: z.string().max(253),
  outcome: z.string().max(64),
  causes: z.array(z.unknown()).max(64),
  firstDenied: z.iso.datetime({ offset: true }),
  lastDenied: z.iso.datetime({ offset: true }),
  count: z.int().min(1),
});

const ReportSchema = z.object({
  now: z.iso.datetime({ offset: true }),
  capacity: z.int().min(0),
  dropped: z.int().min(0),
  holds: z.array(HoldSchema).max(100_000),
});

/**
 * A `/holds.json` body, validated; causes that do not parse are left out.
 * Throws an Error naming the first problem when the body is not a report.
 */
export function parseHoldsReport(body: unknown): HoldsReport {
  const parsed = ReportSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `not a holds report: ${issue?.path.join(".") ?? ""}: ${
        issue?.message ?? "invalid"
      }`,
    );
  }
  return {
    ...parsed.data,
    holds: parsed.data.holds.map((h) => ({
      ...h,
      causes: h.causes.map(parseCause).filter((c): c is Cause =>
        c !== undefined
      ),
    })),
  };
}
