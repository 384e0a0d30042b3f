/**
 * The kcp harness, what end-to-end tests, benchmarks and scripts share: a
 * real kcp on loopback with identities (one shard, or two behind a
 * front-proxy), nested workspaces, exports and bindings, the components as
 * processes, serving certificates. It re-exports `./fakes.ts`, the in-process
 * fakes and fixtures, which the end-to-end tests use too; a unit test
 * imports `./fakes.ts` alone, so that it loads none of the harness.
 *
 * ```ts
 * import { createWorkspace, kcpTest } from "./mod.ts";
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
export * from "./back_to_back.ts";
export * from "./component_suite.ts";
export * from "./components.ts";
export * from "./delete_checks.ts";
export * from "./deletion_order.ts";
export * from "./expect.ts";
export * from "./fakes.ts";
export * from "./kcp_log.ts";
export * from "./kcp_server.ts";
export * from "./kcp_suite.ts";
export * from "./objects.ts";
export * from "./owned_projects.ts";
export * from "./owners.ts";
export * from "./process.ts";
export * from "./project_consumer.ts";
export * from "./rule_status.ts";
export * from "./self_signed.ts";
export * from "./sharded_kcp.ts";
export * from "./status_truth.ts";
export * from "./tls.ts";
export * from "./topology.ts";
export * from "./workspaces.ts";
