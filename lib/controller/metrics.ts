/**
 * The controller's Prometheus metrics: reconcile passes and their duration,
 * writes and errors by kind, writes in flight, webhook configurations
 * installed, rules and Locks by their Ready condition, leadership, failing
 * watches, and process memory.
 *
 * @module
 */
import {
  type MetricsRegistry,
  registerProcessMetrics,
} from "../runtime/mod.ts";
import type { Plan } from "./reconcile_plan.ts";
import type { ReconcileObserver } from "./reconciler.ts";

/** Reconcile hooks plus leadership and process gauges. */
export interface ControllerMetrics extends ReconcileObserver {
  /**
   * Records whether this replica leads (or, without election, runs); a
   * replica that stops leading reports no configurations, writes or rules.
   */
  leading(leader: boolean): void;
  /** Records whether the watches are synced. */
  synced(synced: boolean): void;
  /** Refreshes the process's memory gauges (call before each scrape). */
  collectProcess(): void;
  /** Publishes how many list+watch loops are retrying after an error. */
  watchesFailing(count: number): void;
  /** Publishes how many writes to kcp are running. */
  writing(count: number): void;
}

/** Registers the controller's metrics in `registry`. */
export function createControllerMetrics(
  registry: MetricsRegistry,
): ControllerMetrics {
  const passes = registry.counter({
    name: "dependency_controller_reconciles_total",
    help:
      "Reconcile passes, by result (synced: computed and acted on; waiting: watches not synced yet)",
    labelNames: ["result"],
  });
  const passDuration = registry.histogram({
    name: "dependency_controller_reconcile_duration_seconds",
    help: "Time to compute the desired state and start its writes",
  });
  const writes = registry.counter({
    name: "dependency_controller_writes_total",
    help:
      "Writes and path resolutions, by kind (configuration, status, resolve) and result",
    labelNames: ["kind", "result"],
  });
  const errors = registry.counter({
    name: "dependency_controller_reconcile_errors_total",
    help:
      "Failed writes and path resolutions, by kind (each is retried with backoff)",
    labelNames: ["kind"],
  });
  const configurations = registry.gauge({
    name: "dependency_controller_webhook_configurations",
    help: "Provider workspaces whose desired state has a webhook configuration",
  });
  const pending = registry.gauge({
    name: "dependency_controller_pending_writes",
    help: "Writes the last pass found necessary (0 when converged)",
  });
  const rules = registry.gauge({
    name: "dependency_controller_rules",
    help: "DependencyRules by the status and reason of their Ready condition",
    labelNames: ["status", "reason"],
  });
  const locks = registry.gauge({
    name: "dependency_controller_locks",
    help: "Locks by the status and reason of their Ready condition",
    labelNames: ["status", "reason"],
  });
  const inFlight = registry.gauge({
    name: "dependency_controller_writes_in_flight",
    help: "Writes to kcp running now (at most --max-writes-in-flight)",
  });
  const leader = registry.gauge({
    name: "dependency_controller_leader",
    help: "1 while this replica leads and writes, else 0",
  });
  const synced = registry.gauge({
    name: "dependency_controller_synced",
    help: "1 once every watch of every virtual-workspace endpoint is listed",
  });
  const failing = registry.gauge({
    name: "dependency_controller_watches_failing",
    help:
      "List+watch loops (endpoint slice, and rules, bindings and configurations per endpoint) whose last attempt failed; they retry with backoff",
  });
  const collectProcess = registerProcessMetrics(registry);
  const ruleCounts = new LabelledCounts(rules);
  const lockCounts = new LabelledCounts(locks);
  return {
    collectProcess,
    passed(plan: Plan | undefined, seconds: number) {
      if (plan === undefined) {
        passes.inc({ result: "waiting" });
        return;
      }
      passes.inc({ result: "synced" });
      passDuration.observe(seconds);
      configurations.set(plan.desiredClusters);
      pending.set(plan.configurations.length + plan.statuses.length);
      ruleCounts.publish(plan.ready);
      lockCounts.publish(plan.lockReady);
    },
    wrote(kind, error) {
      writes.inc({ kind, result: error === undefined ? "success" : "error" });
      if (error !== undefined) errors.inc({ kind });
    },
    leading(value: boolean) {
      leader.set(value ? 1 : 0);
      if (value) return;
      // Only the leader plans: a follower reports no configurations, writes
      // or rules, so a sum over replicas counts the leader's figures once.
      configurations.set(0);
      pending.set(0);
      inFlight.set(0);
      ruleCounts.publish(new Map());
      lockCounts.publish(new Map());
    },
    writing(count: number) {
      inFlight.set(count);
    },
    watchesFailing(count: number) {
      failing.set(count);
    },
    synced(value: boolean) {
      synced.set(value ? 1 : 0);
    },
  };
}

/**
 * A `{status, reason}` gauge set from counts keyed `status/reason`: labels
 * that disappear are set to 0, so a dashboard sees them drop.
 */
class LabelledCounts {
  readonly #gauge: ReturnType<MetricsRegistry["gauge"]>;
  #seen = new Set<string>();

  constructor(gauge: ReturnType<MetricsRegistry["gauge"]>) {
    this.#gauge = gauge;
  }

  /** Sets every label of `counts`, and 0 for those no longer there. */
  publish(counts: ReadonlyMap<string, number>): void {
    for (const [label, count] of counts) {
      const [status = "", reason = ""] = label.split("/");
      this.#gauge.set({ status, reason }, count);
    }
    for (const label of this.#seen) {
      if (counts.has(label)) continue;
      const [status = "", reason = ""] = label.split("/");
      this.#gauge.set({ status, reason }, 0);
    }
    this.#seen = new Set(counts.keys());
  }
}
