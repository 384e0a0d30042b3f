import assert from "node:assert/strict";
import { worldPaths } from "./component_suite.ts";
import {
  clusterRoleFor,
  KUBE_TIME,
  namespaceRbac,
  pluginWhyWorld,
  projectReadRbac,
  shown,
  SINCE_PATTERN,
  subnetOwnedByProject,
  tenantRbac,
  withFinalizer,
} from "./plugin_why_world.ts";

Deno.test("clusterRoleFor() binds a ClusterRole of the rules given to the user, both of one name", () => {
  const rules = [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }];
  const [role, binding] = clusterRoleFor("user-1", { name: "r", rules }) as [
    Record<string, unknown>,
    Record<string, unknown>,
  ];
  assert.deepEqual(role, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "r" },
    rules,
  });
  assert.deepEqual(binding, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "r" },
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: "r",
    },
    subjects: [{
      apiGroup: "rbac.authorization.k8s.io",
      kind: "User",
      name: "user-1",
    }],
  });
  const [reads] = projectReadRbac("user-1") as [{ rules: unknown[] }];
  assert.deepEqual(reads.rules, [{
    apiGroups: ["owners.example.com"],
    resources: ["projects"],
    verbs: ["get"],
  }]);
});

Deno.test("subnetOwnedByProject(): a Subnet whose owner reference blocks the Project's foreground deletion", () => {
  const subnet = subnetOwnedByProject("team-fg", "s-fg", {
    name: "p-fg",
    uid: "u-1",
  });
  assert.deepEqual(subnet.metadata, {
    name: "s-fg",
    namespace: "team-fg",
    ownerReferences: [{
      apiVersion: "owners.example.com/v1alpha1",
      kind: "Project",
      name: "p-fg",
      uid: "u-1",
      blockOwnerDeletion: true,
    }],
  });
  assert.equal(subnet.kind, "Subnet");
});

Deno.test("pluginWhyWorld(): the providers, the owners provider and two consumers under the prefix; no tenant yet", () => {
  assert.deepEqual(pluginWhyWorld(worldPaths("root:why")), {
    network: "root:why:providers:network",
    compute: "root:why:providers:compute",
    owners: "root:why:providers:owners",
    c1: "root:why:consumers:c1",
    c2: "root:why:consumers:c2",
    tenant: "",
  });
});

Deno.test("tenantRbac() and namespaceRbac(): what the tenant may do, bound to it", () => {
  const [role, binding] = tenantRbac("user-1") as [
    { metadata: { name: string }; rules: { resources?: string[] }[] },
    { subjects: { name: string }[] },
  ];
  assert.equal(role.metadata.name, "why-tenant");
  assert.deepEqual(role.rules.map((r) => r.resources), [
    undefined,
    ["vpcs", "subnets", "virtualmachines"],
    ["networks"],
  ]);
  assert.equal(binding.subjects[0]!.name, "user-1");
  const [namespaces] = namespaceRbac("user-1") as [
    { metadata: { name: string }; rules: unknown[] },
  ];
  assert.equal(namespaces.metadata.name, "why-tenant-namespaces");
  assert.deepEqual(namespaces.rules, [{
    apiGroups: [""],
    resources: ["namespaces"],
    verbs: ["get", "list", "delete"],
  }]);
});

Deno.test("withFinalizer() and shown(): a manifest kept while being deleted; a run as a message", () => {
  assert.deepEqual(
    withFinalizer({ kind: "VPC", metadata: { name: "a", namespace: "n" } }),
    {
      kind: "VPC",
      metadata: { name: "a", namespace: "n", finalizers: ["example.com/keep"] },
    },
  );
  assert.equal(
    shown({ code: 1, stdout: "out\n", stderr: "err\n" }),
    "exit 1\n--- stdout\nout\n--- stderr\nerr\n",
  );
});

Deno.test("SINCE_PATTERN and KUBE_TIME: a cause's since as the tree writes it; a creationTimestamp", () => {
  assert.match(
    "(reason: r; since 2026-11-29T12:00:00Z (3h ago))",
    new RegExp(`\\(reason: r${SINCE_PATTERN}\\)`),
  );
  assert.match("2026-11-29T12:00:00Z", KUBE_TIME);
  assert.doesNotMatch("2026-11-29T12:00:00.5Z", KUBE_TIME);
});
