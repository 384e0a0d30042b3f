import assert from "node:assert/strict";
import type { KubeObject } from "../kcp/mod.ts";
import type { GroupVersionResource } from "../rules/mod.ts";
import {
  desiredWebhookConfiguration,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  providerUrl,
  updatedWebhookConfiguration,
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_NAME,
  type WebhookClientSettings,
  webhookConfigurationUpToDate,
} from "./webhook_config.ts";
import { SUBNETS, VPCS } from "../../testing/fakes.ts";
import { CONTROLLER_COLLECTIONS } from "./reconciler.ts";

const SETTINGS: WebhookClientSettings = {
  url: "https://webhook.example.com:9443/validate",
  caBundle: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
  timeoutSeconds: 10,
};

const VPCS_V1: GroupVersionResource = { ...VPCS, version: "v1" };
const GATEWAYS: GroupVersionResource = {
  group: "edge.example.com",
  version: "v1",
  resource: "gateways",
};

/** The webhook entries of a VWC, typed loosely for inspection. */
function webhooksOf(object: KubeObject): Record<string, unknown>[] {
  assert.ok(Array.isArray(object.webhooks));
  return object.webhooks;
}

/** The only webhook entry of a VWC. */
function webhookOf(object: KubeObject): Record<string, unknown> {
  const webhooks = webhooksOf(object);
  assert.equal(webhooks.length, 1);
  const [webhook] = webhooks;
  assert.ok(webhook !== undefined);
  return webhook;
}

/** `[group, version, resource]` of each rule of the only webhook, in order. */
function ruleTypes(object: KubeObject): string[][] {
  const rules = webhookOf(object).rules;
  assert.ok(Array.isArray(rules));
  return rules.map((rule) => [
    ...rule.apiGroups,
    ...rule.apiVersions,
    ...rule.resources,
  ]);
}

/**
 * `desired` as the API server returns it: identity metadata, a cluster
 * annotation, someone else's label, a managedFields entry, empty
 * matchConditions and every field round-tripped through JSON.
 */
function serverCopy(desired: KubeObject): KubeObject {
  const copy: KubeObject = JSON.parse(JSON.stringify(desired));
  copy.metadata = {
    ...copy.metadata,
    uid: "6f1c3a9e-0000-4000-8000-000000000001",
    resourceVersion: "4711",
    generation: 3,
    creationTimestamp: "2025-01-01T00:00:00Z",
    labels: { ...copy.metadata?.labels, "team": "network" },
    annotations: { "kcp.io/cluster": "2abc9xyz" },
    managedFields: [{ manager: "deno", operation: "Update" }],
  };
  for (const webhook of webhooksOf(copy)) {
    webhook.matchConditions = [];
  }
  return copy;
}

/** A server copy of the default desired VWC, changed by `change`. */
function changedCopy(
  change: (webhook: Record<string, unknown>, copy: KubeObject) => void,
): { current: KubeObject; desired: KubeObject } {
  const desired = desiredWebhookConfiguration([VPCS, SUBNETS], SETTINGS);
  const current = serverCopy(desired);
  change(webhookOf(current), current);
  return { current, desired };
}

Deno.test("desiredWebhookConfiguration() sets every fixed field", () => {
  const desired = desiredWebhookConfiguration([VPCS], SETTINGS);
  assert.deepEqual(desired, {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: {
      name: "dependency-controller",
      labels: { "app.kubernetes.io/managed-by": "dependency-controller" },
    },
    webhooks: [{
      name: "dependency-controller.dependencies.opendefense.cloud",
      clientConfig: {
        url: "https://webhook.example.com:9443/validate",
        caBundle: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
      },
      rules: [{
        apiGroups: ["network.example.com"],
        apiVersions: ["v1alpha1"],
        resources: ["vpcs"],
        operations: ["DELETE"],
        scope: "*",
      }],
      failurePolicy: "Fail",
      matchPolicy: "Equivalent",
      namespaceSelector: {},
      objectSelector: {},
      sideEffects: "None",
      timeoutSeconds: 10,
      admissionReviewVersions: ["v1"],
    }],
  });
  assert.equal(desired.metadata?.name, WEBHOOK_CONFIGURATION_NAME);
  assert.equal(webhookOf(desired).name, WEBHOOK_NAME);
});

Deno.test("desiredWebhookConfiguration() has one rule per distinct type, sorted by group, version, resource", () => {
  const types = [VPCS, GATEWAYS, SUBNETS, VPCS_V1, VPCS, SUBNETS];
  const expected = [
    ["edge.example.com", "v1", "gateways"],
    ["network.example.com", "v1", "vpcs"],
    ["network.example.com", "v1alpha1", "subnets"],
    ["network.example.com", "v1alpha1", "vpcs"],
  ];
  assert.deepEqual(
    ruleTypes(desiredWebhookConfiguration(types, SETTINGS)),
    expected,
  );
  assert.deepEqual(
    desiredWebhookConfiguration([...types].reverse(), SETTINGS),
    desiredWebhookConfiguration(types, SETTINGS),
  );
});

Deno.test("desiredWebhookConfiguration() returns a fresh object each time", () => {
  const first = desiredWebhookConfiguration([VPCS], SETTINGS);
  webhookOf(first).timeoutSeconds = 30;
  assert.equal(
    webhookOf(desiredWebhookConfiguration([VPCS], SETTINGS)).timeoutSeconds,
    10,
  );
});

Deno.test("webhookConfigurationUpToDate() is true for the desired object itself and for a server copy", () => {
  const desired = desiredWebhookConfiguration([VPCS, SUBNETS], SETTINGS);
  assert.equal(webhookConfigurationUpToDate(desired, desired), true);
  assert.equal(
    webhookConfigurationUpToDate(serverCopy(desired), desired),
    true,
  );
});

Deno.test("webhookConfigurationUpToDate() ignores absent matchConditions and absent selectors", () => {
  const { current, desired } = changedCopy((webhook) => {
    delete webhook.matchConditions;
    delete webhook.namespaceSelector;
    webhook.objectSelector = { matchLabels: {}, matchExpressions: [] };
  });
  assert.equal(webhookConfigurationUpToDate(current, desired), true);
});

Deno.test("webhookConfigurationUpToDate() is false when a field we set differs", async (t) => {
  const cases: {
    name: string;
    change: (webhook: Record<string, unknown>, copy: KubeObject) => void;
  }[] = [
    {
      name: "url",
      change: (webhook) => {
        webhook.clientConfig = {
          url: "https://old.example.com/validate",
          caBundle: SETTINGS.caBundle,
        };
      },
    },
    {
      name: "caBundle",
      change: (webhook) => {
        webhook.clientConfig = { url: SETTINGS.url, caBundle: "b2xk" };
      },
    },
    {
      name: "timeoutSeconds",
      change: (webhook) => {
        webhook.timeoutSeconds = 30;
      },
    },
    {
      name: "a rule's resource",
      change: (webhook) => {
        webhook.rules = [
          {
            apiGroups: ["network.example.com"],
            apiVersions: ["v1alpha1"],
            resources: ["subnets"],
            operations: ["DELETE"],
            scope: "*",
          },
          {
            apiGroups: ["network.example.com"],
            apiVersions: ["v1alpha1"],
            resources: ["routers"],
            operations: ["DELETE"],
            scope: "*",
          },
        ];
      },
    },
    {
      name: "a rule's operations",
      change: (webhook) => {
        assert.ok(Array.isArray(webhook.rules));
        webhook.rules[0].operations = ["DELETE", "UPDATE"];
      },
    },
    {
      name: "a missing rule",
      change: (webhook) => {
        assert.ok(Array.isArray(webhook.rules));
        webhook.rules = webhook.rules.slice(1);
      },
    },
    {
      name: "rule order",
      change: (webhook) => {
        assert.ok(Array.isArray(webhook.rules));
        webhook.rules = [...webhook.rules].reverse();
      },
    },
    {
      name: "failurePolicy",
      change: (webhook) => {
        webhook.failurePolicy = "Ignore";
      },
    },
    {
      name: "namespaceSelector",
      change: (webhook) => {
        webhook.namespaceSelector = { matchLabels: { protected: "true" } };
      },
    },
    {
      name: "non-empty matchConditions",
      change: (webhook) => {
        webhook.matchConditions = [{ name: "never", expression: "false" }];
      },
    },
    {
      name: "webhook name",
      change: (webhook) => {
        webhook.name = "other.example.com";
      },
    },
    {
      name: "an extra webhook",
      change: (webhook, copy) => {
        copy.webhooks = [webhook, { ...webhook, name: "other.example.com" }];
      },
    },
    {
      name: "no webhooks",
      change: (_webhook, copy) => {
        delete copy.webhooks;
      },
    },
    {
      name: "our label's value",
      change: (_webhook, copy) => {
        copy.metadata = {
          ...copy.metadata,
          labels: { [MANAGED_BY_LABEL]: "someone-else" },
        };
      },
    },
    {
      name: "our label missing",
      change: (_webhook, copy) => {
        copy.metadata = { ...copy.metadata, labels: { team: "network" } };
      },
    },
  ];
  for (const { name, change } of cases) {
    await t.step(name, () => {
      const { current, desired } = changedCopy(change);
      assert.equal(webhookConfigurationUpToDate(current, desired), false);
    });
  }
});

Deno.test("webhookConfigurationUpToDate() is false when the desired types changed", () => {
  const current = serverCopy(desiredWebhookConfiguration([VPCS], SETTINGS));
  const desired = desiredWebhookConfiguration([VPCS, SUBNETS], SETTINGS);
  assert.equal(webhookConfigurationUpToDate(current, desired), false);
});

Deno.test("updatedWebhookConfiguration() keeps current metadata, adds our label and takes desired webhooks", () => {
  const old = desiredWebhookConfiguration([VPCS], {
    ...SETTINGS,
    url: "https://old.example.com/validate",
  });
  const current = serverCopy(old);
  delete current.metadata?.labels?.[MANAGED_BY_LABEL];
  const desired = desiredWebhookConfiguration([VPCS, SUBNETS], SETTINGS);

  const updated = updatedWebhookConfiguration(current, desired);

  assert.equal(updated.apiVersion, "admissionregistration.k8s.io/v1");
  assert.equal(updated.kind, "ValidatingWebhookConfiguration");
  assert.equal(updated.metadata?.name, WEBHOOK_CONFIGURATION_NAME);
  assert.equal(updated.metadata?.resourceVersion, "4711");
  assert.equal(updated.metadata?.uid, current.metadata?.uid);
  assert.deepEqual(updated.metadata?.labels, {
    team: "network",
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
  });
  assert.deepEqual(updated.metadata?.annotations, {
    "kcp.io/cluster": "2abc9xyz",
  });
  assert.deepEqual(updated.webhooks, desired.webhooks);
  assert.equal(webhookConfigurationUpToDate(updated, desired), true);
  assert.equal(
    webhookConfigurationUpToDate(serverCopy(updated), desired),
    true,
  );
});

Deno.test("updatedWebhookConfiguration() does not share objects with its inputs", () => {
  const desired = desiredWebhookConfiguration([VPCS], SETTINGS);
  const current = serverCopy(desired);
  const updated = updatedWebhookConfiguration(current, desired);
  assert.ok(updated.metadata?.labels !== undefined);
  updated.metadata.labels.extra = "yes";
  webhookOf(updated).timeoutSeconds = 1;
  assert.equal(current.metadata?.labels?.extra, undefined);
  assert.equal(webhookOf(desired).timeoutSeconds, 10);
});

Deno.test("desiredWebhookConfiguration() carries the label the controller selects its configurations by, which an update keeps", () => {
  const ours = desiredWebhookConfiguration([VPCS], SETTINGS);
  const selector = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
  assert.equal(CONTROLLER_COLLECTIONS.configurations.labelSelector, selector);
  assert.equal(ours.metadata?.labels?.[MANAGED_BY_LABEL], MANAGED_BY_VALUE);
  const updated = updatedWebhookConfiguration(serverCopy(ours), ours);
  assert.equal(updated.metadata?.labels?.[MANAGED_BY_LABEL], MANAGED_BY_VALUE);
});

Deno.test("providerUrl() adds the provider's workspace path as the last segment", () => {
  const cases: [string, string, string][] = [
    [
      "https://webhook.example.com:9443/validate",
      "root:org:network",
      "https://webhook.example.com:9443/validate/root:org:network",
    ],
    [
      "https://webhook.example.com/validate/",
      "root",
      "https://webhook.example.com/validate/root",
    ],
    [
      "https://10.0.0.1/hooks/deps/validate?x=1",
      "root:a",
      "https://10.0.0.1/hooks/deps/validate/root:a?x=1",
    ],
    ["https://host", "root:a", "https://host/root:a"],
  ];
  for (const [url, path, want] of cases) {
    assert.equal(providerUrl(url, path), want, `${url} + ${path}`);
  }
});

Deno.test("desiredWebhookConfiguration() merges the operations of a type, in canonical order", () => {
  const config = desiredWebhookConfiguration([
    { ...VPCS, operations: ["UPDATE"] },
    VPCS,
    { ...SUBNETS, operations: ["UPDATE"] },
  ], SETTINGS);
  const hooks = config.webhooks as {
    rules: { resources: string[]; operations: string[] }[];
  }[];
  assert.deepEqual(
    hooks[0]!.rules.map((r) => [r.resources[0], r.operations]),
    [["subnets", ["UPDATE"]], ["vpcs", ["DELETE", "UPDATE"]]],
  );
});
