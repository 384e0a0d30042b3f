import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import { READY_CONDITION } from "../rules/mod.ts";
import { exportKey } from "../exports/mod.ts";
import { VPCS } from "../../testing/mod.ts";
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
