/**
 * What a user types after kubectl (`vpcs`, `vpc`, `VPC`, a short name,
 * `vpcs.network.example.com`, `vpcs.v1alpha1.network.example.com`), turned
 * into a group, version and resource through the API server's discovery,
 * as the user; which APIExport the workspace binds a type from; and the
 * {@linkcode PluginError} of a failed API call, which names the permission
 * a 403 lacks.
 *
 * Parsing a discovery answer and choosing among its resources are pure
 * functions ({@linkcode parseGroupList}, {@linkcode parseResourceList},
 * {@linkcode typeQueries}, {@linkcode chooseType}); only
 * {@linkcode resolveType} and {@linkcode bindingFor} read the server.
 *
 * @example Usage
 * ```ts ignore
 * import { bindingFor, resolveType } from "./discovery.ts";
 *
 * const type = await resolveType(context, "vpc");
 * // { group: "network.example.com", version: "v1alpha1", resource: "vpcs", kind: "VPC", namespaced: true }
 * const from = await bindingFor(context, type);
 * // { path: "root:providers:network", name: "network.example.com" }
 * ```
 *
 * @module
 */
import { KubeApiError, pathSegment } from "../kcp/mod.ts";
import { typeName } from "../rules/mod.ts";
import { errorText, isRecord, printable } from "../runtime/mod.ts";
import { EXIT_ERROR, type PluginContext, PluginError } from "./context.ts";

/** A type as the server serves it. */
export interface ResolvedType {
  /** API group, `""` for the core group. */
  group: string;
  /** Version. */
  version: string;
  /** Plural resource. */
  resource: string;
  /** Kind. */
  kind: string;
  /** Whether its objects live in namespaces. */
  namespaced: boolean;
}

/** One resource of a discovery answer, with the names it answers to. */
export interface DiscoveredResource extends ResolvedType {
  /** Singular name (the kind in lower case when the server gives none). */
  singular: string;
  /** Short names, such as `ns`. */
  shortNames: string[];
}

/** One group of `/apis`. */
export interface DiscoveredGroup {
  /** The group's name. */
  name: string;
  /** The version the server prefers. */
  preferredVersion: string;
  /** Every version it serves. */
  versions: string[];
}

/** One way to read what the user typed. */
export interface TypeQuery {
  /** Resource, singular, kind or short name, in lower case. */
  resource: string;
  /** The group, when given. */
  group?: string;
  /** The version, when given. */
  version?: string;
}

const BINDINGS = "/apis/apis.kcp.io/v1alpha2/apibindings";

/**
 * The groups of an `/apis` answer (an `APIGroupList`), leaving out what is
 * malformed.
 */
export function parseGroupList(answer: unknown): DiscoveredGroup[] {
  const groups = isRecord(answer) && Array.isArray(answer.groups)
    ? answer.groups
    : [];
  const found: DiscoveredGroup[] = [];
  for (const group of groups) {
    if (!isRecord(group) || typeof group.name !== "string") continue;
    const versions = (Array.isArray(group.versions) ? group.versions : [])
      .flatMap((v) =>
        isRecord(v) && typeof v.version === "string" ? [v.version] : []
      );
    const preferred = isRecord(group.preferredVersion) &&
        typeof group.preferredVersion.version === "string"
      ? group.preferredVersion.version
      : versions[0];
    if (preferred === undefined) continue;
    found.push({ name: group.name, preferredVersion: preferred, versions });
  }
  return found;
}

/**
 * The resources of a group version's answer (an `APIResourceList`), without
 * subresources, for `group` and `version` as asked.
 */
export function parseResourceList(
  answer: unknown,
  options: { group: string; version: string },
): DiscoveredResource[] {
  const resources = isRecord(answer) && Array.isArray(answer.resources)
    ? answer.resources
    : [];
  const found: DiscoveredResource[] = [];
  for (const entry of resources) {
    if (!isRecord(entry)) continue;
    const { name, kind } = entry;
    if (typeof name !== "string" || name === "" || name.includes("/")) {
      continue;
    }
    if (typeof kind !== "string" || kind === "") continue;
    const singular = typeof entry.singularName === "string" &&
        entry.singularName !== ""
      ? entry.singularName
      : kind.toLowerCase();
    const shortNames = Array.isArray(entry.shortNames)
      ? entry.shortNames.filter((s): s is string => typeof s === "string")
      : [];
    found.push({
      group: options.group,
      version: options.version,
      resource: name,
      kind,
      namespaced: entry.namespaced === true,
      singular,
      shortNames,
    });
  }
  return found;
}

/**
 * The ways to read `name`, most specific first, as kubectl reads a type:
 * `<resource>.<version>.<group>` (when it has three parts or more), then
 * `<resource>.<group>`, or just a resource without a dot. Names are
 * compared in lower case.
 *
 * @throws {PluginError} For an empty name or one with an empty part.
 */
export function typeQueries(name: string): TypeQuery[] {
  const lower = name.trim().toLowerCase();
  const parts = lower.split(".");
  if (lower === "" || parts.some((p) => p === "")) {
    throw new PluginError(
      `Cannot read the type '${
        printable(name)
      }': want <resource>, <resource>.<group> or <resource>.<version>.<group>`,
    );
  }
  const [resource, ...rest] = parts as [string, ...string[]];
  if (rest.length === 0) return [{ resource }];
  const queries: TypeQuery[] = [];
  if (rest.length >= 2) {
    queries.push({
      resource,
      version: rest[0]!,
      group: rest.slice(1).join("."),
    });
  }
  queries.push({ resource, group: rest.join(".") });
  return queries;
}

/** The resources `query` names: by plural, singular, kind or short name. */
export function matchResources(
  resources: readonly DiscoveredResource[],
  query: TypeQuery,
): DiscoveredResource[] {
  return resources.filter((r) =>
    (query.group === undefined || r.group === query.group) &&
    (query.version === undefined || r.version === query.version) &&
    (r.resource === query.resource || r.singular === query.resource ||
      r.kind.toLowerCase() === query.resource ||
      r.shortNames.includes(query.resource))
  );
}

/**
 * The one type among `candidates` (what {@linkcode matchResources} found
 * for `name`): the core group's when it has one, as kubectl prefers it,
 * else the only one.
 *
 * @throws {PluginError} With exit code 2: when there is none ("the server
 * doesn't have a resource type"), or several, naming them.
 */
export function chooseType(
  name: string,
  candidates: readonly DiscoveredResource[],
): ResolvedType {
  const core = candidates.filter((c) => c.group === "");
  const pool = core.length > 0 ? core : candidates;
  const distinct = new Map<string, DiscoveredResource>();
  for (const c of pool) {
    distinct.set(typeName(c), distinct.get(typeName(c)) ?? c);
  }
  const [only, ...others] = [...distinct.values()];
  if (only === undefined) {
    throw new PluginError(
      `the server doesn't have a resource type "${printable(name)}"`,
      { exitCode: EXIT_ERROR },
    );
  }
  if (others.length > 0) {
    const names = [...distinct.keys()].sort();
    throw new PluginError(
      `the type "${printable(name)}" is ambiguous: it may be ${
        names.join(", ")
      }; name one as <resource>.<group>`,
      { exitCode: EXIT_ERROR },
    );
  }
  return {
    group: only.group,
    version: only.version,
    resource: only.resource,
    kind: only.kind,
    namespaced: only.namespaced,
  };
}

/**
 * Resolves what the user typed through the workspace's discovery, as the
 * user: with a group, only that group is read; without, the core group
 * and every group's preferred version, in parallel. A group version whose
 * discovery fails (a stale aggregated API) is passed over, as kubectl
 * does, and named if nothing matches.
 *
 * @throws {PluginError} With exit code 2 when the type is unknown or
 * ambiguous, or discovery cannot be read (a 403 anywhere, or `/apis`).
 */
export async function resolveType(
  context: PluginContext,
  name: string,
): Promise<ResolvedType> {
  const queries = typeQueries(name);
  const failed: string[] = [];
  if (queries[0]!.group !== undefined) {
    const known = await readGroups(context);
    for (const query of queries) {
      const group = known.find((g) => g.name === query.group);
      if (group === undefined) continue;
      if (
        query.version !== undefined && !group.versions.includes(query.version)
      ) {
        continue;
      }
      const gv = {
        group: group.name,
        version: query.version ?? group.preferredVersion,
      };
      const found = matchResources(
        await readResources(context, gv, failed),
        query,
      );
      if (found.length > 0) return chooseType(name, found);
    }
    return unknownType(name, failed);
  }
  const core = { group: "", version: "v1" };
  const [coreResources, known] = await Promise.all([
    readResources(context, core, failed),
    readGroups(context),
  ]);
  const lists = await Promise.all(
    known.map((g) =>
      readResources(
        context,
        { group: g.name, version: g.preferredVersion },
        failed,
      )
    ),
  );
  const found = matchResources(
    [...coreResources, ...lists.flat()],
    queries[0]!,
  );
  if (found.length > 0) return chooseType(name, found);
  return unknownType(name, failed);
}

/** The unknown-type failure, naming group versions whose discovery failed. */
function unknownType(name: string, failed: readonly string[]): never {
  throw new PluginError(
    `the server doesn't have a resource type "${printable(name)}"${
      failed.length === 0 ? "" : ` (discovery failed for ${failed.join(", ")})`
    }`,
    { exitCode: EXIT_ERROR },
  );
}

/** `/apis`, as the user. */
async function readGroups(context: PluginContext): Promise<DiscoveredGroup[]> {
  try {
    return parseGroupList(await context.client.get(`${context.server}/apis`));
  } catch (error) {
    throw apiFailure(error, context, { verb: "discover", what: "the APIs" });
  }
}

/**
 * The resources of one group version, as the user. One that fails gives
 * nothing and is noted in `failed`; a 403 fails the whole resolution.
 */
async function readResources(
  context: PluginContext,
  gv: { group: string; version: string },
  failed: string[],
): Promise<DiscoveredResource[]> {
  const url = gv.group === ""
    ? `${context.server}/api/${pathSegment(gv.version)}`
    : `${context.server}/apis/${pathSegment(gv.group)}/${
      pathSegment(gv.version)
    }`;
  try {
    return parseResourceList(await context.client.get(url), gv);
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 403) {
      throw apiFailure(error, context, {
        verb: "discover",
        what: gv.group === "" ? gv.version : `${gv.group}/${gv.version}`,
      });
    }
    failed.push(gv.group === "" ? gv.version : `${gv.group}/${gv.version}`);
    return [];
  }
}

/**
 * The export the workspace binds `type` from: the `spec.reference.export`
 * of the APIBinding whose `status.boundResources` lists it (a reference
 * without a path is the workspace's own, written as the context's
 * workspace path), or `undefined` for a type of the workspace's own: the
 * core group (never bound, so not read), a CRD, or a server without
 * APIBindings.
 *
 * @throws {PluginError} With exit code 2 when the APIBindings cannot be
 * read, naming the permission on a 403.
 */
export async function bindingFor(
  context: PluginContext,
  type: { group: string; resource: string },
): Promise<{ path: string; name: string } | undefined> {
  if (type.group === "") return undefined;
  let items: unknown[];
  try {
    items = (await context.client.list(`${context.server}${BINDINGS}`)).items;
  } catch (error) {
    if (error instanceof KubeApiError && error.notFound) return undefined;
    throw apiFailure(error, context, {
      verb: "list",
      what: "apibindings.apis.kcp.io",
      why: ` (read to learn which APIExport ${typeName(type)} is bound from)`,
    });
  }
  const reference = exportOf(items, type);
  if (reference === undefined) return undefined;
  if (reference.path !== undefined) {
    return { path: reference.path, name: reference.name };
  }
  const own = workspaceOf(context.server);
  if (own === undefined) {
    throw new PluginError(
      `${typeName(type)} is bound from the APIExport ${
        printable(reference.name)
      } of this workspace, but the server URL ${
        printable(context.server)
      } names no workspace (/clusters/<path>) to write into the Lock`,
    );
  }
  return { path: own, name: reference.name };
}

/**
 * The `spec.reference.export` of the first of `bindings` (APIBinding
 * objects as read) whose `status.boundResources` lists `type`; `path` is
 * absent when the reference names none (the binding's own workspace).
 */
export function exportOf(
  bindings: readonly unknown[],
  type: { group: string; resource: string },
): { path?: string; name: string } | undefined {
  for (const binding of bindings) {
    if (!isRecord(binding)) continue;
    const status = isRecord(binding.status) ? binding.status : {};
    const bound = Array.isArray(status.boundResources)
      ? status.boundResources
      : [];
    const listed = bound.some((b) =>
      isRecord(b) && b.group === type.group && b.resource === type.resource
    );
    if (!listed) continue;
    const spec = isRecord(binding.spec) ? binding.spec : {};
    const reference = isRecord(spec.reference) ? spec.reference : {};
    const exported = isRecord(reference.export) ? reference.export : {};
    if (typeof exported.name !== "string" || exported.name === "") continue;
    return typeof exported.path === "string" && exported.path !== ""
      ? { path: exported.path, name: exported.name }
      : { name: exported.name };
  }
  return undefined;
}

/**
 * The workspace a server URL names (`https://host/clusters/root:org:ws` gives
 * `root:org:ws`), or `undefined` when it names none.
 */
export function workspaceOf(server: string): string | undefined {
  let path: string;
  try {
    path = new URL(server).pathname;
  } catch {
    return undefined;
  }
  const match = /\/clusters\/([^/]+)\/?$/.exec(path);
  if (match === null) return undefined;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return undefined;
  }
}

/** What an API call was doing, for {@linkcode apiFailure}'s message. */
export interface ApiAction {
  /** The verb, as RBAC names it (`create`, `list`), or `discover`. */
  verb: string;
  /** What it acted on, such as `locks.dependencies.opendefense.cloud`. */
  what: string;
  /** The namespace, for a namespaced resource. */
  namespace?: string;
  /** Added after the message, such as why it was read. */
  why?: string;
}

/**
 * The {@linkcode PluginError} (exit code 2) of a failed API call: on a 403,
 * `you may not <verb> <what> in namespace <ns>` (or `in workspace <ws>`);
 * otherwise the error's own text.
 */
export function apiFailure(
  error: unknown,
  context: Pick<PluginContext, "server">,
  action: ApiAction,
): PluginError {
  const where = action.namespace !== undefined
    ? ` in namespace ${action.namespace}`
    : ` in workspace ${workspaceOf(context.server) ?? context.server}`;
  let message: string;
  if (error instanceof KubeApiError && error.status === 403) {
    message = action.verb === "discover"
      ? `you may not read the discovery of ${action.what}${where}: is this the right workspace, and may you access it?`
      : `you may not ${action.verb} ${action.what}${where}${action.why ?? ""}`;
  } else if (error instanceof KubeApiError && error.status === 401) {
    message =
      `the server does not accept your credentials (401) while trying to ${action.verb} ${action.what}${where}: log in again`;
  } else {
    message = `cannot ${action.verb} ${action.what}${where}: ${
      printable(errorText(error), 1000)
    }`;
  }
  return new PluginError(message, { exitCode: EXIT_ERROR });
}
