import assert from "node:assert/strict";
import {
  type ClusterRule,
  type Dependency,
  type DependencyRule,
  type GroupVersionResource,
  gvrKey,
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
} from "../../testing/mod.ts";

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
    dependent: { ...dependent },
    fieldPath: fieldPathText.slice(1).split("."),
    fieldPathText,
  };
}

/** find() as plain data, comparable with deepEqual. */
function found(
  registry: RuleRegistry,
  gvr: GroupVersionResource,
): Protection[] {
  return registry.find(gvr).map((p) => ({
    rule: p.rule,
    dependent: { ...p.dependent },
    fieldPath: [...p.fieldPath],
    fieldPathText: p.fieldPathText,
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
  assert.equal(registry.size, 0);
  assert.equal(registry.protectedTypes, 0);
  assert.deepEqual(found(registry, VPCS), []);
});

Deno.test("RuleRegistry.set() does not mark the registry loaded", () => {
  const registry = new RuleRegistry();
  registry.set(entry("consumer1"));
  assert.equal(registry.loaded, false);
  assert.equal(registry.size, 1);
});

Deno.test("RuleRegistry.replace() marks the registry loaded, even with no rules", () => {
  const registry = new RuleRegistry();
  registry.replace([]);
  assert.equal(registry.loaded, true);
  assert.equal(registry.size, 0);
  assert.deepEqual(found(registry, VPCS), []);
});

Deno.test("RuleRegistry.replace() loads the rules and indexes them by protected type", () => {
  const registry = new RuleRegistry();
  registry.replace([entry("provider1")]);
  assert.equal(registry.loaded, true);
  assert.equal(registry.size, 1);
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
  assert.equal(registry.size, 1);
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
  assert.equal(registry.size, 1);
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
  assert.equal(registry.size, 2);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
    protection("provider2/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.network.vpc"),
  ]);

  assert.equal(registry.delete("provider2", "vm-needs-vpc"), true);
  assert.equal(registry.size, 1);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
});

Deno.test("RuleRegistry.set() adds a rule and returns undefined when there was none", () => {
  const registry = new RuleRegistry();
  registry.replace([]);
  assert.equal(registry.set(entry("provider1")), undefined);
  assert.equal(registry.size, 1);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/vm-needs-vpc", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
});

Deno.test("RuleRegistry.set() returns the entry it replaced and an in-place edit changes find()", () => {
  const registry = new RuleRegistry();
  const before = entry("provider1");
  registry.replace([before]);
  assert.equal(registry.find(VPCS)[0]?.fieldPathText, ".spec.vpcRef.name");

  const after = entry("provider1", {
    dependencies: [dependency(VPCS, ".spec.network.vpcName")],
  });
  const replaced = registry.set(after);
  assert.equal(replaced, before);
  assert.equal(registry.size, 1);
  assert.deepEqual(found(registry, VPCS), [
    protection(
      "provider1/vm-needs-vpc",
      VIRTUAL_MACHINES,
      ".spec.network.vpcName",
    ),
  ]);
});

Deno.test("RuleRegistry.set() of an edit that drops a protected type removes it from find()", () => {
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
  registry.set(entry("provider1"));
  assert.equal(registry.protectedTypes, 1);
  assert.deepEqual(found(registry, SUBNETS), []);
  assert.equal(registry.find(VPCS).length, 1);
});

Deno.test("RuleRegistry.delete() removes a rule and returns whether it existed", () => {
  const registry = new RuleRegistry();
  registry.replace([entry("provider1")]);
  assert.equal(registry.delete("provider1", "no-such-rule"), false);
  assert.equal(registry.delete("provider2", "vm-needs-vpc"), false);
  assert.equal(registry.size, 1);

  assert.equal(registry.delete("provider1", "vm-needs-vpc"), true);
  assert.equal(registry.size, 0);
  assert.equal(registry.protectedTypes, 0);
  assert.deepEqual(found(registry, VPCS), []);
  assert.equal(registry.delete("provider1", "vm-needs-vpc"), false);
  // Deleting every rule does not make the registry unloaded again.
  assert.equal(registry.loaded, true);
});

Deno.test("RuleRegistry.find() deduplicates identical protections from two rules", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", { name: "rule-a" }),
    // Same dependent and field path, written without the leading dot.
    entry("provider1", {
      name: "rule-b",
      dependencies: [dependency(VPCS, "spec.vpcRef.name")],
    }),
    entry("provider2", { name: "rule-a" }),
  ]);
  assert.equal(registry.size, 3);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/rule-a", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);

  // The protection survives as long as one of the rules gives it.
  assert.equal(registry.delete("provider1", "rule-a"), true);
  assert.deepEqual(found(registry, VPCS), [
    protection("provider1/rule-b", VIRTUAL_MACHINES, ".spec.vpcRef.name"),
  ]);
  assert.equal(registry.delete("provider1", "rule-b"), true);
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
  assert.deepEqual(only?.fieldPath, ["spec", "vpcRef", "name"]);
});

Deno.test("RuleRegistry.size and protectedTypes count rules and distinct protected types", () => {
  const registry = new RuleRegistry();
  registry.replace([
    entry("provider1", { name: "rule-a" }),
    entry("provider1", { name: "rule-b", dependent: LOAD_BALANCERS }),
    entry("provider2", {
      name: "rule-a",
      dependencies: [
        dependency(VPCS, ".spec.vpcRef.name"),
        dependency(SUBNETS, ".spec.subnetRef.name"),
      ],
    }),
  ]);
  assert.equal(registry.size, 3);
  assert.equal(registry.protectedTypes, 2);

  registry.set(entry("provider3", {
    dependencies: [
      dependency({ ...VPCS, version: "v1beta1" }, ".spec.vpcRef.name"),
    ],
  }));
  assert.equal(registry.size, 4);
  assert.equal(registry.protectedTypes, 3);

  registry.delete("provider2", "rule-a");
  assert.equal(registry.size, 3);
  assert.equal(registry.protectedTypes, 2);
});

Deno.test("RuleRegistry.find() returns protections in the same order on every call and whatever the insertion order", () => {
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
  const oneByOne = new RuleRegistry();
  oneByOne.replace([]);
  for (const e of [entries[2]!, entries[0]!, entries[3]!, entries[1]!]) {
    oneByOne.set(e);
  }

  const first = found(forward, VPCS);
  assert.equal(first.length, 4);
  assert.deepEqual(found(forward, VPCS), first);
  assert.deepEqual(found(forward, VPCS), first);
  assert.deepEqual(found(backward, VPCS), first);
  assert.deepEqual(found(oneByOne, VPCS), first);
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

// ---------------------------------------------------------------------------
// Interleaved set/delete/replace/find, the reference's "register/replace/
// unregister under concurrency".

/** What find() should return for a set of rules, computed without the registry. */
function modelFind(
  rules: ReadonlyMap<string, ClusterRule>,
  gvr: GroupVersionResource,
): Protection[] {
  const out: Protection[] = [];
  for (const key of [...rules.keys()].sort()) {
    const { rule } = rules.get(key)!;
    for (const d of rule.spec.dependencies) {
      if (
        d.group !== gvr.group || d.version !== gvr.version ||
        d.resource !== gvr.resource
      ) continue;
      const text = d.fieldRef.path.startsWith(".")
        ? d.fieldRef.path
        : `.${d.fieldRef.path}`;
      const { group, version, resource, kind } = rule.spec.dependent;
      const duplicate = out.some((p) =>
        p.dependent.group === group && p.dependent.version === version &&
        p.dependent.resource === resource && p.fieldPathText === text
      );
      if (duplicate) continue;
      out.push({
        rule: key,
        dependent: { group, version, resource, kind },
        fieldPath: text.slice(1).split("."),
        fieldPathText: text,
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

/** Yields to other tasks: a microtask or, now and then, a macrotask. */
function pause(random: () => number): Promise<void> {
  return random() < 0.2
    ? new Promise((resolve) => setTimeout(resolve, 0))
    : Promise.resolve();
}

Deno.test("RuleRegistry ends in the state a sequential model predicts after interleaved set/delete/replace/find", async () => {
  const clusters = ["provider1", "provider2"];
  const names = ["rule-a", "rule-b", "rule-c"];
  const paths = [".spec.vpcRef.name", "spec.network.vpc", ".spec.peer.name"];
  const dependents = [VIRTUAL_MACHINES, LOAD_BALANCERS];
  const targets = [VPCS, SUBNETS];
  const randomEntry = (random: () => number): ClusterRule => {
    const pick = <T>(list: readonly T[]): T =>
      list[Math.floor(random() * list.length)]!;
    return entry(pick(clusters), {
      name: pick(names),
      dependent: pick(dependents),
      dependencies: [dependency(pick(targets), pick(paths))],
    });
  };

  const registry = new RuleRegistry();
  const model = new Map<string, ClusterRule>();
  registry.replace([]);
  let operations = 0;
  let replaces = 0;

  // Every operation is applied to the registry and the model in the same
  // synchronous step, so the model sees them in the order they really ran.
  const task = async (seed: number) => {
    const random = prng(seed);
    for (let step = 0; step < 60; step++) {
      await pause(random);
      const roll = random();
      operations++;
      if (roll < 0.45) {
        const e = randomEntry(random);
        const key = ruleKey(e.cluster, e.rule.metadata.name);
        const expected = model.get(key);
        model.set(key, e);
        assert.equal(registry.set(e), expected, `set(${key})`);
      } else if (roll < 0.75) {
        const cluster = clusters[Math.floor(random() * clusters.length)]!;
        const name = names[Math.floor(random() * names.length)]!;
        const expected = model.delete(ruleKey(cluster, name));
        assert.equal(
          registry.delete(cluster, name),
          expected,
          `delete(${cluster}, ${name})`,
        );
      } else if (roll < 0.8) {
        replaces++;
        const fresh = [randomEntry(random), randomEntry(random)];
        model.clear();
        for (const e of fresh) {
          model.set(ruleKey(e.cluster, e.rule.metadata.name), e);
        }
        registry.replace(fresh);
      } else {
        const target = targets[Math.floor(random() * targets.length)]!;
        assert.deepEqual(found(registry, target), modelFind(model, target));
      }
      assert.equal(registry.size, model.size);
    }
  };
  await Promise.all(Array.from({ length: 16 }, (_, i) => task(i + 1)));

  assert.equal(operations, 16 * 60);
  assert.ok(replaces > 0, "the random sequence exercised replace()");
  assert.equal(registry.loaded, true);
  assert.equal(registry.size, model.size);
  for (const target of targets) {
    assert.deepEqual(found(registry, target), modelFind(model, target));
  }
  const expectedTypes = targets.filter((t) => modelFind(model, t).length > 0);
  assert.equal(registry.protectedTypes, expectedTypes.length);
});

Deno.test("RuleRegistry keeps every task's own rules after concurrent set/edit/delete of disjoint rules", async () => {
  const registry = new RuleRegistry();
  registry.replace([]);
  const tasks = 24;
  const task = async (i: number) => {
    const cluster = `provider${i % 3}`;
    const keep = `keep-${i}`;
    const drop = `drop-${i}`;
    const ownPath = `.spec.task${i}.name`;
    await Promise.resolve();
    assert.equal(registry.set(entry(cluster, { name: keep })), undefined);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(registry.set(entry(cluster, { name: drop })), undefined);
    await Promise.resolve();
    // The task's own rules (deduplicated with other tasks' identical ones)
    // are visible to find() while others write.
    assert.ok(
      registry.find(VPCS).some((p) => p.fieldPathText === ".spec.vpcRef.name"),
      `task ${i} sees a .spec.vpcRef.name protection`,
    );
    const edited = entry(cluster, {
      name: keep,
      dependencies: [dependency(VPCS, ownPath)],
    });
    assert.notEqual(registry.set(edited), undefined);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.ok(
      registry.find(VPCS).some((p) =>
        p.rule === ruleKey(cluster, keep) && p.fieldPathText === ownPath
      ),
      `task ${i} sees its edit`,
    );
    assert.equal(registry.delete(cluster, drop), true);
    await Promise.resolve();
    assert.equal(registry.delete(cluster, drop), false);
  };
  await Promise.all(Array.from({ length: tasks }, (_, i) => task(i)));

  assert.equal(registry.size, tasks);
  const protections = found(registry, VPCS);
  assert.deepEqual(
    protections.map((p) => p.fieldPathText).sort(),
    Array.from({ length: tasks }, (_, i) => `.spec.task${i}.name`).sort(),
  );
  for (const p of protections) {
    const i = Number(p.fieldPathText.match(/task(\d+)/)![1]);
    assert.equal(p.rule, `provider${i % 3}/keep-${i}`);
  }
});
