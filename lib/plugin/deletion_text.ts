/**
 * What `why`'s tree says, after an object's line, of the deletions going
 * on around it ({@linkcode deletionNotes}): its own (`[being deleted since
 * <time> (3m ago)]`) and its owners' (`[owner Project p-1 being deleted
 * since <time> (for 3m), waiting for it]`: under foreground deletion an
 * owner waits for the dependents that block it). Tenant text is made
 * printable. Pure: the clock reading is an argument.
 *
 * @example Usage
 * ```ts
 * import { deletionNotes } from "./deletion_text.ts";
 *
 * deletionNotes({
 *   deletingOwners: [{
 *     object: {
 *       group: "owners.example.com", version: "v1alpha1",
 *       resource: "projects", kind: "Project", namespace: "", name: "p-1",
 *     },
 *     deletionTimestamp: "2026-11-29T12:00:00Z",
 *     foreground: true,
 *     blockOwnerDeletion: true,
 *   }],
 * }, Date.parse("2026-11-29T12:03:00Z"));
 * // " [owner Project p-1 being deleted since 2026-11-29T12:00:00Z (for 3m), waiting for it]"
 * ```
 *
 * @module
 */
import type { CauseObject } from "../causes/mod.ts";
import { typeName } from "../rules/mod.ts";
import { printable } from "../runtime/mod.ts";
import { durationText, sinceText } from "./since_text.ts";
import type { OwnerFields } from "./why_owners.ts";

/** What {@linkcode deletionNotes} reads of an object. */
export interface DeletionFacts extends OwnerFields {
  /** The object's own `deletionTimestamp`, when it is being deleted. */
  deletionTimestamp?: string;
}

/**
 * The notes after an object's line, each in brackets and after a space:
 * its own deletion, each owner being deleted, the owners not read; `""`
 * when there is none.
 */
export function deletionNotes(facts: DeletionFacts, now?: number): string {
  const notes: string[] = [];
  if (facts.deletionTimestamp !== undefined) {
    notes.push(`being deleted ${sinceText(facts.deletionTimestamp, now)}`);
  }
  for (const owner of facts.deletingOwners ?? []) {
    notes.push(
      `owner ${objectText(owner.object)} being deleted ${
        forText(owner.deletionTimestamp, now)
      }${
        owner.foreground && owner.blockOwnerDeletion ? ", waiting for it" : ""
      }`,
    );
  }
  const unread = facts.ownersNotRead ?? 0;
  if (unread > 0) {
    notes.push(`${unread} ${unread === 1 ? "owner" : "owners"} not read`);
  }
  return notes.map((note) => ` [${note}]`).join("");
}

/** `since <time> (for 3m)`, or `since <time>` without a clock or a time. */
function forText(time: string, now?: number): string {
  const since = sinceText(time);
  const at = Date.parse(time);
  if (now === undefined || !Number.isFinite(at)) return since;
  return `${since} (for ${durationText(now - at)})`;
}

/** `Kind namespace/name`, printable. */
function objectText(object: CauseObject): string {
  const kind = object.kind === "" ? typeName(object) : object.kind;
  const name = object.namespace === ""
    ? printable(object.name)
    : `${printable(object.namespace)}/${printable(object.name)}`;
  return `${printable(kind)} ${name}`;
}
