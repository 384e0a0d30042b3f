import assert from "node:assert/strict";
import { KubeApiError, KubeClient } from "../kcp/mod.ts";
import { connection, FakeApi, json, status } from "../../testing/fake_api.ts";
import {
  checkLockTarget,
  type LockTargetAnswer,
  type LockTargetCheckOptions,
  readLockTarget,
} from "./lock_targets.ts";

const VPCS = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
};
const FROM_NETWORK = {
  path: "root:providers:network",
  name: "network.example.com",
};

function options(
  target: LockTargetCheckOptions["target"],
  clusters: Record<string, string | null> = {},
): LockTargetCheckOptions {
  return { target, resolve: (path) => clusters[path] };
}

function answer(value: LockTargetAnswer): { answer: LockTargetAnswer } {
  return { answer: value };
}

Deno.test("checkLockTarget() is ok for the workspace's own namespaced type without apiExportRef", () => {
  assert.deepEqual(
    checkLockTarget(
      answer({ served: true, namespaced: true }),
      options({ group: "", version: "v1", resource: "configmaps" }),
    ),
    { state: "ok" },
  );
});

Deno.test("checkLockTarget() is ok for a type bound from the export apiExportRef names", () => {
  assert.deepEqual(
    checkLockTarget(
      answer({ served: true, namespaced: true, boundFrom: FROM_NETWORK }),
      options({ ...VPCS, apiExportRef: FROM_NETWORK }),
    ),
    { state: "ok" },
  );
});

Deno.test("checkLockTarget() waits while nothing was read", () => {
  assert.deepEqual(checkLockTarget(undefined, options(VPCS)), {
    state: "pending",
    paths: [],
  });
});

Deno.test("checkLockTarget() says what could not be read and how to grant it, placed all the same", () => {
  const check = checkLockTarget({ error: "403 Forbidden" }, options(VPCS));
  assert.equal(check.state, "failed");
  assert.ok(check.state === "failed");
  assert.equal(check.reason, "TargetNotChecked");
  assert.equal(check.placed, true);
  assert.match(
    check.message,
    /cannot check where vpcs\.network\.example\.com comes from.*403 Forbidden.*list on apibindings\.apis\.kcp\.io.*manifests\/kcp\/system-admin/,
  );
});

Deno.test("checkLockTarget() refuses what kcp would not call the webhook for", () => {
  const cases: [
    string,
    LockTargetAnswer,
    LockTargetCheckOptions["target"],
    string,
    RegExp,
  ][] = [
    [
      "not served",
      { served: false },
      VPCS,
      "TargetTypeUnknown",
      /does not serve vpcs\.network\.example\.com in version v1alpha1/,
    ],
    [
      "cluster-scoped",
      { served: true, namespaced: false, boundFrom: FROM_NETWORK },
      { ...VPCS, resource: "vpcattachments", apiExportRef: FROM_NETWORK },
      "ClusterScopedTarget",
      /vpcattachments\.network\.example\.com is cluster-scoped/,
    ],
    [
      "cluster-scoped core type",
      { served: true, namespaced: false },
      {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        resource: "clusterroles",
      },
      "ClusterScopedTarget",
      /clusterroles\.rbac\.authorization\.k8s\.io is cluster-scoped/,
    ],
    [
      "bound, no apiExportRef",
      { served: true, namespaced: true, boundFrom: FROM_NETWORK },
      VPCS,
      "ProviderMismatch",
      /set spec\.target\.apiExportRef to \{path: root:providers:network, name: network\.example\.com\}/,
    ],
    [
      "own type, apiExportRef",
      { served: true, namespaced: true },
      { ...VPCS, apiExportRef: FROM_NETWORK },
      "ProviderMismatch",
      /a type of the Lock's workspace's own.*remove spec\.target\.apiExportRef/,
    ],
  ];
  for (const [name, read, target, reason, message] of cases) {
    const check = checkLockTarget(answer(read), options(target));
    assert.equal(check.state, "failed", name);
    assert.ok(check.state === "failed");
    assert.equal(check.reason, reason, name);
    assert.equal(check.placed, false, name);
    assert.match(check.message, message, name);
  }
});

Deno.test("checkLockTarget() lets a Lock lock its namespace, though namespaces are cluster-scoped", () => {
  assert.deepEqual(
    checkLockTarget(
      answer({ served: true, namespaced: false }),
      options({ group: "", version: "v1", resource: "namespaces" }),
    ),
    { state: "ok" },
  );
});

Deno.test("checkLockTarget() compares another path to the bound export by logical cluster", () => {
  const other = { path: "root:other", name: "network.example.com" };
  const read = answer({
    served: true,
    namespaced: true,
    boundFrom: FROM_NETWORK,
  });
  const target = { ...VPCS, apiExportRef: other };
  assert.deepEqual(checkLockTarget(read, options(target)), {
    state: "pending",
    paths: ["root:other", "root:providers:network"],
  });
  assert.deepEqual(
    checkLockTarget(
      read,
      options(target, { "root:other": "c1", "root:providers:network": "c1" }),
    ),
    { state: "ok" },
  );
  const mismatch = checkLockTarget(
    read,
    options(target, { "root:other": "c2", "root:providers:network": "c1" }),
  );
  assert.ok(mismatch.state === "failed");
  assert.equal(mismatch.reason, "ProviderMismatch");
  // A path that cannot be resolved never matches.
  const unresolved = checkLockTarget(
    read,
    options(target, { "root:other": null, "root:providers:network": null }),
  );
  assert.equal(unresolved.state, "failed");
});

/** A fake workspace serving discovery and APIBindings. */
function workspace(
  discovery: (path: string) => Response,
  bindings: unknown[],
): FakeApi {
  return new FakeApi((request) => {
    const path = request.url.pathname;
    if (path.endsWith("/apis/apis.kcp.io/v1alpha2/apibindings")) {
      return json({ kind: "APIBindingList", metadata: {}, items: bindings });
    }
    return discovery(path);
  });
}

async function read(
  api: FakeApi,
  ref: { group: string; version: string; resource: string },
): Promise<LockTargetAnswer> {
  const client = new KubeClient({
    ...connection(api.url),
    allowInsecureHttp: true,
  });
  try {
    return await readLockTarget(client, api.url, { cluster: "c1", ...ref });
  } finally {
    client.close();
  }
}

const NETWORK_BINDING = {
  metadata: { name: "network" },
  spec: { reference: { export: FROM_NETWORK } },
  status: {
    boundResources: [{ group: "network.example.com", resource: "vpcs" }],
  },
};

Deno.test("readLockTarget() reads discovery and the bindings of the Lock's workspace", async () => {
  const api = workspace(
    (path) =>
      path === "/clusters/c1/apis/network.example.com/v1alpha1"
        ? json({
          kind: "APIResourceList",
          resources: [
            { name: "vpcs", namespaced: true, kind: "VPC" },
            { name: "vpcs/status", namespaced: true, kind: "VPC" },
          ],
        })
        : json(status(404, "NotFound", "not found"), 404),
    [
      { metadata: { name: "junk" }, status: { boundResources: "no" } },
      NETWORK_BINDING,
    ],
  );
  try {
    assert.deepEqual(await read(api, VPCS), {
      served: true,
      namespaced: true,
      boundFrom: FROM_NETWORK,
    });
    assert.equal(
      api.seen("/clusters/c1/apis/apis.kcp.io/v1alpha2/apibindings").length,
      1,
    );
  } finally {
    await api.close();
  }
});

Deno.test("readLockTarget() reads a core type, a type not served, and a binding without a path", async () => {
  const api = workspace((path) =>
    path === "/clusters/c1/api/v1"
      ? json({
        kind: "APIResourceList",
        resources: [{ name: "namespaces", namespaced: false }, {
          name: "configmaps",
          namespaced: true,
        }],
      })
      : json(status(404, "NotFound", "not found"), 404), [{
    spec: { reference: { export: { name: "local.example.com" } } },
    status: {
      boundResources: [{ group: "local.example.com", resource: "things" }],
    },
  }]);
  try {
    assert.deepEqual(
      await read(api, { group: "", version: "v1", resource: "configmaps" }),
      { served: true, namespaced: true },
    );
    assert.deepEqual(
      await read(api, { group: "", version: "v1", resource: "nothings" }),
      { served: false },
    );
    assert.deepEqual(await read(api, VPCS), { served: false });
  } finally {
    await api.close();
  }
});

Deno.test("readLockTarget() throws what it cannot read", async () => {
  const api = new FakeApi(() => json(status(403, "Forbidden", "no"), 403));
  try {
    await assert.rejects(
      read(api, VPCS),
      (error) => error instanceof KubeApiError && error.status === 403,
    );
  } finally {
    await api.close();
  }
});
