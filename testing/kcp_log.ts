/**
 * Reading a single-shard kcp's own log (`<rootDir>/kcp.log`), an
 * operator's view of what kcp's controllers did: the part written since an
 * offset, and the lines where kcp's garbage collector gave up on an item
 * for now (it retries), which carry the webhook's denial.
 *
 * ```ts
 * import { garbageCollectorErrors, kcpLogOffset, kcpLogSince, kcpTest } from "./mod.ts";
 *
 * kcpTest("what the collector says", async (kcp, step) => {
 *   await step("read", async () => {
 *     const offset = await kcpLogOffset(kcp);
 *     // ... a delete the webhook denies to the collector ...
 *     console.log(garbageCollectorErrors(await kcpLogSince(kcp, offset)));
 *   });
 * });
 * ```
 *
 * @module
 */
import type { KcpApi } from "./kcp_server.ts";

/** The size of kcp's log now: what {@linkcode kcpLogSince} reads from. */
export async function kcpLogOffset(kcp: KcpApi): Promise<number> {
  return (await Deno.stat(`${kcp.rootDir}/kcp.log`)).size;
}

/** The part of kcp's log written since `offset`. */
export async function kcpLogSince(
  kcp: KcpApi,
  offset: number,
): Promise<string> {
  const bytes = await Deno.readFile(`${kcp.rootDir}/kcp.log`);
  return new TextDecoder().decode(bytes.subarray(offset));
}

/**
 * The lines of kcp's log where its garbage collector gave up on an item
 * for now (it retries): `"Unhandled Error" err="error syncing item ...: <why>"`.
 */
export function garbageCollectorErrors(log: string): string[] {
  return log.split("\n").filter((l) =>
    l.includes("garbagecollector.go") && l.includes("error syncing item")
  );
}
