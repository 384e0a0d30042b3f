/**
 * Dependents kept in memory: the index of which dependents of a type refer
 * to an object (`DependentsIndex`), fed by list+watch sources and asked
 * instead of a list per review.
 *
 * @module
 */
export * from "./dependents_index.ts";
export * from "./index_budget.ts";
export * from "./index_feed.ts";
export { compareDecimals } from "./kept.ts";
export type {
  DependentsIndexOptions,
  IndexedPath,
  IndexEvent,
  IndexHit,
} from "./kept.ts";
