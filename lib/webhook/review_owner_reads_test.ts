import assert from "node:assert/strict";
import { KubeApiError } from "../kcp/mod.ts";
import type { ClusterRule } from "../rules/mod.ts";
import { Deadline, DeadlineExceeded } from "../runtime/mod.ts";
import { WHEN_COST_LIMIT, WhenBudget } from "../when/mod.ts";
import { RuleRegistry } from "./rule_registry.ts";
import { MAX_OWNER_LIST_ITEMS, readOwners } from "./review_owner_reads.ts";
import { MAX_OWNERS_LOOKED_UP, type OwnerFindings } from "./review_owners.ts";
import { Forbidden } from "./review_source.ts";
import type { ReviewTarget } from "./review_target.ts";
import {
  FakeDependentSource,
  network,
  networkOwnerRule,
  NETWORKS,
  OWNER_LABEL,
  OWNER_LABEL_PATH,
  OWNER_REFS_PATH,
  type OwnerAnswer,
  ownerRef,
  SUBNETS,
} from "../../testing/fakes.ts";

const NOT_FOUND = new KubeApiError("not found", {
  status: 404,
  reason: "NotFound",
});

/** subnets/s-1 in team-a of consumer1, as a review names it. */
const TARGET: ReviewTarget = {
  cluster: "consumer1",
  namespace: "team-a",
  name: "s-1",
  uid: "uid-s-1",
  resource: SUBNETS,
};

/** Networks own Subnets, which name theirs by label (`from: Target`). */
const BY_LABEL = networkOwnerRule("by-label", {
  from: "Target",
  path: OWNER_LABEL_PATH,
}, { protects: SUBNETS });

/** {@linkcode BY_LABEL}, while the Network's `spec.deletionProtection` is true. */
const GUARDED = networkOwnerRule("guarded", {
  from: "Target",
  path: OWNER_LABEL_PATH,
}, { protects: SUBNETS, when: "object.spec.deletionProtection == true" });

/** Networks own Subnets, which name theirs by ownerReference. */
const BY_REFS = networkOwnerRule("by-refs", {
  from: "Target",
  path: OWNER_REFS_PATH,
}, { protects: SUBNETS });

/** Networks own Subnets, whose Namespace names theirs by label. */
const BY_NAMESPACE = networkOwnerRule("by-namespace", {
  from: "TargetNamespace",
  path: OWNER_LABEL_PATH,
}, { protects: SUBNETS });

/** One case of {@linkcode readOwners}. */
interface Case {
  name: string;
  rules: ClusterRule[];
  /** The live subnet's metadata; absent: it does not exist. */
  live?: Record<string, unknown>;
  /** Owners and Namespaces by `<resource>/<name>`. */
  owners?: Record<string, OwnerAnswer>;
  /** The owners that hold it, as `<rule> <name>[ via <namespace>]`. */
  holding: string[];
  unchecked?: number;
  /** The lookups made, as `<resource>/<name>`, in order. */
  lookups: string[];
}

/** Reads the owners for `rules`, split by where they read the reference. */
async function read(
  source: FakeDependentSource,
  rules: ClusterRule[],
  live: Record<string, unknown> | undefined,
  options: {
    timeoutMs?: number;
    identities?: ReadonlyMap<string, string>;
    bound?: (fresh: boolean) => Promise<ReadonlyMap<string, string>>;
  } = {},
): Promise<OwnerFindings> {
  const registry = new RuleRegistry();
  registry.replace(
    rules,
    options.identities === undefined ? {} : {
      identities: options.identities,
    },
  );
  const protections = registry.find(SUBNETS);
  const deadline = new Deadline(options.timeoutMs ?? 5_000);
  try {
    return await readOwners(source, {
      target: TARGET,
      owners: protections.filter((p) => p.from === "Target"),
      namespaceOwners: protections.filter((p) => p.from === "TargetNamespace"),
      live: Promise.resolve(live),
      deadline,
      budget: new WhenBudget(WHEN_COST_LIMIT),
      bound: options.bound ?? (() => Promise.resolve(new Map())),
    });
  } finally {
    deadline.close();
  }
}

/** What holds, in short. */
function shortly(findings: OwnerFindings): string[] {
  return findings.holding.map((hold) =>
    `${hold.rule} ${hold.name}` +
    (hold.viaNamespace === undefined ? "" : ` via ${hold.viaNamespace}`)
  );
}

/** The metadata of the live subnet, with `more`. */
function subnet(more: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: "s-1", uid: "uid-s-1", ...more };
}

const LABELLED_NET_A = subnet({ labels: { [OWNER_LABEL]: "net-a" } });

Deno.test("readOwners() looks up the owners the live object and its Namespace name, and keeps those that hold it", async () => {
  const cases: Case[] = [
    {
      name: "an owner named by label that exists",
      rules: [BY_LABEL],
      live: LABELLED_NET_A,
      owners: { "networks/net-a": network("net-a") },
      holding: ["provider1/by-label net-a"],
      lookups: ["networks/net-a"],
    },
    {
      name: "an owner named by label that does not exist",
      rules: [BY_LABEL],
      live: LABELLED_NET_A,
      holding: [],
      lookups: ["networks/net-a"],
    },
    {
      name: "an owner whose `when` is true holds",
      rules: [GUARDED],
      live: LABELLED_NET_A,
      owners: { "networks/net-a": network("net-a", { protection: true }) },
      holding: ["provider1/guarded net-a"],
      lookups: ["networks/net-a"],
    },
    {
      name: "an owner whose `when` is false does not",
      rules: [GUARDED],
      live: LABELLED_NET_A,
      owners: { "networks/net-a": network("net-a", { protection: false }) },
      holding: [],
      lookups: ["networks/net-a"],
    },
    {
      name: "a review the live object does not confirm reads no owner",
      rules: [BY_LABEL, BY_NAMESPACE],
      live: { ...LABELLED_NET_A, uid: "uid-other" },
      owners: { "networks/net-a": network("net-a") },
      holding: [],
      lookups: [],
    },
    {
      name: "an object that is gone reads no owner",
      rules: [BY_LABEL],
      holding: [],
      lookups: [],
    },
    {
      name: "an ownerReference counts with the uid it names only",
      rules: [BY_REFS],
      live: subnet({
        ownerReferences: [
          ownerRef("net-a"),
          ownerRef("net-b", { uid: "uid-old" }),
        ],
      }),
      owners: {
        "networks/net-a": network("net-a"),
        "networks/net-b": network("net-b"),
      },
      holding: ["provider1/by-refs net-a"],
      lookups: ["networks/net-a", "networks/net-b"],
    },
    {
      name: "an owner the Namespace names, read after the Namespace",
      rules: [BY_NAMESPACE],
      live: subnet(),
      owners: {
        "namespaces/team-a": {
          metadata: { name: "team-a", labels: { [OWNER_LABEL]: "net-b" } },
        },
        "networks/net-b": network("net-b"),
      },
      holding: ["provider1/by-namespace net-b via team-a"],
      lookups: ["networks/net-b"],
    },
    {
      name: "the object's owners and the Namespace's together",
      rules: [BY_LABEL, BY_NAMESPACE],
      live: LABELLED_NET_A,
      owners: {
        "namespaces/team-a": {
          metadata: { name: "team-a", labels: { [OWNER_LABEL]: "net-b" } },
        },
        "networks/net-a": network("net-a"),
        "networks/net-b": network("net-b"),
      },
      holding: [
        "provider1/by-label net-a",
        "provider1/by-namespace net-b via team-a",
      ],
      lookups: ["networks/net-a", "networks/net-b"],
    },
    {
      name: "a Namespace that is gone names nothing",
      rules: [BY_NAMESPACE],
      live: subnet(),
      holding: [],
      lookups: [],
    },
  ];
  for (const c of cases) {
    const source = new FakeDependentSource();
    for (const [key, answer] of Object.entries(c.owners ?? {})) {
      source.owners.set(key, answer);
    }
    const findings = await read(source, c.rules, c.live);
    assert.deepEqual(shortly(findings), c.holding, c.name);
    assert.equal(findings.unchecked, c.unchecked ?? 0, c.name);
    assert.deepEqual(
      source.ownerQueries.map((q) => `${q.resource.resource}/${q.name}`),
      c.lookups,
      c.name,
    );
  }
});

Deno.test("readOwners() looks an owner up in the object's namespace, in the object's cluster", async () => {
  const source = new FakeDependentSource();
  source.owners.set(
    "networks/net-a",
    network("net-a", { namespace: "team-a" }),
  );
  const findings = await read(source, [BY_LABEL], LABELLED_NET_A);
  assert.deepEqual(source.ownerQueries, [{
    cluster: "consumer1",
    namespace: "team-a",
    resource: NETWORKS,
    name: "net-a",
  }]);
  assert.deepEqual(findings.holding, [{
    kind: "Network",
    type: {
      group: "network.example.com",
      version: "v1alpha1",
      resource: "networks",
    },
    rule: "provider1/by-label",
    namespace: "team-a",
    name: "net-a",
    field: `.metadata.labels["${OWNER_LABEL}"]`,
  }]);
});

Deno.test("readOwners() words a failed read for the denial: Forbidden on a 403, what was read otherwise", async () => {
  const forbidden = new KubeApiError("forbidden", { status: 403 });
  const cases: {
    name: string;
    rules: ClusterRule[];
    owners: Record<string, OwnerAnswer>;
    want: (error: unknown) => boolean;
  }[] = [
    {
      name: "a 403 on the owner",
      rules: [BY_LABEL],
      owners: { "networks/net-a": { error: forbidden } },
      want: (error) =>
        error instanceof Forbidden &&
        error.permission.verb === "get" &&
        error.permission.resource === "networks",
    },
    {
      name: "another failure of the owner",
      rules: [BY_LABEL],
      owners: { "networks/net-a": { error: new Error("connection reset") } },
      want: (error) =>
        error instanceof Error && !(error instanceof Forbidden) &&
        error.message === "reading Network/net-a failed: connection reset",
    },
    {
      name: "a 403 on the Namespace",
      rules: [BY_NAMESPACE],
      owners: { "namespaces/team-a": { error: forbidden } },
      want: (error) =>
        error instanceof Forbidden &&
        error.permission.resource === "namespaces" &&
        error.permission.group === "",
    },
    {
      name: "another failure of the Namespace",
      rules: [BY_NAMESPACE],
      owners: { "namespaces/team-a": { error: new Error("EOF") } },
      want: (error) =>
        error instanceof Error &&
        error.message === "reading the namespace team-a failed: EOF",
    },
  ];
  for (const c of cases) {
    const source = new FakeDependentSource();
    for (const [key, answer] of Object.entries(c.owners)) {
      source.owners.set(key, answer);
    }
    await assert.rejects(
      read(source, c.rules, LABELLED_NET_A),
      (error: unknown) => {
        assert.ok(c.want(error), `${c.name}: ${error}`);
        return true;
      },
    );
  }
});

Deno.test("readOwners() ends at the review's deadline, naming what it was reading", async () => {
  const source = new FakeDependentSource();
  source.owners.set("networks/net-a", { hang: true });
  await assert.rejects(
    read(source, [BY_LABEL], LABELLED_NET_A, { timeoutMs: 20 }),
    (error: unknown) => {
      assert.ok(error instanceof DeadlineExceeded);
      assert.equal(
        error.message,
        "reading Network/net-a did not finish within 20 ms",
      );
      return true;
    },
  );
});

Deno.test("readOwners() counts an owner rule only where the workspace binds its type from the rule's export, read again fresh before dropping it", async () => {
  const cases: {
    name: string;
    kept: ReadonlyMap<string, string>;
    fresh: ReadonlyMap<string, string>;
    holding: string[];
    reads: boolean[];
  }[] = [
    {
      name: "bound from the rule's export",
      kept: new Map([["network.example.com/networks", "real"]]),
      fresh: new Map([["network.example.com/networks", "real"]]),
      holding: ["provider1/by-label net-a"],
      reads: [false],
    },
    {
      name: "a kept answer that would drop it, corrected by a fresh one",
      kept: new Map(),
      fresh: new Map([["network.example.com/networks", "real"]]),
      holding: ["provider1/by-label net-a"],
      reads: [false, true],
    },
    {
      name: "bound from another export, kept and fresh",
      kept: new Map([["network.example.com/networks", "other"]]),
      fresh: new Map([["network.example.com/networks", "other"]]),
      holding: [],
      reads: [false, true],
    },
  ];
  for (const c of cases) {
    const source = new FakeDependentSource();
    source.owners.set("networks/net-a", network("net-a"));
    const reads: boolean[] = [];
    const findings = await read(source, [BY_LABEL], LABELLED_NET_A, {
      identities: new Map([["provider1/by-label", "real"]]),
      bound: (fresh) => {
        reads.push(fresh);
        return Promise.resolve(fresh ? c.fresh : c.kept);
      },
    });
    assert.deepEqual(shortly(findings), c.holding, c.name);
    assert.deepEqual(reads, c.reads, c.name);
  }
});

/** A subnet naming `count` Networks `n-0`, `n-1`, ... by ownerReference. */
function ownedByMany(count: number): Record<string, unknown> {
  return subnet({
    ownerReferences: Array.from(
      { length: count },
      (_, i) => ownerRef(`n-${i}`),
    ),
  });
}

Deno.test("readOwners() past the lookups' bound lists each owner type once: none alive lets it go, one alive holds", async (t) => {
  for (const count of [MAX_OWNERS_LOOKED_UP + 1, 100]) {
    await t.step(`${count} owners, none alive: nothing holds it`, async () => {
      const source = new FakeDependentSource({
        networks: { pages: [[network("other")], []] },
      });
      const findings = await read(source, [BY_REFS], ownedByMany(count));
      assert.deepEqual(findings, { holding: [], unchecked: 0 });
      assert.deepEqual(source.ownerQueries, []);
      assert.deepEqual(source.plainQueries.map((q) => q.namespace), [
        "team-a",
      ]);
    });
    await t.step(`${count} owners, one alive: it holds, named`, async () => {
      const source = new FakeDependentSource({
        networks: { pages: [[network("other"), network(`n-${count - 1}`)]] },
      });
      const findings = await read(source, [BY_REFS], ownedByMany(count));
      assert.deepEqual(shortly(findings), [`provider1/by-refs n-${count - 1}`]);
      assert.equal(
        findings.holding[0]?.field,
        `.metadata.ownerReferences[${count - 1}].name`,
      );
      assert.equal(findings.unchecked, 0);
    });
  }
  await t.step(
    "an owner of the same name with another uid does not hold",
    async () => {
      const source = new FakeDependentSource({
        networks: { pages: [[network("n-3", { uid: "uid-new" })]] },
      });
      const findings = await read(source, [BY_REFS], ownedByMany(20));
      assert.deepEqual(findings.holding, []);
    },
  );
  await t.step(
    "an owner type not namespaced there is listed cluster-wide",
    async () => {
      const source = new FakeDependentSource({
        networks: {
          run: (query) =>
            (async function* () {
              if (query.namespace !== undefined) throw NOT_FOUND;
              yield [network("n-2"), network("n-3", { namespace: "team-b" })];
            })(),
        },
      });
      const findings = await read(source, [BY_REFS], ownedByMany(20));
      assert.deepEqual(shortly(findings), ["provider1/by-refs n-2"]);
      assert.deepEqual(source.plainQueries.map((q) => q.namespace), [
        "team-a",
        undefined,
      ]);
    },
  );
});

Deno.test("readOwners() past the lookups' bound fails closed when the list fails, is refused or is too long, saying what to do", async (t) => {
  const cases: [string, FakeDependentSource, (error: unknown) => void][] = [
    [
      "the list fails",
      new FakeDependentSource({ networks: { error: new Error("boom") } }),
      (error) => {
        assert.ok(error instanceof Error);
        assert.equal(
          error.message,
          "listing networks.network.example.com in namespace team-a failed: boom",
        );
      },
    ],
    [
      "the list is refused",
      new FakeDependentSource({
        networks: { error: new KubeApiError("forbidden", { status: 403 }) },
      }),
      (error) => {
        assert.ok(error instanceof Forbidden);
        assert.equal(error.permission.verb, "list");
      },
    ],
    [
      "the list is too long",
      new FakeDependentSource({
        networks: {
          pages: Array.from(
            { length: MAX_OWNER_LIST_ITEMS / 1000 + 1 },
            () => Array.from({ length: 1000 }, () => network("x")),
          ),
        },
      }),
      (error) => {
        assert.ok(error instanceof Error);
        assert.match(
          error.message,
          /more than 20000 networks\.network\.example\.com in namespace team-a to find the 17 owners it names among; remove the owner references that name no existing owner, then retry/,
        );
      },
    ],
  ];
  for (const [name, source, check] of cases) {
    await t.step(name, async () => {
      const error = await read(source, [BY_REFS], ownedByMany(17)).then(
        () => undefined,
        (e) => e,
      );
      check(error);
    });
  }
  await t.step("the list does not answer in time", async () => {
    const source = new FakeDependentSource({ networks: { hang: true } });
    const error = await read(source, [BY_REFS], ownedByMany(17), {
      timeoutMs: 50,
    }).then(() => undefined, (e) => e);
    assert.ok(error instanceof DeadlineExceeded);
    assert.match(
      error.message,
      /listing networks\.network\.example\.com in namespace team-a/,
    );
  });
});
