/**
 * Test helpers for Prometheus exposition text. Only for `*_test.ts` files.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { MetricsRegistry } from "../lib/runtime/mod.ts";

/** The value of the sample `series` (name and labels) in `text`, if any. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * Asserts that the process memory gauges of `registry` are empty until
 * `collect` runs and hold plausible values after it.
 */
export async function assertProcessMetricsCollected(
  registry: MetricsRegistry,
  collect: () => void,
): Promise<void> {
  let text = await registry.render();
  assert.equal(sample(text, "process_resident_memory_bytes"), 0);
  assert.equal(sample(text, 'deno_heap_bytes{kind="used"}'), undefined);

  collect();
  text = await registry.render();
  const rss = sample(text, "process_resident_memory_bytes");
  assert.ok(rss !== undefined && rss > 0, String(rss));
  for (const kind of ["used", "total", "external"]) {
    const value = sample(text, `deno_heap_bytes{kind="${kind}"}`);
    assert.ok(value !== undefined && Number.isFinite(value), kind);
  }
  const used = sample(text, 'deno_heap_bytes{kind="used"}')!;
  const total = sample(text, 'deno_heap_bytes{kind="total"}')!;
  assert.ok(used > 0 && used <= total, `${used} <= ${total}`);
}
