/**
 * Prometheus metrics in the text exposition format 0.0.4: counters, gauges
 * and histograms kept in a {@linkcode MetricsRegistry}, which renders them
 * for a `/metrics` endpoint. No global registry: build one in `main()` and
 * pass it down.
 *
 * @example Usage
 * ```ts
 * import { CONTENT_TYPE, MetricsRegistry } from "./metrics.ts";
 *
 * const registry = new MetricsRegistry();
 * const reviews = registry.counter("webhook_reviews_total", {
 *   help: "Admission reviews answered, by verdict.",
 *   labelNames: ["allowed"],
 * });
 * reviews.inc({ allowed: "false" });
 * const response = new Response(registry.render(), {
 *   headers: { "content-type": CONTENT_TYPE },
 * });
 * ```
 *
 * @module
 */

/** The `Content-Type` of {@linkcode MetricsRegistry.render} output. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Default histogram buckets, in seconds. */
const DEFAULT_BUCKETS: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Label values of one series, keyed by label name. */
export type Labels = Readonly<Record<string, string>>;

/** Options for {@linkcode MetricsRegistry.counter} and {@linkcode MetricsRegistry.gauge}. */
export interface MetricOptions {
  /** The `# HELP` text. */
  help: string;
  /**
   * Names of the labels every sample must carry, in output order.
   * @default {[]}
   */
  labelNames?: readonly string[];
}

/** Options for {@linkcode MetricsRegistry.histogram}. */
export interface HistogramOptions extends MetricOptions {
  /**
   * Upper bounds of the buckets: strictly increasing finite numbers. The
   * `+Inf` bucket is always added.
   * @default {[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]}
   */
  buckets?: readonly number[];
}

/** Options for {@linkcode MetricsRegistry}. */
export interface MetricsRegistryOptions {
  /**
   * Monotonic clock in milliseconds, used by {@linkcode Histogram.startTimer}.
   * @default {performance.now}
   */
  now?: () => number;
}

/** A value that only goes up, such as a number of requests. */
export interface Counter {
  /**
   * Adds `value` to the series named by `labels`.
   * @throws {TypeError} If `labels` does not name exactly the label names.
   * @throws {RangeError} If `value` is negative or NaN.
   */
  inc(labels?: Labels, value?: number): void;
}

/** A value that goes up and down, such as a queue length. */
export interface Gauge {
  /**
   * Sets the series named by `labels` to `value`.
   * @throws {TypeError} If `labels` does not name exactly the label names.
   */
  set(value: number, labels?: Labels): void;
  /**
   * Adds `value` (default 1) to the series named by `labels`.
   * @throws {TypeError} If `labels` does not name exactly the label names.
   */
  inc(labels?: Labels, value?: number): void;
  /**
   * Subtracts `value` (default 1) from the series named by `labels`.
   * @throws {TypeError} If `labels` does not name exactly the label names.
   */
  dec(labels?: Labels, value?: number): void;
}

/** A distribution of observed values, such as request durations. */
export interface Histogram {
  /**
   * Records one observation in the series named by `labels`.
   * @throws {TypeError} If `labels` does not name exactly the label names.
   * @throws {RangeError} If `value` is NaN.
   */
  observe(value: number, labels?: Labels): void;
  /**
   * Starts timing with the registry's clock. Each call of the returned
   * function observes the seconds elapsed since the start (never negative)
   * and returns them.
   * @throws {TypeError} If `labels` does not name exactly the label names
   * (checked now, not when the timer stops).
   */
  startTimer(labels?: Labels): () => number;
}

/** What the registry needs from each metric. */
interface Family {
  render(lines: string[]): void;
}

/**
 * Holds metrics and renders them in the Prometheus text format.
 *
 * @example Usage
 * ```ts
 * import { MetricsRegistry } from "./metrics.ts";
 *
 * const registry = new MetricsRegistry();
 * const duration = registry.histogram("reconcile_duration_seconds", {
 *   help: "Time spent in one reconcile.",
 * });
 * const stop = duration.startTimer();
 * stop();
 * registry.render();
 * ```
 */
export class MetricsRegistry {
  #now: () => number;
  #families: Family[] = [];
  /** Maps each sample name to the metric that emits it. */
  #taken = new Map<string, string>();

  /** Creates an empty registry. */
  constructor(options: MetricsRegistryOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Registers a counter.
   * @throws {TypeError} If the name or a label name is invalid, or the name
   * is taken.
   */
  counter(name: string, options: MetricOptions): Counter {
    const labelNames = this.#register("counter", name, options);
    const counter = new CounterImpl(name, options.help, labelNames);
    this.#families.push(counter);
    return counter;
  }

  /**
   * Registers a gauge.
   * @throws {TypeError} If the name or a label name is invalid, or the name
   * is taken.
   */
  gauge(name: string, options: MetricOptions): Gauge {
    const labelNames = this.#register("gauge", name, options);
    const gauge = new GaugeImpl(name, options.help, labelNames);
    this.#families.push(gauge);
    return gauge;
  }

  /**
   * Registers a histogram, which emits `<name>_bucket`, `<name>_sum` and
   * `<name>_count`.
   * @throws {TypeError} If the name or a label name is invalid (`le` is
   * reserved), or a name is taken.
   * @throws {RangeError} If the buckets are not strictly increasing finite
   * numbers.
   */
  histogram(name: string, options: HistogramOptions): Histogram {
    const buckets = Object.freeze([...(options.buckets ?? DEFAULT_BUCKETS)]);
    let previous = -Infinity;
    for (const bound of buckets) {
      if (!Number.isFinite(bound) || bound <= previous) {
        throw new RangeError(
          `Cannot register histogram '${name}' as buckets must be strictly increasing finite numbers: current value is [${
            buckets.join(", ")
          }]`,
        );
      }
      previous = bound;
    }
    const labelNames = this.#register("histogram", name, options);
    const histogram = new HistogramImpl(name, options.help, {
      labelNames,
      buckets,
      now: this.#now,
    });
    this.#families.push(histogram);
    return histogram;
  }

  /**
   * Renders every metric in registration order, series sorted by label
   * values. Returns `""` when nothing is registered.
   */
  render(): string {
    const lines: string[] = [];
    for (const family of this.#families) family.render(lines);
    return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
  }

  #register(
    kind: "counter" | "gauge" | "histogram",
    name: string,
    options: MetricOptions,
  ): readonly string[] {
    if (!METRIC_NAME.test(name)) {
      throw new TypeError(
        `Cannot register ${kind} as the name must match ${METRIC_NAME.source}: current value is '${name}'`,
      );
    }
    const labelNames = Object.freeze([...(options.labelNames ?? [])]);
    for (const label of labelNames) {
      if (!LABEL_NAME.test(label) || label.startsWith("__")) {
        throw new TypeError(
          `Cannot register ${kind} '${name}' as label names must match ${LABEL_NAME.source} and not start with '__': current value is '${label}'`,
        );
      }
      if (kind === "histogram" && label === "le") {
        throw new TypeError(
          `Cannot register histogram '${name}' as label name 'le' is reserved: current value is [${
            labelNames.join(", ")
          }]`,
        );
      }
    }
    if (new Set(labelNames).size !== labelNames.length) {
      throw new TypeError(
        `Cannot register ${kind} '${name}' as label names must be unique: current value is [${
          labelNames.join(", ")
        }]`,
      );
    }
    const sampleNames = kind === "histogram"
      ? [name, `${name}_bucket`, `${name}_sum`, `${name}_count`]
      : [name];
    for (const sample of sampleNames) {
      const owner = this.#taken.get(sample);
      if (owner === name) {
        throw new TypeError(
          `Cannot register ${kind} '${name}' as a metric with this name is already registered`,
        );
      }
      if (owner !== undefined) {
        throw new TypeError(
          `Cannot register ${kind} '${name}' as its series '${sample}' clashes with metric '${owner}'`,
        );
      }
    }
    for (const sample of sampleNames) this.#taken.set(sample, name);
    return labelNames;
  }
}

/** The series of one metric, keyed by label values. */
class SeriesMap<T> {
  #metric: string;
  #labelNames: readonly string[];
  #create: () => T;
  #series = new Map<string, { values: readonly string[]; data: T }>();

  constructor(metric: string, labelNames: readonly string[], create: () => T) {
    this.#metric = metric;
    this.#labelNames = labelNames;
    this.#create = create;
    // An unlabelled metric always has its one series, so it renders zeros.
    if (labelNames.length === 0) this.at([]);
  }

  get labelNames(): readonly string[] {
    return this.#labelNames;
  }

  /** The label values for `labels`, in label-name order. */
  values(labels: Labels | undefined): readonly string[] {
    const given: Labels = labels ?? {};
    const missing = this.#labelNames.filter((n) => !Object.hasOwn(given, n));
    const extra = Object.keys(given).filter((n) =>
      !this.#labelNames.includes(n)
    );
    if (missing.length > 0 || extra.length > 0) {
      const problems = [
        ...missing.map((n) => `label '${n}' is missing`),
        ...extra.map((n) => `label '${n}' is unexpected`),
      ];
      throw new TypeError(
        `Cannot record metric '${this.#metric}' as ${
          problems.join(" and ")
        } (label names: [${this.#labelNames.join(", ")}]): current value is ${
          JSON.stringify(given)
        }`,
      );
    }
    return this.#labelNames.map((n) => {
      const value = given[n];
      if (typeof value !== "string") {
        throw new TypeError(
          `Cannot record metric '${this.#metric}' as label '${n}' must be a string: current value is ${
            String(value)
          }`,
        );
      }
      return value;
    });
  }

  /** The series with these label values, created on first use. */
  at(values: readonly string[]): T {
    const key = JSON.stringify(values);
    let entry = this.#series.get(key);
    if (entry === undefined) {
      entry = { values, data: this.#create() };
      this.#series.set(key, entry);
    }
    return entry.data;
  }

  get(labels: Labels | undefined): T {
    return this.at(this.values(labels));
  }

  sorted(): { values: readonly string[]; data: T }[] {
    return [...this.#series.values()].sort((a, b) =>
      compareValues(a.values, b.values)
    );
  }
}

class CounterImpl implements Counter, Family {
  #name: string;
  #help: string;
  #series: SeriesMap<{ value: number }>;

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.#name = name;
    this.#help = help;
    this.#series = new SeriesMap(name, labelNames, () => ({ value: 0 }));
  }

  inc(labels?: Labels, value = 1): void {
    if (!(value >= 0)) {
      throw new RangeError(
        `Cannot increment counter '${this.#name}' as the value must be a non-negative number: current value is ${value}`,
      );
    }
    this.#series.get(labels).value += value;
  }

  render(lines: string[]): void {
    renderSimple(lines, this.#name, {
      help: this.#help,
      type: "counter",
      series: this.#series,
    });
  }
}

class GaugeImpl implements Gauge, Family {
  #name: string;
  #help: string;
  #series: SeriesMap<{ value: number }>;

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.#name = name;
    this.#help = help;
    this.#series = new SeriesMap(name, labelNames, () => ({ value: 0 }));
  }

  set(value: number, labels?: Labels): void {
    this.#series.get(labels).value = value;
  }

  inc(labels?: Labels, value = 1): void {
    this.#series.get(labels).value += value;
  }

  dec(labels?: Labels, value = 1): void {
    this.#series.get(labels).value -= value;
  }

  render(lines: string[]): void {
    renderSimple(lines, this.#name, {
      help: this.#help,
      type: "gauge",
      series: this.#series,
    });
  }
}

interface HistogramData {
  /** Per-bucket counts, not cumulative; the last slot is `+Inf`. */
  counts: number[];
  sum: number;
  count: number;
}

class HistogramImpl implements Histogram, Family {
  #name: string;
  #help: string;
  #buckets: readonly number[];
  #now: () => number;
  #series: SeriesMap<HistogramData>;

  constructor(
    name: string,
    help: string,
    options: {
      labelNames: readonly string[];
      buckets: readonly number[];
      now: () => number;
    },
  ) {
    this.#name = name;
    this.#help = help;
    this.#buckets = options.buckets;
    this.#now = options.now;
    const slots = options.buckets.length + 1;
    this.#series = new SeriesMap(name, options.labelNames, () => ({
      counts: new Array<number>(slots).fill(0),
      sum: 0,
      count: 0,
    }));
  }

  observe(value: number, labels?: Labels): void {
    this.#record(this.#series.values(labels), value);
  }

  startTimer(labels?: Labels): () => number {
    const values = this.#series.values(labels);
    const start = this.#now();
    return () => {
      const seconds = Math.max(0, (this.#now() - start) / 1000);
      this.#record(values, seconds);
      return seconds;
    };
  }

  #record(values: readonly string[], value: number): void {
    if (Number.isNaN(value)) {
      throw new RangeError(
        `Cannot observe histogram '${this.#name}' as the value must be a number: current value is ${value}`,
      );
    }
    const data = this.#series.at(values);
    const index = this.#buckets.findIndex((bound) => value <= bound);
    const slot = index === -1 ? this.#buckets.length : index;
    data.counts[slot] = (data.counts[slot] ?? 0) + 1;
    data.sum += value;
    data.count += 1;
  }

  render(lines: string[]): void {
    const name = this.#name;
    lines.push(
      `# HELP ${name} ${escapeHelp(this.#help)}`,
      `# TYPE ${name} histogram`,
    );
    const labelNames = this.#series.labelNames;
    const bucketNames = [...labelNames, "le"];
    for (const { values, data } of this.#series.sorted()) {
      let cumulative = 0;
      this.#buckets.forEach((bound, i) => {
        cumulative += data.counts[i] ?? 0;
        const labels = formatLabels(bucketNames, [
          ...values,
          formatNumber(bound),
        ]);
        lines.push(`${name}_bucket${labels} ${formatNumber(cumulative)}`);
      });
      const inf = formatLabels(bucketNames, [...values, "+Inf"]);
      const labels = formatLabels(labelNames, values);
      lines.push(
        `${name}_bucket${inf} ${formatNumber(data.count)}`,
        `${name}_sum${labels} ${formatNumber(data.sum)}`,
        `${name}_count${labels} ${formatNumber(data.count)}`,
      );
    }
  }
}

function renderSimple(
  lines: string[],
  name: string,
  family: {
    help: string;
    type: "counter" | "gauge";
    series: SeriesMap<{ value: number }>;
  },
): void {
  lines.push(
    `# HELP ${name} ${escapeHelp(family.help)}`,
    `# TYPE ${name} ${family.type}`,
  );
  const labelNames = family.series.labelNames;
  for (const { values, data } of family.series.sorted()) {
    lines.push(
      `${name}${formatLabels(labelNames, values)} ${formatNumber(data.value)}`,
    );
  }
}

function formatLabels(
  names: readonly string[],
  values: readonly string[],
): string {
  if (names.length === 0) return "";
  const pairs = names.map((name, i) =>
    `${name}="${escapeLabelValue(values[i] ?? "")}"`
  );
  return `{${pairs.join(",")}}`;
}

/**
 * Registers the process gauges (resident memory, V8 heap) and returns the
 * function that refreshes them; call it before each scrape.
 */
export function registerProcessMetrics(registry: MetricsRegistry): () => void {
  const residentMemory = registry.gauge("process_resident_memory_bytes", {
    help: "Resident memory size in bytes",
  });
  const heap = registry.gauge("deno_heap_bytes", {
    help: "V8 heap of the process, used and total, in bytes",
    labelNames: ["kind"],
  });
  return () => {
    const usage = Deno.memoryUsage();
    residentMemory.set(usage.rss);
    heap.set(usage.heapUsed, { kind: "used" });
    heap.set(usage.heapTotal, { kind: "total" });
    heap.set(usage.external, { kind: "external" });
  };
}

function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => c === "\n" ? "\\n" : `\\${c}`);
}

function escapeHelp(help: string): string {
  return help.replace(/[\\\n]/g, (c) => c === "\n" ? "\\n" : "\\\\");
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/** Orders label-value tuples by code unit, element by element. */
function compareValues(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? "";
    const y = b[i] ?? "";
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
