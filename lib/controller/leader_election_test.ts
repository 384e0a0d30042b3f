import assert from "node:assert/strict";
import {
  connection,
  delay,
  FakeApi,
  json,
  logCollector,
  type SeenRequest,
  status,
  waitUntil,
} from "../../testing/fakes.ts";
import { KubeClient } from "../kcp/mod.ts";
import { LeaderElector, type LeaderElectorOptions } from "./leader_election.ts";
import { type Lease, type LeaseSpec, microTime } from "./lease.ts";
import { createLogger } from "../runtime/mod.ts";

const COLLECTION_PATH =
  "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const LEASE_PATH = `${COLLECTION_PATH}/dc`;
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
/** Short durations: the lease says 1 s (600 ms rounded up). */
const FAST = {
  leaseDurationMs: 600,
  renewDeadlineMs: 400,
  retryPeriodMs: 50,
} as const;

/** One request the lease server handled, in handling order. */
interface Handled {
  /** Who sent it (the client's user agent, i.e. the elector's identity). */
  by: string;
  method: string;
  /** `performance.now()` when handled. */
  at: number;
  /** The answer's status. */
  status: number;
  /** The request body's spec, for writes. */
  spec?: LeaseSpec;
}

/** A lease server answer that replaces the store's, e.g. a failure. */
type Fault = (
  request: SeenRequest,
  by: string,
) => Response | Promise<Response> | undefined;

/**
 * An in-memory Lease behind a FakeApi: GET, POST (create; 409 when it
 * exists) and PUT (409 when the resourceVersion is not the current one).
 */
class LeaseServer {
  readonly api: FakeApi;
  lease: Lease | undefined;
  readonly handled: Handled[] = [];
  fault: Fault | undefined;
  #version = 0;

  constructor() {
    this.api = new FakeApi((request) => this.#handle(request));
  }

  /** Stores `spec` as the lease (as if another process wrote it). */
  seed(spec: LeaseSpec): void {
    this.lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: "dc",
        namespace: "default",
        resourceVersion: this.#nextVersion(),
      },
      spec,
    };
  }

  /** Changes the lease's resourceVersion only (e.g. a label edit). */
  touch(): void {
    if (this.lease?.metadata === undefined) return;
    this.lease.metadata.resourceVersion = this.#nextVersion();
  }

  /** Requests handled for `by`. */
  of(by: string): Handled[] {
    return this.handled.filter((h) => h.by === by);
  }

  /** Successful writes (POST and PUT) by `by`. */
  writes(by: string): Handled[] {
    return this.of(by).filter((h) => h.method !== "GET" && h.status < 300);
  }

  #nextVersion(): string {
    this.#version++;
    return String(this.#version);
  }

  async #handle(request: SeenRequest): Promise<Response> {
    const by = request.headers.get("user-agent") ?? "";
    const faulty = this.fault?.(request, by);
    const response = faulty === undefined ? this.#store(request) : await faulty;
    const body = request.body === ""
      ? undefined
      : JSON.parse(request.body) as Lease;
    this.handled.push({
      by,
      method: request.method,
      at: performance.now(),
      status: response.status,
      ...(body?.spec === undefined ? {} : { spec: body.spec }),
    });
    return response;
  }

  #store(request: SeenRequest): Response {
    const path = request.url.pathname;
    if (request.method === "GET" && path === LEASE_PATH) {
      return this.lease === undefined
        ? json(status(404, "NotFound", 'leases "dc" not found'), 404)
        : json(this.lease);
    }
    if (request.method === "POST" && path === COLLECTION_PATH) {
      if (this.lease !== undefined) {
        return json(status(409, "AlreadyExists", "already exists"), 409);
      }
      const body = JSON.parse(request.body) as Lease;
      this.lease = {
        ...body,
        metadata: {
          ...body.metadata,
          namespace: "default",
          resourceVersion: this.#nextVersion(),
        },
      };
      return json(this.lease, 201);
    }
    if (request.method === "PUT" && path === LEASE_PATH) {
      if (this.lease === undefined) {
        return json(status(404, "NotFound", "not found"), 404);
      }
      const body = JSON.parse(request.body) as Lease;
      if (
        body.metadata?.resourceVersion !== this.lease.metadata?.resourceVersion
      ) {
        return json(
          status(409, "Conflict", "the object has been modified"),
          409,
        );
      }
      this.lease = {
        ...body,
        metadata: { ...body.metadata, resourceVersion: this.#nextVersion() },
      };
      return json(this.lease);
    }
    return json(status(404, "NotFound", "no such path"), 404);
  }
}

/** An elector with counters of its callbacks and its log records. */
interface Replica {
  id: string;
  elector: LeaderElector;
  started: () => number;
  stopped: () => number;
  logs: Record<string, unknown>[];
}

interface Harness {
  server: LeaseServer;
  /** Builds an elector with identity `id` (also its user agent); not started. */
  replica: (id: string, options?: Partial<LeaderElectorOptions>) => Replica;
}

/** Runs `fn` against a lease server; stops every elector and cleans up. */
async function withLease(fn: (h: Harness) => Promise<void>): Promise<void> {
  const server = new LeaseServer();
  const clients: KubeClient[] = [];
  const electors: LeaderElector[] = [];
  try {
    await fn({
      server,
      replica: (id, options = {}) => {
        const client = new KubeClient(connection(server.api.url), {
          userAgent: id,
        });
        clients.push(client);
        const logs = logCollector();
        let started = 0;
        let stopped = 0;
        const elector = new LeaderElector({
          client,
          leaseUrl: `${server.api.url}${LEASE_PATH}`,
          identity: id,
          log: createLogger({ level: "debug", write: logs.write }),
          ...FAST,
          onStartedLeading: () => started++,
          onStoppedLeading: () => stopped++,
          ...options,
        });
        electors.push(elector);
        return {
          id,
          elector,
          started: () => started,
          stopped: () => stopped,
          logs: logs.records,
        };
      },
    });
  } finally {
    server.fault = undefined;
    await Promise.all(electors.map((e) => e.stop()));
    for (const client of clients) client.close();
    await server.api.close();
  }
}

function unavailable(): Response {
  return json(status(503, "ServiceUnavailable", "partitioned"), 503);
}

function messages(replica: Replica, msg: string): Record<string, unknown>[] {
  return replica.logs.filter((r) => r.msg === msg);
}

Deno.test("LeaderElector creates a missing lease, leads, renews over the resourceVersion and releases on stop", async () => {
  await withLease(async (h) => {
    const a = h.replica("a");
    assert.equal(a.elector.isLeader, false);
    a.elector.start();
    await waitUntil("a leads", () => a.elector.isLeader);
    assert.equal(a.started(), 1);

    const [get, create] = h.server.of("a");
    assert.equal(get?.method, "GET");
    assert.equal(get?.status, 404);
    assert.equal(create?.method, "POST");
    assert.equal(create?.status, 201);
    const post = h.server.api.requests.find((r) => r.method === "POST");
    assert.equal(post?.url.pathname, COLLECTION_PATH);
    const body = JSON.parse(post?.body ?? "") as Lease;
    assert.equal(body.apiVersion, "coordination.k8s.io/v1");
    assert.equal(body.kind, "Lease");
    assert.equal(body.metadata?.name, "dc");
    assert.equal(body.spec?.holderIdentity, "a");
    assert.equal(body.spec?.leaseDurationSeconds, 1, "600 ms rounds up");
    assert.equal(body.spec?.leaseTransitions, 0);
    assert.match(body.spec?.acquireTime ?? "", MICRO_TIME);
    assert.equal(body.spec?.renewTime, body.spec?.acquireTime);

    await waitUntil("three renewals", () => h.server.writes("a").length >= 4);
    const puts = h.server.api.requests.filter((r) => r.method === "PUT");
    for (const [i, put] of puts.slice(0, 3).entries()) {
      const renewal = JSON.parse(put.body) as Lease;
      // Each renewal is written over the version the previous write made.
      assert.equal(renewal.metadata?.resourceVersion, String(i + 1));
      assert.equal(renewal.spec?.holderIdentity, "a");
      assert.equal(renewal.spec?.acquireTime, body.spec?.acquireTime);
      assert.equal(renewal.spec?.leaseTransitions, 0);
      assert.match(renewal.spec?.renewTime ?? "", MICRO_TIME);
      assert.ok(
        (renewal.spec?.renewTime ?? "") >= (body.spec?.acquireTime ?? ""),
      );
    }
    assert.ok(a.elector.isLeader);
    assert.equal(messages(a, "became leader").length, 1);
    assert.equal(messages(a, "became leader")[0]?.level, "info");

    await a.elector.stop();
    assert.equal(a.elector.isLeader, false);
    assert.equal(a.stopped(), 0, "stop() does not call onStoppedLeading");
    const release = h.server.of("a").at(-1);
    assert.equal(release?.method, "PUT");
    assert.equal(release?.status, 200);
    assert.equal(release?.spec?.holderIdentity, "", "the field is kept, empty");
    assert.equal(release?.spec?.leaseDurationSeconds, 1);
    assert.equal(release?.spec?.leaseTransitions, 0);
    assert.match(release?.spec?.renewTime ?? "", MICRO_TIME);
    assert.equal(h.server.lease?.spec?.holderIdentity, "");
    const requests = h.server.handled.length;
    await delay(150); // three retry periods
    assert.equal(h.server.handled.length, requests, "nothing after stop()");
  });
});

Deno.test("LeaderElector: a second replica waits while the first renews and takes over as soon as the first releases", async () => {
  await withLease(async (h) => {
    const a = h.replica("a");
    a.elector.start();
    await waitUntil("a leads", () => a.elector.isLeader);
    const b = h.replica("b");
    b.elector.start();
    await waitUntil(
      "b polls while a renews",
      () => h.server.of("b").length >= 5 && h.server.writes("a").length >= 5,
    );
    assert.equal(b.elector.isLeader, false);
    assert.equal(b.started(), 0);
    assert.deepEqual(h.server.writes("b"), [], "b never writes");
    assert.equal(h.server.lease?.spec?.holderIdentity, "a");
    const seen = messages(b, "leader is another replica");
    assert.equal(seen.length, 1, "logged once, not per poll");
    assert.equal(seen[0]?.holder, "a");
    assert.equal(seen[0]?.level, "info");

    await a.elector.stop();
    await waitUntil("b leads", () => b.elector.isLeader, 3_000);
    assert.equal(a.elector.isLeader, false);
    const release = h.server.handled.findLastIndex((r) => r.by === "a");
    const takeover = h.server.handled.findIndex((r) =>
      r.by === "b" && r.method === "PUT" && r.status === 200
    );
    assert.equal(h.server.handled[release]?.spec?.holderIdentity, "");
    assert.ok(release < takeover, "a released before b took over");
    // b took the lease on its first read after the release, not after
    // waiting for the lease to expire (which takes a second of polls).
    const after = h.server.handled.slice(release + 1).filter((r) =>
      r.by === "b"
    );
    assert.equal(after[0]?.method, "GET");
    assert.equal(after[1]?.method, "PUT");
    assert.equal(after[1]?.status, 200);
    assert.equal(h.server.lease?.spec?.holderIdentity, "b");
    assert.equal(h.server.lease?.spec?.leaseTransitions, 1);
    assert.equal(b.started(), 1);
  });
});

Deno.test("LeaderElector takes over a lease whose holder stopped renewing, after its duration measured locally", async () => {
  await withLease(async (h) => {
    const a = h.replica("a");
    a.elector.start();
    await waitUntil("a leads", () => a.elector.isLeader);
    const b = h.replica("b");
    b.elector.start();
    await waitUntil("b polls", () => h.server.of("b").length >= 3);

    // a's requests fail from now on: it cannot renew (nor release).
    h.server.fault = (_request, by) => by === "a" ? unavailable() : undefined;
    const lastRenewal = h.server.writes("a").at(-1)?.at ?? 0;
    await waitUntil("a gives up", () => a.stopped() === 1, 3_000);
    assert.equal(a.elector.isLeader, false);
    await waitUntil("b leads", () => b.elector.isLeader, 5_000);
    const takeover = h.server.writes("b")[0];
    assert.equal(takeover?.spec?.leaseTransitions, 1);
    assert.equal(takeover?.spec?.holderIdentity, "b");
    // b saw a's last renewal after it was written, and waited the lease's
    // duration (1 s) from then: a lower bound, which a busy machine only
    // makes larger.
    assert.ok(
      (takeover?.at ?? 0) - lastRenewal >= 950,
      `took over after ${(takeover?.at ?? 0) - lastRenewal} ms`,
    );
    assert.equal(a.elector.isLeader, false);

    // Once a reaches the server again it sees b and stays a follower.
    h.server.fault = undefined;
    const seen = h.server.of("a").length;
    await waitUntil("a polls again", () => h.server.of("a").length >= seen + 3);
    assert.equal(a.elector.isLeader, false);
    assert.equal(a.started(), 1);
    assert.ok(
      messages(a, "leader is another replica").some((r) => r.holder === "b"),
    );
    assert.equal(h.server.lease?.spec?.holderIdentity, "b");
  });
});

Deno.test("LeaderElector: a lease whose renewTime is far in the future (skewed clock) still expires by local observation", async () => {
  await withLease(async (h) => {
    h.server.seed({
      holderIdentity: "ghost",
      leaseDurationSeconds: 1,
      acquireTime: "2100-01-01T00:00:00.000000Z",
      renewTime: "2100-01-01T00:00:00.000000Z",
      leaseTransitions: 4,
    });
    const b = h.replica("b");
    b.elector.start();
    await waitUntil("b leads", () => b.elector.isLeader, 5_000);
    const firstRead = h.server.of("b")[0]?.at ?? 0;
    const takeover = h.server.writes("b")[0];
    assert.ok(
      (takeover?.at ?? 0) - firstRead >= 950,
      `took over after ${(takeover?.at ?? 0) - firstRead} ms`,
    );
    assert.equal(h.server.lease?.spec?.holderIdentity, "b");
    assert.equal(h.server.lease?.spec?.leaseTransitions, 5);
    assert.ok((h.server.lease?.spec?.acquireTime ?? "") < "2100");
  });
});

Deno.test("LeaderElector does not take a lease whose renewTime is long past while the lease keeps changing", async () => {
  await withLease(async (h) => {
    h.server.seed({
      holderIdentity: "ghost",
      leaseDurationSeconds: 1,
      acquireTime: "2000-01-01T00:00:00.000000Z",
      renewTime: "2000-01-01T00:00:00.000000Z",
      leaseTransitions: 0,
    });
    // The holder keeps the lease alive; its clock says 2000.
    const renewer = setInterval(() => h.server.touch(), 100);
    try {
      const b = h.replica("b");
      b.elector.start();
      await waitUntil("b polls", () => h.server.of("b").length >= 1);
      const firstRead = h.server.of("b")[0]?.at ?? 0;
      await waitUntil(
        "b polls for longer than the lease duration",
        () => (h.server.of("b").at(-1)?.at ?? 0) - firstRead > 1_500,
      );
      assert.equal(b.elector.isLeader, false);
      assert.deepEqual(h.server.writes("b"), []);
      clearInterval(renewer);
      await waitUntil("b leads", () => b.elector.isLeader, 5_000);
      assert.equal(h.server.lease?.spec?.leaseTransitions, 1);
    } finally {
      clearInterval(renewer);
    }
  });
});

Deno.test("LeaderElector: racing replicas never both report isLeader, through handovers", async () => {
  await withLease(async (h) => {
    const replicas = ["a", "b", "c"].map((id) => h.replica(id));
    let samples = 0;
    let maxLeaders = 0;
    const sampler = setInterval(() => {
      samples++;
      const leaders = replicas.filter((r) => r.elector.isLeader).length;
      maxLeaders = Math.max(maxLeaders, leaders);
    }, 1);
    /** Waits for a replica other than `previous` to lead, and returns it. */
    async function leaderOtherThan(
      previous: Replica | undefined,
    ): Promise<Replica> {
      let found: Replica | undefined;
      await waitUntil("a new leader", () => {
        found = replicas.find((r) => r !== previous && r.elector.isLeader);
        return found !== undefined;
      }, 5_000);
      assert.ok(found !== undefined);
      return found;
    }
    try {
      for (const replica of replicas) replica.elector.start();
      let leader = await leaderOtherThan(undefined);
      for (let round = 0; round < 3; round++) {
        // Cut the leader off: it must stop leading before anyone takes over.
        const cut = leader.id;
        h.server.fault = (_request, by) =>
          by === cut ? unavailable() : undefined;
        leader = await leaderOtherThan(leader);
        h.server.fault = undefined;
      }
      assert.ok(samples > 100, `only ${samples} samples`);
      assert.equal(maxLeaders, 1, "two replicas led at the same time");
      const creates = h.server.handled.filter((r) =>
        r.method === "POST" && r.status === 201
      );
      assert.equal(creates.length, 1);
      for (const replica of replicas) {
        const leading = replica.started() - replica.stopped();
        assert.ok(leading === 0 || leading === 1);
        assert.equal(leading === 1, replica.elector.isLeader);
      }
      assert.ok((h.server.lease?.spec?.leaseTransitions ?? 0) >= 3);
    } finally {
      clearInterval(sampler);
    }
  });
});

Deno.test("LeaderElector: a 409 on its PUT does not make it leader", async () => {
  await withLease(async (h) => {
    h.server.seed({ holderIdentity: "", leaseDurationSeconds: 1 });
    h.server.fault = (request) =>
      request.method === "PUT"
        ? json(status(409, "Conflict", "the object has been modified"), 409)
        : undefined;
    const b = h.replica("b");
    b.elector.start();
    await waitUntil(
      "three refused takeovers",
      () => h.server.of("b").filter((r) => r.method === "PUT").length >= 3,
    );
    assert.equal(b.elector.isLeader, false);
    assert.equal(b.started(), 0);
    assert.equal(h.server.lease?.spec?.holderIdentity, "");
    h.server.fault = undefined;
    await waitUntil("b leads", () => b.elector.isLeader);
    assert.equal(b.started(), 1);
    assert.equal(h.server.lease?.spec?.holderIdentity, "b");
    assert.equal(h.server.lease?.spec?.leaseTransitions, 1);
  });
});

Deno.test("LeaderElector: renewals failing past the deadline stop leadership once, and it leads again when the server recovers", async () => {
  await withLease(async (h) => {
    // Renewals every 150 ms against a 400 ms deadline: the last one has
    // ~100 ms left, so it gets the server's answer even on a busy machine.
    const a = h.replica("a", { retryPeriodMs: 150 });
    a.elector.start();
    await waitUntil("a leads", () => a.elector.isLeader);
    const acquireTime = h.server.lease?.spec?.acquireTime;
    h.server.fault = () =>
      json(status(500, "InternalError", "etcd is sad"), 500);
    await waitUntil("a gives up", () => a.stopped() === 1, 3_000);
    assert.equal(a.elector.isLeader, false);
    const failed = messages(
      a,
      "cannot renew the lease within the renew deadline",
    );
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.level, "error");
    assert.match(JSON.stringify(failed[0]?.error), /etcd is sad/);
    const lost = messages(a, "lost leadership");
    assert.equal(lost.length, 1);
    assert.equal(lost[0]?.level, "warn");
    assert.equal(lost[0]?.reason, "renew deadline exceeded");

    // It keeps trying to acquire, without losing leadership again.
    const seen = h.server.of("a").length;
    await waitUntil("more attempts", () => h.server.of("a").length >= seen + 3);
    assert.equal(a.stopped(), 1);
    assert.equal(a.started(), 1);
    assert.equal(a.elector.isLeader, false);

    h.server.fault = undefined;
    await waitUntil("a leads again", () => a.elector.isLeader);
    assert.equal(a.started(), 2);
    assert.equal(a.stopped(), 1);
    assert.equal(messages(a, "became leader").length, 2);
    // The holder did not change: no transition, same acquireTime.
    assert.equal(h.server.lease?.spec?.holderIdentity, "a");
    assert.equal(h.server.lease?.spec?.leaseTransitions, 0);
    assert.equal(h.server.lease?.spec?.acquireTime, acquireTime);
  });
});

Deno.test("LeaderElector: a renewal that hangs times out before the renew deadline", async () => {
  await withLease(async (h) => {
    // Slower than FAST, so that a busy machine still fits a retry (each
    // request may take half the renew deadline) before the deadline.
    const a = h.replica("a", {
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 100,
    });
    a.elector.start();
    await waitUntil("a leads", () => a.elector.isLeader);
    const hangs: Promise<void>[] = [];
    let answered = 0;
    h.server.fault = (request) => {
      if (request.method !== "PUT") return undefined;
      const hang = delay(5_000).then(() => {
        answered++;
      });
      hangs.push(hang);
      return hang.then(() => json(status(500, "InternalError", "late"), 500));
    };
    try {
      const before = h.server.api.requests.length;
      await waitUntil("a gives up", () => a.stopped() === 1, 4_500);
      assert.equal(answered, 0, "lost leadership while its requests hung");
      const puts = h.server.api.requests.slice(before).filter((r) =>
        r.method === "PUT"
      );
      assert.ok(puts.length >= 2, "a timed-out renewal is retried");
      assert.ok(
        a.logs.some((r) =>
          r.msg === "cannot renew the lease" &&
          /no answer within \d+ ms/.test(JSON.stringify(r.error))
        ),
      );
    } finally {
      // Let the hung handlers answer before the server shuts down.
      h.server.fault = undefined;
      await Promise.all(hangs);
    }
  });
});

Deno.test("LeaderElector gives up leadership at once when it sees another holder", async () => {
  await withLease(async (h) => {
    const a = h.replica("a");
    a.elector.start();
    await waitUntil("a leads", () => a.elector.isLeader);
    const spec = h.server.lease?.spec ?? {};
    h.server.seed({
      ...spec,
      holderIdentity: "intruder",
      leaseDurationSeconds: 30,
    });
    await waitUntil("a gives up", () => a.stopped() === 1);
    assert.equal(a.elector.isLeader, false);
    const lost = messages(a, "lost leadership");
    assert.equal(lost[0]?.reason, "lease taken");
    assert.equal(lost[0]?.holder, "intruder");
    assert.equal(
      messages(a, "cannot renew the lease within the renew deadline").length,
      0,
    );
    assert.equal(h.server.lease?.spec?.holderIdentity, "intruder");
  });
});

Deno.test("LeaderElector.stop() when not leader makes no write", async () => {
  await withLease(async (h) => {
    h.server.seed({
      holderIdentity: "ghost",
      leaseDurationSeconds: 30,
      renewTime: microTime(new Date()),
    });
    const b = h.replica("b");
    b.elector.start();
    await waitUntil("b polls", () => h.server.of("b").length >= 3);
    await b.elector.stop();
    assert.ok(h.server.of("b").every((r) => r.method === "GET"));
    assert.equal(h.server.lease?.spec?.holderIdentity, "ghost");
    assert.equal(b.started(), 0);
    assert.equal(b.stopped(), 0);
    assert.equal(messages(b, "leader is another replica").length, 1);

    // stop() before start(): nothing at all, and start() afterwards neither.
    const c = h.replica("c");
    await c.elector.stop();
    c.elector.start();
    await c.elector.stop();
    assert.deepEqual(h.server.of("c"), []);
  });
});

Deno.test("LeaderElector rejects inconsistent durations, an empty identity and a lease URL without a name", () => {
  const client = new KubeClient(connection("http://127.0.0.1:1"));
  try {
    const base: LeaderElectorOptions = {
      client,
      leaseUrl: `http://127.0.0.1:1${LEASE_PATH}`,
      identity: "a",
      log: createLogger({ write: () => {} }),
      onStartedLeading: () => {},
      onStoppedLeading: () => {},
    };
    assert.throws(
      () => new LeaderElector({ ...base, renewDeadlineMs: 20_000 }),
      RangeError,
    );
    assert.throws(
      () => new LeaderElector({ ...base, retryPeriodMs: 10_000 }),
      RangeError,
    );
    assert.throws(
      () => new LeaderElector({ ...base, retryPeriodMs: 0 }),
      RangeError,
    );
    assert.throws(
      () => new LeaderElector({ ...base, identity: "" }),
      TypeError,
    );
    assert.throws(
      () =>
        new LeaderElector({ ...base, leaseUrl: `http://x${COLLECTION_PATH}/` }),
      TypeError,
    );
    // The defaults are consistent.
    assert.equal(new LeaderElector(base).isLeader, false);
  } finally {
    client.close();
  }
});
