import assert from "node:assert/strict";
import {
  connection,
  FakeApi,
  json,
  status,
  waitUntil,
} from "../../testing/fakes.ts";
import { KubeClient } from "../kcp/mod.ts";
import {
  type ResolutionFailure,
  WorkspaceResolutionError,
  WorkspaceResolver,
  type WorkspaceResolverOptions,
} from "./workspace_resolver.ts";

/** The URL path of workspace `name` in logical cluster `parent`. */
function workspaceUrl(parent: string, name: string): string {
  return `/clusters/${parent}/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`;
}

/** A Workspace as kcp answers it; absent fields are left out. */
function workspace(
  name: string,
  fields: { cluster?: string; phase?: string },
): Record<string, unknown> {
  return {
    apiVersion: "tenancy.kcp.io/v1alpha1",
    kind: "Workspace",
    metadata: { name },
    spec: fields.cluster === undefined ? {} : { cluster: fields.cluster },
    status: fields.phase === undefined ? {} : { phase: fields.phase },
  };
}

/**
 * A fake kcp whose answers are a table from URL path to a Workspace (or a
 * Response builder); other paths answer 404. Tests change the table as
 * they go.
 */
class FakeKcp {
  readonly answers = new Map<string, unknown>();
  readonly api: FakeApi;
  readonly client: KubeClient;

  constructor() {
    this.api = new FakeApi((request) => {
      const answer = this.answers.get(request.url.pathname);
      if (answer === undefined) {
        return json(status(404, "NotFound", "not found"), 404);
      }
      if (typeof answer === "function") return answer();
      return json(answer);
    });
    this.client = new KubeClient(connection(this.api.url));
  }

  /** Adds workspace `name` with logical cluster `cluster` under logical cluster `parent`. */
  add(parent: string, name: string, cluster: string): void {
    this.answers.set(
      workspaceUrl(parent, name),
      workspace(name, { cluster, phase: "Ready" }),
    );
  }

  /** The URL paths requested so far, in order. */
  get paths(): string[] {
    return this.api.requests.map((r) => r.url.pathname);
  }

  /** A resolver of this fake. */
  resolver(
    options: Omit<WorkspaceResolverOptions, "client" | "base"> = {},
  ): WorkspaceResolver {
    return new WorkspaceResolver({
      client: this.client,
      base: this.api.url,
      ...options,
    });
  }

  async close(): Promise<void> {
    this.client.close();
    await this.api.close();
  }
}

/** Runs `fn` with a fake kcp holding root:org (c-org) and root:org:team (c-team). */
async function withKcp(fn: (kcp: FakeKcp) => Promise<void>): Promise<void> {
  const kcp = new FakeKcp();
  kcp.add("root", "org", "c-org");
  kcp.add("c-org", "team", "c-team");
  try {
    await fn(kcp);
  } finally {
    await kcp.close();
  }
}

/** The WorkspaceResolutionError `promise` rejects with. */
async function resolutionError(
  promise: Promise<unknown>,
): Promise<WorkspaceResolutionError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(
      error instanceof WorkspaceResolutionError,
      `expected a WorkspaceResolutionError, got ${String(error)}`,
    );
    return error;
  }
  assert.fail("expected a rejection");
}

/** A promise with its resolve function, to hold fake answers back. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => open = resolve);
  return { promise, open };
}

Deno.test("WorkspaceResolver.resolve() answers root without a request and one level with one", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver();
    assert.equal(await resolver.resolve("root"), "root");
    assert.deepEqual(kcp.paths, []);
    assert.equal(await resolver.resolve("root:org"), "c-org");
    assert.deepEqual(kcp.paths, [workspaceUrl("root", "org")]);
  });
});

Deno.test("WorkspaceResolver.resolve() walks two levels through the parent's logical cluster", async () => {
  await withKcp(async (kcp) => {
    assert.equal(await kcp.resolver().resolve("root:org:team"), "c-team");
    assert.deepEqual(kcp.paths, [
      workspaceUrl("root", "org"),
      workspaceUrl("c-org", "team"),
    ]);
    const [request] = kcp.api.requests;
    assert.equal(request?.method, "GET");
    assert.equal(request?.headers.get("authorization"), "Bearer t");
  });
});

Deno.test("WorkspaceResolver.resolve() walks four levels, parent by parent", async () => {
  await withKcp(async (kcp) => {
    kcp.add("c-team", "network", "c-network");
    kcp.add("c-network", "edge", "c-edge");
    assert.equal(
      await kcp.resolver().resolve("root:org:team:network:edge"),
      "c-edge",
    );
    assert.deepEqual(kcp.paths, [
      workspaceUrl("root", "org"),
      workspaceUrl("c-org", "team"),
      workspaceUrl("c-team", "network"),
      workspaceUrl("c-network", "edge"),
    ]);
  });
});

Deno.test("WorkspaceResolver.resolve() starts a path rooted at a logical cluster there", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver();
    assert.equal(await resolver.resolve("c-org"), "c-org");
    assert.deepEqual(kcp.paths, []);
    assert.equal(await resolver.resolve("c-org:team"), "c-team");
    assert.deepEqual(kcp.paths, [workspaceUrl("c-org", "team")]);
  });
});

Deno.test("WorkspaceResolver.resolve() rejects what is not a workspace path", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver();
    for (const path of ["", "root:", "Root:org", "root::org", "root/org"]) {
      await assert.rejects(
        resolver.resolve(path),
        (error: unknown) =>
          error instanceof TypeError &&
          error.message.includes(`current value is '${path}'`),
      );
    }
    assert.deepEqual(kcp.paths, []);
  });
});

Deno.test("WorkspaceResolver.resolve() answers cached prefixes without requests", async () => {
  await withKcp(async (kcp) => {
    kcp.add("c-org", "other", "c-other");
    const resolver = kcp.resolver();
    await resolver.resolve("root:org:team");
    assert.equal(kcp.paths.length, 2);
    assert.equal(await resolver.resolve("root:org:team"), "c-team");
    assert.equal(await resolver.resolve("root:org"), "c-org");
    assert.equal(kcp.paths.length, 2);
    // A sibling reuses the cached parent.
    assert.equal(await resolver.resolve("root:org:other"), "c-other");
    assert.deepEqual(kcp.paths.slice(2), [workspaceUrl("c-org", "other")]);
  });
});

Deno.test("WorkspaceResolver.resolve() reads again once maxAgeMs has passed", async () => {
  await withKcp(async (kcp) => {
    let now = 0;
    const resolver = kcp.resolver({ maxAgeMs: 1000, now: () => now });
    await resolver.resolve("root:org:team");
    now = 999;
    await resolver.resolve("root:org:team");
    assert.equal(kcp.paths.length, 2);
    now = 1000;
    assert.equal(await resolver.resolve("root:org:team"), "c-team");
    assert.deepEqual(kcp.paths.slice(2), [
      workspaceUrl("root", "org"),
      workspaceUrl("c-org", "team"),
    ]);
  });
});

Deno.test("WorkspaceResolver.resolve() uses a 60s cache by default", async () => {
  await withKcp(async (kcp) => {
    let now = 0;
    const resolver = kcp.resolver({ now: () => now });
    await resolver.resolve("root:org");
    now = 59_999;
    await resolver.resolve("root:org");
    assert.equal(kcp.paths.length, 1);
    now = 60_000;
    await resolver.resolve("root:org");
    assert.equal(kcp.paths.length, 2);
  });
});

Deno.test("WorkspaceResolver.resolve() caches nothing with maxAgeMs 0", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver({ maxAgeMs: 0, now: () => 0 });
    await resolver.resolve("root:org");
    await resolver.resolve("root:org");
    assert.equal(kcp.paths.length, 2);
  });
});

Deno.test("new WorkspaceResolver() rejects a negative maxAgeMs", async () => {
  await withKcp((kcp) => {
    assert.throws(() => kcp.resolver({ maxAgeMs: -1 }), RangeError);
    assert.throws(() => kcp.resolver({ maxAgeMs: NaN }), RangeError);
    return Promise.resolve();
  });
});

Deno.test("WorkspaceResolver.invalidate() drops the path and its descendants, not siblings", async () => {
  await withKcp(async (kcp) => {
    kcp.add("c-team", "network", "c-network");
    kcp.add("c-org", "other", "c-other");
    kcp.add("root", "sibling", "c-sibling");
    const resolver = kcp.resolver();
    await resolver.resolve("root:org:team:network");
    await resolver.resolve("root:org:other");
    await resolver.resolve("root:sibling");
    const before = kcp.paths.length;

    // Not a segment boundary: drops nothing.
    resolver.invalidate("root:org:te");
    await resolver.resolve("root:org:team:network");
    assert.equal(kcp.paths.length, before);

    resolver.invalidate("root:org:team");
    assert.equal(await resolver.resolve("root:org:team:network"), "c-network");
    assert.equal(await resolver.resolve("root:org:other"), "c-other");
    assert.equal(await resolver.resolve("root:sibling"), "c-sibling");
    assert.equal(await resolver.resolve("root:org"), "c-org");
    assert.deepEqual(kcp.paths.slice(before), [
      workspaceUrl("c-org", "team"),
      workspaceUrl("c-team", "network"),
    ]);
  });
});

Deno.test("WorkspaceResolver.resolve() picks up a recreated workspace after invalidate()", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver();
    assert.equal(await resolver.resolve("root:org:team"), "c-team");
    kcp.add("c-org", "team", "c-team-2");
    assert.equal(await resolver.resolve("root:org:team"), "c-team");
    resolver.invalidate("root:org:team");
    assert.equal(await resolver.resolve("root:org:team"), "c-team-2");
  });
});

Deno.test("WorkspaceResolver.resolve() drops descendants when a refreshed prefix names a new cluster", async () => {
  await withKcp(async (kcp) => {
    let now = 0;
    const resolver = kcp.resolver({ maxAgeMs: 1000, now: () => now });
    await resolver.resolve("root:org");
    now = 500;
    await resolver.resolve("root:org:team");
    // root:org is recreated; root:org:team is still fresh in the cache.
    kcp.add("root", "org", "c-org-2");
    kcp.add("c-org-2", "team", "c-team-2");
    now = 1200;
    assert.equal(await resolver.resolve("root:org"), "c-org-2");
    assert.equal(await resolver.resolve("root:org:team"), "c-team-2");
    assert.deepEqual(kcp.paths.slice(2), [
      workspaceUrl("root", "org"),
      workspaceUrl("c-org-2", "team"),
    ]);
  });
});

Deno.test("WorkspaceResolver.resolve() reads the chain again when a cached parent is gone", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver();
    await resolver.resolve("root:org");
    // root:org is deleted and recreated; its old logical cluster is gone.
    kcp.answers.set(
      workspaceUrl("c-org", "team"),
      () => json(status(403, "Forbidden", "access denied"), 403),
    );
    kcp.add("root", "org", "c-org-2");
    kcp.add("c-org-2", "team", "c-team-2");
    assert.equal(await resolver.resolve("root:org:team"), "c-team-2");
    assert.deepEqual(kcp.paths.slice(1), [
      workspaceUrl("c-org", "team"),
      workspaceUrl("root", "org"),
      workspaceUrl("c-org-2", "team"),
    ]);
    assert.equal(await resolver.resolve("root:org"), "c-org-2");
    assert.equal(kcp.paths.length, 4);
  });
});

Deno.test("WorkspaceResolver.resolve() reports NotFound under a cached parent that is still right", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver();
    await resolver.resolve("root:org");
    const error = await resolutionError(resolver.resolve("root:org:missing"));
    assert.equal(error.reason, "NotFound");
    assert.deepEqual(kcp.paths.slice(1), [
      workspaceUrl("c-org", "missing"),
      workspaceUrl("root", "org"),
    ]);
  });
});

Deno.test("WorkspaceResolver.resolve() shares requests between concurrent calls", async () => {
  await withKcp(async (kcp) => {
    kcp.add("c-org", "other", "c-other");
    const resolver = kcp.resolver();
    const answers = await Promise.all([
      resolver.resolve("root:org:team"),
      resolver.resolve("root:org:team"),
      resolver.resolve("root:org:other"),
      resolver.resolve("root:org"),
    ]);
    assert.deepEqual(answers, ["c-team", "c-team", "c-other", "c-org"]);
    assert.deepEqual(kcp.paths.toSorted(), [
      workspaceUrl("c-org", "other"),
      workspaceUrl("c-org", "team"),
      workspaceUrl("root", "org"),
    ]);
  });
});

Deno.test("WorkspaceResolver.resolve() shares a failure between concurrent calls, and does not cache it", async () => {
  await withKcp(async (kcp) => {
    const resolver = kcp.resolver();
    const [a, b] = await Promise.all([
      resolutionError(resolver.resolve("root:org:late")),
      resolutionError(resolver.resolve("root:org:late")),
    ]);
    assert.equal(a.reason, "NotFound");
    assert.equal(b, a);
    assert.equal(kcp.paths.length, 2);
    kcp.add("c-org", "late", "c-late");
    assert.equal(await resolver.resolve("root:org:late"), "c-late");
    assert.deepEqual(kcp.paths.slice(2), [workspaceUrl("c-org", "late")]);
  });
});

Deno.test("WorkspaceResolver.resolve() explains each failure", async (t) => {
  const cases: {
    name: string;
    answer: () => Response;
    reason: ResolutionFailure;
    message: string;
  }[] = [
    {
      name: "404",
      answer: () => json(status(404, "NotFound", "nope"), 404),
      reason: "NotFound",
      message:
        'workspace root:org:team not found: root:org has no workspace "team"',
    },
    {
      name: "403",
      answer: () => json(status(403, "Forbidden", "access denied"), 403),
      reason: "Forbidden",
      message:
        "cannot read workspaces in root:org: the controller needs get on tenancy.kcp.io workspaces and system:kcp:workspace:access there (apply manifests/kcp/workspace-reader in root and every parent of a provider workspace)",
    },
    {
      name: "401",
      answer: () => json(status(401, "Unauthorized", "who"), 401),
      reason: "Forbidden",
      message: "cannot read workspaces in root:org: the controller needs",
    },
    {
      name: "phase Initializing",
      answer: () =>
        json(workspace("team", { cluster: "c-team", phase: "Initializing" })),
      reason: "NotReady",
      message: "workspace root:org:team is not ready yet (phase Initializing)",
    },
    {
      name: "no spec.cluster",
      answer: () => json(workspace("team", { phase: "Scheduling" })),
      reason: "NotReady",
      message: "workspace root:org:team is not ready yet (phase Scheduling)",
    },
    {
      name: "Ready without spec.cluster",
      answer: () => json(workspace("team", { phase: "Ready" })),
      reason: "NotReady",
      message:
        "workspace root:org:team is not ready yet (phase Ready but no spec.cluster)",
    },
    {
      name: "no phase",
      answer: () => json(workspace("team", { cluster: "c-team" })),
      reason: "NotReady",
      message: "workspace root:org:team is not ready yet (phase not set)",
    },
    {
      name: "503",
      answer: () =>
        json(status(503, "ServiceUnavailable", "shard is down"), 503),
      reason: "Unavailable",
      message:
        "cannot resolve workspace root:org:team: reading it in root:org failed: GET ",
    },
    {
      name: "a spec.cluster that is not a cluster name",
      answer: () =>
        json(workspace("team", { cluster: "../evil", phase: "Ready" })),
      reason: "Unavailable",
      message:
        'cannot resolve workspace root:org:team: its spec.cluster is not a logical cluster name: current value is "../evil"',
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      await withKcp(async (kcp) => {
        kcp.answers.set(workspaceUrl("c-org", "team"), c.answer);
        const error = await resolutionError(
          kcp.resolver().resolve("root:org:team"),
        );
        assert.equal(error.reason, c.reason);
        assert.equal(error.path, "root:org:team");
        assert.ok(
          error.message.startsWith(c.message),
          `message: ${error.message}`,
        );
      });
    });
  }
});

Deno.test("WorkspaceResolver.resolve() keeps the underlying error of an Unavailable API", async () => {
  await withKcp(async (kcp) => {
    kcp.answers.set(
      workspaceUrl("root", "org"),
      () => json(status(500, "InternalError", "etcd is sad"), 500),
    );
    const error = await resolutionError(kcp.resolver().resolve("root:org"));
    assert.equal(error.reason, "Unavailable");
    assert.match(error.message, /: 500: etcd is sad$/);
    assert.ok(error.cause instanceof Error);
  });
});

Deno.test("WorkspaceResolver.resolve() reports a transport error as Unavailable", async () => {
  const gone = new FakeApi(() => json({}));
  const base = gone.url;
  await gone.close();
  const client = new KubeClient(connection(base));
  try {
    const resolver = new WorkspaceResolver({ client, base });
    const error = await resolutionError(resolver.resolve("root:org"));
    assert.equal(error.reason, "Unavailable");
    assert.equal(error.path, "root:org");
    assert.match(
      error.message,
      /^cannot resolve workspace root:org: reading it in root failed: GET http:\/\/127\.0\.0\.1:\d+\/clusters\/root\//,
    );
  } finally {
    client.close();
  }
});

Deno.test("WorkspaceResolver.resolve() names the ancestor that failed", async () => {
  await withKcp(async (kcp) => {
    const error = await resolutionError(
      kcp.resolver().resolve("root:missing:team:network"),
    );
    assert.equal(error.reason, "NotFound");
    assert.equal(error.path, "root:missing");
    assert.equal(
      error.message,
      'workspace root:missing not found: root has no workspace "missing"',
    );
    assert.deepEqual(kcp.paths, [workspaceUrl("root", "missing")]);
  });
});

Deno.test("WorkspaceResolver.resolve() stops waiting when its signal aborts, and others still get the answer", async () => {
  await withKcp(async (kcp) => {
    const held = gate();
    kcp.answers.set(workspaceUrl("root", "org"), async () => {
      await held.promise;
      return json(workspace("org", { cluster: "c-org", phase: "Ready" }));
    });
    const resolver = kcp.resolver();
    const controller = new AbortController();
    const aborted = resolver.resolve("root:org:team", {
      signal: controller.signal,
    });
    const other = resolver.resolve("root:org:team");
    await waitUntil("the request for root:org", () => kcp.paths.length === 1);
    controller.abort(new Error("shutting down"));
    await assert.rejects(aborted, { message: "shutting down" });
    held.open();
    assert.equal(await other, "c-team");
    assert.equal(kcp.paths.length, 2);
  });
});

Deno.test("WorkspaceResolver.resolve() cancels the requests nobody waits for", async () => {
  await withKcp(async (kcp) => {
    const held = gate();
    kcp.answers.set(workspaceUrl("root", "org"), async () => {
      await held.promise;
      return json(workspace("org", { cluster: "c-org", phase: "Ready" }));
    });
    const resolver = kcp.resolver();
    const controller = new AbortController();
    const aborted = resolver.resolve("root:org:team", {
      signal: controller.signal,
    });
    await waitUntil("the request for root:org", () => kcp.paths.length === 1);
    controller.abort(new Error("shutting down"));
    await assert.rejects(aborted, { message: "shutting down" });
    // A new call starts afresh instead of joining the cancelled chain.
    kcp.add("root", "org", "c-org");
    assert.equal(await resolver.resolve("root:org:team"), "c-team");
    assert.deepEqual(kcp.paths, [
      workspaceUrl("root", "org"),
      workspaceUrl("root", "org"),
      workspaceUrl("c-org", "team"),
    ]);
    held.open();
  });
});

Deno.test("WorkspaceResolver.resolve() rejects at once with an aborted signal", async () => {
  await withKcp(async (kcp) => {
    await assert.rejects(
      kcp.resolver().resolve("root:org", {
        signal: AbortSignal.abort(new Error("already")),
      }),
      { message: "already" },
    );
    assert.deepEqual(kcp.paths, []);
  });
});

Deno.test("WorkspaceResolver.invalidate() during a resolution keeps its answer out of the cache", async () => {
  await withKcp(async (kcp) => {
    const held = gate();
    kcp.answers.set(workspaceUrl("c-org", "team"), async () => {
      await held.promise;
      return json(workspace("team", { cluster: "c-team", phase: "Ready" }));
    });
    const resolver = kcp.resolver();
    const first = resolver.resolve("root:org:team");
    await waitUntil("the request for team", () => kcp.paths.length === 2);
    resolver.invalidate("root:org");
    held.open();
    assert.equal(await first, "c-team");
    kcp.add("c-org", "team", "c-team-2");
    assert.equal(await resolver.resolve("root:org:team"), "c-team-2");
    assert.deepEqual(kcp.paths.slice(2), [
      workspaceUrl("root", "org"),
      workspaceUrl("c-org", "team"),
    ]);
  });
});
