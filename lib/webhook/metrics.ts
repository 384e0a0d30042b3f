/**
 * The webhook's Prometheus metrics: reviews by outcome, review latency,
 * malformed requests, dependent list errors, reads kcp refused, the state of
 * the rules, failing watches, and the dependents indexes.
 *
 * @module
 */
import type { Verdict } from "./deletion_validator.ts";
import {
  type MetricsRegistry,
  registerProcessMetrics,
} from "../runtime/mod.ts";
import type { RuleSnapshot } from "../rules/mod.ts";
import type { AdmissionObserver } from "./admission_handler.ts";
import type { IndexOutcome } from "./index_reads.ts";
import type { IndexFeedState } from "../dependents/mod.ts";

/** Admission hooks plus a way to publish the rules' state. */
export interface WebhookMetrics extends AdmissionObserver {
  /** Publishes the state of the rules after a change. */
  rules(snapshot: RuleSnapshot, protectedTypes: number): void;
  /**
   * Publishes how many valid rules are enforced (`admitted`), not enforced
   * because their own workspace does not export their dependent type
   * (`refused`), and waiting for that check (`pending`), and the protected
   * types of the admitted ones.
   */
  admission(
    counts: { admitted: number; refused: number; pending: number },
    protectedTypes: number,
  ): void;
  /** Refreshes the process's memory gauges (call before each scrape). */
  collectProcess(): void;
  /** Publishes how many list+watch loops are retrying after an error. */
  watchesFailing(count: number): void;
  /** Counts how a review used the dependents index for one dependent type. */
  indexUsed(outcome: IndexOutcome): void;
  /**
   * Publishes the dependents indexes: the dependents each keeps, and its
   * feeds by state, per index (`<group>/<version>/<resource>:<identity>`).
   */
  indexes(
    sizes: ReadonlyMap<string, number>,
    states: ReadonlyMap<string, ReadonlyMap<string, IndexFeedState>>,
  ): void;
}

/** Registers the webhook's metrics in `registry`. */
export function createWebhookMetrics(
  registry: MetricsRegistry,
): WebhookMetrics {
  const reviews = registry.counter({
    name: "dependency_webhook_admission_reviews_total",
    help: "Admission reviews answered, by outcome",
    labelNames: ["outcome"],
  });
  const duration = registry.histogram({
    name: "dependency_webhook_admission_review_duration_seconds",
    help: "Time to answer an admission review, by outcome",
    labelNames: ["outcome"],
  });
  const rejected = registry.counter({
    name: "dependency_webhook_admission_requests_rejected_total",
    help: "Malformed admission requests answered with an HTTP error, by status",
    labelNames: ["status"],
  });
  const listErrors = registry.counter({
    name: "dependency_webhook_dependent_list_errors_total",
    help: "Reviews denied because dependents could not be listed (fail closed)",
  });
  const forbidden = registry.counter({
    name: "dependency_webhook_forbidden_total",
    help:
      "Reviews denied because kcp refused the webhook's identity a read it needs (a missing RBAC grant in system:admin), by verb, group and resource",
    labelNames: ["verb", "group", "resource"],
  });
  const rules = registry.gauge({
    name: "dependency_webhook_rules",
    help:
      "DependencyRules seen, by state: valid, invalid; of the valid, admitted (enforced), refused (their workspace does not export their dependent type) and pending",
    labelNames: ["state"],
  });
  const protectedTypes = registry.gauge({
    name: "dependency_webhook_protected_types",
    help: "Group/version/resources protected by at least one valid rule",
  });
  const synced = registry.gauge({
    name: "dependency_webhook_rules_synced",
    help: "1 once every virtual-workspace endpoint has been listed, else 0",
  });
  const endpoints = registry.gauge({
    name: "dependency_webhook_endpoints",
    help: "Virtual-workspace endpoints of the dep-ctrl APIExport being watched",
  });
  const failing = registry.gauge({
    name: "dependency_webhook_watches_failing",
    help:
      "List+watch loops (endpoint slice, rules per endpoint) whose last attempt failed; they retry with backoff",
  });
  const indexUsed = registry.counter({
    name: "dependency_webhook_index_answers_total",
    help:
      "How reviews used the dependents index, per dependent type: confirmed (a dependent it named still refers), fresh_none (shown fresh, nothing refers), quiet_none (idle, shown unchanged by a short watch before the list answered, nothing refers); or listed instead: not_indexed, not_synced, not_fresh, idle (the list answered first), unconfirmed",
    labelNames: ["outcome"],
  });
  const indexed = registry.gauge({
    name: "dependency_webhook_index_dependents",
    help:
      "Dependents kept by each dependents index (--index-max-dependents bounds it; past it the type is listed)",
    labelNames: ["index"],
  });
  const feeds = registry.gauge({
    name: "dependency_webhook_index_feeds",
    help:
      "List+watch feeds of the dependents indexes, by index and state (syncing, synced, failed, overflowed, stopped)",
    labelNames: ["index", "state"],
  });
  const collectProcess = registerProcessMetrics(registry);
  return {
    collectProcess,
    indexUsed(outcome) {
      indexUsed.inc({ outcome });
    },
    indexes(sizes, states) {
      indexed.reset();
      for (const [index, size] of sizes) indexed.set({ index }, size);
      feeds.reset();
      for (const [index, bySource] of states) {
        const counts = new Map<string, number>();
        for (const state of bySource.values()) {
          counts.set(state, (counts.get(state) ?? 0) + 1);
        }
        for (const [state, count] of counts) feeds.set({ index, state }, count);
      }
    },
    watchesFailing(count: number) {
      failing.set(count);
    },
    reviewed(verdict: Verdict, seconds: number) {
      reviews.inc({ outcome: verdict.outcome });
      duration.observe({ outcome: verdict.outcome }, seconds);
      if (verdict.outcome === "denied_error") listErrors.inc();
      if (verdict.forbidden !== undefined) {
        const { verb, group, resource } = verdict.forbidden;
        forbidden.inc({ verb, group, resource });
      }
    },
    rejected(status: number) {
      rejected.inc({ status: String(status) });
    },
    rules(snapshot: RuleSnapshot, types: number) {
      rules.set({ state: "valid" }, snapshot.rules.length);
      rules.set({ state: "invalid" }, snapshot.invalid.length);
      protectedTypes.set(types);
      synced.set(snapshot.synced ? 1 : 0);
      endpoints.set(snapshot.endpoints.length);
    },
    admission(counts, types) {
      rules.set({ state: "admitted" }, counts.admitted);
      rules.set({ state: "refused" }, counts.refused);
      rules.set({ state: "pending" }, counts.pending);
      protectedTypes.set(types);
    },
  };
}
