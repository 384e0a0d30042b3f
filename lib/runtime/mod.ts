/**
 * What every process here needs and nothing product-specific: command-line
 * flags, structured logs, Prometheus metrics, retry backoff, a counting
 * semaphore, a scheduler of coalesced passes, waiting on a promise within
 * a signal or a time, the entrypoint that runs a
 * component until a signal, small helpers for untyped values, and
 * validation against a zod schema with readable messages.
 *
 * @module
 */
export * from "./backoff.ts";
export * from "./deadline.ts";
export * from "./entrypoint.ts";
export * from "./fair_queue.ts";
export * from "./flags.ts";
export * from "./keyed_tasks.ts";
export * from "./log.ts";
export { MAX_LOG_LINE_BYTES } from "./log_line.ts";
export {
  MAX_LOG_ITEMS,
  MAX_LOG_STRING_CHARS,
  truncateText,
} from "./log_values.ts";
export * from "./metrics.ts";
export * from "./pass_scheduler.ts";
export * from "./printable.ts";
export * from "./read_cache.ts";
export * from "./semaphore.ts";
export * from "./service_endpoints.ts";
export * from "./settle.ts";
export * from "./validation.ts";
export * from "./values.ts";
