import assert from "node:assert/strict";
import type { AdmissionRequest } from "./admission_review.ts";
import { quote, reviewTarget, shownTarget } from "./review_target.ts";
import { deleteRequest, VPCS } from "../../testing/fakes.ts";

/** The object under review: vpc-a with uid `uid-a` in `consumer1`, with `metadata` over that. */
function object(metadata: Record<string, unknown>): Record<string, unknown> {
  return {
    metadata: {
      name: "vpc-a",
      uid: "uid-a",
      annotations: { "kcp.io/cluster": "consumer1" },
      ...metadata,
    },
  };
}

Deno.test("reviewTarget() reads cluster, namespace, name, uid and type from a review", () => {
  assert.deepEqual(reviewTarget(deleteRequest(), object({})), {
    cluster: "consumer1",
    namespace: "default",
    name: "vpc-a",
    uid: "uid-a",
    resource: { ...VPCS },
  });
  // A DELETECOLLECTION item: the name comes from the object.
  const item = reviewTarget(deleteRequest({ name: "" }), object({}));
  assert.equal(typeof item === "string" ? item : item.name, "vpc-a");
  // A Namespace is cluster-scoped, whatever request.namespace says.
  const ns = reviewTarget(
    deleteRequest({
      resource: { group: "", version: "v1", resource: "namespaces" },
      name: "team-a",
      namespace: "team-a",
    }),
    object({ name: "team-a" }),
  );
  assert.ok(typeof ns !== "string");
  assert.equal(ns.namespace, undefined);
  assert.equal(shownTarget(ns), "namespaces/team-a");
});

Deno.test("reviewTarget() refuses what could change where a request goes", () => {
  const cases: [string, AdmissionRequest, Record<string, unknown>, RegExp][] = [
    [
      "no cluster",
      deleteRequest(),
      object({ annotations: {} }),
      /no kcp\.io\/cluster annotation/,
    ],
    [
      "a path as cluster",
      deleteRequest(),
      object({ annotations: { "kcp.io/cluster": "root:org" } }),
      /not a logical cluster name: current value is "root:org"/,
    ],
    [
      "a slash in the name",
      deleteRequest({ name: "" }),
      object({ name: "a/../b" }),
      /not a DNS-1123 subdomain/,
    ],
    [
      "no name at all",
      deleteRequest({ name: "" }),
      object({ name: "" }),
      /cannot tell the name/,
    ],
    [
      "a name that differs from the object's",
      deleteRequest({ name: "vpc-b" }),
      object({}),
      /names "vpc-b" but carries the object "vpc-a"/,
    ],
    [
      "a namespace with a slash",
      deleteRequest({ namespace: "a/b" }),
      object({}),
      /not a DNS-1123 label/,
    ],
    ["no uid", deleteRequest(), object({ uid: "" }), /has no metadata\.uid/],
  ];
  for (const [name, req, obj, message] of cases) {
    const target = reviewTarget(req, obj);
    assert.equal(typeof target, "string", name);
    assert.match(target as string, message, name);
  }
});

Deno.test("quote() renders a tenant's string as JSON and cuts a long one", () => {
  assert.equal(quote('a"b'), '"a\\"b"');
  const long = quote("x".repeat(200));
  assert.ok(long.endsWith("... (truncated)"));
  assert.ok(long.length < 120);
});
