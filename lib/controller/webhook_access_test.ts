import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import { KubeClient } from "../kcp/mod.ts";
import { connection, FakeApi, json } from "../../testing/fake_api.ts";
import {
  accessKey,
  accessNeeded,
  accessProblems,
  type AccessRef,
  readWebhookAccess,
} from "./webhook_access.ts";

/** The dependencies of a rule, as accessNeeded() reads them. */
type RuleTypesOf = Parameters<typeof accessNeeded>[1]["spec"]["dependencies"];

const RULE = {
  spec: {
    dependent: { group: "compute.example.com", resource: "virtualmachines" },
    dependencies: [
      { group: "network.example.com", resource: "vpcs" },
      { group: "network.example.com", resource: "vpcs" },
      { group: "network.example.com", resource: "subnets" },
    ],
  },
};

Deno.test("accessNeeded() asks for list and get on the dependent and get on each protected type, once each", () => {
  assert.deepEqual(
    accessNeeded("c1", RULE).map((r) =>
      `${r.cluster} ${r.verb} ${r.resource}.${r.group}`
    ),
    [
      "c1 list virtualmachines.compute.example.com",
      "c1 get virtualmachines.compute.example.com",
      "c1 get vpcs.network.example.com",
      "c1 get subnets.network.example.com",
    ],
  );
});

Deno.test("accessNeeded() asks for what the webhook reads for each place a reference is read", () => {
  const dependent = {
    group: "compute.example.com",
    resource: "virtualmachines",
  };
  const vpcs = { group: "network.example.com", resource: "vpcs" };
  const subnets = { group: "network.example.com", resource: "subnets" };
  const namespaces = { group: "", resource: "namespaces" };
  const cases: [string, RuleTypesOf, string[]][] = [
    ["read on the dependent (from absent)", [vpcs], [
      "list virtualmachines.compute.example.com",
      "get virtualmachines.compute.example.com",
      "get vpcs.network.example.com",
    ]],
    ["read on the dependent (from: Dependent)", [{
      ...vpcs,
      fieldRef: { from: "Dependent" },
    }], [
      "list virtualmachines.compute.example.com",
      "get virtualmachines.compute.example.com",
      "get vpcs.network.example.com",
    ]],
    ["read on the protected object: owners are read by name, not listed", [{
      ...vpcs,
      fieldRef: { from: "Target" },
    }], [
      "get virtualmachines.compute.example.com",
      "get vpcs.network.example.com",
    ]],
    ["read on the Namespace: the Namespace too", [{
      ...vpcs,
      fieldRef: { from: "TargetNamespace" },
    }], [
      "get virtualmachines.compute.example.com",
      "get vpcs.network.example.com",
      "get namespaces.",
    ]],
    ["every place, namespaces once", [
      { ...vpcs, fieldRef: { from: "TargetNamespace" } },
      { ...subnets, fieldRef: { from: "TargetNamespace" } },
      { ...subnets, fieldRef: { from: "Target" } },
      { ...vpcs, fieldRef: {} },
    ], [
      "list virtualmachines.compute.example.com",
      "get virtualmachines.compute.example.com",
      "get vpcs.network.example.com",
      "get subnets.network.example.com",
      "get namespaces.",
    ]],
    ["a protected Namespace read on itself: get namespaces once", [
      { ...namespaces, fieldRef: { from: "TargetNamespace" } },
    ], [
      "get virtualmachines.compute.example.com",
      "get namespaces.",
    ]],
  ];
  for (const [what, dependencies, want] of cases) {
    const needed = accessNeeded("c1", { spec: { dependent, dependencies } });
    assert.deepEqual(
      needed.map((r) => `${r.verb} ${r.resource}.${r.group}`),
      want,
      what,
    );
    assert.ok(needed.every((r) => r.cluster === "c1"), what);
  }
});

Deno.test("accessProblems() names a core type without a group", () => {
  const needed = accessNeeded("c1", {
    spec: {
      dependent: { group: "compute.example.com", resource: "virtualmachines" },
      dependencies: [{
        group: "network.example.com",
        resource: "vpcs",
        fieldRef: { from: "TargetNamespace" },
      }],
    },
  });
  const namespaces = needed.find((r) => r.resource === "namespaces")!;
  const problems = accessProblems(
    [namespaces],
    new Map([[accessKey(namespaces), { answer: false }]]),
    { user: "dependency-webhook" },
  );
  assert.match(
    problems.missing[0]!,
    /^the webhook's identity dependency-webhook may not get namespaces, so every delete/,
  );
  assert.deepEqual(
    accessProblems(
      [namespaces],
      new Map([[accessKey(namespaces), { error: "timeout" }]]),
      { user: "u" },
    ).unverified,
    ["whether u may get namespaces: timeout"],
  );
});

Deno.test("accessProblems() names each read kcp refused, notes each it could not ask, and waits for the rest", () => {
  const needed = accessNeeded("c1", RULE);
  const readings = new Map([
    [accessKey(needed[0]!), { answer: false }],
    [accessKey(needed[1]!), { answer: true }],
    [accessKey(needed[2]!), { error: "403 Forbidden" }],
    // needed[3] not asked yet.
  ]);
  const problems = accessProblems(needed, readings, {
    user: "dependency-webhook",
  });
  assert.deepEqual(problems.missing, [
    "the webhook's identity dependency-webhook may not list virtualmachines.compute.example.com, " +
    "so every delete it protects is denied with 503: grant it in system:admin of every shard " +
    "(controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -)",
  ]);
  assert.deepEqual(problems.unverified, [
    "whether dependency-webhook may get vpcs.network.example.com: 403 Forbidden",
  ]);
  assert.equal(problems.unanswered, 1, "subnets, not asked yet");
});

Deno.test("accessNeeded() hands out the same frozen list for a rule object with a memo, and accessKey() tells its reads apart", () => {
  const memo = new PlanMemo();
  const needed = accessNeeded("c1", RULE, { memo });
  assert.equal(accessNeeded("c1", RULE, { memo }), needed);
  assert.ok(Object.isFrozen(needed) && needed.every(Object.isFrozen));
  assert.notEqual(
    accessNeeded("c2", RULE, { memo }),
    needed,
    "another cluster",
  );
  assert.notEqual(accessNeeded("c1", RULE), needed, "no memo: a new list");
  const keys = needed.map((ref) => accessKey(ref, memo));
  assert.ok(needed.every((ref) => memo.accessKeys.has(ref)), "keys kept");
  assert.equal(new Set(keys).size, needed.length);
  assert.equal(
    accessKey({ ...needed[0]! }),
    keys[0],
    "a copy has the same key",
  );
});

Deno.test("readWebhookAccess() asks a SubjectAccessReview about the webhook's user in the rule's workspace", async () => {
  const api = new FakeApi((request) =>
    json({
      ...JSON.parse(request.body),
      status: {
        allowed: JSON.parse(request.body).spec.resourceAttributes.verb ===
          "get",
      },
    }, 201)
  );
  const client = new KubeClient({
    ...connection(api.url),
    allowInsecureHttp: true,
  });
  try {
    const ref: AccessRef = {
      cluster: "c1",
      verb: "list",
      group: "compute.example.com",
      resource: "virtualmachines",
    };
    assert.equal(
      await readWebhookAccess(client, api.url, ref, { user: "dep-webhook" }),
      false,
    );
    assert.equal(
      await readWebhookAccess(client, api.url, { ...ref, verb: "get" }, {
        user: "dep-webhook",
      }),
      true,
    );
    const [first] = api.requests;
    assert.equal(first?.method, "POST");
    assert.equal(
      first?.url.pathname,
      "/clusters/c1/apis/authorization.k8s.io/v1/subjectaccessreviews",
    );
    assert.deepEqual(JSON.parse(first!.body).spec, {
      user: "dep-webhook",
      resourceAttributes: {
        verb: "list",
        group: "compute.example.com",
        resource: "virtualmachines",
      },
    });
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("readWebhookAccess() asks about a subresource of one named object, as the index's reads need", async () => {
  const api = new FakeApi((request) =>
    json({ ...JSON.parse(request.body), status: { allowed: true } }, 201)
  );
  const client = new KubeClient({
    ...connection(api.url),
    allowInsecureHttp: true,
  });
  try {
    const ref: AccessRef = {
      cluster: "c1",
      verb: "watch",
      group: "apis.kcp.io",
      resource: "apiexports",
      subresource: "content",
      name: "compute.example.com",
    };
    assert.equal(
      await readWebhookAccess(client, api.url, ref, { user: "dep-webhook" }),
      true,
    );
    assert.deepEqual(JSON.parse(api.requests[0]!.body).spec, {
      user: "dep-webhook",
      resourceAttributes: {
        verb: "watch",
        group: "apis.kcp.io",
        resource: "apiexports",
        subresource: "content",
        name: "compute.example.com",
      },
    });
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("accessKey() tells apart a subresource and a name, and keeps the keys of plain reads", () => {
  const plain: AccessRef = {
    cluster: "c1",
    verb: "list",
    group: "apis.kcp.io",
    resource: "apiexports",
  };
  assert.equal(accessKey(plain), "c1\nlist\napis.kcp.io\napiexports");
  const keys = new Set([
    accessKey(plain),
    accessKey({ ...plain, subresource: "content" }),
    accessKey({ ...plain, subresource: "content", name: "a" }),
    accessKey({ ...plain, subresource: "content", name: "b" }),
    accessKey({ ...plain, name: "content" }),
    accessKey({ ...plain, verb: "watch", subresource: "content", name: "a" }),
  ]);
  assert.equal(keys.size, 6);
});
