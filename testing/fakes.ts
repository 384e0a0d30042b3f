/**
 * What unit tests share, all in this process: a fake Kubernetes API server
 * on loopback ({@linkcode FakeApi}) and the part of kcp the controller
 * talks to behind it ({@linkcode FakeKcp}), a fake source of dependents for
 * the webhook, the rules, Locks and reviews the tests load, `when`s
 * compiled and evaluated with the checks of their messages, a recorder of
 * timers left running, a caller of Node handlers, raw clients of servers
 * with bounded connections, polling, and Prometheus text checks.
 *
 * Nothing here starts kcp or a process: the kcp harness (kcp on loopback,
 * workspaces, the components as processes, certificates made by `openssl`)
 * is `./mod.ts`, which re-exports this module too, for the end-to-end tests.
 *
 * ```ts
 * import { connection, FakeApi, json } from "./fakes.ts";
 *
 * const api = new FakeApi(() => json({ kind: "Status" }));
 * try {
 *   connection(api.url); // a KubeConnection to the fake
 * } finally {
 *   await api.close();
 * }
 * ```
 *
 * @module
 */
export * from "./connections.ts";
export * from "./fake_api.ts";
export * from "./fake_dependent_source.ts";
export * from "./fake_kcp.ts";
export * from "./metrics_text.ts";
export * from "./node_handler.ts";
export * from "./review_fixtures.ts";
export * from "./rule_fixtures.ts";
export * from "./rules.ts";
export * from "./timer_tracker.ts";
export * from "./wait.ts";
export * from "./when_fixtures.ts";
