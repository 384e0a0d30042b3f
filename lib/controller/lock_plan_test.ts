import assert from "node:assert/strict";
import type { EndpointObject } from "../kcp/mod.ts";
import { exportKey, type ExportReading } from "./export_checks.ts";
import {
  lockKey,
  type LockPlacementContext,
  planLockPlacement,
} from "./lock_plan.ts";

const CONSUMER = "consumercluster";
const NETWORK = "networkcluster";
const NETWORK_PATH = "root:providers:network";

function lockObject(
  name: string,
  target: Record<string, unknown>,
  operations?: string[],
): EndpointObject {
  return {
    endpoint: "https://shard/services/apiexport/x/dep",
    object: {
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "Lock",
      metadata: {
        name,
        namespace: "team-a",
        annotations: { "kcp.io/cluster": CONSUMER },
      },
      spec: {
        target,
        reason: "production",
        ...(operations === undefined ? {} : { operations }),
      },
    },
  };
}

const VPC_TARGET = {
  apiExportRef: { path: NETWORK_PATH, name: "network.example.com" },
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
  name: "core",
};
const CONFIGMAP_TARGET = {
  group: "",
  version: "v1",
  resource: "configmaps",
  name: "settings",
};

function context(
  overrides: Partial<LockPlacementContext> = {},
): LockPlacementContext {
  return {
    resolutions: new Map([[NETWORK_PATH, { cluster: NETWORK }]]),
    bindings: new Map([
      [NETWORK, { claimAccepted: true }],
      [CONSUMER, { claimAccepted: true }],
    ]),
    exports: new Map<string, ExportReading>([[
      exportKey({ workspace: NETWORK_PATH, name: "network.example.com" }),
      {
        answer: {
          found: true,
          types: [{
            group: "network.example.com",
            resource: "vpcs",
            versions: ["v1alpha1"],
            kind: "VPC",
          }],
        },
      },
    ]]),
    exportRef: "root:dep-ctrl:dependencies.opendefense.cloud",
    ...overrides,
  };
}

const KEY = lockKey(CONSUMER, "team-a", "prod");

Deno.test("planLockPlacement() puts a Lock on an exported type in the provider's configuration, with its operations", () => {
  const placement = planLockPlacement(
    [lockObject("prod", VPC_TARGET, ["Delete", "Update"])],
    context(),
  );
  assert.deepEqual(placement.states.get(KEY), {
    state: "ok",
    cluster: NETWORK,
    shown: NETWORK_PATH,
  });
  assert.deepEqual(placement.desired.get(NETWORK), [{
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
    operations: ["DELETE", "UPDATE"],
  }]);
  assert.deepEqual([...placement.paths], [NETWORK_PATH]);
  assert.deepEqual([...placement.exports.values()], [{
    workspace: NETWORK_PATH,
    name: "network.example.com",
  }]);
  assert.equal(placement.unsure, false);
});

Deno.test("planLockPlacement() puts a Lock on the workspace's own type in its own configuration", () => {
  const placement = planLockPlacement(
    [lockObject("prod", CONFIGMAP_TARGET)],
    context(),
  );
  assert.deepEqual(placement.desired.get(CONSUMER), [{
    group: "",
    version: "v1",
    resource: "configmaps",
    operations: ["DELETE"],
  }]);
  for (
    const [bindings, reason] of [
      [new Map(), "ProviderNotBound"],
      [new Map([[CONSUMER, { claimAccepted: false }]]), "ClaimNotAccepted"],
    ] as const
  ) {
    const failed = planLockPlacement(
      [lockObject("prod", CONFIGMAP_TARGET)],
      context({ bindings }),
    );
    const state = failed.states.get(KEY);
    assert.equal(state?.state, "failed");
    assert.equal((state as { reason: string }).reason, reason);
    assert.match(
      (state as { message: string }).message,
      /^the Lock's workspace /,
    );
    assert.equal(failed.desired.size, 0);
  }
});

Deno.test("planLockPlacement() waits for a path or an export not known yet, and removes nothing meanwhile", () => {
  const unresolved = planLockPlacement(
    [lockObject("prod", VPC_TARGET)],
    context({ resolutions: new Map() }),
  );
  assert.deepEqual(unresolved.states.get(KEY), { state: "pending" });
  assert.equal(unresolved.unsure, true);
  assert.deepEqual([...unresolved.paths], [NETWORK_PATH]);
  const unread = planLockPlacement(
    [lockObject("prod", VPC_TARGET)],
    context({ exports: new Map() }),
  );
  assert.deepEqual(unread.states.get(KEY), { state: "pending" });
  assert.equal(unread.unsure, true);
});

Deno.test("planLockPlacement() reports a path that does not resolve and a type the export does not serve", () => {
  const gone = planLockPlacement(
    [lockObject("prod", VPC_TARGET)],
    context({
      resolutions: new Map([[NETWORK_PATH, {
        reason: "NotFound",
        message: "workspace root:providers:network does not exist",
        definitive: true,
      }]]),
    }),
  );
  assert.deepEqual(gone.states.get(KEY), {
    state: "failed",
    reason: "PathNotResolved",
    message: "workspace root:providers:network does not exist",
  });
  assert.equal(gone.unsure, false);
  const typo = planLockPlacement(
    [lockObject("prod", { ...VPC_TARGET, resource: "vpcz" })],
    context(),
  );
  assert.deepEqual(typo.states.get(KEY), {
    state: "failed",
    reason: "TargetTypeUnknown",
    message:
      "the APIExport network.example.com in root:providers:network does not export vpcz.network.example.com: it exports vpcs.network.example.com (v1alpha1)",
  });
  assert.equal(typo.desired.size, 0);
});

Deno.test("planLockPlacement() reports an invalid Lock", () => {
  const placement = planLockPlacement(
    [lockObject("prod", { ...VPC_TARGET, name: "Not/A/Name" })],
    context(),
  );
  const state = placement.states.get(KEY);
  assert.equal(state?.state, "failed");
  assert.equal((state as { reason: string }).reason, "InvalidSpec");
  assert.match((state as { message: string }).message, /spec\.target\.name/);
});
