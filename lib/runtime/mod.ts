/**
 * What every process here needs and nothing product-specific: command-line
 * flags, structured logs, Prometheus metrics, retry backoff, a counting
 * semaphore and the entrypoint that runs a component until a signal.
 *
 * @module
 */
export * from "./backoff.ts";
export * from "./entrypoint.ts";
export * from "./flags.ts";
export * from "./log.ts";
export * from "./metrics.ts";
export * from "./semaphore.ts";
export * from "./service_endpoints.ts";
