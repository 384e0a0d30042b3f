/**
 * Which objects `why namespace/<ns>` and `why workspace` ask about
 * (`why_scope.ts`): those of the types a delete could be denied for, the
 * types the workspace binds from providers and its own CRDs, found through
 * discovery as the user ({@linkcode discoverTypes}, {@linkcode scopeTypes}:
 * every group but the built-in ones, kcp's and the Locks' own), listed in
 * pages of at most {@linkcode LIST_PAGE} metadata-only items
 * ({@linkcode listType}), each with its deletion and its owners.
 *
 * @module
 */
import type { CauseObject } from "../causes/mod.ts";
import { pathSegment } from "../kcp/mod.ts";
import { GROUP } from "../rules/mod.ts";
import { compareStrings, errorText, isRecord } from "../runtime/mod.ts";
import type { PluginContext } from "./context.ts";
import { apiFailure, parseGroupList } from "./discovery.ts";
import { deletionOf } from "./why_owners.ts";

/** What `why` looks into: one namespace, or the whole workspace. */
export type WhyScope =
  | { kind: "namespace"; name: string }
  | { kind: "workspace" };

/** The most items of one list page. */
export const LIST_PAGE = 500;
/** The most API groups read through discovery. */
export const MAX_GROUPS = 200;

/** A type whose objects are asked about. */
export interface ScopeType {
  /** API group. */
  group: string;
  /** Version (the group's preferred one). */
  version: string;
  /** Plural resource. */
  resource: string;
  /** Kind. */
  kind: string;
  /** Whether its objects are namespaced. */
  namespaced: boolean;
}

/** A type whose objects could not be listed, or discovered. */
export interface NotListed {
  /** `<resource>.<group>`, or the group version whose discovery failed. */
  type: string;
  /** Why, in words. */
  why: string;
}

/** An object a list named, with its deletion and its owners if any. */
export interface Listed {
  /** The object. */
  object: CauseObject;
  /** Its `deletionTimestamp`, when being deleted. */
  deletionTimestamp?: string;
  /** Its `metadata.ownerReferences`, as listed. */
  ownerReferences?: unknown;
}

/** Groups whose types our webhook never guards: built-in, kcp's, the Locks' own. */
export function isBuiltinGroup(group: string): boolean {
  return group === "" || !group.includes(".") || group.endsWith(".k8s.io") ||
    group === "kcp.io" || group.endsWith(".kcp.io") || group === GROUP;
}

/**
 * The types of a group version's discovery answer whose objects `scope`
 * asks about: no subresource, `list` and `delete` allowed, namespaced for a
 * namespace.
 */
export function scopeTypes(
  answer: unknown,
  options: { group: string; version: string; scope: WhyScope },
): ScopeType[] {
  const resources = isRecord(answer) && Array.isArray(answer.resources)
    ? answer.resources
    : [];
  const types: ScopeType[] = [];
  for (const entry of resources) {
    if (!isRecord(entry)) continue;
    const { name, kind, verbs } = entry;
    if (typeof name !== "string" || name === "" || name.includes("/")) {
      continue;
    }
    if (typeof kind !== "string" || !Array.isArray(verbs)) continue;
    if (!verbs.includes("list") || !verbs.includes("delete")) continue;
    const namespaced = entry.namespaced === true;
    if (options.scope.kind === "namespace" && !namespaced) continue;
    types.push({
      group: options.group,
      version: options.version,
      resource: name,
      kind,
      namespaced,
    });
  }
  return types.sort((a, b) => compareStrings(a.resource, b.resource));
}

/**
 * The types of every group but the built-in ones, through discovery, as
 * the user; a group version that cannot be read is noted in `found`.
 *
 * @throws {PluginError} With exit code 2 when `/apis` cannot be read.
 */
export async function discoverTypes(
  context: PluginContext,
  found: { scope: WhyScope; notListed: NotListed[] },
): Promise<ScopeType[]> {
  let groups;
  try {
    groups = parseGroupList(await context.client.get(`${context.server}/apis`));
  } catch (error) {
    throw apiFailure(error, context, { verb: "discover", what: "the APIs" });
  }
  const wanted = groups.filter((g) => !isBuiltinGroup(g.name))
    .sort((a, b) => compareStrings(a.name, b.name));
  if (wanted.length > MAX_GROUPS) {
    found.notListed.push({
      type: `${wanted.length - MAX_GROUPS} more API groups`,
      why: `at most ${MAX_GROUPS} groups are read`,
    });
  }
  const lists = await Promise.all(
    wanted.slice(0, MAX_GROUPS).map(async (g) => {
      const gv = { group: g.name, version: g.preferredVersion };
      try {
        const answer = await context.client.get(
          `${context.server}/apis/${pathSegment(gv.group)}/${
            pathSegment(gv.version)
          }`,
        );
        return scopeTypes(answer, { ...gv, scope: found.scope });
      } catch (error) {
        found.notListed.push({
          type: `${gv.group}/${gv.version}`,
          why: `discovery failed: ${errorText(error)}`,
        });
        return [];
      }
    }),
  );
  return lists.flat();
}

/** Metadata only: a list of `PartialObjectMetadata`, else the objects whole. */
const METADATA_LIST =
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/**
 * The objects of `type` in the scope, up to `room` of them, page by page,
 * metadata only, and how many more the list said it had; or why it could
 * not be listed.
 */
export async function listType(
  context: PluginContext,
  where: { type: ScopeType; scope: WhyScope; room: number },
): Promise<{ items: Listed[]; beyond: number } | { why: string }> {
  const { type, scope } = where;
  const base = `${context.server}/apis/${pathSegment(type.group)}/${
    pathSegment(type.version)
  }/${
    scope.kind === "namespace" ? `namespaces/${pathSegment(scope.name)}/` : ""
  }${pathSegment(type.resource)}`;
  const items: Listed[] = [];
  let next: string | undefined;
  do {
    const limit = Math.max(1, Math.min(LIST_PAGE, where.room - items.length));
    const url = `${base}?limit=${limit}${
      next === undefined ? "" : `&continue=${encodeURIComponent(next)}`
    }`;
    let answer: unknown;
    try {
      answer = await context.client.get(url, { accept: METADATA_LIST });
    } catch (error) {
      return { why: errorText(error) };
    }
    const page = pageOf(answer, type);
    const room = Math.max(0, where.room - items.length);
    items.push(...page.items.slice(0, room));
    const over = Math.max(0, page.items.length - room);
    if (items.length >= where.room && (over > 0 || page.next !== undefined)) {
      return { items, beyond: over + Math.max(page.remaining, 0) || 1 };
    }
    next = page.next;
  } while (next !== undefined);
  return { items, beyond: 0 };
}

/** The objects of one list page, its continue token and its remaining count. */
export function pageOf(
  answer: unknown,
  type: ScopeType,
): { items: Listed[]; next?: string; remaining: number } {
  const list = isRecord(answer) ? answer : {};
  const metadata = isRecord(list.metadata) ? list.metadata : {};
  const items: Listed[] = [];
  for (const item of Array.isArray(list.items) ? list.items : []) {
    const meta = isRecord(item) && isRecord(item.metadata)
      ? item.metadata
      : undefined;
    if (typeof meta?.name !== "string" || meta.name === "") continue;
    items.push({
      object: {
        group: type.group,
        version: type.version,
        resource: type.resource,
        kind: type.kind,
        namespace: typeof meta.namespace === "string" ? meta.namespace : "",
        name: meta.name,
      },
      ...deletionOf(item),
      ...(meta.ownerReferences === undefined
        ? {}
        : { ownerReferences: meta.ownerReferences }),
    });
  }
  const next = typeof metadata.continue === "string" &&
      metadata.continue !== ""
    ? metadata.continue
    : undefined;
  const remaining = typeof metadata.remainingItemCount === "number"
    ? metadata.remainingItemCount
    : 0;
  return { items, ...(next === undefined ? {} : { next }), remaining };
}
