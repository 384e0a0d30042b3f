/**
 * What the parts of `assertStatusTruth` (`status_truth.ts`) share: the
 * shapes of DependencyRules and Locks as kubectl prints them, their `Ready`
 * condition, listing them in workspaces, discovery of a type, and setting a
 * rule's field path in an object. Internal to `status_truth.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseFieldPath } from "../lib/rules/mod.ts";
import { delay } from "./fake_api.ts";
import { type KcpApi, KcpRequestError } from "./kcp_server.ts";

/** A condition of a rule's or Lock's status. */
export interface Condition {
  /** `Ready`, `WebhooksInstalled`, ... */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: string;
  /** Why, in one word. */
  reason?: string;
  /** Why, in words. */
  message?: string;
  /** The generation it speaks of. */
  observedGeneration?: number;
}

/** A DependencyRule or a Lock as kubectl prints it. */
export interface StatusObject {
  /** Its name, namespace (a Lock's) and generation. */
  metadata: { name: string; namespace?: string; generation?: number };
  /** Its spec, read as {@linkcode RuleSpec} or {@linkcode LockSpec}. */
  spec: Record<string, unknown>;
  /** Its status. */
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

/** A rule or Lock found in a workspace. */
export interface Found {
  /** The workspace (path) it is in. */
  workspace: string;
  /** What it is. */
  resource: "dependencyrules" | "locks";
  /** The object. */
  object: StatusObject;
}

/** A group, version and resource. */
export interface TypeRef {
  /** API group, `""` for core. */
  group: string;
  /** API version. */
  version: string;
  /** Resource (plural). */
  resource: string;
}

/** An APIExport: its workspace path and name. */
export interface ExportRef {
  /** Workspace path. */
  path: string;
  /** Name. */
  name: string;
}

/** Which object of a dependency holds the reference. */
export type ReferenceSource = "Dependent" | "Target" | "TargetNamespace";

/** One entry of a rule's `spec.dependencies`. */
export interface SpecDependency extends TypeRef {
  /** The APIExport that provides the protected type. */
  apiExportRef: ExportRef;
  /** Where the reference is. */
  fieldRef: { from?: ReferenceSource; path: string; namespacePath?: string };
}

/** A DependencyRule's `spec`. */
export interface RuleSpec {
  /** The dependent type (an owner type for `from: Target|TargetNamespace`). */
  dependent: TypeRef & { apiExportName: string; kind: string };
  /** The protected types. */
  dependencies: SpecDependency[];
  /** A `when`: CEL over the object of the dependent type. */
  when?: string;
  /** `Exists` (the default) or `Active`. */
  protectWhile?: string;
}

/** A Lock's `spec`. */
export interface LockSpec {
  /** What it holds. */
  target: TypeRef & { name: string; apiExportRef?: ExportRef };
  /** Why. */
  reason: string;
  /** `Delete` (the default) and/or `Update`. */
  operations?: string[];
  /** When it stops holding (RFC 3339), if it does. */
  expiresAt?: string;
}

/** What discovery says of a type in a workspace. */
export interface Served {
  /** Its kind. */
  kind: string;
  /** Whether it is namespaced. */
  namespaced: boolean;
}

/** `<resource>.<group>`, or `<resource>` for core: what kubectl takes. */
export function kubectlType(t: { group: string; resource: string }): string {
  return t.group === "" ? t.resource : `${t.resource}.${t.group}`;
}

/** `<group>/<version>`, or `<version>` for core. */
export function apiVersion(t: { group: string; version: string }): string {
  return t.group === "" ? t.version : `${t.group}/${t.version}`;
}

/** `APIExport <path>/<name>`. */
export function exportShown(ref: ExportRef): string {
  return `APIExport ${ref.path}/${ref.name}`;
}

/** `text` with every regular-expression metacharacter escaped. */
export function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** The `Ready` condition. */
export function readyOf(object: StatusObject): Condition | undefined {
  return object.status?.conditions?.find((c) => c.type === "Ready");
}

/** Whether `Ready` is `True` with reason `Enforced`. */
export function isEnforced(object: StatusObject): boolean {
  const ready = readyOf(object);
  return ready?.status === "True" && ready.reason === "Enforced";
}

/** Whether the status speaks of the object's current generation. */
export function isCurrent(object: StatusObject): boolean {
  const generation = object.metadata.generation;
  const observed = readyOf(object)?.observedGeneration ??
    object.status?.observedGeneration;
  return generation === undefined || observed === undefined ||
    observed === generation;
}

/** `<workspace>/<name>`, or `<workspace>/<namespace>/<name>` for a Lock. */
export function where({ workspace, object }: Found): string {
  return `${workspace}/${
    object.metadata.namespace === undefined
      ? ""
      : `${object.metadata.namespace}/`
  }${object.metadata.name}`;
}

/** `<where> (<status>/<reason>)`. */
export function withReady(found: Found): string {
  const ready = readyOf(found.object);
  return `${where(found)} (${ready?.status ?? "no status"}/${
    ready?.reason ?? "-"
  })`;
}

/** Each with its `Ready`, or `none`. */
export function shown(list: readonly Found[]): string {
  return list.length === 0 ? "none" : list.map(withReady).join(", ");
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
export async function listAll(
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
export async function discover(
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
 * Sets `value` at a rule's field path in `object` (`.spec.vpcRef.name`,
 * `.metadata.labels["a/b"]`, `.spec.nics[*].subnetRef.name`), creating
 * objects and one-element lists for `[*]` on the way (an existing list's
 * first element is reused, so a namespace path lands beside its name).
 */
export function setAtPath(
  object: Record<string, unknown>,
  path: string,
  value: unknown,
): void {
  const segments = parseFieldPath(path);
  let node = object;
  segments.forEach((segment, i) => {
    const key = segment.name;
    const last = i === segments.length - 1;
    if (segment.lists === 0) {
      if (last) node[key] = value;
      else {
        if (!isRecord(node[key])) node[key] = {};
        node = node[key] as Record<string, unknown>;
      }
      return;
    }
    if (!Array.isArray(node[key])) node[key] = [];
    let list = node[key] as unknown[];
    for (let l = 1; l < segment.lists; l++) {
      list = (list[0] ??= []) as unknown[];
    }
    if (last) list[0] = value;
    else node = (list[0] ??= {}) as Record<string, unknown>;
  });
}

/** Whether `value` is a plain object (not a list, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * `base` with `over` merged in, object by object: where both hold a value
 * that is not an object, `over`'s wins. Neither is changed.
 */
export function deepMerge(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = merged[key];
    merged[key] = isRecord(current) && isRecord(value)
      ? deepMerge(current, value)
      : structuredClone(value);
  }
  return merged;
}
