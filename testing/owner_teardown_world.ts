/**
 * The world of the owner-teardown e2e suite: two worlds of the projects
 * topology (`owned_projects.ts`) on one kcp, `root:unheld` for the teardowns
 * that go through and `root:held` for those an `Exists` owner rule holds,
 * each with providers of its own and its consumer c1 driven as a
 * {@linkcode ProjectConsumer}; the webhook whose denial counters the
 * teardowns report; and the Project owner rule, declared and shown with a
 * probe ({@linkcode declareProjectRule}).
 *
 * ```ts
 * import { componentTest } from "./mod.ts";
 * import { declareProjectRule, ownerTeardownWorld } from "./owner_teardown_world.ts";
 *
 * componentTest("an owner rule", {}, async (world, step) => {
 *   const w = ownerTeardownWorld(world);
 *   await step("declare it", async () => {
 *     await declareProjectRule(world.kcp, {
 *       network: w.unheld.network,
 *       compute: w.unheld.compute,
 *       consumer: w.c1,
 *       protectWhile: "Active",
 *     });
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import { applyObjects } from "./apis.ts";
import {
  type ComponentWorld,
  type WorldPaths,
  worldPaths,
} from "./component_suite.ts";
import { grantWebhookReads, type WebhookProcess } from "./components.ts";
import type { KcpApi } from "./kcp_server.ts";
import { PROJECT_OWNER_RULE, projectOwnerRule } from "./owned_projects.ts";
import { ProjectConsumer } from "./project_consumer.ts";
import { waitForRuleEnforced } from "./rule_status.ts";

/** What the owner-teardown suite acts on, from {@linkcode ownerTeardownWorld}. */
export interface OwnerTeardownWorld {
  /** The world of the teardowns that go through: `root:unheld`. */
  readonly unheld: WorldPaths;
  /** The world of the held teardowns, on the same kcp: `root:held`. */
  readonly held: WorldPaths;
  /** The consumer c1 of {@linkcode OwnerTeardownWorld.unheld}. */
  readonly c1: ProjectConsumer;
  /** The consumer c1 of {@linkcode OwnerTeardownWorld.held}. */
  readonly heldC1: ProjectConsumer;
  /**
   * The running webhook (the suite's components, started in its first
   * step), whose denial counters the teardowns report.
   */
  readonly webhook: WebhookProcess;
}

/** The owner-teardown suite's worlds on the kcp of `world`. */
export function ownerTeardownWorld(world: ComponentWorld): OwnerTeardownWorld {
  const unheld = worldPaths("root:unheld");
  const held = worldPaths("root:held");
  return {
    unheld,
    held,
    c1: new ProjectConsumer(world.kcp, unheld.consumer("c1")),
    heldC1: new ProjectConsumer(world.kcp, held.consumer("c1")),
    get webhook() {
      return world.components().webhook;
    },
  };
}

/** Options for {@linkcode declareProjectRule}. */
export interface DeclareProjectRuleOptions {
  /** The world's network provider, where the rule goes. */
  network: string;
  /** The world's compute provider. */
  compute: string;
  /** The world's consumer, where the probe goes. */
  consumer: ProjectConsumer;
  /** `spec.protectWhile`. */
  protectWhile: "Active" | "Exists";
}

/**
 * Declares the Project owner rule in one world, grants the webhook its reads
 * and waits for it to be Enforced; then shows it with a probe (a Project our
 * own finalizer keeps deleting, owning one VirtualMachine, which kcp's
 * collector leaves alone while its owner exists): denied while it exists,
 * and once it is being deleted still protecting under `Exists`, no longer
 * under `Active`.
 */
export async function declareProjectRule(
  kcp: KcpApi,
  options: DeclareProjectRuleOptions,
): Promise<void> {
  const { network, consumer, protectWhile } = options;
  await applyObjects(kcp, network, [
    projectOwnerRule({
      networkPath: network,
      computePath: options.compute,
      protectWhile,
    }),
  ]);
  const role = await grantWebhookReads(kcp);
  assert.match(role, /- projects\n/);
  await waitForRuleEnforced(kcp, {
    workspace: network,
    name: PROJECT_OWNER_RULE,
  }, { intervalMs: 200 });
  await consumer.createProbe();
  const denied = await consumer.waitForProbe(true);
  assert.match(denied, /Conflict/);
  await consumer.deleteProbe();
  await consumer.waitForProbe(protectWhile === "Exists");
}
