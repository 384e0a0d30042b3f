/**
 * The dependents index on a real kcp, as users meet it: the webhook runs
 * with `--dependents-index` and the grants an operator gives it
 * (`controller grants --dependents-index`, `manifests/kcp/system-admin/
 * dependents-index`), and tenants create a VM and delete the VPC it names
 * back to back, 1 000 times over four consumers at once: every such delete is
 * denied (a wrong allow fails the test), the index answered reviews (its
 * metrics say so), and every denial names the VM as the list would.
 *
 * Rules of other worlds on the same kcp may be indexed too: the sync waited
 * for is that of this world's index (its key names the identity of this
 * world's compute export).
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertDeleteAllowed,
  assertDeleteDenied,
  buildTopology,
  type ComponentWorld,
  grantWebhookReads,
  KcpRequestError,
  namespaceObject,
  type Step,
  targetsOf,
  vmManifest,
  vmVpcRule,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForExportIdentity,
  waitForRuleEnforced,
  type WorldPaths,
} from "../../testing/mod.ts";
import { sample } from "../../testing/metrics_text.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
/** Back-to-back creates and deletes per consumer. */
const ROUNDS = 250;

/** Whether the metrics `text` show a synced feed of the index named `key`. */
function feedSynced(text: string, key: string): boolean {
  return text.split("\n").some((line) =>
    line.startsWith("dependency_webhook_index_feeds{") &&
    line.includes(`index="${key}"`) &&
    /state="synced"\} [1-9]/.test(line)
  );
}

/**
 * The steps of "the dependents index: a VM created and its VPC deleted back
 * to back is always denied", in the world at `paths` (four consumers). Its
 * first step starts the components (the webhook with `--dependents-index`);
 * the caller stops them afterwards.
 */
export async function dependentsIndexSteps(
  world: ComponentWorld,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const { kcp } = world;
  const CONSUMERS = ["c1", "c2", "c3", "c4"].map((c) => paths.consumer(c));
  const metrics = async () => {
    const { webhook } = world.components();
    const response = await fetch(
      `http://127.0.0.1:${webhook.metricsPort}/metrics`,
    );
    return await response.text();
  };

  await step(
    "providers, four consumers; the webhook with --dependents-index and its grants",
    async () => {
      await buildTopology(kcp, {
        networkPath: paths.network,
        computePath: paths.compute,
        consumerPaths: CONSUMERS,
      });
      for (const consumer of CONSUMERS) {
        await applyObjects(kcp, consumer, [namespaceObject("team-a")]);
      }
      await kcp.kubectlOk(
        ["apply", "-k", `${ROOT}manifests/kcp/system-admin/dependents-index`],
        { workspace: "system:admin", identity: "shardAdmin" },
      );
      await world.startComponents({
        webhook: { args: ["--dependents-index"] },
      });
      await applyObjects(kcp, paths.compute, [vmVpcRule(paths.network)]);
      const role = await grantWebhookReads(kcp, { dependentsIndex: true });
      assert.match(role, /apiexports\/content/);
      await waitForRuleEnforced(kcp, {
        workspace: paths.compute,
        name: "vm-vpc",
      });
    },
  );

  await step(
    "the index syncs from the compute export's virtual workspace",
    async () => {
      const identity = await waitForExportIdentity(
        kcp,
        paths.compute,
        "compute.example.com",
      );
      const key = `compute.example.com/v1alpha1/virtualmachines:${identity}`;
      await waitFor("the index feed to sync", async () => {
        return feedSynced(await metrics(), key) || undefined;
      }, { timeoutMs: 60_000 });
    },
  );

  await step(
    "a denial through kubectl names the VM, as the list does",
    async () => {
      const [c1] = CONSUMERS as [string];
      await applyObjects(kcp, c1, [
        vpcManifest("vpc-a", { namespace: "team-a" }),
        vmManifest("vm-1", { namespace: "team-a", vpc: "vpc-a" }),
      ]);
      const vpc = targetsOf(c1, "vpc")("team-a", "vpc-a");
      const message =
        "cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 (.spec.vpcRef.name)";
      await waitForDeleteDenial(kcp, vpc, message);
      await assertDeleteDenied(kcp, vpc, message);
      await kcp.kubectlOk([
        "delete",
        "virtualmachine",
        "vm-1",
        "-n",
        "team-a",
      ], {
        workspace: c1,
      });
      await assertDeleteAllowed(kcp, vpc);
    },
  );

  await step(
    `${ROUNDS} times in each of ${CONSUMERS.length} consumers at once: a VM created, then its VPC deleted at once, is denied`,
    async () => {
      const api = (consumer: string, resource: string) =>
        `/clusters/${consumer}/apis/${
          resource === "vpcs" ? "network" : "compute"
        }.example.com/v1alpha1/namespaces/team-a/${resource}`;
      const wrongAllows: string[] = [];
      let unavailable = 0;
      await Promise.all(CONSUMERS.map(async (consumer) => {
        for (let i = 0; i < ROUNDS; i++) {
          const vpc = `race-${i}`;
          await kcp.request("POST", api(consumer, "vpcs"), {
            body: vpcManifest(vpc, { namespace: "team-a" }),
          });
          await kcp.request("POST", api(consumer, "virtualmachines"), {
            body: vmManifest(`vm-${i}`, { namespace: "team-a", vpc }),
          });
          try {
            await kcp.request("DELETE", `${api(consumer, "vpcs")}/${vpc}`);
            wrongAllows.push(`${consumer} ${vpc}`);
          } catch (error) {
            if (!(error instanceof KcpRequestError)) throw error;
            if (error.status === 503) {
              // Fail closed: the machine too slow for the deadline.
              assert.match(error.message, /cannot check whether/);
              unavailable++;
              continue;
            }
            assert.equal(error.status, 409, error.message);
            assert.match(
              error.message,
              new RegExp(`still referenced by VirtualMachine/vm-${i} `),
            );
          }
          // Every other round, the VM goes first and the VPC follows:
          // then the delete must pass.
          if (i % 2 === 0) {
            await kcp.request(
              "DELETE",
              `${api(consumer, "virtualmachines")}/vm-${i}`,
            );
            await waitFor("the VPC's delete to pass", async () => {
              try {
                await kcp.request(
                  "DELETE",
                  `${api(consumer, "vpcs")}/${vpc}`,
                );
                return true;
              } catch (error) {
                if (
                  error instanceof KcpRequestError &&
                  (error.status === 409 || error.status === 503)
                ) {
                  return undefined;
                }
                throw error;
              }
            });
          }
        }
      }));
      assert.deepEqual(wrongAllows, [], "deletes the list would deny");
      console.log(
        `${
          CONSUMERS.length * ROUNDS
        } back-to-back deletes: 0 allowed, ${unavailable} denied 503 (fail closed)`,
      );
    },
  );

  await step(
    "the index answered reviews, and a denial from it confirmed the VM live",
    async () => {
      const text = await metrics();
      const confirmed = sample(
        text,
        'dependency_webhook_index_answers_total{outcome="confirmed"}',
      ) ?? 0;
      // Most denials came from the index (the rest listed, or failed
      // closed on a slow machine).
      assert.ok(confirmed >= (CONSUMERS.length * ROUNDS) / 2, text);
      console.log(
        text.split("\n").filter((l) =>
          l.startsWith("dependency_webhook_index_answers_total{")
        ).join("\n"),
      );
    },
  );
}
