/**
 * A live installation moved to a new Lock schema, as an operator does it:
 * dep-ctrl installed as release 0.2.0 shipped it (its Lock schema without
 * `spec.expiresAt`, from `testing/fixtures/dep-ctrl-0.2.0/`), a tenant's
 * Lock holding a VPC's delete, then docs/operations.md, "Schema upgrades",
 * as written (`testing/doc_shell.ts`), with kubectl in the dep-ctrl
 * workspace: `kubectl apply -k manifests/kcp/dep-ctrl` and the check that
 * the export names this release's schemas; kcp moves the tenant to the new
 * schema; the webhook and the controller, not restarted, list the Locks
 * again (`--export-relist-interval`, 10 s here) and honour a Lock written
 * with `spec.expiresAt`; the webhook and the controller are rolled; the old schema is
 * removed as "Removing the old schemas" says. From the apply until the
 * tenant is moved, the VPC's delete is tried again and again: none goes
 * through, and every answer is the Lock's denial. Afterwards a Lock with
 * `spec.expiresAt` is accepted, holds, and lets go after its time.
 *
 * The upgrade changes the one dep-ctrl export every workspace of a kcp
 * binds, and deletes one of its schemas, so this file has a kcp of its
 * own. The components are this checkout's throughout (0.2.0's code is not
 * run): what is upgraded here is what kcp holds.
 */
import assert from "node:assert/strict";
import { docSteps } from "../../testing/doc_runs.ts";
import {
  applyObjects,
  assertDeleteAllowed,
  assertDeleteDenied,
  assertStatusTruth,
  componentTest,
  vpcManifest,
  waitFor,
  waitForDeleteDenial,
  waitForDryRunDelete,
} from "../../testing/mod.ts";
import {
  keepDeleting,
  PROD_DENIAL,
  schemaUpgradeWorld,
} from "../../testing/schema_upgrade_world.ts";

componentTest(
  "dep-ctrl of release 0.2.0 upgraded live as docs/operations.md says: a Lock holds throughout, and one with expiresAt lets go after its time",
  { sigterm: true },
  async (world, step) => {
    const w = await schemaUpgradeWorld(world);
    const { kcp, tenant } = w;
    await step(
      "release 0.2.0's dep-ctrl export, a provider and a tenant bound to it; webhook and controller as processes",
      async () => {
        await w.install();
        assert.deepEqual(await w.liveSchemas(), w.released);
        assert.notEqual(w.released.locks, w.current.locks);
      },
    );

    await step(
      "before the upgrade: Lock team-a/prod holds VPC core, its delete denied through kubectl; kubectl refuses spec.expiresAt",
      async () => {
        await applyObjects(kcp, tenant, [
          vpcManifest("core", { namespace: "team-a" }),
          w.lock("prod", { vpc: "core", reason: "production VPC" }),
        ]);
        await w.grantReads();
        await waitForDeleteDenial(kcp, w.vpc("core"), PROD_DENIAL);
        await assertDeleteDenied(kcp, w.vpc("core"), PROD_DENIAL);
        const early = await kcp.kubectl(["apply", "-f", "-"], {
          workspace: tenant,
          stdin: JSON.stringify(w.lock("early", {
            vpc: "core",
            reason: "too early",
            expiresAt: "2030-01-01T00:00:00Z",
          })),
        });
        assert.notEqual(early.code, 0, early.stdout);
        assert.match(early.stderr, /unknown field "spec\.expiresAt"/);
      },
    );

    const answers = await keepDeleting(kcp, w.vpc("core"), {
      denial: PROD_DENIAL,
      during: async () => {
        await docSteps(step, w.upgrade, w.docs);
        await step(
          "kcp moves the tenant to the new Lock schema: kubectl get locks shows EXPIRES, Lock team-a/prod Ready True Enforced",
          async () => {
            const table = await waitFor("EXPIRES in the tenant", async () => {
              const table = await w.tenantLocks();
              return /\bEXPIRES\b/.test(table) ? table : undefined;
            }, { timeoutMs: 60_000, intervalMs: 500 });
            assert.match(
              table.split("\n")[0]!,
              /\bREADY\s+STATUS\s+EXPIRES\s+AGE$/,
            );
            assert.match(table, /^prod\s.*\sTrue\s+Enforced\s/m);
          },
        );
      },
    });

    await step(
      "the export names this release's schemas; Lock team-a/prod held throughout",
      async () => {
        assert.deepEqual(await w.liveSchemas(), w.current);
        console.log(`${answers.asked} deletes tried during the upgrade`);
        assert.ok(answers.asked > 0, "no delete was tried during the upgrade");
        assert.equal(answers.allowed, 0, "a delete went through");
        assert.deepEqual(answers.others, [], "answers other than the Lock's");
      },
    );

    await step(
      "not restarted, the webhook and the controller list the Locks again: a Lock with spec.expiresAt holds until its time, then is Ready False Expired and the delete goes through",
      async () => {
        const expiresAt = new Date(Date.now() + 45_000).toISOString()
          .replace(/\.\d+Z$/, "Z");
        await applyObjects(kcp, tenant, [
          vpcManifest("interim", { namespace: "team-a" }),
          w.lock("interim", {
            vpc: "interim",
            reason: "between upgrade and roll",
            expiresAt,
          }),
        ]);
        await waitForDeleteDenial(
          kcp,
          w.vpc("interim"),
          new RegExp(
            `^cannot delete vpcs/interim: locked by Lock team-a/interim \\("between upgrade and roll", until ${expiresAt}\\)`,
          ),
        );
        await w.lockExpired("interim");
        await waitForDryRunDelete(kcp, w.vpc("interim"), undefined);
        assert.ok(
          Date.now() >= Date.parse(expiresAt),
          `the delete went through before the Lock's time ${expiresAt}`,
        );
        await assertDeleteAllowed(kcp, w.vpc("interim"));
        await assertDeleteDenied(kcp, w.vpc("core"), PROD_DENIAL);
      },
    );

    await step(
      "the webhook and the controller rolled: Lock team-a/prod still holds",
      async () => {
        assert.deepEqual(await world.stopComponents(), {
          controller: 0,
          webhook: 0,
        });
        await w.startComponents();
        await waitForDeleteDenial(kcp, w.vpc("core"), PROD_DENIAL);
        await assertDeleteDenied(kcp, w.vpc("core"), PROD_DENIAL);
      },
    );

    await docSteps(step, w.removal, w.docs);

    await step(
      "0.2.0's Lock schema is gone, this release's stay; Lock team-a/prod still holds",
      async () => {
        const names = await w.schemaNames();
        assert.ok(!names.includes(w.released.locks!), names.join(" "));
        for (const name of Object.values(w.current)) {
          assert.ok(names.includes(name), `${name} is gone`);
        }
        await assertDeleteDenied(kcp, w.vpc("core"), PROD_DENIAL);
      },
    );

    await step(
      "a Lock with spec.expiresAt is accepted and holds until its time; then the delete goes through and the Lock is Ready False Expired",
      async () => {
        const expiresAt = new Date(Date.now() + 30_000).toISOString()
          .replace(/\.\d+Z$/, "Z");
        await applyObjects(kcp, tenant, [
          vpcManifest("window", { namespace: "team-a" }),
          w.lock("window", {
            vpc: "window",
            reason: "maintenance window",
            expiresAt,
          }),
        ]);
        assert.equal(
          await kcp.kubectlOk([
            "get",
            "lock",
            "window",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.expiresAt}",
          ], { workspace: tenant }),
          expiresAt,
        );
        await waitForDeleteDenial(
          kcp,
          w.vpc("window"),
          new RegExp(
            `^cannot delete vpcs/window: locked by Lock team-a/window \\("maintenance window", until ${expiresAt}\\)`,
          ),
        );
        await w.lockExpired("window");
        await waitForDryRunDelete(kcp, w.vpc("window"), undefined);
        assert.ok(
          Date.now() >= Date.parse(expiresAt),
          `the delete went through before the Lock's time ${expiresAt}`,
        );
        await assertDeleteAllowed(kcp, w.vpc("window"));
      },
    );

    await step(
      "status truth after the upgrade: every Enforced rule and Lock is proven by a denial",
      async () => {
        await assertStatusTruth(kcp, {
          workspaces: [w.network, tenant],
          minimum: { locks: 1 },
        });
      },
    );
  },
);
