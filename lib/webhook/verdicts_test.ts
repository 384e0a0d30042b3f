import assert from "node:assert/strict";
import {
  type Blocker,
  busy,
  held,
  locked,
  lockedUnreadable,
  referenced,
  skipUnauthorized,
  unavailable,
} from "./verdicts.ts";
import type { ReviewTarget } from "./review_target.ts";
import { causesOf } from "../causes/mod.ts";
import { VPCS } from "../../testing/fakes.ts";

const TARGET: ReviewTarget = {
  cluster: "consumer1",
  namespace: "team-a",
  name: "core",
  uid: "u",
  resource: { ...VPCS },
};

const VM = (name: string, namespace = "team-a"): Blocker => ({
  kind: "VirtualMachine",
  type: {
    group: "compute.example.com",
    version: "v1alpha1",
    resource: "virtualmachines",
  },
  namespace,
  name,
  paths: [".spec.vpcRef.name"],
  rules: ["provider1/vm-needs-vpc"],
});

Deno.test("each builder answers with its status code, reason and outcome", () => {
  const cases = [
    [
      referenced("u", { target: TARGET, named: [VM("vm-1")], total: 1 }),
      409,
      "denied_referenced",
      /^cannot delete vpcs\/core: still referenced by VirtualMachine\/vm-1/,
    ],
    [
      locked("u", {
        target: TARGET,
        verb: "update",
        holds: [{ namespace: "team-a", name: "prod", reason: "r" }],
      }),
      409,
      "denied_locked",
      /^cannot update vpcs\/core: locked by Lock team-a\/prod \("r"\)/,
    ],
    [
      lockedUnreadable("u", { target: TARGET, verb: "delete" }),
      409,
      "denied_locked",
      /kubectl get locks -n team-a/,
    ],
    [
      skipUnauthorized("u", { target: TARGET, username: "bob" }),
      403,
      "denied_skip_unauthorized",
      /"bob" is not/,
    ],
    [
      busy("u", { target: TARGET, maxPerKey: 2, capacity: 4 }),
      503,
      "denied_busy",
      /at most 2 of a workspace's 4 reviews/,
    ],
    [
      unavailable("u", { shown: "vpcs/core", what: "x", until: "y" }),
      503,
      "denied_error",
      /^cannot delete vpcs\/core: x; the delete is denied until y: retry later/,
    ],
  ] as const;
  for (const [verdict, code, outcome, message] of cases) {
    assert.equal(verdict.response.allowed, false, outcome);
    assert.equal(verdict.response.status?.code, code, outcome);
    assert.equal(verdict.outcome, outcome);
    assert.match(verdict.response.status?.message ?? "", message, outcome);
  }
  assert.equal(
    referenced("u", { target: TARGET, named: [], total: 3 }).blockers,
    3,
  );
  const forbidden = { verb: "list", group: "g", resource: "r" } as const;
  assert.deepEqual(
    unavailable("u", { shown: "s", what: "w", until: "u", forbidden })
      .forbidden,
    forbidden,
  );
});

Deno.test("denials carry one cause per blocker, readable back from the response, and count the rest", () => {
  const vm1 = { ...VM("vm-1"), paths: [".spec.vpcRef.name"], pathsNotShown: 2 };
  const refs = referenced("u", { target: TARGET, named: [vm1], total: 3 });
  assert.deepEqual(causesOf(refs.response.status), refs.causes);
  assert.deepEqual(refs.causes, [
    {
      type: "Reference",
      object: {
        group: "compute.example.com",
        version: "v1alpha1",
        resource: "virtualmachines",
        kind: "VirtualMachine",
        namespace: "team-a",
        name: "vm-1",
      },
      // The fields not shown are counted in the message, not named here.
      fields: [".spec.vpcRef.name"],
      rules: ["provider1/vm-needs-vpc"],
    },
    { type: "More", of: "Reference", count: 2 },
  ]);

  const owned = held("u", {
    target: TARGET,
    owners: [{
      kind: "Network",
      type: {
        group: "network.example.com",
        version: "v1",
        resource: "networks",
      },
      rule: "provider1/owned",
      namespace: "team-a",
      name: "net-a",
      field: '.metadata.labels["network.example.com/owner"]',
      when: "object.spec.keep == true",
    }],
    unchecked: 1,
    named: [],
    total: 0,
  });
  assert.deepEqual(causesOf(owned.response.status), owned.causes);
  assert.deepEqual(owned.causes?.map((c) => c.type), ["Owner", "More"]);
  assert.deepEqual(owned.causes?.[0], {
    type: "Owner",
    object: {
      group: "network.example.com",
      version: "v1",
      resource: "networks",
      kind: "Network",
      namespace: "team-a",
      name: "net-a",
    },
    field: '.metadata.labels["network.example.com/owner"]',
    rule: "provider1/owned",
    when: "object.spec.keep == true",
  });

  const lock = locked("u", {
    target: TARGET,
    verb: "delete",
    holds: [
      { namespace: "team-a", name: "prod", reason: "keep\u001b[31m" },
      {
        namespace: "team-a",
        name: "old",
        reason: "r",
        since: "2026-11-29T12:00:00Z",
      },
    ],
  });
  assert.deepEqual(causesOf(lock.response.status), [
    {
      type: "Lock",
      lock: { namespace: "team-a", name: "prod" },
      reason: "keep\u001b[31m",
    },
    {
      type: "Lock",
      lock: { namespace: "team-a", name: "old" },
      reason: "r",
      since: "2026-11-29T12:00:00Z",
    },
  ]);
  // A denial that names nothing carries no causes.
  const unreadable = lockedUnreadable("u", { target: TARGET, verb: "delete" });
  assert.equal(unreadable.response.status?.details, undefined);
});
