import assert from "node:assert/strict";
import type { EndpointObject } from "../kcp/mod.ts";
import { exportKey, type ExportReading } from "../exports/mod.ts";
import {
  lockKey,
  type LockPlacementContext,
  planLockPlacement,
} from "./lock_plan.ts";
import { type LockTargetAnswer, lockTargetKey } from "./lock_targets.ts";
import type { Reading } from "../runtime/mod.ts";

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

/** The network export's reading, also under `path`, serving `resources`. */
function networkExports(
  paths: string[],
  resources: string[] = ["vpcs"],
): Map<string, ExportReading> {
  return new Map(paths.map((path) => [
    exportKey({ workspace: path, name: "network.example.com" }),
    {
      answer: {
        found: true,
        types: resources.map((resource) => ({
          group: "network.example.com",
          resource,
          versions: ["v1alpha1"],
          kind: resource,
        })),
      },
    },
  ]));
}

/** What the Lock's workspace says of its target types, by `lockTargetKey`. */
function targets(
  entries: [Record<string, unknown>, Reading<LockTargetAnswer>][],
): Map<string, Reading<LockTargetAnswer>> {
  return new Map(entries.map(([target, reading]) => [
    lockTargetKey({
      cluster: CONSUMER,
      group: String(target.group),
      version: String(target.version),
      resource: String(target.resource),
    }),
    reading,
  ]));
}

Deno.test("planLockPlacement() places a Lock while it asks the Lock's workspace about its target, its status waiting for the answer", () => {
  const placement = planLockPlacement([lockObject("prod", VPC_TARGET)], {
    ...context(),
    targets: new Map(),
  });
  assert.deepEqual(placement.states.get(KEY), {
    state: "ok",
    cluster: NETWORK,
    shown: NETWORK_PATH,
    checking: true,
  });
  assert.deepEqual([...placement.targets.values()], [{
    cluster: CONSUMER,
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
  }]);
  // Protection does not wait for the check.
  assert.equal(placement.desired.get(NETWORK)?.length, 1);
});

Deno.test("planLockPlacement() places a Lock whose target is bound from the export it names", () => {
  const placement = planLockPlacement([lockObject("prod", VPC_TARGET)], {
    ...context(),
    targets: targets([[VPC_TARGET, {
      answer: {
        served: true,
        namespaced: true,
        boundFrom: { path: NETWORK_PATH, name: "network.example.com" },
      },
    }]]),
  });
  assert.deepEqual(placement.states.get(KEY), {
    state: "ok",
    cluster: NETWORK,
    shown: NETWORK_PATH,
  });
});

Deno.test("planLockPlacement() refuses a Lock without apiExportRef on a bound type, naming the export to set", () => {
  const { apiExportRef: _, ...ownTarget } = VPC_TARGET;
  const placement = planLockPlacement([lockObject("prod", ownTarget)], {
    ...context(),
    targets: targets([[ownTarget, {
      answer: {
        served: true,
        namespaced: true,
        boundFrom: { path: NETWORK_PATH, name: "network.example.com" },
      },
    }]]),
  });
  const state = placement.states.get(KEY);
  assert.equal(state?.state, "failed");
  assert.equal(state.state === "failed" && state.reason, "ProviderMismatch");
  assert.match(
    state.state === "failed" ? state.message : "",
    /bound from the APIExport network\.example\.com in root:providers:network.*set spec\.target\.apiExportRef to \{path: root:providers:network, name: network\.example\.com\}/,
  );
  // Not placed in the Lock's own configuration, which kcp never calls for it.
  assert.equal(placement.desired.size, 0);
  // Where kcp does call the webhook for it, for its status to say whether
  // the webhook holds it there all the same.
  assert.ok(placement.paths.has(NETWORK_PATH));
  assert.deepEqual(
    state.state === "failed" ? state.calledIn : undefined,
    { cluster: NETWORK, shown: NETWORK_PATH },
  );
});

Deno.test("planLockPlacement() refuses a Lock on a cluster-scoped type, but not on its namespace", () => {
  const attachment = {
    ...VPC_TARGET,
    resource: "vpcattachments",
  };
  const namespace = {
    group: "",
    version: "v1",
    resource: "namespaces",
    name: "team-a",
  };
  const placement = planLockPlacement([
    lockObject("prod", attachment),
    lockObject("ns", namespace),
  ], {
    ...context({
      exports: networkExports([NETWORK_PATH], ["vpcs", "vpcattachments"]),
    }),
    targets: targets([
      [attachment, {
        answer: {
          served: true,
          namespaced: false,
          boundFrom: { path: NETWORK_PATH, name: "network.example.com" },
        },
      }],
      [namespace, { answer: { served: true, namespaced: false } }],
    ]),
  });
  const state = placement.states.get(KEY);
  assert.equal(
    state?.state === "failed" && state.reason,
    "ClusterScopedTarget",
  );
  assert.deepEqual(placement.states.get(lockKey(CONSUMER, "team-a", "ns")), {
    state: "ok",
    cluster: CONSUMER,
    shown: "the Lock's workspace",
  });
});

Deno.test("planLockPlacement() refuses a Lock that names another export than the one the workspace binds, once both paths resolve", () => {
  const other = {
    ...VPC_TARGET,
    apiExportRef: { path: "root:other", name: "network.example.com" },
  };
  const reading = {
    answer: {
      served: true as const,
      namespaced: true,
      boundFrom: { path: NETWORK_PATH, name: "network.example.com" },
    },
  };
  const exports = networkExports([NETWORK_PATH, "root:other"]);
  const waiting = planLockPlacement([lockObject("prod", other)], {
    ...context({ exports }),
    targets: targets([[other, reading]]),
  });
  // Its own path is not resolved yet.
  assert.deepEqual(waiting.states.get(KEY), { state: "pending" });

  assert.ok(waiting.paths.has("root:other"));
  const placement = planLockPlacement([lockObject("prod", other)], {
    ...context({
      resolutions: new Map([
        [NETWORK_PATH, { cluster: NETWORK }],
        ["root:other", { cluster: "othercluster" }],
      ]),
      bindings: new Map([
        [NETWORK, { claimAccepted: true }],
        ["othercluster", { claimAccepted: true }],
      ]),
      exports,
    }),
    targets: targets([[other, reading]]),
  });
  const state = placement.states.get(KEY);
  assert.equal(state?.state === "failed" && state.reason, "ProviderMismatch");
  assert.match(
    state?.state === "failed" ? state.message : "",
    /not from network\.example\.com in root:other/,
  );
  // The same export named by another path of the same workspace is fine.
  const samePlace = planLockPlacement([lockObject("prod", other)], {
    ...context({
      resolutions: new Map([
        [NETWORK_PATH, { cluster: NETWORK }],
        ["root:other", { cluster: NETWORK }],
      ]),
      exports,
    }),
    targets: targets([[other, reading]]),
  });
  assert.equal(samePlace.states.get(KEY)?.state, "ok");
});

Deno.test("planLockPlacement() places a Lock whose target could not be checked, with the problem, and refuses a type not served", () => {
  const placement = planLockPlacement([
    lockObject("prod", VPC_TARGET),
    lockObject("cm", CONFIGMAP_TARGET),
  ], {
    ...context(),
    targets: targets([
      [VPC_TARGET, { error: "403 Forbidden" }],
      [CONFIGMAP_TARGET, { answer: { served: false } }],
    ]),
  });
  const state = placement.states.get(KEY);
  assert.equal(state?.state, "ok");
  assert.equal(
    state?.state === "ok" && state.problem?.reason,
    "TargetNotChecked",
  );
  assert.match(
    state?.state === "ok" ? state.problem?.message ?? "" : "",
    /403 Forbidden.*list on apibindings/,
  );
  assert.equal(placement.desired.get(NETWORK)?.length, 1);
  const cm = placement.states.get(lockKey(CONSUMER, "team-a", "cm"));
  assert.equal(cm?.state === "failed" && cm.reason, "TargetTypeUnknown");
});
