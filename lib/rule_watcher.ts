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
import type { BackoffOptions } from "./backoff.ts";
import { Informer, objectKey } from "./informer.ts";
import { clusterUrl } from "./kcp.ts";
import type { KubeClient, KubeObject } from "./kube_client.ts";
import type { Logger } from "./log.ts";
import type { ClusterRule } from "./rule_registry.ts";

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

/** The collection URL of DependencyRules across all workspaces of one endpoint. */
export function rulesUrl(endpointUrl: string): string {
  return `${clusterUrl(endpointUrl, "*")}/apis/${GROUP}/${VERSION}/${PLURAL}`;
}

/** Follows the endpoint slice and the rules behind every endpoint. */
export class RuleWatcher {
  readonly #options: RuleWatcherOptions;
  readonly #slice: Informer;
  readonly #endpoints = new Map<string, Informer>();
  #reported = new Set<string>();
  readonly #parsed = new WeakMap<KubeObject, ParsedItem>();
  readonly #stopping = new Set<Promise<void>>();
  #missingReported = false;
  #scheduled = false;
  #stopped = false;

  /** Builds the watcher; {@linkcode RuleWatcher.start} runs it. */
  constructor(options: RuleWatcherOptions) {
    this.#options = options;
    this.#slice = new Informer({
      client: options.client,
      url:
        `${options.workspaceUrl}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices`,
      fieldSelector: `metadata.name=${options.apiExportName}`,
      log: options.log,
      onChange: () => this.#followSlice(),
      ...this.#informerTuning(),
    });
  }

  /** Starts watching. */
  start(): void {
    this.#slice.start();
  }

  /** Stops every list+watch and waits for them to end. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all([
      this.#slice.stop(),
      ...[...this.#endpoints.values()].map((i) => i.stop()),
      ...this.#stopping,
    ]);
    this.#endpoints.clear();
  }

  /**
   * Whether the rules are complete: the endpoint slice exists (a missing
   * slice means a wrong export name or workspace, and deciding with no rules
   * would let every delete through) and every endpoint has been listed.
   */
  get synced(): boolean {
    return this.#slice.synced && this.#slice.items().length > 0 &&
      [...this.#endpoints.values()].every((i) => i.synced);
  }

  /** The current snapshot. */
  snapshot(): RuleSnapshot {
    const rules: ClusterRule[] = [];
    const invalid: RuleSnapshot["invalid"] = [];
    const stillInvalid = new Set<string>();
    for (const informer of this.#endpoints.values()) {
      for (const item of informer.items()) {
        // An informer keeps an object until a newer version replaces it, so
        // each version is parsed once, however many snapshots follow.
        let entry = this.#parsed.get(item);
        if (entry === undefined) {
          entry = this.#parse(item);
          this.#parsed.set(item, entry);
        }
        if ("rule" in entry) {
          rules.push(entry.rule);
        } else {
          invalid.push(entry.invalid);
          stillInvalid.add(entry.id);
        }
      }
    }
    // Forget reports of invalid rules that are gone or changed, so the set stays small.
    this.#reported = new Set(
      [...this.#reported].filter((id) => stillInvalid.has(id)),
    );
    return {
      rules,
      invalid,
      synced: this.synced,
      endpoints: [...this.#endpoints.keys()],
    };
  }

  #parse(item: KubeObject): ParsedItem {
    const cluster = item.metadata?.annotations?.["kcp.io/cluster"] ?? "";
    const name = item.metadata?.name ?? "";
    const result = parseDependencyRule(item);
    if (result.ok) return { rule: { cluster, rule: result.rule } };
    const id = `${objectKey(item)}@${item.metadata?.resourceVersion ?? ""}`;
    this.#reportInvalid(id, item, result.error);
    return { invalid: { cluster, name, error: result.error }, id };
  }

  #followSlice(): void {
    if (this.#stopped) return;
    if (this.#slice.items().length === 0 && !this.#missingReported) {
      this.#missingReported = true;
      this.#options.log.error(
        "the dep-ctrl APIExportEndpointSlice does not exist: no rules can load until it does",
        {
          workspace: this.#options.workspaceUrl,
          apiExportName: this.#options.apiExportName,
        },
      );
    } else if (this.#slice.items().length > 0) {
      this.#missingReported = false;
    }
    const wanted = new Set<string>();
    for (const slice of this.#slice.items()) {
      const endpoints =
        (slice.status as { endpoints?: { url?: string }[] } | undefined)
          ?.endpoints ?? [];
      for (const endpoint of endpoints) {
        if (endpoint.url) wanted.add(endpoint.url);
      }
    }
    for (const [url, informer] of this.#endpoints) {
      if (wanted.has(url)) continue;
      this.#options.log.info("endpoint removed, no longer watching its rules", {
        url,
      });
      this.#endpoints.delete(url);
      const stopping = informer.stop();
      this.#stopping.add(stopping);
      stopping.then(() => this.#stopping.delete(stopping));
    }
    for (const url of wanted) {
      if (this.#endpoints.has(url)) continue;
      this.#options.log.info("endpoint added, watching its rules", { url });
      const informer = new Informer({
        client: this.#options.client,
        url: rulesUrl(url),
        log: this.#options.log,
        onChange: () => this.#schedule(),
        ...this.#informerTuning(),
      });
      this.#endpoints.set(url, informer);
      informer.start();
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    // A macrotask, so that all events of one chunk of a watch stream make one snapshot.
    setTimeout(() => {
      this.#scheduled = false;
      if (!this.#stopped) this.#options.onChange(this.snapshot());
    }, 0);
  }

  #reportInvalid(id: string, item: KubeObject, error: string): void {
    if (this.#reported.has(id)) return;
    this.#reported.add(id);
    this.#options.log.warn("ignoring invalid DependencyRule", {
      cluster: item.metadata?.annotations?.["kcp.io/cluster"],
      name: item.metadata?.name,
      error,
    });
  }

  #informerTuning(): {
    backoff?: BackoffOptions;
    watchTimeoutSeconds?: number;
  } {
    const { backoff, watchTimeoutSeconds } = this.#options;
    return {
      ...(backoff === undefined ? {} : { backoff }),
      ...(watchTimeoutSeconds === undefined ? {} : { watchTimeoutSeconds }),
    };
  }
}
