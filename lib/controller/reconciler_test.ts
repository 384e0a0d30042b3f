import assert from "node:assert/strict";
import { type Condition, RULES_PATH } from "../rules/mod.ts";
import {
  connection,
  delay,
  DEP_CTRL_PATH,
  endpointSlice,
  type EventStream,
  FakeApi,
  json,
  logCollector,
  type SeenRequest,
  SLICE_PATH,
  status,
  streamed,
  waitUntil,
} from "../../testing/mod.ts";
import { ExportWatcher, KubeClient, type KubeObject } from "../kcp/mod.ts";
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

const EXPORT = "dependencies.opendefense.cloud";
/** The one virtual-workspace endpoint (a path on the fake server). */
const ENDPOINT = `/services/apiexport/depctrl/${EXPORT}`;
const BINDINGS_PATH = "/apis/apis.kcp.io/v1alpha2/apibindings";
const VWC_PATH =
  "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
const WORKSPACES_PATH = "/apis/tenancy.kcp.io/v1alpha1/workspaces";
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
const VPCS = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
};
const VOLUMES = {
  group: "storage.example.com",
  version: "v1",
  resource: "volumes",
};

/** What the fake keeps per collection. */
type Kind = ControllerCollection;
const PATHS: Record<Kind, string> = {
  rules: RULES_PATH,
  locks: "/apis/dependencies.opendefense.cloud/v1alpha1/locks",
  bindings: BINDINGS_PATH,
  configurations: VWC_PATH,
};

interface StoredEvent {
  resourceVersion: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: KubeObject;
}

interface LiveWatch {
  stream: EventStream;
  selector: string | null;
  /** The resource version of the last event considered for this watch. */
  sent: number;
}

/**
 * The part of kcp the controller talks to, in memory: the endpoint slice,
 * one virtual-workspace endpoint with the three collections across all
 * clusters (list, and watch from a resource version), per-cluster writes of
 * webhook configurations and rule status, and the front-proxy's Workspaces.
 */
class FakeKcp {
  readonly api: FakeApi;
  /** Provider clusters whose configuration writes answer 500. */
  readonly failing = new Set<string>();
  /** Workspaces by `<parent logical cluster>/<name>`. */
  readonly workspaces = new Map<string, KubeObject>();
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  readonly #stores: Record<Kind, Map<string, KubeObject>> = {
    rules: new Map(),
    locks: new Map(),
    bindings: new Map(),
    configurations: new Map(),
  };
  readonly #events: Record<Kind, StoredEvent[]> = {
    rules: [],
    locks: [],
    bindings: [],
    configurations: [],
  };
  readonly #watches: Record<Kind, LiveWatch[]> = {
    rules: [],
    locks: [],
    bindings: [],
    configurations: [],
  };
  readonly #held = new Set<Kind>();
  #resourceVersion = 100;

  constructor() {
    this.api = new FakeApi((request) => this.#handle(request));
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return this.api.url;
  }

  /** Adds or replaces an object, in the cluster of its annotation. */
  put(kind: Kind, object: KubeObject): KubeObject {
    const cluster = object.metadata?.annotations?.["kcp.io/cluster"] ?? "";
    const key = `${cluster}/${object.metadata?.name ?? ""}`;
    const existed = this.#stores[kind].has(key);
    const stored = structuredClone(object);
    stored.metadata = {
      ...stored.metadata,
      resourceVersion: String(++this.#resourceVersion),
    };
    this.#stores[kind].set(key, stored);
    this.#record(kind, existed ? "MODIFIED" : "ADDED", stored);
    return stored;
  }

  /** Deletes an object. */
  remove(kind: Kind, cluster: string, name: string): void {
    const key = `${cluster}/${name}`;
    const existing = this.#stores[kind].get(key);
    if (existing === undefined) return;
    this.#stores[kind].delete(key);
    const deleted = structuredClone(existing);
    deleted.metadata = {
      ...deleted.metadata,
      resourceVersion: String(++this.#resourceVersion),
    };
    this.#record(kind, "DELETED", deleted);
  }

  /** An object, if stored. */
  get(kind: Kind, cluster: string, name: string): KubeObject | undefined {
    return this.#stores[kind].get(`${cluster}/${name}`);
  }

  /** Holds back watch events of a collection (they are still recorded). */
  hold(kind: Kind): void {
    this.#held.add(kind);
  }

  /** Sends the held events of a collection and stops holding them. */
  release(kind: Kind): void {
    this.#held.delete(kind);
    this.#flush(kind);
  }

  /** Requests with `method` whose path matches `path`. */
  requests(method: string, path: RegExp): SeenRequest[] {
    return this.api.requests.filter((r) =>
      r.method === method && path.test(r.url.pathname)
    );
  }

  /** The configuration writes with `method` to a provider cluster. */
  writes(method: string, cluster: string): SeenRequest[] {
    return this.requests(
      method,
      new RegExp(`^${ENDPOINT}/clusters/${cluster}${VWC_PATH}(/|$)`),
    );
  }

  /** Makes configuration writes wait until {@linkcode FakeKcp.unblock}. */
  block(): void {
    this.#gate = new Promise((resolve) => this.#open = resolve);
  }

  /** Lets waiting and further configuration writes through. */
  unblock(): void {
    this.#open?.();
    this.#gate = undefined;
  }

  async close(): Promise<void> {
    this.unblock();
    await this.api.close();
  }

  #record(kind: Kind, type: StoredEvent["type"], object: KubeObject): void {
    this.#events[kind].push({
      resourceVersion: this.#resourceVersion,
      type,
      object,
    });
    this.#flush(kind);
  }

  #flush(kind: Kind): void {
    if (this.#held.has(kind)) return;
    for (const watch of this.#watches[kind]) {
      if (!watch.stream.open) continue;
      for (const event of this.#events[kind]) {
        if (event.resourceVersion <= watch.sent) continue;
        watch.sent = event.resourceVersion;
        if (matches(watch.selector, event.object)) {
          watch.stream.event(event.type, event.object);
        }
      }
    }
  }

  async #handle(request: SeenRequest): Promise<Response> {
    const path = request.url.pathname;
    const watch = request.url.searchParams.get("watch") === "true";
    if (path === SLICE_PATH && request.method === "GET") {
      if (watch) return streamed(this.api.stream());
      return json(list([endpointSlice(this.url, [ENDPOINT])], "1"));
    }
    for (const kind of Object.keys(PATHS) as Kind[]) {
      if (path === `${ENDPOINT}/clusters/*${PATHS[kind]}`) {
        return this.#listOrWatch(kind, request, watch);
      }
    }
    const write = new RegExp(
      `^${ENDPOINT}/clusters/([^/]+)${VWC_PATH}(?:/([^/]+))?$`,
    ).exec(path);
    if (write !== null) {
      return await this.#writeConfiguration(request, write[1]!, write[2]);
    }
    const patch = new RegExp(
      `^${ENDPOINT}/clusters/([^/]+)${RULES_PATH}/([^/]+)/status$`,
    ).exec(path);
    if (patch !== null && request.method === "PATCH") {
      return this.#patchStatus(request, patch[1]!, patch[2]!);
    }
    const workspace = new RegExp(
      `^/clusters/([^/]+)${WORKSPACES_PATH}/([^/]+)$`,
    )
      .exec(path);
    if (workspace !== null && request.method === "GET") {
      const found = this.workspaces.get(`${workspace[1]}/${workspace[2]}`);
      if (found === undefined) {
        return json(
          status(404, "NotFound", `workspaces "${workspace[2]}" not found`),
          404,
        );
      }
      return json(found);
    }
    return json(status(404, "NotFound", `no route for ${path}`), 404);
  }

  #listOrWatch(kind: Kind, request: SeenRequest, watch: boolean): Response {
    const selector = request.url.searchParams.get("labelSelector");
    if (selector !== null && !/^[^=,!]+=[^=,]+$/.test(selector)) {
      return json(status(400, "BadRequest", "unsupported selector"), 400);
    }
    if (!watch) {
      const items = [...this.#stores[kind].values()].filter((o) =>
        matches(selector, o)
      );
      return json(list(items, String(this.#resourceVersion)));
    }
    const stream = this.api.stream();
    const from = Number(request.url.searchParams.get("resourceVersion") ?? 0);
    this.#watches[kind].push({ stream, selector, sent: from });
    this.#flush(kind);
    return streamed(stream);
  }

  async #writeConfiguration(
    request: SeenRequest,
    cluster: string,
    name: string | undefined,
  ): Promise<Response> {
    await this.#gate;
    if (this.failing.has(cluster)) {
      return json(status(500, "InternalError", "etcd is on fire"), 500);
    }
    const body = request.body === "" ? {} : JSON.parse(request.body);
    if (request.method === "POST" && name === undefined) {
      const object = body as KubeObject;
      const objectName = object.metadata?.name ?? "";
      if (this.get("configurations", cluster, objectName) !== undefined) {
        return json(status(409, "AlreadyExists", "already exists"), 409);
      }
      object.metadata = {
        ...object.metadata,
        annotations: {
          ...object.metadata?.annotations,
          "kcp.io/cluster": cluster,
        },
      };
      return json(this.put("configurations", object), 201);
    }
    if (name === undefined) {
      return json(status(405, "MethodNotAllowed", "no"), 405);
    }
    const existing = this.get("configurations", cluster, name);
    if (existing === undefined) {
      return json(status(404, "NotFound", `${name} not found`), 404);
    }
    if (request.method === "GET") return json(existing);
    const resourceVersion = existing.metadata?.resourceVersion;
    if (request.method === "PUT") {
      const object = body as KubeObject;
      if (object.metadata?.resourceVersion !== resourceVersion) {
        return json(status(409, "Conflict", "the object was modified"), 409);
      }
      return json(this.put("configurations", object));
    }
    if (request.method === "DELETE") {
      const wanted = (body as { preconditions?: { resourceVersion?: string } })
        .preconditions?.resourceVersion;
      if (wanted !== undefined && wanted !== resourceVersion) {
        return json(status(409, "Conflict", "precondition failed"), 409);
      }
      this.remove("configurations", cluster, name);
      return json({ kind: "Status", status: "Success" });
    }
    return json(status(405, "MethodNotAllowed", request.method), 405);
  }

  #patchStatus(request: SeenRequest, cluster: string, name: string): Response {
    if (
      request.headers.get("content-type") !== "application/merge-patch+json"
    ) {
      return json(status(415, "UnsupportedMediaType", "merge patch only"), 415);
    }
    const existing = this.get("rules", cluster, name);
    if (existing === undefined) {
      return json(status(404, "NotFound", `${name} not found`), 404);
    }
    const patch = JSON.parse(request.body) as { status?: unknown };
    return json(this.put("rules", { ...existing, status: patch.status }));
  }
}

/** Whether `object` matches a `key=value` selector (or there is none). */
function matches(selector: string | null, object: KubeObject): boolean {
  if (selector === null) return true;
  const [key, value] = selector.split("=");
  return object.metadata?.labels?.[key!] === value;
}

function list(items: unknown[], resourceVersion: string) {
  return { metadata: { resourceVersion }, items };
}

/** A rule in {@linkcode CONSUMER} protecting `target` from `path`. */
function rule(
  name: string,
  path: string,
  target: { group: string; version: string; resource: string },
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
        apiExportName: "compute.example.com",
        group: "compute.example.com",
        version: "v1alpha1",
        kind: "VirtualMachine",
        resource: "virtualmachines",
      },
      dependencies: [{
        apiExportRef: { path, name: target.group },
        ...target,
        fieldRef: { path: ".spec.volumeRef.name" },
      }],
    },
  };
}

/** The dep-ctrl APIBinding of a provider cluster, its claim accepted. */
function binding(cluster: string): KubeObject {
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIBinding",
    metadata: { name: "dep-ctrl", annotations: { "kcp.io/cluster": cluster } },
    spec: {
      reference: { export: { path: "root:dep-ctrl", name: EXPORT } },
      permissionClaims: [{
        group: "admissionregistration.k8s.io",
        resource: "validatingwebhookconfigurations",
        verbs: ["*"],
        state: "Accepted",
      }],
    },
  };
}

/** A Ready Workspace whose logical cluster is `cluster`. */
function workspace(name: string, cluster: string): KubeObject {
  return {
    apiVersion: "tenancy.kcp.io/v1alpha1",
    kind: "Workspace",
    metadata: { name },
    spec: { cluster },
    status: { phase: "Ready" },
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
  kcp.workspaces.set("root/network", workspace("network", NETWORK));
  kcp.put("bindings", binding(NETWORK));
}

/** The storage provider (root:storage) with its binding. */
function storageProvider(kcp: FakeKcp): void {
  kcp.workspaces.set("root/storage", workspace("storage", STORAGE));
  kcp.put("bindings", binding(STORAGE));
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
  await withController(
    (kcp) => {
      networkProvider(kcp);
      kcp.put("rules", rule("r1", "root:network", VPCS));
      // The watch shows our write late: the write must not be repeated.
      kcp.hold("configurations");
    },
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
        `${ENDPOINT}/clusters/${CONSUMER}${RULES_PATH}/r1/status`,
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
        `${ENDPOINT}/clusters/${NETWORK}${VWC_PATH}/${WEBHOOK_CONFIGURATION_NAME}`,
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
      const reads = h.kcp.api.seen(`${ENDPOINT}/clusters/*${VWC_PATH}`);
      assert.ok(reads.length >= 2, "a list and a watch");
      for (const read of reads) {
        assert.equal(read.url.searchParams.get("labelSelector"), SELECTOR);
      }
    },
  );
});

Deno.test("Reconciler retries a failing provider cluster with backoff without delaying another, and reports InstallFailed", async () => {
  await withController(
    (kcp) => {
      networkProvider(kcp);
      storageProvider(kcp);
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
      await waitUntil(
        "retries of the network cluster",
        () => h.kcp.writes("POST", NETWORK).length >= 3,
        TIMEOUT,
      );
      // With backoff, not in a loop (a bound that a slow machine only helps).
      const tries = h.kcp.writes("POST", NETWORK).length;
      await delay(400);
      assert.ok(
        h.kcp.writes("POST", NETWORK).length - tries < 25,
        "retried with backoff",
      );
      assert.ok(
        h.kcp.get("configurations", STORAGE, WEBHOOK_CONFIGURATION_NAME),
      );
      assert.equal(
        h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME),
        undefined,
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
      assert.deepEqual(
        h.kcp.get("configurations", NETWORK, WEBHOOK_CONFIGURATION_NAME)
          ?.webhooks,
        desiredWebhookConfiguration([VPCS], NETWORK_SETTINGS).webhooks,
      );
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

Deno.test("Reconciler updates an outdated configuration with PUT, retrying while it fails", async () => {
  let outdated!: KubeObject;
  await withController(
    (kcp) => {
      networkProvider(kcp);
      const object = configuration(NETWORK, { managed: true });
      object.metadata!.labels = { ...object.metadata!.labels, team: "net" };
      object.webhooks = desiredWebhookConfiguration([
        { ...VPCS, resource: "subnets" },
      ], NETWORK_SETTINGS).webhooks;
      outdated = kcp.put("configurations", object);
      kcp.put("rules", rule("r1", "root:network", VPCS));
      kcp.failing.add(NETWORK);
    },
    async (h) => {
      await waitUntil(
        "InstallFailed",
        () => h.condition("r1") === "False/InstallFailed",
        TIMEOUT,
      );
      await waitUntil(
        "retries",
        () => h.kcp.writes("PUT", NETWORK).length >= 2,
        TIMEOUT,
      );
      h.kcp.failing.delete(NETWORK);
      await waitUntil(
        "Ready",
        () => h.condition("r1") === "True/Enforced",
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
        `${ENDPOINT}/clusters/${NETWORK}${VWC_PATH}/${WEBHOOK_CONFIGURATION_NAME}`,
      );
      assert.equal(
        JSON.parse(puts.at(-1)!.body).metadata.resourceVersion,
        outdated.metadata?.resourceVersion,
      );
      assert.equal(h.kcp.writes("POST", NETWORK).length, 0);
      assert.equal(h.kcp.writes("DELETE", NETWORK).length, 0);
    },
  );
});

Deno.test("Reconciler reports PathNotResolved for a missing workspace and installs once it exists", async () => {
  await withController(
    (kcp) => {
      kcp.put("bindings", binding(NETWORK));
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
        h.kcp.api.seen(`/clusters/root${WORKSPACES_PATH}/network`).length;
      // Resolved again with backoff, not in a loop.
      const first = gets();
      await delay(400);
      assert.ok(gets() - first < 25, "resolved again with backoff");
      const before = gets();
      h.kcp.workspaces.set("root/network", workspace("network", NETWORK));
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

/**
 * Records the timers started while installed that have neither fired nor
 * been cleared, with the stack that started each.
 */
class TimerTracker {
  readonly #pending = new Map<number, string>();
  readonly #original = {
    setTimeout: globalThis.setTimeout,
    setInterval: globalThis.setInterval,
    clearTimeout: globalThis.clearTimeout,
    clearInterval: globalThis.clearInterval,
  };

  install(): void {
    const { setTimeout, setInterval, clearTimeout, clearInterval } =
      this.#original;
    const pending = this.#pending;
    // Timer handles are objects that convert to their numeric id.
    type Handle = Parameters<typeof clearTimeout>[0];
    const clear = (id: Handle) => pending.delete(Number(id));
    globalThis.setTimeout = ((
      callback: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      const id = setTimeout(() => {
        clear(id);
        callback(...args);
      }, ms);
      pending.set(Number(id), new Error().stack ?? "");
      return id;
    }) as typeof globalThis.setTimeout;
    globalThis.setInterval = ((
      callback: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      const id = setInterval(callback, ms, ...args);
      pending.set(Number(id), new Error().stack ?? "");
      return id;
    }) as typeof globalThis.setInterval;
    globalThis.clearTimeout = (id: Handle) => {
      clear(id);
      clearTimeout(id);
    };
    globalThis.clearInterval = (id: Handle) => {
      clear(id);
      clearInterval(id);
    };
  }

  uninstall(): void {
    Object.assign(globalThis, this.#original);
  }

  /** Stacks of the pending timers started directly by a function of `file`. */
  pendingFrom(file: string): string[] {
    return [...this.#pending.values()].filter((stack) =>
      // Line 0 is "Error", line 1 the wrapper above, line 2 its caller.
      stack.split("\n")[2]?.includes(`/lib/controller/${file}:`)
    );
  }
}

Deno.test("Reconciler.stop() clears its resync timer and the applier's and path cache's retry timers", async () => {
  const timers = new TimerTracker();
  timers.install();
  try {
    await withController(
      (kcp) => {
        networkProvider(kcp);
        kcp.put("rules", rule("r1", "root:network", VPCS));
        // The write stays unseen: a retry at its expectation deadline.
        kcp.hold("configurations");
      },
      async (h) => {
        await waitUntil(
          "the configuration to be created",
          () => h.kcp.writes("POST", NETWORK).length === 1,
          TIMEOUT,
        );
        await h.morePasses(1);
        assert.equal(
          timers.pendingFrom("reconciler.ts").length,
          1,
          "the resync timer is pending",
        );
        assert.equal(
          timers.pendingFrom("applier.ts").length,
          1,
          "the applier's retry timer is pending",
        );
        await h.reconciler.stop();
        await delay(20);
        for (const file of ["reconciler.ts", "applier.ts", "path_cache.ts"]) {
          assert.deepEqual(timers.pendingFrom(file), [], file);
        }
      },
      { expectationTimeoutMs: 60_000 },
    );
  } finally {
    timers.uninstall();
  }
});
