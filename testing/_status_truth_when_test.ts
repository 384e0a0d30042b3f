import assert from "node:assert/strict";
import { assertWhenHolds, satisfyWhen } from "./_status_truth_when.ts";

const base = {
  apiVersion: "owners.example.com/v1alpha1",
  kind: "Network",
  metadata: { name: "truth-1-owner", namespace: "status-truth" },
};

function rule(when: string | undefined) {
  return {
    shown: "DependencyRule subnet-guard in root:providers:owners",
    key: "root:providers:owners/subnet-guard",
    when,
  };
}

Deno.test("satisfyWhen() leaves the object as it is without a when", () => {
  assert.deepEqual(satisfyWhen(base, rule(undefined), undefined), base);
});

Deno.test("satisfyWhen() sets the fields a when compares to literals", () => {
  assert.deepEqual(
    satisfyWhen(
      base,
      rule("object.spec.deletionProtection == true"),
      undefined,
    ),
    { ...base, spec: { deletionProtection: true } },
  );
  const owner = satisfyWhen(
    base,
    rule(
      "has(object.spec.backup) && object.spec.backup.enabled && 'gold' == object.spec.tier && !object.spec.paused && object.spec.replicas == 3",
    ),
    undefined,
  );
  assert.deepEqual(owner.spec, {
    backup: { enabled: true },
    tier: "gold",
    paused: false,
    replicas: 3,
  });
});

Deno.test("satisfyWhen() takes the object as it is when the when is true for it", () => {
  assert.deepEqual(
    satisfyWhen(base, rule("object.metadata.name.startsWith('truth-')"), {}),
    base,
  );
});

Deno.test("satisfyWhen() merges the given fields under the check's own", () => {
  const owner = satisfyWhen(
    base,
    rule("object.spec.size > 2"),
    { spec: { size: 5 }, metadata: { name: "ignored", labels: { a: "b" } } },
  );
  assert.deepEqual(owner, {
    ...base,
    metadata: { ...base.metadata, labels: { a: "b" } },
    spec: { size: 5 },
  });
});

Deno.test("satisfyWhen() fails naming the rule and the option when it cannot build one", () => {
  assert.throws(
    () => satisfyWhen(base, rule("object.spec.size > 2"), undefined),
    (error: Error) => {
      assert.match(
        error.message,
        /^DependencyRule subnet-guard in root:providers:owners says Ready=True Enforced with spec\.when object\.spec\.size > 2, and the check cannot build a Network for which it is true \(tried .*cannot be evaluated.*\): give the fields of one as whenFields\["root:providers:owners\/subnet-guard"\]/,
      );
      return true;
    },
  );
  assert.throws(
    () =>
      satisfyWhen(base, rule("object.spec.size > 2"), { spec: { size: 1 } }),
    /tried \{"metadata":\{"name":"truth-1-owner","namespace":"status-truth"\},"spec":\{"size":1\}\}: false\)/,
  );
});

Deno.test("assertWhenHolds() fails when kcp did not keep what made the when true", () => {
  assertWhenHolds(
    { ...base, spec: { deletionProtection: true } },
    rule("object.spec.deletionProtection == true"),
  );
  assert.throws(
    () =>
      assertWhenHolds(
        { ...base, metadata: { ...base.metadata, uid: "x" }, spec: {} },
        rule("object.spec.deletionProtection == true"),
      ),
    /no longer satisfies it as kcp stored it \(\{"metadata":\{"name":"truth-1-owner","namespace":"status-truth"\},"spec":\{\}\}: cannot be evaluated/,
  );
});
