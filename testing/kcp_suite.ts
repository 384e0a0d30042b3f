/**
 * One kcp per test file: {@linkcode kcpTest} starts kcp, hands it to the test
 * body, and stops it afterwards, whatever happens. The body's steps share
 * that kcp and run in order; the first failing step ends the test, since
 * later steps build on earlier ones.
 *
 * @module
 */
import {
  type KcpServer,
  startKcp,
  type StartKcpOptions,
} from "./kcp_server.ts";

/** Runs one named step of an e2e test; rejects if the step failed. */
export type Step = (name: string, fn: () => Promise<void>) => Promise<void>;

/** What {@linkcode suiteTest} needs of the kcp (one server or a sharded one) it runs on. */
export interface SuiteKcp {
  /** Root directory of everything the kcp wrote. */
  readonly rootDir: string;
  /** Stops it; keeps the root directory if asked. */
  stop(options: { keepRootDir: boolean }): Promise<void>;
}

/** How {@linkcode suiteTest} starts and describes its kcp. */
export interface SuiteOptions<K extends SuiteKcp> {
  /** Starts a fresh kcp. */
  start: () => Promise<K>;
  /** The line printed once it is ready. */
  ready: (kcp: K) => string;
  /** What is printed when a step failed: the tail of its logs. */
  logs: (kcp: K) => Promise<string>;
}

/**
 * Registers a Deno test that runs `body` against a fresh kcp from
 * `options.start`, with steps that end the test at the first failure. When a
 * step fails, `options.logs` is printed, and the root directory is kept if
 * `KEEP_KCP_ROOT` is set. The kcp is stopped afterwards, whatever happens.
 */
export function suiteTest<K extends SuiteKcp>(
  name: string,
  body: (kcp: K, step: Step) => Promise<void>,
  options: SuiteOptions<K>,
): void {
  Deno.test({
    name,
    // kcp's keep-alive connections and log pipes live as long as the test.
    sanitizeResources: false,
    sanitizeOps: false,
    async fn(t) {
      const kcp = await options.start();
      console.log(options.ready(kcp));
      const step: Step = async (stepName, fn) => {
        if (!(await t.step(stepName, fn))) {
          throw new Error(`Step failed: ${stepName}`);
        }
      };
      let failed = true;
      try {
        await body(kcp, step);
        failed = false;
      } finally {
        if (failed) console.error(await options.logs(kcp));
        await kcp.stop({
          keepRootDir: failed && Deno.env.has("KEEP_KCP_ROOT"),
        });
      }
    },
  });
}

/**
 * Registers a Deno test that runs `body` against a fresh kcp. When a step
 * fails the tail of kcp's log is printed, and the root directory is kept
 * if `KEEP_KCP_ROOT` is set.
 */
export function kcpTest(
  name: string,
  body: (kcp: KcpServer, step: Step) => Promise<void>,
  options: StartKcpOptions = {},
): void {
  suiteTest(name, body, {
    start: () => startKcp(options),
    ready: (kcp) =>
      `kcp ready in ${
        (kcp.lastStartupMs / 1000).toFixed(1)
      } s at ${kcp.baseUrl}`,
    logs: async (kcp) =>
      `--- kcp log tail (${kcp.rootDir}) ---\n${await kcp.logTail(15)}`,
  });
}
