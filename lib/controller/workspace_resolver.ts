/**
 * Resolves kcp workspace paths (`root:org:team`) to logical cluster names,
 * one parent at a time: `root` is the logical cluster `root`, and each
 * further segment is a Workspace in its parent's logical cluster whose
 * `spec.cluster` names the next logical cluster.
 *
 * Answers are cached per path prefix, concurrent resolutions share their
 * requests, and failures are not cached.
 *
 * @module
 */
import {
  clusterUrl,
  isLogicalClusterName,
  isWorkspacePath,
  KubeApiError,
  type KubeClient,
  splitWorkspacePath,
} from "../kcp/mod.ts";
import { errorText } from "../runtime/mod.ts";

/** Why a workspace path could not be resolved. */
export type ResolutionFailure =
  | "NotFound"
  | "Forbidden"
  | "NotReady"
  | "Unavailable";

/** A workspace path that could not be resolved, with a message for the operator. */
export class WorkspaceResolutionError extends Error {
  /**
   * The workspace path that failed. This is the path asked for, or one of
   * its ancestors when resolution stopped above it.
   */
  readonly path: string;
  /** Why it failed. */
  readonly reason: ResolutionFailure;

  /** Builds the error. */
  constructor(
    message: string,
    options: { path: string; reason: ResolutionFailure; cause?: unknown },
  ) {
    super(message, { cause: options.cause });
    this.name = "WorkspaceResolutionError";
    this.path = options.path;
    this.reason = options.reason;
  }
}

/** Options for {@linkcode WorkspaceResolver}. */
export interface WorkspaceResolverOptions {
  /** Client allowed to read workspaces in `root` and every parent workspace. */
  client: KubeClient;
  /** Front-proxy base URL, without `/clusters/...`. */
  base: string;
  /** How long a resolved prefix stays cached, in milliseconds. @default {60_000} */
  maxAgeMs?: number;
  /** The clock, in milliseconds (for tests). @default {Date.now} */
  now?: () => number;
}

/** Options of one {@linkcode WorkspaceResolver.resolve} call. */
export interface ResolveOptions {
  /** Stops waiting; the call then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** The fields of a Workspace the resolver reads. */
interface WorkspaceObject {
  spec?: { cluster?: unknown };
  status?: { phase?: unknown };
}

/** A resolved prefix. */
interface CacheEntry {
  /** Its logical cluster name. */
  cluster: string;
  /** When it was fetched, by the resolver's clock. */
  fetchedAt: number;
  /** Store order, to tell entries cached before a resolution from those it fetched. */
  sequence: number;
}

/** The resolution of one prefix under way, shared by everyone asking for it. */
interface Flight {
  /** Its answer. */
  promise: Promise<string>;
  /** Aborts its requests; used once nobody waits for it any more. */
  controller: AbortController;
  /** How many callers (and child resolutions) are waiting for it. */
  waiters: number;
}

/**
 * Resolves workspace paths to logical cluster names through the kcp
 * front-proxy.
 *
 * @example Usage
 * ```ts ignore
 * import { WorkspaceResolver } from "./workspace_resolver.ts";
 * const resolver = new WorkspaceResolver({ client, base: "https://kcp.example:6443" });
 * const cluster = await resolver.resolve("root:org:team");
 * ```
 */
export class WorkspaceResolver {
  readonly #client: KubeClient;
  readonly #base: string;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, CacheEntry>();
  readonly #flights = new Map<string, Flight>();
  #sequence = 0;

  /**
   * Builds a resolver; it makes no request until asked.
   *
   * @throws {RangeError} If `maxAgeMs` is negative or not a number.
   */
  constructor(options: WorkspaceResolverOptions) {
    const maxAgeMs = options.maxAgeMs ?? 60_000;
    if (!(maxAgeMs >= 0)) {
      throw new RangeError(
        `Cannot use maxAgeMs as it must be zero or more: current value is ${maxAgeMs}`,
      );
    }
    this.#client = options.client;
    this.#base = options.base;
    this.#maxAgeMs = maxAgeMs;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Resolves a workspace path such as `root:org:team` to its logical cluster
   * name. A path whose first segment is not `root` starts at the logical
   * cluster of that name; a one-segment path is its own name.
   *
   * Every resolved prefix is cached for `maxAgeMs`; concurrent calls for the
   * same prefix share one request; failures are not cached. When a request
   * under a cached parent answers NotFound or Forbidden, the cached
   * ancestors are dropped and the chain is read again once, since that is
   * what a deleted and recreated ancestor looks like.
   *
   * @throws {WorkspaceResolutionError} When a workspace on the way is missing, not readable, not ready, or the API is unavailable.
   * @throws {TypeError} If `path` is not a workspace path.
   * @throws {unknown} The signal's reason when `signal` aborts.
   */
  resolve(path: string, options: ResolveOptions = {}): Promise<string> {
    if (!isWorkspacePath(path)) {
      return Promise.reject(
        new TypeError(
          `Cannot resolve workspace path: current value is '${path}'`,
        ),
      );
    }
    return this.#resolve(path, options.signal);
  }

  /**
   * Forgets `path` and every path below it, cached or being resolved. Call
   * it when the logical cluster `path` named turned out to be gone, e.g. the
   * workspace was deleted and recreated under the same name.
   */
  invalidate(path: string): void {
    for (const key of [...this.#cache.keys()]) {
      if (isSameOrBelow(key, path)) this.#cache.delete(key);
    }
    for (const key of [...this.#flights.keys()]) {
      if (isSameOrBelow(key, path)) this.#flights.delete(key);
    }
  }

  async #resolve(
    path: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    signal?.throwIfAborted();
    const split = splitWorkspacePath(path);
    // `root`, or a path rooted at a logical cluster: the segment is the name.
    if (split === undefined) return path;
    const cached = this.#cached(path);
    if (cached !== undefined) return cached;
    const flight = this.#flights.get(path) ?? this.#start(path, split);
    flight.waiters++;
    try {
      return await untilAborted(flight.promise, signal);
    } finally {
      flight.waiters--;
      if (flight.waiters === 0 && signal?.aborted) {
        // Nobody waits any more: stop its requests, and let the next caller
        // start afresh rather than join a flight that is failing.
        if (this.#flights.get(path) === flight) this.#flights.delete(path);
        flight.controller.abort();
      }
    }
  }

  /**
   * The cached cluster of `path`, if fresh. An expired entry stays until it
   * is replaced, so that {@linkcode WorkspaceResolver.#store} can tell
   * whether the cluster changed.
   */
  #cached(path: string): string | undefined {
    const entry = this.#cache.get(path);
    if (entry === undefined) return undefined;
    if (this.#now() - entry.fetchedAt >= this.#maxAgeMs) return undefined;
    return entry.cluster;
  }

  #start(path: string, split: { parent: string; name: string }): Flight {
    const controller = new AbortController();
    const flight: Flight = {
      promise: this.#fly(path, split, controller),
      controller,
      waiters: 0,
    };
    // Waiters see failures; a flight nobody waits for any more (all of them
    // aborted) still rejects, and that must not be an unhandled rejection.
    flight.promise.catch(() => {});
    this.#flights.set(path, flight);
    return flight;
  }

  /** Resolves one prefix and caches it, unless it was invalidated meanwhile. */
  async #fly(
    path: string,
    split: { parent: string; name: string },
    controller: AbortController,
  ): Promise<string> {
    const startedAfter = this.#sequence;
    try {
      const cluster = await this.#fetchLevel(
        path,
        split,
        controller.signal,
        startedAfter,
      );
      if (this.#flights.get(path)?.controller === controller) {
        this.#store(path, cluster);
      }
      return cluster;
    } finally {
      if (this.#flights.get(path)?.controller === controller) {
        this.#flights.delete(path);
      }
    }
  }

  async #fetchLevel(
    path: string,
    split: { parent: string; name: string },
    signal: AbortSignal,
    startedAfter: number,
  ): Promise<string> {
    const parentCluster = await this.#resolve(split.parent, signal);
    try {
      return await this.#fetchWorkspace(path, split, parentCluster, signal);
    } catch (error) {
      if (!this.#parentMayBeStale(error, split.parent, startedAfter)) {
        throw error;
      }
      this.#forgetAncestors(path, startedAfter);
      const again = await this.#resolve(split.parent, signal);
      if (again === parentCluster) throw error;
      return await this.#fetchWorkspace(path, split, again, signal);
    }
  }

  /**
   * Whether `error` may come from a stale cached parent: NotFound or
   * Forbidden (what a logical cluster that is gone answers) while the
   * parent's cluster came from the cache, stored before sequence number
   * `startedAfter`.
   */
  #parentMayBeStale(
    error: unknown,
    parent: string,
    startedAfter: number,
  ): boolean {
    if (
      !(error instanceof WorkspaceResolutionError) ||
      (error.reason !== "NotFound" && error.reason !== "Forbidden")
    ) {
      return false;
    }
    const entry = this.#cache.get(parent);
    return entry !== undefined && entry.sequence <= startedAfter;
  }

  /** Drops the cached ancestors of `path` stored before sequence number `startedAfter`. */
  #forgetAncestors(path: string, startedAfter: number): void {
    let ancestor = splitWorkspacePath(path);
    while (ancestor !== undefined) {
      const entry = this.#cache.get(ancestor.parent);
      if (entry !== undefined && entry.sequence <= startedAfter) {
        this.#cache.delete(ancestor.parent);
      }
      ancestor = splitWorkspacePath(ancestor.parent);
    }
  }

  #store(path: string, cluster: string): void {
    const previous = this.#cache.get(path);
    // A new logical cluster under the same path: everything cached below
    // it named clusters inside the old one.
    if (previous !== undefined && previous.cluster !== cluster) {
      this.invalidate(path);
    }
    this.#sequence++;
    this.#cache.set(path, {
      cluster,
      fetchedAt: this.#now(),
      sequence: this.#sequence,
    });
  }

  async #fetchWorkspace(
    path: string,
    split: { parent: string; name: string },
    parentCluster: string,
    signal: AbortSignal,
  ): Promise<string> {
    const url = `${
      clusterUrl(this.#base, parentCluster)
    }/apis/tenancy.kcp.io/v1alpha1/workspaces/${split.name}`;
    let workspace: WorkspaceObject | undefined;
    try {
      workspace = await this.#client.get<WorkspaceObject | undefined>(url, {
        signal,
      });
    } catch (error) {
      throw requestFailure(path, split, error);
    }
    const cluster = workspace?.spec?.cluster;
    const phase = workspace?.status?.phase;
    if (cluster === undefined || cluster === "" || phase !== "Ready") {
      throw new WorkspaceResolutionError(
        `workspace ${path} is not ready yet (${
          phase === "Ready"
            ? "phase Ready but no spec.cluster"
            : `phase ${typeof phase === "string" ? phase : "not set"}`
        })`,
        { path, reason: "NotReady" },
      );
    }
    if (typeof cluster !== "string" || !isLogicalClusterName(cluster)) {
      throw new WorkspaceResolutionError(
        `cannot resolve workspace ${path}: its spec.cluster is not a logical cluster name: current value is ${
          JSON.stringify(cluster)
        }`,
        { path, reason: "Unavailable" },
      );
    }
    return cluster;
  }
}

/** Turns a failed GET of workspace `path` in its parent into a resolution error. */
function requestFailure(
  path: string,
  split: { parent: string; name: string },
  error: unknown,
): WorkspaceResolutionError {
  if (error instanceof KubeApiError && error.notFound) {
    return new WorkspaceResolutionError(
      `workspace ${path} not found: ${split.parent} has no workspace "${split.name}"`,
      { path, reason: "NotFound", cause: error },
    );
  }
  if (
    error instanceof KubeApiError &&
    (error.status === 401 || error.status === 403)
  ) {
    return new WorkspaceResolutionError(
      `cannot read workspaces in ${split.parent}: the controller needs get on tenancy.kcp.io workspaces and system:kcp:workspace:access there (apply manifests/kcp/workspace-reader in root and every parent of a provider workspace)`,
      { path, reason: "Forbidden", cause: error },
    );
  }
  return new WorkspaceResolutionError(
    `cannot resolve workspace ${path}: reading it in ${split.parent} failed: ${
      errorText(error)
    }`,
    { path, reason: "Unavailable", cause: error },
  );
}

/** Whether workspace path `key` is `path` or lies below it. */
function isSameOrBelow(key: string, path: string): boolean {
  return key === path || key.startsWith(`${path}:`);
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts. */
function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", onAbort)
    );
  });
}
