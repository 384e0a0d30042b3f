/**
 * What a review could not read that might hold the object
 * ({@linkcode Unread}), as a denial says it: in words
 * ({@linkcode unreadText}) and as `NotRead` causes
 * ({@linkcode unreadCauses}), at most {@linkcode MAX_UNREAD_NAMED} types.
 * Pure.
 *
 * @module
 */
import type { Cause } from "../causes/mod.ts";
import { typeName } from "../rules/mod.ts";
import { printable } from "../runtime/mod.ts";

/** A permission on a type: what a 403 refused. */
interface Refused {
  /** The verb refused. */
  verb: "get" | "list";
  /** The type's API group (`""` for core). */
  group: string;
  /** The type's resource. */
  resource: string;
}

/**
 * What a review could not read that might hold the object: a dependent
 * type it could not list, or owners it could not look up.
 */
export interface Unread {
  /** The read: `list` of dependents, `get` of owners. */
  verb: "list" | "get";
  /** The type. */
  type: { group: string; resource: string };
  /** Why, in words. */
  why: string;
  /** Set when kcp refused our identity the read (a 403): the permission. */
  forbidden?: Refused;
}

/** The most types a denial names as not read; the rest are counted in words. */
export const MAX_UNREAD_NAMED = 8;

/**
 * `; it could not list virtualmachines.compute.example.com, which may
 * refer to it too (why)`, for what could not be read; `""` for nothing.
 */
export function unreadText(unread: readonly Unread[]): string {
  if (unread.length === 0) return "";
  const shown = unread.slice(0, MAX_UNREAD_NAMED).map((u) => {
    const type = typeName(u.type);
    const what = u.verb === "list"
      ? `could not list ${type}, which may refer to it too`
      : `could not look up its owners of type ${type}, which may hold it too`;
    return `${what} (${printable(u.why, 300)})`;
  });
  const more = unread.length > shown.length
    ? `, and ${unread.length - shown.length} more types were not read`
    : "";
  return `; the dependency webhook ${shown.join("; it ")}${more}`;
}

/** One `NotRead` cause per type named by {@linkcode unreadText}. */
export function unreadCauses(unread: readonly Unread[]): Cause[] {
  return unread.slice(0, MAX_UNREAD_NAMED).map((u) => ({
    type: "NotRead",
    group: u.type.group,
    resource: u.type.resource,
    verb: u.verb,
    why: printable(u.why, 1000),
  }));
}
