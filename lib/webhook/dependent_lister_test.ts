import assert from "node:assert/strict";
import type { AdmissionRequest } from "./admission_review.ts";
import {
  DeletionValidator,
  type DependentQuery,
} from "./deletion_validator.ts";
import {
  collectionUrl,
  FrontProxyDependentSource,
  type FrontProxyDependentSourceOptions,
} from "./dependent_lister.ts";
import {
  connection,
  dependency,
  FakeApi,
  type FakeHandler,
  json,
  status,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
  waitUntil,
} from "../../testing/mod.ts";
import { KubeApiError, KubeClient } from "../kcp/mod.ts";
import { RuleRegistry } from "./rule_registry.ts";

const VMS_PATH = "/clusters/consumer1/apis/compute.example.com/v1alpha1";

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
  return {
    metadata: { name, namespace: "default" },
    spec: { vpcRef: { name: "vpc-a" } },
  };
}

/**
 * Runs `fn` with a fake front-proxy and a lister below its URL, and cleans
 * both up.
 */
async function withLister(
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
  signal: AbortSignal = new AbortController().signal,
): Promise<(readonly unknown[])[]> {
  const pages: (readonly unknown[])[] = [];
  for await (const page of source.pages(query, signal)) pages.push(page);
  return pages;
}

/** The KubeApiError `promise` rejects with. */
async function apiError(promise: Promise<unknown>): Promise<KubeApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(
      error instanceof KubeApiError,
      `expected a KubeApiError, got ${String(error)}`,
    );
    return error;
  }
  assert.fail("expected a rejection");
}

// ---------------------------------------------------------------------------
// collectionUrl

Deno.test("collectionUrl() builds a namespaced collection URL below the logical cluster", () => {
  assert.equal(
    collectionUrl("https://kcp.example:6443", vmQuery("default")),
    "https://kcp.example:6443/clusters/consumer1/apis/compute.example.com/v1alpha1/namespaces/default/virtualmachines",
  );
});

Deno.test("collectionUrl() builds an all-namespaces collection URL without a namespace segment", () => {
  assert.equal(
    collectionUrl("https://kcp.example:6443", vmQuery()),
    "https://kcp.example:6443/clusters/consumer1/apis/compute.example.com/v1alpha1/virtualmachines",
  );
});

Deno.test("collectionUrl() uses /api/<version> for the core group", () => {
  const configMaps = {
    group: "",
    version: "v1",
    resource: "configmaps",
  };
  assert.equal(
    collectionUrl("https://kcp.example", {
      cluster: "1abc2def",
      namespace: "kube-system",
      dependent: configMaps,
    }),
    "https://kcp.example/clusters/1abc2def/api/v1/namespaces/kube-system/configmaps",
  );
  assert.equal(
    collectionUrl("https://kcp.example", {
      cluster: "1abc2def",
      dependent: configMaps,
    }),
    "https://kcp.example/clusters/1abc2def/api/v1/configmaps",
  );
});

Deno.test("collectionUrl() drops trailing slashes of the base and keeps its path", () => {
  assert.equal(
    collectionUrl("https://kcp.example/proxy//", vmQuery("default")),
    "https://kcp.example/proxy/clusters/consumer1/apis/compute.example.com/v1alpha1/namespaces/default/virtualmachines",
  );
});

Deno.test("collectionUrl() percent-encodes the namespace", () => {
  assert.equal(
    collectionUrl("https://kcp.example", vmQuery("a/b c")),
    "https://kcp.example/clusters/consumer1/apis/compute.example.com/v1alpha1/namespaces/a%2Fb%20c/virtualmachines",
  );
});

// ---------------------------------------------------------------------------
// FrontProxyDependentSource.pages()

Deno.test("FrontProxyDependentSource.pages() lists the namespaced collection with limit=<pageSize>", async () => {
  await withLister(
    () => json({ metadata: {}, items: [vm("vm-1"), vm("vm-2")] }),
    async (api, source) => {
      const pages = await allPages(source, vmQuery("default"));
      assert.deepEqual(pages, [[vm("vm-1"), vm("vm-2")]]);
      assert.equal(api.requests.length, 1);
      const [seen] = api.requests;
      assert.ok(seen);
      assert.equal(seen.method, "GET");
      assert.equal(
        seen.url.pathname,
        `${VMS_PATH}/namespaces/default/virtualmachines`,
      );
      assert.equal(seen.url.searchParams.get("limit"), "25");
      assert.equal(seen.url.searchParams.get("continue"), null);
      assert.equal(seen.headers.get("authorization"), "Bearer t");
    },
    { pageSize: 25 },
  );
});

Deno.test("FrontProxyDependentSource.pages() lists all namespaces and defaults the page size to 10000", async () => {
  await withLister(
    () => json({ metadata: {}, items: [vm("vm-1")] }),
    async (api, source) => {
      const pages = await allPages(source, vmQuery());
      assert.deepEqual(pages, [[vm("vm-1")]]);
      const [seen] = api.requests;
      assert.ok(seen);
      assert.equal(seen.url.pathname, `${VMS_PATH}/virtualmachines`);
      assert.equal(seen.url.searchParams.get("limit"), "10000");
    },
  );
});

Deno.test("FrontProxyDependentSource.pages() follows continue tokens across pages and yields every item", async () => {
  const pages: Record<string, { items: unknown[]; next?: string }> = {
    "": { items: [vm("vm-1"), vm("vm-2")], next: "token-1" },
    "token-1": { items: [vm("vm-3"), vm("vm-4")], next: "token-2" },
    "token-2": { items: [vm("vm-5")] },
  };
  await withLister(
    (request) => {
      const page = pages[request.url.searchParams.get("continue") ?? ""];
      assert.ok(page, request.url.search);
      return json({
        kind: "VirtualMachineList",
        metadata: {
          resourceVersion: "42",
          ...(page.next === undefined ? {} : { continue: page.next }),
        },
        items: page.items,
      });
    },
    async (api, source) => {
      const got = await allPages(source, vmQuery("default"));
      assert.deepEqual(got, [
        [vm("vm-1"), vm("vm-2")],
        [vm("vm-3"), vm("vm-4")],
        [vm("vm-5")],
      ]);
      assert.deepEqual(
        got.flat().map((item) =>
          (item as { metadata: { name: string } }).metadata.name
        ),
        ["vm-1", "vm-2", "vm-3", "vm-4", "vm-5"],
      );
      assert.deepEqual(
        api.requests.map((r) => [
          r.url.pathname,
          r.url.searchParams.get("limit"),
          r.url.searchParams.get("continue"),
        ]),
        [
          [`${VMS_PATH}/namespaces/default/virtualmachines`, "2", null],
          [`${VMS_PATH}/namespaces/default/virtualmachines`, "2", "token-1"],
          [`${VMS_PATH}/namespaces/default/virtualmachines`, "2", "token-2"],
        ],
      );
    },
    { pageSize: 2 },
  );
});

Deno.test("FrontProxyDependentSource.pages() requests the next page only when the previous one is consumed", async () => {
  await withLister(
    (request) =>
      request.url.searchParams.get("continue") === null
        ? json({ metadata: { continue: "next" }, items: [vm("vm-1")] })
        : json({ metadata: {}, items: [vm("vm-2")] }),
    async (api, source) => {
      const iterator = source.pages(
        vmQuery("default"),
        new AbortController().signal,
      )[Symbol.asyncIterator]();
      const first = await iterator.next();
      assert.deepEqual(first, { done: false, value: [vm("vm-1")] });
      assert.equal(api.requests.length, 1);
      const second = await iterator.next();
      assert.deepEqual(second, { done: false, value: [vm("vm-2")] });
      assert.equal(api.requests.length, 2);
      assert.deepEqual(await iterator.next(), {
        done: true,
        value: undefined,
      });
      assert.equal(api.requests.length, 2);
    },
  );
});

Deno.test("FrontProxyDependentSource.pages() yields an empty page for an empty collection or a list without items", async () => {
  await withLister(
    (request) =>
      request.url.pathname.includes("/namespaces/")
        ? json({ metadata: {}, items: [] })
        : json({ metadata: {} }),
    async (_api, source) => {
      assert.deepEqual(await allPages(source, vmQuery("default")), [[]]);
      assert.deepEqual(await allPages(source, vmQuery()), [[]]);
    },
  );
});

Deno.test("FrontProxyDependentSource.pages() throws a notFound KubeApiError on 404, leaving the mapping to the caller", async () => {
  await withLister(
    () =>
      json(
        status(
          404,
          "NotFound",
          "the server could not find the requested resource (get virtualmachines.compute.example.com)",
        ),
        404,
      ),
    async (api, source) => {
      const error = await apiError(allPages(source, vmQuery("default")));
      assert.equal(error.status, 404);
      assert.equal(error.reason, "NotFound");
      assert.equal(error.notFound, true);
      assert.match(error.message, /could not find the requested resource/);
      assert.equal(api.requests.length, 1);
    },
  );
});

Deno.test("FrontProxyDependentSource.pages() propagates other errors as KubeApiError with their status", async () => {
  for (
    const [code, reason] of [
      [403, "Forbidden"],
      [500, "InternalError"],
      [503, "ServiceUnavailable"],
    ] as const
  ) {
    await withLister(
      () => json(status(code, reason, `${reason.toLowerCase()} here`), code),
      async (_api, source) => {
        const error = await apiError(allPages(source, vmQuery()));
        assert.equal(error.status, code, reason);
        assert.equal(error.reason, reason);
        assert.equal(error.notFound, false);
        assert.match(error.message, new RegExp(`: ${code}: `));
      },
    );
  }
});

Deno.test("FrontProxyDependentSource.pages() throws when a later page fails, after yielding the earlier ones", async () => {
  await withLister(
    (request) =>
      request.url.searchParams.get("continue") === null
        ? json({ metadata: { continue: "next" }, items: [vm("vm-1")] })
        : json(
          status(500, "Expired", "The provided continue parameter is too old"),
          500,
        ),
    async (api, source) => {
      const seen: (readonly unknown[])[] = [];
      const error = await apiError((async () => {
        for await (
          const page of source.pages(
            vmQuery("default"),
            new AbortController().signal,
          )
        ) {
          seen.push(page);
        }
      })());
      assert.deepEqual(seen, [[vm("vm-1")]]);
      assert.equal(error.status, 500);
      assert.equal(error.gone, true);
      assert.equal(api.requests.length, 2);
    },
  );
});

Deno.test("FrontProxyDependentSource.pages() aborted by the signal while a page is pending fails with status 0", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  await withLister(async () => {
    await released;
    return json({ metadata: {}, items: [] });
  }, async (api, source) => {
    const abort = new AbortController();
    try {
      const pending = apiError(allPages(source, vmQuery(), abort.signal));
      await waitUntil("the list to arrive", () => api.requests.length === 1);
      abort.abort();
      const error = await pending;
      assert.equal(error.status, 0);
      assert.equal(error.reason, "");
    } finally {
      release();
    }
  });
});

Deno.test("FrontProxyDependentSource.pages() aborted between pages requests no further page", async () => {
  await withLister(
    () => json({ metadata: { continue: "more" }, items: [vm("vm-1")] }),
    async (api, source) => {
      const abort = new AbortController();
      const seen: (readonly unknown[])[] = [];
      const error = await apiError((async () => {
        for await (const page of source.pages(vmQuery(), abort.signal)) {
          seen.push(page);
          abort.abort();
        }
      })());
      assert.equal(error.status, 0);
      assert.deepEqual(seen, [[vm("vm-1")]]);
      assert.equal(api.requests.length, 1);
    },
  );
});

Deno.test("FrontProxyDependentSource.pages() with an already aborted signal sends nothing", async () => {
  await withLister(
    () => json({ metadata: {}, items: [] }),
    async (api, source) => {
      const error = await apiError(
        allPages(source, vmQuery(), AbortSignal.abort()),
      );
      assert.equal(error.status, 0);
      assert.equal(api.requests.length, 0);
    },
  );
});

// ---------------------------------------------------------------------------
// With DeletionValidator

/** A validator whose only rule makes VirtualMachines depend on VPCs. */
function validatorOver(source: FrontProxyDependentSource): DeletionValidator {
  const registry = new RuleRegistry();
  registry.replace([{
    cluster: "provider1",
    rule: validRule("vm-needs-vpc", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
  }]);
  return new DeletionValidator(registry, source, { timeoutMs: 5_000 });
}

const VPC_A_PATH =
  "/clusters/consumer1/apis/network.example.com/v1alpha1/namespaces/default/vpcs/vpc-a";

/** Answers the read of the live `vpc-a` (uid `uid-vpc-a`), and passes lists to `lists`. */
function withLiveVpc(lists: FakeHandler): FakeHandler {
  return (request, api) =>
    request.url.pathname === VPC_A_PATH
      ? json({ metadata: { name: "vpc-a", uid: "uid-vpc-a" } })
      : lists(request, api);
}

/** The list requests among `api`'s requests. */
function listRequests(api: FakeApi) {
  return api.requests.filter((r) => r.url.pathname !== VPC_A_PATH);
}

/** The DELETE of `vpcs/vpc-a` in namespace `default` of `consumer1`. */
function deleteVpc(): AdmissionRequest {
  return {
    uid: "uid-1",
    kind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
    resource: { ...VPCS },
    name: "vpc-a",
    namespace: "default",
    operation: "DELETE",
    userInfo: { username: "alice" },
    oldObject: {
      metadata: {
        name: "vpc-a",
        namespace: "default",
        uid: "uid-vpc-a",
        annotations: { "kcp.io/cluster": "consumer1" },
      },
    },
  };
}

Deno.test("FrontProxyDependentSource with DeletionValidator: a 404 list means no dependents and the delete is allowed", async () => {
  await withLister(
    withLiveVpc(() => json(status(404, "NotFound", "not found"), 404)),
    async (api, source) => {
      const verdict = await validatorOver(source).validate(deleteVpc());
      assert.equal(verdict.outcome, "allowed");
      assert.equal(verdict.response.allowed, true);
      assert.equal(
        listRequests(api)[0]?.url.pathname,
        `${VMS_PATH}/namespaces/default/virtualmachines`,
      );
    },
  );
});

Deno.test("FrontProxyDependentSource with DeletionValidator: a dependent on a later page denies the delete", async () => {
  await withLister(
    withLiveVpc((request) =>
      request.url.searchParams.get("continue") === null
        ? json({
          metadata: { continue: "next" },
          items: [{ metadata: { name: "vm-0", namespace: "default" } }],
        })
        : json({ metadata: {}, items: [vm("vm-1")] })
    ),
    async (api, source) => {
      const verdict = await validatorOver(source).validate(deleteVpc());
      assert.equal(verdict.outcome, "denied_referenced");
      assert.equal(verdict.blockers, 1);
      assert.match(
        verdict.response.status?.message ?? "",
        /VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\)/,
      );
      assert.equal(listRequests(api).length, 2);
    },
    { pageSize: 1 },
  );
});

Deno.test("FrontProxyDependentSource with DeletionValidator: any other list error fails closed", async () => {
  await withLister(
    withLiveVpc(() =>
      json(status(500, "InternalError", "etcd unavailable"), 500)
    ),
    async (_api, source) => {
      const verdict = await validatorOver(source).validate(deleteVpc());
      assert.equal(verdict.outcome, "denied_error");
      assert.equal(verdict.response.allowed, false);
      assert.equal(verdict.response.status?.code, 503);
      assert.match(verdict.response.status?.message ?? "", /etcd unavailable/);
    },
  );
});

Deno.test("FrontProxyDependentSource with DeletionValidator: a live object with another uid names no blocker", async () => {
  await withLister(
    (request) =>
      request.url.pathname === VPC_A_PATH
        ? json({ metadata: { name: "vpc-a", uid: "uid-of-a-new-vpc-a" } })
        : json({ metadata: {}, items: [vm("vm-1")] }),
    async (_api, source) => {
      const verdict = await validatorOver(source).validate(deleteVpc());
      assert.equal(verdict.outcome, "denied_unconfirmed");
      assert.doesNotMatch(verdict.response.status?.message ?? "", /vm-1/);
    },
  );
});

// ---------------------------------------------------------------------------
// liveUid()

Deno.test("FrontProxyDependentSource.liveUid() asks for the object's metadata only, at its encoded URL", async () => {
  await withLister(
    () => json({ metadata: { name: "vpc-a", uid: "uid-vpc-a" } }),
    async (api, source) => {
      const uid = await source.liveUid({
        cluster: "consumer1",
        namespace: "default",
        resource: { ...VPCS },
        name: "vpc-a",
      }, new AbortController().signal);
      assert.equal(uid, "uid-vpc-a");
      assert.equal(api.requests[0]?.method, "GET");
      assert.equal(api.requests[0]?.url.pathname, VPC_A_PATH);
      assert.equal(api.requests[0]?.url.search, "");
      assert.match(
        api.requests[0]?.headers.get("accept") ?? "",
        /^application\/json;as=PartialObjectMetadata;g=meta\.k8s\.io;v=v1,/,
      );
    },
  );
});

Deno.test("FrontProxyDependentSource.liveUid() answers undefined for a 404 and throws for a 403", async () => {
  for (
    const [code, reason] of [[404, "NotFound"], [403, "Forbidden"]] as const
  ) {
    await withLister(
      () => json(status(code, reason, "no"), code),
      async (_api, source) => {
        const read = source.liveUid({
          cluster: "consumer1",
          resource: { ...VPCS },
          name: "vpc-a",
        }, new AbortController().signal);
        if (code === 404) assert.equal(await read, undefined);
        else assert.equal((await apiError(read)).status, 403);
      },
    );
  }
});
