import assert from "node:assert/strict";
import { KubeApiError } from "../kcp/mod.ts";
import { FakeApi } from "../../testing/fake_api.ts";
import {
  binding,
  fakeContext,
  FakeWorkspace,
  VPC_TYPE,
} from "../../testing/plugin.ts";
import { PluginError } from "./context.ts";
import {
  apiFailure,
  bindingFor,
  chooseType,
  type DiscoveredResource,
  exportOf,
  matchResources,
  parseGroupList,
  parseResourceList,
  resolveType,
  typeQueries,
  workspaceOf,
} from "./discovery.ts";

function resource(
  overrides: Partial<DiscoveredResource> & { resource: string; kind: string },
): DiscoveredResource {
  return {
    group: "",
    version: "v1",
    namespaced: true,
    singular: overrides.kind.toLowerCase(),
    shortNames: [],
    ...overrides,
  };
}

const VPCS = resource({
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
  kind: "VPC",
  shortNames: ["vp"],
});
const CORE_EVENTS = resource({ resource: "events", kind: "Event" });
const EVENTS = resource({
  group: "events.k8s.io",
  resource: "events",
  kind: "Event",
});
const OTHER_VPCS = resource({
  group: "other.example.com",
  version: "v1",
  resource: "vpcs",
  kind: "VPC",
});

Deno.test("parseGroupList() reads each group's preferred version and versions, skipping malformed ones", () => {
  assert.deepEqual(
    parseGroupList({
      groups: [
        {
          name: "apps",
          versions: [{ version: "v1" }, { version: "v1beta1" }],
          preferredVersion: { version: "v1" },
        },
        { name: "no-preferred", versions: [{ version: "v2" }] },
        { name: "nothing", versions: [] },
        { versions: [{ version: "v1" }] },
        "junk",
      ],
    }),
    [
      { name: "apps", preferredVersion: "v1", versions: ["v1", "v1beta1"] },
      { name: "no-preferred", preferredVersion: "v2", versions: ["v2"] },
    ],
  );
  assert.deepEqual(parseGroupList(null), []);
});

Deno.test("parseResourceList() keeps resources, not subresources, and defaults the singular to the kind", () => {
  assert.deepEqual(
    parseResourceList({
      resources: [
        {
          name: "namespaces",
          singularName: "namespace",
          namespaced: false,
          kind: "Namespace",
          shortNames: ["ns"],
        },
        { name: "namespaces/status", namespaced: false, kind: "Namespace" },
        { name: "vpcs", singularName: "", namespaced: true, kind: "VPC" },
        { name: "nokind" },
      ],
    }, { group: "", version: "v1" }),
    [
      {
        group: "",
        version: "v1",
        resource: "namespaces",
        kind: "Namespace",
        namespaced: false,
        singular: "namespace",
        shortNames: ["ns"],
      },
      {
        group: "",
        version: "v1",
        resource: "vpcs",
        kind: "VPC",
        namespaced: true,
        singular: "vpc",
        shortNames: [],
      },
    ],
  );
});

Deno.test("typeQueries() reads a resource, <resource>.<group> and <resource>.<version>.<group> as kubectl does", () => {
  assert.deepEqual(typeQueries("VPC"), [{ resource: "vpc" }]);
  assert.deepEqual(typeQueries("deployments.apps"), [
    { resource: "deployments", group: "apps" },
  ]);
  assert.deepEqual(typeQueries("vpcs.network.example.com"), [
    { resource: "vpcs", version: "network", group: "example.com" },
    { resource: "vpcs", group: "network.example.com" },
  ]);
  assert.deepEqual(typeQueries("vpcs.v1alpha1.network.example.com"), [
    {
      resource: "vpcs",
      version: "v1alpha1",
      group: "network.example.com",
    },
    { resource: "vpcs", group: "v1alpha1.network.example.com" },
  ]);
  for (const bad of ["", "vpcs.", ".vpcs", "a..b"]) {
    assert.throws(() => typeQueries(bad), PluginError, bad);
  }
});

Deno.test("matchResources() matches the plural, the singular, the kind in any case and short names", () => {
  const all = [VPCS, CORE_EVENTS, EVENTS];
  for (const name of ["vpcs", "vpc", "VPC", "Vpcs", "vp"]) {
    assert.deepEqual(
      matchResources(all, typeQueries(name)[0]!),
      [VPCS],
      name,
    );
  }
  assert.deepEqual(
    matchResources(all, { resource: "vpcs", group: "other.example.com" }),
    [],
  );
  assert.deepEqual(
    matchResources(all, { resource: "vpcs", version: "v1" }),
    [],
  );
  assert.deepEqual(matchResources(all, { resource: "events" }), [
    CORE_EVENTS,
    EVENTS,
  ]);
});

Deno.test("chooseType() prefers the core group, names the candidates when ambiguous and says when there is none", () => {
  assert.deepEqual(chooseType("events", [EVENTS, CORE_EVENTS]), {
    group: "",
    version: "v1",
    resource: "events",
    kind: "Event",
    namespaced: true,
  });
  assert.equal(chooseType("vpc", [VPCS, VPCS]).group, "network.example.com");
  assert.throws(
    () => chooseType("vpc", [VPCS, OTHER_VPCS]),
    (error: unknown) =>
      error instanceof PluginError && error.exitCode === 2 &&
      error.message ===
        'the type "vpc" is ambiguous: it may be vpcs.network.example.com, vpcs.other.example.com; name one as <resource>.<group>',
  );
  assert.throws(
    () => chooseType("vpcz", []),
    (error: unknown) =>
      error instanceof PluginError && error.exitCode === 2 &&
      error.message === 'the server doesn\'t have a resource type "vpcz"',
  );
});

Deno.test("exportOf() finds the binding that binds the type; a reference without a path has none", () => {
  const bindings = [
    binding({ path: "root:compute", name: "compute.example.com" }, [
      { group: "compute.example.com", resource: "virtualmachines" },
    ]),
    binding({ name: "local.example.com" }, [
      { group: "local.example.com", resource: "things" },
    ]),
    binding({ path: "root:network", name: "network.example.com" }, [
      { group: "network.example.com", resource: "vpcs" },
    ]),
  ];
  assert.deepEqual(
    exportOf(bindings, { group: "network.example.com", resource: "vpcs" }),
    { path: "root:network", name: "network.example.com" },
  );
  assert.deepEqual(
    exportOf(bindings, { group: "local.example.com", resource: "things" }),
    { name: "local.example.com" },
  );
  assert.equal(
    exportOf(bindings, { group: "network.example.com", resource: "subnets" }),
    undefined,
  );
  assert.equal(exportOf([null, { spec: 1 }], VPC_TYPE), undefined);
});

Deno.test("workspaceOf() reads the workspace of a /clusters/ URL", () => {
  assert.equal(
    workspaceOf("https://kcp:6443/clusters/root:org:ws"),
    "root:org:ws",
  );
  assert.equal(workspaceOf("https://kcp:6443/clusters/root/"), "root");
  assert.equal(workspaceOf("https://kcp:6443"), undefined);
  assert.equal(workspaceOf("not a url"), undefined);
});

Deno.test("apiFailure() names the permission a 403 lacks, where", () => {
  const forbidden = new KubeApiError("POST x: 403: forbidden", {
    status: 403,
    reason: "Forbidden",
  });
  const context = { server: "https://kcp/clusters/root:c1" };
  assert.equal(
    apiFailure(forbidden, context, {
      verb: "create",
      what: "locks.dependencies.opendefense.cloud",
      namespace: "team-a",
    }).message,
    "you may not create locks.dependencies.opendefense.cloud in namespace team-a",
  );
  assert.equal(
    apiFailure(forbidden, context, {
      verb: "list",
      what: "apibindings.apis.kcp.io",
    }).message,
    "you may not list apibindings.apis.kcp.io in workspace root:c1",
  );
  const other = apiFailure(
    new KubeApiError("GET x: 500: boom", { status: 500 }),
    context,
    { verb: "list", what: "things" },
  );
  assert.equal(other.exitCode, 2);
  assert.equal(
    other.message,
    "cannot list things in workspace root:c1: GET x: 500: boom",
  );
});

Deno.test("resolveType() resolves every spelling kubectl takes; with a group, it asks only that group", async () => {
  const workspace = new FakeWorkspace("root:c1");
  const api = new FakeApi(workspace.handle);
  const context = fakeContext(api);
  try {
    for (const name of ["vpc", "VPC", "vpcs", "vpcs.network.example.com"]) {
      assert.deepEqual(await resolveType(context, name), {
        group: "network.example.com",
        version: "v1alpha1",
        resource: "vpcs",
        kind: "VPC",
        namespaced: true,
      }, name);
    }
    assert.deepEqual(await resolveType(context, "ns"), {
      group: "",
      version: "v1",
      resource: "namespaces",
      kind: "Namespace",
      namespaced: false,
    });
    api.requests.length = 0;
    await resolveType(context, "vpcs.v1alpha1.network.example.com");
    assert.deepEqual(
      api.requests.map((r) => r.url.pathname),
      [
        "/clusters/root:c1/apis",
        "/clusters/root:c1/apis/network.example.com/v1alpha1",
      ],
    );
    await assert.rejects(
      resolveType(context, "vpcs.v9.network.example.com"),
      /the server doesn't have a resource type "vpcs.v9.network.example.com"/,
    );
    await assert.rejects(
      resolveType(context, "vpcz"),
      (error: unknown) =>
        error instanceof PluginError && error.exitCode === 2 &&
        error.message === 'the server doesn\'t have a resource type "vpcz"',
    );
  } finally {
    context.client.close();
    await api.close();
  }
});

Deno.test("resolveType() passes over a group whose discovery fails, naming it only if nothing matches", async () => {
  const workspace = new FakeWorkspace("root:c1", {
    types: [
      VPC_TYPE,
      { ...VPC_TYPE, group: "broken.example.com", resource: "things" },
    ],
  });
  const api = new FakeApi((request) =>
    request.url.pathname.includes("/apis/broken.example.com/")
      ? new Response("unavailable", { status: 503 })
      : workspace.handle(request)
  );
  const context = fakeContext(api);
  try {
    assert.equal((await resolveType(context, "vpc")).resource, "vpcs");
    await assert.rejects(
      resolveType(context, "nothing"),
      /doesn't have a resource type "nothing" \(discovery failed for broken\.example\.com\/v1alpha1\)/,
    );
  } finally {
    context.client.close();
    await api.close();
  }
});

Deno.test("resolveType() fails with the permission when discovery is forbidden", async () => {
  const api = new FakeApi(() =>
    new Response(JSON.stringify({ reason: "Forbidden", message: "no" }), {
      status: 403,
    })
  );
  const context = fakeContext(api);
  try {
    await assert.rejects(
      resolveType(context, "vpc"),
      (error: unknown) =>
        error instanceof PluginError && error.exitCode === 2 &&
        /you may not read the discovery of .* in workspace root:c1/.test(
          error.message,
        ),
    );
  } finally {
    context.client.close();
    await api.close();
  }
});

Deno.test("bindingFor() reads the APIBindings: the export, the workspace's own path, none, or the permission", async () => {
  const workspace = new FakeWorkspace("root:c1", {
    bindings: [
      binding({ path: "root:network", name: "network.example.com" }, [
        { group: "network.example.com", resource: "vpcs" },
      ]),
      binding({ name: "local.example.com" }, [
        { group: "local.example.com", resource: "things" },
      ]),
    ],
  });
  const api = new FakeApi(workspace.handle);
  const context = fakeContext(api);
  try {
    assert.deepEqual(await bindingFor(context, VPC_TYPE), {
      path: "root:network",
      name: "network.example.com",
    });
    assert.deepEqual(
      await bindingFor(context, {
        group: "local.example.com",
        resource: "things",
      }),
      { path: "root:c1", name: "local.example.com" },
    );
    assert.equal(
      await bindingFor(context, { group: "crd.io", resource: "widgets" }),
      undefined,
    );
    api.requests.length = 0;
    assert.equal(
      await bindingFor(context, { group: "", resource: "configmaps" }),
      undefined,
    );
    assert.equal(api.requests.length, 0, "the core group is never bound");
    workspace.forbidden.add("list apibindings");
    await assert.rejects(
      bindingFor(context, VPC_TYPE),
      (error: unknown) =>
        error instanceof PluginError && error.exitCode === 2 &&
        error.message ===
          "you may not list apibindings.apis.kcp.io in workspace root:c1 (read to learn which APIExport vpcs.network.example.com is bound from)",
    );
  } finally {
    context.client.close();
    await api.close();
  }
});
