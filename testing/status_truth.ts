/**
 * "Status is a promise": every DependencyRule and Lock whose `Ready`
 * condition is `True` with reason `Enforced` is made to prove it on the
 * running kcp. {@linkcode assertStatusTruth} lists them in the given
 * workspaces and, for each, builds what it covers (a protected object and a
 * dependent naming it through the rule's field; the Lock's target) and
 * asserts that a server-side dry-run delete of the covered object is denied
 * by the webhook (409 Conflict, naming the dependent or the Lock); a 503 or
 * any other failure is never counted as proof. It works on one kcp and on a
 * sharded one behind its front-proxy alike: everything goes through
 * {@linkcode KcpApi.kubectl} and {@linkcode KcpApi.request}.
 *
 * ```ts
 * import { assertStatusTruth, kcpTest } from "./mod.ts";
 *
 * kcpTest("every Enforced status is true", async (kcp, step) => {
 *   await step("status truth", async () => {
 *     await assertStatusTruth(kcp, {
 *       workspaces: ["root:providers:compute", "root:consumers:c1"],
 *       minimum: { rules: 1 },
 *     });
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import { delay } from "./fake_api.ts";
import { applyObjects } from "./apis.ts";
import { type KcpApi, KcpRequestError } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";

/** Options for {@linkcode assertStatusTruth}. */
export interface StatusTruthOptions {
  /**
   * The workspaces (paths) whose rules and Locks are checked, and where a
   * rule's proof may be placed: the first that binds both of the rule's
   * types from the exports the rule names (the rule's own workspace is
   * tried first).
   */
  workspaces: readonly string[];
  /**
   * Waits until at least this many rules and Locks are `Enforced` for their
   * current generation (status converges after the steps that wrote them),
   * and fails if they are not. @default {{ rules: 0, locks: 0 }}
   */
  minimum?: { rules?: number; locks?: number };
  /**
   * Proves each rule in every listed workspace that binds both of its types
   * (on a sharded kcp: a consumer on each shard), not only in the first.
   * @default {false}
   */
  everywhere?: boolean;
  /**
   * Deletes what the check created once everything is proven: dependents
   * first, then the protected objects (which must now be deletable), then
   * the namespace if the check created it. A Lock's target the check had to
   * create stays, since its Lock holds it (see
   * {@linkcode StatusTruth.leftBehind}). @default {true}
   */
  cleanup?: boolean;
  /** The namespace namespaced objects are created in. @default {"status-truth"} */
  namespace?: string;
  /** How long each denial (and each wait) may take. @default {90_000} */
  timeoutMs?: number;
}

/** What {@linkcode assertStatusTruth} proved. */
export interface StatusTruth {
  /** How many DependencyRules the workspaces hold. */
  rulesListed: number;
  /** The `Enforced` rules, each proven, as `<workspace>/<name>`. */
  rulesProven: string[];
  /** How many Locks the workspaces hold. */
  locksListed: number;
  /** The `Enforced` Locks, each proven, as `<workspace>/<namespace>/<name>`. */
  locksProven: string[];
  /**
   * `Enforced` rules and Locks whose status is of an older generation even
   * after waiting (the controller has not caught up): not proven.
   */
  stale: string[];
  /** Denials observed: one per rule dependency and workspace, one per Lock. */
  denials: number;
  /**
   * Objects the check created and did not delete (all of them without
   * `cleanup`; a Lock's target it had to create, which its Lock holds), as
   * `<workspace>: <type>/<namespace>/<name>`.
   */
  leftBehind: string[];
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

/** A DependencyRule or a Lock as kubectl prints it. */
interface StatusObject {
  metadata: { name: string; namespace?: string; generation?: number };
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

interface Found {
  workspace: string;
  resource: "dependencyrules" | "locks";
  object: StatusObject;
}

interface TypeRef {
  group: string;
  version: string;
  resource: string;
}

interface ExportRef {
  path: string;
  name: string;
}

interface RuleSpec {
  dependent: TypeRef & { apiExportName: string; kind: string };
  dependencies: (TypeRef & {
    apiExportRef: ExportRef;
    fieldRef: { path: string; namespacePath?: string };
  })[];
}

interface LockSpec {
  target: TypeRef & { name: string; apiExportRef?: ExportRef };
  reason: string;
  operations?: string[];
}

interface Served {
  kind: string;
  namespaced: boolean;
}

/** Something the check created, to delete afterwards. */
interface Created {
  role: "protected" | "dependent" | "lock target";
  workspace: string;
  type: string;
  name: string;
  namespace?: string;
  deleted?: boolean;
}

/**
 * Proves every `Ready=True`/`Enforced` DependencyRule and Lock in
 * `options.workspaces` by a denial, and returns what it proved.
 *
 * A rule: for each of its dependencies, in a workspace that binds the
 * dependent from the rule's own export and the protected type from the
 * dependency's `apiExportRef`, a protected object `truth-<id>-<n>` and a
 * dependent `truth-<id>-<n>-dependent` naming it at `fieldRef.path` (and
 * the namespace at `fieldRef.namespacePath`), namespaced ones in
 * `options.namespace`; a dry-run delete of the protected object must be
 * denied naming the dependent. A Lock: its target, reused or created
 * empty; a dry-run delete (an update, for a Lock on updates only) must be
 * denied by a Lock naming it (or, for a type the webhook may not read, by
 * "a Lock may hold it"). Rules and Locks that are not `Enforced` (typos,
 * cycles, tenants' rules, no controller) are only counted.
 *
 * @param kcp The kcp (one server, or a sharded one's front-proxy).
 * @param options The workspaces, and how to check.
 * @returns What was listed and proven.
 * @throws {AssertionError} Naming the object whose status lied (or that
 * could not be proven), with what the delete returned.
 */
export async function assertStatusTruth(
  kcp: KcpApi,
  options: StatusTruthOptions,
): Promise<StatusTruth> {
  const {
    workspaces,
    everywhere = false,
    cleanup = true,
    namespace = "status-truth",
    timeoutMs = 90_000,
  } = options;
  const minRules = options.minimum?.rules ?? 0;
  const minLocks = options.minimum?.locks ?? 0;
  const context = new Context(kcp, {
    workspaces,
    namespace,
    timeoutMs,
    id: crypto.randomUUID().slice(0, 6),
  });

  let rules: Found[] = [];
  let locks: Found[] = [];
  let enforced: Found[] = [];
  const settled = async () => {
    rules = await listAll(kcp, workspaces, "dependencyrules");
    locks = await listAll(kcp, workspaces, "locks");
    enforced = [...rules, ...locks].filter((f) => isEnforced(f.object));
    const current = enforced.filter((f) => isCurrent(f.object));
    const count = (resource: string) =>
      current.filter((f) => f.resource === resource).length;
    return {
      enough: count("dependencyrules") >= minRules &&
        count("locks") >= minLocks,
      stale: enforced.length - current.length,
    };
  };
  // Status converges after the steps that wrote the objects: wait until
  // enough are Enforced and none says so of an older generation.
  let state = await settled();
  if (!state.enough || state.stale > 0) {
    await waitFor(
      "the statuses to settle",
      async () => {
        state = await settled();
        return state.enough && state.stale === 0 || undefined;
      },
      { timeoutMs, intervalMs: 500 },
    ).catch(() => undefined);
  }
  assert.ok(
    state.enough,
    `expected at least ${minRules} Enforced rule(s) and ${minLocks} Enforced Lock(s) within ${timeoutMs} ms; rules: ${
      shown(rules)
    }; Locks: ${shown(locks)}`,
  );
  // An Enforced status of an older generation speaks of a spec that is no
  // more: it is reported, not proven.
  const stale = enforced.filter((f) => !isCurrent(f.object));
  const enforcedRules = enforced.filter((f) =>
    f.resource === "dependencyrules" && isCurrent(f.object)
  );
  const enforcedLocks = enforced.filter((f) =>
    f.resource === "locks" && isCurrent(f.object)
  );

  for (const found of enforcedRules) await context.proveRule(found, everywhere);
  for (const found of enforcedLocks) await context.proveLock(found);
  if (cleanup) await context.cleanup();

  const truth: StatusTruth = {
    rulesListed: rules.length,
    rulesProven: enforcedRules.map((f) => where(f)),
    locksListed: locks.length,
    locksProven: enforcedLocks.map((f) => where(f)),
    stale: stale.map((f) => where(f)),
    denials: context.denials,
    leftBehind: context.leftBehind(),
  };
  console.log(
    `status truth: proved ${truth.rulesProven.length} Enforced rule(s) [${
      truth.rulesProven.join(", ")
    }] and ${truth.locksProven.length} Enforced Lock(s) [${
      truth.locksProven.join(", ")
    }] with ${truth.denials} denial(s), of ${truth.rulesListed} rule(s) and ${truth.locksListed} Lock(s) listed${
      truth.stale.length === 0
        ? ""
        : `; stale, not proven: ${truth.stale.join(", ")}`
    }${
      truth.leftBehind.length === 0
        ? ""
        : `; left behind: ${truth.leftBehind.join(", ")}`
    }`,
  );
  return truth;
}

/** The state of one run of {@linkcode assertStatusTruth}. */
class Context {
  denials = 0;
  readonly #kcp: KcpApi;
  readonly #workspaces: readonly string[];
  readonly #namespace: string;
  readonly #timeoutMs: number;
  readonly #id: string;
  #serial = 0;
  /** Objects created, in creation order. */
  readonly #created: Created[] = [];
  /** Workspaces in which the check created its namespace. */
  readonly #namespaces = new Set<string>();
  /** Workspaces whose namespace is known to exist. */
  readonly #ready = new Set<string>();
  readonly #clusters = new Map<string, Promise<string | undefined>>();

  constructor(
    kcp: KcpApi,
    options: {
      workspaces: readonly string[];
      namespace: string;
      timeoutMs: number;
      id: string;
    },
  ) {
    this.#kcp = kcp;
    this.#workspaces = options.workspaces;
    this.#namespace = options.namespace;
    this.#timeoutMs = options.timeoutMs;
    this.#id = options.id;
  }

  /** Proves an Enforced rule, dependency by dependency. */
  async proveRule(found: Found, everywhere: boolean): Promise<void> {
    const { workspace: home, object } = found;
    const spec = object.spec as unknown as RuleSpec;
    const name = `DependencyRule ${object.metadata.name} in ${home}`;
    const candidates = [...new Set([home, ...this.#workspaces])];
    const dependentExport = { path: home, name: spec.dependent.apiExportName };
    for (const [index, dependency] of spec.dependencies.entries()) {
      const places: {
        workspace: string;
        dependent: Served;
        protectedType: Served;
      }[] = [];
      for (const workspace of candidates) {
        const dependent = await this.#boundType(
          workspace,
          spec.dependent,
          dependentExport,
        );
        const protectedType = await this.#boundType(
          workspace,
          dependency,
          dependency.apiExportRef,
        );
        if (dependent && protectedType) {
          places.push({ workspace, dependent, protectedType });
          if (!everywhere) break;
        }
      }
      const what = `its dependency ${index} (${
        kubectlType(dependency)
      } at ${dependency.fieldRef.path})`;
      assert.ok(
        places.length > 0,
        `${name} says Ready=True Enforced, but ${what} cannot be proven: no workspace of [${
          candidates.join(", ")
        }] binds both ${kubectlType(spec.dependent)} from ${
          exportShown(dependentExport)
        } and ${kubectlType(dependency)} from ${
          exportShown(dependency.apiExportRef)
        }`,
      );
      for (const place of places) {
        const { dependent, protectedType, workspace } = place;
        if (
          !dependent.namespaced && protectedType.namespaced &&
          dependency.fieldRef.namespacePath === undefined
        ) {
          assert.fail(
            `${name} says Ready=True Enforced, but ${what} cannot protect anything: its dependent ${dependent.kind} is cluster-scoped and names no namespace (no fieldRef.namespacePath), while ${
              kubectlType(dependency)
            } is namespaced`,
          );
        }
        const namespace = this.#namespace;
        const n = this.#serial++;
        const protectedName = `truth-${this.#id}-${n}`;
        if (protectedType.namespaced || dependent.namespaced) {
          await this.#ensureNamespace(workspace);
        }
        const protectedObject = {
          apiVersion: apiVersion(dependency),
          kind: protectedType.kind,
          metadata: {
            name: protectedName,
            ...(protectedType.namespaced ? { namespace } : {}),
          },
        };
        const dependentObject: Record<string, unknown> = {
          apiVersion: apiVersion(spec.dependent),
          kind: dependent.kind,
          metadata: {
            name: `${protectedName}-dependent`,
            ...(dependent.namespaced ? { namespace } : {}),
          },
        };
        setAtPath(dependentObject, dependency.fieldRef.path, protectedName);
        if (
          dependency.fieldRef.namespacePath !== undefined &&
          protectedType.namespaced
        ) {
          setAtPath(
            dependentObject,
            dependency.fieldRef.namespacePath,
            namespace,
          );
        }
        // A rule may read the name from the dependent's own metadata.
        const dependentName =
          (dependentObject.metadata as { name: string }).name;
        await applyObjects(this.#kcp, workspace, [protectedObject]);
        this.#created.push({
          role: "protected",
          workspace,
          type: kubectlType(dependency),
          name: protectedName,
          ...(protectedType.namespaced ? { namespace } : {}),
        });
        await applyObjects(this.#kcp, workspace, [dependentObject]);
        this.#created.push({
          role: "dependent",
          workspace,
          type: kubectlType(spec.dependent),
          name: dependentName,
          ...(dependent.namespaced ? { namespace } : {}),
        });
        // The dependent goes by its name alone in the protected object's
        // namespace, else as <namespace>/<name>.
        const blocker = new RegExp(
          `still referenced by (.*, )?${escape(dependent.kind)}/(${
            escape(namespace)
          }/)?${escape(dependentName)} \\(`,
        );
        await this.#denied(
          workspace,
          [
            "delete",
            kubectlType(dependency),
            protectedName,
            ...(protectedType.namespaced ? ["-n", namespace] : []),
            "--dry-run=server",
          ],
          blocker,
          `${name} says Ready=True Enforced, but ${what} does not hold ${
            kubectlType(dependency)
          }/${protectedName} in ${workspace} while ${dependent.kind}/${dependentName} names it`,
        );
      }
    }
  }

  /**
   * Proves an Enforced Lock in its workspace: its target (reused, or
   * created empty in the Lock's namespace); a dry-run delete (or, for a
   * Lock on updates only, update) of it must be denied by the Lock.
   */
  async proveLock(found: Found): Promise<void> {
    const { workspace, object } = found;
    const spec = object.spec as unknown as LockSpec;
    const { target } = spec;
    const lockNamespace = object.metadata.namespace!;
    const lockName = object.metadata.name;
    const name = `Lock ${lockNamespace}/${lockName} in ${workspace}`;
    const isNamespace = target.group === "" && target.resource === "namespaces";
    const type = kubectlType(target);
    const exists = await this.#kcp.kubectl(
      ["get", type, target.name, ...(isNamespace ? [] : ["-n", lockNamespace])],
      { workspace },
    );
    let namespaced = !isNamespace;
    if (exists.code !== 0) {
      assert.match(
        exists.stderr,
        /NotFound|not found/,
        `${name}: reading its target ${type}/${target.name}`,
      );
      const served = await discover(this.#kcp, workspace, target);
      assert.ok(
        served,
        `${name} says Ready=True Enforced, but its workspace does not serve ${type}`,
      );
      namespaced = served.namespaced;
      await applyObjects(this.#kcp, workspace, [{
        apiVersion: apiVersion(target),
        kind: served.kind,
        metadata: {
          name: target.name,
          ...(served.namespaced ? { namespace: lockNamespace } : {}),
        },
      }]);
      this.#created.push({
        role: "lock target",
        workspace,
        type,
        name: target.name,
        ...(served.namespaced ? { namespace: lockNamespace } : {}),
      });
    }
    const scope = namespaced ? ["-n", lockNamespace] : [];
    const operations = spec.operations ?? ["Delete"];
    const args = operations.includes("Delete")
      ? ["delete", type, target.name, ...scope, "--dry-run=server"]
      : [
        "label",
        type,
        target.name,
        ...scope,
        `status-truth=${crypto.randomUUID().slice(0, 8)}`,
        "--overwrite",
        "--dry-run=server",
      ];
    const lock = `Lock ${escape(`${lockNamespace}/${lockName}`)} \\(`;
    await this.#denied(
      workspace,
      args,
      new RegExp(
        `locked by (.*, )?${lock}|locked by Lock .* and \\d+ more|a Lock may hold it`,
      ),
      `${name} says Ready=True Enforced, but ${type}/${target.name} is not held (${
        operations.includes("Delete") ? "delete" : "update"
      })`,
    );
  }

  /**
   * Deletes what the check created: dependents, then the protected objects
   * (polling: the webhook must let them go now), then its namespaces.
   */
  async cleanup(): Promise<void> {
    const of = (role: Created["role"]) =>
      this.#created.filter((c) => c.role === role);
    for (const c of of("dependent")) {
      await this.#kcp.kubectlOk(["delete", ...this.#target(c)], {
        workspace: c.workspace,
      });
      c.deleted = true;
    }
    for (const c of of("protected")) {
      let last = "";
      await waitFor(
        `${c.type}/${c.name} in ${c.workspace} to be deletable once its dependent is gone`,
        async () => {
          const r = await this.#kcp.kubectl(
            ["delete", ...this.#target(c), "--ignore-not-found"],
            { workspace: c.workspace },
          );
          last = r.stderr.trim();
          return r.code === 0 || undefined;
        },
        { timeoutMs: this.#timeoutMs, intervalMs: 500 },
      ).catch((error: Error) => {
        assert.fail(`${error.message}; last answer: ${last}`);
      });
      c.deleted = true;
    }
    for (const workspace of this.#namespaces) {
      await this.#kcp.kubectlOk(
        ["delete", "namespace", this.#namespace, "--wait=false"],
        { workspace },
      );
      await waitFor(
        `namespace ${this.#namespace} in ${workspace} to be gone`,
        async () => {
          const r = await this.#kcp.kubectl(
            ["get", "namespace", this.#namespace],
            { workspace },
          );
          return /NotFound|not found/.test(r.stderr) || undefined;
        },
        { timeoutMs: this.#timeoutMs * 2, intervalMs: 500 },
      );
    }
  }

  /** What the check created and did not delete. */
  leftBehind(): string[] {
    return this.#created.filter((c) => !c.deleted).map((c) =>
      `${c.workspace}: ${c.type}/${
        c.namespace === undefined ? "" : `${c.namespace}/`
      }${c.name}`
    );
  }

  #target(c: Created): string[] {
    return [
      c.type,
      c.name,
      ...(c.namespace === undefined ? [] : ["-n", c.namespace]),
    ];
  }

  /**
   * Polls `args` (a dry run) until kubectl fails with a 409 Conflict whose
   * message matches `expected`; anything else (allowed, a 503, another
   * denial) is not proof. Fails with `lie` and the last answer otherwise.
   */
  async #denied(
    workspace: string,
    args: string[],
    expected: RegExp,
    lie: string,
  ): Promise<void> {
    let last = "no answer";
    try {
      await waitFor(
        `kubectl ${args.join(" ")} in ${workspace} to be denied`,
        async () => {
          const r = await this.#kcp.kubectl(args, { workspace });
          last = r.code === 0
            ? `allowed: ${r.stdout.trim()}`
            : `exit ${r.code}: ${r.stderr.trim()}`;
          return r.code !== 0 && /\(Conflict\)/.test(r.stderr) &&
              !/ServiceUnavailable|\b503\b/.test(r.stderr) &&
              expected.test(r.stderr) || undefined;
        },
        { timeoutMs: this.#timeoutMs, intervalMs: 250 },
      );
    } catch {
      assert.fail(
        `${lie}: kubectl ${
          args.join(" ")
        } was not denied within ${this.#timeoutMs} ms; last answer: ${last}`,
      );
    }
    this.denials++;
  }

  /** Creates the check's namespace in `workspace` unless it exists. */
  async #ensureNamespace(workspace: string): Promise<void> {
    if (this.#ready.has(workspace)) return;
    const r = await this.#kcp.kubectl(["get", "namespace", this.#namespace], {
      workspace,
    });
    if (r.code !== 0) {
      await this.#kcp.kubectlOk(["create", "namespace", this.#namespace], {
        workspace,
      });
      this.#namespaces.add(workspace);
    }
    this.#ready.add(workspace);
  }

  /**
   * What discovery in `workspace` says of `type`, if it is served there
   * through an APIBinding to `from`.
   */
  async #boundType(
    workspace: string,
    type: TypeRef,
    from: ExportRef,
  ): Promise<Served | undefined> {
    const served = await discover(this.#kcp, workspace, type);
    if (served === undefined) return undefined;
    const list = await this.#kcp.request<{ items: Binding[] }>(
      "GET",
      `/clusters/${workspace}/apis/apis.kcp.io/v1alpha2/apibindings`,
    ).catch((error) => {
      if (error instanceof KcpRequestError && error.status === 404) {
        return { items: [] };
      }
      throw error;
    });
    for (const binding of list.items) {
      const bound = (binding.status?.boundResources ?? []).some((b) =>
        b.group === type.group && b.resource === type.resource
      );
      if (!bound) continue;
      const exported = binding.spec?.reference?.export;
      if (exported?.name !== from.name) return undefined;
      const path = exported.path || workspace;
      if (path === from.path) return served;
      const [a, b] = await Promise.all([
        this.#clusterOf(path),
        this.#clusterOf(from.path),
      ]);
      return a !== undefined && a === b ? served : undefined;
    }
    return undefined;
  }

  /** The logical cluster name of a workspace path (or cluster name). */
  #clusterOf(path: string): Promise<string | undefined> {
    let cluster = this.#clusters.get(path);
    if (cluster === undefined) {
      cluster = this.#kcp.request<
        { metadata?: { annotations?: Record<string, string> } }
      >(
        "GET",
        `/clusters/${path}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`,
      ).then(
        (lc) => lc.metadata?.annotations?.["kcp.io/cluster"],
        () => undefined,
      );
      this.#clusters.set(path, cluster);
    }
    return cluster;
  }
}

interface Binding {
  spec?: { reference?: { export?: { path?: string; name?: string } } };
  status?: { boundResources?: { group: string; resource: string }[] };
}

/** `<resource>.<group>`, or `<resource>` for core: what kubectl takes. */
function kubectlType(t: { group: string; resource: string }): string {
  return t.group === "" ? t.resource : `${t.resource}.${t.group}`;
}

function apiVersion(t: { group: string; version: string }): string {
  return t.group === "" ? t.version : `${t.group}/${t.version}`;
}

function exportShown(ref: ExportRef): string {
  return `APIExport ${ref.path}/${ref.name}`;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

function readyOf(object: StatusObject): Condition | undefined {
  return object.status?.conditions?.find((c) => c.type === "Ready");
}

function isEnforced(object: StatusObject): boolean {
  const ready = readyOf(object);
  return ready?.status === "True" && ready.reason === "Enforced";
}

/** Whether the status speaks of the object's current generation. */
function isCurrent(object: StatusObject): boolean {
  const generation = object.metadata.generation;
  const observed = readyOf(object)?.observedGeneration ??
    object.status?.observedGeneration;
  return generation === undefined || observed === undefined ||
    observed === generation;
}

function where({ workspace, object }: Found): string {
  return `${workspace}/${
    object.metadata.namespace === undefined
      ? ""
      : `${object.metadata.namespace}/`
  }${object.metadata.name}`;
}

function shown(list: readonly Found[]): string {
  return list.length === 0
    ? "none"
    : list.map((f) =>
      `${where(f)} (${readyOf(f.object)?.status ?? "no status"}/${
        readyOf(f.object)?.reason ?? "-"
      })`
    ).join(", ");
}

/** What kubectl says of a workspace that does not serve a type. */
const NOT_SERVED = /doesn't have a resource type/;

/** Whether a kubectl run failed for another reason than {@linkcode NOT_SERVED}. */
function failedOtherwise(r: { code: number; stderr: string }): boolean {
  return r.code !== 0 && !NOT_SERVED.test(r.stderr);
}

/**
 * Every DependencyRule (`dependencyrules`) or Lock (`locks`) in the
 * workspaces, with the workspace it is in; a workspace that does not serve
 * the type holds none.
 */
async function listAll(
  kcp: KcpApi,
  workspaces: readonly string[],
  resource: "dependencyrules" | "locks",
): Promise<Found[]> {
  const found: Found[] = [];
  for (const workspace of workspaces) {
    // kubectl's discovery can fail for a moment on a loaded kcp (a group
    // briefly unavailable): asked again up to three times.
    let r = await kcp.kubectl(["get", resource, "-A", "-o", "json"], {
      workspace,
    });
    for (let retry = 0; retry < 3 && failedOtherwise(r); retry++) {
      await delay(500);
      r = await kcp.kubectl(["get", resource, "-A", "-o", "json"], {
        workspace,
      });
    }
    if (r.code !== 0) {
      assert.match(
        r.stderr,
        NOT_SERVED,
        `listing ${resource} in ${workspace}: ${r.stderr}`,
      );
      continue;
    }
    const list = JSON.parse(r.stdout) as { items: StatusObject[] };
    for (const object of list.items) {
      found.push({ workspace, resource, object });
    }
  }
  return found;
}

/** What discovery in `workspace` says of a type: its kind and scope, if served. */
async function discover(
  kcp: KcpApi,
  workspace: string,
  type: TypeRef,
): Promise<Served | undefined> {
  const path = type.group === ""
    ? `/clusters/${workspace}/api/${type.version}`
    : `/clusters/${workspace}/apis/${type.group}/${type.version}`;
  try {
    const list = await kcp.request<{
      resources: { name: string; kind: string; namespaced: boolean }[];
    }>("GET", path);
    const found = list.resources.find((r) => r.name === type.resource);
    return found === undefined
      ? undefined
      : { kind: found.kind, namespaced: found.namespaced };
  } catch (error) {
    if (error instanceof KcpRequestError && error.status === 404) {
      return undefined;
    }
    throw error;
  }
}

/**
 * Sets the string at a rule's field path in `object`, creating objects and
 * one-element lists for `[*]` on the way (an existing list's first element
 * is reused, so a namespace path lands beside its name).
 */
function setAtPath(
  object: Record<string, unknown>,
  path: string,
  value: string,
): void {
  const segments = path.replace(/^\./, "").split(".");
  let node = object;
  segments.forEach((segment, i) => {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)((?:\[\*\])*)$/.exec(segment);
    assert.ok(match, `unexpected field path segment ${segment} in ${path}`);
    const key = match[1]!;
    const lists = match[2]!.length / 3;
    const last = i === segments.length - 1;
    if (lists === 0) {
      if (last) node[key] = value;
      else {
        node[key] ??= {};
        node = node[key] as Record<string, unknown>;
      }
      return;
    }
    let list = (node[key] ??= []) as unknown[];
    for (let l = 1; l < lists; l++) list = (list[0] ??= []) as unknown[];
    if (last) list[0] = value;
    else node = (list[0] ??= {}) as Record<string, unknown>;
  });
}
