import assert from "node:assert/strict";
import type { Condition, GroupVersionResource } from "../rules/mod.ts";
import {
  connection,
  delay,
  DEP_CTRL_PATH,
  FakeKcp,
  logCollector,
  TimerTracker,
  VIRTUAL_MACHINES,
  VPCS,
  waitUntil,
} from "../../testing/fakes.ts";
import {
  DEFAULT_API_EXPORT_NAME,
  ExportWatcher,
  KubeClient,
  type KubeObject,
} from "../kcp/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import {
  CONTROLLER_COLLECTIONS,
  type ControllerCollection,
  Reconciler,
} from "./reconciler.ts";
import {
  desiredWebhookConfiguration,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  providerUrl,
  WEBHOOK_CONFIGURATION_NAME,
  type WebhookClientSettings,
} from "./webhook_config.ts";
import { WorkspaceResolver } from "./workspace_resolver.ts";

const EXPORT = DEFAULT_API_EXPORT_NAME;
const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
/** The logical cluster of every rule. */
const CONSUMER = "consumercluster";
const NETWORK = "netcluster";
const STORAGE = "storecluster";
const SETTINGS: WebhookClientSettings = {
  url: "https://webhook.example.com/validate",
  caBundle: "Y2EtYnVuZGxl",
  timeoutSeconds: 10,
};
/** The settings of the configuration in `root:network`: the URL names it. */
const NETWORK_SETTINGS: WebhookClientSettings = {
  ...SETTINGS,
  url: providerUrl(SETTINGS.url, "root:network"),
};
const VOLUMES = {
  group: "storage.example.com",
  version: "v1",
  resource: "volumes",
};

/** A rule in {@linkcode CONSUMER} protecting `target` from `path`. */
function rule(
  name: string,
  path: string,
  target: GroupVersionResource,
): KubeObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: {
      name,
      generation: 1,
      annotations: { "kcp.io/cluster": CONSUMER },
    },
    spec: {
      dependent: {
        apiExportName: VIRTUAL_MACHINES.group,
        ...VIRTUAL_MACHINES,
      },
      dependencies: [{
        apiExportRef: { path, name: target.group },
        ...target,
        fieldRef: { path: ".spec.volumeRef.name" },
      }],
    },
  };
}

/** A webhook configuration in `cluster`, with or without our label. */
function configuration(
  cluster: string,
  options: { managed: boolean; name?: string },
): KubeObject {
  const object = desiredWebhookConfiguration([VPCS], NETWORK_SETTINGS);
  object.metadata = {
    name: options.name ?? WEBHOOK_CONFIGURATION_NAME,
    annotations: { "kcp.io/cluster": cluster },
    ...(options.managed
      ? { labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } }
      : {}),
  };
  return object;
}

/** The network provider (root:network) with its binding. */
function networkProvider(kcp: FakeKcp): void {
  kcp.addProvider("root", "network", NETWORK);
}

/**
 * The network provider and rule `r1` on its VPCs, the watch of
 * configurations held back: our write stays unseen until released.
 */
function writeUnseen(kcp: FakeKcp): void {
  networkProvider(kcp);
  kcp.put("rules", rule("r1", "root:network", VPCS));
  kcp.hold("configurations");
}

interface Harness {
  kcp: FakeKcp;
  reconciler: Reconciler;
  watcher: ExportWatcher<ControllerCollection>;
  /** How many passes ended (synced or not). */
  passes: () => number;
  /** Every write the observer was told about. */
  wrote: { kind: string; error?: unknown }[];
  /** Every count of writes in flight the observer was told about. */
  inFlight: number[];
  logs: Record<string, unknown>[];
  /** `<status>/<reason>` of a condition of a rule in {@linkcode CONSUMER}. */
  condition: (name: string, type?: string) => string | undefined;
  /** The message of a condition of a rule in {@linkcode CONSUMER}. */
  message: (name: string, type?: string) => string | undefined;
  /** Waits for `count` more passes, asking for them. */
  morePasses: (count: number) => Promise<void>;
}

/**
 * Runs the controller's watches and reconciler (wired as controller.ts
 * does) against a {@linkcode FakeKcp} that `setup` fills first.
 */
async function withController(
  setup: (kcp: FakeKcp) => void,
  fn: (h: Harness) => Promise<void>,
  options: { expectationTimeoutMs?: number } = {},
): Promise<void> {
  const kcp = new FakeKcp();
  setup(kcp);
  const client = new KubeClient(connection(kcp.url));
  const logs = logCollector();
  const log = createLogger({ level: "debug", write: logs.write });
  let passes = 0;
  const wrote: { kind: string; error?: unknown }[] = [];
  const inFlight: number[] = [];
  const watcher = new ExportWatcher<ControllerCollection>({
    client,
    workspaceUrl: `${kcp.url}${DEP_CTRL_PATH}`,
    apiExportName: EXPORT,
    collections: CONTROLLER_COLLECTIONS,
    log,
    onChange() {
      // Only called once started, after `reconciler` is set.
      reconciler.trigger();
    },
  });
  const resolver = new WorkspaceResolver({ client, base: kcp.url });
  const reconciler: Reconciler = new Reconciler({
    client,
    watcher,
    resolver,
    readSettings: () => Promise.resolve(SETTINGS),
    exportRef: `root:dep-ctrl:${EXPORT}`,
    log,
    observer: {
      passed: () => passes++,
      wrote: (kind, error) =>
        wrote.push({ kind, ...(error === undefined ? {} : { error }) }),
      writing: (count) => inFlight.push(count),
    },
    resyncPeriodMs: 60_000,
    backoff: { initialMs: 20, maxMs: 200 },
    ...options,
  });
  const conditionOf = (name: string, type: string) =>
    ((kcp.get("rules", CONSUMER, name)?.status as
      | { conditions?: Condition[] }
      | undefined)?.conditions ?? []).find((c) => c.type === type);
  try {
    watcher.start();
    reconciler.start();
    await fn({
      kcp,
      reconciler,
      watcher,
      passes: () => passes,
      wrote,
      inFlight,
      logs: logs.records,
      condition: (name, type = "Ready") => {
        const condition = conditionOf(name, type);
        return condition && `${condition.status}/${condition.reason}`;
      },
      message: (name, type = "Ready") => conditionOf(name, type)?.message,
      morePasses: async (count) => {
        for (let i = 0; i < count; i++) {
          const before = passes;
          reconciler.trigger();
          await waitUntil("a pass", () => passes > before, 20_000);
        }
      },
    });
  } finally {
    await reconciler.stop();
    await watcher.stop();
    client.close();
    await kcp.close();
  }
}

const TIMEOUT = 20_000;

Deno.test("Reconciler installs the configuration in the provider cluster of a rule, then reports it Ready", async () => {
  // The watch shows our write late: the write must not be repeated.
  await withController(
    writeUnseen,
    async (h) => {
      await waitUntil(
        "the configuration to be created",
        () =>
          h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME) !==
            undefined,
        TIMEOUT,
      );
      await h.morePasses(3);
      assert.equal(h.kcp.writes("POST", NETWORK).length, 1);
      assert.equal(h.condition("r1"), undefined, "no status while pending");

      // The status write is also shown late: it must not be repeated either.
      h.kcp.hold("rules");
      h.kcp.release("configurations");
      await waitUntil(
        "Ready",
        () => h.condition("r1") === "True/Enforced",
        TIMEOUT,
      );
      assert.equal(h.condition("r1", "WebhooksInstalled"), "True/Installed");
      assert.match(
        h.message("r1", "WebhooksInstalled") ?? "",
        /installed in root:network/,
      );
      const written = h.kcp.get(
        "configurations",
        NETWORK,
        WEBHOOK_CONFIGURATION_NAME,
      )!;
      const want = desiredWebhookConfiguration([VPCS], NETWORK_SETTINGS);
      assert.deepEqual(written.webhooks, want.webhooks);
      assert.deepEqual(written.metadata?.labels, want.metadata?.labels);
      const status = h.kcp.get("rules", CONSUMER, "r1")?.status as {
        observedGeneration?: number;
      };
      assert.equal(status.observedGeneration, 1);

      await h.morePasses(3);
      assert.equal(h.kcp.requests("PATCH", /\/status$/).length, 1);
      h.kcp.release("rules");

      // Settled: more passes write nothing.
      await h.morePasses(3);
      assert.deepEqual(h.inFlight, [1, 0, 1, 0], "one write at a time, told");
      assert.equal(h.kcp.writes("POST", NETWORK).length, 1);
      assert.equal(h.kcp.writes("PUT", NETWORK).length, 0);
      assert.equal(h.kcp.requests("PATCH", /\/status$/).length, 1);
      const [patch] = h.kcp.requests("PATCH", /\/status$/);
      assert.equal(
        patch?.url.pathname,
        h.kcp.ruleStatusPath(CONSUMER, "r1"),
      );
      assert.equal(
        patch?.headers.get("content-type"),
        "application/merge-patch+json",
      );
    },
    { expectationTimeoutMs: 60_000 },
  );
});

Deno.test("Reconciler deletes the configuration once its rule is deleted", async () => {
  await withController(
    (kcp) => {
      networkProvider(kcp);
      kcp.put("rules", rule("r1", "root:network", VPCS));
    },
    async (h) => {
      await waitUntil(
        "Ready",
        () => h.condition("r1") === "True/Enforced",
        TIMEOUT,
      );
      const installed = h.kcp.get(
        "configurations",
        NETWORK,
        WEBHOOK_CONFIGURATION_NAME,
      )!;
      h.kcp.remove("rules", CONSUMER, "r1");
      await waitUntil(
        "the configuration to be deleted",
        () =>
          h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME) ===
            undefined,
        TIMEOUT,
      );
      const deletes = h.kcp.writes("DELETE", NETWORK);
      assert.equal(deletes.length, 1);
      assert.equal(
        deletes[0]?.url.pathname,
        h.kcp.configurationPath(NETWORK, WEBHOOK_CONFIGURATION_NAME),
      );
      assert.deepEqual(JSON.parse(deletes[0]!.body).preconditions, {
        resourceVersion: installed.metadata?.resourceVersion,
      });
      await h.morePasses(3);
      assert.equal(h.kcp.writes("DELETE", NETWORK).length, 1);
      assert.equal(h.kcp.writes("POST", NETWORK).length, 1);
    },
  );
});

Deno.test("Reconciler installs a rule deleted and created again without resolving or reading its export again", async () => {
  await withController(
    (kcp) => {
      networkProvider(kcp);
      kcp.put("rules", rule("r1", "root:network", VPCS));
    },
    async (h) => {
      await waitUntil(
        "Ready",
        () => h.condition("r1") === "True/Enforced",
        TIMEOUT,
      );
      h.kcp.remove("rules", CONSUMER, "r1");
      await waitUntil(
        "the configuration to be deleted",
        () =>
          h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME) ===
            undefined,
        TIMEOUT,
      );
      const reads = () =>
        h.logs.filter((r) => r.msg === "resolved workspace path").length;
      const before = reads();
      assert.ok(before > 0);
      h.kcp.put("rules", rule("r1", "root:network", VPCS));
      await waitUntil(
        "the configuration again",
        () =>
          h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME) !==
            undefined,
        TIMEOUT,
      );
      assert.equal(reads(), before, "the path kept resolved");
    },
  );
});

Deno.test("Reconciler deletes our configurations that no rule wants at start and never sees others", async () => {
  await withController(
    (kcp) => {
      kcp.put("configurations", configuration("oldcluster", { managed: true }));
      kcp.put(
        "configurations",
        configuration("foreigncluster", { managed: false }),
      );
      kcp.put(
        "configurations",
        configuration(NETWORK, { managed: false, name: "someone-elses" }),
      );
    },
    async (h) => {
      await waitUntil(
        "the orphan to be deleted",
        () =>
          h.kcp.get(
            "configurations",
            "oldcluster",
            WEBHOOK_CONFIGURATION_NAME,
          ) === undefined,
        TIMEOUT,
      );
      await h.morePasses(3);
      assert.equal(h.kcp.writes("DELETE", "oldcluster").length, 1);
      // Not ours: untouched, and not even listed or watched.
      assert.ok(
        h.kcp.get(
          "configurations",
          "foreigncluster",
          WEBHOOK_CONFIGURATION_NAME,
        ),
      );
      assert.ok(h.kcp.get("configurations", NETWORK, "someone-elses"));
      assert.deepEqual(
        h.kcp.api.requests.filter((r) =>
          /foreigncluster|someone-elses/.test(r.url.pathname)
        ),
        [],
      );
      await waitUntil(
        "the deletion in the cache",
        () => h.watcher.items("configurations").length === 0,
        TIMEOUT,
      );
      const reads = h.kcp.api.seen(h.kcp.collectionPath("configurations"));
      assert.ok(reads.length >= 2, "a list and a watch");
      for (const read of reads) {
        assert.equal(read.url.searchParams.get("labelSelector"), SELECTOR);
      }
    },
  );
});

Deno.test("Reconciler reports InstallFailed while a provider cluster's writes fail, without delaying another, and updates with PUT once they succeed", async () => {
  let outdated!: KubeObject;
  await withController(
    (kcp) => {
      networkProvider(kcp);
      kcp.addProvider("root", "storage", STORAGE);
      const object = configuration(NETWORK, { managed: true });
      object.metadata!.labels = { ...object.metadata!.labels, team: "net" };
      object.webhooks = desiredWebhookConfiguration([
        { ...VPCS, resource: "subnets" },
      ], NETWORK_SETTINGS).webhooks;
      outdated = kcp.put("configurations", object);
      kcp.failing.add(NETWORK);
      kcp.put("rules", rule("net", "root:network", VPCS));
      kcp.put("rules", rule("store", "root:storage", VOLUMES));
    },
    async (h) => {
      await waitUntil(
        "the storage rule Ready",
        () => h.condition("store") === "True/Enforced",
        TIMEOUT,
      );
      await waitUntil(
        "the network rule InstallFailed",
        () => h.condition("net") === "False/InstallFailed",
        TIMEOUT,
      );
      assert.equal(
        h.condition("net", "WebhooksInstalled"),
        "False/InstallFailed",
      );
      assert.match(
        h.message("net") ?? "",
        /cannot write the webhook configuration in root:network: .*500.*etcd is on fire/,
      );
      // Retried on the applier's asking, with no change in the caches.
      await waitUntil(
        "retries of the network cluster",
        () => h.kcp.writes("PUT", NETWORK).length >= 3,
        TIMEOUT,
      );
      assert.ok(
        h.kcp.get("configurations", STORAGE, WEBHOOK_CONFIGURATION_NAME),
      );
      assert.deepEqual(
        h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME),
        outdated,
      );
      assert.ok(
        h.wrote.some((w) => w.kind === "configuration" && w.error),
        "the failure is observed",
      );

      h.kcp.failing.delete(NETWORK);
      await waitUntil(
        "the network rule Ready",
        () => h.condition("net") === "True/Enforced",
        TIMEOUT,
      );
      const updated = h.kcp.get(
        "configurations",
        NETWORK,
        WEBHOOK_CONFIGURATION_NAME,
      )!;
      assert.deepEqual(
        updated.webhooks,
        desiredWebhookConfiguration([VPCS], NETWORK_SETTINGS).webhooks,
      );
      assert.deepEqual(updated.metadata?.labels, {
        [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
        team: "net",
      });
      const puts = h.kcp.writes("PUT", NETWORK);
      assert.equal(
        puts.at(-1)?.url.pathname,
        h.kcp.configurationPath(NETWORK, WEBHOOK_CONFIGURATION_NAME),
      );
      assert.equal(
        JSON.parse(puts.at(-1)!.body).metadata.resourceVersion,
        outdated.metadata?.resourceVersion,
      );
      assert.equal(h.kcp.writes("POST", NETWORK).length, 0);
      assert.equal(h.kcp.writes("DELETE", NETWORK).length, 0);
      assert.equal(h.kcp.writes("POST", STORAGE).length, 1);
      assert.equal(h.condition("store"), "True/Enforced");
    },
  );
});

Deno.test("Reconciler reports InstallFailed for a configuration of its name that it does not own, and takes it over once labelled", async () => {
  const foreign = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: {
      name: WEBHOOK_CONFIGURATION_NAME,
      annotations: { "kcp.io/cluster": NETWORK },
    },
    webhooks: [],
  };
  await withController(
    (kcp) => {
      networkProvider(kcp);
      kcp.put("configurations", foreign);
      kcp.put("rules", rule("net", "root:network", VPCS));
    },
    async (h) => {
      await waitUntil(
        "the rule InstallFailed",
        () => h.condition("net") === "False/InstallFailed",
        TIMEOUT,
      );
      assert.match(
        h.message("net") ?? "",
        /cannot write the webhook configuration in root:network: a ValidatingWebhookConfiguration named dependency-controller exists without the label app\.kubernetes\.io\/managed-by=dependency-controller: delete it/,
      );
      assert.deepEqual(
        h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME)
          ?.webhooks,
        [],
        "the foreign configuration is left alone",
      );

      const current = h.kcp.get(
        "configurations",
        NETWORK,
        WEBHOOK_CONFIGURATION_NAME,
      )!;
      h.kcp.put("configurations", {
        ...current,
        metadata: {
          ...current.metadata,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
        },
      });
      await waitUntil(
        "the rule Ready",
        () => h.condition("net") === "True/Enforced",
        TIMEOUT,
      );
      assert.deepEqual(
        h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME)
          ?.webhooks,
        desiredWebhookConfiguration([VPCS], NETWORK_SETTINGS).webhooks,
      );
    },
  );
});

Deno.test("Reconciler reports PathNotResolved for a missing workspace and installs once it exists", async () => {
  await withController(
    (kcp) => {
      kcp.bind(NETWORK);
      kcp.put("rules", rule("r1", "root:network", VPCS));
    },
    async (h) => {
      await waitUntil(
        "PathNotResolved",
        () => h.condition("r1") === "False/PathNotResolved",
        TIMEOUT,
      );
      assert.equal(
        h.condition("r1", "WebhooksInstalled"),
        "False/PathNotResolved",
      );
      assert.match(h.message("r1") ?? "", /workspace root:network not found/);
      assert.equal(h.kcp.writes("POST", NETWORK).length, 0);

      const gets = () =>
        h.kcp.api.seen(h.kcp.workspacePath("root", "network")).length;
      const before = gets();
      h.kcp.addWorkspace("root", "network", NETWORK);
      await waitUntil(
        "Ready",
        () => h.condition("r1") === "True/Enforced",
        TIMEOUT,
      );
      assert.ok(gets() > before, "the path was resolved again");
      assert.ok(
        h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME),
      );
    },
  );
});

Deno.test("Reconciler.stop() waits for a write under way and starts nothing after", async () => {
  await withController(
    (kcp) => {
      networkProvider(kcp);
      kcp.put("rules", rule("r1", "root:network", VPCS));
      // Configuration writes hang.
      kcp.block();
    },
    async (h) => {
      await waitUntil(
        "the write to be under way",
        () => h.kcp.writes("POST", NETWORK).length === 1,
        TIMEOUT,
      );
      assert.equal(h.wrote.length, 1, "only the resolution ended");
      await h.reconciler.stop();
      // The write was aborted and ended before stop() returned.
      assert.equal(h.wrote.length, 2);
      assert.equal(h.wrote[1]?.kind, "configuration");
      assert.ok(h.wrote[1]?.error !== undefined);
      const requests = h.kcp.api.requests.length;
      const passes = h.passes();
      h.reconciler.trigger();
      h.kcp.put("rules", rule("r2", "root:network", VOLUMES));
      await delay(300);
      assert.equal(h.passes(), passes);
      // Only the watches may have asked for something (they still run).
      assert.deepEqual(
        h.kcp.api.requests.slice(requests).filter((r) => r.method !== "GET"),
        [],
      );
    },
  );
});

Deno.test("Reconciler.stop() clears its resync timer and the applier's and path cache's retry timers", async () => {
  const timers = new TimerTracker();
  timers.install();
  try {
    // The write stays unseen: a retry at its expectation deadline.
    await withController(
      writeUnseen,
      async (h) => {
        await waitUntil(
          "the configuration to be created",
          () => h.kcp.writes("POST", NETWORK).length === 1,
          TIMEOUT,
        );
        await h.morePasses(1);
        assert.equal(
          timers.pendingFrom("lib/controller/reconciler.ts").length,
          1,
          "the resync timer is pending",
        );
        assert.equal(
          timers.pendingFrom("lib/controller/applier.ts").length,
          1,
          "the applier's retry timer is pending",
        );
        await h.reconciler.stop();
        await delay(20);
        for (const file of ["reconciler.ts", "applier.ts", "path_cache.ts"]) {
          assert.deepEqual(
            timers.pendingFrom(`lib/controller/${file}`),
            [],
            file,
          );
        }
      },
      { expectationTimeoutMs: 60_000 },
    );
  } finally {
    timers.uninstall();
  }
});
