/**
 * An e2e test of the components on a real kcp: {@linkcode componentTest}
 * starts a kcp (as {@linkcode kcpTest} does), hands the body a
 * {@linkcode ComponentWorld} to build its topology in and to start the
 * webhook and the controller as their own processes with the Deployment's
 * flags, and stops them afterwards, whatever happens (printing their logs
 * when the test failed). With `sigterm`, the test ends with one step that
 * checks both exit with 0 on SIGTERM.
 *
 * Tests that build the same topology can share one kcp without sharing
 * state by building it under different prefixes ({@linkcode worldPaths}):
 * `root:t1:providers:network` and `root:t2:providers:network` export types
 * of different identities, so rules and Locks of one reach nothing of the
 * other; only `root:dep-ctrl` and the components are shared. Suites whose
 * components differ (or that must each start their own) run one after
 * another on the kcp: each starts the components in its first step and ends
 * with {@linkcode ComponentWorld.stopComponents} or {@linkcode sigtermStep},
 * so that one controller leads at a time.
 *
 * ```ts
 * import { buildTopology, componentTest, worldPaths } from "./mod.ts";
 *
 * componentTest("rules hold", { sigterm: true }, async (world, step) => {
 *   const paths = worldPaths("root:t1");
 *   await step("the topology; the components start", async () => {
 *     await buildTopology(world.kcp, {
 *       networkPath: paths.network,
 *       computePath: paths.compute,
 *       consumerPaths: [paths.consumer("c1")],
 *     });
 *     await world.startComponents();
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type ComponentProcess,
  startController,
  type StartControllerOptions,
  startWebhook,
  type StartWebhookOptions,
  stopComponents,
  type WebhookProcess,
} from "./components.ts";
import type { KcpServer, StartKcpOptions } from "./kcp_server.ts";
import { kcpTest, type Step } from "./kcp_suite.ts";

/** The webhook and the controller of a test. */
export interface Components {
  /** The webhook process. */
  webhook: WebhookProcess;
  /** The controller process. */
  controller: ComponentProcess;
}

/** Options for {@linkcode ComponentWorld.startComponents}. */
export interface StartComponentsOptions {
  /** How the webhook starts (extra flags, a certificate, a port). */
  webhook?: StartWebhookOptions;
  /** How the controller starts (extra flags); its webhook is the one started. */
  controller?: Omit<StartControllerOptions, "webhook">;
}

/** What the body of a {@linkcode componentTest} builds in and starts. */
export interface ComponentWorld {
  /** The test's kcp. */
  readonly kcp: KcpServer;
  /**
   * Starts the webhook, then the controller (pointing at it), each as its
   * own process and identity, and waits until both are ready. They are
   * stopped when the test ends.
   */
  startComponents(options?: StartComponentsOptions): Promise<Components>;
  /** Takes components started otherwise, to stop them when the test ends. */
  keep(components: Components): void;
  /**
   * The running components.
   *
   * @throws {Error} If none were started or kept.
   */
  components(): Components;
  /**
   * Stops the running components with SIGTERM, the controller first, and
   * answers their exit codes; none run afterwards, so a later suite on the
   * same kcp can start its own (the controller leads alone, one
   * ValidatingWebhookConfiguration per provider workspace points at one
   * webhook).
   *
   * @throws {Error} If none were started or kept.
   */
  stopComponents(): Promise<ExitCodes>;
}

/** The exit codes of the components, from {@linkcode ComponentWorld.stopComponents}. */
export interface ExitCodes {
  /** The controller's. */
  controller: number;
  /** The webhook's. */
  webhook: number;
}

/** Options for {@linkcode componentTest}. */
export interface ComponentTestOptions {
  /** How kcp starts. */
  kcp?: StartKcpOptions;
  /**
   * End with the step "SIGTERM stops controller and webhook with exit code
   * 0". @default {false}
   */
  sigterm?: boolean;
}

/** The step that stops the components with SIGTERM and checks their exit codes. */
export const SIGTERM_STEP =
  "SIGTERM stops controller and webhook with exit code 0";

/**
 * The step {@linkcode SIGTERM_STEP}: stops the world's components and checks
 * that both exit with 0. Suites that share a kcp one after another each end
 * with it (or with {@linkcode ComponentWorld.stopComponents}).
 */
export async function sigtermStep(
  world: ComponentWorld,
  step: Step,
): Promise<void> {
  await step(SIGTERM_STEP, async () => {
    const codes = await world.stopComponents();
    assert.equal(codes.controller, 0);
    assert.equal(codes.webhook, 0);
  });
}

/**
 * Registers a Deno test that runs `body` against a fresh kcp and stops the
 * components it started when it ends (their logs printed if it failed).
 */
export function componentTest(
  name: string,
  options: ComponentTestOptions,
  body: (world: ComponentWorld, step: Step) => Promise<void>,
): void {
  kcpTest(name, async (kcp, step) => {
    let running: Partial<Components> = {};
    const world: ComponentWorld = {
      kcp,
      async startComponents(startOptions = {}) {
        const webhook = await startWebhook(kcp, startOptions.webhook);
        running = { webhook };
        const controller = await startController(kcp, {
          ...startOptions.controller,
          webhook,
        });
        running = { webhook, controller };
        return { webhook, controller };
      },
      keep(components) {
        running = { ...components };
      },
      components() {
        const { webhook, controller } = running;
        if (webhook === undefined || controller === undefined) {
          throw new Error("the components were not started");
        }
        return { webhook, controller };
      },
      async stopComponents() {
        const { webhook, controller } = world.components();
        const controllerCode = await controller.stop();
        running = { webhook };
        const webhookCode = await webhook.stop();
        running = {};
        return { controller: controllerCode, webhook: webhookCode };
      },
    };
    let failed = true;
    try {
      await body(world, step);
      if (options.sigterm) await sigtermStep(world, step);
      failed = false;
    } finally {
      await stopComponents([running.controller, running.webhook], {
        showLogs: failed,
      });
    }
  }, options.kcp);
}

/** The workspaces of one world of the test topology, under a prefix. */
export interface WorldPaths {
  /** The prefix, e.g. `root:t1` (or `root`). */
  prefix: string;
  /** `<prefix>:providers:network`. */
  network: string;
  /** `<prefix>:providers:compute`. */
  compute: string;
  /** `<prefix>:consumers:<name>`. */
  consumer(name: string): string;
}

/**
 * The workspaces of a world under `prefix`: `root` gives the paths the
 * topology has by default (`root:providers:network`, ...).
 */
export function worldPaths(prefix: string): WorldPaths {
  return {
    prefix,
    network: `${prefix}:providers:network`,
    compute: `${prefix}:providers:compute`,
    consumer: (name) => `${prefix}:consumers:${name}`,
  };
}
