/**
 * What every command of `kubectl dependencies` works with: a client for the
 * user's own kubeconfig context (nothing else), the namespace to use, where
 * to write, and whether to colour; and {@linkcode PluginError}, a failure
 * that ends the command with a message and an exit code.
 *
 * @module
 */
import { join } from "node:path";
import { KubeClient, loadKubeConnection } from "../kcp/mod.ts";
import { errorText } from "../runtime/mod.ts";

/**
 * The most bytes of any one answer the plugin reads (a discovery document,
 * a page of a list, an object): reading stops there and the command fails
 * saying so. kcp's answers are far smaller; a page of 500 large objects
 * fits.
 */
export const MAX_READ_BYTES = 32 * 1024 * 1024;

/** Exit code: nothing holds the object (or the command succeeded). */
export const EXIT_OK = 0;
/** Exit code: something holds the object. */
export const EXIT_HELD = 1;
/** Exit code: a usage or access error. */
export const EXIT_ERROR = 2;

/** A failure that ends a command: its message goes to stderr. */
export class PluginError extends Error {
  /** The exit code to end with. */
  readonly exitCode: number;

  /** A failure with `message` and, by default, {@linkcode EXIT_ERROR}. */
  constructor(message: string, options: { exitCode?: number } = {}) {
    super(message);
    this.name = "PluginError";
    this.exitCode = options.exitCode ?? EXIT_ERROR;
  }
}

/** Where output goes; tests pass their own. */
export interface PluginIo {
  /** Writes to stdout (text as given, no newline added). */
  out(text: string): void;
  /** Writes to stderr (text as given, no newline added). */
  err(text: string): void;
  /** Whether stdout is a terminal and colour is not switched off (`NO_COLOR`). */
  color: boolean;
}

/** What a command works with. */
export interface PluginContext {
  /** A client for the kubeconfig context, as the user. */
  client: KubeClient;
  /** The context's server URL, such as `https://host:6443/clusters/root:org:ws`. */
  server: string;
  /** `--namespace`, else the context's namespace, else `default`. */
  namespace: string;
  /** Output. */
  io: PluginIo;
}

/** The kubeconfig flags every command takes. */
export interface KubeconfigFlags {
  /** `--kubeconfig`, else `$KUBECONFIG` (its first file), else `~/.kube/config`. */
  kubeconfig?: string | undefined;
  /** `--context`, else the current context. */
  context?: string | undefined;
  /** `-n`/`--namespace`. */
  namespace?: string | undefined;
}

/** The kubeconfig file the flags and environment name. */
export function kubeconfigPath(flags: KubeconfigFlags): string {
  return kubeconfigSource(flags).path;
}

/** A kubeconfig file and what named it. */
export interface KubeconfigSource {
  /** The file. */
  path: string;
  /** `--kubeconfig`, `$KUBECONFIG`, or neither (`~/.kube/config`). */
  from: "flag" | "env" | "default";
}

/** The kubeconfig file the flags and environment name, and which named it. */
export function kubeconfigSource(flags: KubeconfigFlags): KubeconfigSource {
  if (flags.kubeconfig !== undefined && flags.kubeconfig !== "") {
    return { path: flags.kubeconfig, from: "flag" };
  }
  const fromEnv = Deno.env.get("KUBECONFIG");
  if (fromEnv !== undefined && fromEnv !== "") {
    const path = fromEnv.split(":").find((p) => p !== "") ?? fromEnv;
    return { path, from: "env" };
  }
  const home = Deno.env.get("HOME") ?? ".";
  return { path: join(home, ".kube", "config"), from: "default" };
}

/**
 * The message of a kubeconfig that cannot be used: for a missing file, one
 * sentence naming it, what named it, and how to name another; else the
 * reason as the loader gives it.
 */
export function kubeconfigProblem(
  error: unknown,
  source: KubeconfigSource,
): string {
  const missing = error instanceof Error &&
    error.cause instanceof Deno.errors.NotFound;
  if (!missing) return errorText(error);
  const named = source.from === "flag"
    ? "given by --kubeconfig"
    : source.from === "env"
    ? "the first file of KUBECONFIG"
    : "the default, as neither --kubeconfig nor KUBECONFIG names one";
  return `no kubeconfig at ${source.path} (${named}): point kubectl dependencies ` +
    "at yours with --kubeconfig=<file> or the KUBECONFIG variable";
}

/**
 * The context for `flags`, as the user: the kubeconfig's identity and
 * trust, nothing else.
 *
 * @throws {PluginError} When the kubeconfig cannot be used (the message says why).
 */
export function pluginContext(
  flags: KubeconfigFlags,
  io: PluginIo,
): PluginContext {
  const source = kubeconfigSource(flags);
  try {
    const connection = loadKubeConnection(
      source.path,
      flags.context === undefined ? {} : { context: flags.context },
    );
    // Every answer is bounded, and a redirect is never followed (the
    // client refuses them): the credentials stay with the kubeconfig's
    // server.
    const client = new KubeClient(connection, {
      userAgent: "kubectl-dependencies",
      maxBytes: MAX_READ_BYTES,
    });
    return {
      client,
      server: connection.server.replace(/\/+$/, ""),
      namespace: flags.namespace ?? connection.namespace ?? "default",
      io,
    };
  } catch (error) {
    throw new PluginError(kubeconfigProblem(error, source));
  }
}

/** The io of a real process: colour on a terminal unless `NO_COLOR` is set. */
export function processIo(): PluginIo {
  const encoder = new TextEncoder();
  const noColor = (Deno.env.get("NO_COLOR") ?? "") !== "";
  return {
    out: (text) => void Deno.stdout.writeSync(encoder.encode(text)),
    err: (text) => void Deno.stderr.writeSync(encoder.encode(text)),
    color: !noColor && Deno.stdout.isTerminal(),
  };
}
