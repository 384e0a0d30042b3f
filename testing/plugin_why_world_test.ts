import assert from "node:assert/strict";
import {
  clusterRoleFor,
  projectReadRbac,
  subnetOwnedByProject,
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
