import assert from "node:assert/strict";
import {
  type ClusterRule,
  type Dependency,
  type DependencyRule,
  formatFieldPath,
  type GroupVersionResource,
  gvrKey,
  parseFieldPath,
  ruleKey,
} from "../rules/mod.ts";
import { type Protection, RuleRegistry } from "./rule_registry.ts";
import {
  dependency,
  type DependentType,
  LOAD_BALANCERS,
  SUBNETS,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

interface RuleOptions {
  /** `metadata.name`. */
  name?: string;
  /** The type that holds references. */
  dependent?: DependentType;
  /** The protected types; default: VPCs at `.spec.vpcRef.name`. */
  dependencies?: Dependency[];
}

/**
 * A validated DependencyRule: by default VirtualMachines depend on VPCs via
 * `.spec.vpcRef.name`.
 */
function rule(options: RuleOptions = {}): DependencyRule {
  const {
    name = "vm-needs-vpc",
    dependent = VIRTUAL_MACHINES,
    dependencies = [dependency(VPCS, ".spec.vpcRef.name")],
  } = options;
  return validRule(name, dependent, dependencies);
}

/** `rule(options)` in `cluster`. */
function entry(cluster: string, options: RuleOptions = {}): ClusterRule {
  return { cluster, rule: rule(options) };
}

/** The protection a rule at `ruleKey` gives, as find() should report it. */
function protection(
  key: string,
  dependent: DependentType,
  fieldPathText: string,
): Protection {
  return {
    rule: key,
    provider: "root:providers:network",
    dependentExport: {
      workspace: key.slice(0, key.indexOf("/")),
      name: dependent.group,
    },
    dependent: { ...dependent },
    fieldPath: parseFieldPath(fieldPathText),
    fieldPathText,
    from: "Dependent",
    protectWhile: "Exists",
    ownerReferences: false,
  };
}

/** find() as plain data, comparable with deepEqual. */
function found(
  registry: RuleRegistry,
  gvr: GroupVersionResource,
): Protection[] {
  return registry.find(gvr).map((p) => ({
    rule: p.rule,
    provider: p.provider,
    dependentExport: { ...p.dependentExport },
    dependent: { ...p.dependent },
    fieldPath: [...p.fieldPath],
    fieldPathText: p.fieldPathText,
    from: p.from,
    protectWhile: p.protectWhile,
    ownerReferences: p.ownerReferences,
  }));
}

Deno.test("gvrKey() joins group, version and resource, keeping the core group empty", () => {
  assert.equal(gvrKey(VPCS), "network.example.com/v1alpha1/vpcs");
  assert.equal(
    gvrKey({ group: "", version: "v1", resource: "configmaps" }),
    "/v1/configmaps",
  );
  assert.notEqual(
    gvrKey({ group: "", version: "v1", resource: "configmaps" }),
    gvrKey({ group: "core", version: "v1", resource: "configmaps" }),
  );
});

Deno.test("RuleRegistry is not loaded and empty until replace() is called", () => {
  const registry = new RuleRegistry();
  assert.equal(registry.loaded, false);
  assert.equal(registry.protectedTypes, 0);
  assert.deepEqual(found(registry, VPCS), []);
});

Deno.test("RuleRegistry.replace() marks the registry loaded, even with no rules", () => {
  const registry = new RuleRegistry();
  registry.replace([]);
  assert.equal(registry.loaded, true);
  assert.equal(registry.protectedTypes, 0);
  assert.deepEqual(found(registry, VPCS), []);
});

Deno.test("RuleRegistry.replace() loads the rules and indexes them by protected type", () => {
  const registry = new RuleRegistry();
  registry.replace([entry("provider1")]);
  assert.equal(registry.loaded, true);
  assert.equal(registry.protectedTypes, 1);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
});

Deno.test("RuleRegistry.replace() drops every rule it is not given", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1"),
    entry("provider1", {
      name: "lb-needs-subnet",
      dependent: LOAD_BALANCERS,
      dependencies: [dependency(SUBNETS, ".spec.subnetRef.name")],
    }),
  ]);
  assert.equal(registry.protectedTypes, 2);
  registry.replace([
    entry("provider1", {
      name: "lb-needs-subnet",
      dependent: LOAD_BALANCERS,
      dependencies: [dependency(SUBNETS, ".spec.subnetRef.name")],
    }),
  ]);
  assert.equal(registry.protectedTypes, 1);
  assert.deepEqual(found(registry, VPCS), []);
  assert.deepEqual(found(registry, SUBNETS), [
    protection(
      "provider1/lb-needs-subnet",
      LOAD_BALANCERS,
      ".spec.subnetRef.name",
    ),
  ]);
});

Deno.test("RuleRegistry.replace() with no rules after some empties the index and keeps the registry loaded", () => {
  const registry = new RuleRegistry();
  registry.replace([entry("provider1")]);
  registry.replace([]);
  assert.equal(registry.protectedTypes, 0);
  assert.deepEqual(found(registry, VPCS), []);
  // Losing every rule does not make the registry unloaded again.
  assert.equal(registry.loaded, true);
});

Deno.test("RuleRegistry.replace() keeps the later of two rules with the same cluster and name", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1"),
    entry("provider1", {
      dependencies: [dependency(SUBNETS, ".spec.subnetRef.name")],
    }),
  ]);
  assert.equal(registry.protectedTypes, 1);
  assert.deepEqual(found(registry, VPCS), []);
  assert.deepEqual(found(registry, SUBNETS), [
    protection(
      "provider1/vm-needs-vpc",
      VIRTUAL_MACHINES,
      ".spec.subnetRef.name",
    ),
  ]);
});

Deno.test("RuleRegistry.find() matches only the exact group, version and resource", () => {
  const registry = new RuleRegistry();
  registry.replace([entry("provider1")]);
  assert.equal(registry.find(VPCS).length, 1);
  assert.deepEqual(found(registry, { ...VPCS, version: "v1beta1" }), []);
  assert.deepEqual(
    found(registry, { ...VPCS, group: "other.example.com" }),
    [],
  );
  assert.deepEqual(found(registry, { ...VPCS, group: "" }), []);
  assert.deepEqual(found(registry, { ...VPCS, resource: "vpc" }), []);
  // The dependent type is not protected by the rule.
  assert.deepEqual(found(registry, VIRTUAL_MACHINES), []);
});

Deno.test("RuleRegistry.find() does not match the core group against a group named core", () => {
  // `core` is a valid DNS subdomain, so a rule may protect a group named
  // `core`; the core group (`""`) is a different group.
  const coreNamed = { group: "core", version: "v1", resource: "configmaps" };
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", {
      dependencies: [dependency(coreNamed, ".spec.configRef.name")],
    }),
  ]);
  assert.equal(registry.find(coreNamed).length, 1);
  assert.deepEqual(
    found(registry, { group: "", version: "v1", resource: "configmaps" }),
    [],
  );
});

Deno.test("RuleRegistry.find() returns both protected types of a rule with two dependencies", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", {
      dependencies: [
        dependency(VPCS, ".spec.vpcRef.name"),
        dependency(SUBNETS, ".spec.subnetRef.name"),
      ],
    }),
  ]);
  assert.equal(registry.protectedTypes, 2);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
  assert.deepEqual(found(registry, SUBNETS), [
    protection(
      "provider1/vm-needs-vpc",
      VIRTUAL_MACHINES,
      ".spec.subnetRef.name",
    ),
  ]);
});

Deno.test("RuleRegistry.find() returns two field paths on the same dependent type as two protections", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", {
      dependencies: [
        dependency(VPCS, ".spec.vpcRef.name"),
        dependency(VPCS, ".spec.backupVpcRef.name"),
      ],
    }),
  ]);
  assert.equal(registry.protectedTypes, 1);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
    protection(
      "provider1/vm-needs-vpc",
      VIRTUAL_MACHINES,
      ".spec.backupVpcRef.name",
    ),
  ]);
});

Deno.test("RuleRegistry keeps rules with the same name in different clusters apart", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1"),
    entry("provider2", {
      dependencies: [dependency(VPCS, ".spec.network.vpc")],
    }),
  ]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
    protection("provider2/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.network.vpc"),
  ]);

  // Dropping provider2's rule leaves provider1's of the same name.
  registry.replace([entry("provider1")]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
});

Deno.test("RuleRegistry.replace() of a rule edited in place changes find()", () => {
  const registry = new RuleRegistry();
  const before = entry("provider1");
  registry.replace([before]);
  assert.equal(registry.find(VPCS)[0]?.fieldPathText, ".spec.vpcRef.name");

  const after = entry("provider1", {
    dependencies: [dependency(VPCS, ".spec.network.vpcName")],
  });
  registry.replace([after]);
  assert.deepEqual(found(registry, VPCS), [
    protection(
      "provider1/vm-needs-vpc",
      VIRTUAL_MACHINES,
      ".spec.network.vpcName",
    ),
  ]);
  // The old rule object, given again, counts as it reads.
  registry.replace([before]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
});

Deno.test("RuleRegistry.replace() of an edit that drops a protected type removes it from find()", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", {
      dependencies: [
        dependency(VPCS, ".spec.vpcRef.name"),
        dependency(SUBNETS, ".spec.subnetRef.name"),
      ],
    }),
  ]);
  assert.equal(registry.protectedTypes, 2);
  registry.replace([entry("provider1")]);
  assert.equal(registry.protectedTypes, 1);
  assert.deepEqual(found(registry, SUBNETS), []);
  assert.equal(registry.find(VPCS).length, 1);
});

Deno.test("RuleRegistry.find() deduplicates identical protections from two rules", () => {
  const ruleA = entry("provider1", { name: "rule-a" });
  // Same dependent and field path, written without the leading dot.
  const ruleB = entry("provider1", {
    name: "rule-b",
    dependencies: [dependency(VPCS, "spec.vpcRef.name")],
  });
  const otherA = entry("provider2", { name: "rule-a" });
  const registry = new RuleRegistry();
  registry.replace([ruleA, ruleB, otherA]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/rule-a", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);

  // The protection survives as long as one of the rules gives it.
  registry.replace([ruleB, otherA]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/rule-b", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
  registry.replace([otherA]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider2/rule-a", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
});

Deno.test("RuleRegistry.find() keeps protections that differ in dependent type or field path", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", { name: "rule-a" }),
    entry("provider1", { name: "rule-b", dependent: LOAD_BALANCERS }),
    entry("provider1", {
      name: "rule-c",
      dependencies: [dependency(VPCS, ".spec.otherVpc.name")],
    }),
  ]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/rule-a", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
    protection("provider1/rule-b", LOAD_BALANCERS, ".spec.vpcRef.name"),
    protection("provider1/rule-c", VIRTUAL_MACHINES, ".spec.otherVpc.name"),
  ]);
});

Deno.test("RuleRegistry.find() keeps protections whose dependent types differ only in version", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", { name: "rule-a" }),
    entry("provider1", {
      name: "rule-b",
      dependent: { ...VIRTUAL_MACHINES, version: "v1beta1" },
    }),
  ]);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/rule-a", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
    protection(
      "provider1/rule-b",
      { ...VIRTUAL_MACHINES, version: "v1beta1" },
      ".spec.vpcRef.name",
    ),
  ]);
});

Deno.test("RuleRegistry.find() gives the field path in canonical text form with a leading dot", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", {
      dependencies: [dependency(VPCS, "spec.vpcRef.name")],
    }),
  ]);
  const [only, ...rest] = registry.find(VPCS);
  assert.deepEqual(rest, []);
  assert.equal(only?.fieldPathText, ".spec.vpcRef.name");
  assert.deepEqual(only?.fieldPath, parseFieldPath(".spec.vpcRef.name"));
  assert.equal(only && "namespacePath" in only, false);
});

Deno.test("RuleRegistry.find() keeps a namespace path, and tells protections apart by it", () => {
  const registry = new RuleRegistry();
  const crossNamespace = {
    ...dependency(VPCS, ".spec.vpcRef.name"),
    fieldRef: {
      path: ".spec.vpcRef.name",
      namespacePath: "spec.vpcRef.namespace",
    },
  };
  registry.replace([
    entry("provider1", {
      name: "own",
      dependencies: [dependency(VPCS, ".spec.vpcRef.name")],
    }),
    entry("provider1", { name: "cross", dependencies: [crossNamespace] }),
    entry("provider2", { name: "cross", dependencies: [crossNamespace] }),
  ]);
  const found = registry.find(VPCS);
  assert.equal(found.length, 2);
  // The same path with and without a namespace path are two protections;
  // the same protection from two rules is one.
  assert.deepEqual(
    found.map((p) =>
      p.namespacePath === undefined ? "(own)" : formatFieldPath(p.namespacePath)
    ).sort(),
    ["(own)", ".spec.vpcRef.namespace"].sort(),
  );
});

Deno.test("RuleRegistry.protectedTypes counts distinct protected types", () => {
  const rules = [
    entry("provider1", { name: "rule-a" }),
    entry("provider1", { name: "rule-b", dependent: LOAD_BALANCERS }),
    entry("provider2", {
      name: "rule-a",
      dependencies: [
        dependency(VPCS, ".spec.vpcRef.name"),
        dependency(SUBNETS, ".spec.subnetRef.name"),
      ],
    }),
  ];
  const registry = new RuleRegistry();
  registry.replace(rules);
  assert.equal(registry.protectedTypes, 2);

  const otherVersion = entry("provider3", {
    dependencies: [
      dependency({ ...VPCS, version: "v1beta1" }, ".spec.vpcRef.name"),
    ],
  });
  registry.replace([...rules, otherVersion]);
  assert.equal(registry.protectedTypes, 3);

  registry.replace([rules[0]!, rules[1]!, otherVersion]);
  assert.equal(registry.protectedTypes, 2);
});

Deno.test("RuleRegistry.find() returns protections in the same order on every call and whatever the input order", () => {
  const entries = [
    entry("provider2", { name: "rule-b" }),
    entry("provider1", {
      name: "rule-z",
      dependencies: [dependency(VPCS, ".spec.third.name")],
    }),
    entry("provider1", {
      name: "rule-a",
      dependent: LOAD_BALANCERS,
    }),
    entry("provider3", {
      name: "rule-a",
      dependencies: [dependency(VPCS, ".spec.fourth.name")],
    }),
  ];
  const forward = new RuleRegistry();
  forward.replace(entries);
  const backward = new RuleRegistry();
  backward.replace([...entries].reverse());
  // Rebuilt from other rules first, then these in yet another order.
  const rebuilt = new RuleRegistry();
  rebuilt.replace([entries[2]!]);
  rebuilt.replace([entries[2]!, entries[0]!, entries[3]!, entries[1]!]);

  const first = found(forward, VPCS);
  assert.equal(first.length, 4);
  assert.deepEqual(found(forward, VPCS), first);
  assert.deepEqual(found(forward, VPCS), first);
  assert.deepEqual(found(backward, VPCS), first);
  assert.deepEqual(found(rebuilt, VPCS), first);
  assert.deepEqual(
    first.map((p) => p.rule),
    [
      "provider1/rule-a",
      "provider1/rule-z",
      "provider2/rule-b",
      "provider3/rule-a",
    ],
  );
});

Deno.test("RuleRegistry keeps every one of 10 000 distinct protections of one type, in rule key order", () => {
  const count = 10_000;
  const entries = Array.from({ length: count }, (_, i) =>
    entry("provider1", {
      name: `rule-${i}`,
      dependencies: [dependency(VPCS, `.spec.ref${i}.name`)],
    }));
  const registry = new RuleRegistry();
  registry.replace(entries);
  const protections = registry.find(VPCS);
  assert.equal(protections.length, count);
  const keys = protections.map((p) => p.rule);
  assert.deepEqual(keys, [...keys].sort());
  assert.equal(new Set(protections.map((p) => p.fieldPathText)).size, count);

  // The same rules again, each twice: the duplicates add nothing.
  registry.replace([...entries, ...entries.map((e) => ({ ...e }))]);
  assert.deepEqual(registry.find(VPCS).map((p) => p.rule), keys);
});

// ---------------------------------------------------------------------------
// Random sequences of replace/find against a model.

/** What find() should return for a set of rules, computed without the registry. */
function modelFind(
  rules: readonly ClusterRule[],
  gvr: GroupVersionResource,
): Protection[] {
  // The later rule with a key counts.
  const byKey = new Map<string, ClusterRule>();
  for (const e of rules) byKey.set(ruleKey(e.cluster, e.rule.metadata.name), e);
  const out: Protection[] = [];
  for (const key of [...byKey.keys()].sort()) {
    const { rule } = byKey.get(key)!;
    for (const d of rule.spec.dependencies) {
      if (
        d.group !== gvr.group || d.version !== gvr.version ||
        d.resource !== gvr.resource
      ) continue;
      const text = d.fieldRef.path.startsWith(".")
        ? d.fieldRef.path
        : `.${d.fieldRef.path}`;
      const { group, version, resource, kind } = rule.spec.dependent;
      const provider = d.apiExportRef.path;
      const duplicate = out.some((p) =>
        p.provider === provider &&
        p.dependent.group === group && p.dependent.version === version &&
        p.dependent.resource === resource && p.fieldPathText === text
      );
      if (duplicate) continue;
      out.push({
        rule: key,
        provider,
        dependentExport: {
          workspace: byKey.get(key)!.cluster,
          name: rule.spec.dependent.apiExportName,
        },
        dependent: { group, version, resource, kind },
        fieldPath: parseFieldPath(text),
        fieldPathText: text,
        from: "Dependent",
        protectWhile: "Exists",
        ownerReferences: false,
      });
    }
  }
  return out;
}

/** A small deterministic PRNG (mulberry32), so failures reproduce. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("RuleRegistry.find() answers as a sequential model after random sequences of replace()", () => {
  const clusters = ["provider1", "provider2"];
  const names = ["rule-a", "rule-b", "rule-c"];
  const paths = [".spec.vpcRef.name", "spec.network.vpc", ".spec.peer.name"];
  const dependents = [VIRTUAL_MACHINES, LOAD_BALANCERS];
  const targets = [VPCS, SUBNETS];
  const random = prng(1);
  const pick = <T>(list: readonly T[]): T =>
    list[Math.floor(random() * list.length)]!;
  const randomEntry = (): ClusterRule =>
    entry(pick(clusters), {
      name: pick(names),
      dependent: pick(dependents),
      dependencies: Array.from(
        { length: 1 + Math.floor(random() * 2) },
        () => dependency(pick(targets), pick(paths)),
      ),
    });

  const registry = new RuleRegistry();
  // Rule objects live on from one replace() to the next, as the rule
  // watcher hands them on.
  let current: ClusterRule[] = [];
  let deduplicated = 0;
  for (let step = 0; step < 300; step++) {
    const roll = random();
    if (roll < 0.4) {
      current = [...current, randomEntry()];
    } else if (roll < 0.7 && current.length > 0) {
      const drop = Math.floor(random() * current.length);
      current = current.filter((_, i) => i !== drop);
    } else {
      current = Array.from(
        { length: Math.floor(random() * 6) },
        randomEntry,
      );
    }
    registry.replace(current);
    for (const target of targets) {
      const want = modelFind(current, target);
      assert.deepEqual(found(registry, target), want, `step ${step}`);
      const given = current.flatMap((e) =>
        e.rule.spec.dependencies.filter((d) =>
          d.resource === target.resource
        )
      ).length;
      if (want.length < given) deduplicated++;
    }
    const expectedTypes = targets.filter((t) =>
      modelFind(current, t).length > 0
    );
    assert.equal(registry.protectedTypes, expectedTypes.length);
  }
  assert.equal(registry.loaded, true);
  assert.ok(deduplicated > 0, "the random sequence exercised deduplication");
});

Deno.test("RuleRegistry.find() keeps the same protection from two providers apart, each with its provider", () => {
  const registry = new RuleRegistry();
  const second = {
    ...dependency(VPCS, ".spec.vpcRef.name"),
    apiExportRef: { path: "root:providers:network2", name: VPCS.group },
  };
  registry.replace([
    entry("provider1", { name: "first" }),
    entry("provider1", { name: "second", dependencies: [second] }),
  ]);
  assert.deepEqual(
    registry.find(VPCS).map((p) => p.provider).sort(),
    ["root:providers:network", "root:providers:network2"],
  );
});
