/**
 * Prints the least-privilege ClusterRole the webhook needs for the live
 * DependencyRules (`get,list` on each dependent type, `get` on each
 * protected type), read the way the webhook reads them: through the dep-ctrl
 * APIExport's virtual workspaces, with the webhook's own kubeconfig. Only
 * the rules the webhook enforces count: those whose own workspace exports
 * their dependent type, so a tenant's rule never widens the grant.
 *
 * ```sh
 * deno task rbac --kubeconfig=webhook.kubeconfig \
 *   | kubectl --server https://<shard>/clusters/system:admin apply -f -
 * ```
 *
 * Apply it in `system:admin` of every shard, next to
 * `manifests/kcp/system-admin` (which binds it), and again after a rule
 * names a new type.
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
  KubeClient,
  KUBECONFIG_FLAG,
  loadKubeConnection,
} from "../lib/kcp/mod.ts";
import {
  errorText,
  type FlagSpec,
  type Logger,
  parseDuration,
  parseFlag,
  parseFlags,
  parseLogLevel,
  requiredFlag,
  runEntrypoint,
} from "../lib/runtime/mod.ts";
import {
  enforcedRules,
  type RuleSnapshot,
  RuleWatcher,
} from "../lib/rules/mod.ts";
import { admitRules, dependentsReaderRole } from "../lib/webhook/mod.ts";
import {
  type ExportAnswer,
  exportKey,
  type ExportReading,
  readExport,
} from "../lib/exports/mod.ts";
import { type LockSnapshot, LockWatcher } from "../lib/locks/mod.ts";

const FLAGS: readonly FlagSpec[] = [
  KUBECONFIG_FLAG,
  API_EXPORT_NAME_FLAG,
  {
    name: "timeout",
    default: "30s",
    help: "How long to wait for every rule to be read",
  },
  {
    name: "lock-types",
    default: "",
    help:
      "Comma-separated Lock target types the webhook may read, as <resource>.<group> (<resource> for core), e.g. namespaces,vpcs.network.example.com; Secrets, ConfigMaps and RBAC are never granted",
  },
  { name: "log-level", default: "warn", help: "debug, info, warn or error" },
  ALLOW_INSECURE_HTTP_FLAG,
];

interface RbacOptions {
  kubeconfig: string;
  apiExportName: string;
  timeoutMs: number;
  lockTypes: Set<string>;
  logLevel: ReturnType<typeof parseLogLevel>;
  allowInsecureHttp: boolean;
}

function parse(args: readonly string[]): { help: true } | {
  help: false;
  options: RbacOptions;
} {
  const flags = parseFlags(args, FLAGS);
  if (flags.help) return { help: true };
  const v = flags.values;
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
      logLevel: parseFlag("log-level", () => parseLogLevel(v["log-level"]!)),
      allowInsecureHttp: v["allow-insecure-http"] === "true",
    },
  };
}

/** Reads every rule once, prints the ClusterRole, and stops. */
async function run(options: RbacOptions, log: Logger): Promise<number> {
  const connection = {
    ...loadKubeConnection(options.kubeconfig),
    allowInsecureHttp: options.allowInsecureHttp,
  };
  const client = new KubeClient(connection, { userAgent: "dependency-rbac" });
  let synced!: (snapshot: RuleSnapshot) => void;
  const done = new Promise<RuleSnapshot>((resolve) => synced = resolve);
  const watcher = new RuleWatcher({
    client,
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    log,
    onChange: (snapshot) => {
      if (snapshot.synced) synced(snapshot);
    },
  });
  let locksSynced!: (snapshot: LockSnapshot) => void;
  const locksDone = new Promise<LockSnapshot>((resolve) =>
    locksSynced = resolve
  );
  const lockWatcher = new LockWatcher({
    client,
    workspaceUrl: connection.server,
    apiExportName: options.apiExportName,
    log,
    onChange: (snapshot) => {
      if (snapshot.synced) locksSynced(snapshot);
    },
  });
  watcher.start();
  lockWatcher.start();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), options.timeoutMs);
  });
  try {
    const both = Promise.all([done, locksDone]);
    const read = await Promise.race([both, timedOut]);
    if (read === undefined) {
      log.error("cannot read every DependencyRule and Lock in time", {
        timeoutMs: options.timeoutMs,
      });
      return 1;
    }
    const [snapshot, lockSnapshot] = read;
    const enforced = enforcedRules(snapshot.rules);
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
    const locks = lockSnapshot.locks.map((l) => l.lock);
    console.log(
      [
        `# The webhook's reads for ${rules.length} DependencyRule(s) and ${locks.length} Lock(s): apply in`,
        "# system:admin of every shard (manifests/kcp/system-admin binds it).",
        dumpYaml(
          dependentsReaderRole(rules, {
            locks,
            lockTypes: options.lockTypes,
          }),
        ).trimEnd(),
      ].join("\n"),
    );
    return 0;
  } finally {
    clearTimeout(timer);
    await Promise.all([watcher.stop(), lockWatcher.stop()]);
    client.close();
  }
}

if (import.meta.main) {
  Deno.exit(
    await runEntrypoint(Deno.args, {
      name: "rbac",
      summary:
        "Prints the ClusterRole the webhook needs to read what the live DependencyRules name.",
      flags: FLAGS,
      parse,
      run,
    }),
  );
}
