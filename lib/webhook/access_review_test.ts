import assert from "node:assert/strict";
import { connection, FakeApi, json } from "../../testing/fakes.ts";
import {
  FrontProxyBypassAuthorizer,
  subjectAccessReview,
} from "./access_review.ts";
import { KubeClient } from "../kcp/mod.ts";

const QUERY = {
  cluster: "consumer1",
  namespace: "default",
  user: {
    username: "alice",
    uid: "u-1",
    groups: ["team-a"],
    extra: { "authentication.kcp.io/scopes": ["cluster:consumer1"] },
  },
};

Deno.test("subjectAccessReview() asks for bypass on protections with the user exactly as the review names them", () => {
  assert.deepEqual(subjectAccessReview(QUERY), {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    spec: {
      user: "alice",
      uid: "u-1",
      groups: ["team-a"],
      extra: { "authentication.kcp.io/scopes": ["cluster:consumer1"] },
      resourceAttributes: {
        group: "dependencies.opendefense.cloud",
        resource: "protections",
        verb: "bypass",
        namespace: "default",
      },
    },
  });
});

Deno.test("subjectAccessReview() asks cluster-wide for a cluster-scoped object and an anonymous review", () => {
  const review = subjectAccessReview({ cluster: "c", user: {} }) as {
    spec: Record<string, unknown>;
  };
  assert.equal(review.spec.user, "");
  assert.deepEqual(review.spec.groups, []);
  assert.equal(
    Object.hasOwn(
      review.spec.resourceAttributes as Record<string, unknown>,
      "namespace",
    ),
    false,
  );
});

Deno.test("FrontProxyBypassAuthorizer.mayBypass() POSTs the review in the consumer's cluster and reads status.allowed", async () => {
  for (const allowed of [true, false]) {
    const api = new FakeApi(() => json({ status: { allowed } }, 201));
    const client = new KubeClient(connection(api.url));
    try {
      const answer = await new FrontProxyBypassAuthorizer(client, api.url)
        .mayBypass(QUERY, new AbortController().signal);
      assert.equal(answer, allowed);
      const seen = api.requests[0]!;
      assert.equal(seen.method, "POST");
      assert.equal(
        seen.url.pathname,
        "/clusters/consumer1/apis/authorization.k8s.io/v1/subjectaccessreviews",
      );
      assert.deepEqual(JSON.parse(seen.body), subjectAccessReview(QUERY));
    } finally {
      client.close();
      await api.close();
    }
  }
});
