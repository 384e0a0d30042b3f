/**
 * dependency-controller: keeps one ValidatingWebhookConfiguration per kcp
 * workspace that hosts a type protected by a DependencyRule or a Lock, equal
 * to what the rules and Locks ask, and reports each rule's and Lock's state
 * in its status. Watches rules, Locks, dep-ctrl APIBindings and its own
 * configurations through the dep-ctrl APIExport's virtual workspaces; resolves workspace paths through
 * the front-proxy; with `--leader-elect`, only the Lease holder writes.
 *
 * `controller grants ...` instead prints the webhook's read grants for the
 * live rules and exits (`lib/grants`).
 *
 * @module
 */
import {
  CONTROLLER_COLLECTIONS,
  CONTROLLER_FLAGS,
  type ControllerCollection,
  type ControllerOptions,
  createControllerMetrics,
  createGraphApp,
  LeaderElector,
  parseControllerOptions,
  PathRecordingResolver,
  readCaBundle,
  readLockTarget,
  readWebhookAccess,
  Reconciler,
} from "./lib/controller/mod.ts";
import { readExport } from "./lib/exports/mod.ts";
import { GRANTS_COMMAND, GRANTS_ENTRYPOINT } from "./lib/grants/mod.ts";
import {
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type Logger,
  MetricsRegistry,
  runEntrypoint,
  serveServiceEndpoints,
  SHUTDOWN_TIMEOUT_EXIT_CODE,
  shutdownWithin,
  stopSignal,
} from "./lib/runtime/mod.ts";
import {
  ExportWatcher,
  KubeClient,
  loadKubeConnection,
  watchExportAccess,
} from "./lib/kcp/mod.ts";

const SUMMARY =
  "Installs the dependency webhook in every kcp workspace whose types DependencyRules or Locks protect, and reports each rule's and Lock's state in its status. `controller grants --help`: print the webhook's read grants for the live rules.";

/** Wires the controller together and runs it until SIGTERM/SIGINT. */
async function run(options: ControllerOptions, log: Logger): Promise<number> {
  const connection = {
    ...loadKubeConnection(options.kubeconfig),
    allowInsecureHttp: options.allowInsecureHttp,
  };
  const client = new KubeClient(connection, {
    userAgent: "dependency-controller",
  });
  // A 401 stops the start; a 403 is said now and every minute (see
  // lib/kcp/export_access.ts) while the watches retry.
  const access = await watchExportAccess(client, {
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    kubeconfig: options.kubeconfig,
    log,
  });
  // Fail at start on an unreadable CA bundle rather than at the first write.
  await readCaBundle(options.webhookCaBundlePath);
  const base = options.kcpBaseHost ?? connection.base;
  const metricsRegistry = new MetricsRegistry();
  const metrics = createControllerMetrics(metricsRegistry);
  let reconciler: Reconciler | undefined;
  const watcher = new ExportWatcher<ControllerCollection>({
    client,
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    collections: CONTROLLER_COLLECTIONS,
    log,
    relistIntervalMs: options.exportRelistIntervalMs,
    onChange() {
      metrics.synced(watcher.synced);
      reconciler?.trigger();
    },
  });
  const resolver = new PathRecordingResolver({ client, base });
  const workspacePath = connection.server.replace(/^.*\/clusters\//, "");
  const newReconciler = () =>
    new Reconciler({
      client,
      watcher,
      resolver,
      readExport: (ref, signal) => readExport(client, base, ref, { signal }),
      readLockTarget: (ref, signal) =>
        readLockTarget(client, base, ref, { signal }),
      webhookAccess: {
        read: (ref, signal) =>
          readWebhookAccess(client, base, ref, {
            user: options.webhookUser,
            signal,
          }),
        user: options.webhookUser,
      },
      dependentsIndex: options.dependentsIndex,
      async readSettings() {
        return {
          url: options.webhookUrl,
          caBundle: await readCaBundle(options.webhookCaBundlePath),
          timeoutSeconds: options.webhookTimeoutSeconds,
        };
      },
      exportRef: `${workspacePath}:${options.apiExportName}`,
      log,
      observer: metrics,
      resyncPeriodMs: options.resyncPeriodMs,
      maxWritesInFlight: options.maxWritesInFlight,
    });
  let stopping: Promise<void> | undefined;
  const lead = () => {
    log.info("reconciling");
    metrics.leading(true);
    reconciler = newReconciler();
    reconciler.start();
  };
  const follow = () => {
    metrics.leading(false);
    const current = reconciler;
    reconciler = undefined;
    stopping = current?.stop();
  };
  const elector = options.leaderElect
    ? new LeaderElector({
      client,
      leaseUrl:
        `${connection.server}/apis/coordination.k8s.io/v1/namespaces/${options.leaderElectionNamespace}/leases/${options.leaderElectionId}`,
      // In a Pod, HOSTNAME is the Pod name.
      identity: `${
        Deno.env.get("HOSTNAME") || "controller"
      }_${crypto.randomUUID()}`,
      log,
      onStartedLeading: lead,
      onStoppedLeading: follow,
    })
    : undefined;

  const ready = () => watcher.synced || "watches not synced yet";
  const servers = serveServiceEndpoints(options, {
    ready,
    registry: metricsRegistry,
    collect() {
      metrics.collectProcess();
      metrics.watchesFailing(watcher.failingWatches());
    },
    metricsRoutes: options.graph
      ? createGraphApp({
        watches: watcher,
        workspaces: resolver,
        title:
          `DependencyRules through ${options.apiExportName} in ${workspacePath}`,
        holdsUrl: options.graphHoldsUrl,
        log,
      })
      : undefined,
  });
  watcher.start();
  if (elector === undefined) lead();
  else elector.start();
  log.info("started", {
    workspace: connection.server,
    base,
    apiExport: options.apiExportName,
    webhookUrl: options.webhookUrl,
    leaderElect: options.leaderElect,
  });

  const signal = await stopSignal();
  log.info("shutting down", { signal, timeoutMs: DEFAULT_SHUTDOWN_TIMEOUT_MS });
  // In order, under one deadline: the writes stop before the Lease is
  // released, and the watches the reconciler reads after it. A step still
  // running at the deadline is logged and left behind, and the process
  // exits anyway (code 3).
  const { finished } = await shutdownWithin([
    [{
      name: "reconciler",
      async stop() {
        await reconciler?.stop();
        await stopping;
      },
    }],
    ...(elector === undefined
      ? []
      : [[{ name: "leader lease release", stop: () => elector.stop() }]]),
    [
      ...servers.map((s) => ({
        name: `http listener :${s.port}`,
        stop: () => s.shutdown(),
      })),
      { name: "export watcher", stop: () => watcher.stop() },
      { name: "access check", stop: () => access.stop() },
    ],
  ], { timeoutMs: DEFAULT_SHUTDOWN_TIMEOUT_MS, log });
  client.close();
  if (!finished) return SHUTDOWN_TIMEOUT_EXIT_CODE;
  log.info("stopped");
  return 0;
}

if (import.meta.main && Deno.args[0] === GRANTS_COMMAND) {
  Deno.exit(await runEntrypoint(Deno.args.slice(1), GRANTS_ENTRYPOINT));
} else if (import.meta.main) {
  Deno.exit(
    await runEntrypoint(Deno.args, {
      name: "controller",
      summary: SUMMARY,
      flags: CONTROLLER_FLAGS,
      parse: parseControllerOptions,
      run,
    }),
  );
}
