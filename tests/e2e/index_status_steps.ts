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
  namespaceObject,
  type Step,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForRuleEnforced,
  type WorldPaths,
} from "../../testing/mod.ts";
import {
  anyFeedSynced,
  applyIndexManifest,
  conditionsOf,
  indexWorld,
  waitForIndexed,
} from "../../testing/index_world.ts";

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
  const w = indexWorld(world, paths, { consumers: ["c1"] });
  const { kcp } = w;

  await step(
    "providers and a consumer; webhook and controller with --dependents-index; the rule, with the reads granted without watch",
    async () => {
      await buildTopology(kcp, {
        networkPath: w.network,
        computePath: w.compute,
        consumerPaths: [w.c1],
      });
      await applyObjects(kcp, w.c1, [namespaceObject("team-a")]);
      await world.startComponents({
        webhook: { args: ["--dependents-index"] },
        controller: { args: ["--dependents-index"] },
      });
      await applyObjects(kcp, w.compute, [vmVpcRule(w.network)]);
      const role = await grantWebhookReads(kcp);
      assert.doesNotMatch(role, /apiexports\/content/);
    },
  );

  await step(
    "the rule is Enforced and says Indexed=False WebhookCannotWatch, naming what to grant and how",
    async () => {
      await waitForRuleEnforced(kcp, w.rule, { timeoutMs: 90_000 });
      const indexed = await waitForIndexed(kcp, w.rule, "WebhookCannotWatch");
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
      const ready = (await conditionsOf(kcp, w.rule)).find((c) =>
        c.type === "Ready"
      );
      assert.deepEqual([ready?.status, ready?.reason], ["True", "Enforced"]);
    },
  );

  await step(
    "status truth: the Enforced rule proves itself, a delete of a VPC a VM names is denied",
    async () => {
      await applyObjects(kcp, w.c1, [
        vpcManifest("vpc-a", { namespace: "team-a" }),
        vmManifest("vm-1", { namespace: "team-a", vpc: "vpc-a" }),
      ]);
      await waitForDeleteDenial(kcp, w.vpc, w.denial);
      await assertDeleteDenied(kcp, w.vpc, w.denial);
    },
  );

  await step(
    "granted with --dependents-index and the endpoint slices' manifest: Indexed=True, and the index syncs",
    async () => {
      const role = await grantWebhookReads(kcp, { dependentsIndex: true });
      assert.match(role, /apiexports\/content/);
      await applyIndexManifest(kcp);
      const indexed = await waitForIndexed(kcp, w.rule, "Indexed");
      assert.equal(indexed.status, "True");
      assert.match(
        indexed.message,
        /dependency-webhook may watch virtualmachines\.compute\.example\.com and the content of the APIExport compute\.example\.com/,
      );
      const ready = (await conditionsOf(kcp, w.rule)).find((c) =>
        c.type === "Ready"
      );
      assert.deepEqual([ready?.status, ready?.reason], ["True", "Enforced"]);
      // What it says is so: the webhook's index of VMs syncs.
      await waitFor("the index feed to sync", async () => {
        return anyFeedSynced(await w.metrics()) || undefined;
      }, { timeoutMs: 90_000 });
      // And deletes are denied all the same.
      await assertDeleteDenied(kcp, w.vpc, w.denial);
    },
  );
}
