/**
 * The webhook configurations' part of the plan: the types each provider's
 * configuration must protect (the rules' and the Locks' together), and the
 * writes that make the configurations we own equal that. Each configuration
 * calls the webhook at `<url>/<provider path>`, so that only the rules about
 * that provider's exports apply.
 *
 * Fail closed: while anything the rules or Locks name is not known for
 * certain, no configuration is deleted and no protected type is dropped
 * from one.
 *
 * @module
 */
import { gvrKey } from "../rules/mod.ts";
import { clusterOf, type EndpointObject, type KubeObject } from "../kcp/mod.ts";
import type { BoundCluster } from "./binding_check.ts";
import type { LockPlacement } from "./lock_plan.ts";
import {
  desiredWebhookConfiguration,
  type ProtectedType,
  providerUrl,
  updatedWebhookConfiguration,
  WEBHOOK_OPERATIONS,
  type WebhookClientSettings,
  type WebhookConfigMemo,
  webhookConfigurationUpToDate,
} from "./webhook_config.ts";

/** What to do with the configuration of one provider cluster. */
export interface ConfigurationAction {
  /** Provider logical cluster. */
  cluster: string;
  /** The provider workspace's path, where a rule names it: for logs. */
  workspace?: string;
  /** Endpoint to write through. */
  endpoint: string;
  /** The write. */
  action: "create" | "update" | "delete";
  /** The object to create or PUT (for delete: the current object). */
  object: KubeObject;
}

/** What the configurations must protect. */
export interface ConfigurationDemand {
  /** Protected types (with their operations) per provider cluster. */
  desired: Map<string, Map<string, ProtectedType>>;
  /** The workspace path the webhook URL names for each cluster of `desired`. */
  providerPaths: Map<string, string>;
  /** Whether anything is not known for certain (then nothing is dropped). */
  unsure: boolean;
}

/** What the configuration writes are computed from, besides the configurations. */
export interface ConfigurationContext {
  /** What the rules and Locks ask ({@linkcode mergeDemands}). */
  demand: ConfigurationDemand;
  /** The dep-ctrl bindings by logical cluster: a new configuration is written through its binding's endpoint. */
  bindings: ReadonlyMap<string, BoundCluster>;
  /** Webhook client settings, or why they cannot be read (then only deletes are written). */
  settings: WebhookClientSettings | { error: string };
  /** What earlier passes found, kept by whoever runs the passes (`PlanMemo`). */
  memo: ConfigurationMemo;
}

/**
 * What the configurations' part remembers between passes: for each
 * configuration read (kept by the watch cache until a newer version
 * replaces it), the desired one it was last found up to date with: a pass
 * compares every configuration, and between passes what they must protect
 * rarely changes. With the provider URLs and the configurations' canonical
 * webhooks ({@linkcode WebhookConfigMemo}).
 */
export interface ConfigurationMemo extends WebhookConfigMemo {
  /**
   * The desired configuration each configuration read was last found up to
   * date with: its types as the demand handed them out, the key they and
   * the URL make, the URL and the settings.
   */
  readonly upToDate: WeakMap<
    KubeObject,
    {
      types: readonly ProtectedType[];
      key: string;
      url: string;
      settings: WebhookClientSettings;
    }
  >;
}

/**
 * The rules' demand with the Locks' types joined in each configuration (by
 * type and operations); a Lock's own workspace is named by its logical
 * cluster in the webhook URL. Neither input is modified.
 */
export function mergeDemands(
  rules: ConfigurationDemand,
  locks: Pick<LockPlacement, "desired" | "providerPaths" | "unsure">,
): ConfigurationDemand {
  const desired = new Map<string, Map<string, ProtectedType>>();
  for (const [cluster, types] of rules.desired) {
    desired.set(cluster, new Map(types));
  }
  const providerPaths = new Map(rules.providerPaths);
  for (const [cluster, types] of locks.desired) {
    const merged = desired.get(cluster) ?? new Map();
    for (const type of types) {
      merged.set(`lock:${gvrKey(type)}:${type.operations?.join(",")}`, type);
    }
    desired.set(cluster, merged);
    if (!providerPaths.has(cluster)) {
      providerPaths.set(cluster, locks.providerPaths.get(cluster) ?? cluster);
    }
  }
  return { desired, providerPaths, unsure: rules.unsure || locks.unsure };
}

/**
 * The configuration writes that give each provider the desired types, and
 * how many provider clusters keep (or get) a configuration. A configuration
 * kept only because something is unknown is left as it is.
 */
export function planConfigurations(
  configurations: readonly EndpointObject[],
  context: ConfigurationContext,
): { actions: ConfigurationAction[]; wanted: number } {
  const { desired, providerPaths, unsure } = context.demand;
  const { settings, memo } = context;
  const current = new Map<string, EndpointObject>();
  for (const source of configurations) {
    current.set(clusterOf(source.object), source);
  }
  const actions: ConfigurationAction[] = [];
  let wanted = 0;
  const clusters = new Set([...desired.keys(), ...current.keys()]);
  for (const cluster of [...clusters].sort()) {
    const existing = current.get(cluster);
    let types = [...(desired.get(cluster)?.values() ?? [])];
    if (unsure && existing !== undefined) {
      // Keep what is protected while any path is unknown: the
      // configuration merges the operations of duplicates.
      types = [...types, ...protectedTypesOf(existing.object)];
    }
    const path = providerPaths.get(cluster);
    const named = path === undefined ? {} : { workspace: path };
    if (types.length === 0) {
      if (existing !== undefined && !unsure) {
        actions.push({
          cluster,
          ...named,
          endpoint: existing.endpoint,
          action: "delete",
          object: existing.object,
        });
      }
      continue;
    }
    wanted++;
    if ("error" in settings || path === undefined) continue;
    const url = providerUrl(settings.url, path, { memo });
    const known = existing === undefined
      ? undefined
      : memo.upToDate.get(existing.object);
    // Found up to date with the same desired configuration before: the
    // same types (the rules' parts hand out the same objects while they do
    // not change), or types that make the same configuration.
    if (
      known !== undefined && known.settings === settings &&
      known.url === url && (sameItems(known.types, types) ||
        known.key === desiredKey(types, url))
    ) continue;
    const want = desiredWebhookConfiguration(types, { ...settings, url });
    if (existing === undefined) {
      const endpoint = context.bindings.get(cluster)?.endpoint;
      if (endpoint === undefined) continue;
      actions.push({
        cluster,
        workspace: path,
        endpoint,
        action: "create",
        object: want,
      });
    } else if (webhookConfigurationUpToDate(existing.object, want, { memo })) {
      memo.upToDate.set(existing.object, {
        types,
        key: desiredKey(types, url),
        url,
        settings,
      });
    } else {
      actions.push({
        cluster,
        workspace: path,
        endpoint: existing.endpoint,
        action: "update",
        object: updatedWebhookConfiguration(existing.object, want),
      });
    }
  }
  return { actions, wanted };
}

/** Whether two lists hold the same objects in the same order. */
function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

/** What the desired configuration is built from, as one string (the settings apart). */
function desiredKey(types: readonly ProtectedType[], url: string): string {
  const keys = types.map((t) =>
    `${gvrKey(t)}:${(t.operations ?? ["DELETE"]).join(",")}`
  );
  return `${url}\n${keys.sort().join("\n")}`;
}

/** The group/version/resources a configuration we own protects. */
export function protectedTypesOf(object: KubeObject): ProtectedType[] {
  const webhooks = (object as {
    webhooks?: {
      rules?: {
        apiGroups?: string[];
        apiVersions?: string[];
        resources?: string[];
        operations?: string[];
      }[];
    }[];
  }).webhooks ?? [];
  const types: ProtectedType[] = [];
  for (const webhook of webhooks) {
    for (const rule of webhook.rules ?? []) {
      const operations = WEBHOOK_OPERATIONS.filter((o) =>
        (rule.operations ?? []).includes(o)
      );
      for (const group of rule.apiGroups ?? []) {
        for (const version of rule.apiVersions ?? []) {
          for (const resource of rule.resources ?? []) {
            types.push({ group, version, resource, operations });
          }
        }
      }
    }
  }
  return types;
}
