/**
 * DependencyRules across every workspace bound to the dep-ctrl APIExport,
 * as the webhook and `controller grants` read them: a
 * {@linkcode CollectionView} of the rules collection of the process's one
 * {@linkcode ExportWatcher} (the Locks are another view of the same
 * watcher). Every valid rule is handed on with its logical cluster; invalid
 * rules are logged once per resource version and left out.
 *
 * @module
 */
import { GROUP, parseDependencyRule, PLURAL, VERSION } from "./api.ts";
import type { Logger } from "../runtime/mod.ts";
import {
  clusterOf,
  type CollectionSnapshot,
  CollectionView,
  type ExportWatcher,
} from "../kcp/mod.ts";
import type { ClusterRule } from "./types.ts";

/** The DependencyRule collection path below `/clusters/<cluster>`. */
export const RULES_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;

/** The rules a {@linkcode ruleView} shows at one moment, as the webhook's metrics read them. */
export interface RuleSnapshot {
  /** Every valid rule from every endpoint. */
  rules: ClusterRule[];
  /** Rules that failed validation, with why. */
  invalid: { cluster: string; name: string; error: string }[];
  /** Whether the slice and every endpoint have been listed, so `rules` is complete. */
  synced: boolean;
  /** The virtual-workspace URLs being watched. */
  endpoints: string[];
}

/** Options for {@linkcode ruleView}. */
export interface RuleViewOptions<C extends string> {
  /** The watcher's collection at {@linkcode RULES_PATH}. */
  collection: C;
  /** Where to warn about invalid rules. */
  log: Logger;
}

/** The DependencyRules of one collection of `watcher`, validated. */
export function ruleView<C extends string>(
  watcher: ExportWatcher<C>,
  options: RuleViewOptions<C>,
): CollectionView<C, ClusterRule> {
  return new CollectionView(watcher, {
    collection: options.collection,
    kind: "DependencyRule",
    parse(object) {
      const result = parseDependencyRule(object);
      if (!result.ok) return { ok: false, error: result.error };
      return {
        ok: true,
        value: { cluster: clusterOf(object), rule: result.rule },
      };
    },
    log: options.log,
  });
}

/** A {@linkcode ruleView}'s snapshot as a {@linkcode RuleSnapshot}. */
export function ruleSnapshot(
  snapshot: CollectionSnapshot<ClusterRule>,
): RuleSnapshot {
  const { items, invalid, synced, endpoints } = snapshot;
  return { rules: items, invalid, synced, endpoints };
}
