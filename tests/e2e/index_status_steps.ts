/**
 * The rule's `Indexed` condition on a real kcp, as an operator meets it:
 * the webhook and the controller run with `--dependents-index`, and the
 * webhook's reads are first granted without watch (`controller grants`):
 * the rule is `Enforced` (a delete is still denied: the webhook lists) and
 * says `Indexed=False` with `WebhookCannotWatch`, naming the grants to
 * apply. Once they are (`controller grants --dependents-index`,
 * `manifests/kcp/system-admin/dependents-index`), it says `Indexed=True`,
 * and the webhook's index does sync.
 *
 * It needs a kcp where `manifests/kcp/system-admin/dependents-index` was
 * never applied (the condition names it as missing) and where no other
 * rule is indexed (the index's sync is read from all its feeds).
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertDeleteDenied,
  buildTopology,
  type ComponentWorld,
  grantWebhookReads,
  type KcpApi,
  namespaceObject,
  type Step,
  targetsOf,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  type WorldPaths,
} from "../../testing/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A rule's condition as kubectl shows it. */
interface ShownCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** A rule, by its workspace and name. */
interface RuleRef {
  workspace: string;
  name: string;
}

/** The rule's conditions, for its current generation (else none). */
async function conditionsOf(
  kcp: KcpApi,
  rule: RuleRef,
): Promise<ShownCondition[]> {
  const object = JSON.parse(
    await kcp.kubectlOk(
      ["get", "dependencyrules", rule.name, "-o", "json"],
      { workspace: rule.workspace },
    ),
  ) as {
    metadata: { generation: number };
    status?: { observedGeneration?: number; conditions?: ShownCondition[] };
  };
  return object.status?.observedGeneration === object.metadata.generation
    ? object.status?.conditions ?? []
    : [];
}

/** Waits until the rule's Indexed condition has `reason`, and returns it. */
function waitForIndexed(
  kcp: KcpApi,
  rule: RuleRef,
  reason: string,
): Promise<ShownCondition> {
  return waitFor(`rule ${rule.name} to say Indexed ${reason}`, async () => {
    const indexed = (await conditionsOf(kcp, rule)).find((c) =>
      c.type === "Indexed"
    );
    if (indexed?.reason === reason) return indexed;
    throw new Error(`Indexed is ${JSON.stringify(indexed)}`);
  }, { timeoutMs: 90_000, intervalMs: 500 });
}

/**
 * The steps of "the Indexed condition: WebhookCannotWatch, naming the
 * grants, while the rule is enforced by listing; Indexed once they are
 * applied", in the world at `paths`. Its first step starts the components
 * (both with `--dependents-index`); the caller stops them afterwards.
 */
export async function indexStatusSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const NETWORK = paths.network;
  const COMPUTE = paths.compute;
  const C1 = paths.consumer("c1");
  const RULE = { workspace: COMPUTE, name: "vm-vpc" };
  const vpc = targetsOf(C1, "vpc")("team-a", "vpc-a");
  const message =
    "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";

  await step(
    "providers and a consumer; webhook and controller with --dependents-index; the rule, with the reads granted without watch",
    async () => {
      await buildTopology(kcp, {
        networkPath: NETWORK,
        computePath: COMPUTE,
        consumerPaths: [C1],
      });
      await applyObjects(kcp, C1, [namespaceObject("team-a")]);
      await world.startComponents({
        webhook: { args: ["--dependents-index"] },
        controller: { args: ["--dependents-index"] },
      });
      await applyObjects(kcp, COMPUTE, [vmVpcRule(NETWORK)]);
      const role = await grantWebhookReads(kcp);
      assert.doesNotMatch(role, /apiexports\/content/);
    },
  );

  await step(
    "the rule is Enforced and says Indexed=False WebhookCannotWatch, naming what to grant and how",
    async () => {
      await waitForRuleEnforced(kcp, RULE, { timeoutMs: 90_000 });
      const indexed = await waitForIndexed(kcp, RULE, "WebhookCannotWatch");
      assert.equal(indexed.status, "False");
      for (
        const text of [
          "dependency-webhook may not watch virtualmachines.compute.example.com",
          "list apiexports.apis.kcp.io/content compute.example.com",
          "watch apiexports.apis.kcp.io/content compute.example.com",
          "list apiexportendpointslices.apis.kcp.io",
          "deletes stay protected",
          "in system:admin of every shard",
          "controller grants --dependents-index --kubeconfig=<webhook kubeconfig> | kubectl apply -f -",
          "kubectl apply -k manifests/kcp/system-admin/dependents-index",
        ]
      ) {
        assert.ok(
          indexed.message.includes(text),
          `${text}\n${indexed.message}`,
        );
      }
      // Ready is what it is without the index: the webhook lists.
      const ready = (await conditionsOf(kcp, RULE)).find((c) =>
        c.type === "Ready"
      );
      assert.deepEqual([ready?.status, ready?.reason], ["True", "Enforced"]);
    },
  );

  await step(
    "status truth: the Enforced rule proves itself, a delete of a VPC a VM names is denied",
    async () => {
      await applyObjects(kcp, C1, [
        vpcManifest("vpc-a", { namespace: "team-a" }),
        vmManifest("vm-1", { namespace: "team-a", vpc: "vpc-a" }),
      ]);
      await waitForDeleteDenial(kcp, vpc, message);
      await assertDeleteDenied(kcp, vpc, message);
    },
  );

  await step(
    "granted with --dependents-index and the endpoint slices' manifest: Indexed=True, and the index syncs",
    async () => {
      const role = await grantWebhookReads(kcp, { dependentsIndex: true });
      assert.match(role, /apiexports\/content/);
      await kcp.kubectlOk(
        ["apply", "-k", `${ROOT}manifests/kcp/system-admin/dependents-index`],
        { workspace: "system:admin", identity: "shardAdmin" },
      );
      const indexed = await waitForIndexed(kcp, RULE, "Indexed");
      assert.equal(indexed.status, "True");
      assert.match(
        indexed.message,
        /dependency-webhook may watch virtualmachines\.compute\.example\.com and the content of the APIExport compute\.example\.com/,
      );
      const ready = (await conditionsOf(kcp, RULE)).find((c) =>
        c.type === "Ready"
      );
      assert.deepEqual([ready?.status, ready?.reason], ["True", "Enforced"]);
      // What it says is so: the webhook's index of VMs syncs.
      const { webhook } = world.components();
      await waitFor("the index feed to sync", async () => {
        const response = await fetch(
          `http://127.0.0.1:${webhook.metricsPort}/metrics`,
        );
        const text = await response.text();
        return /^dependency_webhook_index_feeds\{[^}]*state="synced"\} [1-9]/m
          .test(text) || undefined;
      }, { timeoutMs: 90_000 });
      // And deletes are denied all the same.
      await assertDeleteDenied(kcp, vpc, message);
    },
  );
}
