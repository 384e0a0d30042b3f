import assert from "node:assert/strict";
import { type Cause, type CauseObject, statusCause } from "../causes/mod.ts";
import { decide } from "./why_decision.ts";

const VPC: CauseObject = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
  kind: "VPC",
  namespace: "default",
  name: "core",
};

const WEBHOOK =
  'admission webhook "dependency-controller.dependencies.opendefense.cloud" denied the request: ';

const REFERENCE: Cause = {
  type: "Reference",
  object: {
    group: "compute.example.com",
    version: "v1alpha1",
    resource: "virtualmachines",
    kind: "VirtualMachine",
    namespace: "default",
    name: "vm-1",
  },
  fields: [".spec.vpcRef.name"],
  rules: ["2x8ab/vm-vpc"],
};

const LOCK: Cause = {
  type: "Lock",
  lock: { namespace: "default", name: "prod" },
  reason: "production VPC",
};

/** A Kubernetes Status as the API server sends a denial. */
function status(
  code: number,
  message: string,
  causes?: readonly Cause[],
): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message,
    reason: code === 409 ? "Conflict" : "Forbidden",
    code,
    ...(causes === undefined
      ? {}
      : { details: { causes: causes.map(statusCause) } }),
  };
}

Deno.test("decide: a 2xx answer means nothing holds the object", () => {
  for (const code of [200, 202]) {
    assert.deepEqual(decide({ status: code, body: { kind: "VPC" } }, VPC), {
      state: "free",
    });
  }
});

Deno.test("decide: a 409 with our causes is held, with every cause in order and the message", () => {
  const message =
    `${WEBHOOK}cannot delete vpcs/core: locked by Lock default/prod`;
  const decision = decide({
    status: 409,
    body: status(409, message, [REFERENCE, LOCK]),
  }, VPC);
  assert.deepEqual(decision, {
    state: "held",
    causes: [REFERENCE, LOCK],
    message,
  });
});

Deno.test("decide: causes that are not ours are left out; none left is a denial without causes", () => {
  const body = status(409, `${WEBHOOK}cannot delete vpcs/core: ...`);
  body.details = {
    causes: [
      { reason: "FieldValueInvalid", message: "not ours", field: "spec" },
      { reason: "ReferencedBy", message: "not JSON" },
    ],
  };
  const decision = decide({ status: 409, body }, VPC);
  assert.equal(decision.state, "denied");
  const withOne = structuredClone(body);
  (withOne.details as { causes: unknown[] }).causes.push(statusCause(LOCK));
  assert.deepEqual(decide({ status: 409, body: withOne }, VPC), {
    state: "held",
    causes: [LOCK],
    message: body.message,
  });
});

Deno.test("decide: other denials of the webhook fail closed: it cannot be deleted now", () => {
  const cases: [number, string][] = [
    [
      503,
      `${WEBHOOK}cannot delete vpcs/core: the dependency webhook cannot check ...`,
    ],
    [
      403,
      `${WEBHOOK}cannot delete vpcs/core: the skip-protection annotation ...`,
    ],
    [
      409,
      `${WEBHOOK}cannot delete vpcs/core: still referenced by VirtualMachine/vm-1`,
    ],
    [400, `${WEBHOOK}the review cannot be used`],
    [409, "Operation cannot be fulfilled: the object has been modified"],
    [
      500,
      'Internal error occurred: failed calling webhook "dependency-controller.dependencies.opendefense.cloud": connection refused',
    ],
  ];
  for (const [code, message] of cases) {
    assert.deepEqual(
      decide({ status: code, body: status(code, message) }, VPC),
      { state: "denied", code, message },
      message,
    );
  }
});

Deno.test("decide: a 403 of RBAC names the permission missing, and is an error", () => {
  const message =
    'vpcs.network.example.com "core" is forbidden: User "user-1" cannot delete resource "vpcs" in API group "network.example.com" in the namespace "default"';
  assert.deepEqual(decide({ status: 403, body: status(403, message) }, VPC), {
    state: "error",
    message:
      `you may not delete vpcs.network.example.com in namespace default: ${message}`,
  });
  const cluster = { ...VPC, namespace: "", resource: "vpcattachments" };
  const atCluster = decide({ status: 403, body: status(403, "no") }, cluster, {
    workspace: "root:consumers:c1",
  });
  assert.deepEqual(atCluster, {
    state: "error",
    message:
      "you may not delete vpcattachments.network.example.com in workspace root:consumers:c1: no",
  });
  const core = { ...VPC, group: "", resource: "configmaps", version: "v1" };
  assert.match(
    (decide({ status: 403, body: "" }, core) as { message: string }).message,
    /^you may not delete configmaps in namespace default$/,
  );
});

Deno.test("decide: a 404 is not found, a 401 names the credentials, anything else its status", () => {
  assert.deepEqual(
    decide({
      status: 404,
      body: status(404, 'vpcs.network.example.com "core" not found'),
    }, VPC),
    {
      state: "error",
      message:
        'not found: vpcs.network.example.com "core" in namespace default',
    },
  );
  assert.deepEqual(
    decide({ status: 401, body: status(401, "Unauthorized") }, VPC),
    {
      state: "error",
      message:
        "the API server did not accept the kubeconfig's credentials (401): Unauthorized",
    },
  );
  assert.deepEqual(
    decide({ status: 502, body: "<html>bad gateway</html>\n" }, VPC),
    {
      state: "error",
      message: "the API server answered 502: <html>bad gateway</html>",
    },
  );
});

Deno.test("decide: the English message is never parsed: a message naming blockers without causes is a plain denial", () => {
  const decision = decide({
    status: 409,
    body: status(
      409,
      `${WEBHOOK}cannot delete vpcs/core: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)`,
    ),
  }, VPC);
  assert.equal(decision.state, "denied");
  assert.ok(!("causes" in decision));
});

const NOT_READ: Cause = {
  type: "NotRead",
  group: "lb.example.com",
  resource: "loadbalancers",
  verb: "list",
  why:
    "the webhook's identity may not list loadbalancers.lb.example.com in this workspace (403 Forbidden)",
};

Deno.test("decide: what the webhook could not read is kept beside the blockers, and alone it holds nothing: denied", () => {
  const message =
    `${WEBHOOK}cannot delete vpcs/core: locked by Lock default/prod`;
  assert.deepEqual(
    decide({ status: 409, body: status(409, message, [LOCK, NOT_READ]) }, VPC),
    { state: "held", causes: [LOCK, NOT_READ], message },
  );
  const unavailable = `${WEBHOOK}cannot delete vpcs/core: cannot check`;
  assert.deepEqual(
    decide({
      status: 503,
      body: {
        ...status(503, unavailable, [NOT_READ]),
        reason: "ServiceUnavailable",
      },
    }, VPC),
    { state: "denied", code: 503, message: unavailable, causes: [NOT_READ] },
  );
});
