/**
 * Property: no value of any review field can change the method, host, path
 * or query of a request to kcp. The real DeletionValidator,
 * FrontProxyDependentSource and KubeClient run against a fake front-proxy
 * that answers lists with an empty page and the object read with the uid the
 * review carries; every request the fake receives must have one of the two
 * expected shapes, built from the review's validated values only, and a
 * review with an invalid field must send nothing at all.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseAdmissionReview } from "./admission_review.ts";
import { DeletionValidator, type Verdict } from "./deletion_validator.ts";
import { FrontProxyDependentSource } from "./dependent_lister.ts";
import { KubeClient } from "../kcp/mod.ts";
import { RuleRegistry } from "./rule_registry.ts";
import {
  connection,
  dependency,
  FakeApi,
  json,
  type SeenRequest,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  isLabel,
  isSubdomain,
  isSubdomainOfLabels,
} from "../../testing/dns_oracle.ts";

/** Fixed, so that a failure is reproducible; fast-check prints the path to replay. */
const SEED = 20261124;
const RUNS = 300;
const PAGE_SIZE = "10000";

// ---------------------------------------------------------------------------
// The oracle: Kubernetes' and kcp's name rules, written out independently of
// the code under test.

// (isLabel, isSubdomain, isSubdomainOfLabels: testing/dns_oracle.ts)

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
  "%2E%2E",
  ".%2e",
  "%2F",
  "%2f",
  "%5C",
  "%00",
  "%3F",
  "%23",
  "\r",
  "\n",
  "\r\n",
  "\t",
  "\u0000",
  "\u00e9",
  "\u0131",
  "\u212a",
  "\uff0f",
  "\u2215",
  "\u200b",
  "\u2028",
  "\ud83d\ude00",
  "\ud800",
  "A",
  "Z",
  "-",
  "_",
  "~",
  "*",
  "!",
  "'",
  "(",
  ")",
  "../",
  "/..",
  "?limit=1",
  "&watch=true",
  "#x",
  "clusters",
  "namespaces",
  "root:org",
  "root",
  "vpc-a",
  "default",
];

/** A DNS-1123 label, sometimes at the length limit. */
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

/** A DNS-1123 subdomain of at most 253 characters. */
const subdomain = fc.array(label, { minLength: 1, maxLength: 4 })
  .map((labels) => labels.join("."))
  .filter((name) => name.length <= 253);

/** Names at and beyond the limits. */
const BOUNDARY = [
  "a",
  "0",
  "a".repeat(63),
  "a".repeat(64),
  `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`,
  `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`,
  `x.${"y".repeat(64)}`,
  "-a",
  "a-",
  "a..b",
  ".a",
  "a.",
  "A",
  "a_b",
];

/** DNS-1123 subdomains (Kubernetes' rule) with a label over 63 characters. */
const LONG_LABEL_NAMES = [
  "a".repeat(64),
  `x.${"y".repeat(64)}`,
  `${"v".repeat(100)}.example`,
];

/** A string of URL-significant fragments mixed with valid names. */
const nasty = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
    { weight: 2, arbitrary: label },
  ),
  { minLength: 1, maxLength: 6 },
).map((parts) => parts.join(""));

/** A value that is not a string. */
const notAString = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.boolean(),
  fc.constant([]),
  fc.constant({}),
);

/** Any value for a string field: mostly strings, valid or not. */
function adversarial(valid: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: valid },
    { weight: 4, arbitrary: nasty },
    { weight: 2, arbitrary: fc.constantFrom(...BOUNDARY) },
    { weight: 1, arbitrary: fc.constant("") },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
  );
}

/** The review fields that can reach a URL, plus the uid that must be confirmed. */
interface ReviewFields {
  /** `kcp.io/cluster` annotation; `undefined` leaves it out. */
  cluster: unknown;
  /** `oldObject.metadata.name`; `undefined` leaves it out. */
  objectName: unknown;
  /** `request.name`; `undefined` leaves it out. */
  requestName: string | undefined;
  /** `request.namespace`; `undefined` leaves it out. */
  namespace: string | undefined;
  /** `oldObject.metadata.uid`; `undefined` leaves it out. */
  uid: unknown;
  /** `request.resource`. */
  resource: { group: string; version: string; resource: string };
}

const FIELDS = [
  "cluster",
  "objectName",
  "requestName",
  "namespace",
  "uid",
  "resource",
] as const;

/** Fields a kcp DELETE of a VPC could carry. */
const validFields: fc.Arbitrary<ReviewFields> = fc.record({
  cluster: label,
  objectName: fc.oneof(
    { weight: 9, arbitrary: subdomain },
    // Valid for Kubernetes, though a label is longer than a DNS label.
    { weight: 1, arbitrary: fc.constantFrom(...LONG_LABEL_NAMES) },
  ),
  namespace: fc.option(label, { nil: undefined }),
  uid: fc.uuid(),
  sameName: fc.boolean(),
}).map(({ sameName, ...rest }) => ({
  ...rest,
  requestName: sameName ? rest.objectName : "",
  resource: { ...VPCS },
}));

/** A string made of the parts of a group/version/resource, or of nasty ones. */
const gvrPart = fc.oneof(
  fc.constantFrom(
    VPCS.group,
    VPCS.version,
    VPCS.resource,
    VIRTUAL_MACHINES.group,
    VIRTUAL_MACHINES.resource,
    "",
    "v1",
  ),
  nasty,
);

/** Other values for each field. */
const otherFields = fc.record({
  cluster: fc.oneof(
    { weight: 8, arbitrary: adversarial(label) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("root:org", "*", "root:*", undefined),
    },
    { weight: 1, arbitrary: notAString },
  ),
  objectName: fc.oneof(
    { weight: 8, arbitrary: adversarial(subdomain) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: notAString },
  ),
  requestName: fc.oneof(
    adversarial(subdomain).map((v) => typeof v === "string" ? v : ""),
    fc.constant(undefined),
  ),
  namespace: fc.oneof(
    adversarial(label).map((v) => typeof v === "string" ? v : ""),
    fc.constant(undefined),
  ),
  uid: fc.oneof(
    { weight: 6, arbitrary: adversarial(fc.uuid()) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: notAString },
  ),
  resource: fc.oneof(
    fc.record({ group: gvrPart, version: gvrPart, resource: gvrPart }),
    fc.constantFrom(
      { ...VPCS, group: `${VPCS.group}/` },
      { ...VPCS, resource: `${VPCS.resource}/x` },
      { ...VPCS, version: `${VPCS.version}/..` },
      { ...VPCS, resource: "vpcs%2F.." },
      { ...VPCS, group: "" },
      {
        group: VPCS.group,
        version: `${VPCS.version}/${VPCS.resource}`,
        resource: "",
      },
      { ...VIRTUAL_MACHINES },
    ),
  ),
});

/** Valid fields with none, some or all of them replaced by other values. */
const reviewFields: fc.Arbitrary<ReviewFields> = fc.record({
  valid: validFields,
  other: otherFields,
  replaced: fc.oneof(
    { weight: 2, arbitrary: fc.constant([] as (typeof FIELDS)[number][]) },
    { weight: 5, arbitrary: fc.subarray([...FIELDS], { minLength: 1 }) },
  ),
}).map(({ valid, other, replaced }) => {
  const fields: ReviewFields = { ...valid };
  for (const key of replaced) {
    Object.assign(fields, { [key]: other[key] });
  }
  return fields;
});

/** The AdmissionReview body kcp would send for `fields`. */
function reviewBody(fields: ReviewFields): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "review-uid",
      kind: { group: VPCS.group, version: VPCS.version, kind: "VPC" },
      resource: fields.resource,
      name: fields.requestName,
      namespace: fields.namespace,
      operation: "DELETE",
      userInfo: { username: "alice" },
      oldObject: {
        apiVersion: `${VPCS.group}/${VPCS.version}`,
        kind: "VPC",
        metadata: {
          name: fields.objectName,
          namespace: fields.namespace,
          uid: fields.uid,
          annotations: { "kcp.io/cluster": fields.cluster },
        },
      },
    },
  });
}

// ---------------------------------------------------------------------------
// What the review may lead to

/** The target the review names, as the oracle reads it; `valid` by Kubernetes' rules. */
interface Expected {
  valid: boolean;
  /** Valid, with every label of the name 63 characters at most. */
  strict: boolean;
  /** The type is the protected one (VPCs). */
  protected: boolean;
  cluster: string;
  name: string;
  namespace: string | undefined;
}

function expected(fields: ReviewFields): Expected {
  const name = typeof fields.objectName === "string" && fields.objectName !== ""
    ? fields.objectName
    : fields.requestName ?? "";
  const namespace = fields.namespace || undefined;
  const rest = isLabel(fields.cluster) &&
    (fields.requestName === undefined || fields.requestName === "" ||
      fields.requestName === name) &&
    (namespace === undefined || isLabel(namespace)) &&
    typeof fields.uid === "string" && fields.uid !== "";
  const { group, version, resource } = fields.resource;
  return {
    valid: rest && isSubdomain(name),
    strict: rest && isSubdomainOfLabels(name),
    protected: group === VPCS.group && version === VPCS.version &&
      resource === VPCS.resource,
    cluster: typeof fields.cluster === "string" ? fields.cluster : "",
    name,
    namespace,
  };
}

/** The path of the VirtualMachine list the review may lead to. */
function listPath(e: Expected): string {
  const { group, version, resource } = VIRTUAL_MACHINES;
  const scope = e.namespace === undefined ? "" : `/namespaces/${e.namespace}`;
  return `/clusters/${e.cluster}/apis/${group}/${version}${scope}/${resource}`;
}

/** The path of the read of the object under review. */
function objectPath(e: Expected): string {
  const { group, version, resource } = VPCS;
  const scope = e.namespace === undefined ? "" : `/namespaces/${e.namespace}`;
  return `/clusters/${e.cluster}/apis/${group}/${version}${scope}/${resource}/${e.name}`;
}

const SHAPE =
  /^\/clusters\/([^/]+)\/apis\/([^/]+)\/([^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?$/;

/** Checks one request the fake received for a review with target `e`. */
function assertRequest(seen: SeenRequest, e: Expected, host: string): void {
  const where = `${seen.method} ${seen.url.href}`;
  assert.equal(seen.method, "GET", where);
  assert.equal(seen.url.host, host, where);
  assert.equal(seen.headers.get("host"), host, where);
  assert.equal(seen.url.hash, "", where);
  const match = SHAPE.exec(seen.url.pathname);
  assert.ok(match, `unexpected path shape: ${where}`);
  const [, cluster, group, version, namespace, resource, name] = match.map((
    segment,
  ) => segment === undefined ? undefined : decodeURIComponent(segment));
  assert.equal(cluster, e.cluster, where);
  assert.ok(isLabel(cluster), where);
  assert.equal(namespace, e.namespace, where);
  if (name === undefined) {
    assert.deepEqual(
      [group, version, resource],
      [
        VIRTUAL_MACHINES.group,
        VIRTUAL_MACHINES.version,
        VIRTUAL_MACHINES.resource,
      ],
      where,
    );
    assert.equal(seen.url.pathname, listPath(e), where);
    assert.deepEqual([...seen.url.searchParams], [["limit", PAGE_SIZE]], where);
  } else {
    assert.deepEqual(
      [group, version, resource],
      [VPCS.group, VPCS.version, VPCS.resource],
      where,
    );
    assert.equal(name, e.name, where);
    assert.ok(isSubdomain(name), where);
    assert.equal(seen.url.pathname, objectPath(e), where);
    assert.equal(seen.url.search, "", where);
  }
}

// ---------------------------------------------------------------------------

Deno.test("DeletionValidator with FrontProxyDependentSource: no review field changes the method, host, path or query of a request to kcp", async () => {
  let liveUid: unknown = undefined;
  const api = new FakeApi((request) =>
    request.url.searchParams.has("limit")
      ? json({ metadata: {}, items: [] })
      : json({ metadata: { name: "live", uid: liveUid } })
  );
  const client = new KubeClient(connection(api.url));
  const counts = { invalid: 0, sent: 0, unprotected: 0, longLabel: 0 };
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
    const host = `127.0.0.1:${api.port}`;
    await fc.assert(
      fc.asyncProperty(reviewFields, async (fields) => {
        const parsed = parseAdmissionReview(
          new TextEncoder().encode(reviewBody(fields)),
        );
        assert.ok(parsed.ok, parsed.ok ? "" : parsed.message);
        liveUid = fields.uid;
        const before = api.requests.length;
        const verdict: Verdict = await validator.validate(parsed.request);
        const sent = api.requests.slice(before);
        const e = expected(fields);
        for (const seen of sent) assertRequest(seen, e, host);
        if (!e.valid) {
          counts.invalid++;
          assert.deepEqual(sent.map((r) => r.url.href), []);
          assert.equal(verdict.outcome, "denied_invalid");
          assert.equal(verdict.response.status?.code, 400);
        } else if (e.protected) {
          counts.sent++;
          if (!e.strict) counts.longLabel++;
          assert.deepEqual(
            sent.map((r) => r.url.pathname).sort(),
            [listPath(e), objectPath(e)].sort(),
          );
          assert.equal(verdict.outcome, "allowed");
        } else {
          counts.unprotected++;
          assert.deepEqual(sent.map((r) => r.url.href), []);
          assert.equal(verdict.outcome, "allowed");
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  } finally {
    client.close();
    await api.close();
  }
  // The generators reach every branch (fixed seed, so this cannot flake).
  assert.ok(counts.invalid >= RUNS / 10, JSON.stringify(counts));
  assert.ok(counts.sent >= RUNS / 10, JSON.stringify(counts));
  assert.ok(counts.unprotected >= 1, JSON.stringify(counts));
  assert.ok(counts.longLabel >= 1, JSON.stringify(counts));
});
