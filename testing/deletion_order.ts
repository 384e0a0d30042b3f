/**
 * The order in which kcp deletes objects, as watches see it: a
 * {@linkcode DeletionRecorder} watches some types in one workspace (all
 * namespaces) and records, per object, when it got its `deletionTimestamp`
 * and when it was deleted, with kcp's resourceVersion of each event (one
 * counter per shard, so the order is kcp's own, not the order events
 * arrived in). A teardown test starts one before a delete and stops it once
 * everything is gone.
 *
 * ```ts
 * import { kcpTest, recordDeletions, reportDeletionOrder } from "./mod.ts";
 *
 * kcpTest("the order of a namespace's teardown", async (kcp, step) => {
 *   await step("delete the namespace", async () => {
 *     const workspace = "root:consumers:c1";
 *     const recorder = await recordDeletions(kcp, {
 *       workspace,
 *       types: [{ group: "", version: "v1", resource: "configmaps", kind: "ConfigMap" }],
 *     });
 *     const from = performance.now();
 *     await kcp.kubectlOk(["delete", "namespace", "team-a"], { workspace });
 *     const order = await recorder.stop({ namespace: "team-a", from });
 *     reportDeletionOrder("namespace team-a", order, { extra: "" });
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import type { KcpApi } from "./kcp_server.ts";

/** A type to watch: group (`""` for core), version, resource and kind. */
export interface WatchedType {
  /** API group, `""` for core. */
  group: string;
  /** API version. */
  version: string;
  /** Resource (plural), as the watch URL names it. */
  resource: string;
  /** Kind, for reports. */
  kind: string;
}

/** One event a watch saw for an object. */
export interface Seen {
  /** The object's resource (plural). */
  resource: string;
  /** Its kind. */
  kind: string;
  /** Its namespace (`""` if cluster-scoped). */
  namespace: string;
  /** Its name. */
  name: string;
  /** `deleting`: the first event with a deletionTimestamp; `deleted`: DELETED. */
  event: "deleting" | "deleted";
  /** kcp's resourceVersion of the event (one counter per shard). */
  revision: bigint;
  /** When it arrived (`performance.now()`). */
  at: number;
}

/** What the watches saw in one namespace. */
export interface DeletionOrder {
  /** Every `deleted` event, in kcp's order (resourceVersion). */
  deleted: Seen[];
  /** Every `deleting` event, in kcp's order. */
  deleting: Seen[];
  /** `performance.now()` the times are measured from. */
  from: number;
  /** The types watched, in the order given: reports list them so. */
  types: readonly WatchedType[];
}

/** Options for {@linkcode recordDeletions}. */
export interface RecordDeletionsOptions {
  /** The workspace (path) watched. */
  workspace: string;
  /** The types watched, all namespaces. */
  types: readonly WatchedType[];
}

/** Watches on some types, started by {@linkcode recordDeletions}. */
export class DeletionRecorder {
  readonly #watches: TypeWatch[];
  readonly #types: readonly WatchedType[];

  /** Watches on `options.types`; {@linkcode recordDeletions} waits for them. */
  constructor(kcp: KcpApi, options: RecordDeletionsOptions) {
    this.#types = options.types;
    this.#watches = options.types.map((type) =>
      new TypeWatch(kcp, { workspace: options.workspace, type })
    );
  }

  /** Resolves once kcp answered every watch: later events are not missed. */
  async ready(): Promise<void> {
    await Promise.all(this.#watches.map((w) => w.ready));
  }

  /**
   * Stops watching and returns what was seen in `options.namespace`, in
   * kcp's order, with times measured from `options.from`.
   *
   * @throws {AssertionError} If a watch broke off before it was stopped.
   */
  async stop(
    options: { namespace: string; from: number },
  ): Promise<DeletionOrder> {
    for (const w of this.#watches) await w.stop();
    for (const w of this.#watches) {
      assert.equal(w.ended, undefined, `a watch broke off: ${w.ended}`);
    }
    const all = this.#watches.flatMap((w) => w.seen)
      .filter((s) => s.namespace === options.namespace)
      .sort((a, b) => (a.revision < b.revision ? -1 : 1));
    return {
      deleted: all.filter((s) => s.event === "deleted"),
      deleting: all.filter((s) => s.event === "deleting"),
      from: options.from,
      types: this.#types,
    };
  }

  /**
   * Stops watching and returns every `deleted` event seen, in all
   * namespaces, in kcp's order. Unlike {@linkcode DeletionRecorder.stop},
   * it asserts nothing about the watches: one on a workspace being deleted
   * ends with it, and what it saw until then stays.
   */
  async stopAllDeleted(): Promise<Seen[]> {
    for (const w of this.#watches) await w.stop();
    return this.#watches.flatMap((w) => w.seen)
      .filter((s) => s.event === "deleted")
      .sort((a, b) => (a.revision < b.revision ? -1 : 1));
  }
}

/** Starts watches on `options.types` and resolves once they are all answered. */
export async function recordDeletions(
  kcp: KcpApi,
  options: RecordDeletionsOptions,
): Promise<DeletionRecorder> {
  const recorder = new DeletionRecorder(kcp, options);
  await recorder.ready();
  return recorder;
}

/** The `deleted` event of `resource`/`name`; fails if the watch missed it. */
export function deletedAt(
  order: DeletionOrder,
  object: { resource: string; name: string },
): Seen {
  const seen = order.deleted.find((s) =>
    s.resource === object.resource && s.name === object.name
  );
  assert.ok(
    seen !== undefined,
    `the watch saw ${object.resource}/${object.name} deleted`,
  );
  return seen;
}

/**
 * `VirtualMachine x12 -> Subnet x6 -> ...`: the runs of one kind in kcp's
 * order.
 */
export function kindRuns(seen: readonly Seen[]): string {
  const parts: { kind: string; n: number }[] = [];
  for (const s of seen) {
    const last = parts[parts.length - 1];
    if (last?.kind === s.kind) last.n++;
    else parts.push({ kind: s.kind, n: 1 });
  }
  return parts.map((p) => p.n === 1 ? p.kind : `${p.kind} x${p.n}`).join(
    " -> ",
  );
}

/**
 * `VirtualMachine x12 0.31-0.52 s, ...`: per kind (in the order watched),
 * the first and last time, in seconds from `order.from`.
 */
export function kindTimes(order: DeletionOrder, seen: readonly Seen[]): string {
  const s = (ms: number) => ((ms - order.from) / 1000).toFixed(2);
  return order.types.flatMap((type) => {
    const at = seen.filter((x) => x.resource === type.resource).map((x) =>
      x.at
    );
    if (at.length === 0) return [];
    const first = Math.min(...at);
    const last = Math.max(...at);
    return [
      `${type.kind}${at.length > 1 ? ` x${at.length}` : ""} ${
        at.length > 1 ? `${s(first)}-${s(last)}` : s(first)
      } s`,
    ];
  }).join(", ");
}

/**
 * Prints a deletion order and its times, measured from `options.since`
 * (what `order.from` was taken at, `the delete` unless said), and
 * `options.extra`.
 */
export function reportDeletionOrder(
  label: string,
  order: DeletionOrder,
  options: { extra: string; since?: string },
): void {
  const since = options.since ?? "the delete";
  console.log(
    [
      `${label}:`,
      `  deleted, in kcp's order: ${kindRuns(order.deleted)}`,
      `  deleted, s after ${since}: ${kindTimes(order, order.deleted)}`,
      ...(order.deleting.length === 0 ? [] : [
        `  deletionTimestamp set, s after ${since}: ${
          kindTimes(order, order.deleting)
        }`,
      ]),
      `  ${options.extra}`,
    ].join("\n"),
  );
}

/** A watch on one type in one workspace (all namespaces). */
class TypeWatch {
  readonly seen: Seen[] = [];
  /** Resolves once kcp answered the watch: later events are not missed. */
  readonly ready: Promise<void>;
  /** Why the stream broke off before it was stopped, if it did. */
  ended: unknown = undefined;
  readonly #stop = new AbortController();
  readonly #client: Deno.HttpClient;
  readonly #deleting = new Set<string>();
  readonly #type: WatchedType;
  readonly #done: Promise<void>;

  constructor(kcp: KcpApi, options: { workspace: string; type: WatchedType }) {
    const { type } = options;
    this.#type = type;
    this.#client = Deno.createHttpClient({ caCerts: [kcp.caPem] });
    const prefix = type.group === ""
      ? `/api/${type.version}`
      : `/apis/${type.group}/${type.version}`;
    const url = `${
      kcp.clusterUrl(options.workspace)
    }${prefix}/${type.resource}?watch=true`;
    const ready = Promise.withResolvers<void>();
    // Nobody may wait for it once the watch broke off: not unhandled.
    ready.promise.catch(() => {});
    this.ready = ready.promise;
    this.#done = this.#run(url, kcp.identity("admin").token, ready);
  }

  async #run(
    url: string,
    token: string,
    ready: PromiseWithResolvers<void>,
  ): Promise<void> {
    try {
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${token}` },
        client: this.#client,
        signal: this.#stop.signal,
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new Error(`watch ${url}: ${response.status}`);
      }
      ready.resolve();
      let buffer = "";
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        let newline;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          this.#record(line, performance.now());
        }
      }
    } catch (error) {
      ready.reject(error);
      if (!this.#stop.signal.aborted) this.ended = error;
    }
  }

  #record(line: string, at: number): void {
    const event = JSON.parse(line) as {
      type: string;
      object: {
        metadata: {
          name: string;
          namespace?: string;
          resourceVersion: string;
          deletionTimestamp?: string;
        };
      };
    };
    if (event.type === "ERROR") {
      this.ended = new Error(`watch error: ${line}`);
      return;
    }
    const { name, resourceVersion, deletionTimestamp } = event.object.metadata;
    const namespace = event.object.metadata.namespace ?? "";
    const key = `${namespace}/${name}`;
    const seen = {
      resource: this.#type.resource,
      kind: this.#type.kind,
      namespace,
      name,
      revision: BigInt(resourceVersion),
      at,
    };
    if (
      event.type === "MODIFIED" && deletionTimestamp !== undefined &&
      !this.#deleting.has(key)
    ) {
      this.#deleting.add(key);
      this.seen.push({ ...seen, event: "deleting" });
    }
    if (event.type === "DELETED") this.seen.push({ ...seen, event: "deleted" });
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
    this.#client.close();
  }
}
