import assert from "node:assert/strict";
import {
  MAX_UNREAD_NAMED,
  type Unread,
  unreadCauses,
  unreadText,
} from "./review_unread.ts";

const LB: Unread = {
  verb: "list",
  type: { group: "lb.example.com", resource: "loadbalancers" },
  why: "403 Forbidden",
};

Deno.test("unreadText() names each type not read and why; nothing for nothing", () => {
  assert.equal(unreadText([]), "");
  assert.equal(
    unreadText([LB, {
      verb: "get",
      type: { group: "", resource: "namespaces" },
      why: "no answer within 50 ms",
    }]),
    "; the dependency webhook could not list loadbalancers.lb.example.com, which may refer to it too (403 Forbidden)" +
      "; it could not look up its owners of type namespaces, which may hold it too (no answer within 50 ms)",
  );
});

Deno.test("unreadText() and unreadCauses() are bounded: at most MAX_UNREAD_NAMED types, the rest counted, each why cut and made printable", () => {
  const many = Array.from({ length: MAX_UNREAD_NAMED + 3 }, (_, i) => ({
    ...LB,
    type: { group: "g", resource: `r${i}` },
    why: `\u202e${"x".repeat(5_000)}`,
  }));
  const text = unreadText(many);
  assert.match(text, /, and 3 more types were not read$/);
  assert.ok(!text.includes("\u202e"));
  const causes = unreadCauses(many);
  assert.equal(causes.length, MAX_UNREAD_NAMED);
  for (const cause of causes) {
    assert.equal(cause.type, "NotRead");
    assert.ok(cause.type === "NotRead" && cause.why.length <= 1_003);
    assert.ok(cause.type === "NotRead" && !cause.why.includes("\u202e"));
  }
});
