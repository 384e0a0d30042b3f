/**
 * The pure part of `kubectl dependencies lock` and `unlock`: their
 * arguments and `--help`, the Lock they write (its default name, its
 * check against the API's schema), which Locks lock an object, a Lock's
 * readiness, and how a Lock is printed.
 *
 * @example Usage
 * ```ts
 * import { buildLock, defaultLockName } from "./lock_object.ts";
 *
 * const lock = buildLock({
 *   namespace: "team-a",
 *   name: defaultLockName("vpcs", "core"), // "vpcs-core"
 *   type: { group: "network.example.com", version: "v1alpha1", resource: "vpcs" },
 *   object: "core",
 *   apiExportRef: { path: "root:providers:network", name: "network.example.com" },
 *   reason: "production VPC",
 *   operations: ["Delete"],
 * });
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createHash } from "node:crypto";
import { stringify as stringifyYaml } from "yaml";
import type { KubeObject } from "../kcp/mod.ts";
import {
  LOCK_KIND,
  LOCK_SINGULAR,
  type LockOperation,
  parseLock,
} from "../locks/mod.ts";
import { API_VERSION, GROUP, READY_CONDITION, typeName } from "../rules/mod.ts";
import { errorText, isRecord, printable } from "../runtime/mod.ts";
import { PluginError } from "./context.ts";
import type { ResolvedType } from "./discovery.ts";
import { parseExpiry, parseOperations, parseTimeout } from "./lock_flags.ts";

export { parseOperations } from "./lock_flags.ts";

/** `kubectl dependencies lock --help`. */
export const LOCK_USAGE =
  `Usage: kubectl dependencies lock <type>/<name> --reason <text> [flags]

Locks an object of the current namespace (or, as namespace/<name>, that
namespace itself) against deletion: creates a Lock and waits until it is Ready.

Flags:
  --reason <text>        Why it is locked; quoted in every denial (required)
  --operations <list>    Delete, or Delete,Update (default Delete)
  --for <duration>       End the Lock after this long, such as 30m or 2h
  --until <time>         End the Lock at this RFC 3339 time, such as
                         2026-12-01T18:00:00Z (default: hold until deleted)
  --update               Replace the reason, operations and end of the Lock
                         that already locks the object, instead of failing
  --name <name>          The Lock's name (default <resource>-<name>)
  --timeout <duration>   How long to wait for Ready, 0 not to wait (default 60s)
  -o, --output <format>  yaml, json or name
  -n, --namespace <ns>   The object's namespace

Exit codes: 0 Ready, 1 not in effect (Ready False), 2 error or no Ready in time.
`;

/** `kubectl dependencies unlock --help`. */
export const UNLOCK_USAGE =
  `Usage: kubectl dependencies unlock <type>/<name> [flags]

Deletes every Lock of the namespace that locks the object.

Flags:
  --ignore-not-found     Exit 0 when no Lock locks the object
  -o, --output <format>  name
  -n, --namespace <ns>   The object's namespace

Exit codes: 0 unlocked, 1 nothing locked it, 2 error.
`;

/** The parsed arguments of `lock`. */
export interface LockArgs {
  /** The type, as typed (`vpc`, `vpcs.network.example.com`). */
  type: string;
  /** The object's name. */
  name: string;
  /** `--reason`. */
  reason: string;
  /** `--operations`. */
  operations: LockOperation[];
  /** `spec.expiresAt` from `--for` or `--until`; absent: until deleted. */
  expiresAt?: string;
  /** `--update`. */
  update: boolean;
  /** `--name`. */
  lockName?: string;
  /** `--timeout` in milliseconds; 0 not to wait. */
  timeoutMs: number;
  /** `-o`. */
  output?: "yaml" | "json" | "name";
}

/** The parsed arguments of `unlock`. */
export interface UnlockArgs {
  /** The type, as typed. */
  type: string;
  /** The object's name. */
  name: string;
  /** `--ignore-not-found`. */
  ignoreNotFound: boolean;
  /** `-o`. */
  output?: "name";
}

/** The object a Lock locks, by type and name (any version, any export). */
export interface LockedObject {
  /** API group, `""` for core. */
  group: string;
  /** Plural resource. */
  resource: string;
  /** Name. */
  name: string;
}

/** The flags every command takes, which the context has applied already. */
const CONTEXT_FLAGS = {
  namespace: { type: "string", short: "n" },
  kubeconfig: { type: "string" },
  context: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** Longest Lock name: a DNS subdomain. */
const NAME_MAX = 253;
/** Hex digits of the hash that shortens a long default name. */
const HASH_DIGITS = 10;

/**
 * Parses the arguments of `lock` (after the command name); `options.now`
 * (ms since the epoch) is the clock `--for` counts from and `--until`
 * must be after.
 *
 * @throws {PluginError} With exit code 2 on a usage error.
 */
export function parseLockArgs(
  args: readonly string[],
  options: { now: number },
): LockArgs | { help: true } {
  const { values, positionals } = parse(args, {
    command: "lock",
    flags: {
      reason: { type: "string" },
      operations: { type: "string" },
      for: { type: "string" },
      until: { type: "string" },
      update: { type: "boolean" },
      name: { type: "string" },
      timeout: { type: "string" },
      output: { type: "string", short: "o" },
    },
  });
  if (values.help === true) return { help: true };
  const { type, name } = objectArg(positionals, "lock");
  if (typeof values.reason !== "string" || values.reason.trim() === "") {
    throw new PluginError("lock: --reason is required: say why it is locked");
  }
  const output = values.output;
  if (
    output !== undefined && output !== "yaml" && output !== "json" &&
    output !== "name"
  ) {
    throw new PluginError(
      `lock: -o must be yaml, json or name: current value is '${
        printable(String(output))
      }'`,
    );
  }
  const lockName = values.name;
  const expiresAt = parseExpiry({
    for: typeof values.for === "string" ? values.for : undefined,
    until: typeof values.until === "string" ? values.until : undefined,
  }, options);
  return {
    type,
    name,
    reason: values.reason,
    operations: parseOperations(String(values.operations ?? "Delete")),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    update: values.update === true,
    ...(typeof lockName === "string" ? { lockName } : {}),
    timeoutMs: parseTimeout(String(values.timeout ?? "60s")),
    ...(output === undefined ? {} : { output }),
  };
}

/**
 * Parses the arguments of `unlock` (after the command name).
 *
 * @throws {PluginError} With exit code 2 on a usage error.
 */
export function parseUnlockArgs(
  args: readonly string[],
): UnlockArgs | { help: true } {
  const { values, positionals } = parse(args, {
    command: "unlock",
    flags: {
      "ignore-not-found": { type: "boolean" },
      output: { type: "string", short: "o" },
    },
  });
  if (values.help === true) return { help: true };
  const { type, name } = objectArg(positionals, "unlock");
  if (values.output !== undefined && values.output !== "name") {
    throw new PluginError(
      `unlock: -o must be name: current value is '${
        printable(String(values.output))
      }'`,
    );
  }
  return {
    type,
    name,
    ignoreNotFound: values["ignore-not-found"] === true,
    ...(values.output === undefined ? {} : { output: "name" as const }),
  };
}

/** `parseArgs` with the context's flags, as a usage error on failure. */
function parse(
  args: readonly string[],
  options: {
    command: string;
    flags: Record<string, { type: "string" | "boolean"; short?: string }>;
  },
): {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
} {
  try {
    return parseArgs({
      args: [...args],
      options: { ...CONTEXT_FLAGS, ...options.flags },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new PluginError(
      `${options.command}: ${errorText(error)} (see --help)`,
    );
  }
}

/** `<type>/<name>`, or `<type> <name>` as kubectl also takes it. */
function objectArg(positionals: readonly string[], command: string): {
  type: string;
  name: string;
} {
  let type: string | undefined;
  let name: string | undefined;
  if (positionals.length === 1) {
    const [arg] = positionals as [string];
    const at = arg.indexOf("/");
    if (at > 0) [type, name] = [arg.slice(0, at), arg.slice(at + 1)];
  } else if (positionals.length === 2 && !positionals[0]!.includes("/")) {
    [type, name] = positionals as [string, string];
  }
  if (type === undefined || name === undefined || name === "") {
    throw new PluginError(
      `${command}: want one object as <type>/<name>, such as vpc/core: current arguments are '${
        printable(positionals.join(" "))
      }'`,
    );
  }
  return { type, name };
}

/**
 * The default name of the Lock of `<resource>/<name>`: `<resource>-<name>`,
 * or, when that is longer than a DNS subdomain may be, its start and a
 * hash of it, so the same object always gets the same name.
 */
export function defaultLockName(resource: string, name: string): string {
  const whole = `${resource}-${name}`;
  if (whole.length <= NAME_MAX) return whole;
  const hash = createHash("sha256").update(whole).digest("hex").slice(
    0,
    HASH_DIGITS,
  );
  const start = whole.slice(0, NAME_MAX - HASH_DIGITS - 1).replace(
    /[-.]+$/,
    "",
  );
  return `${start}-${hash}`;
}

/** What {@linkcode buildLock} builds a Lock from. */
export interface LockSpecOptions {
  /** The Lock's namespace (the namespace's own name for a namespace). */
  namespace: string;
  /** The Lock's name. */
  name: string;
  /** The locked object's type. */
  type: Pick<ResolvedType, "group" | "version" | "resource">;
  /** The locked object's name. */
  object: string;
  /** The export the type is bound from; absent for a type of the workspace's own. */
  apiExportRef?: { path: string; name: string } | undefined;
  /** Why. */
  reason: string;
  /** What it denies. */
  operations: readonly LockOperation[];
  /** When it ends (RFC 3339); absent: until deleted. */
  expiresAt?: string | undefined;
}

/**
 * The Lock object to create, checked as the API checks it.
 *
 * @throws {PluginError} With exit code 2 naming every problem (a name that
 * is no DNS subdomain, a reason too long).
 */
export function buildLock(options: LockSpecOptions): KubeObject {
  const lock = {
    apiVersion: API_VERSION,
    kind: LOCK_KIND,
    metadata: { name: options.name, namespace: options.namespace },
    spec: {
      target: {
        ...(options.apiExportRef === undefined
          ? {}
          : { apiExportRef: { ...options.apiExportRef } }),
        group: options.type.group,
        version: options.type.version,
        resource: options.type.resource,
        name: options.object,
      },
      reason: options.reason,
      operations: [...options.operations],
      ...(options.expiresAt === undefined
        ? {}
        : { expiresAt: options.expiresAt }),
    },
  };
  const parsed = parseLock(lock);
  const problem = parsed.ok ? parsed.expiryProblem : parsed.error;
  if (problem !== undefined) {
    throw new PluginError(
      `Cannot write this Lock: ${printable(problem, 1000)}`,
    );
  }
  return lock;
}

/** Whether `lock` (a Lock as read) locks `object`, whatever version or export it names. */
export function locksObject(lock: unknown, object: LockedObject): boolean {
  if (!isRecord(lock) || !isRecord(lock.spec)) return false;
  const target = lock.spec.target;
  return isRecord(target) && target.group === object.group &&
    target.resource === object.resource && target.name === object.name;
}

/** A Lock's Ready condition for its current generation, as read. */
export type LockReadiness =
  | { state: "pending" }
  | { state: "ready" | "not-ready"; reason: string; message: string };

/**
 * The Lock's `Ready` condition, once the controller has set it for the
 * Lock's current generation (`pending` before).
 */
export function readinessOf(lock: unknown): LockReadiness {
  if (!isRecord(lock)) return { state: "pending" };
  const metadata = isRecord(lock.metadata) ? lock.metadata : {};
  const status = isRecord(lock.status) ? lock.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  const ready = conditions.find((c) =>
    isRecord(c) && c.type === READY_CONDITION
  );
  if (!isRecord(ready)) return { state: "pending" };
  const generation = metadata.generation;
  const observed = ready.observedGeneration;
  if (
    typeof generation === "number" && typeof observed === "number" &&
    observed < generation
  ) {
    return { state: "pending" };
  }
  const reason = typeof ready.reason === "string" ? ready.reason : "";
  const message = typeof ready.message === "string" ? ready.message : "";
  if (ready.status === "True") return { state: "ready", reason, message };
  if (ready.status === "False") return { state: "not-ready", reason, message };
  return { state: "pending" };
}

/** `lock.dependencies.opendefense.cloud/<name>`, as kubectl names it. */
export function lockRef(name: string): string {
  return `${LOCK_SINGULAR}.${GROUP}/${name}`;
}

/** An object as `-o yaml` or `-o json` prints it, without managed fields. */
export function formatObject(
  object: KubeObject,
  format: "yaml" | "json",
): string {
  const { managedFields: _, ...metadata } = object.metadata ?? {};
  const shown = { ...object, metadata };
  return format === "json"
    ? `${JSON.stringify(shown, null, 2)}\n`
    : stringifyYaml(shown);
}

/** What {@linkcode lockToUpdate} decides with. */
export interface LockToUpdateOptions {
  /** The namespace, for messages. */
  namespace: string;
  /** The Lock's name: `--name`, or the default. */
  lockName: string;
  /** Whether `--name` was given. */
  named: boolean;
  /** Whether `--update` was given. */
  update: boolean;
}

/**
 * Of the namespace's `locks`, the one `lock` is to update instead of
 * creating one, or `undefined` to create: with `--update`, the Lock
 * `--name` names, else the one Lock that locks the object.
 *
 * @throws {PluginError} With exit code 2: when a Lock locks the object
 * already and `--update` is not given; when the Lock's name is taken by a
 * Lock of another object; when several Locks lock it and `--update` does
 * not say which.
 */
export function lockToUpdate(
  locks: readonly KubeObject[],
  object: LockedObject,
  options: LockToUpdateOptions,
): KubeObject | undefined {
  const { namespace, lockName } = options;
  const shown = `${typeName(object)}/${printable(object.name)}`;
  const matching = locks.filter((l) => locksObject(l, object));
  const byName = locks.find((l) => l.metadata?.name === lockName);
  const taken = () =>
    new PluginError(
      `a Lock named ${
        printable(lockName)
      } already exists in namespace ${namespace} and locks another object: choose another --name`,
    );
  if (!options.update) {
    const [first] = matching;
    if (first !== undefined) {
      const reason = isRecord(first.spec)
        ? String(first.spec.reason ?? "")
        : "";
      throw new PluginError(
        `${shown} is already locked in namespace ${namespace} by Lock ${
          printable(String(first.metadata?.name ?? ""))
        } ("${
          printable(reason)
        }"): use --update to replace its reason and operations`,
      );
    }
    if (byName !== undefined) throw taken();
    return undefined;
  }
  if (options.named) {
    if (byName !== undefined && !locksObject(byName, object)) throw taken();
    return byName;
  }
  if (matching.length > 1) {
    throw new PluginError(
      `${shown} is locked in namespace ${namespace} by several Locks (${
        matching.map((l) => printable(String(l.metadata?.name ?? ""))).sort()
          .join(", ")
      }): say which to update with --name`,
    );
  }
  if (matching.length === 1) return matching[0];
  if (byName !== undefined) throw taken();
  return undefined;
}
