/**
 * The world of the harness steps: the network provider's files as users
 * apply them ({@linkcode NETWORK_FIXTURES}), and a VPC read back the way a
 * user does ({@linkcode getVpc}).
 *
 * ```ts
 * import { kcpTest } from "./mod.ts";
 * import { getVpc, NETWORK_FIXTURES } from "./harness_world.ts";
 *
 * kcpTest("a VPC reads back", async (kcp, step) => {
 *   await step("read", async () => {
 *     await kcp.kubectlOk(["create", "-f", `${NETWORK_FIXTURES}vpc-a.yaml`], {
 *       workspace: "root:consumers:c1",
 *     });
 *     console.log((await getVpc(kcp, "root:consumers:c1", "vpc-a")).spec.cidr);
 *   });
 * });
 * ```
 *
 * @module
 */
import type { KcpApi } from "./kcp_server.ts";

/** The network provider's directory of files (schemas, export, a VPC), with a trailing `/`. */
export const NETWORK_FIXTURES: string =
  new URL("./fixtures/network/", import.meta.url).pathname;

/** A VPC as kubectl shows it: what the harness steps read. */
export interface Vpc {
  /** Its name and annotations (`kcp.io/cluster`). */
  metadata: { name: string; annotations?: Record<string, string> };
  /** Its spec. */
  spec: { cidr: string };
}

/** Reads a VPC in `default` the way a user does, with kubectl. */
export async function getVpc(
  kcp: KcpApi,
  workspace: string,
  name: string,
): Promise<Vpc> {
  return JSON.parse(
    await kcp.kubectlOk(["get", "vpc", name, "-n", "default", "-o", "json"], {
      workspace,
    }),
  ) as Vpc;
}
