/**
 * `kubectl dependencies`, the kubectl plugin: its command line
 * ({@linkcode main}), the context its commands share (the user's kubeconfig
 * and nothing else), type discovery, and the commands: `why` (what holds an
 * object, from the causes of a dry-run delete's denial, as a tree, JSON,
 * YAML or a Graphviz graph; of every object of a namespace or workspace
 * with `why namespace/<ns>` and `why workspace`), `lock` and `unlock`, and
 * `graph`.
 *
 * @module
 */
export * from "./cli.ts";
export * from "./context.ts";
export * from "./discovery.ts";
export * from "./dry_run.ts";
export * from "./graph_command.ts";
export * from "./lock_command.ts";
export * from "./lock_object.ts";
export * from "./why.ts";
export * from "./why_decision.ts";
export * from "./why_data.ts";
export * from "./why_render.ts";
export * from "./why_scope.ts";
export * from "./why_scope_render.ts";
export * from "./why_walk.ts";
