import assert from "node:assert/strict";
import type { WebhookProcess } from "./components.ts";
import {
  clusterRole,
  deleteReviewOf,
  reviewsAnswered,
  userRoleBinding,
  VM_VPC_RULE_FILE,
  WebhookWorld,
} from "./webhook_world.ts";

Deno.test("deleteReviewOf() is a DELETE review of the VPC by mallory, a new uid each time", () => {
  const vpc = { metadata: { name: "vpc-a", namespace: "default" } };
  const review = deleteReviewOf(vpc) as {
    kind: string;
    request: Record<string, unknown>;
  };
  assert.equal(review.kind, "AdmissionReview");
  assert.equal(review.request.operation, "DELETE");
  assert.equal(review.request.name, "vpc-a");
  assert.equal(review.request.namespace, "default");
  assert.equal(review.request.oldObject, vpc);
  assert.equal(review.request.dryRun, false);
  assert.deepEqual(review.request.resource, {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
  });
  assert.equal(
    (review.request.userInfo as { username: string }).username,
    "mallory",
  );
  const again = deleteReviewOf(vpc) as { request: { uid: string } };
  assert.notEqual(again.request.uid, review.request.uid);
});

Deno.test("userRoleBinding() binds the named ClusterRole to the user", () => {
  assert.deepEqual(clusterRole("tenant", [{ verbs: ["get"] }]), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "tenant" },
    rules: [{ verbs: ["get"] }],
  });
  const binding = userRoleBinding("tenant", "user-1") as {
    metadata: { name: string };
    roleRef: { kind: string; name: string };
    subjects: { kind: string; name: string }[];
  };
  assert.equal(binding.metadata.name, "tenant-user-1");
  assert.deepEqual(
    [binding.roleRef.kind, binding.roleRef.name],
    ["ClusterRole", "tenant"],
  );
  assert.deepEqual(
    binding.subjects.map((s) => [s.kind, s.name]),
    [["User", "user-1"]],
  );
});

Deno.test("reviewsAnswered() adds up the reviews of every outcome", async () => {
  const text = [
    "# TYPE dependency_webhook_admission_reviews_total counter",
    'dependency_webhook_admission_reviews_total{outcome="allowed"} 4',
    'dependency_webhook_admission_reviews_total{outcome="denied_referenced"} 2',
    "dependency_webhook_admission_reviews_total_other 7",
  ].join("\n");
  const webhook: Pick<WebhookProcess, "get" | "metricsPort"> = {
    metricsPort: 9,
    get: (port) =>
      Promise.resolve({ status: 200, text: port === 9 ? text : "" }),
  };
  assert.equal(await reviewsAnswered(webhook), 6);
});

Deno.test("WebhookWorld.inC1() is an object in the first consumer's default namespace", () => {
  const w = new WebhookWorld();
  w.c1 = "root:hook:consumers:c1";
  assert.deepEqual(w.inC1("vpc", "vpc-a"), {
    workspace: "root:hook:consumers:c1",
    type: "vpc",
    namespace: "default",
    name: "vpc-a",
  });
});

Deno.test("VM_VPC_RULE_FILE is the demo rule vm-dependencies", async () => {
  const text = await Deno.readTextFile(VM_VPC_RULE_FILE);
  assert.match(text, /kind: DependencyRule/);
  assert.match(text, /name: vm-dependencies/);
});
