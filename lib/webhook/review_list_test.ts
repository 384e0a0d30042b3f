import assert from "node:assert/strict";
import { addBlockers, type Blockers, listBlockers } from "./review_list.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { WhenBudget } from "../when/mod.ts";
import {
  FakeDependentSource,
  VIRTUAL_MACHINES,
  vm,
  VM_RULE,
  VPCS,
} from "../../testing/fakes.ts";

const TARGET = {
  cluster: "consumer1",
  namespace: "default",
  name: "vpc-a",
  uid: "uid-vpc-a",
  resource: { ...VPCS },
};

function registry(identity?: string): RuleRegistry {
  const r = new RuleRegistry();
  r.replace(
    [VM_RULE],
    identity === undefined ? {} : {
      identities: new Map([[
        `${VM_RULE.cluster}/${VM_RULE.rule.metadata.name}`,
        identity,
      ]]),
    },
  );
  return r;
}

async function list(
  pages: unknown[][],
  options: { identity?: string; bound?: Map<string, string> } = {},
): Promise<{ found: Blockers; queries: FakeDependentSource["queries"] }> {
  const source = new FakeDependentSource({ virtualmachines: { pages } });
  const found: Blockers = { named: [], total: 0 };
  const bound = Promise.resolve(options.bound);
  await listBlockers(registry(options.identity).find(VPCS), TARGET, {
    source,
    signal: new AbortController().signal,
    bound,
    freshBound: () => bound,
    everyNamespace: false,
    budget: new WhenBudget(1_000_000),
    maxNamed: 2,
    found,
  });
  return { found, queries: source.queries };
}

Deno.test("listBlockers() keeps only the dependents that refer, names the first few and counts all", async () => {
  const { found, queries } = await list([
    [vm("vm-3", "vpc-a"), vm("vm-x", "vpc-b")],
    [vm("vm-1", "vpc-a"), vm("vm-2", "vpc-a")],
  ]);
  assert.equal(found.total, 3);
  assert.deepEqual(found.named.map((b) => [b.name, b.paths]), [
    ["vm-1", [".spec.vpcRef.name"]],
    ["vm-2", [".spec.vpcRef.name"]],
  ]);
  // Its own namespace only.
  assert.deepEqual(queries.map((q) => [q.cluster, q.namespace]), [
    ["consumer1", "default"],
  ]);
});

Deno.test("listBlockers() counts a rule only where the workspace binds the type from the rule's export", async () => {
  const key = `${VIRTUAL_MACHINES.group}/${VIRTUAL_MACHINES.resource}`;
  const pages = [[vm("vm-1", "vpc-a")]];
  const same = await list(pages, {
    identity: "id1",
    bound: new Map([[key, "id1"]]),
  });
  assert.equal(same.found.total, 1);
  const other = await list(pages, {
    identity: "id1",
    bound: new Map([[key, "someone-else"]]),
  });
  assert.equal(other.found.total, 0);
  // Bindings that cannot be read: every rule counts (fail closed).
  assert.equal((await list(pages, { identity: "id1" })).found.total, 1);
});

Deno.test("addBlockers() merges in order and keeps the count", () => {
  const found: Blockers = { named: [], total: 1 };
  const more = async () =>
    (await list([[vm("vm-2", "vpc-a")], [vm("vm-1", "vpc-a")]])).found;
  return more().then((m) => {
    addBlockers(found, m, 1);
    assert.equal(found.total, 3);
    assert.deepEqual(found.named.map((b) => b.name), ["vm-1"]);
  });
});
