/**
 * Test helper for Prometheus exposition text. Only for `*_test.ts` files.
 *
 * @module
 */

/** The value of the sample `series` (name and labels) in `text`, if any. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
