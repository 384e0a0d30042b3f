/**
 * DependencyRules across every workspace bound to the dep-ctrl APIExport:
 * reads the export's APIExportEndpointSlice, runs one list+watch per
 * virtual-workspace URL (`<url>/clusters/*`), starts and stops them as the
 * slice changes, and hands on all valid rules after every change. Invalid
 * rules are logged once per resource version and left out.
 *
 * @module
 */
import { GROUP, parseDependencyRule, PLURAL, VERSION } from "./api.ts";
import type { BackoffOptions, Logger } from "../runtime/mod.ts";
import {
  clusterOf,
  ExportWatcher,
  type KubeClient,
  type KubeObject,
  objectKey,
} from "../kcp/mod.ts";
import type { ClusterRule } from "./types.ts";

/** What a {@linkcode RuleWatcher} hands on after each change. */
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

/** One rule object, parsed. */
/** A valid rule's parse, kept while its uid and generation stay. */
interface Generation {
  uid: unknown;
  generation: number;
  entry: ParsedItem;
}

type ParsedItem = { rule: ClusterRule } | {
  invalid: RuleSnapshot["invalid"][number];
  /** `<store key>@<resourceVersion>`: what was reported. */
  id: string;
};

/** Options for {@linkcode RuleWatcher}. */
export interface RuleWatcherOptions {
  /** Client for the dep-ctrl workspace and the virtual workspaces. */
  client: KubeClient;
  /** URL of the dep-ctrl workspace (the kubeconfig's server, `.../clusters/root:dep-ctrl`). */
  workspaceUrl: string;
  /** Name of the dep-ctrl APIExport (and of its endpoint slice). */
  apiExportName: string;
  /** Where to log. */
  log: Logger;
  /** Called (at most once per tick) after anything changed. */
  onChange: (snapshot: RuleSnapshot) => void;
  /** Reconnect backoff of every list+watch. */
  backoff?: BackoffOptions;
  /** Server-side watch timeout. @default {300} */
  watchTimeoutSeconds?: number;
}

/** The DependencyRule collection path below `/clusters/<cluster>`. */
export const RULES_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;

/** Follows the endpoint slice and the rules behind every endpoint. */
export class RuleWatcher {
  readonly #options: RuleWatcherOptions;
  readonly #watcher: ExportWatcher<"rules">;
  #reported = new Set<string>();
  readonly #parsed = new WeakMap<KubeObject, ParsedItem>();
  /**
   * Each valid rule's parse by store key, uid and generation: a status
   * update (same generation) keeps the rule, and the snapshot with it.
   */
  #byGeneration = new Map<string, Generation>();
  #last: RuleSnapshot | undefined;

  /** Builds the watcher; {@linkcode RuleWatcher.start} runs it. */
  constructor(options: RuleWatcherOptions) {
    this.#options = options;
    this.#watcher = new ExportWatcher({
      client: options.client,
      workspaceUrl: options.workspaceUrl,
      apiExportName: options.apiExportName,
      collections: { rules: { path: RULES_PATH } },
      log: options.log,
      onChange: () => {
        const snapshot = this.snapshot();
        if (this.#last !== undefined && sameSnapshot(snapshot, this.#last)) {
          return;
        }
        this.#last = snapshot;
        options.onChange(snapshot);
      },
      ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
      ...(options.watchTimeoutSeconds === undefined
        ? {}
        : { watchTimeoutSeconds: options.watchTimeoutSeconds }),
    });
  }

  /** Starts watching. */
  start(): void {
    this.#watcher.start();
  }

  /** List+watch loops retrying after an error ({@linkcode ExportWatcher.failingWatches}). */
  failingWatches(): number {
    return this.#watcher.failingWatches();
  }

  /** Stops every list+watch and waits for them to end. */
  stop(): Promise<void> {
    return this.#watcher.stop();
  }

  /**
   * Whether the rules are complete: the endpoint slice exists (a missing
   * slice means a wrong export name or workspace, and deciding with no rules
   * would let every delete through) and every endpoint has been listed.
   */
  get synced(): boolean {
    return this.#watcher.synced;
  }

  /** The current snapshot. */
  snapshot(): RuleSnapshot {
    const rules: ClusterRule[] = [];
    const invalid: RuleSnapshot["invalid"] = [];
    const stillInvalid = new Set<string>();
    const generations = new Map<string, Generation>();
    for (const { object } of this.#watcher.items("rules")) {
      // An informer keeps an object until a newer version replaces it, so
      // each version is parsed once, however many snapshots follow.
      let entry = this.#parsed.get(object);
      if (entry === undefined) {
        entry = this.#parseGeneration(object, generations);
        this.#parsed.set(object, entry);
      } else {
        this.#keepGeneration(object, entry, generations);
      }
      if ("rule" in entry) {
        rules.push(entry.rule);
      } else {
        invalid.push(entry.invalid);
        stillInvalid.add(entry.id);
      }
    }
    this.#byGeneration = generations;
    // Forget reports of invalid rules that are gone or changed, so the set stays small.
    this.#reported = new Set(
      [...this.#reported].filter((id) => stillInvalid.has(id)),
    );
    return {
      rules,
      invalid,
      synced: this.synced,
      endpoints: this.#watcher.endpoints(),
    };
  }

  /** The parse of `item`, reusing a valid rule's when only its status changed. */
  #parseGeneration(
    item: KubeObject,
    generations: Map<string, Generation>,
  ): ParsedItem {
    const key = objectKey(item);
    const generation = item.metadata?.generation;
    const known = this.#byGeneration.get(key);
    const entry = known !== undefined && generation !== undefined &&
        known.generation === generation && known.uid === item.metadata?.uid
      ? known.entry
      : this.#parse(item);
    this.#keepGeneration(item, entry, generations);
    return entry;
  }

  #keepGeneration(
    item: KubeObject,
    entry: ParsedItem,
    generations: Map<string, Generation>,
  ): void {
    const generation = item.metadata?.generation;
    if (!("rule" in entry) || generation === undefined) return;
    generations.set(objectKey(item), {
      uid: item.metadata?.uid,
      generation,
      entry,
    });
  }

  #parse(item: KubeObject): ParsedItem {
    const cluster = clusterOf(item);
    const name = item.metadata?.name ?? "";
    const result = parseDependencyRule(item);
    if (result.ok) return { rule: { cluster, rule: result.rule } };
    const id = `${objectKey(item)}@${item.metadata?.resourceVersion ?? ""}`;
    this.#reportInvalid(id, item, result.error);
    return { invalid: { cluster, name, error: result.error }, id };
  }

  #reportInvalid(id: string, item: KubeObject, error: string): void {
    if (this.#reported.has(id)) return;
    this.#reported.add(id);
    this.#options.log.warn("ignoring invalid DependencyRule", {
      cluster: clusterOf(item),
      name: item.metadata?.name,
      error,
    });
  }
}

/** Whether two snapshots hold the same rule objects, reports and state. */
function sameSnapshot(a: RuleSnapshot, b: RuleSnapshot): boolean {
  return a.synced === b.synced &&
    a.endpoints.join("\n") === b.endpoints.join("\n") &&
    a.rules.length === b.rules.length &&
    a.rules.every((rule, i) => rule === b.rules[i]) &&
    JSON.stringify(a.invalid) === JSON.stringify(b.invalid);
}
