/**
 * Asking the API server, as the user, whether an object could be deleted
 * now: a server-side dry-run DELETE ({@linkcode DryRunDeleter}), whose
 * answer comes back whole, status and body, since a denial carries what
 * holds the object in its `Status`'s `details.causes`. Nothing is deleted:
 * with `dryRun=All` the API server runs admission (the dependency webhook
 * included) and stops before storage. It takes the user's own permission
 * to delete the object, nothing more.
 *
 * @example Ask about one VPC
 * ```ts ignore
 * import { DryRunDeleter, objectUrl } from "./dry_run.ts";
 *
 * const deleter = new DryRunDeleter(connection);
 * const answer = await deleter.ask(objectUrl(server, {
 *   group: "network.example.com", version: "v1alpha1", resource: "vpcs",
 *   namespace: "default", name: "core",
 * }));
 * deleter.close();
 * ```
 *
 * @module
 */
import type { CauseObject } from "../causes/mod.ts";
import {
  KubeApiError,
  type KubeClient,
  pathSegment,
  RESPONSE_TOO_LARGE,
} from "../kcp/mod.ts";
import { errorText } from "../runtime/mod.ts";
import { PluginError } from "./context.ts";

/** An answer of the API server: its HTTP status and its body (JSON, else the text). */
export interface HttpAnswer {
  /** HTTP status. */
  status: number;
  /** The body, parsed as JSON when it is JSON, else its text (`""` when empty). */
  body: unknown;
}

/** Where an object is: what {@linkcode objectUrl} needs. */
export type ObjectPlace = Pick<
  CauseObject,
  "group" | "version" | "resource" | "namespace" | "name"
>;

/** The most bytes of an answer read: a denial's causes are bounded well below it. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** How long one dry run may take, answer included, by default. */
export const DRY_RUN_TIMEOUT_MS = 30_000;

/** The body of the dry-run DELETE (the query says `dryRun=All` too). */
export const DRY_RUN_DELETE_OPTIONS = {
  kind: "DeleteOptions",
  apiVersion: "v1",
  dryRun: ["All"],
} as const;

/**
 * The URL of `object` under `server` (a workspace URL such as
 * `https://kcp.example/clusters/root:org:ws`): `/api/v1/...` for the core
 * group, `/apis/<group>/<version>/...` otherwise, with
 * `/namespaces/<namespace>` unless cluster-scoped (`namespace` `""`). Every
 * part goes in as one escaped path segment.
 *
 * @throws {TypeError} If a part cannot be a path segment (`""`, `.`, `..`).
 */
export function objectUrl(server: string, object: ObjectPlace): string {
  const api = object.group === ""
    ? `api/${pathSegment(object.version)}`
    : `apis/${pathSegment(object.group)}/${pathSegment(object.version)}`;
  const scope = object.namespace === ""
    ? ""
    : `namespaces/${pathSegment(object.namespace)}/`;
  return `${server.replace(/\/+$/, "")}/${api}/${scope}${
    pathSegment(object.resource)
  }/${pathSegment(object.name)}`;
}

/** Options for {@linkcode DryRunDeleter}. */
export interface DryRunDeleterOptions {
  /** How long one dry run may take. @default {DRY_RUN_TIMEOUT_MS} */
  timeoutMs?: number;
}

/**
 * Sends dry-run DELETEs with the user's client and gives back every answer
 * whole, error answers included (a denial's `Status` with its causes).
 */
export class DryRunDeleter {
  readonly #client: KubeClient;
  readonly #timeoutMs: number;

  /** A deleter sending with `client` (the kubeconfig's identity and trust). */
  constructor(client: KubeClient, options: DryRunDeleterOptions = {}) {
    this.#client = client;
    this.#timeoutMs = options.timeoutMs ?? DRY_RUN_TIMEOUT_MS;
  }

  /**
   * Sends `DELETE <url>?dryRun=All` and returns the answer, whatever its
   * status: the object for a 2xx, the `Status` (or the error's text when
   * the body is none) otherwise.
   *
   * @throws {PluginError} When no answer arrives (exit code 2): the server
   * cannot be reached, the deadline passed, or the answer is too large.
   */
  async ask(url: string): Promise<HttpAnswer> {
    const target = `${url}${url.includes("?") ? "&" : "?"}dryRun=All`;
    try {
      const body = await this.#client.request<unknown>("DELETE", target, {
        body: DRY_RUN_DELETE_OPTIONS,
        timeoutMs: this.#timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
      });
      return { status: 200, body };
    } catch (error) {
      if (!(error instanceof KubeApiError)) {
        throw new PluginError(`cannot reach ${url}: ${errorText(error)}`);
      }
      if (error.status === 0) {
        throw new PluginError(`cannot reach ${url}: ${errorText(error)}`);
      }
      if (error.reason === RESPONSE_TOO_LARGE) {
        throw new PluginError(error.message);
      }
      return { status: error.status, body: error.statusBody ?? error.message };
    }
  }
}
