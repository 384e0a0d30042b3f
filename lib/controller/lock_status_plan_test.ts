import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import { READY_CONDITION } from "../rules/mod.ts";
import { exportKey } from "../exports/mod.ts";
import { VPCS } from "../../testing/fakes.ts";
import { parseLock } from "../locks/mod.ts";
import { planReconcile } from "./reconcile_plan.ts";
import { lockKey, type LockPlacement, type LockState } from "./lock_plan.ts";
import { planLockStatuses } from "./lock_status_plan.ts";
import {
  configuration,
  CONSUMER,
  ENDPOINT,
  lockSource,
  NETWORK,
  NETWORK_EXPORT,
  NETWORK_PATH,
  networkInput,
  NOW,
  SETTINGS,
} from "../../testing/plan_fixtures.ts";

Deno.test("planReconcile() writes a Lock's Ready once its configuration is in place, and why not otherwise", () => {
  const vpcLock = lockSource({
    apiExportRef: { path: NETWORK_PATH, name: VPCS.group },
    ...VPCS,
    name: "core",
  }, ["Delete", "Update"]);
  // While the configuration is written, nothing is said yet.
  const creating = planReconcile({ ...networkInput([], []), locks: [vpcLock] });
  assert.deepEqual(creating.statuses, []);
  assert.deepEqual([...creating.lockReady], []);
  const installed = planReconcile({
    ...networkInput([], []),
    configurations: [
      configuration(NETWORK, [{ ...VPCS, operations: ["DELETE", "UPDATE"] }]),
    ],
    locks: [vpcLock],
  });
  assert.deepEqual(installed.configurations, []);
  const [status] = installed.statuses;
  assert.equal(status?.namespace, "team-a");
  assert.equal(status?.name, "prod");
  const ready = status?.status.conditions?.[0];
  assert.equal(ready?.type, "Ready");
  assert.equal(ready?.status, "True");
  assert.equal(ready?.reason, "Enforced");
  assert.equal(
    ready?.message,
    `deleting and updating vpcs/core is denied while this Lock exists (webhook installed in ${NETWORK_PATH})`,
  );
  assert.deepEqual([...installed.lockReady], [["True/Enforced", 1]]);
  assert.deepEqual([...installed.ready], []);
  const typo = planReconcile({
    ...networkInput([], []),
    exports: new Map([[
      exportKey({ workspace: NETWORK_PATH, name: VPCS.group }),
      { answer: NETWORK_EXPORT },
    ]]),
    locks: [lockSource({
      apiExportRef: { path: NETWORK_PATH, name: VPCS.group },
      ...VPCS,
      resource: "vpcz",
      name: "core",
    }, ["Delete"])],
  });
  const failed = typo.statuses[0]?.status.conditions?.[0];
  assert.equal(failed?.status, "False");
  assert.equal(failed?.reason, "TargetTypeUnknown");
  assert.deepEqual([...typo.lockReady], [["False/TargetTypeUnknown", 1]]);
});

Deno.test("planLockStatuses() says why a Lock is not placed, and waits for one whose configuration is being written", () => {
  const lock = lockSource({ ...VPCS, name: "core" }, ["Delete"]);
  const key = lockKey(CONSUMER, "team-a", "prod");
  const placement = (state: LockState): LockPlacement => ({
    desired: new Map(),
    paths: new Set(),
    providerPaths: new Map(),
    exports: new Map(),
    targets: new Map(),
    unsure: false,
    states: new Map([[key, state]]),
    locks: new Map(),
  });
  const context = {
    settings: SETTINGS,
    installErrors: new Map<string, string>(),
    pendingClusters: new Set([CONSUMER]),
    now: NOW,
    memo: new PlanMemo(),
  };
  const failed = planLockStatuses([lock], {
    ...context,
    placement: placement({
      state: "failed",
      reason: "ProviderNotBound",
      message: "not bound",
    }),
  });
  assert.deepEqual(failed.statuses, [{
    cluster: CONSUMER,
    name: "prod",
    namespace: "team-a",
    endpoint: ENDPOINT,
    resourceVersion: "",
    status: {
      conditions: [{
        type: READY_CONDITION,
        status: "False",
        reason: "ProviderNotBound",
        message: "not bound",
        lastTransitionTime: NOW,
      }],
    },
  }]);
  assert.deepEqual([...failed.ready], [["False/ProviderNotBound", 1]]);
  const writing = planLockStatuses([lock], {
    ...context,
    placement: placement({
      state: "ok",
      cluster: CONSUMER,
      shown: "the Lock's workspace",
    }),
  });
  assert.deepEqual(writing, { statuses: [], ready: new Map() });
});

Deno.test("planLockStatuses() says a Lock not placed (ProviderMismatch) is Enforced when the configuration kcp calls for its type covers it for others", () => {
  const lock = lockSource({ ...VPCS, name: "core" }, ["Delete", "Update"]);
  const parsed = parseLock(lock.object);
  assert.ok(parsed.ok);
  const key = lockKey(CONSUMER, "team-a", "prod");
  const mismatch = {
    state: "failed" as const,
    reason: "ProviderMismatch" as const,
    message:
      `vpcs.network.example.com is bound from the APIExport network.example.com in ${NETWORK_PATH}, whose webhook configuration kcp calls for it: set spec.target.apiExportRef to {path: ${NETWORK_PATH}, name: network.example.com}`,
    calledIn: { cluster: NETWORK, shown: NETWORK_PATH },
  };
  const placement: LockPlacement = {
    desired: new Map(),
    paths: new Set(),
    providerPaths: new Map(),
    exports: new Map(),
    targets: new Map(),
    unsure: false,
    states: new Map([[key, mismatch]]),
    locks: new Map([[key, parsed.lock]]),
  };
  const context = {
    settings: SETTINGS,
    installErrors: new Map<string, string>(),
    pendingClusters: new Set<string>(),
    now: NOW,
    memo: new PlanMemo(),
    placement,
  };
  const ready = (
    types: { operations: ("DELETE" | "UPDATE")[] }[] | undefined,
    more: { pending?: boolean; error?: string } = {},
  ) => {
    const planned = planLockStatuses([lock], {
      ...context,
      ...(more.pending
        ? {
          pendingClusters: new Set([NETWORK]),
          installErrors: new Map(
            more.error === undefined ? [] : [[NETWORK, more.error]],
          ),
        }
        : {}),
      desired: new Map([[
        NETWORK,
        new Map((types ?? []).map((t, i) => [`${i}`, { ...VPCS, ...t }])),
      ]]),
    });
    return planned.statuses[0]?.status.conditions?.[0];
  };
  // Covered for every operation of the Lock: the webhook holds it, and the
  // status says so, and why it is fragile.
  const enforced = ready([{ operations: ["DELETE"] }, {
    operations: ["UPDATE"],
  }]);
  assert.equal(enforced?.status, "True");
  assert.equal(enforced?.reason, "Enforced");
  assert.match(
    enforced?.message ?? "",
    new RegExp(
      `^deleting and updating vpcs/core is denied while this Lock exists: kcp calls the webhook configuration of ${NETWORK_PATH} for vpcs\\.network\\.example\\.com, which covers it for other rules or Locks there.*not placed there itself.*set spec\\.target\\.apiExportRef`,
    ),
  );
  // Deletes only: not all it asks, but the status says what it still denies.
  const partly = ready([{ operations: ["DELETE"] }]);
  assert.equal(partly?.status, "False");
  assert.equal(partly?.reason, "ProviderMismatch");
  assert.match(
    partly?.message ?? "",
    /; meanwhile deleting vpcs\/core is denied while this Lock exists/,
  );
  // Not covered: not placed, and nothing denies.
  const idle = ready(undefined);
  assert.equal(idle?.reason, "ProviderMismatch");
  assert.equal(idle?.message, mismatch.message);
  // While that configuration is written, nothing is said; if it fails, the
  // mismatch alone.
  assert.equal(
    ready([{ operations: ["DELETE"] }], { pending: true }),
    undefined,
  );
  assert.equal(
    ready([{ operations: ["DELETE"] }], { pending: true, error: "boom" })
      ?.message,
    mismatch.message,
  );
});

/** `lockSource` of vpcs/core with `spec.expiresAt`. */
function expiringLock(expiresAt: unknown) {
  const source = lockSource({
    apiExportRef: { path: NETWORK_PATH, name: VPCS.group },
    ...VPCS,
    name: "core",
  }, ["Delete"]);
  const spec = source.object.spec as Record<string, unknown>;
  return {
    ...source,
    object: { ...source.object, spec: { ...spec, expiresAt } },
  };
}

/** The plan of one Lock with its configuration in place, at `now`. */
function planAt(lock: ReturnType<typeof expiringLock>, now = NOW) {
  return planReconcile({
    ...networkInput([], []),
    configurations: [configuration(NETWORK, [{ ...VPCS }])],
    locks: [lock],
    now,
  });
}

Deno.test("planReconcile() reports a Lock Expired from its expiresAt on, by the plan's clock, and wakes for the next", () => {
  // NOW is 2025-06-01T12:00:00Z.
  const before = planAt(expiringLock("2025-06-01T12:00:30Z"));
  assert.equal(before.statuses[0]?.status.conditions?.[0]?.reason, "Enforced");
  assert.equal(before.nextLockExpiry, Date.parse("2025-06-01T12:00:30Z"));
  const at = planAt(expiringLock("2025-06-01T12:00:00Z"));
  const expired = at.statuses[0]?.status.conditions?.[0];
  assert.equal(expired?.status, "False");
  assert.equal(expired?.reason, "Expired");
  assert.match(
    expired?.message ?? "",
    /^expired at 2025-06-01T12:00:00Z: vpcs\/core is no longer held by this Lock /,
  );
  assert.deepEqual([...at.lockReady], [["False/Expired", 1]]);
  assert.equal(at.nextLockExpiry, undefined);
  // An offset names the same instant.
  assert.equal(
    planAt(expiringLock("2025-06-01T13:00:00+01:00")).statuses[0]?.status
      .conditions?.[0]?.reason,
    "Expired",
  );
  // A Lock without expiresAt: nothing to wake for.
  assert.equal(planAt(expiringLock(undefined)).nextLockExpiry, undefined);
});

Deno.test("planReconcile() reports a Lock already expired at creation at once, before it is even placed", () => {
  // The configuration is still to be written: a Lock in effect says nothing yet.
  const plan = planReconcile({
    ...networkInput([], []),
    locks: [expiringLock("2020-01-01T00:00:00Z")],
  });
  assert.equal(plan.statuses[0]?.status.conditions?.[0]?.reason, "Expired");
});

Deno.test("planReconcile() holds a Lock with a malformed expiresAt without it, and says InvalidSpec", () => {
  const plan = planAt(expiringLock("tomorrow"));
  const ready = plan.statuses[0]?.status.conditions?.[0];
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "InvalidSpec");
  assert.match(
    ready?.message ?? "",
    /^spec\.expiresAt: must be an RFC 3339 date-time.*; until it is fixed the Lock holds as one without spec\.expiresAt, until deleted$/,
  );
  // Placed all the same: its configuration is kept, nothing to write.
  assert.deepEqual(plan.configurations, []);
  assert.equal(plan.nextLockExpiry, undefined);
});
