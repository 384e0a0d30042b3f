// deno-lint-ignore-file no-control-regex
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import type { Cause, CauseObject } from "../causes/mod.ts";
import type { ScopeReport } from "./why_scope.ts";
import { renderScope } from "./why_scope_render.ts";

const SINCE = "2026-11-29T12:00:00Z";
const NOW = Date.parse("2026-11-29T15:10:00Z");

function object(resource: string, kind: string, name: string): CauseObject {
  return {
    group: "network.example.com",
    version: "v1alpha1",
    resource,
    kind,
    namespace: "team-a",
    name,
  };
}

const REFERENCE: Cause = {
  type: "Reference",
  object: {
    ...object("virtualmachines", "VirtualMachine", "vm-1"),
    namespace: "other",
  },
  fields: [".spec.vpcRef.name"],
  rules: ["c/vm-vpc"],
  since: SINCE,
};

const LOCK: Cause = {
  type: "Lock",
  lock: { namespace: "team-a", name: "keep" },
  reason: "keep it",
  since: SINCE,
};

const REPORT: ScopeReport = {
  scope: {
    kind: "Namespace",
    name: "team-a",
    deletionTimestamp: "2026-11-29T15:00:00Z",
  },
  state: "held",
  held: true,
  asked: 12,
  heldCount: 3,
  objects: [
    {
      object: object("vpcs", "VPC", "core"),
      state: "held",
      causes: [REFERENCE],
      deletionTimestamp: "2026-11-29T15:00:00Z",
    },
    {
      object: object("subnets", "Subnet", "s-1"),
      state: "held",
      causes: [LOCK],
    },
  ],
  notNamed: 1,
  notAsked: 0,
  complete: true,
  notListed: [],
};

Deno.test("renderScope tree: the deletion's duration, each held object as why draws it, what is left counted", () => {
  assert.equal(
    renderScope(REPORT, "tree", { now: NOW }),
    [
      "Namespace team-a is being deleted for 10m (since 2026-11-29T15:00:00Z): 3 of 12 objects asked about are held:",
      "\u251c\u2500\u2500 VPC team-a/core is held by: [being deleted since 2026-11-29T15:00:00Z (10m ago)]",
      "\u2502   \u2514\u2500\u2500 referenced by VirtualMachine other/vm-1 (.spec.vpcRef.name; rule c/vm-vpc; since 2026-11-29T12:00:00Z (3h ago))",
      "\u251c\u2500\u2500 Subnet team-a/s-1 is held by:",
      "\u2502   \u2514\u2500\u2500 locked by Lock team-a/keep (reason: keep it; since 2026-11-29T12:00:00Z (3h ago))",
      "\u2514\u2500\u2500 and 1 more held object not named (--max-held)",
      "",
    ].join("\n"),
  );
});

Deno.test("renderScope tree: free, and cannot tell with what was not asked or listed", () => {
  const free: ScopeReport = {
    ...REPORT,
    scope: { kind: "Namespace", name: "team-a" },
    state: "free",
    held: false,
    heldCount: 0,
    objects: [],
    notNamed: 0,
  };
  assert.equal(
    renderScope(free, "tree"),
    "Namespace team-a: nothing in it is held (12 objects asked about)\n",
  );
  const unknown: ScopeReport = {
    ...free,
    state: "unknown",
    complete: false,
    notAsked: 40,
    notListed: [{ type: "things.g.io", why: "403 \u001b[31mForbidden" }],
  };
  const text = renderScope(unknown, "tree", { maxObjects: 12 });
  assert.match(text, /^Namespace team-a: cannot tell: /);
  assert.match(
    text,
    /and at least 40 more not asked about: the bound of 12 objects/,
  );
  assert.match(
    text,
    /not listed: things\.g\.io \(403 \\u\{1b\}\[31mForbidden\)/,
  );
  assert.doesNotMatch(text, /\u001b/);
});

Deno.test("renderScope json, yaml, dot: the report as data, one graph of every held object", () => {
  assert.deepEqual(JSON.parse(renderScope(REPORT, "json")), REPORT);
  assert.deepEqual(parseYaml(renderScope(REPORT, "yaml")), REPORT);
  const dot = renderScope(
    { ...REPORT, scope: { kind: "Namespace", name: 'a"\u202eb' } },
    "dot",
  );
  assert.match(dot, /^digraph "why" \{\n/);
  assert.match(
    dot,
    /subgraph "cluster_scope" \{\n {4}label="Namespace a\\"\\\\u\{202e\}b";/,
  );
  assert.match(
    dot,
    /"virtualmachines\.network\.example\.com\/other\/vm-1" -> "vpcs\.network\.example\.com\/team-a\/core"/,
  );
  assert.match(
    dot,
    /"lock:team-a\/keep" -> "subnets\.network\.example\.com\/team-a\/s-1"/,
  );
  assert.doesNotMatch(dot, /[\u0000-\u0009\u000b-\u001f\u202a-\u202e]/);
});

Deno.test("renderScope: an owner being deleted in the foreground, since when, in the tree, JSON and YAML; its tenant text escaped", () => {
  const owned: ScopeReport = {
    ...REPORT,
    scope: { kind: "Namespace", name: "team-a" },
    heldCount: 1,
    notNamed: 0,
    objects: [{
      object: object("subnets", "Subnet", "s-1"),
      state: "held",
      causes: [LOCK],
      deletingOwners: [{
        object: {
          group: "owners.example.com",
          version: "v1alpha1",
          resource: "projects",
          kind: "Project",
          namespace: "",
          name: "p\u202e1",
        },
        deletionTimestamp: "2026-11-29T15:00:00Z",
        foreground: true,
        blockOwnerDeletion: true,
      }],
      ownersNotRead: 1,
    }],
  };
  assert.equal(
    renderScope(owned, "tree", { now: NOW }),
    [
      "Namespace team-a: 1 of 12 objects asked about is held:",
      "\u2514\u2500\u2500 Subnet team-a/s-1 is held by: [owner Project p\\u{202e}1 being deleted since 2026-11-29T15:00:00Z (for 10m), waiting for it] [1 owner not read]",
      "    \u2514\u2500\u2500 locked by Lock team-a/keep (reason: keep it; since 2026-11-29T12:00:00Z (3h ago))",
      "",
    ].join("\n"),
  );
  const text = renderScope(owned, "json");
  assert.deepEqual(JSON.parse(text), owned);
  assert.match(text, /"name": "p\\u202e1"/);
  assert.doesNotMatch(text, /\u202e/);
  const yaml = renderScope(owned, "yaml");
  assert.deepEqual(parseYaml(yaml), owned);
  assert.match(yaml, /^ {8}deletionTimestamp: 2026-11-29T15:00:00Z$/m);
  assert.match(yaml, /^ {8}foreground: true$/m);
  assert.doesNotMatch(yaml, /\u202e/);
});
