import assert from "node:assert/strict";
import type { CauseObject } from "../causes/mod.ts";
import { deletionNotes } from "./deletion_text.ts";
import type { DeletingOwner } from "./why_owners.ts";

const AT = "2026-11-29T12:00:00Z";
const NOW = Date.parse("2026-11-29T12:03:00Z");

function owner(
  object: Partial<CauseObject>,
  flags: { foreground: boolean; blockOwnerDeletion: boolean },
): DeletingOwner {
  return {
    object: {
      group: "owners.example.com",
      version: "v1alpha1",
      resource: "projects",
      kind: "Project",
      namespace: "",
      name: "p-1",
      ...object,
    },
    deletionTimestamp: AT,
    ...flags,
  };
}

Deno.test("deletionNotes(): nothing, its own deletion, each owner's, the owners not read", () => {
  assert.equal(deletionNotes({}), "");
  assert.equal(
    deletionNotes({ deletionTimestamp: AT }, NOW),
    " [being deleted since 2026-11-29T12:00:00Z (3m ago)]",
  );
  assert.equal(
    deletionNotes({
      deletingOwners: [
        owner({}, { foreground: true, blockOwnerDeletion: true }),
        owner({
          resource: "networks",
          kind: "Network",
          namespace: "team-a",
          name: "net-1",
        }, { foreground: true, blockOwnerDeletion: false }),
      ],
      ownersNotRead: 2,
    }, NOW),
    " [owner Project p-1 being deleted since 2026-11-29T12:00:00Z (for 3m), waiting for it]" +
      " [owner Network team-a/net-1 being deleted since 2026-11-29T12:00:00Z (for 3m)]" +
      " [2 owners not read]",
  );
  assert.equal(
    deletionNotes({
      deletingOwners: [
        owner({}, { foreground: false, blockOwnerDeletion: true }),
      ],
      ownersNotRead: 1,
    }),
    " [owner Project p-1 being deleted since 2026-11-29T12:00:00Z] [1 owner not read]",
  );
});

Deno.test("deletionNotes(): tenant text is printable", () => {
  const text = deletionNotes({
    deletingOwners: [owner({ name: "p\u202e1\u001b[31m", kind: "" }, {
      foreground: true,
      blockOwnerDeletion: true,
    })],
  }, NOW);
  assert.equal(
    text,
    " [owner projects.owners.example.com p\\u{202e}1\\u{1b}[31m being deleted since 2026-11-29T12:00:00Z (for 3m), waiting for it]",
  );
});
