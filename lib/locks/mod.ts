/**
 * Locks: the Lock API (a namespaced object that denies the deletion, and
 * optionally the update, of one object in its namespace while it exists,
 * with a reason, until an optional expiry), when a Lock ends, the index
 * the webhook decides with, and the Lock view of the process's one export
 * watcher (`lockView`).
 *
 * @module
 */
export * from "./api.ts";
export * from "./expiry.ts";
export * from "./lock_index.ts";
export * from "./lock_watcher.ts";
