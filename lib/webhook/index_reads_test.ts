import assert from "node:assert/strict";
import {
  answerFromIndex,
  type IndexAnswer,
  type IndexOutcome,
  type ReadyIndex,
} from "./index_reads.ts";
import { indexKey, indexSpecs } from "./index_plan.ts";
import { type Protection, RuleRegistry } from "./rule_registry.ts";
import type { DependentSource, ObjectQuery } from "./review_source.ts";
import { DependentsIndex } from "../dependents/mod.ts";
import { WhenBudget } from "../when/mod.ts";
import {
  dependency,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

const KEY = indexKey(VIRTUAL_MACHINES, "id1");
const SOURCE = "shard-1";
const TARGET = {
  cluster: "c1",
  namespace: "ns",
  name: "vpc-a",
  uid: "u",
  resource: { ...VPCS },
};

function protections(when?: string): readonly Protection[] {
  const rule = validRule("vm-vpc", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  if (when !== undefined) rule.spec.when = when;
  const registry = new RuleRegistry();
  registry.replace([{ cluster: "p1", rule }], {
    identities: new Map([["p1/vm-vpc", "id1"]]),
  });
  return registry.find(VPCS);
}

function vm(name: string, vpc: string, rv: string, cluster = "c1") {
  return {
    metadata: {
      name,
      namespace: "ns",
      uid: `uid-${name}`,
      resourceVersion: rv,
      annotations: { "kcp.io/cluster": cluster },
    },
    spec: { vpcRef: { name: vpc } },
  };
}

/** An index of the rule's one path, synced at `rv` with `objects`. */
function syncedIndex(objects: unknown[], rv: string): DependentsIndex {
  const spec = indexSpecs(protections()).get(KEY)!;
  const index = new DependentsIndex(spec.paths, { maxDependents: 100 });
  index.startResync(SOURCE);
  for (const object of objects) index.upsert(SOURCE, object);
  index.finishResync(SOURCE, rv);
  return index;
}

/** The live objects a review reads by name. */
function liveSource(live: Map<string, unknown>): DependentSource & {
  reads: string[];
} {
  const reads: string[] = [];
  const fail = () => Promise.reject(new Error("not used here"));
  return {
    reads,
    pages: () => {
      throw new Error("not used here");
    },
    liveUid: fail,
    liveMetadata: fail,
    workspaceDeletedAt: fail,
    boundIdentities: fail,
    ownerObject(query: ObjectQuery) {
      reads.push(query.name);
      return Promise.resolve(
        live.get(query.name) as Record<string, unknown> | undefined,
      );
    },
  };
}

function ready(
  index: DependentsIndex,
  probe: () => Promise<ReadonlyMap<string, string>>,
): ReadyIndex {
  return {
    index,
    sources: [SOURCE],
    pathKeys: [".spec.vpcRef.name"],
    probe,
    changed: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 5))),
    idleMs: () => 0,
  };
}

async function answer(
  at: ReadyIndex | undefined,
  live: Map<string, unknown>,
  options: { group?: readonly Protection[]; freshnessMs?: number } = {},
) {
  const outcomes: IndexOutcome[] = [];
  const source = liveSource(live);
  /** The dependents read when `onNamed` was called, one entry per call. */
  const named: string[][] = [];
  const reply = await answerFromIndex(options.group ?? protections(), TARGET, {
    indexes: {
      ready: (key) => key === KEY ? at : undefined,
      observe: (o) => outcomes.push(o),
    },
    source,
    signal: new AbortController().signal,
    budget: new WhenBudget(1_000_000),
    maxNamed: 2,
    freshnessMs: options.freshnessMs ?? 50,
    onNamed: () => named.push([...source.reads]),
  });
  const found = "answer" in reply ? reply.answer : undefined;
  return { found, reply, outcomes, reads: source.reads, named };
}

const never = () => new Promise<ReadonlyMap<string, string>>(() => {});

Deno.test("answerFromIndex() denies with a dependent it confirmed live, without waiting for freshness", async () => {
  const index = syncedIndex([vm("vm-1", "vpc-a", "5")], "9");
  const { found, outcomes, reads } = await answer(
    ready(index, never),
    new Map([["vm-1", vm("vm-1", "vpc-a", "5")]]),
  );
  assert.equal(found?.total, 1);
  assert.deepEqual(found?.named.map((b) => [b.name, b.paths]), [
    ["vm-1", [".spec.vpcRef.name"]],
  ]);
  assert.deepEqual(outcomes, ["confirmed"]);
  assert.deepEqual(reads, ["vm-1"]);
});

Deno.test("answerFromIndex() says it names dependents once, before it reads them, and not when it names none", async () => {
  const index = syncedIndex([vm("vm-1", "vpc-a", "5")], "9");
  const denied = await answer(
    ready(index, never),
    new Map([["vm-1", vm("vm-1", "vpc-a", "5")]]),
  );
  assert.deepEqual(denied.named, [[]]);
  assert.deepEqual(denied.reads, ["vm-1"]);
  const none = await answer(
    ready(
      syncedIndex([vm("vm-1", "vpc-b", "5")], "9"),
      () => Promise.resolve(new Map([[SOURCE, "9"]])),
    ),
    new Map(),
  );
  assert.deepEqual(none.outcomes, ["fresh_none"]);
  assert.deepEqual(none.named, []);
});

Deno.test("answerFromIndex() names only confirmed dependents and counts the ones it did not read", async () => {
  const objects = ["vm-1", "vm-2", "vm-3", "vm-4"].map((n) =>
    vm(n, "vpc-a", "5")
  );
  const live = new Map<string, unknown>([
    // vm-1 was deleted, vm-2 moved to another VPC since the index saw them.
    ["vm-2", vm("vm-2", "vpc-b", "7")],
    ["vm-3", vm("vm-3", "vpc-a", "5")],
    ["vm-4", vm("vm-4", "vpc-a", "5")],
  ]);
  const { found } = await answer(ready(syncedIndex(objects, "9"), never), live);
  assert.deepEqual(found?.named.map((b) => b.name), ["vm-3", "vm-4"]);
  assert.equal(found?.total, 2);
});

Deno.test("answerFromIndex() allows only once the index is shown fresh at the probed version", async () => {
  const index = syncedIndex([], "9");
  const fresh = await answer(
    ready(index, () => Promise.resolve(new Map([[SOURCE, "9"]]))),
    new Map(),
  );
  assert.deepEqual(fresh.found, { named: [], total: 0 });
  assert.deepEqual(fresh.outcomes, ["fresh_none"]);
  // The workspace moved on to 12: the index has not shown it saw that.
  const stale = await answer(
    ready(index, () => Promise.resolve(new Map([[SOURCE, "12"]]))),
    new Map(),
  );
  assert.equal(stale.found, undefined);
  assert.deepEqual(stale.outcomes, ["not_fresh"]);
});

Deno.test("answerFromIndex() waits for the event that makes it fresh and then names the new dependent", async () => {
  const index = syncedIndex([], "9");
  const created = vm("vm-new", "vpc-a", "11");
  setTimeout(() => {
    index.apply(SOURCE, { type: "ADDED", object: created });
    index.apply(SOURCE, {
      type: "BOOKMARK",
      object: { metadata: { resourceVersion: "12" } },
    });
  }, 10);
  const { found, outcomes } = await answer(
    ready(index, () => Promise.resolve(new Map([[SOURCE, "12"]]))),
    new Map([["vm-new", created]]),
    { freshnessMs: 2_000 },
  );
  assert.deepEqual(found?.named.map((b) => b.name), ["vm-new"]);
  assert.deepEqual(outcomes, ["confirmed"]);
});

Deno.test("answerFromIndex() lists what the index cannot answer: a when, an index not ready, a failed probe", async () => {
  const index = syncedIndex([], "9");
  const withWhen = await answer(
    ready(index, never),
    new Map(),
    { group: protections("object.spec.running == true") },
  );
  assert.equal(withWhen.found, undefined);
  assert.deepEqual(withWhen.outcomes, ["not_indexed"]);
  const notReady = await answer(undefined, new Map());
  assert.equal(notReady.found, undefined);
  assert.deepEqual(notReady.outcomes, ["not_synced"]);
  const failed = await answer(
    ready(index, () => Promise.reject(new Error("503"))),
    new Map(),
  );
  assert.equal(failed.found, undefined);
  assert.deepEqual(failed.outcomes, ["not_fresh"]);
});

Deno.test("answerFromIndex() lists when the probe does not answer within the freshness budget", async () => {
  const index = syncedIndex([], "9");
  // The probe never answers: without the bound this would never end.
  const { found, outcomes } = await answer(ready(index, never), new Map(), {
    freshnessMs: 30,
  });
  assert.equal(found, undefined);
  assert.deepEqual(outcomes, ["not_fresh"]);
});

Deno.test("answerFromIndex() lists at once when the index is idle: no probe, no wait", async () => {
  const index = syncedIndex([vm("vm-1", "vpc-b", "5")], "9");
  let probed = 0;
  const idle: ReadyIndex = {
    ...ready(index, () => {
      probed++;
      return Promise.resolve(new Map([[SOURCE, "9"]]));
    }),
    idleMs: () => 60_000,
  };
  const { found, outcomes } = await answer(idle, new Map());
  assert.equal(found, undefined);
  assert.deepEqual(outcomes, ["idle"]);
  assert.equal(probed, 0);
  // A dependent it names is still confirmed and denies, idle or not.
  const held = syncedIndex([vm("vm-1", "vpc-a", "5")], "9");
  const denied = await answer(
    { ...ready(held, never), idleMs: () => 60_000 },
    new Map([["vm-1", vm("vm-1", "vpc-a", "5")]]),
  );
  assert.equal(denied.found?.total, 1);
  assert.deepEqual(denied.outcomes, ["confirmed"]);
});

Deno.test("answerFromIndex() fails the review when a dependent it names cannot be read", async () => {
  const index = syncedIndex([vm("vm-1", "vpc-a", "5")], "9");
  const source = liveSource(new Map());
  source.ownerObject = () => Promise.reject(new Error("403 Forbidden"));
  await assert.rejects(
    answerFromIndex(protections(), TARGET, {
      indexes: { ready: () => ready(index, never) },
      source,
      signal: new AbortController().signal,
      budget: new WhenBudget(1_000_000),
      maxNamed: 2,
      freshnessMs: 50,
    }),
    /reading virtualmachines\.compute\.example\.com vm-1 failed: 403 Forbidden/,
  );
});

Deno.test("answerFromIndex(): an idle index races the list, answering once a watch from its position shows the workspace unchanged", async () => {
  const asked: { cluster: string; since: string; until: string }[] = [];
  let quiet = true;
  const idle = (index: DependentsIndex): ReadyIndex => ({
    ...ready(index, () => Promise.resolve(new Map([[SOURCE, "12"]]))),
    idleMs: () => 60_000,
    quiet: (cluster, { since, until }) => {
      asked.push({ cluster, since, until });
      return Promise.resolve(quiet);
    },
  });
  const index = syncedIndex([vm("vm-1", "vpc-b", "5")], "9");
  const { reply, outcomes } = await answer(idle(index), new Map());
  assert.ok("quiet" in reply);
  assert.deepEqual(outcomes, [], "nothing counted before the race ends");
  const signal = new AbortController().signal;
  const seen: IndexOutcome[] = [];
  const race = async (
    at: ReadyIndex,
    live = new Map<string, unknown>(),
  ): Promise<IndexAnswer | undefined | "no race"> => {
    const r = await answerFromIndex(protections(), TARGET, {
      indexes: { ready: () => at, observe: (o) => seen.push(o) },
      source: liveSource(live),
      signal,
      budget: new WhenBudget(1_000_000),
      maxNamed: 2,
      freshnessMs: 50,
    });
    return "quiet" in r ? await r.quiet(signal) : "no race";
  };
  assert.deepEqual(await race(idle(index)), { named: [], total: 0 });
  assert.deepEqual(asked, [{ cluster: "c1", since: "9", until: "12" }]);
  assert.deepEqual(seen, ["quiet_none"]);
  // Something changed in the workspace since the index's position: the
  // list answers.
  quiet = false;
  assert.equal(await race(idle(index)), undefined);
  assert.deepEqual(seen, ["quiet_none", "idle"]);
  // A dependent the index names that still refers denies at once, idle or
  // not; one gone since is read as gone after the race too.
  quiet = true;
  const held = syncedIndex([vm("vm-1", "vpc-a", "5")], "9");
  assert.equal(
    await race(idle(held), new Map([["vm-1", vm("vm-1", "vpc-a", "5")]])),
    "no race",
  );
  assert.deepEqual(await race(idle(held)), { named: [], total: 0 });
  assert.deepEqual(seen.slice(2), ["confirmed", "quiet_none"]);
  // An index fresh at the probe needs no watch.
  asked.length = 0;
  const fresh = syncedIndex([], "12");
  assert.deepEqual(await race(idle(fresh)), { named: [], total: 0 });
  assert.deepEqual(asked, []);
});
