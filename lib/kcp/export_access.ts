/**
 * Whether a component's identity can read the dep-ctrl APIExport's endpoint
 * slice, asked once before anything else: the first request every component
 * (the controller, the webhook, `controller grants`) makes, the one a wrong
 * kubeconfig fails. A 401 means kcp does not accept the credentials: no
 * retry fixes that, so the start fails. A 403 means the user may not read
 * the slice where the kubeconfig's server points: a server that is not the
 * dep-ctrl workspace (`/clusters/root` instead of `/clusters/root:dep-ctrl`),
 * a user name the RBAC of `manifests/kcp/dep-ctrl` does not bind, or RBAC
 * not applied yet. The long-running components keep retrying on a 403 (the
 * RBAC may come) and say why at the start and then once a minute
 * ({@linkcode watchExportAccess}); `controller grants` stops on it.
 *
 * @module
 */
import { type Logger, printable } from "../runtime/mod.ts";
import { KubeApiError } from "./kube_api_error.ts";
import type { KubeClient } from "./kube_client.ts";

/** Where the identity looks for the slice. */
export interface ExportAccessTarget {
  /** The kubeconfig's server, e.g. `https://kcp/clusters/root:dep-ctrl`. */
  workspaceUrl: string;
  /** The APIExport (and endpoint slice) name. */
  apiExportName: string;
  /** The kubeconfig's path, named in the sentence. */
  kubeconfig: string;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** A 401 or 403 answer to the slice read, as one sentence. */
export interface ExportAccessProblem {
  /** The HTTP status: 401 or 403. */
  status: 401 | 403;
  /** One sentence: what kcp answered, where, and what to check. */
  message: string;
}

/**
 * Reads the export's endpoint slice by name (what the RBAC of
 * `manifests/kcp/dep-ctrl` allows) and says what a 401 or 403 means;
 * `undefined` for any other answer (a missing slice, an outage: the watches
 * report those).
 */
export async function checkExportAccess(
  client: KubeClient,
  target: ExportAccessTarget,
): Promise<ExportAccessProblem | undefined> {
  const url =
    `${target.workspaceUrl}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/${
      encodeURIComponent(target.apiExportName)
    }`;
  try {
    await client.get(url, {
      ...(target.signal === undefined ? {} : { signal: target.signal }),
    });
    return undefined;
  } catch (error) {
    if (!(error instanceof KubeApiError)) return undefined;
    if (error.status === 401) {
      return { status: 401, message: unauthorized(target) };
    }
    if (error.status === 403) {
      return { status: 403, message: forbidden(target, error.message) };
    }
    return undefined;
  }
}

/** The workspace path of a server URL, or a phrase saying it names none. */
export function workspaceOf(workspaceUrl: string): string {
  const match = /\/clusters\/([^/?#]+)/.exec(workspaceUrl);
  return match === null
    ? "no workspace (the server URL has no /clusters/<path>)"
    : `workspace ${decodeURIComponent(match[1]!)}`;
}

function unauthorized(target: ExportAccessTarget): string {
  return `kcp answered 401 Unauthorized when reading the APIExportEndpointSlice ${target.apiExportName} in ${
    workspaceOf(target.workspaceUrl)
  }: it does not accept the credentials of kubeconfig ${target.kubeconfig}, so check its token (kcp's --token-auth-file) or client certificate (kcp's client CA)`;
}

function forbidden(target: ExportAccessTarget, said: string): string {
  const user = /User "([^"]*)"/.exec(said)?.[1];
  return `kcp answered 403 Forbidden when ${
    user === undefined ? "" : `user ${printable(user)} `
  }read the APIExportEndpointSlice ${target.apiExportName} in ${
    workspaceOf(target.workspaceUrl)
  }: check that the server of kubeconfig ${target.kubeconfig} is the dep-ctrl workspace (it ends in /clusters/root:dep-ctrl), that its user is the one manifests/kcp/dep-ctrl binds (dependency-controller or dependency-webhook), and that those manifests are applied there`;
}

/** Options for {@linkcode watchExportAccess}. */
export interface WatchExportAccessOptions extends ExportAccessTarget {
  /** Where a 403 (and a later 401) is logged. */
  log: Logger;
  /** How often a problem is asked about (and logged) again. @default {60_000} */
  repeatMs?: number;
}

/** A running {@linkcode watchExportAccess}. */
export interface ExportAccessWatch {
  /** Stops asking again. */
  stop(): Promise<void>;
}

/**
 * Checks the identity's access at the start of a long-running component:
 * throws the sentence on a 401 (the credentials are wrong: fail fast); on a
 * 403 logs it at `error` and asks again every `repeatMs`, logging each
 * answer that is still a 401 or 403, until the slice can be read. The
 * watches retry on their own meanwhile.
 *
 * @throws {Error} If kcp answers the first read with 401 Unauthorized.
 */
export async function watchExportAccess(
  client: KubeClient,
  options: WatchExportAccessOptions,
): Promise<ExportAccessWatch> {
  const { log, repeatMs = 60_000, ...target } = options;
  const first = await checkExportAccess(client, target);
  if (first?.status === 401) throw new Error(first.message);
  if (first === undefined) return { stop: () => Promise.resolve() };
  log.error(first.message, { retryingEverySeconds: repeatMs / 1000 });
  const stopped = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  const again = () => {
    timer = setTimeout(() => {
      running = (async () => {
        const problem = await checkExportAccess(client, {
          ...target,
          signal: stopped.signal,
        });
        if (stopped.signal.aborted) return;
        if (problem === undefined) {
          log.info("the APIExportEndpointSlice can be read now", {
            workspace: target.workspaceUrl,
          });
          return;
        }
        log.error(problem.message, { retryingEverySeconds: repeatMs / 1000 });
        again();
      })();
    }, repeatMs);
  };
  again();
  return {
    async stop() {
      stopped.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
