/**
 * dependency-webhook: denies the deletion of kcp objects that others still
 * refer to, as DependencyRules describe, and of objects a Lock holds. Watches
 * the rules and Locks through the dep-ctrl APIExport's virtual workspaces,
 * lists dependents through the front-proxy on each DELETE (with
 * --dependents-index, answers from an index fed by watches wherever it can
 * show it is as good as a list), and answers AdmissionReview v1 over TLS.
 *
 * @module
 */
import { getHeapStatistics } from "node:v8";
import {
  drainTimeoutWithin,
  FairQueue,
  type Logger,
  MetricsRegistry,
  runEntrypoint,
  Semaphore,
  serveServiceEndpoints,
  SHUTDOWN_TIMEOUT_EXIT_CODE,
  shutdownWithin,
  stopSignal,
} from "./lib/runtime/mod.ts";
import {
  createAdmissionHandler,
  createWebhookMetrics,
  DeletionValidator,
  FrontProxyBypassAuthorizer,
  FrontProxyDependentSource,
  holdsApp,
  HoldTable,
  indexHeapProblem,
  indexSpecs,
  parseWebhookOptions,
  registerHoldMetrics,
  RuleAdmitter,
  RuleRegistry,
  serveTls,
  startDependentsIndex,
  WEBHOOK_FLAGS,
  type WebhookOptions,
} from "./lib/webhook/mod.ts";
import {
  ExportWatcher,
  KubeClient,
  loadKubeConnection,
  watchExportAccess,
} from "./lib/kcp/mod.ts";
import { readExport } from "./lib/exports/mod.ts";
import {
  enforcedRules,
  RULES_PATH,
  ruleSnapshot,
  ruleView,
} from "./lib/rules/mod.ts";
import { LockIndex, LOCKS_PATH, lockView } from "./lib/locks/mod.ts";

const SUMMARY =
  "Serves the kcp admission webhook that denies deleting objects other objects still refer to, and deleting (or updating) objects a Lock holds.";

/** Wires the webhook together, serves until SIGTERM/SIGINT, then drains. */
async function run(options: WebhookOptions, log: Logger): Promise<number> {
  // The index's bound must fit the heap: a full index past it would crash
  // the webhook, and with it every tenant's protected deletes.
  const heapProblem = options.dependentsIndex
    ? indexHeapProblem(
      options.indexMaxDependents,
      getHeapStatistics().heap_size_limit,
    )
    : undefined;
  if (heapProblem !== undefined) throw new Error(heapProblem);
  const connection = {
    ...loadKubeConnection(options.kubeconfig),
    allowInsecureHttp: options.allowInsecureHttp,
  };
  const client = new KubeClient(connection, {
    userAgent: "dependency-webhook",
  });
  // A 401 stops the start; a 403 is said now and every minute (see
  // lib/kcp/export_access.ts) while the watches retry.
  const access = await watchExportAccess(client, {
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    kubeconfig: options.kubeconfig,
    log,
  });
  // Reviews read kcp over HTTP/1.1: a GET and a LIST in parallel on two
  // keep-alive connections answer sooner than two streams of one HTTP/2
  // connection (deno task bench).
  const reviewClient = new KubeClient(connection, {
    userAgent: "dependency-webhook",
    http2: false,
  });
  const metricsRegistry = new MetricsRegistry();
  const metrics = createWebhookMetrics(metricsRegistry);
  const base = options.kcpBaseHost ?? connection.base;
  const registry = new RuleRegistry();
  // The dependents index (--dependents-index): one index per dependent
  // type and export, fed on every shard; a review answers from it where it
  // can show it is as good as a list (lib/webhook/index_reads.ts).
  const index = options.dependentsIndex
    ? startDependentsIndex({
      client,
      reviewClient,
      base,
      pageSize: options.listPageSize,
      maxPageBytes: options.maxListPageBytes,
      maxDependents: options.indexMaxDependents,
      allowInsecureHttp: options.allowInsecureHttp,
      log,
      observe: (outcome) => metrics.indexUsed(outcome),
    })
    : undefined;
  const indexes = index?.keeper;
  // Only rules whose own workspace exports their dependent type are
  // enforced: a tenant's rule reaches no other tenant.
  const admitter = new RuleAdmitter({
    read: (ref, signal) => readExport(client, base, ref, { signal }),
    log,
    onAdmitted(admission) {
      registry.replace(admission.admitted, {
        identities: admission.identities,
      });
      indexes?.update(indexSpecs(registry.all()));
      metrics.admission({
        admitted: admission.admitted.length,
        refused: admission.refused.length,
        pending: admission.pending.length,
      }, registry.protectedTypes);
    },
  });
  const locks = new LockIndex({ expirySkewMs: options.lockExpirySkewMs });
  // One watch of the dep-ctrl export; the rules and the Locks are two views
  // of it, each handed on when it changed.
  const watcher = new ExportWatcher<"rules" | "locks">({
    client,
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    collections: { rules: { path: RULES_PATH }, locks: { path: LOCKS_PATH } },
    log,
    relistIntervalMs: options.exportRelistIntervalMs,
    onChange() {
      const changedRules = ruleObjects.changed();
      if (changedRules !== undefined) {
        const snapshot = ruleSnapshot(changedRules);
        if (snapshot.synced) admitter.update(enforcedRules(snapshot.rules));
        metrics.rules(snapshot, registry.protectedTypes);
        log.debug("rules changed", {
          rules: snapshot.rules.length,
          invalid: snapshot.invalid.length,
          synced: snapshot.synced,
        });
      }
      const changedLocks = lockObjects.changed();
      if (changedLocks?.synced) locks.replace(changedLocks.items);
    },
  });
  const ruleObjects = ruleView(watcher, { collection: "rules", log });
  const lockObjects = lockView(watcher, { collection: "locks", log });
  // List pages are read up to a byte cap, and all reviews' pages together
  // under one byte budget: the lists' memory stays bounded whatever the
  // tenants' objects and however many reviews run.
  const source = new FrontProxyDependentSource(reviewClient, base, {
    pageSize: options.listPageSize,
    maxPageBytes: options.maxListPageBytes,
    bytesInFlight: new Semaphore(options.maxListBytesInFlight),
    bindingsTtlMs: options.bindingsCacheTtlMs,
  });
  const validator = new DeletionValidator(registry, source, {
    timeoutMs: options.listTimeoutMs,
    teardownOrderMs: options.teardownOrderMs,
    reviews: new FairQueue({ capacity: options.maxConcurrentReviews }),
    queueTimeoutMs: options.reviewQueueTimeoutMs,
    locks,
    ...(indexes === undefined ? {} : {
      indexes,
      indexFreshnessMs: options.indexFreshnessMs,
    }),
    ...(options.skipProtectionMode === "authorized"
      ? { bypass: new FrontProxyBypassAuthorizer(reviewClient, base) }
      : {}),
  });
  const holds = options.holds
    ? new HoldTable({ capacity: options.holdsMax })
    : undefined;
  const collectHolds = holds === undefined
    ? () => {}
    : registerHoldMetrics(metricsRegistry, holds);
  const admissionHandler = createAdmissionHandler({
    validator,
    log,
    observer: metrics,
    ...(holds === undefined ? {} : { holds }),
    bodyBytes: new Semaphore(options.maxReviewBytesInFlight),
    queueTimeoutMs: options.reviewQueueTimeoutMs,
  });
  const admission = await serveTls(
    options.webhookBind,
    admissionHandler,
    {
      certFile: `${options.tlsCertDir}/tls.crt`,
      keyFile: `${options.tlsCertDir}/tls.key`,
      reloadIntervalMs: options.tlsReloadIntervalMs,
      log,
      handshakeTimeoutMs: options.tlsHandshakeTimeoutMs,
      headerTimeoutMs: options.readHeaderTimeoutMs,
      requestTimeoutMs: options.readTimeoutMs,
      idleTimeoutMs: options.idleTimeoutMs,
      maxConnections: options.maxConnections,
      drainTimeoutMs: drainTimeoutWithin(options.shutdownTimeoutMs),
    },
  );
  const ready = () =>
    !registry.loaded
      ? "DependencyRules not loaded yet"
      : !locks.loaded
      ? "Locks not loaded yet"
      : true;
  const others = serveServiceEndpoints(options, {
    ready,
    registry: metricsRegistry,
    collect() {
      metrics.collectProcess();
      metrics.watchesFailing(watcher.failingWatches());
      if (indexes !== undefined) {
        metrics.indexes(indexes.sizes(), indexes.states());
      }
      collectHolds();
    },
    drainTimeoutMs: drainTimeoutWithin(options.shutdownTimeoutMs),
    metricsRoutes: holds === undefined ? undefined : holdsApp(holds),
  });
  watcher.start();
  log.info("serving", {
    port: admission.port,
    base,
    workspace: connection.server,
    apiExport: options.apiExportName,
    skipProtectionMode: options.skipProtectionMode,
    dependentsIndex: options.dependentsIndex,
  });

  const signal = await stopSignal();
  log.info("shutting down: finishing in-flight reviews", {
    signal,
    timeoutMs: options.shutdownTimeoutMs,
  });
  // Everything stops at once under one deadline, --shutdown-timeout: the
  // listeners drain until a second before it, then close what is left; a
  // step still running at the deadline is logged and left behind, and the
  // process exits anyway (code 3). No client and no hung watch can hold it.
  const { finished } = await shutdownWithin([[
    { name: "admission server", stop: () => admission.shutdown() },
    ...others.map((s) => ({
      name: `http listener :${s.port}`,
      stop: () => s.shutdown(),
    })),
    { name: "export watcher", stop: () => watcher.stop() },
    { name: "rule admission", stop: () => admitter.stop() },
    { name: "access check", stop: () => access.stop() },
    ...(index === undefined ? [] : [{
      name: "dependents index",
      stop: () => index.stop(),
    }]),
  ]], { timeoutMs: options.shutdownTimeoutMs, log });
  client.close();
  reviewClient.close();
  if (!finished) return SHUTDOWN_TIMEOUT_EXIT_CODE;
  log.info("stopped");
  return 0;
}

if (import.meta.main) {
  Deno.exit(
    await runEntrypoint(Deno.args, {
      name: "webhook",
      summary: SUMMARY,
      flags: WEBHOOK_FLAGS,
      parse: parseWebhookOptions,
      run,
    }),
  );
}
