/**
 * What holds an object, machine-readable: the causes a denial carries in
 * `status.details.causes` (one per blocker, see {@linkcode Cause}) and the
 * webhook's `/holds.json` report ({@linkcode HoldsReport}). Shared by the
 * webhook, which writes them, and the plugin and graph page, which read
 * them. When a blocker began to hold, where known, is each cause's
 * `since` ({@linkcode sinceOf}).
 *
 * @module
 */
export * from "./causes.ts";
export * from "./holds.ts";
export * from "./since.ts";
