import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import { READY_CONDITION } from "../rules/mod.ts";
import type { KubeObject } from "../kcp/mod.ts";
import { VPCS } from "../../testing/fakes.ts";
import { planReconcile } from "./reconcile_plan.ts";
import { StatusTally, statusUpToDate } from "./status_tally.ts";
import {
  EARLIER,
  ENDPOINT,
  networkInput,
  NOW,
  vmRule,
} from "../../testing/plan_fixtures.ts";

Deno.test("statusUpToDate() compares generation, types, statuses, reasons and messages but not times", () => {
  const status = planReconcile(networkInput([vmRule()], [VPCS])).statuses[0]!
    .status;
  const shown = (change: (s: typeof status) => void): KubeObject => {
    const copy = structuredClone(status);
    change(copy);
    return vmRule(copy).object;
  };
  assert.equal(statusUpToDate(shown(() => {}), status), true);
  assert.equal(
    statusUpToDate(
      shown((s) => {
        for (const c of s.conditions ?? []) c.lastTransitionTime = EARLIER;
        s.conditions?.reverse();
      }),
      status,
    ),
    true,
  );
  const different: [string, (s: typeof status) => void][] = [
    ["observedGeneration", (s) => s.observedGeneration = 2],
    [
      "a condition's generation",
      (s) => s.conditions![0]!.observedGeneration = 2,
    ],
    ["a status", (s) => s.conditions![0]!.status = "Unknown"],
    ["a reason", (s) => s.conditions![1]!.reason = "DependencyCycle"],
    ["a message", (s) => s.conditions![1]!.message = "old"],
    ["a missing condition", (s) => s.conditions!.pop()],
    [
      "an extra condition",
      (s) => s.conditions!.push({ ...s.conditions![0]!, type: "Other" }),
    ],
  ];
  for (const [what, change] of different) {
    assert.equal(statusUpToDate(shown(change), status), false, what);
  }
  assert.equal(statusUpToDate(vmRule().object, status), false, "no status");
});

Deno.test("StatusTally plans a write only where the object does not show the conditions, and counts objects by their Ready condition", () => {
  const ready = {
    type: READY_CONDITION,
    status: "True" as const,
    reason: "Enforced",
    message: "enforced",
    lastTransitionTime: "",
  };
  const tally = new StatusTally(new PlanMemo());
  const fresh = vmRule();
  tally.count(ready);
  tally.write(fresh, { now: NOW, conditions: [ready] });
  assert.deepEqual(tally.statuses, [{
    cluster: "1consumer7x",
    name: "virtualmachines-need-vpcs",
    endpoint: ENDPOINT,
    resourceVersion: "1001",
    status: {
      observedGeneration: 3,
      conditions: [{
        ...ready,
        observedGeneration: 3,
        lastTransitionTime: NOW,
      }],
    },
  }]);
  // Shown already (another transition time): no write, and it counts as shown.
  const shown = vmRule({
    observedGeneration: 3,
    conditions: [{
      ...ready,
      observedGeneration: 3,
      lastTransitionTime: EARLIER,
    }],
  });
  tally.write(shown, { now: NOW, conditions: [ready] });
  tally.countShown(shown.object);
  tally.countShown(vmRule().object);
  assert.equal(tally.statuses.length, 1);
  assert.deepEqual([...tally.ready], [["True/Enforced", 2]]);
});
