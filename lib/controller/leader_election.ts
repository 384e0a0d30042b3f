/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
 * semantics:
 *
 * - A replica takes the lease when it is missing (create), free (empty
 *   `holderIdentity`), its own, or expired; every write carries the observed
 *   `resourceVersion`, so of two racing replicas one gets a 409 and retries.
 * - Expiry is judged by the local monotonic clock: the lease record's
 *   `leaseDurationSeconds` after the moment this replica last saw the record
 *   change (holder, `renewTime` or `resourceVersion`). The remote
 *   `renewTime` is never compared with the local clock, so clock skew
 *   between replicas does not matter.
 * - The leader renews every retry period and gives up leadership when no
 *   renewal succeeded for the renew deadline (or when it sees another
 *   holder). As the deadline is shorter than the lease duration, a leader
 *   stops leading before any other replica can consider the lease expired.
 * - On {@linkcode LeaderElector.stop} the leader releases the lease (as
 *   client-go's `ReleaseOnCancel`), so another replica takes over at once.
 *
 * @example Usage
 * ```ts ignore
 * const elector = new LeaderElector({
 *   client,
 *   leaseUrl: `${server}/apis/coordination.k8s.io/v1/namespaces/default/leases/dependency-controller`,
 *   identity: `${Deno.hostname()}_${crypto.randomUUID()}`,
 *   log,
 *   onStartedLeading: () => controller.start(),
 *   onStoppedLeading: () => controller.stop(),
 * });
 * elector.start();
 * // ... on shutdown, after stopping the leader's work:
 * await elector.stop();
 * ```
 *
 * @module
 */
import { type LogFields, type Logger, sleep } from "../runtime/mod.ts";
import { KubeApiError, type KubeClient } from "../kcp/mod.ts";
import {
  asLease,
  type Lease,
  type LeaseSpec,
  microTime,
  sameRecord,
} from "./lease.ts";

/** Options for {@linkcode LeaderElector}. */
export interface LeaderElectorOptions {
  /** The client to read and write the Lease with. */
  client: KubeClient;
  /** Full URL of the Lease, e.g. `<server>/apis/coordination.k8s.io/v1/namespaces/default/leases/dependency-controller`. */
  leaseUrl: string;
  /** This replica's identity (holderIdentity), e.g. hostname + "_" + random. */
  identity: string;
  /** Where to log. */
  log: Logger;
  /**
   * How long other replicas wait, after they last saw the lease change,
   * before taking it over. Written to the lease rounded up to seconds.
   * @default {15_000}
   */
  leaseDurationMs?: number;
  /**
   * How long the leader keeps leading without a successful renewal.
   * Must be shorter than `leaseDurationMs`.
   * @default {10_000}
   */
  renewDeadlineMs?: number;
  /**
   * The pause between attempts to acquire (with up to 20% jitter) and
   * between renewals. Must be shorter than `renewDeadlineMs`.
   * @default {2_000}
   */
  retryPeriodMs?: number;
  /** Called when this replica becomes the leader. */
  onStartedLeading: () => void;
  /** Called once when leadership is lost (renew failed past the deadline, or the lease was taken). Not called by stop(). */
  onStoppedLeading: () => void;
}

const API_VERSION = "coordination.k8s.io/v1";
/** Acquire attempts are spread over [retryPeriod, retryPeriod * (1 + JITTER)). */
const JITTER = 0.2;

/**
 * Elects one leader among the replicas that share a Lease. Runs once:
 * {@linkcode LeaderElector.start}, then {@linkcode LeaderElector.stop}.
 */
export class LeaderElector {
  readonly #client: KubeClient;
  readonly #leaseUrl: string;
  readonly #collectionUrl: string;
  readonly #name: string;
  readonly #identity: string;
  readonly #log: Logger;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  /** Deadline of each request; the renew deadline may cut it shorter. */
  readonly #requestTimeoutMs: number;
  readonly #onStartedLeading: () => void;
  readonly #onStoppedLeading: () => void;
  readonly #abort = new AbortController();
  #running: Promise<void> | undefined;
  /** The lease as last read or written; undefined before the first success. */
  #lease: Lease | undefined;
  /** `performance.now()` when this replica last saw {@linkcode #lease} change. */
  #observedAt = 0;
  /** Whether this replica leads (between the two callbacks). */
  #leading = false;
  /** `performance.now()` when our last successful write of the lease was sent. */
  #renewedAt = 0;
  /** Why the last renewal failed. */
  #renewError: unknown;

  /**
   * Builds an elector; {@linkcode LeaderElector.start} runs it.
   *
   * @throws {RangeError} Unless 0 < retryPeriodMs < renewDeadlineMs < leaseDurationMs.
   * @throws {TypeError} If the identity is empty or the lease URL has no name.
   */
  constructor(options: LeaderElectorOptions) {
    const {
      leaseDurationMs = 15_000,
      renewDeadlineMs = 10_000,
      retryPeriodMs = 2_000,
    } = options;
    if (
      !(retryPeriodMs > 0) || !(renewDeadlineMs > retryPeriodMs) ||
      !(leaseDurationMs > renewDeadlineMs) || !Number.isFinite(leaseDurationMs)
    ) {
      throw new RangeError(
        `Cannot create leader elector as durations must satisfy 0 < retryPeriodMs < renewDeadlineMs < leaseDurationMs: current values are ${retryPeriodMs}, ${renewDeadlineMs} and ${leaseDurationMs}`,
      );
    }
    if (options.identity === "") {
      throw new TypeError(
        "Cannot create leader elector as the identity is empty",
      );
    }
    const slash = options.leaseUrl.lastIndexOf("/");
    const name = options.leaseUrl.slice(slash + 1);
    if (slash === -1 || name === "" || name.includes("?")) {
      throw new TypeError(
        `Cannot create leader elector as the lease URL must end with the lease's name: current value is '${options.leaseUrl}'`,
      );
    }
    this.#client = options.client;
    this.#leaseUrl = options.leaseUrl;
    this.#collectionUrl = options.leaseUrl.slice(0, slash);
    this.#name = decodeURIComponent(name);
    this.#identity = options.identity;
    this.#log = options.log.with({ lease: this.#name });
    this.#leaseDurationMs = leaseDurationMs;
    this.#renewDeadlineMs = renewDeadlineMs;
    this.#retryPeriodMs = retryPeriodMs;
    this.#requestTimeoutMs = Math.max(1, Math.floor(renewDeadlineMs / 2));
    this.#onStartedLeading = options.onStartedLeading;
    this.#onStoppedLeading = options.onStoppedLeading;
  }

  /**
   * Whether this replica leads: true from `onStartedLeading` until
   * `onStoppedLeading` or {@linkcode LeaderElector.stop}, and never longer
   * than the renew deadline after the last successful renewal.
   */
  get isLeader(): boolean {
    return this.#leading && this.#renewRemainingMs() > 0;
  }

  /** Starts trying to acquire the lease in the background. */
  start(): void {
    this.#running ??= this.#run();
  }

  /**
   * Stops trying; if leading, releases the lease (empty holderIdentity,
   * leaseDurationSeconds 1) so another replica takes over at once, without
   * calling `onStoppedLeading`. Waits for the loop to end: at most one
   * request deadline when a write is in flight.
   */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running;
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      if (this.#leading) {
        await this.#renew();
        if (this.#leading) {
          const remaining = this.#renewRemainingMs();
          // The next renewal gets what is left after the pause; it must
          // leave at least half a retry period for the request.
          if (remaining - this.#retryPeriodMs >= this.#retryPeriodMs / 2) {
            await sleep(this.#retryPeriodMs, signal);
          } else {
            // No renewal could be answered in time: wait for the deadline
            // rather than send a request that cannot succeed.
            await sleep(Math.max(0, remaining), signal);
            if (!signal.aborted && this.#leading) this.#deadlineExceeded();
          }
        }
      } else if (await this.#acquire(signal)) {
        this.#leading = true;
        if (signal.aborted) break; // released below, without the callback
        this.#log.info("became leader", { identity: this.#identity });
        this.#call(this.#onStartedLeading, "onStartedLeading");
      } else {
        const pause = this.#retryPeriodMs * (1 + Math.random() * JITTER);
        await sleep(pause, signal);
      }
    }
    if (this.#leading) await this.#release();
  }

  /** One attempt to acquire the lease; true when it is now ours. */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    try {
      return await this.#tryAcquireOrRenew(
        () => this.#requestTimeoutMs,
        signal,
      );
    } catch (error) {
      if (!signal.aborted) {
        this.#log.warn("cannot acquire the lease", { error });
      }
      return false;
    }
  }

  /**
   * One attempt to renew, bounded by the renew deadline. Gives up
   * leadership when the deadline passed or another replica holds the lease.
   */
  async #renew(): Promise<void> {
    if (this.#renewRemainingMs() > 0) {
      try {
        const budget = () =>
          Math.max(
            1,
            Math.min(this.#requestTimeoutMs, this.#renewRemainingMs()),
          );
        if (await this.#tryAcquireOrRenew(budget, undefined)) {
          this.#renewError = undefined;
          return;
        }
        const holder = this.#holder();
        if (holder !== "" && holder !== this.#identity) {
          this.#lose({ reason: "lease taken", holder });
          return;
        }
        this.#renewError = "the lease changed concurrently (409 Conflict)";
      } catch (error) {
        this.#renewError = error;
        this.#log.warn("cannot renew the lease", {
          error,
          remainingMs: Math.max(0, Math.round(this.#renewRemainingMs())),
        });
      }
    }
    if (this.#renewRemainingMs() <= 0) this.#deadlineExceeded();
  }

  /** Gives up leadership at the renew deadline, with the last renewal error. */
  #deadlineExceeded(): void {
    this.#log.error("cannot renew the lease within the renew deadline", {
      error: this.#renewError,
      renewDeadlineMs: this.#renewDeadlineMs,
    });
    this.#lose({ reason: "renew deadline exceeded" });
  }

  /**
   * client-go's `tryAcquireOrRenew`: true when the lease is ours after a
   * successful write. While leading, first renews over the version last
   * written; otherwise (or after a 409) reads the lease, creates it if
   * missing, and writes it unless another replica holds it unexpired.
   * `timeoutMs` gives each request's deadline; `signal` aborts reads only,
   * so that a write that may succeed is never abandoned by stop().
   *
   * @throws {KubeApiError} When a request fails other than with a 409.
   */
  async #tryAcquireOrRenew(
    timeoutMs: () => number,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    if (this.#leading && this.#lease !== undefined) {
      try {
        await this.#update(this.#lease, timeoutMs());
        return true;
      } catch (error) {
        if (!isConflict(error)) throw error;
        this.#log.debug("the lease changed since our last write, reading it");
      }
    }
    const lease = await this.#read(timeoutMs(), signal);
    if (lease === undefined) return await this.#create(timeoutMs());
    this.#observe(lease);
    const holder = this.#holder();
    if (holder !== "" && holder !== this.#identity && !this.#expired()) {
      return false;
    }
    try {
      await this.#update(lease, timeoutMs());
      return true;
    } catch (error) {
      if (!isConflict(error)) throw error;
      this.#log.debug("the lease changed concurrently, retrying later");
      return false;
    }
  }

  /** GETs the lease; undefined when there is none. */
  async #read(
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Lease | undefined> {
    try {
      const lease = await this.#client.get<unknown>(this.#leaseUrl, {
        timeoutMs,
        ...(signal === undefined ? {} : { signal }),
      });
      return asLease(lease, "GET", this.#leaseUrl);
    } catch (error) {
      if (error instanceof KubeApiError && error.notFound) return undefined;
      throw error;
    }
  }

  /** POSTs a new lease held by us; false when another replica created it first. */
  async #create(timeoutMs: number): Promise<boolean> {
    const sentAt = performance.now();
    let created: unknown;
    try {
      created = await this.#client.request<unknown>(
        "POST",
        this.#collectionUrl,
        {
          body: {
            apiVersion: API_VERSION,
            kind: "Lease",
            metadata: { name: this.#name },
            spec: this.#heldSpec(undefined),
          },
          timeoutMs,
        },
      );
    } catch (error) {
      if (!isConflict(error)) throw error;
      this.#log.debug("the lease was created concurrently, retrying later");
      return false;
    }
    this.#observe(asLease(created, "POST", this.#collectionUrl));
    this.#renewedAt = sentAt;
    return true;
  }

  /** PUTs `lease` held by us, over its resourceVersion. */
  async #update(lease: Lease, timeoutMs: number): Promise<void> {
    const sentAt = performance.now();
    await this.#put(lease, this.#heldSpec(lease), timeoutMs);
    this.#renewedAt = sentAt;
  }

  /** PUTs `lease` with `spec` over its resourceVersion and observes the answer. */
  async #put(lease: Lease, spec: LeaseSpec, timeoutMs: number): Promise<void> {
    const written = await this.#client.request<unknown>(
      "PUT",
      this.#leaseUrl,
      {
        body: { ...lease, apiVersion: API_VERSION, kind: "Lease", spec },
        timeoutMs,
      },
    );
    this.#observe(asLease(written, "PUT", this.#leaseUrl));
  }

  /**
   * Releases the lease (client-go's `ReleaseOnCancel`): empty holder,
   * lease duration 1 s. Errors are logged, not thrown; a 409 means the
   * lease is no longer ours to release.
   */
  async #release(): Promise<void> {
    this.#leading = false;
    const lease = this.#lease;
    if (lease === undefined) return;
    const now = microTime(new Date());
    try {
      await this.#put(lease, {
        ...lease.spec,
        holderIdentity: "",
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
      }, this.#requestTimeoutMs);
      this.#log.info("released the lease");
    } catch (error) {
      this.#log.error("cannot release the lease", { error });
    }
  }

  /**
   * The spec of `lease` held by us and renewed now. Taking it from another
   * holder (or from none) sets acquireTime and counts a transition; a new
   * lease starts at 0 transitions.
   */
  #heldSpec(lease: Lease | undefined): LeaseSpec {
    const now = microTime(new Date());
    const old = lease?.spec ?? {};
    const taking = (old.holderIdentity ?? "") !== this.#identity;
    let transitions = old.leaseTransitions ?? 0;
    if (lease !== undefined && taking) transitions++;
    return {
      ...old,
      holderIdentity: this.#identity,
      leaseDurationSeconds: Math.ceil(this.#leaseDurationMs / 1000),
      acquireTime: taking ? now : old.acquireTime ?? now,
      renewTime: now,
      leaseTransitions: transitions,
    };
  }

  /** Keeps `lease` as the last seen; restarts the expiry clock if it changed. */
  #observe(lease: Lease): void {
    const before = this.#lease;
    this.#lease = lease;
    if (before !== undefined && sameRecord(before, lease)) return;
    this.#observedAt = performance.now();
    const holder = this.#holder();
    const previous = before?.spec?.holderIdentity ?? "";
    if (holder !== "" && holder !== this.#identity && holder !== previous) {
      this.#log.info("leader is another replica", { holder });
    }
  }

  /** The holder of the lease as last seen ("" when free or unknown). */
  #holder(): string {
    return this.#lease?.spec?.holderIdentity ?? "";
  }

  /**
   * Whether the lease's duration has passed since we last saw it change.
   * A lease without a positive duration gets ours.
   */
  #expired(): boolean {
    const seconds = this.#lease?.spec?.leaseDurationSeconds;
    const durationMs = typeof seconds === "number" && seconds > 0
      ? seconds * 1000
      : this.#leaseDurationMs;
    return performance.now() >= this.#observedAt + durationMs;
  }

  /** Milliseconds left before the renew deadline (negative once past). */
  #renewRemainingMs(): number {
    return this.#renewedAt + this.#renewDeadlineMs - performance.now();
  }

  #lose(fields: LogFields): void {
    this.#leading = false;
    this.#log.warn("lost leadership", fields);
    this.#call(this.#onStoppedLeading, "onStoppedLeading");
  }

  #call(callback: () => void, name: string): void {
    try {
      callback();
    } catch (error) {
      this.#log.error(`${name} failed`, { error });
    }
  }
}

function isConflict(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 409;
}
