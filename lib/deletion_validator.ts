/**
 * The admission decision for a DELETE: which rules protect the type, which
 * dependents in the consumer's workspace still refer to the object, and the
 * answer. Pure given a {@linkcode DependentSource}; fails closed.
 *
 * @module
 */
import { CLUSTER_ANNOTATION, SKIP_PROTECTION_ANNOTATION } from "./api.ts";
import {
  type AdmissionRequest,
  type AdmissionResponse,
  allow,
  deny,
  objectOf,
} from "./admission_review.ts";
import { resolveFieldPath } from "./field_path.ts";
import { KubeApiError } from "./kube_client.ts";
import {
  type GroupVersionResource,
  gvrKey,
  type Protection,
  type RuleRegistry,
} from "./rule_registry.ts";

/** The exact denial while rules are not loaded (scripts match on it). */
export const NOT_INITIALIZED_MESSAGE =
  "dependency webhook not yet initialized, retry later";

/** What to list: one dependent type in one logical cluster, one namespace or all. */
export interface DependentQuery {
  /** Logical cluster name of the consumer workspace. */
  cluster: string;
  /** Namespace to list in; absent means all namespaces. */
  namespace?: string;
  /** The dependent type. */
  dependent: GroupVersionResource;
}

/** Lists dependents page by page (so memory stays bounded). */
export interface DependentSource {
  /**
   * Pages of the dependents a query selects.
   *
   * @throws {KubeApiError} On failure; `notFound` means the workspace does not serve the type.
   */
  pages(
    query: DependentQuery,
    signal: AbortSignal,
  ): AsyncIterable<readonly unknown[]>;
}

/** How a review ended, for metrics and logs. */
export type Outcome =
  | "allowed"
  | "allowed_skip"
  | "denied_referenced"
  | "denied_not_ready"
  | "denied_error"
  | "denied_invalid";

/** A decision: the response and why. */
export interface Verdict {
  /** The AdmissionReview response. */
  response: AdmissionResponse;
  /** Why, in one word. */
  outcome: Outcome;
  /** Number of blocking dependents found (denied_referenced only). */
  blockers?: number;
}

/** Options for {@linkcode DeletionValidator}. */
export interface DeletionValidatorOptions {
  /** Deadline for all lists of one review, well inside kcp's 10 s webhook timeout. @default {7_000} */
  timeoutMs?: number;
  /** How many blockers the message names before "and N more". @default {10} */
  maxNamed?: number;
}

interface Blocker {
  kind: string;
  namespace: string;
  name: string;
  paths: string[];
}

/** Decides DELETE reviews against the registry's rules. */
export class DeletionValidator {
  readonly #registry: RuleRegistry;
  readonly #source: DependentSource;
  readonly #timeoutMs: number;
  readonly #maxNamed: number;

  /** Builds a validator over a registry and a source of dependents. */
  constructor(
    registry: RuleRegistry,
    source: DependentSource,
    options: DeletionValidatorOptions = {},
  ) {
    this.#registry = registry;
    this.#source = source;
    this.#timeoutMs = options.timeoutMs ?? 7_000;
    this.#maxNamed = options.maxNamed ?? 10;
  }

  /** Decides one admission request. Never throws. */
  async validate(request: AdmissionRequest): Promise<Verdict> {
    const { uid } = request;
    if (request.operation !== "DELETE") {
      return { response: allow(uid), outcome: "allowed" };
    }
    if (!this.#registry.loaded) {
      return {
        response: deny(uid, {
          code: 503,
          reason: "ServiceUnavailable",
          message: NOT_INITIALIZED_MESSAGE,
        }),
        outcome: "denied_not_ready",
      };
    }
    const object = objectOf(request);
    if (object === undefined) {
      return invalid(
        uid,
        "cannot read the object being deleted: the review carries no oldObject",
      );
    }
    const metadata = asRecord(object.metadata);
    const annotations = asRecord(metadata?.annotations);
    if (annotations?.[SKIP_PROTECTION_ANNOTATION] === "true") {
      return { response: allow(uid), outcome: "allowed_skip" };
    }
    const cluster = annotations?.[CLUSTER_ANNOTATION];
    if (typeof cluster !== "string" || cluster === "") {
      return invalid(
        uid,
        `cannot tell the workspace of the object being deleted: it has no ${CLUSTER_ANNOTATION} annotation`,
      );
    }
    // For each item of a DELETECOLLECTION kcp sends an empty request.name.
    const name = typeof metadata?.name === "string" && metadata.name !== ""
      ? metadata.name
      : request.name;
    if (name === "") {
      return invalid(uid, "cannot tell the name of the object being deleted");
    }
    const protections = this.#registry.find(request.resource);
    if (protections.length === 0) {
      return { response: allow(uid), outcome: "allowed" };
    }
    const target = `${request.resource.resource}/${name}`;
    const namespace = request.namespace || undefined;
    try {
      const { named, total } = await this.#findBlockers(protections, {
        cluster,
        name,
        ...(namespace === undefined ? {} : { namespace }),
        target: request.resource,
      });
      if (total === 0) return { response: allow(uid), outcome: "allowed" };
      return {
        response: deny(uid, {
          code: 409,
          reason: "Conflict",
          message: blockedMessage(
            target,
            named,
            total,
            namespace === undefined,
          ),
        }),
        outcome: "denied_referenced",
        blockers: total,
      };
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      return {
        response: deny(uid, {
          code: 503,
          reason: "ServiceUnavailable",
          message:
            `cannot delete ${target}: cannot check whether other objects still refer to it (${detail}); ` +
            `the delete is denied until they can be checked: retry later, or set the annotation ` +
            `${SKIP_PROTECTION_ANNOTATION}=true on the object to delete it anyway`,
        }),
        outcome: "denied_error",
      };
    }
  }

  async #findBlockers(
    protections: readonly Protection[],
    query: {
      cluster: string;
      namespace?: string;
      name: string;
      target: GroupVersionResource;
    },
  ): Promise<{ named: Blocker[]; total: number }> {
    const byDependent = new Map<string, Protection[]>();
    for (const p of protections) {
      const key = gvrKey(p.dependent);
      byDependent.set(key, [...(byDependent.get(key) ?? []), p]);
    }
    // One signal ends every list: the deadline, or the first list that fails.
    const stop = new AbortController();
    const pending = new Map(byDependent);
    const timer = setTimeout(() => {
      const names = [...pending.values()].map((g) =>
        `${g[0]!.dependent.resource}.${g[0]!.dependent.group}`
      );
      stop.abort(new DeadlineExceeded(this.#timeoutMs, names));
    }, this.#timeoutMs);
    const stopped = new Promise<never>((_, reject) => {
      stop.signal.addEventListener("abort", () => reject(stop.signal.reason), {
        once: true,
      });
    });
    stopped.catch(() => {});
    const found = { named: [] as Blocker[], total: 0 };
    try {
      const lists = [...byDependent].map(([key, group]) =>
        this.#scan(group, query, stop.signal, found).then(
          () => pending.delete(key),
          (error) => {
            if (!stop.signal.aborted) stop.abort(error);
            throw stop.signal.reason;
          },
        )
      );
      // A source that ignores the signal still cannot hold the review past the deadline.
      await Promise.race([Promise.all(lists), stopped]);
    } finally {
      clearTimeout(timer);
      if (!stop.signal.aborted) stop.abort(new Error("review finished"));
    }
    return found;
  }

  /** Lists one dependent type and records the items that refer to the object. */
  async #scan(
    group: readonly Protection[],
    query: {
      cluster: string;
      namespace?: string;
      name: string;
      target: GroupVersionResource;
    },
    signal: AbortSignal,
    found: { named: Blocker[]; total: number },
  ): Promise<void> {
    const dependent = group[0]!.dependent;
    const self = gvrKey(dependent) === gvrKey(query.target);
    try {
      const pages = this.#source.pages({
        cluster: query.cluster,
        dependent,
        ...(query.namespace === undefined
          ? {}
          : { namespace: query.namespace }),
      }, signal);
      for await (const items of pages) {
        if (signal.aborted) return;
        for (const item of items) {
          const paths = group.filter((p) =>
            resolveFieldPath(item, p.fieldPath) === query.name
          )
            .map((p) => p.fieldPathText);
          if (paths.length === 0) continue;
          const metadata = asRecord(asRecord(item)?.metadata);
          const blocker: Blocker = {
            kind: dependent.kind,
            namespace: typeof metadata?.namespace === "string"
              ? metadata.namespace
              : "",
            name: typeof metadata?.name === "string" ? metadata.name : "",
            paths,
          };
          // An object that names itself does not block its own deletion.
          if (
            self && blocker.name === query.name &&
            blocker.namespace === (query.namespace ?? "")
          ) continue;
          found.total++;
          keepFirst(found.named, blocker, this.#maxNamed);
        }
      }
    } catch (error) {
      if (error instanceof KubeApiError && error.notFound) return;
      if (signal.reason instanceof DeadlineExceeded) throw signal.reason;
      const detail = error instanceof Error ? error.message : String(error);
      throw new Error(
        `listing ${dependent.resource}.${dependent.group} failed: ${detail}`,
      );
    }
  }
}

/** The deadline of a review passed. */
class DeadlineExceeded extends Error {
  constructor(timeoutMs: number, pending: readonly string[]) {
    super(
      `listing ${pending.join(", ")} did not finish within ${timeoutMs} ms`,
    );
    this.name = "DeadlineExceeded";
  }
}

/** Keeps `named` the `max` smallest blockers in (kind, namespace, name) order, whatever order they come in. */
function keepFirst(named: Blocker[], blocker: Blocker, max: number): void {
  named.push(blocker);
  named.sort(compareBlockers);
  if (named.length > max) named.pop();
}

function compareBlockers(a: Blocker, b: Blocker): number {
  return a.kind.localeCompare(b.kind) ||
    a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name);
}

/** `cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name) and 2 more`. */
function blockedMessage(
  target: string,
  named: readonly Blocker[],
  total: number,
  qualify: boolean,
): string {
  const names = named.map((b) => {
    const id = qualify && b.namespace !== ""
      ? `${b.kind}/${b.namespace}/${b.name}`
      : `${b.kind}/${b.name}`;
    return `${id} (${b.paths.join(", ")})`;
  });
  const more = total > named.length ? ` and ${total - named.length} more` : "";
  return `cannot delete ${target}: still referenced by ${
    names.join(", ")
  }${more}`;
}

function invalid(uid: string, message: string): Verdict {
  return {
    response: deny(uid, { code: 400, reason: "BadRequest", message }),
    outcome: "denied_invalid",
  };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}
