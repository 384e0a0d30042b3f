/**
 * `controller grants`: prints the ClusterRole that lets the webhook read
 * what the live DependencyRules (and, where allowed, Locks) name, read the
 * way the webhook reads them: through the dep-ctrl APIExport's virtual
 * workspaces, with any identity that may (the webhook's own kubeconfig, or
 * the controller's). Only the rules the webhook enforces count: those whose
 * own workspace exports their dependent type, so a tenant's rule never
 * widens the grant.
 *
 * ```sh
 * controller grants --kubeconfig=webhook.kubeconfig \
 *   | kubectl --server https://<shard>/clusters/system:admin apply -f -
 * ```
 *
 * The ClusterRole (`dependency-webhook:reads:rules` by default) carries the
 * label kcp aggregates into `dependency-webhook:dependents-reader`, which
 * `manifests/kcp/system-admin` binds: apply it in `system:admin` of every
 * shard, again after a rule names a new type. Applying the base manifests
 * again never removes it.
 *
 * Per rule (see `webhookReadsRole`): `get` on its dependent type, and
 * `list` where it lists dependents (`watch` too with `--dependents-index`,
 * for a webhook that keeps its dependents index); `get` on each protected
 * type; and
 * `get` on core `namespaces` only when one of the printed rules reads the
 * owner on the protected object's Namespace (`fieldRef.from:
 * TargetNamespace`): RBAC cannot narrow it to metadata or to some
 * Namespaces, so it is granted only while a rule needs it.
 *
 * Locks widen nothing by themselves: a Lock's target type is granted only
 * when `--lock-types` names it (`namespaces,vpcs.network.example.com`), and
 * Secrets, ConfigMaps and RBAC never are. A Lock on a type not granted still
 * holds; its denial names no reason.
 *
 * @module
 */
import { dumpYaml } from "@kubernetes/client-node";
import {
  ALLOW_INSECURE_HTTP_FLAG,
  API_EXPORT_NAME_FLAG,
  checkExportAccess,
  ExportWatcher,
  KubeClient,
  KUBECONFIG_FLAG,
  loadKubeConnection,
} from "../kcp/mod.ts";
import {
  type Entrypoint,
  errorText,
  type FlagSpec,
  type Logger,
  type LogLevel,
  parseDuration,
  parseFlag,
  parseFlags,
  parseLogLevel,
  requiredFlag,
} from "../runtime/mod.ts";
import {
  type ClusterRule,
  enforcedRules,
  RULES_PATH,
  ruleView,
} from "../rules/mod.ts";
import {
  admitRules,
  RULE_READS_ROLE,
  webhookReadsRole,
} from "../webhook/mod.ts";
import {
  type ExportAnswer,
  exportKey,
  type ExportReading,
  readExport,
} from "../exports/mod.ts";
import { type ClusterLock, LOCKS_PATH, lockView } from "../locks/mod.ts";

/** The name of the subcommand, after the controller binary's name. */
export const GRANTS_COMMAND = "grants";

/** The flags of `controller grants`. */
export const GRANTS_FLAGS: readonly FlagSpec[] = [
  KUBECONFIG_FLAG,
  API_EXPORT_NAME_FLAG,
  {
    name: "timeout",
    default: "30s",
    help: "How long to wait for every rule and Lock to be read",
  },
  {
    name: "lock-types",
    default: "",
    help:
      "Comma-separated Lock target types the webhook may read, as <resource>.<group> (<resource> for core), e.g. namespaces,vpcs.network.example.com; Secrets, ConfigMaps and RBAC are never granted",
  },
  {
    name: "name",
    default: RULE_READS_ROLE,
    help:
      "Name of the printed ClusterRole; one name per set of grants you keep apart",
  },
  {
    name: "dependents-index",
    boolean: true,
    help:
      "Grant watch too on each dependent type, for a webhook run with --dependents-index (the objects list already reads, over time)",
  },
  { name: "log-level", default: "warn", help: "debug, info, warn or error" },
  ALLOW_INSECURE_HTTP_FLAG,
];

/** The parsed flags of `controller grants`. */
export interface GrantsOptions {
  /** Kubeconfig of an identity that may read rules through the export. */
  kubeconfig: string;
  /** The dep-ctrl APIExport's name. */
  apiExportName: string;
  /** How long to wait for every rule and Lock. */
  timeoutMs: number;
  /** Lock target types the webhook may read, as `<resource>.<group>`. */
  lockTypes: Set<string>;
  /** The ClusterRole's name. */
  name: string;
  /** Whether to grant `watch` on dependent types, for the dependents index. */
  dependentsIndex: boolean;
  /** Log level (logs go to stderr; the role to stdout). */
  logLevel: LogLevel;
  /** Allow a plain-HTTP kcp URL (tests only). */
  allowInsecureHttp: boolean;
}

/**
 * Parses the flags of `controller grants`.
 *
 * @throws {Error} On an unknown flag, a bad value or a missing kubeconfig.
 */
export function parseGrantsOptions(args: readonly string[]): {
  help: true;
} | { help: false; options: GrantsOptions } {
  const flags = parseFlags(args, GRANTS_FLAGS);
  if (flags.help) return { help: true };
  const v = flags.values;
  const name = v["name"]!;
  if (!/^[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$/.test(name) || name.length > 253) {
    throw new Error(
      `--name must be a ClusterRole name (lowercase letters, digits, '-', '.', ':'): current value is '${name}'`,
    );
  }
  return {
    help: false,
    options: {
      kubeconfig: requiredFlag(flags, "kubeconfig", { env: "KUBECONFIG" }),
      apiExportName: v["api-export-name"]!,
      timeoutMs: parseFlag("timeout", () => parseDuration(v["timeout"]!)),
      lockTypes: new Set(
        v["lock-types"]!.split(",").map((t) => t.trim()).filter((t) =>
          t !== ""
        ),
      ),
      name,
      dependentsIndex: v["dependents-index"] === "true",
      logLevel: parseFlag("log-level", () => parseLogLevel(v["log-level"]!)),
      allowInsecureHttp: v["allow-insecure-http"] === "true",
    },
  };
}

/** Every valid rule and Lock, read once both are complete. */
interface LiveObjects {
  rules: ClusterRule[];
  locks: ClusterLock[];
}

/**
 * Reads every rule and Lock once, prints the ClusterRole, and stops.
 *
 * @throws {Error} If kcp answers 401 or 403 to the first read: one
 * sentence saying what to check.
 */
export async function runGrants(
  options: GrantsOptions,
  log: Logger,
): Promise<number> {
  const connection = {
    ...loadKubeConnection(options.kubeconfig),
    allowInsecureHttp: options.allowInsecureHttp,
  };
  const client = new KubeClient(connection, {
    userAgent: "dependency-controller-grants",
  });
  // Run once, by hand: a 401 or 403 stops it at once with the reason,
  // rather than retrying until --timeout.
  const problem = await checkExportAccess(client, {
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    kubeconfig: options.kubeconfig,
  });
  if (problem !== undefined) {
    client.close();
    throw new Error(problem.message);
  }
  const { promise: done, resolve: synced } = Promise.withResolvers<
    LiveObjects
  >();
  // One watch of the dep-ctrl export; the rules and the Locks are two views
  // of it, read once both are complete.
  const watcher = new ExportWatcher<"rules" | "locks">({
    client,
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    collections: { rules: { path: RULES_PATH }, locks: { path: LOCKS_PATH } },
    log,
    onChange: () => {
      const rules = ruleObjects.snapshot();
      const locks = lockObjects.snapshot();
      if (rules.synced && locks.synced) {
        synced({ rules: rules.items, locks: locks.items });
      }
    },
  });
  const ruleObjects = ruleView(watcher, { collection: "rules", log });
  const lockObjects = lockView(watcher, { collection: "locks", log });
  watcher.start();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), options.timeoutMs);
  });
  try {
    const read = await Promise.race([done, timedOut]);
    if (read === undefined) {
      log.error("cannot read every DependencyRule and Lock in time", {
        timeoutMs: options.timeoutMs,
      });
      return 1;
    }
    const enforced = enforcedRules(read.rules);
    // The webhook's own check, once: only rules their workspace exports.
    const readings = new Map<string, ExportReading>();
    const signal = AbortSignal.timeout(options.timeoutMs);
    await Promise.all(
      admitRules(enforced, readings).exports.map(async (ref) => {
        let reading: ExportReading;
        try {
          const answer: ExportAnswer = await readExport(
            client,
            connection.base,
            ref,
            { signal },
          );
          reading = { answer };
        } catch (error) {
          reading = { error: errorText(error) };
        }
        readings.set(exportKey(ref), reading);
      }),
    );
    const admission = admitRules(enforced, readings);
    for (const { rule, reason } of admission.refused) {
      log.warn("leaving out a rule the webhook does not enforce", {
        workspace: rule.cluster,
        name: rule.rule.metadata.name,
        reason,
      });
    }
    const rules = admission.admitted.map((r) => r.rule);
    const locks = read.locks.map((l) => l.lock);
    console.log(
      [
        `# The webhook's reads for ${rules.length} DependencyRule(s) and ${locks.length} Lock(s): apply in`,
        "# system:admin of every shard; kcp adds them to dependency-webhook:dependents-reader.",
        dumpYaml(
          webhookReadsRole(rules, {
            locks,
            lockTypes: options.lockTypes,
            name: options.name,
            watch: options.dependentsIndex,
          }),
        ).trimEnd(),
      ].join("\n"),
    );
    return 0;
  } finally {
    clearTimeout(timer);
    await watcher.stop();
    client.close();
  }
}

/** `controller grants`, for {@linkcode runEntrypoint}. */
export const GRANTS_ENTRYPOINT: Entrypoint<GrantsOptions> = {
  name: `controller ${GRANTS_COMMAND}`,
  summary:
    "Prints the ClusterRole that lets the webhook read what the live DependencyRules (and allowed Lock types) name; apply it in system:admin of every shard.",
  flags: GRANTS_FLAGS,
  parse: parseGrantsOptions,
  run: runGrants,
  // Run by hand: a failure is one sentence, such as which kubeconfig
  // cannot be read and why, not a log line with stacks.
  plainErrors: true,
};
