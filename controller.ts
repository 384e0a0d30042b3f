/**
 * dependency-controller: keeps one ValidatingWebhookConfiguration per kcp
 * provider workspace that hosts a type protected by a DependencyRule, equal
 * to what the rules ask, and reports each rule's state in its status.
 * Watches rules, dep-ctrl APIBindings and its own configurations through the
 * dep-ctrl APIExport's virtual workspaces; resolves workspace paths through
 * the front-proxy; with `--leader-elect`, only the Lease holder writes.
 *
 * @module
 */
import { readCaBundle } from "./lib/ca_bundle.ts";
import {
  CONTROLLER_FLAGS,
  type ControllerOptions,
  parseControllerOptions,
} from "./lib/controller_options.ts";
import { createControllerMetrics } from "./lib/controller_metrics.ts";
import { ExportWatcher } from "./lib/export_watcher.ts";
import { usage } from "./lib/flags.ts";
import { baseUrl } from "./lib/kcp.ts";
import { KubeClient } from "./lib/kube_client.ts";
import { loadKubeConnection } from "./lib/kube_config.ts";
import { LeaderElector } from "./lib/leader_election.ts";
import { createLogger, type Logger } from "./lib/log.ts";
import { MetricsRegistry } from "./lib/metrics.ts";
import { type ControllerCollection, Reconciler } from "./lib/reconciler.ts";
import { RULES_PATH } from "./lib/rule_watcher.ts";
import { createHealthApp, createMetricsApp, servePlain } from "./lib/server.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "./lib/webhook_config.ts";
import { WorkspaceResolver } from "./lib/workspace_resolver.ts";

const SUMMARY =
  "Installs the dependency webhook in every kcp provider workspace whose types DependencyRules protect, and reports each rule's state in its status.";

async function main(args: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseControllerOptions(args);
  } catch (error) {
    console.error(`controller: ${(error as Error).message}`);
    return 2;
  }
  if (parsed.help) {
    console.log(usage("controller", SUMMARY, CONTROLLER_FLAGS));
    return 0;
  }
  const options = parsed.options;
  const log = createLogger({ level: options.logLevel }).with({
    component: "controller",
  });
  try {
    return await run(options, log);
  } catch (error) {
    log.error("cannot start", { error });
    return 1;
  }
}

/** Wires the controller together and runs it until SIGTERM/SIGINT. */
async function run(options: ControllerOptions, log: Logger): Promise<number> {
  const connection = loadKubeConnection(options.kubeconfig);
  const client = new KubeClient(connection, {
    userAgent: "dependency-controller",
  });
  // Fail at start on an unreadable CA bundle rather than at the first write.
  await readCaBundle(options.webhookCaBundlePath);
  const base = options.kcpBaseHost
    ? baseUrl(options.kcpBaseHost)
    : connection.base;
  const metricsRegistry = new MetricsRegistry();
  const metrics = createControllerMetrics(metricsRegistry);
  let reconciler: Reconciler | undefined;
  const watcher = new ExportWatcher<ControllerCollection>({
    client,
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    collections: {
      rules: { path: RULES_PATH },
      bindings: { path: "/apis/apis.kcp.io/v1alpha2/apibindings" },
      configurations: {
        path:
          "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
      },
    },
    log,
    onChange() {
      metrics.synced(watcher.synced);
      reconciler?.trigger();
    },
  });
  const resolver = new WorkspaceResolver({ client, base });
  const workspacePath = connection.server.replace(/^.*\/clusters\//, "");
  const newReconciler = () =>
    new Reconciler({
      client,
      watcher,
      resolver,
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
  const servers = [
    options.healthBind &&
    servePlain(options.healthBind, createHealthApp(ready).fetch),
    options.metricsBind &&
    servePlain(
      options.metricsBind,
      createMetricsApp(metricsRegistry, metrics.collectProcess).fetch,
    ),
  ].filter((s) => s !== undefined);
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

  const signal = await new Promise<string>((resolve) => {
    for (const name of ["SIGTERM", "SIGINT"] as const) {
      Deno.addSignalListener(name, () => resolve(name));
    }
  });
  log.info("shutting down", { signal });
  await reconciler?.stop();
  await stopping;
  await elector?.stop();
  await Promise.all([...servers.map((s) => s.shutdown()), watcher.stop()]);
  client.close();
  log.info("stopped");
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
