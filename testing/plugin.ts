/**
 * Test helpers for `kubectl dependencies`: {@linkcode runPlugin} runs the
 * plugin through real kubectl, installed as `deno task plugin:install`
 * installs it, against a kubeconfig;
 * {@linkcode capturedIo} collects what a command writes; and
 * {@linkcode FakeWorkspace} answers, on a {@linkcode FakeApi}, what the
 * plugin asks one workspace: discovery, APIBindings, objects, Locks and
 * DependencyRules, with RBAC denials on demand. Only for `*_test.ts` files.
 *
 * @module
 */
import { KubeClient, type KubeObject } from "../lib/kcp/mod.ts";
import type { PluginContext, PluginIo } from "../lib/plugin/mod.ts";
import {
  connection,
  type FakeApi,
  json,
  type SeenRequest,
  status,
} from "./fake_api.ts";
import { type CommandResult, runCommand } from "./process.ts";
import { findBinary } from "./kcp/binaries.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** The plugin's entry point. */
export const PLUGIN_ENTRY = `${ROOT}kubectl_dependencies.ts`;

/** Options for {@linkcode runPlugin}. */
export interface RunPluginOptions {
  /** The kubeconfig the plugin uses (`--kubeconfig`). */
  kubeconfig: string;
  /** Environment variables added to the inherited ones. */
  env?: Record<string, string>;
}

let installing: Promise<string> | undefined;

/**
 * Installs the plugin once per test process, as `deno task plugin:install`
 * does (its very command line, read from `deno.json`: the bundle and the
 * launcher of `scripts/install_plugin.ts`), into a temporary root; returns
 * the root's `bin` directory, which holds `kubectl-dependencies`. The root
 * is removed at exit.
 */
export function installedPlugin(): Promise<string> {
  return installing ??= (async () => {
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
    const words = String(config.tasks["plugin:install"].command).split(" ");
    if (
      words[0] !== "deno" || words[1] !== "run" ||
      words.at(-1) !== "scripts/install_plugin.ts"
    ) {
      throw new Error(
        `plugin:install does not run scripts/install_plugin.ts: ${words}`,
      );
    }
    const root = await Deno.makeTempDir({ prefix: "kubectl-dependencies-" });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(root, { recursive: true });
      } catch {
        // already gone
      }
    });
    const installed = await runCommand(Deno.execPath(), [
      ...words.slice(1),
      `--root=${root}`,
      `--data=${root}/share`,
    ], { cwd: ROOT });
    if (installed.code !== 0) {
      throw new Error(`deno task plugin:install failed: ${installed.stderr}`);
    }
    return `${root}/bin`;
  })();
}

/**
 * Runs `kubectl dependencies <args> --kubeconfig=<kubeconfig>` as a user
 * does: real kubectl finds the plugin installed by
 * {@linkcode installedPlugin} on the `PATH` (which need not hold `deno`:
 * the launcher names the Deno that installed it) and runs it, with
 * `NO_COLOR` set; returns its exit code and output.
 */
export async function runPlugin(
  args: readonly string[],
  options: RunPluginOptions,
): Promise<CommandResult> {
  const bin = await installedPlugin();
  const kubectl = await findBinary("kubectl");
  if (kubectl === undefined) {
    throw new Error("kubectl is not built: run deno task kcp:build");
  }
  const path = [bin, Deno.env.get("PATH") ?? ""].join(":");
  return await runCommand(kubectl, [
    "dependencies",
    ...args,
    `--kubeconfig=${options.kubeconfig}`,
  ], { cwd: ROOT, env: { NO_COLOR: "1", PATH: path, ...options.env } });
}

/** A {@linkcode PluginIo} that keeps what is written. */
export interface CapturedIo extends PluginIo {
  /** Everything written to stdout. */
  readonly stdout: string;
  /** Everything written to stderr. */
  readonly stderr: string;
}

/** An io that collects stdout and stderr, without colour. */
export function capturedIo(): CapturedIo {
  let stdout = "";
  let stderr = "";
  return {
    out: (text) => void (stdout += text),
    err: (text) => void (stderr += text),
    color: false,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
  };
}

/** A context for `api` at `/clusters/<workspace>`, with a captured io. */
export function fakeContext(
  api: FakeApi,
  options: { workspace?: string; namespace?: string } = {},
): PluginContext & { io: CapturedIo } {
  const server = `${api.url}/clusters/${options.workspace ?? "root:c1"}`;
  return {
    client: new KubeClient(connection(server)),
    server,
    namespace: options.namespace ?? "team-a",
    io: capturedIo(),
  };
}

/** A type a {@linkcode FakeWorkspace} serves. */
export interface FakeType {
  /** API group, `""` for core. */
  group: string;
  /** Version. */
  version: string;
  /** Plural resource. */
  resource: string;
  /** Kind. */
  kind: string;
  /** Whether namespaced. */
  namespaced: boolean;
  /** Short names. */
  shortNames?: string[];
}

/** Core types most tests need. */
export const CORE_TYPES: readonly FakeType[] = [
  {
    group: "",
    version: "v1",
    resource: "namespaces",
    kind: "Namespace",
    namespaced: false,
    shortNames: ["ns"],
  },
  {
    group: "",
    version: "v1",
    resource: "configmaps",
    kind: "ConfigMap",
    namespaced: true,
    shortNames: ["cm"],
  },
];

/** The VPC type of the test topology. */
export const VPC_TYPE: FakeType = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
  kind: "VPC",
  namespaced: true,
};

/** The dep-ctrl types a workspace serves once it binds the export. */
export const DEP_CTRL_TYPES: readonly FakeType[] = [
  {
    group: "dependencies.opendefense.cloud",
    version: "v1alpha1",
    resource: "locks",
    kind: "Lock",
    namespaced: true,
  },
  {
    group: "dependencies.opendefense.cloud",
    version: "v1alpha1",
    resource: "dependencyrules",
    kind: "DependencyRule",
    namespaced: false,
  },
];

/** An APIBinding of `resources` from an export. */
export function binding(
  exported: { path?: string; name: string },
  resources: readonly { group: string; resource: string }[],
): KubeObject {
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIBinding",
    metadata: { name: exported.name },
    spec: { reference: { export: exported } },
    status: {
      phase: "Bound",
      boundResources: resources.map((r) => ({ ...r, storageVersions: [] })),
    },
  };
}

/** What the fake controller says of a Lock: its Ready condition, or none yet. */
export type FakeReadiness = (lock: KubeObject) =>
  | { status: "True" | "False"; reason: string; message: string }
  | undefined;

const LOCKS =
  /^\/apis\/dependencies\.opendefense\.cloud\/v1alpha1\/namespaces\/([^/]+)\/locks(?:\/([^/]+))?$/;

/**
 * One workspace at `/clusters/<workspace>` of a {@linkcode FakeApi}: give
 * {@linkcode FakeWorkspace.handle} as the api's handler.
 */
export class FakeWorkspace {
  /** The types discovery lists. */
  types: FakeType[];
  /** The APIBindings, as listed. */
  bindings: KubeObject[];
  /** Objects that exist, as `<group>/<resource>/<namespace>/<name>` (namespace empty when cluster-scoped). */
  objects: Set<string>;
  /** The Locks, by `<namespace>/<name>`. */
  readonly locks = new Map<string, KubeObject>();
  /** The DependencyRules, as listed. */
  rules: unknown[] = [];
  /** Denied requests, as `<verb> <resource>` (`create locks`, `list apibindings`). */
  readonly forbidden = new Set<string>();
  /** The Ready condition each read of a Lock shows. */
  readiness: FakeReadiness = () => undefined;
  readonly #prefix: string;

  /** A workspace at `/clusters/<workspace>`. */
  constructor(
    workspace: string,
    options: {
      types?: FakeType[];
      bindings?: KubeObject[];
      objects?: string[];
    } = {},
  ) {
    this.#prefix = `/clusters/${workspace}`;
    this.types = options.types ?? [...CORE_TYPES, VPC_TYPE, ...DEP_CTRL_TYPES];
    this.bindings = options.bindings ?? [];
    this.objects = new Set(options.objects ?? []);
  }

  /** The handler to give the {@linkcode FakeApi}. */
  readonly handle = (request: SeenRequest): Response => {
    const path = request.url.pathname;
    if (!path.startsWith(this.#prefix)) {
      return json(status(404, "NotFound", "no such workspace"), 404);
    }
    return this.#answer(request, path.slice(this.#prefix.length));
  };

  #answer(request: SeenRequest, path: string): Response {
    const { method } = request;
    if (method === "GET" && path === "/api/v1") {
      return json(this.#resources("", "v1"));
    }
    if (method === "GET" && path === "/apis") return json(this.#groups());
    if (path === "/apis/apis.kcp.io/v1alpha2/apibindings") {
      return this.#denied("list apibindings") ??
        json({
          kind: "APIBindingList",
          apiVersion: "apis.kcp.io/v1alpha2",
          metadata: {},
          items: this.bindings,
        });
    }
    if (
      path === "/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules"
    ) {
      return this.#denied("list dependencyrules") ?? json({
        kind: "DependencyRuleList",
        apiVersion: "dependencies.opendefense.cloud/v1alpha1",
        metadata: {},
        items: this.rules,
      });
    }
    const locks = LOCKS.exec(path);
    if (locks !== null) {
      return this.#lockAnswer(request, {
        namespace: decodeURIComponent(locks[1]!),
        ...(locks[2] === undefined
          ? {}
          : { name: decodeURIComponent(locks[2]) }),
      });
    }
    const gv = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (method === "GET" && gv !== null) {
      const list = this.#resources(gv[1]!, gv[2]!);
      return list.resources.length === 0
        ? json(
          status(
            404,
            "NotFound",
            "the server could not find the requested resource",
          ),
          404,
        )
        : json(list);
    }
    const object =
      /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)\/([^/]+)$/
        .exec(path);
    if (method === "GET" && object !== null) {
      const key = `${object[1] ?? ""}/${object[3]}/${object[2] ?? ""}/${
        object[4]
      }`;
      return this.objects.has(key)
        ? json({ metadata: { name: object[4] } })
        : json({
          ...status(404, "NotFound", `"${object[4]}" not found`),
          details: { name: object[4] },
        }, 404);
    }
    return json(status(404, "NotFound", `nothing at ${path}`), 404);
  }

  #lockAnswer(
    request: SeenRequest,
    at: { namespace: string; name?: string },
  ): Response {
    const verb = {
      GET: at.name === undefined ? "list" : "get",
      POST: "create",
      PATCH: "patch",
      DELETE: "delete",
    }[request.method] ?? "";
    const denied = this.#denied(`${verb} locks`);
    if (denied !== undefined) return denied;
    const key = `${at.namespace}/${at.name ?? ""}`;
    if (verb === "list") {
      const items = [...this.locks.values()].filter((l) =>
        l.metadata?.namespace === at.namespace
      );
      return json({
        kind: "LockList",
        apiVersion: "dependencies.opendefense.cloud/v1alpha1",
        metadata: {},
        items,
      });
    }
    if (verb === "create") {
      const lock = JSON.parse(request.body) as KubeObject;
      const created = `${at.namespace}/${lock.metadata?.name}`;
      if (this.locks.has(created)) {
        return json({
          ...status(409, "AlreadyExists", "exists"),
          details: { name: lock.metadata?.name },
        }, 409);
      }
      lock.metadata = { ...lock.metadata, generation: 1, resourceVersion: "1" };
      this.locks.set(created, lock);
      return json(lock, 201);
    }
    const lock = this.locks.get(key);
    if (lock === undefined) {
      return json({
        ...status(404, "NotFound", "not found"),
        details: { name: at.name },
      }, 404);
    }
    if (verb === "delete") {
      this.locks.delete(key);
      return json(lock);
    }
    if (verb === "patch") {
      const patch = JSON.parse(request.body) as {
        spec: Record<string, unknown>;
      };
      lock.spec = { ...(lock.spec as Record<string, unknown>), ...patch.spec };
      lock.metadata = {
        ...lock.metadata,
        generation: (lock.metadata?.generation ?? 0) + 1,
      };
      return json(lock);
    }
    const ready = this.readiness(lock);
    return json(
      ready === undefined ? lock : {
        ...lock,
        status: {
          conditions: [{
            type: "Ready",
            ...ready,
            observedGeneration: lock.metadata?.generation,
            lastTransitionTime: "2024-01-01T00:00:00Z",
          }],
        },
      },
    );
  }

  #denied(action: string): Response | undefined {
    if (!this.forbidden.has(action)) return undefined;
    return json(status(403, "Forbidden", `forbidden: ${action}`), 403);
  }

  #groups(): unknown {
    const names = [
      ...new Set(this.types.filter((t) => t.group !== "").map((t) => t.group)),
    ];
    return {
      kind: "APIGroupList",
      groups: names.map((name) => {
        const versions = [
          ...new Set(
            this.types.filter((t) => t.group === name).map((t) => t.version),
          ),
        ];
        return {
          name,
          versions: versions.map((version) => ({
            groupVersion: `${name}/${version}`,
            version,
          })),
          preferredVersion: {
            groupVersion: `${name}/${versions[0]}`,
            version: versions[0],
          },
        };
      }),
    };
  }

  #resources(group: string, version: string): { resources: unknown[] } {
    const types = this.types.filter((t) =>
      t.group === group && t.version === version
    );
    return {
      resources: types.flatMap((t) => [
        {
          name: t.resource,
          singularName: t.kind.toLowerCase(),
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ["get", "list", "create", "delete"],
          ...(t.shortNames === undefined ? {} : { shortNames: t.shortNames }),
        },
        {
          name: `${t.resource}/status`,
          singularName: "",
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ["get"],
        },
      ]),
    };
  }
}
