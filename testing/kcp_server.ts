/**
 * A real `kcp start` on loopback for the tests: free ports, a fresh root
 * directory, fsync off, a quick shutdown, static tokens for every identity
 * the tests use, and helpers to talk to it over REST or through `kubectl`.
 *
 * @module
 */
import { KubeConfig } from "@kubernetes/client-node";
import { clusterUrl } from "../lib/kcp/mod.ts";
import { errorText } from "../lib/runtime/mod.ts";
import {
  type KcpBinaries,
  type KcpVersion,
  requireKcpBinaries,
} from "./kcp/binaries.ts";
import {
  appendTo,
  type CommandResult,
  pathExists,
  runCommand,
  stopProcess,
} from "./process.ts";
import { GiveUp, waitFor } from "./wait.ts";

/** The identities a test kcp authenticates, each by a static bearer token. */
export type IdentityName =
  | "admin"
  | "shardAdmin"
  | "controller"
  | "webhook"
  | "user";

/** A user known to the test kcp. */
export interface Identity {
  /** The user name kcp sees. */
  user: string;
  /** The groups kcp sees. */
  groups: readonly string[];
  /** The bearer token. */
  token: string;
}

/**
 * The users of a test kcp. `admin` is kcp-admin-equivalent everywhere,
 * `shardAdmin` is `system:masters` (the only way into `system:admin`);
 * `controller` and `webhook` are the components' own users, with no rights
 * but those RBAC files grant; `user` is an ordinary authenticated user.
 */
export const IDENTITY_USERS: Readonly<
  Record<IdentityName, Omit<Identity, "token">>
> = {
  admin: { user: "admin", groups: ["system:kcp:admin"] },
  shardAdmin: { user: "shard-admin", groups: ["system:masters"] },
  controller: { user: "dependency-controller", groups: [] },
  webhook: { user: "dependency-webhook", groups: [] },
  user: { user: "user-1", groups: [] },
};

/**
 * How every test kcp (and each shard) shuts down: on SIGTERM it refuses new
 * requests (429, Retry-After), drains those in flight but watches, and
 * exits 2 s later, ending the watches left. By default kcp waits up to a
 * minute for watch streams its clients keep open, so a kcp stopped under
 * running components was killed after the harness's 20 s grace instead
 * (measured: 20.1 s, and 2.1 s with this flag).
 */
export const KCP_SHUTDOWN_ARGS: readonly string[] = [
  "--shutdown-send-retry-after",
];

/** Options for {@linkcode startKcp}. */
export interface StartKcpOptions {
  /**
   * The kcp release to run, when `binaries` is not given.
   * @default `KCP_VERSION`, or the newest release built
   */
  version?: KcpVersion;
  /** Binaries to run. @default the cached build ({@linkcode requireKcpBinaries}) */
  binaries?: KcpBinaries;
  /** How long kcp may take to become ready. @default {180_000} */
  startTimeoutMs?: number;
  /** Extra `kcp start` flags. */
  extraArgs?: readonly string[];
  /**
   * Root directory to use instead of a fresh temporary one; it is created,
   * and must be absent or empty.
   */
  rootDir?: string;
}

/** The loopback ports one kcp listens on. */
export interface KcpPorts {
  /** The API server's HTTPS port. */
  secure: number;
  /** Embedded etcd's client port. */
  etcdClient: number;
  /** Embedded etcd's peer port. */
  etcdPeer: number;
}

/** Options for {@linkcode KcpServer.request}. */
export interface RequestOptions {
  /** Who calls. @default {"admin"} */
  identity?: IdentityName;
  /** A JSON body. */
  body?: unknown;
  /** The body's content type, e.g. `application/merge-patch+json`. @default {"application/json"} */
  contentType?: string;
  /** Abort after this long. @default {30_000} */
  timeoutMs?: number;
}

/** Options for {@linkcode KcpServer.kubectl}. */
export interface KubectlOptions {
  /** Who runs kubectl. @default {"admin"} */
  identity?: IdentityName;
  /** Workspace path or logical cluster name. @default {"root"} */
  workspace?: string;
  /** Text piped to kubectl's standard input. */
  stdin?: string;
}

/** What a kubectl run printed. */
export type KubectlResult = CommandResult;

/** A non-2xx answer from kcp. */
export class KcpRequestError extends Error {
  /** HTTP status code. */
  readonly status: number;
  /** The decoded `Status` body, when kcp sent one. */
  readonly body: unknown;

  /** Builds the error from a failed request. */
  constructor(message: string, status: number, body: unknown) {
    super(message);
    this.name = "KcpRequestError";
    this.status = status;
    this.body = body;
  }
}

/**
 * What tests, helpers and components use of a kcp: its address and CA, the
 * identities it accepts, JSON requests, kubeconfigs and kubectl. A
 * single-shard {@linkcode KcpServer} implements it, and so do a sharded
 * kcp's front-proxy and each of its shards (`testing/sharded_kcp.ts`), so
 * the helpers that take a `KcpApi` work against any of them.
 */
export interface KcpApi {
  /** A directory to write kubeconfigs and other test files into. */
  readonly rootDir: string;
  /** `https://127.0.0.1:<port>`, without a `/clusters/...` suffix. */
  readonly baseUrl: string;
  /** Binaries in use (`kubectl` runs from here). */
  readonly binaries: KcpBinaries;
  /** The serving CA, PEM. Empty until the server has started. */
  readonly caPem: string;
  /** The identity with its token. */
  identity(name: IdentityName): Identity;
  /** `<baseUrl>/clusters/<workspace>`. */
  clusterUrl(workspace: string): string;
  /**
   * A JSON request. `path` starts with `/` (for example
   * `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces`).
   *
   * @throws {KcpRequestError} If kcp answers with a status other than 2xx.
   */
  request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options?: RequestOptions,
  ): Promise<T>;
  /**
   * Writes (once) and returns a kubeconfig for `identity` whose server is
   * `<baseUrl>/clusters/<workspace>`: what a user or a component is given.
   */
  kubeconfig(identity: IdentityName, workspace: string): Promise<string>;
  /** Runs kubectl against a workspace as an identity; never throws on a non-zero exit. */
  kubectl(
    args: readonly string[],
    options?: KubectlOptions,
  ): Promise<KubectlResult>;
  /**
   * Like {@linkcode KcpApi.kubectl}, returning standard output.
   *
   * @throws {Error} With kubectl's standard error if it exits non-zero.
   */
  kubectlOk(args: readonly string[], options?: KubectlOptions): Promise<string>;
  /** The last `lines` lines of the server's log. */
  logTail(lines: number): Promise<string>;
}

/** Options for {@linkcode KcpEndpoint}. */
export interface KcpEndpointOptions {
  /** {@linkcode KcpApi.rootDir}. */
  rootDir: string;
  /** {@linkcode KcpApi.baseUrl}. */
  baseUrl: string;
  /** {@linkcode KcpApi.binaries}. */
  binaries: KcpBinaries;
  /** The bearer token of each identity. */
  tokens: Readonly<Record<IdentityName, string>>;
  /** Where {@linkcode KcpEndpoint.kubeconfig} writes its files. */
  kubeconfigDir: string;
  /** Reads the server's log for {@linkcode KcpEndpoint.logTail}. */
  logTail: (lines: number) => Promise<string>;
}

/**
 * {@linkcode KcpApi} for one HTTPS address: the part of a kcp harness that
 * talks to a server, not the part that runs it. It can call the server once
 * {@linkcode KcpEndpoint.trust} has given it the serving CA.
 */
export class KcpEndpoint implements KcpApi {
  /** {@inheritDoc KcpApi.rootDir} */
  readonly rootDir: string;
  /** {@inheritDoc KcpApi.baseUrl} */
  readonly baseUrl: string;
  /** {@inheritDoc KcpApi.binaries} */
  readonly binaries: KcpBinaries;

  readonly #tokens: Readonly<Record<IdentityName, string>>;
  readonly #kubeconfigDir: string;
  readonly #logTail: (lines: number) => Promise<string>;
  #caPem = "";
  #client: Deno.HttpClient | undefined;

  /** Builds the endpoint; it calls nothing until {@linkcode KcpEndpoint.trust}. */
  constructor(options: KcpEndpointOptions) {
    this.rootDir = options.rootDir;
    this.baseUrl = options.baseUrl;
    this.binaries = options.binaries;
    this.#tokens = options.tokens;
    this.#kubeconfigDir = options.kubeconfigDir;
    this.#logTail = options.logTail;
  }

  /** {@inheritDoc KcpApi.caPem} */
  get caPem(): string {
    return this.#caPem;
  }

  /** Trusts `caPem` for the server from now on (a new HTTP client). */
  trust(caPem: string): void {
    this.#caPem = caPem;
    this.#client?.close();
    this.#client = Deno.createHttpClient({ caCerts: [caPem] });
  }

  /** Closes the HTTP client; calls fail until the next {@linkcode KcpEndpoint.trust}. */
  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }

  /**
   * The HTTP client that trusts the serving CA.
   *
   * @throws {Error} If there is none (not started, or stopped).
   */
  httpClient(): Deno.HttpClient {
    if (this.#client === undefined) {
      throw new Error("Cannot call kcp: it is not running");
    }
    return this.#client;
  }

  /** {@inheritDoc KcpApi.identity} */
  identity(name: IdentityName): Identity {
    return { ...IDENTITY_USERS[name], token: this.#tokens[name] };
  }

  /** {@inheritDoc KcpApi.clusterUrl} */
  clusterUrl(workspace: string): string {
    return clusterUrl(this.baseUrl, workspace);
  }

  /** {@inheritDoc KcpApi.logTail} */
  logTail(lines: number): Promise<string> {
    return this.#logTail(lines);
  }

  /** {@inheritDoc KcpApi.request} */
  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<T> {
    const {
      identity = "admin",
      body,
      contentType = "application/json",
      timeoutMs = 30_000,
    } = options;
    const headers: Record<string, string> = {
      accept: "application/json",
      authorization: `Bearer ${this.#tokens[identity]}`,
    };
    if (body !== undefined) headers["content-type"] = contentType;
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      client: this.httpClient(),
      signal: AbortSignal.timeout(timeoutMs),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    const decoded: unknown = text === "" ? undefined : safeJson(text);
    if (!response.ok) {
      const message = (decoded as { message?: string } | undefined)?.message ??
        text;
      throw new KcpRequestError(
        `${method} ${path} as ${identity}: ${response.status}: ${message}`,
        response.status,
        decoded,
      );
    }
    return decoded as T;
  }

  /** {@inheritDoc KcpApi.kubeconfig} */
  async kubeconfig(identity: IdentityName, workspace: string): Promise<string> {
    const dir = this.#kubeconfigDir;
    await Deno.mkdir(dir, { recursive: true });
    const path = `${dir}/${identity}@${
      workspace.replaceAll(":", "_")
    }.kubeconfig`;
    const config = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "kcp",
        cluster: {
          server: this.clusterUrl(workspace),
          "certificate-authority-data": btoa(this.caPem),
        },
      }],
      users: [{ name: identity, user: { token: this.#tokens[identity] } }],
      contexts: [{ name: "kcp", context: { cluster: "kcp", user: identity } }],
      "current-context": "kcp",
    };
    await Deno.writeTextFile(path, JSON.stringify(config, null, 2));
    return path;
  }

  /** {@inheritDoc KcpApi.kubectl} */
  async kubectl(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<KubectlResult> {
    const { identity = "admin", workspace = "root", stdin } = options;
    return await runCommand(this.binaries.kubectl, [
      `--kubeconfig=${await this.kubeconfig(identity, workspace)}`,
      ...args,
    ], stdin === undefined ? {} : { stdin });
  }

  /** {@inheritDoc KcpApi.kubectlOk} */
  async kubectlOk(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<string> {
    return kubectlOutput(args, await this.kubectl(args, options));
  }
}

/**
 * The standard output of a kubectl run.
 *
 * @throws {Error} With kubectl's standard error if it exited non-zero.
 */
export function kubectlOutput(
  args: readonly string[],
  result: KubectlResult,
): string {
  if (result.code !== 0) {
    throw new Error(
      `kubectl ${
        args.join(" ")
      } failed (${result.code}): ${result.stderr.trim()}`,
    );
  }
  return result.stdout;
}

/** One running (or stopped) kcp process and its root directory. */
export class KcpServer implements KcpApi {
  /** Root directory holding certificates, etcd data, logs and kubeconfigs. */
  readonly rootDir: string;
  /** `https://127.0.0.1:<port>`, without a `/clusters/...` suffix. */
  readonly baseUrl: string;
  /** Binaries in use. */
  readonly binaries: KcpBinaries;
  /** Milliseconds from spawn to `/readyz` 200 for the last start. */
  lastStartupMs = 0;

  readonly #ports: KcpPorts;
  readonly #tokens: Record<IdentityName, string>;
  readonly #extraArgs: readonly string[];
  readonly #startTimeoutMs: number;
  readonly #endpoint: KcpEndpoint;
  #child: Deno.ChildProcess | undefined;
  #logsClosed: Promise<unknown> = Promise.resolve();

  /** Use {@linkcode startKcp}; the constructor starts nothing. */
  constructor(
    rootDir: string,
    ports: KcpPorts,
    options: Required<Omit<StartKcpOptions, "rootDir" | "version">>,
  ) {
    this.rootDir = rootDir;
    this.#ports = ports;
    this.baseUrl = `https://127.0.0.1:${ports.secure}`;
    this.binaries = options.binaries;
    this.#extraArgs = options.extraArgs;
    this.#startTimeoutMs = options.startTimeoutMs;
    this.#tokens = {
      admin: crypto.randomUUID(),
      shardAdmin: crypto.randomUUID(),
      controller: crypto.randomUUID(),
      webhook: crypto.randomUUID(),
      user: crypto.randomUUID(),
    };
    this.#endpoint = new KcpEndpoint({
      rootDir,
      baseUrl: this.baseUrl,
      binaries: this.binaries,
      tokens: this.#tokens,
      kubeconfigDir: `${rootDir}/kubeconfigs`,
      logTail: (lines) => this.logTail(lines),
    });
  }

  /** The serving CA, PEM. Empty until the first start. */
  get caPem(): string {
    return this.#endpoint.caPem;
  }

  /** The process id of the running kcp, if any. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The identity with its token. */
  identity(name: IdentityName): Identity {
    return this.#endpoint.identity(name);
  }

  /** `<baseUrl>/clusters/<workspace>`. */
  clusterUrl(workspace: string): string {
    return this.#endpoint.clusterUrl(workspace);
  }

  /**
   * Starts kcp on the root directory (first start, or again after
   * {@linkcode KcpServer.stop} with `keepRootDir`) and waits for `/readyz`.
   *
   * @throws {Error} With the tail of kcp's log if it exits or is not ready in time.
   */
  async start(): Promise<void> {
    if (this.#child !== undefined) {
      throw new Error("Cannot start kcp: it is running already");
    }
    await Deno.writeTextFile(
      `${this.rootDir}/tokens.csv`,
      tokenFile(this.#tokens),
    );
    const started = performance.now();
    const kubeconfig = `${this.rootDir}/admin.kubeconfig`;
    const child = new Deno.Command(this.binaries.kcp, {
      args: [
        "start",
        `--root-directory=${this.rootDir}`,
        "--bind-address=127.0.0.1",
        `--secure-port=${this.#ports.secure}`,
        `--embedded-etcd-client-port=${this.#ports.etcdClient}`,
        `--embedded-etcd-peer-port=${this.#ports.etcdPeer}`,
        "--embedded-etcd-wal-size-bytes=5000",
        `--token-auth-file=${this.rootDir}/tokens.csv`,
        `--kubeconfig-path=${kubeconfig}`,
        ...KCP_SHUTDOWN_ARGS,
        "--v=2",
        ...this.#extraArgs,
      ],
      env: { UNSAFE_E2E_HACK_DISABLE_ETCD_FSYNC: "true" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#child = child;
    this.#logsClosed = Promise.all([
      appendTo(child.stdout, `${this.rootDir}/kcp.log`),
      appendTo(child.stderr, `${this.rootDir}/kcp.log`),
    ]);
    let exited = false;
    child.status.then(() => exited = true);
    try {
      await waitFor("kcp to write its admin kubeconfig", async () => {
        if (exited) throw new GiveUp("kcp exited");
        return (await pathExists(kubeconfig)) || undefined;
      }, { timeoutMs: this.#startTimeoutMs });
      await this.#loadCa(kubeconfig);
      await waitFor("kcp /readyz", async () => {
        if (exited) throw new GiveUp("kcp exited");
        const response = await fetch(`${this.baseUrl}/readyz`, {
          client: this.#endpoint.httpClient(),
          signal: AbortSignal.timeout(5_000),
        });
        await response.body?.cancel();
        return response.status === 200 || undefined;
      }, { timeoutMs: this.#startTimeoutMs, intervalMs: 250 });
    } catch (error) {
      const tail = await this.logTail(40);
      await this.stop({ keepRootDir: true });
      throw new Error(
        `Cannot start kcp (root ${this.rootDir}): ${
          errorText(error)
        }\n--- kcp log tail ---\n${tail}`,
      );
    }
    this.lastStartupMs = performance.now() - started;
  }

  /**
   * Stops exactly the process this object started: SIGTERM, then SIGKILL
   * after `graceMs`. Removes the root directory unless `keepRootDir`.
   */
  async stop(
    options: { keepRootDir?: boolean; graceMs?: number } = {},
  ): Promise<void> {
    const { keepRootDir = false, graceMs = 20_000 } = options;
    const child = this.#child;
    if (child !== undefined) {
      this.#child = undefined;
      await stopProcess(child, { graceMs });
      await this.#logsClosed;
    }
    this.#endpoint.close();
    if (!keepRootDir) {
      await Deno.remove(this.rootDir, { recursive: true }).catch(() => {});
    }
  }

  /** The last `lines` lines of kcp's log. */
  async logTail(lines: number): Promise<string> {
    return await readLogTail(`${this.rootDir}/kcp.log`, lines) ??
      "(no kcp log)";
  }

  /**
   * A JSON request to kcp. `path` starts with `/` (for example
   * `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces`).
   *
   * @throws {KcpRequestError} If kcp answers with a status other than 2xx.
   */
  request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<T> {
    return this.#endpoint.request<T>(method, path, options);
  }

  /**
   * Writes (once) and returns a kubeconfig for `identity` whose server is
   * `<baseUrl>/clusters/<workspace>`: what a user or a component is given.
   */
  kubeconfig(identity: IdentityName, workspace: string): Promise<string> {
    return this.#endpoint.kubeconfig(identity, workspace);
  }

  /** Runs kubectl against a workspace as an identity; never throws on a non-zero exit. */
  kubectl(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<KubectlResult> {
    return this.#endpoint.kubectl(args, options);
  }

  /**
   * Like {@linkcode KcpServer.kubectl}, returning standard output.
   *
   * @throws {Error} With kubectl's standard error if it exits non-zero.
   */
  kubectlOk(
    args: readonly string[],
    options: KubectlOptions = {},
  ): Promise<string> {
    return this.#endpoint.kubectlOk(args, options);
  }

  async #loadCa(kubeconfigPath: string): Promise<void> {
    const config = await waitFor("a complete admin kubeconfig", () => {
      const loaded = new KubeConfig();
      loaded.loadFromFile(kubeconfigPath);
      const data = loaded.getCluster("base")?.caData ??
        loaded.getCurrentCluster()?.caData;
      return Promise.resolve(data);
    }, { timeoutMs: 10_000 });
    this.#endpoint.trust(atob(config));
  }
}

/**
 * The `--token-auth-file` CSV of a test kcp: one line per identity of
 * {@linkcode IDENTITY_USERS} (token, user, uid, groups), plus `extra` lines
 * for users the tests do not call as.
 */
export function tokenFile(
  tokens: Readonly<Record<IdentityName, string>>,
  extra: readonly Identity[] = [],
): string {
  const identities = (Object.keys(IDENTITY_USERS) as IdentityName[]).map(
    (name) => ({ ...IDENTITY_USERS[name], token: tokens[name] }),
  );
  return [...identities, ...extra]
    .map(({ token, user, groups }) =>
      `${token},${user},${user},"${groups.join(",")}"`
    )
    .join("\n") + "\n";
}

/** The last `lines` lines of a log file, or `undefined` if it cannot be read. */
export async function readLogTail(
  path: string,
  lines: number,
): Promise<string | undefined> {
  try {
    const text = await Deno.readTextFile(path);
    return text.split("\n").slice(-lines - 1).join("\n");
  } catch {
    return undefined;
  }
}

/**
 * Starts a kcp on free loopback ports in a fresh temporary root directory
 * (or `options.rootDir`) and waits until it is ready. Call {@linkcode KcpServer.stop} when done.
 */
export async function startKcp(
  options: StartKcpOptions = {},
): Promise<KcpServer> {
  const binaries = options.binaries ??
    await requireKcpBinaries(
      options.version === undefined ? {} : { version: options.version },
    );
  const rootDir = options.rootDir ?? await Deno.makeTempDir({
    prefix: "dependency-controller-kcp-",
  });
  if (options.rootDir !== undefined) {
    await Deno.mkdir(rootDir, { recursive: true });
    for await (const entry of Deno.readDir(rootDir)) {
      throw new Error(
        `Cannot start kcp in ${rootDir}: it is not empty (${entry.name})`,
      );
    }
  }
  const [secure, etcdClient, etcdPeer] = freePorts(3) as [
    number,
    number,
    number,
  ];
  const server = new KcpServer(rootDir, { secure, etcdClient, etcdPeer }, {
    binaries,
    startTimeoutMs: options.startTimeoutMs ?? 180_000,
    extraArgs: options.extraArgs ?? [],
  });
  await server.start();
  return server;
}

/** `count` distinct TCP ports that are free on 127.0.0.1 right now. */
export function freePorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return ports;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
