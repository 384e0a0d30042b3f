import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type Cause,
  causeOf,
  causesOf,
  isBlocking,
  MAX_CAUSE_MESSAGE,
  parseCause,
  statusCause,
} from "./causes.ts";

const VM = {
  group: "compute.example.com",
  version: "v1alpha1",
  resource: "virtualmachines",
  kind: "VirtualMachine",
  namespace: "default",
  name: "vm-1",
};

const CAUSES: Cause[] = [
  {
    type: "Reference",
    object: VM,
    fields: [".spec.vpcRef.name", ".spec.nics[1].vpcRef.name"],
    rules: ["2x8ab/vm-uses-vpc"],
  },
  {
    type: "Owner",
    object: { ...VM, kind: "Network", resource: "networks", name: "net-a" },
    field: '.metadata.labels["network.example.com/owner"]',
    rule: "2x8ab/owned",
    when: "object.spec.deletionProtection == true",
  },
  {
    type: "Lock",
    lock: { namespace: "default", name: "prod" },
    reason: "production",
  },
  { type: "More", of: "Reference", count: 3 },
  {
    type: "NotRead",
    group: "compute.example.com",
    resource: "virtualmachines",
    verb: "list",
    why: "the webhook's identity may not list virtualmachines (403 Forbidden)",
  },
];

Deno.test("statusCause() and causeOf() carry each kind of cause there and back", () => {
  for (const cause of CAUSES) {
    const status = statusCause(cause);
    assert.equal(typeof status.message, "string");
    assert.deepEqual(causeOf(status), cause);
    assert.deepEqual(parseCause(cause), cause);
  }
  assert.deepEqual(statusCause(CAUSES[0]!), {
    reason: "ReferencedBy",
    field: ".spec.vpcRef.name, .spec.nics[1].vpcRef.name",
    message: JSON.stringify({
      object: VM,
      fields: [".spec.vpcRef.name", ".spec.nics[1].vpcRef.name"],
      rules: ["2x8ab/vm-uses-vpc"],
    }),
  });
  assert.equal(statusCause(CAUSES[2]!).field, undefined);
  assert.deepEqual(statusCause(CAUSES[4]!), {
    reason: "NotRead",
    field: "virtualmachines.compute.example.com",
    message: JSON.stringify({
      group: "compute.example.com",
      resource: "virtualmachines",
      verb: "list",
      why:
        "the webhook's identity may not list virtualmachines (403 Forbidden)",
    }),
  });
});

Deno.test("a NotRead cause holds nothing by itself, and a reader that knows only the older reasons skips it", () => {
  assert.deepEqual(CAUSES.map(isBlocking), [true, true, true, true, false]);
  // What an older reader knew: ReferencedBy, OwnedBy, LockedBy, MoreNotShown.
  const older = new Set([
    "ReferencedBy",
    "OwnedBy",
    "LockedBy",
    "MoreNotShown",
  ]);
  const status = {
    details: { causes: [statusCause(CAUSES[2]!), statusCause(CAUSES[4]!)] },
  };
  const known = status.details.causes.filter((c) => older.has(c.reason));
  assert.deepEqual(known.map(causeOf), [CAUSES[2]]);
  // Its text is bounded like every other cause's.
  assert.equal(
    causeOf({
      reason: "NotRead",
      message: JSON.stringify({
        group: "",
        resource: "pods",
        verb: "list",
        why: "x".repeat(MAX_CAUSE_MESSAGE),
      }),
    }),
    undefined,
  );
  assert.equal(
    causeOf({
      reason: "NotRead",
      message: '{"group":"","resource":"pods","verb":"watch","why":"x"}',
    }),
    undefined,
  );
});

Deno.test("causeOf() ignores causes that are not ours or do not parse", () => {
  const good = statusCause(CAUSES[0]!);
  for (
    const bad of [
      undefined,
      null,
      "ReferencedBy",
      { ...good, reason: "FieldValueInvalid" },
      { ...good, message: "still referenced by VirtualMachine/vm-1" },
      { ...good, message: "[]" },
      { ...good, message: JSON.stringify({ object: VM }) },
      { ...good, message: `${good.message}${" ".repeat(MAX_CAUSE_MESSAGE)}` },
      { reason: "MoreNotShown", message: '{"of":"Reference","count":0}' },
      {
        reason: "LockedBy",
        message: '{"lock":{"namespace":"a"},"reason":"x"}',
      },
    ]
  ) {
    assert.equal(causeOf(bad), undefined, JSON.stringify(bad));
  }
  assert.equal(parseCause({ type: "constructor" }), undefined);
  assert.equal(parseCause({ type: "__proto__" }), undefined);
});

Deno.test("causesOf() reads our causes from a Status and skips the rest", () => {
  const status = {
    kind: "Status",
    code: 409,
    details: {
      causes: [
        statusCause(CAUSES[2]!),
        { reason: "FieldValueInvalid", message: "x", field: "spec" },
        statusCause(CAUSES[3]!),
      ],
    },
  };
  assert.deepEqual(causesOf(status), [CAUSES[2], CAUSES[3]]);
  assert.deepEqual(causesOf({ code: 409 }), []);
  assert.deepEqual(causesOf({ details: { causes: "x" } }), []);
  assert.deepEqual(causesOf("x"), []);
});

Deno.test("any reference cause with hostile text survives the round trip intact", () => {
  const text = fc.string({ unit: "binary", maxLength: 200 });
  fc.assert(fc.property(text, text, text, (name, field, note) => {
    const cause: Cause = {
      type: "Reference",
      object: { ...VM, name: name.slice(0, 253) },
      fields: [field],
      rules: ["c/r"],
      note,
    };
    assert.deepEqual(causeOf(statusCause(cause)), cause);
  }));
});

Deno.test("a cause's since: carried when RFC 3339, dropped (not the cause) when not", () => {
  const since = "2026-11-29T12:00:00Z";
  for (const cause of CAUSES.slice(0, 3)) {
    const timed = { ...cause, since } as Cause;
    assert.deepEqual(causeOf(statusCause(timed)), timed);
    assert.deepEqual(parseCause(timed), timed);
    for (const bad of ["yesterday", 42, `${since}\u202e`, "9".repeat(100)]) {
      assert.deepEqual(parseCause({ ...cause, since: bad }), cause);
    }
  }
});

Deno.test("a field a reader does not know is ignored, the cause kept: how since reaches older plugins", () => {
  const lock = CAUSES[2]!;
  assert.deepEqual(
    parseCause({ ...lock, sinceLater: "2026-11-29T12:00:00Z" }),
    lock,
  );
});
