/**
 * The flags the controller and the webhook share: their kubeconfig, the
 * dep-ctrl APIExport, the front-proxy base, how often its collections are
 * listed again, the probe and metrics listeners and the log level, with one
 * spec and one parse for both.
 *
 * @module
 */
import {
  type FlagSpec,
  type LogLevel,
  type ParsedFlags,
  parseDurationOrZero,
  parseFlag,
  parseLogLevel,
  parseServiceBinds,
  requiredFlag,
  type ServiceBinds,
} from "../runtime/mod.ts";
import { baseUrl } from "./urls.ts";

/** `--kubeconfig` (or `KUBECONFIG`). */
export const KUBECONFIG_FLAG: FlagSpec = {
  name: "kubeconfig",
  env: "KUBECONFIG",
  help:
    "Kubeconfig whose server is the dep-ctrl workspace (https://<front-proxy>/clusters/root:dep-ctrl)",
};

/** Default name of the APIExport that serves DependencyRules. */
export const DEFAULT_API_EXPORT_NAME = "dependencies.opendefense.cloud";

/** `--api-export-name`. */
export const API_EXPORT_NAME_FLAG: FlagSpec = {
  name: "api-export-name",
  default: DEFAULT_API_EXPORT_NAME,
  help: "Name of the dep-ctrl APIExport",
};

/** The least `--export-relist-interval` may be but 0: no list storm. */
export const MIN_EXPORT_RELIST_INTERVAL_MS = 1_000;

/** `--export-relist-interval`. */
export const EXPORT_RELIST_INTERVAL_FLAG: FlagSpec = {
  name: "export-relist-interval",
  default: "5m",
  help:
    "List the export's collections (rules, Locks, ...) again this often, up to a tenth later at random, so that fields a schema change adds are seen without a restart; at least 1s, 0s: only when kcp says a watch is too old",
};

/** `--export-relist-interval`: `0s` (or `0`), or a duration of 1s or more. */
function exportRelistInterval(text: string): number {
  const ms = parseDurationOrZero(text);
  if (ms > 0 && ms < MIN_EXPORT_RELIST_INTERVAL_MS) {
    throw new TypeError(`want 0s or at least 1s: current value is '${text}'`);
  }
  return ms;
}

/** `--health-probe-bind-address` and `--metrics-bind-address`. */
export const SERVICE_BIND_FLAGS: readonly FlagSpec[] = [
  {
    name: "health-probe-bind-address",
    default: ":8081",
    help: "Address of /healthz and /readyz; 0 disables",
  },
  {
    name: "metrics-bind-address",
    default: ":8080",
    help: "Address of /metrics (Prometheus); 0 disables",
  },
];

/** `--allow-insecure-http`. */
export const ALLOW_INSECURE_HTTP_FLAG: FlagSpec = {
  name: "allow-insecure-http",
  boolean: true,
  help:
    "Talk to kcp servers over plain http://, sending the identity's token in clear (for local tests only)",
};

/** `--log-level`. */
export const LOG_LEVEL_FLAG: FlagSpec = {
  name: "log-level",
  default: "info",
  help: "debug, info, warn or error",
};

/** `--kcp-base-host`, saying what the component uses the front-proxy for. */
export function kcpBaseHostFlag(purpose: string): FlagSpec {
  return {
    name: "kcp-base-host",
    help:
      `Front-proxy base URL for ${purpose} (default: the kubeconfig server without /clusters/...)`,
  };
}

/** The options both components take. */
export interface ComponentOptions extends ServiceBinds {
  /** Kubeconfig path. */
  kubeconfig: string;
  /** dep-ctrl APIExport name. */
  apiExportName: string;
  /** Front-proxy base override, without `/clusters/...`. */
  kcpBaseHost?: string;
  /** Log level. */
  logLevel: LogLevel;
  /** Whether kcp may be reached over plain `http://`. */
  allowInsecureHttp: boolean;
  /** How often the export's collections are listed again, ms; 0: never. */
  exportRelistIntervalMs: number;
}

/**
 * Reads the shared flags from a parse of a flag table that includes them.
 *
 * @throws {TypeError} With a message naming the flag when a value is missing or malformed.
 */
export function parseComponentOptions(flags: ParsedFlags): ComponentOptions {
  const v = flags.values;
  const kubeconfig = requiredFlag(flags, "kubeconfig", { env: "KUBECONFIG" });
  const kcpBaseHost = v["kcp-base-host"]
    ? parseFlag("kcp-base-host", () => baseUrl(v["kcp-base-host"]!))
    : undefined;
  return {
    kubeconfig,
    apiExportName: v["api-export-name"]!,
    ...(kcpBaseHost === undefined ? {} : { kcpBaseHost }),
    ...parseServiceBinds(flags),
    logLevel: parseFlag("log-level", () => parseLogLevel(v["log-level"]!)),
    allowInsecureHttp: v["allow-insecure-http"] === "true",
    exportRelistIntervalMs: parseFlag(
      "export-relist-interval",
      () => exportRelistInterval(v["export-relist-interval"]!),
    ),
  };
}
