import assert from "node:assert/strict";
import {
  type AdmissionRequest,
  allow,
  deny,
  MAX_EXTRA_KEYS,
  MAX_EXTRA_VALUES,
  MAX_REVIEW_BYTES,
  objectOf,
  parseAdmissionReview,
  type ParseResult,
  slimRequest,
  toReview,
} from "./admission_review.ts";
import deleteVpc from "./testdata/admission_review_delete_vpc.json" with {
  type: "json",
};

const UID = deleteVpc.request.uid;

/** The request of a minimal valid review: only the required fields. */
const MINIMAL_REQUEST = {
  uid: "u-1",
  kind: { group: "", version: "v1", kind: "ConfigMap" },
  resource: { group: "", version: "v1", resource: "configmaps" },
  operation: "DELETE",
};

/** `text` encoded as UTF-8: a request body as the admission app reads it. */
function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** A review body with `request` replaced. */
function review(request: unknown): Uint8Array {
  return utf8(JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request,
  }));
}

/** The request of a successful parse; fails the test otherwise. */
function parsedRequest(result: ParseResult): AdmissionRequest {
  assert.ok(result.ok, result.ok ? "" : result.message);
  return result.request;
}

Deno.test("parseAdmissionReview() parses a kcp DELETE review with every field", () => {
  const text = JSON.stringify(deleteVpc);
  const want: AdmissionRequest = {
    uid: "6a0f2c8e-3b1d-4e7a-9c55-0d3f1b2a4e61",
    kind: { group: "net.example.io", version: "v1alpha1", kind: "VPC" },
    resource: {
      group: "net.example.io",
      version: "v1alpha1",
      resource: "vpcs",
    },
    requestKind: { group: "net.example.io", version: "v1alpha1", kind: "VPC" },
    requestResource: {
      group: "net.example.io",
      version: "v1alpha1",
      resource: "vpcs",
    },
    name: "vpc-a",
    namespace: "default",
    operation: "DELETE",
    userInfo: {
      username: "kcp-admin",
      groups: ["system:kcp:admin", "system:authenticated"],
      extra: { "authentication.kcp.io/scopes": ["cluster:2x5jd0ws3r7t"] },
    },
    object: null,
    oldObject: {
      apiVersion: "net.example.io/v1alpha1",
      kind: "VPC",
      metadata: {
        name: "vpc-a",
        namespace: "default",
        uid: "0b9c5a1e-7d2f-4c3b-8e6a-1f4d2c9b7a30",
        resourceVersion: "1234",
        creationTimestamp: "2025-11-20T10:00:00Z",
        annotations: { "kcp.io/cluster": "2x5jd0ws3r7t" },
      },
      spec: { cidr: "10.0.0.0/16" },
    },
    dryRun: false,
    options: {
      kind: "DeleteOptions",
      apiVersion: "meta.k8s.io/v1",
      propagationPolicy: "Background",
    },
  };
  const inputs: [string, Uint8Array][] = [
    ["bytes", utf8(text)],
    ["bytes with BOM", utf8(`\uFEFF${text}`)],
  ];
  for (const [label, body] of inputs) {
    assert.deepEqual(
      parseAdmissionReview(body),
      { ok: true, request: want },
      label,
    );
  }
});

Deno.test("parseAdmissionReview() reads name, namespace and dryRun as sent or defaults name to empty", () => {
  const { name: _name, ...withoutName } = deleteVpc.request;
  const { namespace: _namespace, ...withoutNamespace } = deleteVpc.request;
  const cases: {
    label: string;
    request: unknown;
    want: Pick<AdmissionRequest, "name" | "namespace" | "dryRun">;
  }[] = [
    {
      label: "DELETECOLLECTION item with empty name",
      request: { ...deleteVpc.request, name: "" },
      want: { name: "", namespace: "default", dryRun: false },
    },
    {
      label: "no name key",
      request: withoutName,
      want: { name: "", namespace: "default", dryRun: false },
    },
    {
      label: "dry run",
      request: { ...deleteVpc.request, dryRun: true },
      want: { name: "vpc-a", namespace: "default", dryRun: true },
    },
    {
      label: "cluster-scoped with empty namespace",
      request: { ...deleteVpc.request, namespace: "" },
      want: { name: "vpc-a", namespace: "", dryRun: false },
    },
    {
      label: "cluster-scoped without namespace key",
      request: withoutNamespace,
      want: { name: "vpc-a", namespace: undefined, dryRun: false },
    },
  ];
  for (const { label, request, want } of cases) {
    const got = parsedRequest(parseAdmissionReview(review(request)));
    assert.deepEqual(
      { name: got.name, namespace: got.namespace, dryRun: got.dryRun },
      want,
      label,
    );
  }
});

Deno.test("parseAdmissionReview() accepts a review with only the required fields", () => {
  const got = parsedRequest(parseAdmissionReview(review(MINIMAL_REQUEST)));
  assert.deepEqual(got, { ...MINIMAL_REQUEST, name: "" });
  assert.ok(!("dryRun" in got));
  assert.ok(!("oldObject" in got));
});

Deno.test("parseAdmissionReview() tolerates and drops unknown fields", () => {
  const body = JSON.stringify({
    ...deleteVpc,
    futureTopLevel: { a: 1 },
    request: {
      ...deleteVpc.request,
      futureField: "x",
      kind: { ...deleteVpc.request.kind, extra: true },
      userInfo: { ...deleteVpc.request.userInfo, newThing: [1, 2] },
    },
  });
  const got = parsedRequest(parseAdmissionReview(utf8(body)));
  assert.ok(!("futureField" in got));
  assert.deepEqual(got.kind, deleteVpc.request.kind);
  assert.deepEqual(got.userInfo, deleteVpc.request.userInfo);
  assert.equal(got.name, "vpc-a");
});

Deno.test("parseAdmissionReview() rejects malformed bodies with 400 and a message naming the problem", () => {
  const { uid: _uid, ...withoutUid } = deleteVpc.request;
  const { resource: _resource, ...withoutResource } = deleteVpc.request;
  const cases: {
    label: string;
    body: Uint8Array | string;
    message: RegExp;
    uid?: string;
  }[] = [
    { label: "empty", body: "", message: /body is empty/ },
    { label: "blank", body: " \n\t", message: /body is empty/ },
    {
      label: "invalid UTF-8",
      body: new Uint8Array([0xff, 0xfe, 0x00]),
      message: /body is not valid UTF-8/,
    },
    {
      label: "truncated JSON",
      body: "{",
      message: /body is not JSON: .*JSON/,
    },
    {
      label: "null",
      body: "null",
      message: /must be a JSON object, not null$/,
    },
    {
      label: "array",
      body: "[]",
      message: /must be a JSON object, not an array: current value is \[\]/,
    },
    {
      label: "number",
      body: "42",
      message: /must be a JSON object, not a number: current value is 42/,
    },
    {
      label: "string",
      body: '"x"',
      message: /must be a JSON object, not a string: current value is "x"/,
    },
    {
      label: "v1beta1",
      body: JSON.stringify({
        ...deleteVpc,
        apiVersion: "admission.k8s.io/v1beta1",
      }),
      message: /admission\.k8s\.io\/v1beta1 is not supported/,
      uid: UID,
    },
    {
      label: "other apiVersion",
      body: JSON.stringify({ ...deleteVpc, apiVersion: "example.io/v2" }),
      message:
        /apiVersion must be "admission\.k8s\.io\/v1": current value is "example\.io\/v2"/,
      uid: UID,
    },
    {
      label: "no apiVersion",
      body: JSON.stringify({ kind: "AdmissionReview" }),
      message: /apiVersion is missing/,
    },
    {
      label: "kind Foo",
      body: JSON.stringify({ ...deleteVpc, kind: "Foo" }),
      message: /kind must be "AdmissionReview": current value is "Foo"/,
      uid: UID,
    },
    {
      label: "no kind",
      body: JSON.stringify({ apiVersion: "admission.k8s.io/v1" }),
      message: /kind is missing/,
    },
    {
      label: "no request",
      body: JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: { uid: "x", allowed: true },
      }),
      message: /request is missing/,
    },
    {
      label: "request is an array",
      body: review([deleteVpc.request]),
      message:
        /request must be a JSON object, not an array: current value is \[\{.{50,} \(truncated\)$/,
    },
    {
      label: "request without uid",
      body: review(withoutUid),
      message: /request\.uid is missing/,
    },
    {
      label: "request with empty uid",
      body: review({ ...deleteVpc.request, uid: "" }),
      message: /request\.uid is empty/,
    },
    {
      label: "request with numeric uid",
      body: review({ ...deleteVpc.request, uid: 7 }),
      message: /request\.uid must be a string: current value is 7/,
    },
    {
      label: "request without resource",
      body: review(withoutResource),
      message: /invalid request: request\.resource: is required$/,
      uid: UID,
    },
    {
      label: "resource without resource name",
      body: review({
        ...deleteVpc.request,
        resource: { group: "net.example.io", version: "v1alpha1" },
      }),
      message: /request\.resource\.resource: is required$/,
      uid: UID,
    },
    {
      label: "unknown operation",
      body: review({ ...deleteVpc.request, operation: "DELETECOLLECTION" }),
      message:
        /request\.operation: must be one of 'CREATE', 'UPDATE', 'DELETE', 'CONNECT': current value is 'DELETECOLLECTION'$/,
      uid: UID,
    },
    {
      label: "group not a string",
      body: review({
        ...deleteVpc.request,
        userInfo: { groups: ["a", 5] },
      }),
      message:
        /request\.userInfo\.groups\[1\]: must be a string: current value is 5$/,
      uid: UID,
    },
    {
      label: "dryRun not a boolean",
      body: review({ ...deleteVpc.request, dryRun: "false" }),
      message: /request\.dryRun: must be a boolean: current value is 'false'$/,
      uid: UID,
    },
  ];
  for (const { label, body, message, uid } of cases) {
    const got = parseAdmissionReview(
      typeof body === "string" ? utf8(body) : body,
    );
    assert.ok(!got.ok, label);
    assert.equal(got.status, 400, label);
    assert.match(got.message, /^Cannot parse AdmissionReview: /, label);
    assert.match(got.message, message, label);
    assert.doesNotMatch(got.message, /\.$/, label);
    assert.equal(got.uid, uid, label);
    assert.equal("uid" in got, uid !== undefined, label);
  }
});

Deno.test("parseAdmissionReview() reports the first three schema issues and counts the rest", () => {
  const got = parseAdmissionReview(review({
    uid: "u-2",
    kind: 1,
    resource: 2,
    operation: 3,
    name: 4,
    dryRun: 5,
  }));
  assert.ok(!got.ok);
  assert.equal(got.uid, "u-2");
  const issues = got.message.replace(/^.*invalid request: /, "").split("; ");
  assert.equal(issues.length, 3, got.message);
  assert.match(got.message, /\(and 2 more\)$/);
  assert.match(
    got.message,
    /invalid request: request\.kind: must be an object: current value is 1; request\.resource: must be an object: current value is 2; /,
  );
});

Deno.test("parseAdmissionReview() parses a padded review at and over MAX_REVIEW_BYTES: the admission app bounds the body", () => {
  const text = JSON.stringify(deleteVpc);
  for (const size of [MAX_REVIEW_BYTES, MAX_REVIEW_BYTES + 1]) {
    const body = utf8(text + " ".repeat(size - text.length));
    assert.equal(body.byteLength, size);
    assert.equal(parsedRequest(parseAdmissionReview(body)).name, "vpc-a");
  }
});

Deno.test("allow() builds an allowed response with warnings only when given", () => {
  const warnings = ["VPC vpc-a is still referenced"];
  const cases: [string, ReturnType<typeof allow>, unknown][] = [
    ["no options", allow("u-1"), { uid: "u-1", allowed: true }],
    ["no warnings", allow("u-1", { warnings: [] }), {
      uid: "u-1",
      allowed: true,
    }],
    [
      "warnings",
      allow("u-1", { warnings }),
      {
        uid: "u-1",
        allowed: true,
        warnings: ["VPC vpc-a is still referenced"],
      },
    ],
  ];
  for (const [label, got, want] of cases) assert.deepEqual(got, want, label);
  const got = allow("u-1", { warnings });
  assert.notEqual(got.warnings, warnings, "warnings are copied");
});

Deno.test("deny() builds a denied response with the given status", () => {
  assert.deepEqual(
    deny("u-1", {
      code: 409,
      reason: "Conflict",
      message: "VPC vpc-a is referenced by VirtualMachine default/vm-1",
    }),
    {
      uid: "u-1",
      allowed: false,
      status: {
        code: 409,
        reason: "Conflict",
        message: "VPC vpc-a is referenced by VirtualMachine default/vm-1",
      },
    },
  );
});

Deno.test("toReview() wraps a response in an admission.k8s.io/v1 AdmissionReview", () => {
  const denied = toReview(deny("u-1", {
    code: 409,
    reason: "Conflict",
    message: "VPC vpc-a is referenced by VirtualMachine default/vm-1",
  }));
  assert.deepEqual(denied, {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: {
      uid: "u-1",
      allowed: false,
      status: {
        code: 409,
        reason: "Conflict",
        message: "VPC vpc-a is referenced by VirtualMachine default/vm-1",
      },
    },
  });
  assert.equal(
    JSON.stringify(denied),
    '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":false,"status":{"code":409,"reason":"Conflict","message":"VPC vpc-a is referenced by VirtualMachine default/vm-1"}}}',
  );
  assert.deepEqual(toReview(allow("u-2")), {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: "u-2", allowed: true },
  });
});

Deno.test("objectOf() picks oldObject, falls back to object and ignores non-objects", () => {
  const base = parsedRequest(parseAdmissionReview(review(MINIMAL_REQUEST)));
  const stored = { metadata: { name: "stored" } };
  const sent = { metadata: { name: "sent" } };
  const cases: [string, Partial<AdmissionRequest>, unknown][] = [
    ["oldObject over object", { oldObject: stored, object: sent }, stored],
    ["oldObject with object null", { oldObject: stored, object: null }, stored],
    ["object when oldObject is null", { oldObject: null, object: sent }, sent],
    ["object when oldObject is absent", { object: sent }, sent],
    [
      "object when oldObject is an array",
      { oldObject: [stored], object: sent },
      sent,
    ],
    [
      "object when oldObject is a string",
      { oldObject: "x", object: sent },
      sent,
    ],
    ["neither present", {}, undefined],
    ["both null", { oldObject: null, object: null }, undefined],
    ["array and string", { oldObject: [], object: "x" }, undefined],
    ["numbers", { oldObject: 1, object: 2 }, undefined],
  ];
  for (const [label, fields, want] of cases) {
    assert.equal(objectOf({ ...base, ...fields }), want, label);
  }
  const fromFixture = objectOf(
    parsedRequest(parseAdmissionReview(utf8(JSON.stringify(deleteVpc)))),
  );
  assert.deepEqual(fromFixture, deleteVpc.request.oldObject);
});

// ---------------------------------------------------------------------------
// Bounds on userInfo.extra

/** `count` keys `k0`..., each with `each` values. */
function extraOf(count: number, each = 1): Record<string, string[]> {
  const extra: Record<string, string[]> = {};
  for (let i = 0; i < count; i++) extra[`k${i}`] = Array(each).fill("v");
  return extra;
}

Deno.test("parseAdmissionReview() accepts userInfo.extra up to its limits", () => {
  const request = parsedRequest(parseAdmissionReview(review({
    ...MINIMAL_REQUEST,
    userInfo: { username: "alice", extra: extraOf(MAX_EXTRA_KEYS, 8) },
  })));
  assert.equal(Object.keys(request.userInfo?.extra ?? {}).length, 128);
});

Deno.test("parseAdmissionReview() answers 400 for userInfo.extra with too many keys, before validating them", () => {
  const result = parseAdmissionReview(review({
    ...MINIMAL_REQUEST,
    userInfo: { extra: extraOf(100_000) },
  }));
  assert.deepEqual(result, {
    ok: false,
    status: 400,
    uid: "u-1",
    message:
      `Cannot parse AdmissionReview: request.userInfo.extra has 100000 keys, more than the limit of ${MAX_EXTRA_KEYS}`,
  });
});

Deno.test("parseAdmissionReview() answers 400 for userInfo.extra with too many values", () => {
  const result = parseAdmissionReview(review({
    ...MINIMAL_REQUEST,
    userInfo: { extra: extraOf(2, MAX_EXTRA_VALUES) },
  }));
  assert.equal(result.ok, false);
  assert.match(
    result.ok ? "" : result.message,
    /request\.userInfo\.extra has 2048 values, more than the limit of 1024/,
  );
});

// ---------------------------------------------------------------------------
// slimRequest()

Deno.test("slimRequest() keeps of the objects only name, namespace, uid and the named annotations", () => {
  const request = parsedRequest(
    parseAdmissionReview(utf8(JSON.stringify(deleteVpc))),
  );
  const slim = slimRequest(request, { annotations: ["kcp.io/cluster"] });
  assert.deepEqual(slim.oldObject, {
    apiVersion: "net.example.io/v1alpha1",
    kind: "VPC",
    metadata: {
      name: "vpc-a",
      namespace: "default",
      uid: deleteVpc.request.oldObject.metadata.uid,
      annotations: {
        "kcp.io/cluster": deleteVpc.request.oldObject.metadata
          .annotations["kcp.io/cluster"],
      },
    },
  });
  assert.equal(slim.object, null);
  assert.deepEqual({ ...slim, oldObject: undefined }, {
    ...request,
    oldObject: undefined,
  });
  assert.notEqual(
    (request.oldObject as { spec?: unknown }).spec,
    undefined,
    "the parsed request is left as it was",
  );
});
