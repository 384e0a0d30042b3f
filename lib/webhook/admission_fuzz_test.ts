/**
 * Fuzz test of the admission handler in process: `createAdmissionHandler` over a
 * real DeletionValidator (a VirtualMachine -> VPC rule) and a real
 * FrontProxyDependentSource reading a fake kcp, whose VirtualMachine list
 * holds a VM that refers to `vpc-a` and whose read of the object under
 * review answers the uid each case chooses.
 *
 * Six seeded families of 400 generated inputs each. Invariants over every
 * case: never a 5xx; every 200 is an `admission.k8s.io/v1` AdmissionReview
 * echoing the request's uid; kcp is only ever asked below
 * `/clusters/<logical cluster name>/`, in one of the two expected shapes; no
 * answer names a dependent unless the fake confirmed the object's uid in that
 * case.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { MAX_REVIEW_BYTES } from "./admission_review.ts";
import {
  DeletionValidator,
  UNCONFIRMED_MESSAGE,
} from "./deletion_validator.ts";
import { FrontProxyDependentSource } from "./dependent_lister.ts";
import { KubeClient } from "../kcp/mod.ts";
import { createLogger, isRecord } from "../runtime/mod.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { createAdmissionHandler } from "./admission_handler.ts";
import {
  connection,
  dependency,
  FakeApi,
  json,
  requestNodeHandler,
  type SeenRequest,
  status,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  isLabel,
  isSubdomain,
  isSubdomainOfLabels,
  LABEL,
} from "../../testing/dns_oracle.ts";

/** Fixed, so that a failure is reproducible; family i runs with SEED + i. */
const SEED = 20261124;
const RUNS = 400;

const CLUSTER = "kcp.io/cluster";
const SKIP = "dependencies.opendefense.cloud/skip-protection";
/** The VirtualMachine that refers to `vpc-a`. */
const BLOCKER = "vm-blocker";
/** A VirtualMachine that refers to `vpc-b`. */
const BYSTANDER = "vm-bystander";

// ---------------------------------------------------------------------------
// Name rules, written out independently of the code under test

// (isLabel, isSubdomain, isSubdomainOfLabels: testing/dns_oracle.ts)

// ---------------------------------------------------------------------------
// The fake kcp

/** How the fake answers the read of the object under review in one case. */
type Live =
  | { kind: "uid"; uid: string }
  | { kind: "missing" }
  | { kind: "no-uid" };

/** What the fake did in the current case. */
interface CaseLog {
  live: Live;
  /** The uid each object read was answered with (`undefined`: none, or 404). */
  reads: (string | undefined)[];
  /** The path of each object read. */
  readPaths: string[];
}

/** A VirtualMachine named `name` in `namespace`, referring to VPC `vpc`. */
function vm(name: string, namespace: string, vpc: string): unknown {
  return {
    apiVersion: `${VIRTUAL_MACHINES.group}/${VIRTUAL_MACHINES.version}`,
    kind: "VirtualMachine",
    metadata: { name, namespace, uid: `uid-${name}` },
    spec: { vpcRef: { name: vpc } },
  };
}

const NAMESPACE_IN_PATH = /\/namespaces\/([^/]+)\//;

/** Answers lists with the two VMs, object reads as `current.live` says. */
function kcpHandler(current: () => CaseLog) {
  return (request: SeenRequest): Response => {
    const log = current();
    if (request.url.searchParams.has("limit")) {
      const raw = NAMESPACE_IN_PATH.exec(request.url.pathname)?.[1];
      const namespace = raw === undefined ? "default" : decodeURIComponent(raw);
      return json({
        apiVersion: `${VIRTUAL_MACHINES.group}/${VIRTUAL_MACHINES.version}`,
        kind: "VirtualMachineList",
        metadata: { resourceVersion: "7" },
        items: [
          vm(BYSTANDER, namespace, "vpc-b"),
          vm(BLOCKER, namespace, "vpc-a"),
        ],
      });
    }
    if (WORKSPACE_SHAPE.test(request.url.pathname)) {
      // A denial asks whether the workspace is being deleted: it is not.
      return json({ metadata: { name: "cluster" } });
    }
    log.readPaths.push(request.url.pathname);
    const name = decodeURIComponent(
      request.url.pathname.split("/").at(-1) ?? "",
    );
    switch (log.live.kind) {
      case "missing":
        log.reads.push(undefined);
        return json(
          status(
            404,
            "NotFound",
            `vpcs.network.example.com "${name}" not found`,
          ),
          404,
        );
      case "no-uid":
        log.reads.push(undefined);
        return json({ metadata: { name } });
      case "uid":
        log.reads.push(log.live.uid);
        return json({ metadata: { name, uid: log.live.uid } });
    }
  };
}

const LIST_SHAPE = new RegExp(
  `^/clusters/(${LABEL})/apis/compute\\.example\\.com/v1alpha1(?:/namespaces/(${LABEL}))?/virtualmachines$`,
);
const READ_SHAPE = new RegExp(
  `^/clusters/(${LABEL})/apis/network\\.example\\.com/v1alpha1(?:/namespaces/(${LABEL}))?/vpcs/(${LABEL}(?:\\.${LABEL})*)$`,
);
const WORKSPACE_SHAPE = new RegExp(
  `^/clusters/(${LABEL})/apis/core\\.kcp\\.io/v1alpha1/logicalclusters/cluster$`,
);

/** Checks that a request to the fake kcp has one of the three expected shapes. */
function assertKcpRequest(seen: SeenRequest, host: string): void {
  const where = `${seen.method} ${seen.url.href}`;
  assert.equal(seen.method, "GET", where);
  assert.equal(seen.url.host, host, where);
  assert.equal(seen.url.hash, "", where);
  const workspace = WORKSPACE_SHAPE.exec(seen.url.pathname);
  if (workspace !== null) {
    assert.ok(isLabel(workspace[1]), where);
    assert.equal(seen.url.search, "", where);
    return;
  }
  const list = LIST_SHAPE.exec(seen.url.pathname);
  const read = READ_SHAPE.exec(seen.url.pathname);
  assert.ok(list !== null || read !== null, `unexpected path: ${where}`);
  const [, cluster, namespace] = (list ?? read)!;
  assert.ok(isLabel(cluster), where);
  assert.ok(namespace === undefined || isLabel(namespace), where);
  if (list !== null) {
    assert.deepEqual([...seen.url.searchParams], [["limit", "10000"]], where);
  } else {
    assert.ok(isSubdomainOfLabels(read![3]), where);
    assert.equal(seen.url.search, "", where);
  }
}

// ---------------------------------------------------------------------------
// Generators

/** Characters and fragments that mean something in a URL, or in its parsing. */
const NASTY = [
  "/",
  "?",
  "#",
  "%",
  ".",
  "..",
  ":",
  "@",
  "\\",
  "&",
  "=",
  "+",
  " ",
  "%2e%2e",
  "%2F",
  "%2f",
  "%00",
  "\r",
  "\n",
  "\r\n",
  "\t",
  "\u0000",
  "\u00e9",
  "\u212a",
  "\uff0f",
  "\u200b",
  "\u2028",
  "\ud83d\ude00",
  "\ud800",
  "A",
  "-",
  "_",
  "*",
  "../",
  "?limit=1",
  "&watch=true",
  "root:org",
  "vpc-a",
  "vpc-b",
  "default",
  "true",
];

const label = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/),
  },
  {
    weight: 1,
    arbitrary: fc.stringMatching(/^[a-z0-9][a-z0-9-]{61}[a-z0-9]$/),
  },
);

const subdomain = fc.array(label, { minLength: 1, maxLength: 4 })
  .map((labels) => labels.join("."))
  .filter((name) => name.length <= 253);

const BOUNDARY = [
  "a".repeat(64),
  `x.${"y".repeat(64)}`,
  `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`,
  "-a",
  "a-",
  "a..b",
  "A",
];

const nasty = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
    { weight: 2, arbitrary: label },
  ),
  { minLength: 1, maxLength: 6 },
).map((parts) => parts.join(""));

/** Mostly valid, sometimes nasty or at a limit. */
function sometimesNasty(valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: valid },
    { weight: 3, arbitrary: nasty },
    { weight: 1, arbitrary: fc.constantFrom(...BOUNDARY, "") },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 10 }) },
  );
}

/** A request uid: never empty, not always tame. */
const requestUid = fc.oneof(
  { weight: 3, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: nasty },
  {
    weight: 1,
    arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1 }) },
);

/** A value of any JSON type. */
const anyJson = fc.jsonValue({ maxDepth: 2 });

/** Any JSON value that is not of the JSON type `type`. */
function notA(
  type: "string" | "object" | "array" | "boolean",
): fc.Arbitrary<unknown> {
  return anyJson.filter((v) => {
    if (type === "object") return !isRecord(v);
    if (type === "array") return !Array.isArray(v);
    if (type === "string") return typeof v !== "string";
    return typeof v !== "boolean";
  });
}

/** `userInfo` as kcp may send it: odd, long, many groups, big `extra` (within the limits). */
const userInfo = fc.record({
  username: fc.oneof(
    fc.constantFrom("alice", "system:admin", ""),
    fc.string({ unit: "grapheme", maxLength: 200 }),
    fc.integer({ min: 1, max: 5_000 }).map((n) => "u".repeat(n)),
  ),
  uid: fc.option(fc.string(), { nil: undefined }),
  groups: fc.option(fc.array(nasty, { maxLength: 30 }), { nil: undefined }),
  extra: fc.option(
    fc.dictionary(
      fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          "__proto__",
          "constructor",
          "toString",
          "hasOwnProperty",
        ),
      ),
      fc.array(fc.string({ unit: "grapheme", maxLength: 30 }), {
        maxLength: 7,
      }),
      { maxKeys: 128 },
    ),
    { nil: undefined },
  ),
}, { requiredKeys: [] });

/** The parts of a well-formed review the families vary. */
interface ReviewSpec {
  uid: string;
  cluster: unknown;
  objectName: unknown;
  requestName: string | undefined;
  namespace: string | undefined;
  objectUid: unknown;
  resource: { group: string; version: string; resource: string };
  operation: string;
  skip: unknown;
  /** Where the object goes: `oldObject` (kcp's DELETE), `object` only, or nowhere. */
  carrier: "oldObject" | "object" | "none" | "oldObject-null";
  userInfo: unknown;
  dryRun: boolean | undefined;
  /** Unknown fields in the review, the request and the object. */
  extra: Record<string, unknown>;
}

/** A genuine-looking DELETE of a VPC. */
const genuineSpec: fc.Arbitrary<ReviewSpec> = fc.record({
  uid: requestUid,
  cluster: label,
  namespace: fc.option(label, { nil: undefined }),
  objectUid: fc.uuid(),
  deleteCollection: fc.boolean(),
  skip: fc.constantFrom(undefined, "false", "True", "", "1", " true"),
  carrier: fc.constantFrom("oldObject", "oldObject", "oldObject", "object"),
  userInfo: fc.option(userInfo, { nil: undefined }),
  dryRun: fc.option(fc.boolean(), { nil: undefined }),
}).map(({ deleteCollection, ...rest }) => ({
  ...rest,
  objectName: "vpc-a",
  // For each item of a DELETECOLLECTION kcp sends an empty request.name.
  requestName: deleteCollection ? "" : "vpc-a",
  resource: { ...VPCS },
  operation: "DELETE",
  extra: {},
}));

/** The AdmissionReview body for a spec. */
function reviewOf(spec: ReviewSpec): Record<string, unknown> {
  const annotations: Record<string, unknown> = { [CLUSTER]: spec.cluster };
  if (spec.skip !== undefined) annotations[SKIP] = spec.skip;
  const object = {
    apiVersion: `${VPCS.group}/${VPCS.version}`,
    kind: "VPC",
    metadata: {
      name: spec.objectName,
      namespace: spec.namespace,
      uid: spec.objectUid,
      resourceVersion: "1234",
      annotations,
    },
    spec: { cidr: "10.0.0.0/16" },
    ...spec.extra,
  };
  const carried = spec.carrier === "oldObject"
    ? { object: null, oldObject: object }
    : spec.carrier === "oldObject-null"
    ? { object, oldObject: null }
    : spec.carrier === "object"
    ? { object }
    : {};
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    ...spec.extra,
    request: {
      uid: spec.uid,
      kind: { group: spec.resource.group, version: "v1alpha1", kind: "VPC" },
      resource: spec.resource,
      requestKind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
      requestResource: { ...VPCS },
      name: spec.requestName,
      namespace: spec.namespace,
      operation: spec.operation,
      userInfo: spec.userInfo,
      dryRun: spec.dryRun,
      options: { kind: "DeleteOptions", apiVersion: "meta.k8s.io/v1" },
      ...spec.extra,
      ...carried,
    },
  };
}

/** Whether the spec's review carries the object at all. */
function carriesObject(spec: ReviewSpec): boolean {
  return spec.carrier !== "none";
}

/** Whether the webhook must refuse the spec's target as invalid (Kubernetes' rules). */
function invalidTarget(spec: ReviewSpec): boolean {
  const name = typeof spec.objectName === "string" && spec.objectName !== ""
    ? spec.objectName
    : spec.requestName ?? "";
  const namespace = spec.namespace || undefined;
  return !(isLabel(spec.cluster) && isSubdomain(name) &&
    (!spec.requestName || spec.requestName === name) &&
    (namespace === undefined || isLabel(namespace)) &&
    typeof spec.objectUid === "string" && spec.objectUid !== "");
}

/** Whether the spec's target is valid by the stricter rule (labels of at most 63). */
function strictTarget(spec: ReviewSpec): boolean {
  const name = typeof spec.objectName === "string" && spec.objectName !== ""
    ? spec.objectName
    : spec.requestName ?? "";
  return !invalidTarget(spec) && isSubdomainOfLabels(name);
}

function isProtected(spec: ReviewSpec): boolean {
  return spec.resource.group === VPCS.group &&
    spec.resource.version === VPCS.version &&
    spec.resource.resource === VPCS.resource;
}

/** The path of the read of a valid spec's object. */
function objectPath(spec: ReviewSpec): string {
  const name = typeof spec.objectName === "string" && spec.objectName !== ""
    ? spec.objectName
    : spec.requestName;
  const scope = spec.namespace ? `/namespaces/${spec.namespace}` : "";
  return `/clusters/${
    String(spec.cluster)
  }/apis/${VPCS.group}/${VPCS.version}${scope}/${VPCS.resource}/${name}`;
}

/** How the fake answers the read, relative to the review's uid. */
function liveFor(
  spec: ReviewSpec,
  answer: "same" | "other" | "missing" | "no-uid",
): Live {
  switch (answer) {
    case "same":
      return {
        kind: "uid",
        uid: typeof spec.objectUid === "string" ? spec.objectUid : "x",
      };
    case "other":
      return { kind: "uid", uid: `${String(spec.objectUid)}-recreated` };
    case "missing":
      return { kind: "missing" };
    case "no-uid":
      return { kind: "no-uid" };
  }
}

const liveAnswer = fc.constantFrom(
  "same" as const,
  "other" as const,
  "missing" as const,
  "no-uid" as const,
);

/** Leaves out inputs that would spell a dependent's name themselves. */
function spellsNoDependent<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return arbitrary.filter((value) => {
    const text = JSON.stringify(value) ?? "";
    return !text.includes("vm-b") && !text.includes("VirtualMachine");
  });
}

// ---------------------------------------------------------------------------
// Families

/** (a1) Bodies that are not JSON, not UTF-8, not objects, cut short, or too big. */
const garbageBody: fc.Arbitrary<
  { body: string | Uint8Array<ArrayBuffer>; status: number }
> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.string({ unit: "binary", maxLength: 200 }).map((body) => ({
      body,
      status: 400,
    })),
  },
  {
    weight: 12,
    arbitrary: anyJson.filter((v) => !isRecord(v)).map((v) => ({
      body: JSON.stringify(v),
      status: 400,
    })),
  },
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      "",
      " ",
      "\n\t",
      "{",
      "{}",
      "null",
      "[]",
      '"AdmissionReview"',
      '{"apiVersion":',
      "\ufeff{}",
    ).map((body) => ({ body, status: 400 })),
  },
  {
    weight: 12,
    arbitrary: fc.record({ spec: genuineSpec, cut: fc.nat() }).map((
      { spec, cut },
    ) => {
      const text = JSON.stringify(reviewOf(spec));
      return { body: text.slice(0, cut % text.length), status: 400 };
    }),
  },
  {
    weight: 12,
    arbitrary: fc.record({
      spec: genuineSpec,
      at: fc.nat(),
      bad: fc.constantFrom(
        [0xff],
        [0xc0, 0x80],
        [0xed, 0xa0, 0x80],
        [0xe2, 0x82],
        [0xf8, 0x88, 0x80, 0x80, 0x80],
      ),
    }).map(({ spec, at, bad }) => {
      const bytes = new TextEncoder().encode(JSON.stringify(reviewOf(spec)));
      const cut = at % bytes.length;
      const body = new Uint8Array(bytes.length + bad.length);
      body.set(bytes.subarray(0, cut));
      body.set(bad, cut);
      body.set(bytes.subarray(cut), cut + bad.length);
      return { body, status: 400 };
    }),
  },
  {
    // Few and just over the limit in bytes: a valid review padded with
    // blanks, two- or four-byte characters (fewer characters than bytes), or
    // bytes that are not UTF-8 (too big comes before not UTF-8).
    weight: 1,
    arbitrary: fc.record({
      spec: genuineSpec,
      over: fc.integer({ min: 1, max: 4_096 }),
      unit: fc.constantFrom(
        [0x20],
        [0xc3, 0xa9],
        [0xf0, 0x9f, 0x98, 0x80],
        [0xff],
      ),
    }).map(({ spec, over, unit }) => {
      const review = new TextEncoder().encode(JSON.stringify(reviewOf(spec)));
      const units = Math.ceil(
        (MAX_REVIEW_BYTES - review.length + over) / unit.length,
      );
      const body = new Uint8Array(review.length + units * unit.length);
      body.set(review);
      for (let i = 0; i < units; i++) {
        body.set(unit, review.length + i * unit.length);
      }
      return { body, status: 413 };
    }),
  },
);

/** One way to break an otherwise genuine review's envelope or request. */
type Breakage = (review: Record<string, unknown>) => void;

function requestOf(review: Record<string, unknown>): Record<string, unknown> {
  const request = review.request;
  assert.ok(isRecord(request));
  return request;
}

/** (a2) A genuine review with its envelope or one request field broken. */
const breakage: fc.Arbitrary<Breakage> = fc.oneof(
  {
    // As likely as all the generated breakages together: each is checked.
    weight: 22,
    arbitrary: fc.constantFrom<Breakage>(
      (r) => delete r.apiVersion,
      (r) => r.apiVersion = "admission.k8s.io/v1beta1",
      (r) => delete r.kind,
      (r) => delete r.request,
      (r) => r.request = null,
      (r) => delete requestOf(r).uid,
      (r) => requestOf(r).uid = "",
      (r) => delete requestOf(r).kind,
      (r) => delete requestOf(r).resource,
      (r) => delete requestOf(r).operation,
      (r) => requestOf(r).operation = "DELETECOLLECTION",
      (r) => requestOf(r).operation = "delete",
      (r) => requestOf(r).operation = "PATCH",
      (r) => delete (requestOf(r).resource as Record<string, unknown>).resource,
      (r) => delete (requestOf(r).kind as Record<string, unknown>).kind,
      (r) =>
        requestOf(r).userInfo = {
          extra: Object.fromEntries(
            Array.from({ length: 129 }, (_, i) => [`k${i}`, []]),
          ),
        },
      (r) =>
        requestOf(r).userInfo = {
          extra: Object.fromEntries(
            Array.from(
              { length: 9 },
              (_, i) => [`k${i}`, Array(114).fill("v")],
            ),
          ),
        },
    ),
  },
  fc.record({
    value: anyJson,
    text: fc.string({ unit: "grapheme", maxLength: 20 }),
  }).map(({ value, text }): Breakage => (r) => {
    r.apiVersion = value === "admission.k8s.io/v1" ? text : value;
  }),
  fc.record({ value: anyJson, text: fc.string({ maxLength: 20 }) }).map((
    { value, text },
  ): Breakage =>
  (r) => {
    r.kind = value === "AdmissionReview" ? `${text}x` : value;
  }),
  notA("object").map((value): Breakage => (r) => r.request = value),
  notA("string").map((value): Breakage => (r) => requestOf(r).uid = value),
  notA("object").map((value): Breakage => (r) => requestOf(r).kind = value),
  notA("object").map((value): Breakage => (r) => requestOf(r).resource = value),
  notA("object").map((value): Breakage => (r) =>
    requestOf(r).requestKind = value
  ),
  notA("string").map((value): Breakage => (r) =>
    requestOf(r).operation = value
  ),
  notA("string").map((value): Breakage => (r) => requestOf(r).name = value),
  notA("string").map((value): Breakage => (r) =>
    requestOf(r).namespace = value
  ),
  notA("string").map((value): Breakage => (r) =>
    requestOf(r).subResource = value
  ),
  notA("boolean").map((value): Breakage => (r) => requestOf(r).dryRun = value),
  notA("object").map((value): Breakage => (r) => requestOf(r).userInfo = value),
  notA("string").map((value): Breakage => (r) =>
    requestOf(r).userInfo = { username: value }
  ),
  notA("array").map((value): Breakage => (r) =>
    requestOf(r).userInfo = { groups: value }
  ),
  notA("array").map((value): Breakage => (r) =>
    requestOf(r).userInfo = { extra: { "scopes": value } }
  ),
  fc.record({
    field: fc.constantFrom("group", "version", "resource"),
    value: notA("string"),
  }).map(({ field, value }): Breakage => (r) => {
    (requestOf(r).resource as Record<string, unknown>)[field] = value;
  }),
);

/** The review fields that can reach a URL, and the uid to confirm. */
const TARGET_FIELDS = [
  "cluster",
  "objectName",
  "requestName",
  "namespace",
  "objectUid",
  "resource",
] as const;

/**
 * (b1) Reviews whose URL-bound fields (and the resource) are adversarial: a
 * genuine target with none, one or two of its fields replaced.
 */
const adversarialTargetSpec: fc.Arbitrary<ReviewSpec> = fc.record({
  base: genuineSpec,
  name: fc.oneof(fc.constantFrom("vpc-a", "vpc-b"), subdomain),
  other: fc.record({
    cluster: fc.oneof(
      { weight: 6, arbitrary: sometimesNasty(label) },
      {
        weight: 1,
        arbitrary: fc.constantFrom("root:org", "*", "root", undefined, 7, null),
      },
    ),
    objectName: fc.oneof(
      { weight: 6, arbitrary: sometimesNasty(subdomain) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(undefined, "", 1, null, ["vpc-a"]),
      },
    ),
    requestName: fc.option(sometimesNasty(subdomain), { nil: undefined }),
    namespace: fc.option(sometimesNasty(label), { nil: undefined }),
    objectUid: fc.oneof(
      { weight: 6, arbitrary: fc.oneof(fc.uuid(), nasty) },
      { weight: 1, arbitrary: fc.constantFrom(undefined, "", 0, null) },
    ),
    resource: fc.record({
      group: fc.oneof(fc.constant(VPCS.group), nasty),
      version: fc.oneof(fc.constant(VPCS.version), nasty),
      resource: fc.oneof(fc.constant(VPCS.resource), nasty),
    }),
  }),
  replaced: fc.oneof(
    {
      weight: 1,
      arbitrary: fc.constant([] as (typeof TARGET_FIELDS)[number][]),
    },
    {
      weight: 3,
      arbitrary: fc.subarray([...TARGET_FIELDS], {
        minLength: 1,
        maxLength: 2,
      }),
    },
  ),
}).map(({ base, name, other, replaced }) => {
  const spec: ReviewSpec = {
    ...base,
    objectName: name,
    requestName: base.requestName === "" ? "" : name,
  };
  for (const key of replaced) Object.assign(spec, { [key]: other[key] });
  return spec;
});

/** (b2) Genuine targets with adversarial everything else. */
const adversarialRestSpec: fc.Arbitrary<ReviewSpec> = fc.record({
  base: genuineSpec,
  operation: fc.oneof(
    { weight: 4, arbitrary: fc.constant("DELETE") },
    { weight: 1, arbitrary: fc.constantFrom("CREATE", "UPDATE", "CONNECT") },
  ),
  skip: fc.oneof(
    fc.constant("true"),
    fc.constantFrom("True", "TRUE", "false", "", " true", "true "),
    fc.constantFrom(true, 1, null, ["true"], { value: "true" }),
    nasty,
  ),
  carrier: fc.constantFrom(
    "oldObject" as const,
    "object" as const,
    "none" as const,
    "oldObject-null" as const,
  ),
  userInfo: fc.option(userInfo, { nil: undefined }),
  extra: fc.dictionary(
    fc.constantFrom("status", "metadata2", "x", "__proto__", "response"),
    anyJson,
    { maxKeys: 3 },
  ),
  name: fc.constantFrom("vpc-a", "vpc-b", "vpc-c"),
}).map(({ base, name, ...rest }) => ({
  ...base,
  ...rest,
  objectName: name,
  requestName: base.requestName === "" ? "" : name,
}));

/** (c) Forged or stale reviews: the fake's live object does not confirm them. */
const forgedSpec = fc.record({
  spec: genuineSpec,
  name: fc.constantFrom("vpc-a", "vpc-a", "vpc-a", "vpc-b"),
  answer: fc.constantFrom(
    "other" as const,
    "missing" as const,
    "no-uid" as const,
  ),
}).map(({ spec, name, answer }) => {
  const forged: ReviewSpec = {
    ...spec,
    objectName: name,
    requestName: spec.requestName === "" ? "" : name,
  };
  return { spec: forged, answer };
});

// ---------------------------------------------------------------------------

/** One answer of the app. */
interface Answer {
  status: number;
  contentType: string;
  body: unknown;
}

/** The `response` of a 200 answer. */
interface ReviewResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
}

Deno.test("createAdmissionHandler() fuzzed: malformed, adversarial, forged and genuine reviews", async (t) => {
  let current: CaseLog = {
    live: { kind: "missing" },
    reads: [],
    readPaths: [],
  };
  const api = new FakeApi(kcpHandler(() => current));
  const client = new KubeClient(connection(api.url));
  const host = `127.0.0.1:${api.port}`;
  let checked = 0;
  /** Checks the shape of every request the fake received since the last call. */
  const checkKcpRequests = () => {
    for (; checked < api.requests.length; checked++) {
      assertKcpRequest(api.requests[checked]!, host);
    }
  };
  try {
    const registry = new RuleRegistry();
    registry.replace([{
      cluster: "provider1",
      rule: validRule("vm-needs-vpc", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    }]);
    const validator = new DeletionValidator(
      registry,
      new FrontProxyDependentSource(client, api.url),
    );
    const handler = createAdmissionHandler({
      validator,
      log: createLogger({ level: "debug", write: () => {} }),
      observer: { reviewed: () => {}, rejected: () => {} },
    });

    /** Posts `body` with the fake answering as `live`; checks the global invariants. */
    const post = async (
      body: string | Uint8Array<ArrayBuffer>,
      live: Live,
      confirmingUid?: unknown,
    ): Promise<Answer & { log: CaseLog }> => {
      current = { live, reads: [], readPaths: [] };
      const response = await requestNodeHandler(handler, "/validate", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      const text = await response.text();
      const contentType = response.headers.get("content-type") ?? "";
      const answer = {
        status: response.status,
        contentType,
        body: JSON.parse(text) as unknown,
        log: current,
      };
      assert.ok(answer.status < 500, `HTTP ${answer.status}: ${text}`);
      assert.match(contentType, /^application\/json/);
      checkKcpRequests();
      if (answer.status === 200) {
        const review = answer.body as Record<string, unknown>;
        assert.equal(review.apiVersion, "admission.k8s.io/v1");
        assert.equal(review.kind, "AdmissionReview");
        const reply = review.response as ReviewResponse;
        assert.equal(typeof reply.allowed, "boolean");
        if (!reply.allowed) {
          assert.ok(Number.isInteger(reply.status?.code), text);
          assert.equal(typeof reply.status?.message, "string");
        }
        const message = reply.status?.message ?? "";
        const confirmed = confirmingUid !== undefined &&
          current.reads.some((uid) => uid === confirmingUid);
        if (
          message.includes("vm-b") || message.includes("VirtualMachine")
        ) {
          assert.ok(confirmed, `names a dependent unconfirmed: ${message}`);
        }
      } else {
        assert.deepEqual(Object.keys(answer.body as object), ["error"]);
        assert.equal(
          typeof (answer.body as { error: unknown }).error,
          "string",
        );
      }
      return answer;
    };

    /** Posts a well-formed review; checks it is a 200 echoing the uid. */
    const review = async (spec: ReviewSpec, live: Live) => {
      const answer = await post(
        JSON.stringify(reviewOf(spec)),
        live,
        spec.objectUid,
      );
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const reply = (answer.body as { response: ReviewResponse }).response;
      assert.equal(reply.uid, spec.uid);
      return {
        reply,
        reads: answer.log.reads,
        readPaths: answer.log.readPaths,
      };
    };

    const counts: Record<string, number> = {};
    const count = (what: string) => counts[what] = (counts[what] ?? 0) + 1;

    await t.step(
      "(a1) bodies that are not JSON, not UTF-8, not objects, cut short or too big: 400 or 413",
      async () => {
        await fc.assert(
          fc.asyncProperty(garbageBody, async ({ body, status }) => {
            const answer = await post(body, { kind: "missing" });
            assert.equal(answer.status, status, JSON.stringify(answer.body));
            assert.deepEqual(answer.log.readPaths, []);
            count(`a1:${status}`);
          }),
          { seed: SEED, numRuns: RUNS },
        );
      },
    );

    await t.step(
      "(a2) a wrong envelope or a missing or mistyped request field: 400",
      async () => {
        await fc.assert(
          fc.asyncProperty(genuineSpec, breakage, async (spec, broken) => {
            // A copy: the generated value is replayed while shrinking.
            const body = structuredClone(reviewOf(spec));
            broken(body);
            const answer = await post(JSON.stringify(body), {
              kind: "missing",
            });
            assert.equal(answer.status, 400, JSON.stringify(answer.body));
            assert.deepEqual(answer.log.readPaths, []);
            count("a2:400");
          }),
          { seed: SEED + 1, numRuns: RUNS },
        );
      },
    );

    await t.step(
      "(b1) adversarial cluster, names, namespace, uid and resource: 200, and kcp only asked for a valid target",
      async () => {
        await fc.assert(
          fc.asyncProperty(
            spellsNoDependent(adversarialTargetSpec),
            liveAnswer,
            async (spec, answer) => {
              const { reply, reads, readPaths } = await review(
                spec,
                liveFor(spec, answer),
              );
              if (invalidTarget(spec)) {
                count("b1:invalid");
                assert.deepEqual(reads, []);
                assert.equal(reply.allowed, false);
                assert.equal(reply.status?.code, 400);
              } else if (strictTarget(spec) && isProtected(spec)) {
                count("b1:asked");
                assert.deepEqual(readPaths, [objectPath(spec)]);
                if (answer !== "same") {
                  assert.equal(reply.status?.message, UNCONFIRMED_MESSAGE);
                }
              } else if (strictTarget(spec) && !isProtected(spec)) {
                count("b1:unprotected");
                assert.deepEqual(reads, []);
                assert.equal(reply.allowed, true);
              }
            },
          ),
          { seed: SEED + 2, numRuns: RUNS },
        );
      },
    );

    await t.step(
      "(b2) odd operations, skip-protection values, userInfo, object carriers and unknown fields: 200",
      async () => {
        await fc.assert(
          fc.asyncProperty(
            spellsNoDependent(adversarialRestSpec),
            liveAnswer,
            async (spec, answer) => {
              const { reply, reads } = await review(
                spec,
                liveFor(spec, answer),
              );
              const skip = spec.carrier === "none" ? undefined : spec.skip;
              if (spec.operation !== "DELETE") {
                count("b2:not-delete");
                assert.equal(reply.allowed, true);
                assert.deepEqual(reads, []);
              } else if (!carriesObject(spec)) {
                count("b2:no-object");
                assert.equal(reply.allowed, false);
                assert.equal(reply.status?.code, 400);
                assert.deepEqual(reads, []);
              } else if (skip === "true") {
                count("b2:skip");
                assert.equal(reply.allowed, true);
                assert.deepEqual(reads, []);
              } else {
                count("b2:asked");
                assert.equal(reads.length, 1);
                // vm-blocker refers to vpc-a, vm-bystander to vpc-b.
                const referenced = spec.objectName !== "vpc-c";
                assert.equal(reply.allowed, answer === "same" && !referenced);
                if (answer !== "same") {
                  assert.equal(reply.status?.message, UNCONFIRMED_MESSAGE);
                }
              }
            },
          ),
          { seed: SEED + 3, numRuns: RUNS },
        );
      },
    );

    await t.step(
      "(c) forged or stale reviews: denied as unconfirmed, naming no dependent",
      async () => {
        await fc.assert(
          fc.asyncProperty(
            spellsNoDependent(forgedSpec),
            async ({ spec, answer }) => {
              const { reply, reads } = await review(
                spec,
                liveFor(spec, answer),
              );
              assert.equal(reads.length, 1);
              assert.equal(reply.allowed, false);
              assert.deepEqual(reply.status, {
                code: 409,
                reason: "Conflict",
                message: UNCONFIRMED_MESSAGE,
              });
              count(`c:${answer}`);
            },
          ),
          { seed: SEED + 4, numRuns: RUNS },
        );
      },
    );

    await t.step(
      "(d) genuine reviews: denied naming the VirtualMachine",
      async () => {
        await fc.assert(
          fc.asyncProperty(spellsNoDependent(genuineSpec), async (spec) => {
            const { reply, reads } = await review(spec, liveFor(spec, "same"));
            assert.equal(reads.length, 1);
            const who = spec.namespace === undefined
              ? `VirtualMachine/default/${BLOCKER}`
              : `VirtualMachine/${BLOCKER}`;
            assert.deepEqual(reply.status, {
              code: 409,
              reason: "Conflict",
              message:
                `cannot delete vpcs/vpc-a: still referenced by ${who} (.spec.vpcRef.name)`,
              details: {
                causes: [{
                  reason: "ReferencedBy",
                  field: ".spec.vpcRef.name",
                  message: JSON.stringify({
                    object: {
                      group: "compute.example.com",
                      version: "v1alpha1",
                      resource: "virtualmachines",
                      kind: "VirtualMachine",
                      namespace: spec.namespace ?? "default",
                      name: BLOCKER,
                    },
                    fields: [".spec.vpcRef.name"],
                    rules: ["provider1/vm-needs-vpc"],
                  }),
                }],
              },
            });
            assert.equal(reply.allowed, false);
            count("d:named");
          }),
          { seed: SEED + 5, numRuns: RUNS },
        );
      },
    );

    // The generators reach every branch (fixed seeds, so this cannot flake).
    for (
      const what of [
        "a1:400",
        "a1:413",
        "a2:400",
        "b1:invalid",
        "b1:asked",
        "b1:unprotected",
        "b2:not-delete",
        "b2:no-object",
        "b2:skip",
        "b2:asked",
        "c:other",
        "c:missing",
        "c:no-uid",
        "d:named",
      ]
    ) {
      assert.ok((counts[what] ?? 0) > 0, `${what}: ${JSON.stringify(counts)}`);
    }
  } finally {
    client.close();
    await api.close();
  }
  // Requests that arrived after their review was answered (lists cancelled
  // by a failed confirmation) are checked too.
  checkKcpRequests();
});
