/**
 * Command-line flags in the Kubernetes style (`--name=value` or
 * `--name value`), described once as a table that also renders `--help`.
 * Parsing is `node:util`'s `parseArgs`; this adds defaults, environment
 * fallbacks, aliases and bind addresses.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { errorText } from "./values.ts";

/** One flag. */
export interface FlagSpec {
  /** Name without dashes, e.g. `webhook-bind-address`. */
  name: string;
  /** What it does, for `--help`. */
  help: string;
  /** Default value. */
  default?: string;
  /** An environment variable consulted when the flag is absent. */
  env?: string;
  /** Whether it is a switch without a value (`--leader-elect`). */
  boolean?: boolean;
}

/** The parsed flags: values by flag name (switches are `"true"` or `"false"`). */
export interface ParsedFlags {
  /** Whether `--help` or `-h` was given. */
  help: boolean;
  /** Every flag's value, after defaults and environment fallbacks; absent if neither. */
  values: Record<string, string | undefined>;
  /** Names of the flags given on the command line. */
  given: Set<string>;
}

/**
 * Parses `args` against `specs`.
 *
 * @throws {TypeError} On an unknown flag, a missing value or a positional argument.
 */
export function parseFlags(
  args: readonly string[],
  specs: readonly FlagSpec[],
  options: { env?: (name: string) => string | undefined } = {},
): ParsedFlags {
  const env = options.env ?? ((name: string) => Deno.env.get(name));
  const { rest, switches } = takeSwitches(args, specs);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: "boolean", short: "h" },
        ...Object.fromEntries(
          specs.map((
            s,
          ) => [s.name, { type: s.boolean ? "boolean" : "string" } as const]),
        ),
      },
    });
  } catch (error) {
    throw new TypeError(
      `Cannot parse flags: ${errorText(error)} (see --help)`,
    );
  }
  const raw = parsed.values as Record<string, string | boolean | undefined>;
  const values: Record<string, string | undefined> = {};
  const given = new Set<string>();
  for (const spec of specs) {
    const value = switches.get(spec.name) ?? raw[spec.name];
    if (value !== undefined) {
      given.add(spec.name);
      values[spec.name] = String(value);
    } else {
      values[spec.name] =
        (spec.env === undefined ? undefined : env(spec.env) || undefined) ??
          spec.default ?? (spec.boolean ? "false" : undefined);
    }
  }
  return { help: raw.help === true, values, given };
}

/**
 * Takes the switches (`--name`, `--name=true`, `--name=false`, as Go's flag
 * package accepts them) out of `args`; the last one given wins. Arguments
 * after `--` are left alone.
 *
 * @throws {TypeError} If a switch is given a value other than true or false.
 */
function takeSwitches(
  args: readonly string[],
  specs: readonly FlagSpec[],
): { rest: string[]; switches: Map<string, boolean> } {
  const names = new Set(specs.filter((s) => s.boolean).map((s) => s.name));
  const rest: string[] = [];
  const switches = new Map<string, boolean>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      rest.push(...args.slice(i));
      break;
    }
    const match = /^--([^=]+)(?:=(.*))?$/.exec(arg);
    const name = match?.[1];
    if (name === undefined || !names.has(name)) {
      rest.push(arg);
      continue;
    }
    const value = match?.[2];
    if (value !== undefined && value !== "true" && value !== "false") {
      throw new TypeError(
        `Cannot parse --${name}: want true or false: current value is '${value}'`,
      );
    }
    switches.set(name, value !== "false");
  }
  return { rest, switches };
}

/**
 * The value of a flag that must be given.
 *
 * @throws {TypeError} `Cannot start: --<name> is required`, naming the
 * environment variable that can stand in for it, if any.
 */
export function requiredFlag(
  flags: ParsedFlags,
  name: string,
  options: { env?: string } = {},
): string {
  const value = flags.values[name];
  if (!value) {
    const alternative = options.env === undefined ? "" : ` (or ${options.env})`;
    throw new TypeError(`Cannot start: --${name}${alternative} is required`);
  }
  return value;
}

/** The probe and metrics listeners (`undefined` where disabled by `0`). */
export interface ServiceBinds {
  /** `--health-probe-bind-address`. */
  healthBind?: BindAddress;
  /** `--metrics-bind-address`. */
  metricsBind?: BindAddress;
}

/**
 * Parses `--health-probe-bind-address` and `--metrics-bind-address`, which
 * both components have.
 *
 * @throws {TypeError} Naming the flag whose address is malformed.
 */
export function parseServiceBinds(flags: ParsedFlags): ServiceBinds {
  const healthBind = parseFlag(
    "health-probe-bind-address",
    () => parseBindAddress(flags.values["health-probe-bind-address"]!),
  );
  const metricsBind = parseFlag(
    "metrics-bind-address",
    () => parseBindAddress(flags.values["metrics-bind-address"]!),
  );
  return {
    ...(healthBind === undefined ? {} : { healthBind }),
    ...(metricsBind === undefined ? {} : { metricsBind }),
  };
}

/**
 * Runs `parse` on a flag's value, naming the flag in any error.
 *
 * @throws {TypeError} `Cannot parse --<name>: <the error's message>`.
 */
export function parseFlag<T>(name: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new TypeError(`Cannot parse --${name}: ${errorText(error)}`);
  }
}

/** The `--help` text: a usage line, a summary, then every flag with its default. */
export function usage(
  program: string,
  summary: string,
  specs: readonly FlagSpec[],
): string {
  const rows = specs.map((s) => {
    const flag = s.boolean ? `--${s.name}` : `--${s.name}=<value>`;
    const extra = [
      s.default !== undefined && s.default !== ""
        ? `default ${JSON.stringify(s.default)}`
        : "",
      s.env !== undefined ? `env ${s.env}` : "",
    ].filter((x) => x !== "").join(", ");
    return `  ${flag}\n      ${s.help}${extra === "" ? "" : ` (${extra})`}`;
  });
  return `Usage: ${program} [flags]\n\n${summary}\n\nFlags:\n${
    rows.join("\n")
  }\n  --help, -h\n      Show this help\n`;
}

/** A listen address. */
export interface BindAddress {
  /** Host to bind; `0.0.0.0` for all IPv4 interfaces. */
  hostname: string;
  /** TCP port. */
  port: number;
}

/**
 * Parses a bind address such as `:9443`, `127.0.0.1:8080` or `[::1]:8081`.
 * `0` disables the listener (returns `undefined`), as controller-runtime does.
 *
 * @throws {TypeError} If the text is not `[host]:port` with a port in 0-65535.
 */
export function parseBindAddress(text: string): BindAddress | undefined {
  if (text === "0") return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (match === null || port > 65535) {
    throw new TypeError(
      `Cannot parse bind address: want [host]:port or 0: current value is '${text}'`,
    );
  }
  return { hostname: match[1] ?? (match[2] || "0.0.0.0"), port };
}

/**
 * Parses a duration such as `7s`, `500ms`, `2m` or `1h` into milliseconds.
 *
 * @throws {TypeError} If the text is not a positive number with one of those units.
 */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  if (match === null || Number(match[1]) <= 0) {
    throw new TypeError(
      `Cannot parse duration: want a positive number with ms, s, m or h: current value is '${text}'`,
    );
  }
  return Number(match[1]) * unit[match[2] as keyof typeof unit];
}

/**
 * A duration that may be zero: `0` (with or without a unit) is 0, anything
 * else as {@linkcode parseDuration}. For flags where `0s` means "never
 * wait" or "never keep".
 *
 * @throws {TypeError} If the text is neither zero nor a positive duration.
 */
export function parseDurationOrZero(text: string): number {
  if (/^0+(\.0+)?(ms|s|m|h)?$/.test(text)) return 0;
  return parseDuration(text);
}

/**
 * A whole number of at least 1, from its decimal text.
 *
 * @throws {TypeError} If the text is not one.
 */
export function parsePositiveInteger(text: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isInteger(value) || value < 1) {
    throw new TypeError(`want a positive integer: current value is '${text}'`);
  }
  return value;
}
