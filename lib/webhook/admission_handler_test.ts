import assert from "node:assert/strict";
import {
  FakeDependentSource,
  logCollector,
  requestNodeHandler,
} from "../../testing/fakes.ts";
import {
  type AdmissionRequest,
  deny,
  MAX_REVIEW_BYTES,
} from "./admission_review.ts";
import { parseDependencyRule } from "../rules/mod.ts";
import { KubeApiError } from "../kcp/mod.ts";
import {
  DeletionValidator,
  NOT_INITIALIZED_MESSAGE,
  type Outcome,
  type Verdict,
} from "./deletion_validator.ts";
import {
  createLogger,
  MAX_LOG_LINE_BYTES,
  Semaphore,
  truncateText,
} from "../runtime/mod.ts";
import { RuleRegistry } from "./rule_registry.ts";
import {
  type AdmissionObserver,
  createAdmissionHandler,
  LOGGED_GROUPS,
  LOGGED_MESSAGE_CHARS,
  LOGGED_TEXT_CHARS,
} from "./admission_handler.ts";
import deleteVpc from "./testdata/admission_review_delete_vpc.json" with {
  type: "json",
};

const UID = deleteVpc.request.uid;
const LIVE_UID = deleteVpc.request.oldObject.metadata.uid;

/** A rule: VirtualMachines refer to VPCs at .spec.vpcRef.name. */
function vpcRule() {
  const parsed = parseDependencyRule({
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "vm-vpc" },
    spec: {
      dependent: {
        apiExportName: "compute.example.io",
        group: "compute.example.io",
        version: "v1alpha1",
        kind: "VirtualMachine",
        resource: "virtualmachines",
      },
      dependencies: [{
        apiExportRef: { path: "root:network", name: "net.example.io" },
        group: "net.example.io",
        version: "v1alpha1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpcRef.name" },
      }],
    },
  });
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
  return parsed.rule;
}

/** The fake source of these tests: `items` are the VirtualMachines, the live object is the one under review. */
function fakeSource(items: unknown[] = []): FakeDependentSource {
  return new FakeDependentSource({ virtualmachines: { pages: [items] } }, {
    uid: LIVE_UID,
  });
}

interface AdmissionHarness {
  request: (init: RequestInit, path?: string) => Promise<Response>;
  reviewed: { outcome: Outcome; allowed: boolean; seconds: number }[];
  rejected: number[];
  logs: Record<string, unknown>[];
  source: FakeDependentSource;
}

function admission(
  options: {
    items?: unknown[];
    loaded?: boolean;
    validator?: DeletionValidator;
    bodyBytes?: Semaphore;
  } = {},
): AdmissionHarness {
  const registry = new RuleRegistry();
  if (options.loaded ?? true) {
    registry.replace([{ cluster: "providercluster", rule: vpcRule() }]);
  }
  const source = fakeSource(options.items);
  const reviewed: AdmissionHarness["reviewed"] = [];
  const rejected: number[] = [];
  const observer: AdmissionObserver = {
    reviewed: (verdict: Verdict, seconds: number) =>
      reviewed.push({
        outcome: verdict.outcome,
        allowed: verdict.response.allowed,
        seconds,
      }),
    rejected: (status: number) => rejected.push(status),
  };
  const logs = logCollector();
  // A clock that advances 250 ms per reading.
  let clock = 0;
  const handler = createAdmissionHandler({
    validator: options.validator ?? new DeletionValidator(registry, source),
    log: createLogger({ level: "debug", write: logs.write }),
    observer,
    ...(options.bodyBytes === undefined
      ? {}
      : { bodyBytes: options.bodyBytes, queueTimeoutMs: 20 }),
    now: () => (clock += 250),
  });
  return {
    request: async (init, path = "/validate") =>
      await requestNodeHandler(handler, path, { method: "POST", ...init }),
    reviewed,
    rejected,
    logs: logs.records,
    source,
  };
}

function reviewWith(request: Record<string, unknown>): string {
  return JSON.stringify({
    ...deleteVpc,
    request: { ...deleteVpc.request, ...request },
  });
}

/** Checks an error answer: status, JSON content type, `{error}` matching. */
async function assertError(
  response: Response,
  status: number,
  error: RegExp,
): Promise<void> {
  assert.equal(response.status, status);
  assert.match(response.headers.get("content-type") ?? "", /application\/json/);
  const body = await response.json();
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.match(body.error, error);
}

Deno.test("createAdmissionHandler() POST /validate allows a DELETE nothing refers to and answers an AdmissionReview", async () => {
  const h = admission({
    items: [{
      metadata: { name: "vm-other", namespace: "default" },
      spec: { vpcRef: { name: "vpc-b" } },
    }],
  });
  const response = await h.request({
    headers: { "content-type": "application/json" },
    body: JSON.stringify(deleteVpc),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /application\/json/);
  assert.deepEqual(await response.json(), {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: UID, allowed: true },
  });
  assert.deepEqual(h.reviewed, [{
    outcome: "allowed",
    allowed: true,
    seconds: 0.25,
  }]);
  assert.deepEqual(h.rejected, []);
  assert.deepEqual(h.source.queries, [{
    cluster: "2x5jd0ws3r7t",
    namespace: "default",
    dependent: {
      group: "compute.example.io",
      version: "v1alpha1",
      resource: "virtualmachines",
      kind: "VirtualMachine",
    },
  }]);
  const record = h.logs.find((r) => r.msg === "admission review");
  assert.equal(record?.level, "debug");
  assert.equal(record?.uid, UID);
  assert.equal(record?.resource, "vpcs.net.example.io");
  assert.equal(record?.outcome, "allowed");
  assert.equal(record?.user, "kcp-admin");
  assert.equal(record?.durationMs, 250);
});

Deno.test("createAdmissionHandler() POST /validate denies a referenced object with HTTP 200 and a 409 status", async () => {
  const h = admission({
    items: [{
      metadata: { name: "vm-1", namespace: "default" },
      spec: { vpcRef: { name: "vpc-a" } },
    }],
  });
  const response = await h.request({ body: JSON.stringify(deleteVpc) });
  assert.equal(response.status, 200);
  const review = await response.json();
  assert.equal(review.apiVersion, "admission.k8s.io/v1");
  assert.equal(review.kind, "AdmissionReview");
  assert.equal(review.response.uid, UID);
  assert.equal(review.response.allowed, false);
  assert.equal(review.response.status.code, 409);
  assert.equal(review.response.status.reason, "Conflict");
  assert.match(
    review.response.status.message,
    /cannot delete vpcs\/vpc-a: still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\)/,
  );
  assert.deepEqual(h.reviewed.map((r) => [r.outcome, r.allowed]), [[
    "denied_referenced",
    false,
  ]]);
  const record = h.logs.find((r) => r.msg === "admission review denied");
  assert.equal(record?.level, "info");
  assert.match(String(record?.message), /still referenced by/);
});

Deno.test("createAdmissionHandler() logs a denial caused by a missing read grant at warn, naming the permission", async () => {
  // kcp refuses the webhook's LIST of the dependent type.
  const forbidden = new FakeDependentSource({
    virtualmachines: { error: new KubeApiError("forbidden", { status: 403 }) },
  }, { uid: LIVE_UID });
  const registry = new RuleRegistry();
  registry.replace([{ cluster: "providercluster", rule: vpcRule() }]);
  const h = admission({
    validator: new DeletionValidator(registry, forbidden),
  });
  const response = await h.request({ body: JSON.stringify(deleteVpc) });
  const review = await response.json();
  assert.equal(review.response.allowed, false);
  assert.equal(review.response.status.code, 503);
  const record = h.logs.find((r) =>
    r.msg === "admission review denied: the webhook may not read a type"
  );
  assert.equal(record?.level, "warn");
  assert.deepEqual(record?.forbidden, {
    verb: "list",
    group: "compute.example.io",
    resource: "virtualmachines",
  });
  assert.equal(
    h.logs.some((r) => r.msg === "admission review denied"),
    false,
  );
});

Deno.test("createAdmissionHandler() POST /validate denies with 503 while the rules are not loaded", async () => {
  const h = admission({ loaded: false });
  const response = await h.request({ body: JSON.stringify(deleteVpc) });
  assert.equal(response.status, 200);
  const review = await response.json();
  assert.equal(review.response.allowed, false);
  assert.equal(review.response.status.code, 503);
  assert.equal(review.response.status.message, NOT_INITIALIZED_MESSAGE);
  assert.deepEqual(h.reviewed.map((r) => r.outcome), ["denied_not_ready"]);
  assert.deepEqual(h.source.queries, []);
});

Deno.test("createAdmissionHandler() POST /validate allows a non-DELETE without listing or logging it", async () => {
  const h = admission();
  const response = await h.request({
    body: reviewWith({ operation: "CREATE", object: {}, oldObject: null }),
  });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: UID, allowed: true },
  });
  assert.deepEqual(h.reviewed.map((r) => r.outcome), ["allowed"]);
  assert.deepEqual(h.source.queries, []);
  assert.equal(
    h.logs.some((r) => String(r.msg).startsWith("admission")),
    false,
  );
});

const MALFORMED: [string, BodyInit, RegExp][] = [
  ["not JSON", "{nope", /body is not JSON/],
  ["null", "null", /body must be a JSON object, not null/],
  ["an array", "[]", /body must be a JSON object, not an array/],
  ["an empty body", "", /body is empty/],
  [
    "a wrong apiVersion",
    JSON.stringify({ ...deleteVpc, apiVersion: "admission.k8s.io/v1beta1" }),
    /apiVersion admission\.k8s\.io\/v1beta1 is not supported/,
  ],
  [
    "no request",
    JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
    }),
    /request is missing/,
  ],
  ["no uid", reviewWith({ uid: undefined }), /request\.uid is missing/],
  [
    "binary bytes",
    new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0xc3]),
    /not valid UTF-8/,
  ],
];

for (const [what, body, error] of MALFORMED) {
  Deno.test(`createAdmissionHandler() POST /validate answers 400 with a JSON error for ${what}`, async () => {
    const h = admission();
    const response = await h.request({ body });
    await assertError(response, 400, error);
    assert.deepEqual(h.rejected, [400]);
    assert.deepEqual(h.reviewed, []);
    const record = h.logs.find((r) =>
      r.msg === "rejected malformed admission review"
    );
    assert.equal(record?.status, 400);
  });
}

Deno.test("createAdmissionHandler() logs one malformed review per interval, counting the ones it held back", async () => {
  const h = admission();
  for (let i = 0; i < 50; i++) await h.request({ body: "{nope" });
  assert.equal(h.rejected.length, 50);
  const records = h.logs.filter((r) =>
    r.msg === "rejected malformed admission review"
  );
  // The clock advances 250 ms a reading: 50 rejects span well under 60 s,
  // so at most 6 intervals of 10 s.
  assert.ok(records.length >= 2 && records.length <= 6, `${records.length}`);
  assert.equal(records[0]?.suppressedSinceLast, 0);
});

Deno.test("createAdmissionHandler() logs a delete let through by skip-protection at info, with who, where and what", async () => {
  const h = admission();
  const oldObject = structuredClone(deleteVpc.request.oldObject) as {
    metadata: { annotations: Record<string, string> };
  };
  oldObject.metadata
    .annotations["dependencies.opendefense.cloud/skip-protection"] = "true";
  const response = await h.request({ body: reviewWith({ oldObject }) });
  assert.equal((await response.json()).response.allowed, true);
  const record = h.logs.find((r) =>
    r.msg ===
      "delete allowed by the dependencies.opendefense.cloud/skip-protection annotation"
  );
  assert.equal(record?.level, "info");
  assert.equal(record?.user, deleteVpc.request.userInfo.username);
  assert.deepEqual(record?.groups, deleteVpc.request.userInfo.groups);
  assert.equal(
    record?.workspace,
    deleteVpc.request.oldObject.metadata.annotations["kcp.io/cluster"],
  );
  assert.equal(record?.resource, "vpcs.net.example.io");
  assert.equal(record?.name, "vpc-a");
  assert.equal(record?.outcome, "allowed_skip");
});

Deno.test("createAdmissionHandler() logs a denial of a hostile review in a short line: groups counted, strings cut", async () => {
  const long = (c: string) => c.repeat(100_000);
  const h = admission();
  const groups = Array.from({ length: 100_000 }, (_, i) => `g${i}`);
  groups[1] = long("g");
  const oldObject = structuredClone(deleteVpc.request.oldObject);
  oldObject.metadata.name = long("n");
  const response = await h.request({
    body: reviewWith({
      uid: long("u"),
      name: long("n"),
      namespace: long("s"),
      userInfo: { username: `alice\n${long("a")}`, groups },
      oldObject,
    }),
  });
  assert.equal((await response.json()).response.allowed, false);
  const record = h.logs.find((r) => r.msg === "admission review denied");
  assert.ok(record);
  const size = JSON.stringify(record).length;
  assert.ok(size < 4_096, `${size} characters`);
  assert.equal(record.uid, truncateText(long("u"), LOGGED_TEXT_CHARS));
  assert.equal(record.name, truncateText(long("n"), LOGGED_TEXT_CHARS));
  assert.equal(record.namespace, truncateText(long("s"), LOGGED_TEXT_CHARS));
  assert.equal(
    record.user,
    truncateText(`alice\n${long("a")}`, LOGGED_TEXT_CHARS),
  );
  assert.deepEqual(record.groups, [
    "g0",
    truncateText(long("g"), LOGGED_TEXT_CHARS),
    "g2",
    "g3",
    "g4",
  ]);
  assert.equal(LOGGED_GROUPS, 5);
  assert.equal(record.groupCount, 100_000);
});

Deno.test("createAdmissionHandler() cuts a long denial message in its log line, not in the answer", async () => {
  const message = `cannot delete vpcs/vpc-a: ${"m".repeat(100_000)}`;
  const denying = {
    validate(request: AdmissionRequest): Promise<Verdict> {
      return Promise.resolve({
        response: deny(request.uid, { code: 409, reason: "Conflict", message }),
        outcome: "denied_referenced",
      });
    },
  } as unknown as DeletionValidator;
  const h = admission({ validator: denying });
  const response = await h.request({ body: JSON.stringify(deleteVpc) });
  assert.equal((await response.json()).response.status.message, message);
  const record = h.logs.find((r) => r.msg === "admission review denied");
  assert.equal(record?.message, truncateText(message, LOGGED_MESSAGE_CHARS));
});

Deno.test("createAdmissionHandler() logs a short review whole, with every group and their count", async () => {
  const h = admission();
  await h.request({ body: JSON.stringify(deleteVpc) });
  const record = h.logs.find((r) => r.msg === "admission review");
  assert.equal(record?.uid, UID);
  assert.equal(record?.name, "vpc-a");
  assert.deepEqual(record?.groups, deleteVpc.request.userInfo.groups);
  assert.equal(record?.groupCount, 2);
});

Deno.test("createAdmissionHandler() cuts the error of a malformed review in its log line", async () => {
  const h = admission();
  const key = "k".repeat(100_000);
  const response = await h.request({
    body: reviewWith({
      userInfo: { username: "u", extra: { [key]: 1 } },
    }),
  });
  assert.equal(response.status, 400);
  const record = h.logs.find((r) =>
    r.msg === "rejected malformed admission review"
  );
  const error = String(record?.error);
  assert.match(error, /^Cannot parse AdmissionReview: invalid request: .*kkk/);
  assert.match(error, /\.\.\.\(\+\d+ chars\)$/);
  assert.ok(error.length <= LOGGED_MESSAGE_CHARS + 20, `${error.length}`);
  assert.ok(JSON.stringify(record).length < MAX_LOG_LINE_BYTES);
});

Deno.test("createAdmissionHandler() answers 503 with Retry-After while the body bytes in flight are taken, and reads nothing", async () => {
  const bodyBytes = new Semaphore(1024);
  const held = (await bodyBytes.acquire(1024, { timeoutMs: 0 }))!;
  const h = admission({ bodyBytes });
  const body = JSON.stringify(deleteVpc);
  const response = await h.request({
    body,
    headers: { "content-length": String(body.length) },
  });
  await assertError(response, 503, /busy reading other reviews: retry/);
  assert.equal(response.headers.get("retry-after"), "1");
  assert.deepEqual(h.rejected, [503]);
  assert.deepEqual(h.reviewed, []);
  held();
  const next = await h.request({ body });
  assert.equal(next.status, 200, await next.clone().text());
  assert.equal(
    bodyBytes.used,
    0,
    "the permits come back once the body is parsed",
  );
});

/** A valid review padded with trailing spaces to exactly `size` bytes. */
function paddedReview(size: number): Uint8Array<ArrayBuffer> {
  const text = JSON.stringify(deleteVpc);
  return new TextEncoder().encode(text + " ".repeat(size - text.length));
}

/** A body stream (no content-length) of `bytes` in 512 KiB chunks. */
function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + 512 * 1024));
      offset += 512 * 1024;
    },
  });
}

Deno.test("createAdmissionHandler() POST /validate answers 413 for a body over 3 MiB with a content-length", async () => {
  const h = admission();
  const body = paddedReview(MAX_REVIEW_BYTES + 1);
  const response = await h.request({
    headers: { "content-length": String(body.length) },
    body,
  });
  await assertError(response, 413, new RegExp(String(MAX_REVIEW_BYTES)));
  assert.deepEqual(h.rejected, [413]);
  assert.deepEqual(h.reviewed, []);
});

Deno.test("createAdmissionHandler() POST /validate answers 413 for a chunked body over 3 MiB", async () => {
  const h = admission();
  const response = await h.request({
    body: chunked(paddedReview(MAX_REVIEW_BYTES + 1)),
  });
  await assertError(response, 413, new RegExp(String(MAX_REVIEW_BYTES)));
  assert.deepEqual(h.rejected, [413]);
  assert.deepEqual(h.reviewed, []);
});

Deno.test("createAdmissionHandler() POST /validate answers 413 for a body over 3 MiB with a content-length that understates it", async () => {
  const h = admission();
  const response = await h.request({
    headers: { "content-length": "100" },
    body: paddedReview(MAX_REVIEW_BYTES + 1),
  });
  await assertError(response, 413, new RegExp(String(MAX_REVIEW_BYTES)));
  assert.deepEqual(h.rejected, [413]);
});

Deno.test("createAdmissionHandler() POST /validate accepts a body of exactly 3 MiB, with or without a content-length", async () => {
  const body = paddedReview(MAX_REVIEW_BYTES);
  for (
    const init of [
      { headers: { "content-length": String(body.length) }, body },
      { body: chunked(body) },
    ] satisfies RequestInit[]
  ) {
    const h = admission();
    const response = await h.request(init);
    assert.equal(response.status, 200);
    assert.equal((await response.json()).response.allowed, true);
    assert.deepEqual(h.rejected, []);
  }
});

Deno.test("createAdmissionHandler() answers 404 JSON for GET /validate and unknown paths", async () => {
  const h = admission();
  await assertError(
    await h.request({ method: "GET" }),
    404,
    /^No such endpoint: GET \/validate$/,
  );
  await assertError(
    await h.request({ body: "{}" }, "/mutate"),
    404,
    /^No such endpoint: POST \/mutate$/,
  );
  assert.deepEqual(h.reviewed, []);
});

Deno.test("createAdmissionHandler() answers 500 JSON when the validator throws", async () => {
  const throwing = {
    validate(_request: AdmissionRequest): Promise<Verdict> {
      return Promise.reject(new Error("registry exploded"));
    },
  } as unknown as DeletionValidator;
  const h = admission({ validator: throwing });
  const response = await h.request({ body: JSON.stringify(deleteVpc) });
  await assertError(response, 500, /Internal error while reviewing/);
  assert.deepEqual(h.reviewed, []);
  const record = h.logs.find((r) => r.msg === "admission request failed");
  assert.equal(record?.level, "error");
  assert.match(JSON.stringify(record?.error), /registry exploded/);
});

Deno.test("createAdmissionHandler() POST /validate/<provider path> applies only the rules about that provider", async () => {
  const referencing = [{
    metadata: { name: "vm-1", namespace: "default" },
    spec: { vpcRef: { name: "vpc-a" } },
  }];
  // The rule is about root:network's export of vpcs.
  const own = admission({ items: referencing });
  const denied = await (await own.request(
    { body: JSON.stringify(deleteVpc) },
    "/validate/root:network",
  )).json();
  assert.equal(denied.response.allowed, false);
  assert.match(denied.response.status.message, /VirtualMachine\/vm-1/);
  // The log names the provider's path beside the consumer's cluster.
  const logged = own.logs.find((r) => r.msg === "admission review denied");
  assert.equal(logged?.provider, "root:network");

  const other = admission({ items: referencing });
  const allowed = await (await other.request(
    { body: JSON.stringify(deleteVpc) },
    "/validate/root:other-network",
  )).json();
  assert.deepEqual(allowed.response, { uid: UID, allowed: true });
  // Nothing to check for another provider's type: nothing read.
  assert.deepEqual(other.source.queries, []);
  assert.deepEqual(other.source.objectQueries, []);

  // Percent-encoded colons name the same workspace.
  const encoded = admission({ items: referencing });
  const again = await (await encoded.request(
    { body: JSON.stringify(deleteVpc) },
    "/validate/root%3Anetwork",
  )).json();
  assert.equal(again.response.allowed, false);
});

Deno.test("createAdmissionHandler() answers 404 for a provider segment that is no workspace path", async () => {
  for (const path of ["/validate/Root", "/validate/root:", "/validate/a%2Fb"]) {
    const h = admission();
    await assertError(
      await h.request({ body: JSON.stringify(deleteVpc) }, path),
      404,
      /No such endpoint: POST .*: the last segment must be a workspace path/,
    );
    assert.deepEqual(h.reviewed, [], path);
  }
  const h = admission();
  await assertError(
    await h.request({ body: JSON.stringify(deleteVpc) }, "/validate/a/b"),
    404,
    /No such endpoint/,
  );
});

Deno.test("createAdmissionHandler() routes by method and path, ignoring the query", async () => {
  const cases: { method: string; path: string; status: number }[] = [
    { method: "POST", path: "/validate", status: 200 },
    { method: "POST", path: "/validate?timeout=10s", status: 200 },
    { method: "POST", path: "/validate/root:network", status: 200 },
    { method: "POST", path: "/validate/root:network?timeout=10s", status: 200 },
    { method: "GET", path: "/validate", status: 404 },
    { method: "PUT", path: "/validate", status: 404 },
    { method: "POST", path: "/validate/", status: 404 },
    { method: "POST", path: "/validatex", status: 404 },
    { method: "POST", path: "/validate/root:network/x", status: 404 },
    { method: "POST", path: "/", status: 404 },
  ];
  for (const { method, path, status } of cases) {
    const h = admission();
    const response = await h.request({
      method,
      ...(method === "GET" ? {} : { body: JSON.stringify(deleteVpc) }),
    }, path);
    assert.equal(response.status, status, `${method} ${path}`);
    const body = await response.json();
    if (status === 200) {
      assert.equal(body.response.uid, UID, `${method} ${path}`);
      assert.equal(h.reviewed.length, 1, `${method} ${path}`);
    } else {
      assert.match(body.error, /^No such endpoint: /, `${method} ${path}`);
      assert.deepEqual(h.reviewed, [], `${method} ${path}`);
    }
  }
});
