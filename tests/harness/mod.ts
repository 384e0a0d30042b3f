/**
 * The end-to-end test harness: a real kcp on loopback and helpers to shape
 * it (nested workspaces, exports and bindings, kubectl as any identity).
 *
 * ```ts
 * import { createWorkspace, kcpTest } from "../harness/mod.ts";
 *
 * kcpTest("a workspace is reachable", async (kcp, step) => {
 *   await step("create", async () => {
 *     await createWorkspace(kcp, "root:team");
 *   });
 * });
 * ```
 *
 * @module
 */
export * from "./apis.ts";
export * from "./kcp_server.ts";
export * from "./kcp_test.ts";
export * from "./rules.ts";
export * from "./wait.ts";
export * from "./workspaces.ts";
export * from "./components.ts";
export * from "./tls.ts";
export * from "./topology.ts";
