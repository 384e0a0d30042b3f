import assert from "node:assert/strict";
import { type Feed, type IndexEndpoint, IndexKeeper } from "./index_keeper.ts";
import { indexKey, type IndexSpec, indexSpecs } from "./index_plan.ts";
import { RuleRegistry } from "./rule_registry.ts";
import type { DependentsIndex, IndexFeedState } from "../dependents/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import {
  dependency,
  LOAD_BALANCERS,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

const log = createLogger({ level: "error", write: () => {} });
const KEY = indexKey(VIRTUAL_MACHINES, "id1");

function specs(paths: readonly string[]): Map<string, IndexSpec> {
  const registry = new RuleRegistry();
  registry.replace([{
    cluster: "p1",
    rule: validRule(
      "vm-vpc",
      VIRTUAL_MACHINES,
      paths.map((p) => dependency(VPCS, p)),
    ),
  }], { identities: new Map([["p1/vm-vpc", "id1"]]) });
  return indexSpecs(registry.all());
}

function endpoint(source: string): IndexEndpoint {
  return {
    source,
    collection: (spec, cluster) =>
      `https://${source}/clusters/${cluster}/apis/${spec.dependent.group}/${spec.dependent.version}/${spec.dependent.resource}`,
  };
}

/** A feed that only records what the keeper did with it. */
class RecordingFeed implements Feed {
  state: IndexFeedState = "syncing";
  constructor(
    readonly index: DependentsIndex,
    readonly url: string,
    readonly source: string,
    readonly onApplied: () => void,
  ) {}
  start(): void {}
  stop(): Promise<void> {
    this.state = "stopped";
    return Promise.resolve();
  }
  /** Plays a finished list at `rv`. */
  synced(rv: string): void {
    this.index.startResync(this.source);
    this.index.finishResync(this.source, rv);
    this.state = "synced";
    this.onApplied();
  }
}

function keeper(probed: string[] = []) {
  const feeds: RecordingFeed[] = [];
  const followers: {
    spec: IndexSpec;
    set: (endpoints: readonly IndexEndpoint[]) => void;
    stopped: boolean;
  }[] = [];
  const keeper = new IndexKeeper({
    follow: (spec, set) => {
      const follower = { spec, set, stopped: false };
      followers.push(follower);
      return {
        stop: () => {
          follower.stopped = true;
          return Promise.resolve();
        },
      };
    },
    feed: ({ index, url, source, onApplied }) => {
      const feed = new RecordingFeed(index, url, source, onApplied);
      feeds.push(feed);
      return feed;
    },
    probe: (url) => {
      probed.push(url);
      return Promise.resolve("7");
    },
    maxDependents: 10,
    log,
  });
  /** Tells the followers of live indexes that their export is served at `endpoints`. */
  const setEndpoints = (endpoints: readonly IndexEndpoint[]) => {
    for (const f of followers) if (!f.stopped) f.set(endpoints);
  };
  return { keeper, feeds, followers, setEndpoints };
}

Deno.test("IndexKeeper feeds each index from every endpoint's wildcard collection and is ready once all synced", async () => {
  const probed: string[] = [];
  const { keeper: k, feeds, followers, setEndpoints } = keeper(probed);
  k.update(specs([".spec.vpcRef.name"]));
  assert.equal(k.ready(KEY), undefined, "no endpoint yet");
  assert.deepEqual(followers.map((f) => f.spec.export), [
    { workspace: "p1", name: "compute.example.com" },
  ]);
  setEndpoints([endpoint("s1"), endpoint("s2")]);
  assert.deepEqual(feeds.map((f) => f.url), [
    "https://s1/clusters/*/apis/compute.example.com/v1alpha1/virtualmachines",
    "https://s2/clusters/*/apis/compute.example.com/v1alpha1/virtualmachines",
  ]);
  feeds[0]!.synced("5");
  assert.equal(k.ready(KEY), undefined, "one endpoint not synced");
  feeds[1]!.synced("9");
  const ready = k.ready(KEY)!;
  assert.deepEqual(ready.sources, ["s1", "s2"]);
  assert.deepEqual(ready.pathKeys, [".spec.vpcRef.name"]);
  const versions = await ready.probe("c1", new AbortController().signal);
  assert.deepEqual([...versions], [["s1", "7"], ["s2", "7"]]);
  assert.deepEqual(probed, [
    "https://s1/clusters/c1/apis/compute.example.com/v1alpha1/virtualmachines",
    "https://s2/clusters/c1/apis/compute.example.com/v1alpha1/virtualmachines",
  ]);
  assert.deepEqual(k.sizes(), new Map([[KEY, 0]]));
  await k.stop();
  assert.ok(feeds.every((f) => f.state === "stopped"));
  assert.ok(followers.every((f) => f.stopped));
  assert.equal(k.ready(KEY), undefined);
});

Deno.test("IndexKeeper keeps an unchanged index, rebuilds a changed one and drops a gone one", async () => {
  const { keeper: k, feeds, followers, setEndpoints } = keeper();
  k.update(specs([".spec.vpcRef.name"]));
  setEndpoints([endpoint("s1")]);
  feeds[0]!.synced("5");
  k.update(specs([".spec.vpcRef.name"]));
  assert.equal(feeds.length, 1, "same spec, same feed");
  assert.equal(followers.length, 1, "same spec, same follower");
  assert.notEqual(k.ready(KEY), undefined);
  k.update(specs([".spec.vpcRef.name", ".spec.nics[*].vpcRef.name"]));
  assert.equal(followers.length, 2, "a new index follows its export");
  assert.equal(followers[0]!.stopped, true);
  assert.equal(feeds[0]!.state, "stopped");
  setEndpoints([endpoint("s1")]);
  assert.equal(feeds.length, 2, "a new index for the new paths");
  assert.equal(k.ready(KEY), undefined, "the new one has not synced");
  k.update(new Map());
  assert.equal(feeds[1]!.state, "stopped");
  assert.equal(followers[1]!.stopped, true);
  assert.deepEqual(k.states(), new Map());
  await k.stop();
});

Deno.test("IndexKeeper stops the feeds of an endpoint that is gone and forgets its source", async () => {
  const { keeper: k, feeds, setEndpoints } = keeper();
  k.update(specs([".spec.vpcRef.name"]));
  setEndpoints([endpoint("s1"), endpoint("s2")]);
  feeds[0]!.synced("5");
  feeds[1]!.synced("5");
  setEndpoints([endpoint("s1")]);
  assert.equal(feeds[1]!.state, "stopped");
  assert.deepEqual(k.ready(KEY)?.sources, ["s1"]);
  assert.deepEqual(
    k.states(),
    new Map([[KEY, new Map([["s1", "synced"]])]]),
  );
  await k.stop();
});

Deno.test("IndexKeeper wakes a review waiting for a change when the feed applies one", async () => {
  const { keeper: k, feeds, setEndpoints } = keeper();
  k.update(specs([".spec.vpcRef.name"]));
  setEndpoints([endpoint("s1")]);
  feeds[0]!.synced("5");
  const ready = k.ready(KEY)!;
  const started = performance.now();
  const waiting = ready.changed(60_000, new AbortController().signal);
  feeds[0]!.onApplied();
  await waiting;
  assert.ok(performance.now() - started < 30_000);
  // An aborted review stops waiting too.
  const review = new AbortController();
  const aborted = ready.changed(60_000, review.signal);
  review.abort();
  await aborted;
  await k.stop();
});

Deno.test("IndexKeeper bounds every index together, and a dropped index gives its room back", async () => {
  const { keeper: k, feeds, setEndpoints } = keeper();
  const registry = new RuleRegistry();
  const both = [
    {
      cluster: "p1",
      rule: validRule("vm-vpc", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    },
    {
      cluster: "p1",
      rule: validRule("lb-vpc", LOAD_BALANCERS, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    },
  ];
  const identities = new Map([["p1/vm-vpc", "id1"], ["p1/lb-vpc", "id2"]]);
  registry.replace(both, { identities });
  k.update(indexSpecs(registry.all()));
  setEndpoints([endpoint("s1")]);
  assert.equal(feeds.length, 2);
  const [vms, lbs] = [
    feeds.find((f) => f.url.endsWith("/virtualmachines"))!,
    feeds.find((f) => f.url.endsWith("/loadbalancers"))!,
  ];
  vms.synced("5");
  lbs.synced("5");
  const add = (feed: RecordingFeed, name: string) =>
    feed.index.apply("s1", {
      type: "ADDED",
      object: {
        metadata: {
          name,
          namespace: "ns",
          uid: `uid-${name}`,
          resourceVersion: "6",
          annotations: { "kcp.io/cluster": "c1" },
        },
        spec: { vpcRef: { name: "vpc-a" } },
      },
    });
  for (let i = 0; i < 6; i++) assert.equal(add(vms, `vm-${i}`), true);
  for (let i = 0; i < 4; i++) assert.equal(add(lbs, `lb-${i}`), true);
  // The eleventh dependent of the two passes the keeper's 10.
  assert.equal(add(lbs, "lb-4"), false);
  assert.equal(lbs.index.overflowed, true);
  assert.equal(vms.index.overflowed, false);
  assert.deepEqual(
    [...k.sizes().values()].sort((a, b) => a - b),
    [0, 6],
  );
  // Without the VM rule its index goes, and its room with it.
  registry.replace([both[1]!], { identities });
  k.update(indexSpecs(registry.all()));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(vms.index.size, 0);
  registry.replace(both, { identities });
  k.update(indexSpecs(registry.all()));
  setEndpoints([endpoint("s1")]);
  const again = feeds.at(-1)!;
  assert.ok(again.url.endsWith("/virtualmachines"));
  again.synced("7");
  for (let i = 0; i < 10; i++) assert.equal(add(again, `vm-${i}`), true);
  assert.equal(again.index.overflowed, false);
  await k.stop();
});
