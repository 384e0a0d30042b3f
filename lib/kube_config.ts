/**
 * Loading a kubeconfig into what our REST client needs: the server URL, the
 * kcp base URL behind it, TLS trust and client credentials. Parsing is done
 * by `@kubernetes/client-node`; this module only extracts and checks.
 *
 * @module
 */
import { KubeConfig } from "@kubernetes/client-node";
import { baseUrl } from "./kcp.ts";

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

/**
 * Reads a kubeconfig file and returns the connection of its current (or
 * the given) context. Relative certificate paths resolve against the
 * kubeconfig's directory.
 *
 * @throws {Error} If the file cannot be read or parsed, the context or its
 * cluster is missing, or it authenticates in a way we do not support (exec
 * plugins, auth providers, basic auth): the message says which.
 */
export function loadKubeConnection(
  path: string,
  options: LoadKubeConnectionOptions = {},
): KubeConnection {
  const config = new KubeConfig();
  try {
    config.loadFromFile(path);
  } catch (error) {
    throw new Error(
      `Cannot load kubeconfig ${path}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (options.context !== undefined) {
    if (!config.getContextObject(options.context)) {
      throw new Error(
        `Cannot load kubeconfig ${path}: it has no context '${options.context}'`,
      );
    }
    config.setCurrentContext(options.context);
  }
  const cluster = config.getCurrentCluster();
  if (cluster === null) {
    throw new Error(
      `Cannot load kubeconfig ${path}: context '${config.getCurrentContext()}' names no cluster`,
    );
  }
  const user = config.getCurrentUser();
  if (user?.exec || user?.authProvider || user?.username) {
    throw new Error(
      `Cannot load kubeconfig ${path}: user '${user.name}' uses exec, an auth provider or basic auth; use a token or a client certificate`,
    );
  }
  const connection: KubeConnection = {
    server: cluster.server,
    base: baseUrl(cluster.server),
    insecureSkipTlsVerify: cluster.skipTLSVerify,
  };
  const caPem = pem(cluster.caData, cluster.caFile);
  if (caPem !== undefined) connection.caPem = caPem;
  if (user?.token) connection.token = user.token;
  const certPem = pem(user?.certData, user?.certFile);
  const keyPem = pem(user?.keyData, user?.keyFile);
  if ((certPem === undefined) !== (keyPem === undefined)) {
    throw new Error(
      `Cannot load kubeconfig ${path}: user '${user?.name}' has a client certificate without a key or a key without a certificate`,
    );
  }
  if (certPem !== undefined && keyPem !== undefined) {
    connection.certPem = certPem;
    connection.keyPem = keyPem;
  }
  return connection;
}

function pem(
  data: string | undefined,
  file: string | undefined,
): string | undefined {
  if (data) {
    return new TextDecoder().decode(
      Uint8Array.from(atob(data), (c) => c.charCodeAt(0)),
    );
  }
  if (file) return Deno.readTextFileSync(file);
  return undefined;
}
