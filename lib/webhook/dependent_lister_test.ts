/**
 * What the front-proxy source adds to `KubeClient` (whose paging, errors and
 * aborts `lib/kcp/kube_client_test.ts` tests): the URLs it builds, pages as
 * item arrays of the configured size, and the live object's uid.
 */
import assert from "node:assert/strict";
import type { DependentQuery } from "./deletion_validator.ts";
import {
  collectionUrl,
  FrontProxyDependentSource,
  type FrontProxyDependentSourceOptions,
  objectUrl,
} from "./dependent_lister.ts";
import {
  connection,
  FakeApi,
  type FakeHandler,
  json,
  status,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";
import { KubeApiError, KubeClient } from "../kcp/mod.ts";

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

Deno.test("FrontProxyDependentSource.pages() yields each page's items from the collection URL, with the configured page size", async () => {
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
          ["GET", `${VMS_PATH}/namespaces/default/virtualmachines`, "2"],
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
