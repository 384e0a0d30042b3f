/**
 * Talking to kcp: the HTTP client, kubeconfig, list/watch informers, the
 * APIExport endpoint-slice watcher that follows virtual workspaces, kcp's URL
 * shapes and names, and the flags every component takes to reach kcp.
 *
 * @module
 */
export * from "./component_flags.ts";
export * from "./export_access.ts";
export * from "./export_watcher.ts";
export * from "./informer.ts";
export {
  KubeApiError,
  REDIRECT_REFUSED,
  RESPONSE_BUDGET_EXHAUSTED,
  RESPONSE_TOO_LARGE,
} from "./kube_api_error.ts";
export * from "./kube_client.ts";
export * from "./kube_config.ts";
export * from "./kube_types.ts";
export { boundedText, estimateMemory, formatBytes } from "./response_body.ts";
export * from "./urls.ts";
export * from "./watch_lines.ts";
