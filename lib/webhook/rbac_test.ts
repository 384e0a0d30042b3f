import assert from "node:assert/strict";
import {
  dependency,
  LOAD_BALANCERS,
  SUBNETS,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import { webhookReadsRole } from "./rbac.ts";

Deno.test("webhookReadsRole() grants list on dependents and get on protected types, resource by resource", () => {
  const role = webhookReadsRole([
    validRule("vm", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
    validRule("lb", LOAD_BALANCERS, [dependency(VPCS, ".spec.vpcRef.name")]),
  ]);
  assert.deepEqual(role, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: "dependency-webhook:reads:rules",
      labels: {
        "app.kubernetes.io/part-of": "dependency-controller",
        "dependencies.opendefense.cloud/aggregate-to-dependents-reader": "true",
      },
    },
    rules: [
      {
        apiGroups: ["compute.example.com"],
        resources: ["virtualmachines"],
        verbs: ["get", "list"],
      },
      {
        apiGroups: ["lb.example.com"],
        resources: ["loadbalancers"],
        verbs: ["get", "list"],
      },
      {
        apiGroups: ["network.example.com"],
        resources: ["subnets", "vpcs"],
        verbs: ["get"],
      },
    ],
  });
  assert.ok(role.rules.every((r) => !r.resources.includes("*")));
});

Deno.test("webhookReadsRole() takes another name, keeping the label that aggregates it", () => {
  const role = webhookReadsRole([], { name: "dependency-webhook:reads:team" });
  assert.equal(role.metadata.name, "dependency-webhook:reads:team");
  assert.equal(
    role.metadata
      .labels["dependencies.opendefense.cloud/aggregate-to-dependents-reader"],
    "true",
  );
});

Deno.test("webhookReadsRole() merges the verbs of a type that is both dependent and protected", () => {
  const role = webhookReadsRole([
    validRule("vm", VIRTUAL_MACHINES, [dependency(VPCS, ".spec.vpcRef.name")]),
    validRule("vpc", { ...VPCS, kind: "VPC" }, [
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
  ]);
  assert.deepEqual(
    role.rules.filter((r) => r.apiGroups[0] === "network.example.com"),
    [
      {
        apiGroups: ["network.example.com"],
        resources: ["subnets"],
        verbs: ["get"],
      },
      {
        apiGroups: ["network.example.com"],
        resources: ["vpcs"],
        verbs: ["get", "list"],
      },
    ],
  );
});

Deno.test("webhookReadsRole() grants nothing without rules", () => {
  assert.deepEqual(webhookReadsRole([]).rules, []);
});

Deno.test("webhookReadsRole() grants get on a locked type only where the operator allows it", () => {
  const lock = (resource: string) =>
    validLock("home", "team-a", {
      target: { group: "", version: "v1", resource, name: "team-a" },
      reason: "r",
    });
  const locks = [lock("namespaces"), lock("services")];
  assert.deepEqual(webhookReadsRole([], { locks }).rules, []);
  const role = webhookReadsRole([], {
    locks,
    lockTypes: new Set(["namespaces"]),
  });
  assert.deepEqual(role.rules, [
    { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
  ]);
});

Deno.test("webhookReadsRole() never grants Secrets, ConfigMaps or RBAC, whatever rules and Locks name", () => {
  const secret = validLock("db", "team-a", {
    target: { group: "", version: "v1", resource: "secrets", name: "db" },
    reason: "r",
  });
  const role = webhookReadsRole(
    [
      validRule("roles", {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRole",
        resource: "clusterroles",
      }, [
        dependency(
          {
            group: "rbac.authorization.k8s.io",
            version: "v1",
            resource: "roles",
          },
          ".metadata.name",
        ),
      ]),
    ],
    {
      locks: [secret],
      lockTypes: new Set(["secrets", "configmaps"]),
    },
  );
  assert.deepEqual(role.rules, []);
});

Deno.test("webhookReadsRole() grants get and list on an owner type, and get on namespaces only for a rule that reads the Namespace", () => {
  const owned = (target: typeof VPCS, from: "Target" | "TargetNamespace") => {
    const path = '.metadata.labels["compute.example.com/owner"]';
    return { ...dependency(target, path), fieldRef: { from, path } };
  };
  const plain = validRule("vm", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const target = validRule("owned", VIRTUAL_MACHINES, [
    owned(SUBNETS, "Target"),
  ]);
  const namespaced = validRule("by-namespace", VIRTUAL_MACHINES, [
    owned(VPCS, "TargetNamespace"),
  ]);
  const VMS = (verbs: string[]) => ({
    apiGroups: ["compute.example.com"],
    resources: ["virtualmachines"],
    verbs,
  });
  const NETWORK_GET = (resources: string[]) => ({
    apiGroups: ["network.example.com"],
    resources,
    verbs: ["get"],
  });
  const lock = (resource: string) =>
    validLock("home", "team-a", {
      target: { group: "", version: "v1", resource, name: "team-a" },
      reason: "r",
    });
  const cases: [string, Parameters<typeof webhookReadsRole>, unknown[]][] = [
    [
      "an owner rule reads its owner by name, or lists the type past the lookups' bound",
      [[target]],
      [VMS(["get", "list"]), NETWORK_GET(["subnets"])],
    ],
    ["with a rule that lists the same dependent: get and list", [[
      plain,
      target,
    ]], [VMS(["get", "list"]), NETWORK_GET(["subnets", "vpcs"])]],
    ["a rule reads the owner on the Namespace: get on namespaces", [[
      namespaced,
    ]], [
      { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
      VMS(["get", "list"]),
      NETWORK_GET(["vpcs"]),
    ]],
    ["merged with the core types Locks need", [[namespaced], {
      locks: [lock("services"), lock("namespaces")],
      lockTypes: new Set(["services", "namespaces"]),
    }], [
      {
        apiGroups: [""],
        resources: ["namespaces", "services"],
        verbs: ["get"],
      },
      VMS(["get", "list"]),
      NETWORK_GET(["vpcs"]),
    ]],
    ["with the dependents index: watch too on the dependent type", [[
      plain,
    ], { watch: true }], [
      VMS(["get", "list", "watch"]),
      NETWORK_GET(["vpcs"]),
      {
        apiGroups: ["apis.kcp.io"],
        resources: ["apiexports/content"],
        resourceNames: ["compute.example.com"],
        verbs: ["list", "watch"],
      },
    ]],
  ];
  for (const [what, args, want] of cases) {
    assert.deepEqual(webhookReadsRole(...args).rules, want, what);
  }
});
