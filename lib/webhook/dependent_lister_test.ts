/**
 * What the front-proxy source adds to `KubeClient` (whose paging, errors,
 * aborts and byte bounds `lib/kcp/kube_client_test.ts` tests): the URLs it
 * builds, pages as item arrays of the configured size, smaller pages when
 * one is over the byte cap, the shared byte budget, and the live object's
 * uid.
 */
import assert from "node:assert/strict";
import {
  DeletionValidator,
  type DependentQuery,
} from "./deletion_validator.ts";
import {
  boundIdentitiesOf,
  collectionUrl,
  DEFAULT_MAX_PAGE_BYTES,
  FrontProxyDependentSource,
  type FrontProxyDependentSourceOptions,
  grownLimit,
  objectUrl,
} from "./dependent_lister.ts";
import { RuleRegistry } from "./rule_registry.ts";
import {
  connection,
  dependency,
  FakeApi,
  type FakeHandler,
  json,
  type SeenRequest,
  status,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
  waitUntil,
} from "../../testing/fakes.ts";
import { KubeApiError, KubeClient, RESPONSE_TOO_LARGE } from "../kcp/mod.ts";
import { Semaphore } from "../runtime/mod.ts";

const BASE = "https://kcp.example:6443";
const VMS_PATH = "/clusters/consumer1/apis/compute.example.com/v1alpha1";
const VPC_A_PATH =
  "/clusters/consumer1/apis/network.example.com/v1alpha1/namespaces/default/vpcs/vpc-a";
const VPC_A = {
  cluster: "consumer1",
  namespace: "default",
  resource: { ...VPCS },
  name: "vpc-a",
};

/** A query for VirtualMachines in `consumer1`, in `namespace` or all namespaces. */
function vmQuery(namespace?: string): DependentQuery {
  return {
    cluster: "consumer1",
    dependent: { ...VIRTUAL_MACHINES },
    ...(namespace === undefined ? {} : { namespace }),
  };
}

/** A VirtualMachine named `name` in namespace `default`. */
function vm(name: string): Record<string, unknown> {
  return { metadata: { name, namespace: "default" } };
}

/**
 * Runs `fn` with a fake front-proxy and a source below its URL, and cleans
 * both up.
 */
async function withSource(
  handler: FakeHandler,
  fn: (api: FakeApi, source: FrontProxyDependentSource) => Promise<void>,
  options: FrontProxyDependentSourceOptions = {},
): Promise<void> {
  const api = new FakeApi(handler);
  const client = new KubeClient(connection(api.url));
  try {
    await fn(api, new FrontProxyDependentSource(client, api.url, options));
  } finally {
    client.close();
    await api.close();
  }
}

/** Every page the source yields for `query`. */
async function allPages(
  source: FrontProxyDependentSource,
  query: DependentQuery,
): Promise<(readonly unknown[])[]> {
  const pages: (readonly unknown[])[] = [];
  const signal = new AbortController().signal;
  for await (const page of source.pages(query, signal)) pages.push(page);
  return pages;
}

/** The KubeApiError `promise` rejects with. */
async function apiError(promise: Promise<unknown>): Promise<KubeApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof KubeApiError, String(error));
    return error;
  }
  assert.fail("expected a rejection");
}

// ---------------------------------------------------------------------------
// URLs

Deno.test("collectionUrl() builds namespaced, all-namespaces and core-group collection URLs below the logical cluster", () => {
  assert.equal(
    collectionUrl(BASE, vmQuery("default")),
    `${BASE}${VMS_PATH}/namespaces/default/virtualmachines`,
  );
  assert.equal(
    collectionUrl(BASE, vmQuery()),
    `${BASE}${VMS_PATH}/virtualmachines`,
  );
  const configMaps = { group: "", version: "v1", resource: "configmaps" };
  assert.equal(
    collectionUrl(BASE, {
      cluster: "1abc2def",
      namespace: "kube-system",
      dependent: configMaps,
    }),
    `${BASE}/clusters/1abc2def/api/v1/namespaces/kube-system/configmaps`,
  );
  assert.equal(
    collectionUrl(BASE, { cluster: "1abc2def", dependent: configMaps }),
    `${BASE}/clusters/1abc2def/api/v1/configmaps`,
  );
  assert.equal(
    collectionUrl("https://kcp.example/proxy//", vmQuery("default")),
    `https://kcp.example/proxy${VMS_PATH}/namespaces/default/virtualmachines`,
  );
});

Deno.test("collectionUrl() and objectUrl() encode each part as one path segment and refuse empty, . and .. parts", () => {
  assert.equal(
    collectionUrl(BASE, vmQuery("a/b c")),
    `${BASE}${VMS_PATH}/namespaces/a%2Fb%20c/virtualmachines`,
  );
  assert.equal(objectUrl(BASE, VPC_A), `${BASE}${VPC_A_PATH}`);
  assert.equal(
    objectUrl(BASE, { ...VPC_A, name: "x/../y?z" }),
    `${BASE}${VPC_A_PATH.replace(/vpc-a$/, "x%2F..%2Fy%3Fz")}`,
  );
  for (const part of ["", ".", ".."]) {
    assert.throws(() => collectionUrl(BASE, vmQuery(part)), TypeError);
    assert.throws(
      () =>
        collectionUrl(BASE, {
          cluster: "consumer1",
          dependent: { ...VIRTUAL_MACHINES, resource: part },
        }),
      TypeError,
    );
    assert.throws(() => objectUrl(BASE, { ...VPC_A, name: part }), TypeError);
  }
});

// ---------------------------------------------------------------------------
// pages()

Deno.test("FrontProxyDependentSource.pages() yields each page's items from the collection URL, the first page of the configured size and a next one ten times larger while pages are small", async () => {
  await withSource(
    (request) =>
      request.url.searchParams.get("continue") === null
        ? json({ metadata: { continue: "next" }, items: [vm("a"), vm("b")] })
        : json({ metadata: {}, items: [vm("c")] }),
    async (api, source) => {
      assert.deepEqual(await allPages(source, vmQuery("default")), [
        [vm("a"), vm("b")],
        [vm("c")],
      ]);
      assert.deepEqual(
        api.requests.map((r) => [
          r.method,
          r.url.pathname,
          r.url.searchParams.get("limit"),
        ]),
        [
          ["GET", `${VMS_PATH}/namespaces/default/virtualmachines`, "2"],
          ["GET", `${VMS_PATH}/namespaces/default/virtualmachines`, "20"],
        ],
      );
    },
    { pageSize: 2 },
  );
});

Deno.test("FrontProxyDependentSource.pages() defaults the page size to 10000 and throws the client's error, notFound for a 404", async () => {
  await withSource(
    () => json(status(404, "NotFound", "no such resource"), 404),
    async (api, source) => {
      const error = await apiError(allPages(source, vmQuery()));
      assert.equal(error.notFound, true);
      assert.equal(
        api.requests[0]?.url.pathname,
        `${VMS_PATH}/virtualmachines`,
      );
      assert.equal(api.requests[0]?.url.searchParams.get("limit"), "10000");
    },
  );
});

Deno.test("FrontProxyDependentSource passes the caller's signal to the client: an aborted one sends nothing", async () => {
  await withSource(
    () => json({ metadata: {}, items: [] }),
    async (api, source) => {
      const aborted = AbortSignal.abort();
      const pages = source.pages(vmQuery(), aborted)[Symbol.asyncIterator]();
      assert.equal((await apiError(pages.next())).status, 0);
      assert.equal((await apiError(source.liveUid(VPC_A, aborted))).status, 0);
      assert.equal(api.requests.length, 0);
    },
  );
});

// ---------------------------------------------------------------------------
// pages() under a byte cap and a byte budget

/** A VirtualMachine named `name` padded to about `bytes` bytes of JSON. */
function paddedVm(name: string, bytes: number): Record<string, unknown> {
  return {
    metadata: { name, namespace: "default" },
    spec: { vpcRef: { name: "vpc-b" }, notes: "x".repeat(bytes) },
  };
}

/**
 * A fake collection of `items`: a page starts at the index its `continue`
 * token names (`i<n>`) and holds `limit` items, with a token for the rest.
 */
function collection(items: readonly unknown[]): FakeHandler {
  return (request) => {
    const token = request.url.searchParams.get("continue");
    const start = token === null ? 0 : Number(token.slice(1));
    const end = start + Number(request.url.searchParams.get("limit"));
    return json({
      metadata: end < items.length ? { continue: `i${end}` } : {},
      items: items.slice(start, end),
    });
  };
}

/** `[limit, continue]` of each request, in order. */
function pageRequests(requests: readonly SeenRequest[]): [string, string][] {
  return requests.map((r) => [
    r.url.searchParams.get("limit") ?? "",
    r.url.searchParams.get("continue") ?? "",
  ]);
}

/** The names of `items`. */
function names(items: readonly unknown[]): string[] {
  return items.map((item) =>
    String((item as { metadata: { name: string } }).metadata.name)
  );
}

Deno.test("grownLimit() fills three quarters of the cap at the last page's size per object, at most ten times larger, never smaller", () => {
  // 100 objects took 1 000 bytes: 10 each; 3/4 of 40 000 holds 3 000.
  assert.equal(grownLimit(100, 1_000, 40_000), 1_000);
  assert.equal(grownLimit(100, 10_000, 40_000), 300);
  // A page over three quarters of the cap keeps its size.
  assert.equal(grownLimit(100, 35_000, 40_000), 100);
  assert.equal(grownLimit(1, 0, 40_000), 10);
});

Deno.test("FrontProxyDependentSource.pages() grows pages of small objects up to what fills three quarters of the cap, asking for no page twice", async () => {
  // 300 VMs of about 2.4 KB estimated; a page may take 120 000 bytes.
  const items = Array.from({ length: 300 }, (_, i) => paddedVm(`vm-${i}`, 100));
  await withSource(collection(items), async (api, source) => {
    const pages = await allPages(source, vmQuery());
    assert.deepEqual(names(pages.flat()), items.map((_, i) => `vm-${i}`));
    const requests = pageRequests(api.requests);
    assert.deepEqual(requests.slice(0, 2), [["5", ""], ["50", "i5"]]);
    // Then grown to what fills three quarters of the cap, never too large:
    // no page is asked for twice.
    const third = Number(requests[2]![0]);
    assert.ok(third > 50, `${requests}`);
    const tokens = requests.map(([, token]) => token);
    assert.equal(new Set(tokens).size, tokens.length, `${requests}`);
    assert.ok(requests.length <= 2 + Math.ceil(245 / third), `${requests}`);
  }, { pageSize: 5, maxPageBytes: 120_000 });
});

Deno.test("FrontProxyDependentSource.pages() asks for a page over maxPageBytes again from the same continue token with a tenth of the objects, and keeps the smaller size (no growth after)", async () => {
  // 30 VMs estimated at about 2.4 KB in memory; vm-25 at about 30 KB. A
  // page may take 32 000 bytes: 100 objects are too many, 10 fit until
  // the page with vm-25.
  const items = Array.from(
    { length: 30 },
    (_, i) => paddedVm(`vm-${i}`, i === 25 ? 15_000 : 1_000),
  );
  await withSource(collection(items), async (api, source) => {
    const pages = await allPages(source, vmQuery("default"));
    assert.deepEqual(
      names(pages.flat()),
      items.map((_, i) => `vm-${i}`),
      "every VM once, in order",
    );
    assert.deepEqual(pageRequests(api.requests), [
      ["100", ""],
      ["10", ""],
      ["10", "i10"],
      ["10", "i20"],
      ...Array.from(
        { length: 10 },
        (_, i) => ["1", `i${20 + i}`] as [string, string],
      ),
    ]);
  }, { pageSize: 100, maxPageBytes: 32_000 });
});

Deno.test("FrontProxyDependentSource.pages() fails with ResponseTooLarge naming the sizes tried and the cap when one object alone is over maxPageBytes", async () => {
  const items = [
    paddedVm("vm-0", 100),
    paddedVm("vm-1", 5000),
    paddedVm("vm-2", 100),
  ];
  await withSource(collection(items), async (api, source) => {
    const seen: string[] = [];
    const error = await apiError((async () => {
      for await (
        const page of source.pages(vmQuery(), new AbortController().signal)
      ) seen.push(...names(page));
    })());
    assert.deepEqual(seen, ["vm-0"]);
    assert.equal(error.reason, RESPONSE_TOO_LARGE);
    assert.equal(
      error.message,
      "a page of 1 object would take over 4000 bytes of memory, as did pages of 100 and 10: " +
        "a single object is too large for the webhook to read",
    );
    assert.ok(error.cause instanceof KubeApiError);
    assert.match(
      error.cause.message,
      /^GET http:\/\/127\.0\.0\.1:\d+\/clusters\/consumer1\/.*virtualmachines\?limit=1&continue=i1: the answer would take over 4000 bytes of memory \(estimated from its Content-Length, \d+ bytes\); stopped reading it$/,
    );
    assert.deepEqual(pageRequests(api.requests), [
      ["100", ""],
      ["10", ""],
      ["1", ""],
      ["1", "i1"],
    ]);
  }, { pageSize: 100, maxPageBytes: 4000 });
});

Deno.test("FrontProxyDependentSource.pages() with a page size of 1 fails at once on an object over maxPageBytes; other errors are not retried", async () => {
  await withSource(
    collection([paddedVm("vm-0", 5000)]),
    async (api, source) => {
      const error = await apiError(allPages(source, vmQuery()));
      assert.equal(
        error.message,
        "a page of 1 object would take over 4 KiB of memory: a single object is too large for the webhook to read",
      );
      assert.equal(api.requests.length, 1);
    },
    { pageSize: 1, maxPageBytes: 4096 },
  );
  await withSource(
    () => json(status(500, "InternalError", "etcd is down"), 500),
    async (api, source) => {
      const error = await apiError(allPages(source, vmQuery()));
      assert.equal(error.status, 500);
      assert.equal(api.requests.length, 1);
    },
  );
});

Deno.test("FrontProxyDependentSource.liveUid() reads at most maxPageBytes of the object", async () => {
  await withSource(
    () =>
      json({ metadata: { name: "vpc-a", uid: "u", notes: "x".repeat(5000) } }),
    async (_api, source) => {
      const error = await apiError(
        source.liveUid(VPC_A, new AbortController().signal),
      );
      assert.equal(error.reason, RESPONSE_TOO_LARGE);
    },
    { maxPageBytes: 4096 },
  );
});

Deno.test("FrontProxyDependentSource.pages() defaults maxPageBytes to 8 MiB of memory, about 4 MiB of strings", async () => {
  assert.equal(DEFAULT_MAX_PAGE_BYTES, 8 * 1024 * 1024);
  const items = [
    paddedVm("vm-0", DEFAULT_MAX_PAGE_BYTES / 2 - 1_000),
    paddedVm("vm-1", DEFAULT_MAX_PAGE_BYTES / 2),
  ];
  await withSource(collection(items), async (_api, source) => {
    const seen: string[] = [];
    const error = await apiError((async () => {
      for await (
        const page of source.pages(vmQuery(), new AbortController().signal)
      ) seen.push(...names(page));
    })());
    assert.deepEqual(seen, ["vm-0"]);
    assert.match(
      error.message,
      /^a page of 1 object would take over 8 MiB of memory, as did pages of 10000, 1000, 100 and 10:/,
    );
  });
});

Deno.test("FrontProxyDependentSource.pages() of two lists sharing bytesInFlight: a page is not asked for while the other list holds the budget", async () => {
  const budget = new Semaphore(4000);
  await withSource(
    collection([paddedVm("vm-0", 100), paddedVm("vm-1", 100)]),
    async (api, source) => {
      const signal = new AbortController().signal;
      const first = source.pages(vmQuery("default"), signal)[
        Symbol.asyncIterator
      ]();
      const second = source.pages(vmQuery("other"), signal)[
        Symbol.asyncIterator
      ]();
      assert.deepEqual(names((await first.next()).value ?? []), ["vm-0"]);
      assert.equal(budget.used, 4000, "the first list holds its page");
      const waiting = second.next();
      await waitUntil("the second list to wait", () => budget.waiting === 1);
      assert.equal(api.requests.length, 1, "the second page is not asked for");
      // The first list moves on: its page's room goes to the second list
      // (first in line), and the first list's next page waits in turn.
      const firstNext = first.next();
      assert.deepEqual(names((await waiting).value ?? []), ["vm-0"]);
      assert.equal(
        api.requests[1]?.url.pathname,
        `${VMS_PATH}/namespaces/other/virtualmachines`,
      );
      await second.return?.(undefined);
      assert.deepEqual(names((await firstNext).value ?? []), ["vm-1"]);
      assert.equal((await first.next()).done, true);
      assert.equal(budget.used, 0);
    },
    { pageSize: 1, maxPageBytes: 4000, bytesInFlight: budget },
  );
});

Deno.test("DeletionValidator over FrontProxyDependentSource: an object over the page cap denies with 503 naming the type, the page sizes and the cap", async () => {
  const uid = "uid-vpc-a";
  await withSource(
    (request, api) =>
      request.url.pathname === VPC_A_PATH
        ? json({ metadata: { name: "vpc-a", uid } })
        : collection([
          paddedVm("vm-0", 100),
          paddedVm("vm-1", 2 * 1024 * 1024),
        ])(request, api),
    async (_api, source) => {
      const registry = new RuleRegistry();
      registry.replace([{
        cluster: "provider1",
        rule: validRule("vm-needs-vpc", VIRTUAL_MACHINES, [
          dependency(VPCS, ".spec.vpcRef.name"),
        ]),
      }]);
      const verdict = await new DeletionValidator(registry, source).validate({
        uid: "review-1",
        kind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
        resource: { ...VPCS },
        name: "vpc-a",
        namespace: "default",
        operation: "DELETE",
        oldObject: {
          metadata: {
            name: "vpc-a",
            namespace: "default",
            uid,
            annotations: { "kcp.io/cluster": "consumer1" },
          },
        },
      });
      assert.equal(verdict.outcome, "denied_error");
      assert.equal(verdict.response.status?.code, 503);
      assert.equal(
        verdict.response.status?.message,
        "cannot delete vpcs/vpc-a: cannot check whether other objects still refer to it " +
          "(listing virtualmachines.compute.example.com failed: a page of 1 object would take over 1 MiB " +
          "of memory, as did pages of 500, 50 and 5: a single object is too large for the webhook to read); " +
          "the delete is denied until they can be checked: retry later, or set the annotation " +
          "dependencies.opendefense.cloud/skip-protection=true on the object to delete it anyway",
      );
    },
    // As the webhook lists by default.
    { pageSize: 500, maxPageBytes: 1024 * 1024 },
  );
});

// ---------------------------------------------------------------------------
// liveUid()

Deno.test("FrontProxyDependentSource.liveUid() asks for the object's metadata only, at its URL, and answers its uid", async () => {
  await withSource(
    () => json({ metadata: { name: "vpc-a", uid: "uid-vpc-a" } }),
    async (api, source) => {
      const uid = await source.liveUid(VPC_A, new AbortController().signal);
      assert.equal(uid, "uid-vpc-a");
      const [seen] = api.requests;
      assert.equal(seen?.method, "GET");
      assert.equal(seen?.url.pathname, VPC_A_PATH);
      assert.equal(seen?.url.search, "");
      assert.equal(
        seen?.headers.get("accept"),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
      );
    },
  );
});

Deno.test("FrontProxyDependentSource.liveUid() answers undefined for an object without a string uid", async () => {
  for (const metadata of [{ name: "vpc-a" }, { name: "vpc-a", uid: 7 }]) {
    await withSource(
      () => json({ metadata }),
      async (_api, source) => {
        assert.equal(
          await source.liveUid(VPC_A, new AbortController().signal),
          undefined,
        );
      },
    );
  }
});

Deno.test("FrontProxyDependentSource.liveUid() answers undefined for a 404 and throws any other error", async () => {
  for (
    const [code, reason] of [
      [404, "NotFound"],
      [403, "Forbidden"],
      [500, "InternalError"],
    ] as const
  ) {
    await withSource(
      () => json(status(code, reason, "no"), code),
      async (_api, source) => {
        const read = source.liveUid(VPC_A, new AbortController().signal);
        if (code === 404) assert.equal(await read, undefined);
        else assert.equal((await apiError(read)).status, code, reason);
      },
    );
  }
});

// ---------------------------------------------------------------------------
// workspaceDeletedAt()

Deno.test("FrontProxyDependentSource.workspaceDeletedAt() reads the workspace's LogicalCluster metadata and answers its deletionTimestamp", async () => {
  const marked = "2026-11-24T22:00:00Z";
  const cases: [Record<string, unknown>, Date | undefined][] = [
    [{ name: "cluster", deletionTimestamp: marked }, new Date(marked)],
    [{ name: "cluster" }, undefined],
    [{ name: "cluster", deletionTimestamp: "" }, undefined],
    [{ name: "cluster", deletionTimestamp: "yesterday" }, undefined],
    [{ name: "cluster", deletionTimestamp: 7 }, undefined],
  ];
  for (const [metadata, expected] of cases) {
    await withSource(
      () => json({ metadata }),
      async (api, source) => {
        assert.deepEqual(
          await source.workspaceDeletedAt(
            "consumer1",
            new AbortController().signal,
          ),
          expected,
        );
        const [seen] = api.requests;
        assert.equal(
          seen?.url.pathname,
          "/clusters/consumer1/apis/core.kcp.io/v1alpha1/logicalclusters/cluster",
        );
        assert.match(
          seen?.headers.get("accept") ?? "",
          /^application\/json;as=PartialObjectMetadata;/,
        );
      },
    );
  }
});

Deno.test("FrontProxyDependentSource.workspaceDeletedAt() throws on any error, a missing LogicalCluster included", async () => {
  for (const code of [404, 403, 500]) {
    await withSource(
      () => json(status(code, "Failure", "no"), code),
      async (_api, source) => {
        const read = source.workspaceDeletedAt(
          "consumer1",
          new AbortController().signal,
        );
        assert.equal((await apiError(read)).status, code);
      },
    );
  }
});

Deno.test("boundIdentitiesOf() maps each bound group and resource to its export's identity, skipping what is malformed", () => {
  assert.deepEqual(
    boundIdentitiesOf([
      {
        status: {
          boundResources: [
            {
              group: "compute.example.com",
              resource: "virtualmachines",
              schema: { name: "v1.vms", identityHash: "real" },
            },
            { group: "x.io", resource: "things" },
            { group: "y.io", resource: "ys", schema: { identityHash: "" } },
          ],
        },
      },
      { status: { boundResources: "no" } },
      "junk",
    ]),
    new Map([["compute.example.com/virtualmachines", "real"]]),
  );
});

// ---------------------------------------------------------------------------
// liveMetadata() and ownerObject()

Deno.test("FrontProxyDependentSource.liveMetadata() answers the metadata, undefined for a 404", async () => {
  const metadata = { name: "vpc-a", uid: "u", labels: { a: "b" } };
  await withSource(() => json({ metadata }), async (api, source) => {
    const read = await source.liveMetadata(VPC_A, new AbortController().signal);
    assert.deepEqual(read, metadata);
    assert.equal(api.requests[0]?.url.pathname, VPC_A_PATH);
  });
  await withSource(
    () => json(status(404, "NotFound", "no"), 404),
    async (_api, source) => {
      assert.equal(
        await source.liveMetadata(VPC_A, new AbortController().signal),
        undefined,
      );
    },
  );
});

/** The owner the lookups below ask for: networks/net-a, from team-a. */
const NET_A = {
  cluster: "consumer1",
  namespace: "team-a",
  resource: {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "networks",
  },
  name: "net-a",
};
const NET_A_NAMESPACED =
  "/clusters/consumer1/apis/network.example.com/v1alpha1/namespaces/team-a/networks/net-a";
const NET_A_CLUSTER =
  "/clusters/consumer1/apis/network.example.com/v1alpha1/networks/net-a";
/** kcp's 404 for an object that does not exist: it names the object. */
const MISSING = {
  ...status(404, "NotFound", 'networks.network.example.com "net-a" not found'),
  details: { name: "net-a", group: "network.example.com", kind: "networks" },
};

Deno.test("FrontProxyDependentSource.ownerObject() reads in the namespace, then cluster-scoped only when the URL serves nothing", async () => {
  const cases: {
    name: string;
    namespaced: () => Response;
    cluster?: () => Response;
    want: unknown;
    paths: string[];
  }[] = [
    {
      name: "a namespaced owner",
      namespaced: () => json({ metadata: { name: "net-a" } }),
      want: { metadata: { name: "net-a" } },
      paths: [NET_A_NAMESPACED],
    },
    {
      name: "a namespaced owner that does not exist",
      namespaced: () => json(MISSING, 404),
      want: undefined,
      paths: [NET_A_NAMESPACED],
    },
    {
      // What kcp answers for a cluster-scoped type at a namespaced URL.
      name: "a cluster-scoped owner",
      namespaced: () => new Response("404 page not found\n", { status: 404 }),
      cluster: () => json({ metadata: { name: "net-a" } }),
      want: { metadata: { name: "net-a" } },
      paths: [NET_A_NAMESPACED, NET_A_CLUSTER],
    },
    {
      name: "a type the workspace does not serve",
      namespaced: () =>
        json(status(404, "NotFound", "the server could not find it"), 404),
      cluster: () =>
        json(status(404, "NotFound", "the server could not find it"), 404),
      want: undefined,
      paths: [NET_A_NAMESPACED, NET_A_CLUSTER],
    },
  ];
  for (const c of cases) {
    await withSource((request) => {
      const path = new URL(request.url).pathname;
      if (path === NET_A_NAMESPACED) return c.namespaced();
      if (path === NET_A_CLUSTER && c.cluster) return c.cluster();
      return json(status(500, "InternalError", `unexpected ${path}`), 500);
    }, async (api, source) => {
      const found = await source.ownerObject(
        NET_A,
        new AbortController().signal,
      );
      assert.deepEqual(found, c.want, c.name);
      assert.deepEqual(api.requests.map((r) => r.url.pathname), c.paths);
    });
  }
  await withSource(
    () => json(status(403, "Forbidden", "no"), 403),
    async (api, source) => {
      const error = await apiError(
        source.ownerObject(NET_A, new AbortController().signal),
      );
      assert.equal(error.status, 403);
      assert.equal(api.requests.length, 1);
    },
  );
});
