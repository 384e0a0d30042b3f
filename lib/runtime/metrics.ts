/**
 * Prometheus metrics on `prom-client`: a {@linkcode MetricsRegistry} owns one
 * `prom-client` `Registry` and creates counters, gauges and histograms in it,
 * never in `prom-client`'s global registry. The metrics it returns are
 * `prom-client`'s own, so their API is `prom-client`'s: `inc(labels, value)`,
 * `set(labels, value)`, `observe(labels, value)`. Build one registry in
 * `main()` and pass it down.
 *
 * The text follows `prom-client`: families in registration order, separated
 * by an empty line; series in the order they were first touched; labels in
 * the order of the object that first touched the series (pass them in
 * `labelNames` order), with a histogram's `le` first.
 *
 * @example Usage
 * ```ts
 * import { CONTENT_TYPE, MetricsRegistry } from "./metrics.ts";
 *
 * const registry = new MetricsRegistry();
 * const reviews = registry.counter({
 *   name: "webhook_reviews_total",
 *   help: "Admission reviews answered, by verdict.",
 *   labelNames: ["allowed"],
 * });
 * reviews.inc({ allowed: "false" });
 * const response = new Response(await registry.render(), {
 *   headers: { "content-type": CONTENT_TYPE },
 * });
 * ```
 *
 * @module
 */
import {
  Counter,
  type CounterConfiguration,
  Gauge,
  type GaugeConfiguration,
  Histogram,
  type HistogramConfiguration,
  Registry,
} from "prom-client";

/** `prom-client`'s metrics, as {@linkcode MetricsRegistry} creates them. */
export type { Counter, Gauge, Histogram } from "prom-client";

/** The `Content-Type` of {@linkcode MetricsRegistry.render} output. */
export const CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/**
 * Creates metrics in a `prom-client` registry of its own and renders them.
 * Names, label names and duplicates are checked by `prom-client`, which
 * throws an `Error` naming the problem.
 *
 * @example Usage
 * ```ts
 * import { MetricsRegistry } from "./metrics.ts";
 *
 * const registry = new MetricsRegistry();
 * const duration = registry.histogram({
 *   name: "reconcile_duration_seconds",
 *   help: "Time spent in one reconcile.",
 * });
 * duration.observe(0.2);
 * await registry.render();
 * ```
 */
export class MetricsRegistry {
  #registry = new Registry();

  /** Creates a counter in this registry. */
  counter<T extends string>(
    config: Omit<CounterConfiguration<T>, "registers">,
  ): Counter<T> {
    return new Counter({ ...config, registers: [this.#registry] });
  }

  /** Creates a gauge in this registry. */
  gauge<T extends string>(
    config: Omit<GaugeConfiguration<T>, "registers">,
  ): Gauge<T> {
    return new Gauge({ ...config, registers: [this.#registry] });
  }

  /**
   * Creates a histogram in this registry. Without `buckets` it uses
   * `prom-client`'s default buckets: 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
   * 0.5, 1, 2.5, 5 and 10.
   */
  histogram<T extends string>(
    config: Omit<HistogramConfiguration<T>, "registers">,
  ): Histogram<T> {
    return new Histogram({ ...config, registers: [this.#registry] });
  }

  /** Renders every metric in the Prometheus text format 0.0.4. */
  render(): Promise<string> {
    return this.#registry.metrics();
  }
}

/**
 * Registers the process gauges (resident memory, V8 heap) and returns the
 * function that refreshes them; call it before each scrape.
 */
export function registerProcessMetrics(registry: MetricsRegistry): () => void {
  const residentMemory = registry.gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes",
  });
  const heap = registry.gauge({
    name: "deno_heap_bytes",
    help: "V8 heap of the process, used and total, in bytes",
    labelNames: ["kind"],
  });
  return () => {
    const usage = Deno.memoryUsage();
    residentMemory.set(usage.rss);
    heap.set({ kind: "used" }, usage.heapUsed);
    heap.set({ kind: "total" }, usage.heapTotal);
    heap.set({ kind: "external" }, usage.external);
  };
}
