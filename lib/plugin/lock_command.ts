/**
 * `kubectl dependencies lock` and `unlock`: a Lock written for the user from
 * what they would type after kubectl.
 *
 * ```sh
 * kubectl dependencies lock vpc/core -n team-a --reason "production VPC"
 * kubectl dependencies lock namespace/team-a --reason "tenant home"
 * kubectl dependencies lock vpc/core -n team-a --reason "migration" --for 2h
 * kubectl dependencies unlock vpc/core -n team-a
 * ```
 *
 * `lock` resolves the type through discovery and the APIExport it is bound
 * from through the workspace's APIBindings (none: a type of the workspace's
 * own, no `apiExportRef`), checks that the object exists and that no Lock
 * locks it yet (`--update` replaces that Lock's reason, operations and end:
 * without `--for` or `--until` it then holds until deleted),
 * creates the Lock (named `<resource>-<name>` unless `--name` says
 * otherwise), prints it and waits until its `Ready` condition is True.
 * `unlock` deletes every Lock of the namespace whose target is the object.
 * Exit codes: 0 done (Ready), 1 the Lock is not in effect (`Ready` False)
 * or nothing locks the object, 2 a usage, access or server error, or no
 * `Ready` condition in time.
 *
 * @module
 */
import { KubeApiError, type KubeObject, pathSegment } from "../kcp/mod.ts";
import { LOCK_PLURAL } from "../locks/mod.ts";
import { API_VERSION, GROUP } from "../rules/mod.ts";
import { isRecord, printable } from "../runtime/mod.ts";
import {
  EXIT_HELD,
  EXIT_OK,
  type PluginContext,
  PluginError,
} from "./context.ts";
import {
  apiFailure,
  bindingFor,
  type ResolvedType,
  resolveType,
} from "./discovery.ts";
import { typeName } from "../rules/mod.ts";
import {
  buildLock,
  defaultLockName,
  formatObject,
  LOCK_USAGE,
  lockRef,
  locksObject,
  lockToUpdate,
  parseLockArgs,
  parseUnlockArgs,
  readinessOf,
  UNLOCK_USAGE,
} from "./lock_object.ts";

/** Between two reads of a Lock while waiting for its Ready condition. */
const POLL_MS = 500;

/** The Locks of one namespace. */
function locksUrl(context: PluginContext, namespace: string): string {
  return `${context.server}/apis/${API_VERSION}/namespaces/${
    pathSegment(namespace)
  }/${LOCK_PLURAL}`;
}

/** `locks.dependencies.opendefense.cloud`, as permission errors name it. */
const LOCKS = `${LOCK_PLURAL}.${GROUP}`;

/** Where the object lives: its namespace, or its own name for a namespace. */
function lockNamespace(
  context: PluginContext,
  type: ResolvedType,
  name: string,
): string {
  if (type.group === "" && type.resource === "namespaces") return name;
  if (!type.namespaced) {
    throw new PluginError(
      `${
        typeName(type)
      } is cluster-scoped: a Lock holds only objects in its own namespace, or that namespace itself`,
    );
  }
  return context.namespace;
}

/**
 * Runs `kubectl dependencies lock` with its arguments (after the command
 * name) and returns the exit code: 0 once the Lock is Ready, or at once
 * with `--timeout 0`. `options.now` is the clock `--for` counts from
 * (default `Date.now`).
 *
 * @throws {PluginError} With exit code 1 when its Ready condition is False
 * (after printing it), 2 on any other failure or no Ready condition in time.
 */
export async function lockCommand(
  context: PluginContext,
  args: readonly string[],
  options: { pollMs?: number; now?: () => number } = {},
): Promise<number> {
  const parsed = parseLockArgs(args, { now: (options.now ?? Date.now)() });
  if ("help" in parsed) {
    context.io.out(LOCK_USAGE);
    return EXIT_OK;
  }
  const type = await resolveType(context, parsed.type);
  const namespace = lockNamespace(context, type, parsed.name);
  const object = { ...type, name: parsed.name };
  const [, apiExportRef, locks] = await Promise.all([
    checkExists(context, object, namespace),
    bindingFor(context, type),
    listLocks(context, namespace),
  ]);
  const lockName = parsed.lockName ??
    defaultLockName(type.resource, parsed.name);
  const lock = buildLock({
    namespace,
    name: lockName,
    type,
    object: parsed.name,
    apiExportRef,
    reason: parsed.reason,
    operations: parsed.operations,
    expiresAt: parsed.expiresAt,
  });
  const existing = lockToUpdate(locks, object, {
    namespace,
    lockName,
    named: parsed.lockName !== undefined,
    update: parsed.update,
  });
  let written: KubeObject;
  let done: string;
  if (existing === undefined) {
    written = await createLock(context, lock, namespace);
    done = "created";
  } else {
    const name = String(existing.metadata?.name ?? "");
    const spec = isRecord(existing.spec) ? existing.spec : {};
    const same = spec.reason === parsed.reason &&
      JSON.stringify(spec.operations) === JSON.stringify(parsed.operations) &&
      spec.expiresAt === parsed.expiresAt;
    written = same ? existing : await patchLock(context, {
      namespace,
      name,
      spec: {
        reason: parsed.reason,
        operations: parsed.operations,
        // A merge patch removes the field with null: the Lock then holds
        // until deleted, as `lock` without --for or --until says.
        expiresAt: parsed.expiresAt ?? null,
      },
    });
    done = same ? "unchanged" : "updated";
  }
  const name = String(written.metadata?.name ?? lockName);
  if (parsed.output === "name") context.io.out(`${lockRef(name)}\n`);
  if (parsed.output === undefined) {
    context.io.out(`${lockRef(name)} ${done}\n`);
  }
  if (parsed.timeoutMs === 0) {
    if (parsed.output === "yaml" || parsed.output === "json") {
      context.io.out(formatObject(written, parsed.output));
    }
    return EXIT_OK;
  }
  const { lock: final, settled } = await waitForReady(context, {
    namespace,
    name,
    timeoutMs: parsed.timeoutMs,
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
  });
  if (parsed.output === "yaml" || parsed.output === "json") {
    context.io.out(formatObject(final, parsed.output));
  }
  if (!settled) {
    throw new PluginError(
      `Lock ${namespace}/${name} has no Ready condition after ${
        parsed.timeoutMs / 1000
      }s: is the dependency controller running? The Lock stays; kubectl get lock ${name} -n ${namespace} shows when it is Ready`,
    );
  }
  const readiness = readinessOf(final);
  if (readiness.state === "not-ready") {
    throw new PluginError(
      `Lock ${namespace}/${name} is not in effect: ${
        printable(readiness.reason)
      }: ${printable(readiness.message, 1000)}`,
      { exitCode: EXIT_HELD },
    );
  }
  if (parsed.output === undefined && readiness.state === "ready") {
    context.io.out(
      `${lockRef(name)} is Ready${
        parsed.expiresAt === undefined ? "" : ` until ${parsed.expiresAt}`
      }: ${printable(readiness.message, 1000)}\n`,
    );
  }
  return EXIT_OK;
}

/** Whether the object exists: fails on a 404; any other answer lets it be. */
async function checkExists(
  context: PluginContext,
  object: ResolvedType & { name: string },
  namespace: string,
): Promise<void> {
  const base = object.group === ""
    ? `${context.server}/api/${pathSegment(object.version)}`
    : `${context.server}/apis/${pathSegment(object.group)}/${
      pathSegment(object.version)
    }`;
  const scoped = object.namespaced
    ? `${base}/namespaces/${pathSegment(namespace)}`
    : base;
  try {
    await context.client.get(
      `${scoped}/${pathSegment(object.resource)}/${pathSegment(object.name)}`,
    );
  } catch (error) {
    if (error instanceof KubeApiError && error.notFound) {
      throw new PluginError(
        `${typeName(object)} "${printable(object.name)}" not found${
          object.namespaced ? ` in namespace ${namespace}` : ""
        }`,
      );
    }
    // Not allowed to read it, or unreachable: the Lock may still be written.
  }
}

/** The Locks of a namespace. */
async function listLocks(
  context: PluginContext,
  namespace: string,
): Promise<KubeObject[]> {
  try {
    return (await context.client.list(locksUrl(context, namespace))).items;
  } catch (error) {
    throw lockFailure(error, context, { verb: "list", namespace });
  }
}

async function createLock(
  context: PluginContext,
  lock: KubeObject,
  namespace: string,
): Promise<KubeObject> {
  try {
    return await context.client.request<KubeObject>(
      "POST",
      locksUrl(context, namespace),
      { body: lock },
    );
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 409) {
      throw new PluginError(
        `a Lock named ${lock.metadata?.name} already exists in namespace ${namespace}: use --update, or another --name`,
      );
    }
    throw lockFailure(error, context, { verb: "create", namespace });
  }
}

async function patchLock(
  context: PluginContext,
  options: { namespace: string; name: string; spec: Record<string, unknown> },
): Promise<KubeObject> {
  try {
    return await context.client.request<KubeObject>(
      "PATCH",
      `${locksUrl(context, options.namespace)}/${pathSegment(options.name)}`,
      {
        body: { spec: options.spec },
        contentType: "application/merge-patch+json",
      },
    );
  } catch (error) {
    throw lockFailure(error, context, {
      verb: "patch",
      namespace: options.namespace,
    });
  }
}

/**
 * Reads the Lock until its Ready condition is set for its generation
 * (`settled`) or `timeoutMs` has passed; the Lock as last read.
 */
async function waitForReady(
  context: PluginContext,
  options: {
    namespace: string;
    name: string;
    timeoutMs: number;
    pollMs?: number;
  },
): Promise<{ lock: KubeObject; settled: boolean }> {
  const url = `${locksUrl(context, options.namespace)}/${
    pathSegment(options.name)
  }`;
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    let lock: KubeObject;
    try {
      lock = await context.client.get<KubeObject>(url);
    } catch (error) {
      throw lockFailure(error, context, {
        verb: "get",
        namespace: options.namespace,
      });
    }
    if (readinessOf(lock).state !== "pending") return { lock, settled: true };
    if (Date.now() >= deadline) return { lock, settled: false };
    await new Promise((resolve) =>
      setTimeout(resolve, options.pollMs ?? POLL_MS)
    );
  }
}

/** {@linkcode apiFailure} for Locks; a 404 says the workspace serves none. */
function lockFailure(
  error: unknown,
  context: PluginContext,
  options: { verb: string; namespace: string },
): PluginError {
  if (
    error instanceof KubeApiError && error.notFound &&
    error.detailsName === undefined
  ) {
    return new PluginError(
      `this workspace serves no Locks (${LOCKS}): it needs an APIBinding to the dependency controller's APIExport ${GROUP}`,
    );
  }
  return apiFailure(error, context, {
    verb: options.verb,
    what: LOCKS,
    namespace: options.namespace,
  });
}
/**
 * Runs `kubectl dependencies unlock` with its arguments (after the command
 * name): deletes every Lock of the namespace that locks the object, prints
 * each, and returns 0.
 *
 * @throws {PluginError} With exit code 1 when no Lock locks it (unless
 * `--ignore-not-found`), 2 on any other failure.
 */
export async function unlockCommand(
  context: PluginContext,
  args: readonly string[],
): Promise<number> {
  const parsed = parseUnlockArgs(args);
  if ("help" in parsed) {
    context.io.out(UNLOCK_USAGE);
    return EXIT_OK;
  }
  const type = await resolveType(context, parsed.type);
  const namespace = lockNamespace(context, type, parsed.name);
  const object = {
    group: type.group,
    resource: type.resource,
    name: parsed.name,
  };
  const matching = (await listLocks(context, namespace)).filter((l) =>
    locksObject(l, object)
  );
  if (matching.length === 0) {
    if (parsed.ignoreNotFound) return EXIT_OK;
    throw new PluginError(
      `nothing locks ${typeName(type)}/${
        printable(parsed.name)
      } in namespace ${namespace}`,
      { exitCode: EXIT_HELD },
    );
  }
  for (const lock of matching) {
    const name = String(lock.metadata?.name ?? "");
    try {
      await context.client.request(
        "DELETE",
        `${locksUrl(context, namespace)}/${pathSegment(name)}`,
      );
    } catch (error) {
      // Gone meanwhile: unlocked all the same.
      if (!(error instanceof KubeApiError && error.notFound)) {
        throw lockFailure(error, context, { verb: "delete", namespace });
      }
    }
    context.io.out(
      parsed.output === "name"
        ? `${lockRef(name)}\n`
        : `${lockRef(name)} deleted\n`,
    );
  }
  return EXIT_OK;
}
