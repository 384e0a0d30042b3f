/**
 * `kubectl dependencies why namespace/<ns>` and `why workspace`: what holds
 * the objects of a namespace (or of the whole workspace), and how long its
 * deletion has been going on ({@linkcode whyScope}).
 *
 * Which objects: those of the types a delete could be denied for, the
 * types the workspace binds from providers and its own CRDs, found through
 * discovery as the user ({@linkcode scopeTypes}: every group but the
 * built-in ones, kcp's and the Locks' own), listed in pages of at most
 * {@linkcode LIST_PAGE} metadata-only items (`why_scope_list.ts`). Each is
 * asked about with the dry-run delete `why` sends,
 * {@linkcode SCOPE_CONCURRENCY} at a time, at most `maxObjects` in all; the
 * held ones are named, at most `maxHeld`, the others counted, each with
 * its owners being deleted (`why_owners.ts`: under foreground deletion an
 * owner waits for a held dependent). A namespace that is not being deleted
 * is asked about itself too (a Lock may hold it); one being deleted would
 * only answer that it is. A Namespace the user may not read is taken as
 * not being deleted.
 *
 * @module
 */
import type { Cause, CauseObject } from "../causes/mod.ts";
import { KubeApiError, pathSegment } from "../kcp/mod.ts";
import { errorText } from "../runtime/mod.ts";
import { type PluginContext, PluginError } from "./context.ts";
import { apiFailure, workspaceOf } from "./discovery.ts";
import { type HttpAnswer, objectUrl } from "./dry_run.ts";
import { decide } from "./why_decision.ts";
import {
  type DeletingOwner,
  deletionOf,
  withDeletingOwners,
} from "./why_owners.ts";
import {
  discoverTypes,
  type Listed,
  listType,
  type NotListed,
  type WhyScope,
} from "./why_scope_list.ts";

export {
  isBuiltinGroup,
  LIST_PAGE,
  MAX_GROUPS,
  type NotListed,
  type ScopeType,
  scopeTypes,
  type WhyScope,
} from "./why_scope_list.ts";

/** The most objects asked about by default (`--max-objects`). */
export const DEFAULT_MAX_OBJECTS = 1_000;
/** The most held objects named by default (`--max-held`); the rest are counted. */
export const DEFAULT_MAX_HELD = 20;
/** Dry runs in flight at once. */
export const SCOPE_CONCURRENCY = 8;
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
  /** Its owners being deleted (`why_owners.ts`), when it is named and any is. */
  deletingOwners?: DeletingOwner[];
  /** Its owners not read (malformed, past a bound, unreadable), when any. */
  ownersNotRead?: number;
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
  const report = scopeReport({
    scope: head.scope,
    answers,
    asked: asked.length,
    notAsked,
    notListed,
    maxHeld: options.maxHeld ?? DEFAULT_MAX_HELD,
  });
  // The owners of the objects named: which are being deleted, and since when.
  const owners = new Map<ScopeObject | undefined, unknown>(
    answers.map((answer, i) => [answer, asked[i]!.ownerReferences]),
  );
  const objects = await withDeletingOwners(
    context,
    report.objects,
    (o) => o.state === "error" ? undefined : owners.get(o),
  );
  return { ...report, objects };
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
