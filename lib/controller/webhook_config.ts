/**
 * The ValidatingWebhookConfiguration (VWC) the controller keeps in each
 * provider workspace that hosts a protected type: how it should look
 * ({@linkcode desiredWebhookConfiguration}), whether the one on the server
 * already looks like that ({@linkcode webhookConfigurationUpToDate}) and
 * what to PUT when it does not ({@linkcode updatedWebhookConfiguration}).
 * Pure functions: reading and writing the object is the caller's job.
 *
 * @example Usage
 * ```ts
 * import {
 *   desiredWebhookConfiguration,
 *   webhookConfigurationUpToDate,
 * } from "./webhook_config.ts";
 *
 * const desired = desiredWebhookConfiguration(
 *   [{ group: "network.example.com", version: "v1alpha1", resource: "vpcs" }],
 *   { url: "https://webhook.example.com/validate", caBundle: "LS0t", timeoutSeconds: 10 },
 * );
 * webhookConfigurationUpToDate(desired, desired); // true
 * ```
 *
 * @module
 */
import type { KubeObject } from "../kcp/mod.ts";
import { type GroupVersionResource, gvrKey } from "../rules/mod.ts";
import { compareStrings, isRecord } from "../runtime/mod.ts";

/** `metadata.name` of the VWC in every provider workspace. */
export const WEBHOOK_CONFIGURATION_NAME = "dependency-controller";
/** Name of the one webhook entry in the VWC. */
export const WEBHOOK_NAME =
  "dependency-controller.dependencies.opendefense.cloud";
/** The collection path of webhook configurations below `/clusters/<cluster>`. */
export const WEBHOOK_CONFIGURATIONS_PATH =
  "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
/** Label on every VWC we own; we never touch VWCs without it. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** Value of {@linkcode MANAGED_BY_LABEL} on every VWC we own. */
export const MANAGED_BY_VALUE = "dependency-controller";
/** `apiVersion` of a ValidatingWebhookConfiguration. */
export const WEBHOOK_CONFIGURATION_API_VERSION =
  "admissionregistration.k8s.io/v1";
/** `kind` of a ValidatingWebhookConfiguration. */
export const WEBHOOK_CONFIGURATION_KIND = "ValidatingWebhookConfiguration";

/** The operations a configuration sends to the webhook, in canonical order. */
export const WEBHOOK_OPERATIONS = ["DELETE", "UPDATE"] as const;
/** One of {@linkcode WEBHOOK_OPERATIONS}. */
export type WebhookOperation = typeof WEBHOOK_OPERATIONS[number];

/**
 * A type a configuration covers, and for which operations; without
 * `operations`, DELETE only (what a DependencyRule needs).
 */
export interface ProtectedType extends GroupVersionResource {
  /** The operations sent to the webhook. @default {["DELETE"]} */
  operations?: readonly WebhookOperation[];
}

/** How the API server reaches the webhook. */
export interface WebhookClientSettings {
  /** The webhook URL, ending in `/validate`. */
  url: string;
  /** Base64 of the PEM bytes of the CA that signed the webhook's certificate. */
  caBundle: string;
  /** How long the API server waits for an answer, in seconds (1 to 30). */
  timeoutSeconds: number;
}

/** One entry of `webhooks[].rules`. */
interface WebhookRule {
  apiGroups: string[];
  apiVersions: string[];
  resources: string[];
  operations: string[];
  scope: string;
}

/** A label selector with absent parts filled in. */
interface NormalisedSelector {
  matchLabels: unknown;
  matchExpressions: unknown;
}

/** One entry of `webhooks[].rules`, as read from an object. */
interface NormalisedRule {
  apiGroups: unknown;
  apiVersions: unknown;
  resources: unknown;
  operations: unknown;
  scope: unknown;
}

/**
 * The fields of one webhook entry that decide its behaviour, in a canonical
 * shape: what two entries are compared on.
 */
interface NormalisedWebhook {
  name: unknown;
  url: unknown;
  caBundle: unknown;
  service: unknown;
  rules: NormalisedRule[];
  failurePolicy: unknown;
  matchPolicy: unknown;
  sideEffects: unknown;
  timeoutSeconds: unknown;
  admissionReviewVersions: unknown;
  namespaceSelector: NormalisedSelector | undefined;
  objectSelector: NormalisedSelector | undefined;
  matchConditions: unknown[];
}

/**
 * What the configuration functions remember between passes, held by the
 * plan's memo (`PlanMemo`): every pass asks for every provider's URL and
 * compares every configuration we own.
 */
export interface WebhookConfigMemo {
  /** {@linkcode providerUrl}'s answers, by webhook URL and provider path. */
  readonly providerUrls: Map<string, string>;
  /**
   * The webhooks of each configuration read from the server
   * ({@linkcode webhookConfigurationUpToDate}'s `current`), in the
   * canonical form only that function reads: the watch cache keeps an
   * object until a newer version replaces it.
   */
  readonly normalisedWebhooks: WeakMap<
    KubeObject,
    { webhooks: readonly unknown[] | undefined }
  >;
}

/**
 * The URL a provider's VWC calls: the webhook URL with the provider's
 * workspace path as one more segment (`https://host/validate` and
 * `root:org:network` give `https://host/validate/root:org:network`), so the
 * webhook applies only the rules about that provider's exports. With a
 * `memo`, each answer is computed once.
 */
export function providerUrl(
  webhookUrl: string,
  providerPath: string,
  options: { memo?: Pick<WebhookConfigMemo, "providerUrls"> } = {},
): string {
  const known = options.memo?.providerUrls;
  const key = `${webhookUrl}\n${providerPath}`;
  let url = known?.get(key);
  if (url === undefined) {
    const parsed = new URL(webhookUrl);
    parsed.pathname = `${parsed.pathname.replace(/\/+$/, "")}/${providerPath}`;
    url = parsed.toString();
    if (known !== undefined) {
      // One entry per provider workspace; a changed webhook URL starts over.
      if (known.size >= MAX_PROVIDER_URLS) known.clear();
      known.set(key, url);
    }
  }
  return url;
}

/** How many provider URLs {@linkcode providerUrl} remembers. */
const MAX_PROVIDER_URLS = 10_000;

/**
 * Builds the desired VWC for one provider workspace. A workspace where
 * nothing is protected any more should have no VWC at all: callers delete
 * it rather than install one with no rules.
 *
 * @param protectedTypes The protected group/version/resources hosted by the
 * workspace, in any order, each with its operations (DELETE when absent);
 * duplicates are allowed and their operations merge.
 * @param settings How the API server reaches the webhook.
 * @returns A fresh object: one webhook entry with one rule per distinct
 * type (its operations in the order of {@linkcode WEBHOOK_OPERATIONS}),
 * sorted by group, then version, then resource, and every
 * field the API server would otherwise default set explicitly, so that
 * comparing it with a server copy is stable.
 */
export function desiredWebhookConfiguration(
  protectedTypes: readonly ProtectedType[],
  settings: WebhookClientSettings,
): KubeObject {
  const distinct = new Map<
    string,
    { type: GroupVersionResource; operations: Set<WebhookOperation> }
  >();
  for (const type of protectedTypes) {
    const key = gvrKey(type);
    const entry = distinct.get(key) ??
      { type, operations: new Set<WebhookOperation>() };
    for (const operation of type.operations ?? ["DELETE"]) {
      entry.operations.add(operation);
    }
    distinct.set(key, entry);
  }
  const sorted = [...distinct.values()].sort((a, b) =>
    _compareTypes(a.type, b.type)
  );
  const rules: WebhookRule[] = sorted.map(({ type, operations }) => ({
    apiGroups: [type.group],
    apiVersions: [type.version],
    resources: [type.resource],
    operations: WEBHOOK_OPERATIONS.filter((o) => operations.has(o)),
    scope: "*",
  }));
  return {
    apiVersion: WEBHOOK_CONFIGURATION_API_VERSION,
    kind: WEBHOOK_CONFIGURATION_KIND,
    metadata: {
      name: WEBHOOK_CONFIGURATION_NAME,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
    },
    webhooks: [{
      name: WEBHOOK_NAME,
      clientConfig: { url: settings.url, caBundle: settings.caBundle },
      rules,
      failurePolicy: "Fail",
      matchPolicy: "Equivalent",
      namespaceSelector: {},
      objectSelector: {},
      sideEffects: "None",
      timeoutSeconds: settings.timeoutSeconds,
      admissionReviewVersions: ["v1"],
    }],
  };
}

/**
 * Whether a VWC read from the server already matches the desired one in
 * everything we set: the labels of `desired` and, entry by entry and in
 * order, the webhooks' name, client config, rules (in order), policies,
 * timeout, review versions and selectors. Fields the server adds or
 * defaults (resourceVersion, annotations such as `kcp.io/cluster`, other
 * labels, empty `matchConditions`, an absent selector for an empty one) do
 * not count; non-empty `matchConditions` or a `clientConfig.service` do,
 * since they change which requests reach the webhook.
 *
 * @param current The VWC as read from the server.
 * @param desired The VWC from {@linkcode desiredWebhookConfiguration}.
 * @param options `memo` keeps the canonical webhooks of `current` for the
 * next comparison of the same object.
 * @returns `true` when no update is needed.
 */
export function webhookConfigurationUpToDate(
  current: KubeObject,
  desired: KubeObject,
  options: { memo?: Pick<WebhookConfigMemo, "normalisedWebhooks"> } = {},
): boolean {
  const currentLabels = current.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(desired.metadata?.labels ?? {})) {
    if (currentLabels[key] !== value) return false;
  }
  const currentWebhooks = _normalisedOnce(current, options.memo);
  const desiredWebhooks = _normalisedWebhooks(desired.webhooks);
  if (currentWebhooks === undefined || desiredWebhooks === undefined) {
    return false;
  }
  return _sameJson(currentWebhooks, desiredWebhooks);
}

/** The canonical webhooks of a configuration read from the server, remembered in `memo` if given. */
function _normalisedOnce(
  object: KubeObject,
  memo: Pick<WebhookConfigMemo, "normalisedWebhooks"> | undefined,
): readonly unknown[] | undefined {
  let known = memo?.normalisedWebhooks.get(object);
  if (known === undefined) {
    known = { webhooks: _normalisedWebhooks(object.webhooks) };
    memo?.normalisedWebhooks.set(object, known);
  }
  return known.webhooks;
}

/**
 * Whether two JSON-like values are equal: the same primitives
 * (`Object.is`), arrays of equal elements in order, or plain objects with
 * the same own keys (in any order, an `undefined` value counting as a key)
 * and equal values.
 */
function _sameJson(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((value, i) => _sameJson(value, b[i]));
  }
  if (!isRecord(a) || !isRecord(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) =>
    Object.hasOwn(b, key) && _sameJson(a[key], b[key])
  );
}

/**
 * The object to PUT to turn `current` into `desired`.
 *
 * @param current The VWC as read from the server.
 * @param desired The VWC from {@linkcode desiredWebhookConfiguration}.
 * @returns A fresh object with `desired`'s apiVersion, kind and webhooks and
 * `current`'s metadata (resourceVersion, other labels and annotations kept)
 * with `desired`'s labels added.
 */
export function updatedWebhookConfiguration(
  current: KubeObject,
  desired: KubeObject,
): KubeObject {
  const metadata = structuredClone(current.metadata ?? {});
  metadata.labels = {
    ...metadata.labels,
    ...structuredClone(desired.metadata?.labels ?? {}),
  };
  return {
    apiVersion: desired.apiVersion ?? WEBHOOK_CONFIGURATION_API_VERSION,
    kind: desired.kind ?? WEBHOOK_CONFIGURATION_KIND,
    metadata,
    webhooks: structuredClone(desired.webhooks),
  };
}

/** Orders group/version/resources by group, then version, then resource. */
function _compareTypes(
  a: GroupVersionResource,
  b: GroupVersionResource,
): number {
  return compareStrings(a.group, b.group) ||
    compareStrings(a.version, b.version) ||
    compareStrings(a.resource, b.resource);
}

/** `webhooks` in canonical shape, or `undefined` when it is not an array. */
function _normalisedWebhooks(
  value: unknown,
): NormalisedWebhook[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.map((webhook) => _normalisedWebhook(_record(webhook)));
}

function _normalisedWebhook(
  webhook: Record<string, unknown>,
): NormalisedWebhook {
  const clientConfig = _record(webhook.clientConfig);
  const rules = Array.isArray(webhook.rules) ? webhook.rules : [];
  const matchConditions = Array.isArray(webhook.matchConditions)
    ? webhook.matchConditions
    : [];
  return {
    name: webhook.name,
    url: clientConfig.url,
    caBundle: clientConfig.caBundle,
    service: clientConfig.service,
    rules: rules.map((rule) => _normalisedRule(_record(rule))),
    failurePolicy: webhook.failurePolicy,
    matchPolicy: webhook.matchPolicy,
    sideEffects: webhook.sideEffects,
    timeoutSeconds: webhook.timeoutSeconds,
    admissionReviewVersions: webhook.admissionReviewVersions,
    namespaceSelector: _normalisedSelector(webhook.namespaceSelector),
    objectSelector: _normalisedSelector(webhook.objectSelector),
    matchConditions,
  };
}

function _normalisedRule(rule: Record<string, unknown>): NormalisedRule {
  return {
    apiGroups: rule.apiGroups,
    apiVersions: rule.apiVersions,
    resources: rule.resources,
    operations: rule.operations,
    scope: rule.scope,
  };
}

/**
 * A label selector with absent parts made empty. An absent selector is the
 * empty one (the API server defaults it so); a value that is not an object
 * becomes `undefined`, which never equals a desired selector.
 */
function _normalisedSelector(value: unknown): NormalisedSelector | undefined {
  if (value === undefined || value === null) {
    return { matchLabels: {}, matchExpressions: [] };
  }
  if (!isRecord(value)) return undefined;
  return {
    matchLabels: value.matchLabels ?? {},
    matchExpressions: value.matchExpressions ?? [],
  };
}

/** `value` when it is a plain object, `{}` otherwise. */
function _record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}
