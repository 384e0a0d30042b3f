/**
 * The part of kcp the controller talks to, in memory, behind a
 * {@linkcode FakeApi}: the dep-ctrl export's endpoint slice, one
 * virtual-workspace endpoint serving the controller's collections across
 * all clusters (list, and watch from a resource version, with a
 * `key=value` label selector), per-cluster writes of webhook
 * configurations and rule status, and the front-proxy's Workspaces. Tests
 * fill it, hold back watch events, fail or block configuration writes, and
 * read what was asked. Only for `*_test.ts` files.
 *
 * ```ts
 * import { FakeKcp } from "./mod.ts";
 *
 * const kcp = new FakeKcp();
 * kcp.addProvider("root", "network", "netcluster");
 * // ... point a controller at kcp.url, then:
 * await kcp.close();
 * ```
 *
 * @module
 */
import type { ControllerCollection } from "../lib/controller/mod.ts";
import { DEFAULT_API_EXPORT_NAME, type KubeObject } from "../lib/kcp/mod.ts";
import {
  endpointSlice,
  type EventStream,
  FakeApi,
  json,
  type SeenRequest,
  SLICE_PATH,
  status,
  streamed,
} from "./fake_api.ts";

/** The one virtual-workspace endpoint of {@linkcode FakeKcp} (a path on it). */
export const FAKE_KCP_ENDPOINT =
  `/services/apiexport/depctrl/${DEFAULT_API_EXPORT_NAME}`;

const RULES_PATH =
  "/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules";
const VWC_PATH =
  "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const WORKSPACES_PATH = "/apis/tenancy.kcp.io/v1alpha1/workspaces";

/** Where each of the controller's collections is, below a cluster of the endpoint. */
const PATHS: Record<ControllerCollection, string> = {
  rules: RULES_PATH,
  locks: "/apis/dependencies.opendefense.cloud/v1alpha1/locks",
  bindings: "/apis/apis.kcp.io/v1alpha2/apibindings",
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

/** One empty value per collection. */
function perCollection<T>(
  empty: () => T,
): Record<ControllerCollection, T> {
  return {
    rules: empty(),
    locks: empty(),
    bindings: empty(),
    configurations: empty(),
  };
}

/**
 * An in-memory kcp for the controller (see the module documentation);
 * objects live in the cluster of their `kcp.io/cluster` annotation.
 * {@linkcode FakeKcp.close} stops it.
 */
export class FakeKcp {
  /** The server, with its request log. */
  readonly api: FakeApi;
  /** Provider clusters whose configuration writes answer 500. */
  readonly failing: Set<string> = new Set();
  /** Workspaces by `<parent logical cluster>/<name>`. */
  readonly workspaces: Map<string, KubeObject> = new Map();
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  readonly #stores = perCollection(() => new Map<string, KubeObject>());
  readonly #events = perCollection((): StoredEvent[] => []);
  readonly #watches = perCollection((): LiveWatch[] => []);
  readonly #held = new Set<ControllerCollection>();
  #resourceVersion = 100;

  /** Starts the server, with nothing stored. */
  constructor() {
    this.api = new FakeApi((request) => this.#handle(request));
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return this.api.url;
  }

  /** Adds or replaces an object, in the cluster of its annotation. */
  put(kind: ControllerCollection, object: KubeObject): KubeObject {
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
  remove(kind: ControllerCollection, cluster: string, name: string): void {
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
  get(
    kind: ControllerCollection,
    cluster: string,
    name: string,
  ): KubeObject | undefined {
    return this.#stores[kind].get(`${cluster}/${name}`);
  }

  /** Adds a Ready Workspace `name` in logical cluster `parent`, whose own logical cluster is `cluster`. */
  addWorkspace(parent: string, name: string, cluster: string): void {
    this.workspaces.set(`${parent}/${name}`, {
      apiVersion: "tenancy.kcp.io/v1alpha1",
      kind: "Workspace",
      metadata: { name },
      spec: { cluster },
      status: { phase: "Ready" },
    });
  }

  /** Adds the dep-ctrl APIBinding of `cluster`, its claim on webhook configurations accepted. */
  bind(cluster: string): void {
    this.put("bindings", {
      apiVersion: "apis.kcp.io/v1alpha2",
      kind: "APIBinding",
      metadata: {
        name: "dep-ctrl",
        annotations: { "kcp.io/cluster": cluster },
      },
      spec: {
        reference: {
          export: { path: "root:dep-ctrl", name: DEFAULT_API_EXPORT_NAME },
        },
        permissionClaims: [{
          group: "admissionregistration.k8s.io",
          resource: "validatingwebhookconfigurations",
          verbs: ["*"],
          state: "Accepted",
        }],
      },
    });
  }

  /**
   * A provider: Workspace `name` in `parent` ({@linkcode FakeKcp.addWorkspace})
   * whose cluster `cluster` is bound ({@linkcode FakeKcp.bind}).
   */
  addProvider(parent: string, name: string, cluster: string): void {
    this.addWorkspace(parent, name, cluster);
    this.bind(cluster);
  }

  /** Holds back watch events of a collection (they are still recorded). */
  hold(kind: ControllerCollection): void {
    this.#held.add(kind);
  }

  /** Sends the held events of a collection and stops holding them. */
  release(kind: ControllerCollection): void {
    this.#held.delete(kind);
    this.#flush(kind);
  }

  /** The path that lists and watches a collection across all clusters. */
  collectionPath(kind: ControllerCollection): string {
    return `${FAKE_KCP_ENDPOINT}/clusters/*${PATHS[kind]}`;
  }

  /** The path of the webhook configurations of `cluster`, or of one of them. */
  configurationPath(cluster: string, name?: string): string {
    const collection = `${FAKE_KCP_ENDPOINT}/clusters/${cluster}${VWC_PATH}`;
    return name === undefined ? collection : `${collection}/${name}`;
  }

  /** The path of the status of rule `name` in `cluster`. */
  ruleStatusPath(cluster: string, name: string): string {
    return `${FAKE_KCP_ENDPOINT}/clusters/${cluster}${RULES_PATH}/${name}/status`;
  }

  /** The path of Workspace `name` in logical cluster `parent`. */
  workspacePath(parent: string, name: string): string {
    return `/clusters/${parent}${WORKSPACES_PATH}/${name}`;
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
      new RegExp(`^${this.configurationPath(cluster)}(/|$)`),
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

  /** Lets blocked writes through, ends every watch and stops the server. */
  async close(): Promise<void> {
    this.unblock();
    await this.api.close();
  }

  #record(
    kind: ControllerCollection,
    type: StoredEvent["type"],
    object: KubeObject,
  ): void {
    this.#events[kind].push({
      resourceVersion: this.#resourceVersion,
      type,
      object,
    });
    this.#flush(kind);
  }

  #flush(kind: ControllerCollection): void {
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
      return json(list([endpointSlice(this.url, [FAKE_KCP_ENDPOINT])], "1"));
    }
    for (const kind of Object.keys(PATHS) as ControllerCollection[]) {
      if (path === this.collectionPath(kind)) {
        return this.#listOrWatch(kind, request, watch);
      }
    }
    const write = new RegExp(
      `^${FAKE_KCP_ENDPOINT}/clusters/([^/]+)${VWC_PATH}(?:/([^/]+))?$`,
    ).exec(path);
    if (write !== null) {
      return await this.#writeConfiguration(request, write[1]!, write[2]);
    }
    const patch = new RegExp(
      `^${FAKE_KCP_ENDPOINT}/clusters/([^/]+)${RULES_PATH}/([^/]+)/status$`,
    ).exec(path);
    if (patch !== null && request.method === "PATCH") {
      return this.#patchStatus(request, patch[1]!, patch[2]!);
    }
    const workspace = new RegExp(
      `^/clusters/([^/]+)${WORKSPACES_PATH}/([^/]+)$`,
    ).exec(path);
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

  #listOrWatch(
    kind: ControllerCollection,
    request: SeenRequest,
    watch: boolean,
  ): Response {
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
