/**
 * The admission webhook: AdmissionReview parsing, the deletion validator
 * that runs a review's plan, reads and fold and the verdicts they give, the
 * dependent lister, the cache of a workspace's bindings, break-glass
 * authorisation, the rule registry and rule admission, the hold table and
 * `/holds.json`, the dependents indexes a review answers from (their
 * plan, keeper and reads), whether an object protects now, the admission handler on the bounded TLS server, its
 * metrics, options and least-privilege RBAC.
 *
 * @module
 */
export * from "./access_review.ts";
export * from "./admission_handler.ts";
export * from "./admission_review.ts";
export * from "./binding_cache.ts";
export * from "./bounded_server.ts";
export * from "./deletion_validator.ts";
export * from "./dependent_lister.ts";
export * from "./hold_table.ts";
export * from "./holds_endpoint.ts";
export * from "./index_endpoints.ts";
export * from "./index_keeper.ts";
export * from "./index_plan.ts";
export * from "./index_reads.ts";
export * from "./index_service.ts";
export * from "./metrics.ts";
export * from "./options.ts";
export * from "./protects_now.ts";
export * from "./rbac.ts";
export * from "./review_fold.ts";
export * from "./review_plan.ts";
export * from "./review_reads.ts";
export * from "./review_target.ts";
export * from "./rule_admission.ts";
export * from "./rule_registry.ts";
export * from "./server.ts";
export * from "./verdicts.ts";
