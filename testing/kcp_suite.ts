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
  Deno.test({
    name,
    // kcp's keep-alive connections and log pipes live as long as the test.
    sanitizeResources: false,
    sanitizeOps: false,
    async fn(t) {
      const kcp = await startKcp(options);
      console.log(
        `kcp ready in ${
          (kcp.lastStartupMs / 1000).toFixed(1)
        } s at ${kcp.baseUrl}`,
      );
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
        if (failed) {
          console.error(
            `--- kcp log tail (${kcp.rootDir}) ---\n${await kcp.logTail(15)}`,
          );
        }
        await kcp.stop({
          keepRootDir: failed && Deno.env.has("KEEP_KCP_ROOT"),
        });
      }
    },
  });
}
