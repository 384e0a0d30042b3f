/**
 * `kubectl dependencies why namespace/<ns>` and `why workspace`: what holds
 * the objects of a namespace (or of the whole workspace), and how long its
 * deletion has been going on ({@linkcode whyScope}).
 *
 * Which objects: those of the types a delete could be denied for, the
 * types the workspace binds from providers and its own CRDs, found through
 * discovery as the user ({@linkcode scopeTypes}: every group but the
 * built-in ones, kcp's and the Locks' own), listed in pages of at most
 * {@linkcode LIST_PAGE} metadata-only items. Each is asked about with the
 * dry-run delete `why` sends, {@linkcode SCOPE_CONCURRENCY} at a time, at
 * most `maxObjects` in all; the held ones are named, at most `maxHeld`,
 * the others counted. A namespace that is not being deleted is asked about
 * itself too (a Lock may hold it); one being deleted would only answer
 * that it is. A Namespace the user may not read is taken as not being
 * deleted.
 *
 * @module
 */
import type { Cause, CauseObject } from "../causes/mod.ts";
import { sinceOf } from "../causes/mod.ts";
import { KubeApiError, pathSegment } from "../kcp/mod.ts";
import { GROUP } from "../rules/mod.ts";
import { compareStrings, errorText, isRecord } from "../runtime/mod.ts";
import { type PluginContext, PluginError } from "./context.ts";
import { apiFailure, parseGroupList, workspaceOf } from "./discovery.ts";
import { type HttpAnswer, objectUrl } from "./dry_run.ts";
import { decide } from "./why_decision.ts";

/** What `why` looks into: one namespace, or the whole workspace. */
export type WhyScope =
  | { kind: "namespace"; name: string }
  | { kind: "workspace" };

/** The most objects asked about by default (`--max-objects`). */
export const DEFAULT_MAX_OBJECTS = 1_000;
/** The most held objects named by default (`--max-held`); the rest are counted. */
export const DEFAULT_MAX_HELD = 20;
/** Dry runs in flight at once. */
export const SCOPE_CONCURRENCY = 8;
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

/** What became of one object of the scope that a delete would not go through for. */
export interface ScopeObject {
  /** The object. */
  object: CauseObject;
  /** `held` (with causes), `denied` (otherwise), `error` (not asked). */
  state: "held" | "denied" | "error";
  /** What holds it. */
  causes?: Cause[];
  /** The denial, as the API server worded it. */
  message?: string;
  /** Why it could not be asked. */
  error?: string;
  /** Its `deletionTimestamp`, when it is being deleted (foreground, or with its namespace). */
  deletionTimestamp?: string;
}

/** A type whose objects could not be listed, or discovered. */
export interface NotListed {
  /** `<resource>.<group>`, or the group version whose discovery failed. */
  type: string;
  /** Why, in words. */
  why: string;
}

/** The answer of `why namespace/<ns>` and `why workspace`. */
export interface ScopeReport {
  /** The namespace or workspace, and its deletion if it is being deleted. */
  scope: {
    kind: "Namespace" | "Workspace";
    name: string;
    /** Its `deletionTimestamp`, when being deleted (RFC 3339). */
    deletionTimestamp?: string;
  };
  /** `held`: something in it is held; `free`: nothing, every object asked; `unknown`: neither can be said. */
  state: "held" | "free" | "unknown";
  /** Whether a delete of something in it would be denied now. */
  held: boolean;
  /** How many objects were asked about. */
  asked: number;
  /** How many of them are held (or denied otherwise). */
  heldCount: number;
  /** The held objects named (at most `maxHeld`), then those not asked for an error. */
  objects: ScopeObject[];
  /** Held objects found and not named. */
  notNamed: number;
  /** Objects not asked about past `maxObjects`, as far as the lists told. */
  notAsked: number;
  /** Whether every object of every type was listed and asked about. */
  complete: boolean;
  /** Types (or groups) that could not be read. */
  notListed: NotListed[];
}

/** Options for {@linkcode whyScope}. */
export interface WhyScopeOptions {
  /** Sends a dry-run DELETE to an object's URL, as the user. */
  dryRun: (url: string) => Promise<HttpAnswer>;
  /** The most objects asked about. @default {DEFAULT_MAX_OBJECTS} */
  maxObjects?: number;
  /** The most held objects named. @default {DEFAULT_MAX_HELD} */
  maxHeld?: number;
  /** Dry runs in flight at once. @default {SCOPE_CONCURRENCY} */
  concurrency?: number;
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

/** An object a list named, with its deletion if any. */
interface Listed {
  object: CauseObject;
  deletionTimestamp?: string;
}

/**
 * Lists, discovers and asks, as the user: the {@linkcode ScopeReport} of
 * `scope`.
 *
 * @throws {PluginError} With exit code 2 when the namespace does not exist
 * or may not be read, or discovery cannot be read.
 */
export async function whyScope(
  context: PluginContext,
  scope: WhyScope,
  options: WhyScopeOptions,
): Promise<ScopeReport> {
  const maxObjects = options.maxObjects ?? DEFAULT_MAX_OBJECTS;
  const head = await scopeHead(context, scope);
  const notListed: NotListed[] = [];
  const types = await discoverTypes(context, { scope, notListed });
  const listed: Listed[] = [];
  let notAsked = 0;
  for (const type of types) {
    const room = maxObjects - listed.length;
    const page = await listType(context, { type, scope, room });
    if ("why" in page) {
      notListed.push({ type: `${type.resource}.${type.group}`, why: page.why });
      continue;
    }
    listed.push(...page.items);
    notAsked += page.beyond;
  }
  const asked: Listed[] = [...listed];
  if (head.askItself !== undefined) asked.unshift(head.askItself);
  const answers = await askAll(context, asked, options);
  return scopeReport({
    scope: head.scope,
    answers,
    asked: asked.length,
    notAsked,
    notListed,
    maxHeld: options.maxHeld ?? DEFAULT_MAX_HELD,
  });
}

/**
 * The {@linkcode ScopeReport} of what was asked: the held and denied named
 * first (at most `maxHeld`, in the order asked), then the errors; `held`
 * when anything is, else `free` only when every object was listed and
 * answered.
 */
export function scopeReport(
  found: {
    scope: ScopeReport["scope"];
    answers: readonly (ScopeObject | undefined)[];
    asked: number;
    notAsked: number;
    notListed: readonly NotListed[];
    maxHeld: number;
  },
): ScopeReport {
  const holding = found.answers.filter((a): a is ScopeObject =>
    a !== undefined && a.state !== "error"
  );
  const failed = found.answers.filter((a): a is ScopeObject =>
    a !== undefined && a.state === "error"
  );
  const named = holding.slice(0, found.maxHeld);
  const complete = found.notAsked === 0 && found.notListed.length === 0 &&
    failed.length === 0;
  const state = holding.length > 0 ? "held" : complete ? "free" : "unknown";
  return {
    scope: found.scope,
    state,
    held: holding.length > 0,
    asked: found.asked,
    heldCount: holding.length,
    objects: [...named, ...failed.slice(0, found.maxHeld)],
    notNamed: holding.length - named.length,
    notAsked: found.notAsked,
    complete,
    notListed: [...found.notListed],
  };
}

/** The scope's name and deletion, and the namespace itself when it is to be asked about. */
async function scopeHead(
  context: PluginContext,
  scope: WhyScope,
): Promise<{ scope: ScopeReport["scope"]; askItself?: Listed }> {
  if (scope.kind === "workspace") {
    const cluster = await readOptional(
      context,
      `${context.server}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`,
    );
    return {
      scope: {
        kind: "Workspace",
        name: workspaceOf(context.server) ?? "",
        ...deletionOf(cluster),
      },
    };
  }
  let namespace: unknown;
  try {
    namespace = await context.client.get(
      `${context.server}/api/v1/namespaces/${pathSegment(scope.name)}`,
    );
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) {
      throw new PluginError(
        `not found: namespace ${JSON.stringify(scope.name)}`,
      );
    }
    // A tenant who may not read its Namespace still asks about what is in it.
    if (!(error instanceof KubeApiError && error.status === 403)) {
      throw apiFailure(error, context, { verb: "get", what: "namespaces" });
    }
  }
  const deletion = deletionOf(namespace);
  const itself: Listed = {
    object: {
      group: "",
      version: "v1",
      resource: "namespaces",
      kind: "Namespace",
      namespace: "",
      name: scope.name,
    },
  };
  return {
    scope: { kind: "Namespace", name: scope.name, ...deletion },
    ...(deletion.deletionTimestamp === undefined ? { askItself: itself } : {}),
  };
}

/** `{ deletionTimestamp }` of an object being deleted, when RFC 3339; else `{}`. */
function deletionOf(object: unknown): { deletionTimestamp?: string } {
  const metadata = isRecord(object) ? object.metadata : undefined;
  const stamp = isRecord(metadata) ? metadata.deletionTimestamp : undefined;
  const valid = sinceOf({ metadata: { creationTimestamp: stamp } });
  return valid === undefined ? {} : { deletionTimestamp: valid };
}

/** An object, or `undefined` when it cannot be read (best effort). */
async function readOptional(
  context: PluginContext,
  url: string,
): Promise<unknown> {
  try {
    return await context.client.get(url);
  } catch {
    return undefined;
  }
}

/** The types of every group but the built-in ones, through discovery. */
async function discoverTypes(
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
 * and how many more the list said it had; or why it could not be listed.
 */
async function listType(
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
function pageOf(
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

/** Asks about each object, a few at a time: what holds it, `undefined` when nothing does. */
async function askAll(
  context: PluginContext,
  objects: readonly Listed[],
  options: WhyScopeOptions,
): Promise<(ScopeObject | undefined)[]> {
  const workspace = workspaceOf(context.server);
  const answers: (ScopeObject | undefined)[] = new Array(objects.length);
  let next = 0;
  const worker = async () => {
    while (next < objects.length) {
      const at = next++;
      const { object, deletionTimestamp } = objects[at]!;
      const stamp = deletionTimestamp === undefined
        ? {}
        : { deletionTimestamp };
      let url: string;
      try {
        url = objectUrl(context.server, object);
      } catch (error) {
        answers[at] = { object, state: "error", error: errorText(error) };
        continue;
      }
      const decision = decide(await options.dryRun(url), object, {
        workspace,
      });
      answers[at] = decision.state === "free" ? undefined : {
        object,
        ...decision.state === "error"
          ? { state: "error", error: decision.message }
          : {
            state: decision.state,
            message: decision.message,
            ...(decision.causes === undefined
              ? {}
              : { causes: decision.causes }),
          },
        ...stamp,
      } as ScopeObject;
    }
  };
  const width = Math.max(1, options.concurrency ?? SCOPE_CONCURRENCY);
  await Promise.all(
    Array.from({ length: Math.min(width, objects.length) }, worker),
  );
  return answers;
}
