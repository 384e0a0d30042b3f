/**
 * The hold table seen from outside: `GET /holds.json` on the metrics
 * listener ({@linkcode holdsApp}) and its two gauges
 * ({@linkcode registerHoldMetrics}). Both only with `--holds`: the report
 * names tenants' objects, so that port is for operators.
 *
 * @module
 */
import { Hono } from "hono";
import type { MetricsRegistry } from "../runtime/mod.ts";
import type { HoldTable } from "./hold_table.ts";

/** `GET /holds.json`: the table's report, never cached. */
export function holdsApp(table: HoldTable): Hono {
  const app = new Hono();
  app.get("/holds.json", (c) =>
    c.json(table.report(), 200, {
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    }));
  return app;
}

/**
 * Registers `dependency_webhook_holds` and
 * `dependency_webhook_oldest_hold_seconds`; the returned function sets them
 * (call it before each scrape).
 */
export function registerHoldMetrics(
  registry: MetricsRegistry,
  table: HoldTable,
): () => void {
  const entries = registry.gauge({
    name: "dependency_webhook_holds",
    help:
      "Objects whose delete the webhook denied recently because something holds them (references, owners, Locks), as /holds.json lists them",
  });
  const oldest = registry.gauge({
    name: "dependency_webhook_oldest_hold_seconds",
    help:
      "Seconds since the first denial of the object held longest among those /holds.json lists; 0 when none",
  });
  return () => {
    entries.set(table.size);
    oldest.set(table.oldestAgeSeconds());
  };
}
