/**
 * The controller: the pure reconcile plan ({@linkcode planReconcile}, with
 * the memo of its passes), the reconciler that feeds it from its caches and
 * writes its result, ValidatingWebhookConfigurations, workspace path
 * resolution, where Lock target types come from, the webhook's access that
 * installed rules need, leader election and its Lease, the CA bundle, the
 * live picture of the rules (`/graph`, {@linkcode createGraphApp}) and its
 * metrics and options. The checks against APIExports are `lib/exports/`,
 * keyed tasks `lib/runtime/`.
 *
 * @module
 */
export * from "./ca_bundle.ts";
export type { ConfigurationAction } from "./configuration_plan.ts";
export * from "./graph_endpoint.ts";
export * from "./leader_election.ts";
export { type Lease, type LeaseSpec, microTime } from "./lease.ts";
export * from "./lock_targets.ts";
export * from "./metrics.ts";
export * from "./options.ts";
export type { Resolution } from "./path_cache.ts";
export * from "./reconcile_plan.ts";
export * from "./reconciler.ts";
export type { StatusAction } from "./status_tally.ts";
export * from "./webhook_access.ts";
export * from "./webhook_config.ts";
export * from "./workspace_resolver.ts";
