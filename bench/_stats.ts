/**
 * What the bench scripts share: the median and spread of samples, and the
 * run count from the first argument.
 *
 * @module
 */

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? sorted[middle]!
    : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The smallest, middle and largest of some samples. */
export interface Spread {
  /** The smallest sample. */
  min: number;
  /** The median ({@linkcode median}). */
  median: number;
  /** The largest sample. */
  max: number;
  /** How many samples. */
  count: number;
}

/**
 * The spread of `values`.
 *
 * @throws {RangeError} If there are no values.
 */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) {
    throw new RangeError("Cannot take the spread of no samples");
  }
  return {
    min: Math.min(...values),
    median: median(values),
    max: Math.max(...values),
    count: values.length,
  };
}

/** `min / median / max` with `digits` decimals. */
export function formatSpread(s: Spread, digits = 1): string {
  return [s.min, s.median, s.max].map((v) => v.toFixed(digits)).join(" / ");
}

/**
 * The run count given as the first argument, or `fallback`; exits 2 with a
 * message naming `program` if it is not a positive integer.
 */
export function runCount(
  args: readonly string[],
  options: { program: string; fallback: number },
): number {
  const runs = Number(args[0] ?? String(options.fallback));
  if (!Number.isInteger(runs) || runs < 1) {
    console.error(
      `${options.program}: the run count must be a positive integer: current value is '${
        args[0]
      }'`,
    );
    Deno.exit(2);
  }
  return runs;
}
