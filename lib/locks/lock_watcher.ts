/**
 * Locks across every workspace bound to the dep-ctrl APIExport, as the
 * webhook decides with them and `controller grants` reads them: a
 * {@linkcode CollectionView} of the Lock collection of the process's one
 * {@linkcode ExportWatcher} (the rules are another view of the same
 * watcher). Every valid Lock is handed on with its logical cluster (one
 * whose `spec.expiresAt` alone is malformed, without it: it holds until
 * deleted); invalid Locks are logged once per resource version and left out
 * (the controller reports them in their status).
 *
 * @module
 */
import { clusterOf, CollectionView, type ExportWatcher } from "../kcp/mod.ts";
import { GROUP, VERSION } from "../rules/mod.ts";
import type { Logger } from "../runtime/mod.ts";
import { LOCK_PLURAL, parseLock } from "./api.ts";
import type { ClusterLock } from "./lock_index.ts";

/** The Lock collection path below `/clusters/<cluster>`. */
export const LOCKS_PATH = `/apis/${GROUP}/${VERSION}/${LOCK_PLURAL}`;

/** Options for {@linkcode lockView}. */
export interface LockViewOptions<C extends string> {
  /** The watcher's collection at {@linkcode LOCKS_PATH}. */
  collection: C;
  /** Where to warn about invalid Locks. */
  log: Logger;
}

/** The Locks of one collection of `watcher`, validated. */
export function lockView<C extends string>(
  watcher: ExportWatcher<C>,
  options: LockViewOptions<C>,
): CollectionView<C, ClusterLock> {
  return new CollectionView(watcher, {
    collection: options.collection,
    kind: "Lock",
    parse(object) {
      const result = parseLock(object);
      if (!result.ok) return { ok: false, error: result.error };
      return {
        ok: true,
        value: { cluster: clusterOf(object), lock: result.lock },
      };
    },
    log: options.log,
  });
}
