/**
 * The state of one run of `assertStatusTruth` (`status_truth.ts`): where a
 * rule's proof can be placed (a workspace that binds both of its types from
 * the exports it names), names for what a proof creates, the denial every
 * proof waits for, and the cleanup afterwards. Internal to
 * `status_truth.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { applyObjects } from "./apis.ts";
import { type KcpApi, KcpRequestError } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";
import {
  discover,
  type ExportRef,
  exportShown,
  type Found,
  kubectlType,
  type RuleSpec,
  type Served,
  type SpecDependency,
  type TypeRef,
} from "./_status_truth_shared.ts";

/** Something a proof created, to delete afterwards. */
export interface Created {
  /**
   * What it is to the proof: deleted in this order, `dependent` and `owner`
   * first, then `protected` (which must be deletable then); a `lock target`
   * stays, its Lock holds it.
   */
  role: "dependent" | "owner" | "protected" | "lock target";
  /** The workspace it is in. */
  workspace: string;
  /** Its type, as kubectl takes it. */
  type: string;
  /** Its name. */
  name: string;
  /** Its namespace, if namespaced. */
  namespace?: string;
  /** Set once deleted. */
  deleted?: boolean;
}

/** Where one dependency of a rule is proven, and what its types are there. */
export interface Place {
  /** The workspace. */
  workspace: string;
  /** The rule's dependent type there. */
  dependent: Served;
  /** The dependency's protected type there. */
  protectedType: Served;
}

/** Options of a {@linkcode ProofContext}. */
export interface ProofContextOptions {
  /** The workspaces checked, in which proofs may be placed. */
  workspaces: readonly string[];
  /** The namespace namespaced proofs share. */
  namespace: string;
  /** How long each denial (and each wait) may take. */
  timeoutMs: number;
  /** What the names of this run start with, after `truth-`. */
  id: string;
  /** Proves in every workspace that binds both types, not only the first. */
  everywhere: boolean;
  /** Per rule (`<workspace>/<name>`), fields of the objects of its dependent type. */
  whenFields: Readonly<Record<string, Record<string, unknown>>>;
}

/** The state of one run of `assertStatusTruth`. */
export class ProofContext {
  /** Denials observed. */
  denials = 0;
  /** The kcp. */
  readonly kcp: KcpApi;
  /** The namespace namespaced proofs share. */
  readonly namespace: string;
  /** How long each denial (and each wait) may take. */
  readonly timeoutMs: number;
  /** Per rule, fields of the objects of its dependent type. */
  readonly whenFields: Readonly<Record<string, Record<string, unknown>>>;
  readonly #workspaces: readonly string[];
  readonly #everywhere: boolean;
  readonly #id: string;
  #serial = 0;
  /** Objects created, in creation order. */
  readonly #created: Created[] = [];
  /** Namespaces the check created, as `[workspace, name]`. */
  readonly #namespaces: [string, string][] = [];
  /** Workspaces whose shared namespace is known to exist. */
  readonly #ready = new Set<string>();
  readonly #clusters = new Map<string, Promise<string | undefined>>();

  /** A run on `kcp`. */
  constructor(kcp: KcpApi, options: ProofContextOptions) {
    this.kcp = kcp;
    this.namespace = options.namespace;
    this.timeoutMs = options.timeoutMs;
    this.whenFields = options.whenFields;
    this.#workspaces = options.workspaces;
    this.#everywhere = options.everywhere;
    this.#id = options.id;
  }

  /** A fresh name for a proof: `truth-<id>-<n>`. */
  nextName(): string {
    return `truth-${this.#id}-${this.#serial++}`;
  }

  /**
   * The workspaces in which a rule's dependency can be proven: those that
   * bind the rule's dependent type from the rule's own export and the
   * protected type from the dependency's `apiExportRef`, the rule's own
   * workspace tried first; the first only, unless `everywhere`. Fails,
   * naming the rule, if there is none.
   */
  async places(
    found: Found,
    dependency: SpecDependency,
    what: string,
  ): Promise<Place[]> {
    const { workspace: home, object } = found;
    const spec = object.spec as unknown as RuleSpec;
    const candidates = [...new Set([home, ...this.#workspaces])];
    const dependentExport = { path: home, name: spec.dependent.apiExportName };
    const places: Place[] = [];
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
        if (!this.#everywhere) break;
      }
    }
    assert.ok(
      places.length > 0,
      `${
        ruleShown(found)
      } says Ready=True Enforced, but ${what} cannot be proven: no workspace of [${
        candidates.join(", ")
      }] binds both ${kubectlType(spec.dependent)} from ${
        exportShown(dependentExport)
      } and ${kubectlType(dependency)} from ${
        exportShown(dependency.apiExportRef)
      }`,
    );
    return places;
  }

  /** Applies `object` in `workspace` and records it as `created` for cleanup. */
  async create(
    workspace: string,
    object: Record<string, unknown>,
    created: Omit<Created, "workspace" | "deleted">,
  ): Promise<void> {
    await applyObjects(this.kcp, workspace, [object]);
    this.#created.push({ ...created, workspace });
  }

  /** Creates the shared namespace in `workspace` unless it exists. */
  async ensureNamespace(workspace: string): Promise<void> {
    if (this.#ready.has(workspace)) return;
    const r = await this.kcp.kubectl(["get", "namespace", this.namespace], {
      workspace,
    });
    if (r.code !== 0) {
      await this.kcp.kubectlOk(["create", "namespace", this.namespace], {
        workspace,
      });
      this.#namespaces.push([workspace, this.namespace]);
    }
    this.#ready.add(workspace);
  }

  /** Creates a namespace of one proof (`object`, a Namespace) in `workspace`. */
  async createNamespace(
    workspace: string,
    object: { metadata: { name: string } } & Record<string, unknown>,
  ): Promise<void> {
    await applyObjects(this.kcp, workspace, [object]);
    this.#namespaces.push([workspace, object.metadata.name]);
  }

  /**
   * Polls `args` (a dry run) until kubectl fails with a 409 Conflict whose
   * message matches `expected`; anything else (allowed, a 503, another
   * denial) is not proof. Fails with `lie` and the last answer otherwise.
   */
  async denied(
    workspace: string,
    args: string[],
    expected: { message: RegExp; lie: string },
  ): Promise<void> {
    let last = "no answer";
    try {
      await waitFor(
        `kubectl ${args.join(" ")} in ${workspace} to be denied`,
        async () => {
          const r = await this.kcp.kubectl(args, { workspace });
          last = r.code === 0
            ? `allowed: ${r.stdout.trim()}`
            : `exit ${r.code}: ${r.stderr.trim()}`;
          return r.code !== 0 && /\(Conflict\)/.test(r.stderr) &&
              !/ServiceUnavailable|\b503\b/.test(r.stderr) &&
              expected.message.test(r.stderr) || undefined;
        },
        { timeoutMs: this.timeoutMs, intervalMs: 250 },
      );
    } catch {
      assert.fail(
        `${expected.lie}: kubectl ${
          args.join(" ")
        } was not denied within ${this.timeoutMs} ms; last answer: ${last}`,
      );
    }
    this.denials++;
  }

  /**
   * Deletes what the check created: dependents and owners, then the
   * protected objects (polling: the webhook must let them go now), then its
   * namespaces.
   */
  async cleanup(): Promise<void> {
    const of = (role: Created["role"]) =>
      this.#created.filter((c) => c.role === role);
    for (const c of [...of("dependent"), ...of("owner")]) {
      // An owner's delete (background) may take what it owns with it.
      await this.kcp.kubectlOk(
        ["delete", ...target(c), "--ignore-not-found"],
        { workspace: c.workspace },
      );
      c.deleted = true;
    }
    for (const c of of("protected")) {
      let last = "";
      await waitFor(
        `${c.type}/${c.name} in ${c.workspace} to be deletable once what held it is gone`,
        async () => {
          const r = await this.kcp.kubectl(
            ["delete", ...target(c), "--ignore-not-found"],
            { workspace: c.workspace },
          );
          last = r.stderr.trim();
          return r.code === 0 || undefined;
        },
        { timeoutMs: this.timeoutMs, intervalMs: 500 },
      ).catch((error: Error) => {
        assert.fail(`${error.message}; last answer: ${last}`);
      });
      c.deleted = true;
    }
    for (const [workspace, name] of this.#namespaces) {
      await this.kcp.kubectlOk(
        ["delete", "namespace", name, "--wait=false"],
        { workspace },
      );
    }
    for (const [workspace, name] of this.#namespaces) {
      await waitFor(
        `namespace ${name} in ${workspace} to be gone`,
        async () => {
          const r = await this.kcp.kubectl(["get", "namespace", name], {
            workspace,
          });
          return /NotFound|not found/.test(r.stderr) || undefined;
        },
        { timeoutMs: this.timeoutMs * 2, intervalMs: 500 },
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

  /**
   * What discovery in `workspace` says of `type`, if it is served there
   * through an APIBinding to `from`.
   */
  async #boundType(
    workspace: string,
    type: TypeRef,
    from: ExportRef,
  ): Promise<Served | undefined> {
    const served = await discover(this.kcp, workspace, type);
    if (served === undefined) return undefined;
    const list = await this.kcp.request<{ items: Binding[] }>(
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
      cluster = this.kcp.request<
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

/** `DependencyRule <name> in <workspace>`. */
export function ruleShown(found: Found): string {
  return `DependencyRule ${found.object.metadata.name} in ${found.workspace}`;
}

interface Binding {
  spec?: { reference?: { export?: { path?: string; name?: string } } };
  status?: { boundResources?: { group: string; resource: string }[] };
}

/** `<type> <name> [-n <namespace>]`: a created object as kubectl names it. */
function target(c: Created): string[] {
  return [
    c.type,
    c.name,
    ...(c.namespace === undefined ? [] : ["-n", c.namespace]),
  ];
}
