/**
 * Locks across every workspace bound to the dep-ctrl APIExport, as the
 * webhook decides with them: one list+watch per virtual-workspace URL
 * (through {@linkcode ExportWatcher}), all valid Locks handed on after every
 * change. Invalid Locks are logged once per resource version and left out
 * (the controller reports them in their status).
 *
 * @module
 */
import {
  clusterOf,
  ExportWatcher,
  type KubeClient,
  type KubeObject,
  objectKey,
} from "../kcp/mod.ts";
import { GROUP, VERSION } from "../rules/mod.ts";
import type { BackoffOptions, Logger } from "../runtime/mod.ts";
import { LOCK_PLURAL, parseLock } from "./api.ts";
import type { ClusterLock } from "./lock_index.ts";

/** The Lock collection path below `/clusters/<cluster>`. */
export const LOCKS_PATH = `/apis/${GROUP}/${VERSION}/${LOCK_PLURAL}`;

/** What a {@linkcode LockWatcher} hands on after each change. */
export interface LockSnapshot {
  /** Every valid Lock from every endpoint. */
  locks: ClusterLock[];
  /** Whether the slice and every endpoint have been listed, so `locks` is complete. */
  synced: boolean;
}

/** Options for {@linkcode LockWatcher}. */
export interface LockWatcherOptions {
  /** Client for the dep-ctrl workspace and the virtual workspaces. */
  client: KubeClient;
  /** URL of the dep-ctrl workspace. */
  workspaceUrl: string;
  /** Name of the dep-ctrl APIExport (and of its endpoint slice). */
  apiExportName: string;
  /** Where to log. */
  log: Logger;
  /** Called after anything changed. */
  onChange: (snapshot: LockSnapshot) => void;
  /** Reconnect backoff of every list+watch. */
  backoff?: BackoffOptions;
}

/** Follows the Locks behind every endpoint of the dep-ctrl export. */
export class LockWatcher {
  readonly #options: LockWatcherOptions;
  readonly #watcher: ExportWatcher<"locks">;
  readonly #parsed = new WeakMap<KubeObject, ClusterLock | undefined>();
  #reported = new Set<string>();

  /** Builds the watcher; {@linkcode LockWatcher.start} runs it. */
  constructor(options: LockWatcherOptions) {
    this.#options = options;
    this.#watcher = new ExportWatcher({
      client: options.client,
      workspaceUrl: options.workspaceUrl,
      apiExportName: options.apiExportName,
      collections: { locks: { path: LOCKS_PATH } },
      log: options.log,
      onChange: () => options.onChange(this.snapshot()),
      ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
    });
  }

  /** Starts watching. */
  start(): void {
    this.#watcher.start();
  }

  /** Stops every list+watch and waits for them to end. */
  stop(): Promise<void> {
    return this.#watcher.stop();
  }

  /** List+watch loops retrying after an error. */
  failingWatches(): number {
    return this.#watcher.failingWatches();
  }

  /** Whether the Locks are complete (slice found, every endpoint listed). */
  get synced(): boolean {
    return this.#watcher.synced;
  }

  /** The current snapshot. */
  snapshot(): LockSnapshot {
    const locks: ClusterLock[] = [];
    const invalid = new Set<string>();
    for (const { object } of this.#watcher.items("locks")) {
      let parsed = this.#parsed.get(object);
      if (!this.#parsed.has(object)) {
        parsed = this.#parse(object);
        this.#parsed.set(object, parsed);
      }
      if (parsed !== undefined) locks.push(parsed);
      else invalid.add(this.#id(object));
    }
    this.#reported = new Set(
      [...this.#reported].filter((id) => invalid.has(id)),
    );
    return { locks, synced: this.synced };
  }

  #parse(object: KubeObject): ClusterLock | undefined {
    const result = parseLock(object);
    if (result.ok) return { cluster: clusterOf(object), lock: result.lock };
    const id = this.#id(object);
    if (!this.#reported.has(id)) {
      this.#reported.add(id);
      this.#options.log.warn("ignoring invalid Lock", {
        cluster: clusterOf(object),
        namespace: object.metadata?.namespace,
        name: object.metadata?.name,
        error: result.error,
      });
    }
    return undefined;
  }

  #id(object: KubeObject): string {
    return `${objectKey(object)}@${object.metadata?.resourceVersion ?? ""}`;
  }
}
