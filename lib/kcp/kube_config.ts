/**
 * Loading a kubeconfig into what our REST client needs: the server URL, the
 * kcp base URL behind it, TLS trust and client credentials: the file is
 * parsed with `yaml` and checked with zod (a kubeconfig library would cost
 * the webhook ~57 MB of resident memory for this one read).
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { errorText, validateWith } from "../runtime/mod.ts";
import { baseUrl } from "./urls.ts";

/** Where and how to reach kcp, as one kubeconfig context describes it. */
export interface KubeConnection {
  /** The context's server URL, e.g. `https://kcp.example/clusters/root:dep-ctrl`. */
  server: string;
  /** The server URL with `/clusters/...` cut off (the front-proxy base). */
  base: string;
  /** PEM CA bundle to trust, when the kubeconfig names one. */
  caPem?: string;
  /** Skip server certificate verification (kubeconfig `insecure-skip-tls-verify`). */
  insecureSkipTlsVerify: boolean;
  /** Bearer token. */
  token?: string;
  /** PEM client certificate, with {@linkcode KubeConnection.keyPem}. */
  certPem?: string;
  /** PEM client key, with {@linkcode KubeConnection.certPem}. */
  keyPem?: string;
  /** The context's namespace, when it names one. */
  namespace?: string;
  /**
   * Whether plain `http://` URLs may be used, sending credentials in clear.
   * Never read from a kubeconfig: the caller sets it (`--allow-insecure-http`).
   */
  allowInsecureHttp?: boolean;
}

/** Options for {@linkcode loadKubeConnection}. */
export interface LoadKubeConnectionOptions {
  /** The context to use. @default the kubeconfig's current context */
  context?: string;
}

const ClusterSchema = z.object({
  server: z.string().min(1),
  "certificate-authority": z.string().nullish(),
  "certificate-authority-data": z.string().nullish(),
  "insecure-skip-tls-verify": z.boolean().nullish(),
}).loose();

const UserSchema = z.object({
  token: z.string().nullish(),
  "client-certificate": z.string().nullish(),
  "client-certificate-data": z.string().nullish(),
  "client-key": z.string().nullish(),
  "client-key-data": z.string().nullish(),
  exec: z.unknown().optional(),
  "auth-provider": z.unknown().optional(),
  username: z.string().nullish(),
}).loose();

const ContextSchema = z.object({
  cluster: z.string(),
  user: z.string().nullish(),
  namespace: z.string().nullish(),
}).loose();

const KubeconfigSchema = z.object({
  "current-context": z.string().nullish(),
  clusters: z.array(z.object({ name: z.string(), cluster: ClusterSchema }))
    .nullish(),
  users: z.array(z.object({ name: z.string(), user: UserSchema.nullish() }))
    .nullish(),
  contexts: z.array(z.object({ name: z.string(), context: ContextSchema }))
    .nullish(),
}).loose();

/**
 * Reads a kubeconfig file (YAML or JSON) and returns the connection of its
 * current (or the given) context. Relative certificate paths resolve against
 * the kubeconfig's directory.
 *
 * @throws {Error} If the file cannot be read or parsed, the context or its
 * cluster is missing, or it authenticates in a way we do not support (exec
 * plugins, auth providers, basic auth): the message says which.
 */
export function loadKubeConnection(
  path: string,
  options: LoadKubeConnectionOptions = {},
): KubeConnection {
  const fail = (problem: string, cause?: unknown): never => {
    throw new Error(
      `Cannot load kubeconfig ${path}: ${problem}`,
      cause === undefined ? undefined : { cause },
    );
  };
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (error) {
    return fail(readProblem(error), error);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    // The parser's first line says what and where; the rest quotes the file.
    const what = errorText(error).split("\n")[0]!.replace(/:$/, "");
    return fail(`not YAML or JSON: ${what}`, error);
  }
  const checked = validateWith(KubeconfigSchema, parsed ?? {});
  if (!checked.ok) return fail(checked.error);
  const config = checked.data;
  const contextName = options.context ?? config["current-context"] ?? "";
  const context = config.contexts?.find((c) => c.name === contextName)
    ?.context;
  if (context === undefined || context === null) {
    return fail(
      options.context === undefined
        ? `its current context '${contextName}' does not exist`
        : `it has no context '${options.context}'`,
    );
  }
  const cluster = config.clusters?.find((c) => c.name === context.cluster)
    ?.cluster;
  if (cluster === undefined || cluster === null) {
    return fail(`context '${contextName}' names no cluster`);
  }
  const named = config.users?.find((u) => u.name === context.user);
  const user = named?.user ?? undefined;
  if (user?.exec || user?.["auth-provider"] || user?.username) {
    return fail(
      `user '${named?.name}' uses exec, an auth provider or basic auth; use a token or a client certificate`,
    );
  }
  const dir = dirname(path);
  const connection: KubeConnection = {
    server: cluster.server,
    base: baseUrl(cluster.server),
    insecureSkipTlsVerify: cluster["insecure-skip-tls-verify"] ?? false,
  };
  if (context.namespace) connection.namespace = context.namespace;
  const caPem = pem(
    cluster["certificate-authority-data"],
    cluster["certificate-authority"],
    dir,
  );
  if (caPem !== undefined) connection.caPem = caPem;
  if (user?.token) connection.token = user.token;
  const certPem = pem(
    user?.["client-certificate-data"],
    user?.["client-certificate"],
    dir,
  );
  const keyPem = pem(user?.["client-key-data"], user?.["client-key"], dir);
  if ((certPem === undefined) !== (keyPem === undefined)) {
    return fail(
      `user '${named?.name}' has a client certificate without a key or a key without a certificate`,
    );
  }
  if (certPem !== undefined && keyPem !== undefined) {
    connection.certPem = certPem;
    connection.keyPem = keyPem;
  }
  return connection;
}

/** PEM text from base64 `data`, or from `file` (relative to `dir`). */
function pem(
  data: string | null | undefined,
  file: string | null | undefined,
  dir: string,
): string | undefined {
  if (data) {
    return new TextDecoder().decode(
      Uint8Array.from(atob(data), (c) => c.charCodeAt(0)),
    );
  }
  if (file) {
    return Deno.readTextFileSync(isAbsolute(file) ? file : join(dir, file));
  }
  return undefined;
}

/** Why a file could not be read, in a few words. */
function readProblem(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) {
    return "permission denied";
  }
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  return errorText(error);
}
