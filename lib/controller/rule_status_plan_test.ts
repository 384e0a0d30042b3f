import assert from "node:assert/strict";
import {
  INDEXED_CONDITION,
  parseDependencyRule,
  READY_CONDITION,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import { exportKey } from "../exports/mod.ts";
import { planReconcile } from "./reconcile_plan.ts";
import { accessKey, type AccessRef } from "./webhook_access.ts";
import type { EndpointObject } from "../kcp/mod.ts";
import { compileWhen } from "../when/mod.ts";
import {
  dependency,
  LOAD_BALANCERS,
  SUBNETS,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  BAD_WHEN,
  binding,
  COMPUTE_WITH_SCHEMA,
  conditionOf,
  CONSUMER,
  EARLIER,
  ENDPOINT,
  ENFORCED_VPCS,
  exportsRead,
  GOOD_WHEN,
  input,
  INSTALLED_NETWORK,
  NETWORK,
  NETWORK_EXPORT,
  NETWORK_PATH,
  networkInput,
  NOW,
  planWithSchema,
  resolved,
  rule,
  ruleObject,
  statusOf,
  summary,
  VM_RULE,
  vmRule,
  vmRuleAt,
  VPCS_DEPENDENT,
  withSpec,
} from "../../testing/plan_fixtures.ts";

Deno.test("planReconcile() writes no status that the rule already shows, whatever the transition times", () => {
  const first = planReconcile(networkInput([vmRule()], [VPCS]));
  const shown = structuredClone(first.statuses[0]!.status);
  for (const c of shown.conditions ?? []) c.lastTransitionTime = EARLIER;
  const plan = planReconcile(networkInput([vmRule(shown)], [VPCS]));
  assert.deepEqual(plan.statuses, []);
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.ready, new Map([["True/Enforced", 1]]));
});

Deno.test("planReconcile() keeps a condition's transition time while its status stays, even when the reason changes", () => {
  const shown = {
    observedGeneration: 3,
    conditions: [
      {
        type: WEBHOOKS_INSTALLED_CONDITION,
        status: "False",
        reason: "PathNotResolved",
        message: "workspace root:providers:network not found",
        observedGeneration: 3,
        lastTransitionTime: EARLIER,
      },
      {
        type: READY_CONDITION,
        status: "True",
        reason: "Enforced",
        message: ENFORCED_VPCS,
        observedGeneration: 3,
        lastTransitionTime: EARLIER,
      },
    ],
  };
  // Resolved, but the provider has no binding: ProviderNotBound.
  const plan = planReconcile(input({
    rules: [vmRule(shown)],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
  }));
  const action = statusOf(plan, VM_RULE);
  const installed = conditionOf(action, WEBHOOKS_INSTALLED_CONDITION);
  assert.equal(installed.reason, "ProviderNotBound");
  assert.equal(installed.lastTransitionTime, EARLIER);
  const ready = conditionOf(action, READY_CONDITION);
  assert.deepEqual([ready.status, ready.reason], ["False", "ProviderNotBound"]);
  assert.equal(ready.lastTransitionTime, NOW);
});

Deno.test("planReconcile() writes the status again for a new generation, keeping transition times", () => {
  const first = planReconcile(networkInput([vmRule()], [VPCS]));
  const shown = structuredClone(first.statuses[0]!.status);
  for (const c of shown.conditions ?? []) c.lastTransitionTime = EARLIER;
  const object = ruleObject(
    VM_RULE,
    VIRTUAL_MACHINES,
    [dependency(VPCS, ".spec.vpcRef.name")],
    { generation: 4, status: shown },
  );
  const plan = planReconcile(
    networkInput([{ endpoint: ENDPOINT, object }], [VPCS]),
  );
  const action = statusOf(plan, VM_RULE);
  assert.equal(action.status.observedGeneration, 4);
  for (const c of action.status.conditions ?? []) {
    assert.equal(c.observedGeneration, 4);
    assert.equal(c.lastTransitionTime, EARLIER);
  }
});

Deno.test("planReconcile() reports the last write error of a cluster with a pending write", () => {
  const error = "admission webhook denied the request: forbidden";
  const plan = planReconcile({
    ...networkInput([vmRule()], []),
    installErrors: new Map([[NETWORK, error]]),
  });
  assert.equal(plan.configurations.length, 1);
  assert.equal(plan.configurations[0]!.action, "create");
  const message =
    `cannot write the webhook configuration in ${NETWORK_PATH}: ${error}`;
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["False", "InstallFailed", message],
    ["False", "InstallFailed", message],
  ]);
});

Deno.test("planReconcile() ignores an old write error of a cluster whose configuration is up to date", () => {
  const plan = planReconcile({
    ...networkInput([vmRule()], [VPCS]),
    installErrors: new Map([[NETWORK, "connection reset"]]),
  });
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["True", "Installed", INSTALLED_NETWORK],
    ["True", "Enforced", ENFORCED_VPCS],
  ]);
});

Deno.test("planReconcile() reports an invalid rule with the parse error and installs nothing for it", () => {
  const bad = vmRule();
  const spec = bad.object.spec as { dependencies: { version: string }[] };
  spec.dependencies[0]!.version = "v0";
  const parsed = parseDependencyRule(bad.object);
  assert.ok(!parsed.ok);
  const plan = planReconcile(networkInput([bad], []));
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.paths, []);
  assert.equal(plan.desiredClusters, 0);
  const action = statusOf(plan, VM_RULE);
  assert.equal(action.status.observedGeneration, 3);
  assert.deepEqual(summary(action), [
    ["False", "InvalidSpec", "nothing is installed for an invalid rule"],
    ["False", "InvalidSpec", parsed.error],
  ]);
  assert.deepEqual(plan.ready, new Map([["False/InvalidSpec", 1]]));
});

Deno.test("planReconcile() counts a rule whose configuration is being updated by the Ready condition it shows", () => {
  const enforced =
    planReconcile(networkInput([vmRule()], [VPCS])).statuses[0]!.status;
  const plan = planReconcile(networkInput([
    vmRule(enforced),
    rule("loadbalancers-need-subnets", LOAD_BALANCERS, [
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
  ], [VPCS]));
  assert.deepEqual(plan.configurations.map((c) => c.action), ["update"]);
  assert.deepEqual(plan.statuses, []);
  assert.deepEqual(plan.ready, new Map([["True/Enforced", 1]]));
});

Deno.test("planReconcile() reports a cycle before a path, and a failed installation before both", () => {
  const rules = [
    rule("virtualmachines-need-vpcs", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpc.name"),
    ]),
    rule("vpcs-need-virtualmachines", VPCS_DEPENDENT, [
      dependency(VIRTUAL_MACHINES, ".spec.vmRef.name"),
    ]),
  ];
  const types = [VPCS, VIRTUAL_MACHINES].map((
    { group, version, resource },
  ) => ({ group, version, resource }));
  const plan = planReconcile({
    ...networkInput(rules, types),
    exports: new Map([
      [
        exportKey({ workspace: NETWORK_PATH, name: VPCS.group }),
        { answer: NETWORK_EXPORT },
      ],
      [
        exportKey({ workspace: NETWORK_PATH, name: VIRTUAL_MACHINES.group }),
        { answer: COMPUTE_WITH_SCHEMA },
      ],
      [
        exportKey({ workspace: CONSUMER, name: VIRTUAL_MACHINES.group }),
        { answer: COMPUTE_WITH_SCHEMA },
      ],
      [
        exportKey({ workspace: CONSUMER, name: VPCS.group }),
        { answer: NETWORK_EXPORT },
      ],
    ]),
  });
  const ready = conditionOf(
    statusOf(plan, "virtualmachines-need-vpcs"),
    READY_CONDITION,
  );
  assert.equal(ready.reason, "DependencyCycle");
  assert.match(ready.message, /^dependency cycle: /);
  assert.match(
    ready.message,
    /; spec\.dependencies\[0\]\.fieldRef\.path: \.spec\.vpc: no such field; did you mean \.spec\.vpcRef\.name\?$/,
  );

  const unresolved = planReconcile({
    ...input({
      rules: [vmRuleAt({ path: ".spec.vpc.name" })],
      bindings: [binding(NETWORK)],
      configurations: [],
      resolutions: new Map([[NETWORK_PATH, {
        reason: "NotFound",
        message: "workspace root:providers:network does not exist",
        definitive: true,
      }]]),
    }),
    exports: exportsRead({ answer: NETWORK_EXPORT }, {
      answer: COMPUTE_WITH_SCHEMA,
    }),
  });
  const failed = conditionOf(statusOf(unresolved, VM_RULE), READY_CONDITION);
  assert.deepEqual([failed.status, failed.reason, failed.message], [
    "False",
    "PathNotResolved",
    "workspace root:providers:network does not exist; spec.dependencies[0].fieldRef.path: .spec.vpc: no such field; did you mean .spec.vpcRef.name?",
  ]);
});

Deno.test("planReconcile() says WebhookCannotRead while kcp says the webhook may not read what a rule names, and asks about each read", () => {
  const base = networkInput([vmRule()], [VPCS]);
  const asked = planReconcile(base);
  assert.deepEqual(
    asked.webhookAccess.map((r) => `${r.verb} ${r.resource}`),
    ["list virtualmachines", "get virtualmachines", "get vpcs"],
  );
  const readings = new Map(
    asked.webhookAccess.map((ref) => [
      accessKey(ref),
      { answer: !(ref.verb === "list" && ref.resource === "virtualmachines") },
    ]),
  );
  const plan = planReconcile({
    ...base,
    webhookAccess: { readings, user: "dependency-webhook" },
  });
  const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, "WebhookCannotRead");
  assert.match(
    ready.message,
    /dependency-webhook may not list virtualmachines\.compute\.example\.com.*controller grants/,
  );
  // The configuration stays: the webhook denies (503) rather than allows.
  assert.deepEqual(plan.configurations, []);
  // Granted, it is Enforced; not asked yet, too (nothing known against it);
  // not answered, Enforced with a note.
  const granted = new Map(
    asked.webhookAccess.map((ref) => [accessKey(ref), { answer: true }]),
  );
  assert.equal(
    conditionOf(
      statusOf(
        planReconcile({
          ...base,
          webhookAccess: { readings: granted, user: "dependency-webhook" },
        }),
        VM_RULE,
      ),
      READY_CONDITION,
    ).reason,
    "Enforced",
  );
  const failed = new Map(
    asked.webhookAccess.map((ref) => [accessKey(ref), { error: "403" }]),
  );
  const noted = conditionOf(
    statusOf(
      planReconcile({
        ...base,
        webhookAccess: { readings: failed, user: "dependency-webhook" },
      }),
      VM_RULE,
    ),
    READY_CONDITION,
  );
  assert.equal(noted.reason, "Enforced");
  assert.match(
    noted.message,
    /not checked whether the webhook may read: whether dependency-webhook may list virtualmachines/,
  );
});

Deno.test("planReconcile() leaves an installed rule's status out while kcp is asked whether the webhook may read its types, and writes it once, when answered", () => {
  const base = networkInput([vmRule()], [VPCS]);
  const refs = planReconcile(base).webhookAccess;
  const answers = (count: number) =>
    new Map(
      refs.slice(0, count).map((ref) => [accessKey(ref), {
        answer: true,
      }]),
    );
  const plan = (count: number) =>
    planReconcile({
      ...base,
      webhookAccess: { readings: answers(count), user: "dependency-webhook" },
    });
  // A cold pass: nothing answered yet, so nothing written.
  const cold = plan(0);
  assert.deepEqual(cold.statuses, []);
  assert.deepEqual(cold.ready, new Map());
  assert.deepEqual(cold.configurations, []);
  // One read still being asked: still nothing.
  assert.deepEqual(plan(refs.length - 1).statuses, []);
  // Every read answered: the one write, Enforced with no note.
  const answered = plan(refs.length);
  assert.equal(answered.statuses.length, 1);
  const ready = conditionOf(statusOf(answered, VM_RULE), READY_CONDITION);
  assert.deepEqual([ready.status, ready.reason, ready.message], [
    "True",
    "Enforced",
    ENFORCED_VPCS,
  ]);
  // Shown, it is not written again.
  const shown = planReconcile({
    ...base,
    rules: [vmRule(statusOf(answered, VM_RULE).status)],
    webhookAccess: { readings: answers(refs.length), user: "u" },
  });
  assert.deepEqual(shown.statuses, []);
  assert.deepEqual([...shown.ready], [["True/Enforced", 1]]);
});

Deno.test("planReconcile() does not wait for the webhook's reads to write a rule whose installation failed", () => {
  const plan = planReconcile({
    ...input({
      rules: [vmRule()],
      resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
    }),
    webhookAccess: { readings: new Map(), user: "dependency-webhook" },
  });
  const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, "ProviderNotBound");
});

// ---------------------------------------------------------------------------
// A spec.when that does not compile

/** The compiler's message for {@linkcode BAD_WHEN}. */
function badWhenError(): string {
  const compiled = compileWhen(BAD_WHEN);
  assert.ok(!compiled.ok);
  return compiled.error;
}

/** What the Ready message says of {@linkcode BAD_WHEN}. */
function invalidCondition(): string {
  return `spec.when: ${badWhenError()}; until it compiles, the webhook counts it as true for every VirtualMachine`;
}

Deno.test("planReconcile() says InvalidCondition for a spec.when that does not compile, and keeps its types in the configuration", () => {
  const bad = withSpec(vmRule(), { when: BAD_WHEN });
  const plan = planReconcile(networkInput([bad], [VPCS]));
  // The webhook treats it as always true (fail closed): nothing to remove.
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["True", "Installed", INSTALLED_NETWORK],
    ["False", "InvalidCondition", invalidCondition()],
  ]);
  assert.deepEqual(plan.ready, new Map([["False/InvalidCondition", 1]]));
  // Not installed yet: its types are installed all the same.
  const fresh = planReconcile(networkInput([bad], []));
  assert.deepEqual(fresh.configurations.map((c) => c.action), ["create"]);
  assert.equal(
    JSON.stringify(fresh.configurations[0]!.object).includes('"vpcs"'),
    true,
  );
  // Shown, it is not written again.
  const shown = planReconcile(
    networkInput([
      withSpec(vmRule(statusOf(plan, VM_RULE).status), { when: BAD_WHEN }),
    ], [VPCS]),
  );
  assert.deepEqual(shown.statuses, []);
  assert.deepEqual(shown.ready, new Map([["False/InvalidCondition", 1]]));
});

Deno.test("planReconcile() enforces a rule whose spec.when compiles, and says which dependents count", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      "when",
      { when: GOOD_WHEN },
      " (counting only one for which spec.when is true)",
    ],
    [
      "protectWhile: Active",
      { protectWhile: "Active" },
      " (counting only one that is not being deleted)",
    ],
    [
      "both",
      { when: GOOD_WHEN, protectWhile: "Active" },
      " (counting only one for which spec.when is true and that is not being deleted)",
    ],
    ["protectWhile: Exists", { protectWhile: "Exists" }, ""],
  ];
  for (const [what, fields, qualified] of cases) {
    const plan = planReconcile(
      networkInput([withSpec(vmRule(), fields)], [VPCS]),
    );
    assert.deepEqual(summary(statusOf(plan, VM_RULE))[1], [
      "True",
      "Enforced",
      `${ENFORCED_VPCS}${qualified}`,
    ], what);
  }
});

Deno.test("planReconcile() ranks InvalidCondition after an invalid spec, a failed installation and a cycle, before paths and reads, and names every problem", () => {
  const bad = (source = vmRule()) => withSpec(source, { when: BAD_WHEN });
  const cases: [
    string,
    () => ReturnType<typeof planReconcile>,
    string,
    RegExp,
  ][] = [
    [
      "an invalid spec (an empty when)",
      () =>
        planReconcile(networkInput([withSpec(vmRule(), { when: "" })], [VPCS])),
      "InvalidSpec",
      /^spec\.when: must not be empty when set$/,
    ],
    [
      "an invalid spec and a bad when",
      () => {
        const source = bad();
        const spec = source.object.spec as {
          dependencies: { version: string }[];
        };
        spec.dependencies[0]!.version = "v0";
        return planReconcile(networkInput([source], [VPCS]));
      },
      "InvalidSpec",
      /^spec\.dependencies\[0\]\.version: must look like/,
    ],
    [
      "a provider not bound",
      () =>
        planReconcile(input({
          rules: [bad()],
          resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
        })),
      "ProviderNotBound",
      /; spec\.when: syntax error/,
    ],
    [
      "a cycle",
      () =>
        planReconcile(networkInput([
          bad(),
          rule("vpcs-need-virtualmachines", VPCS_DEPENDENT, [
            dependency(VIRTUAL_MACHINES, ".spec.vmRef.name"),
          ]),
        ], [VPCS, VIRTUAL_MACHINES])),
      "DependencyCycle",
      /^dependency cycle: .*; spec\.when: syntax error/,
    ],
    [
      "a path not in the schema",
      () => planWithSchema([bad(vmRuleAt({ path: ".spec.vpc.name" }))]),
      "InvalidCondition",
      /^spec\.when: syntax error.*; spec\.dependencies\[0\]\.fieldRef\.path: \.spec\.vpc: no such field/,
    ],
    [
      "a read the webhook may not make",
      () => {
        const base = networkInput([bad()], [VPCS]);
        const readings = new Map(
          planReconcile(base).webhookAccess.map((ref) => [
            accessKey(ref),
            { answer: false },
          ]),
        );
        return planReconcile({
          ...base,
          webhookAccess: { readings, user: "dependency-webhook" },
        });
      },
      "InvalidCondition",
      /^spec\.when: syntax error.*; the webhook's identity dependency-webhook may not list/,
    ],
  ];
  for (const [what, plan, reason, message] of cases) {
    const ready = conditionOf(statusOf(plan(), VM_RULE), READY_CONDITION);
    assert.deepEqual([ready.status, ready.reason], ["False", reason], what);
    assert.match(ready.message, message, what);
  }
});

// ---------------------------------------------------------------------------
// The dependents index (--dependents-index)

/** Every read `plan` asks about answered `allowed(ref)`. */
function answered(
  refs: readonly AccessRef[],
  allowed: (ref: AccessRef) => boolean | Error,
): Map<string, { answer?: boolean; error?: string }> {
  return new Map(refs.map((ref) => {
    const answer = allowed(ref);
    return [
      accessKey(ref),
      answer instanceof Error ? { error: answer.message } : { answer },
    ];
  }));
}

Deno.test("planReconcile() without dependentsIndex asks nothing of the index and writes no Indexed condition", () => {
  const base = networkInput([vmRule()], [VPCS]);
  const refs = planReconcile(base).webhookAccess;
  assert.ok(refs.every((r) => r.verb !== "watch"));
  const plan = planReconcile({
    ...base,
    webhookAccess: {
      readings: answered(refs, () => true),
      user: "dependency-webhook",
    },
  });
  assert.deepEqual(
    statusOf(plan, VM_RULE).status.conditions?.map((c) => c.type),
    [WEBHOOKS_INSTALLED_CONDITION, READY_CONDITION],
  );
});

Deno.test("planReconcile() with dependentsIndex says Indexed when the webhook may feed the index, and WebhookCannotWatch, naming the grant, while Ready stays Enforced when it may not", () => {
  const base = { ...networkInput([vmRule()], [VPCS]), dependentsIndex: true };
  const refs = planReconcile(base).webhookAccess;
  assert.deepEqual(
    refs.map((r) =>
      `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ""}${
        r.name ? ` ${r.name}` : ""
      }`
    ),
    [
      "list virtualmachines",
      "get virtualmachines",
      "get vpcs",
      "watch virtualmachines",
      "list apiexports/content compute.example.com",
      "watch apiexports/content compute.example.com",
      "list apiexportendpointslices",
      "watch apiexportendpointslices",
    ],
  );
  assert.ok(refs.every((r) => r.cluster === CONSUMER));
  const plan = (allowed: (ref: AccessRef) => boolean | Error) =>
    planReconcile({
      ...base,
      webhookAccess: {
        readings: answered(refs, allowed),
        user: "dependency-webhook",
      },
    });
  // Granted everything: Indexed, third after WebhooksInstalled and Ready.
  const granted = statusOf(plan(() => true), VM_RULE);
  assert.deepEqual(
    granted.status.conditions?.map((c) => [c.type, c.status, c.reason]),
    [
      [WEBHOOKS_INSTALLED_CONDITION, "True", "Installed"],
      [READY_CONDITION, "True", "Enforced"],
      [INDEXED_CONDITION, "True", "Indexed"],
    ],
  );
  assert.match(
    conditionOf(granted, INDEXED_CONDITION).message,
    /dependency-webhook may watch virtualmachines\.compute\.example\.com and the content of the APIExport compute\.example\.com/,
  );
  // Only get and list (what `controller grants` gives without the flag).
  const plain = statusOf(
    plan((ref) =>
      ref.verb !== "watch" && ref.resource !== "apiexports" &&
      ref.resource !== "apiexportendpointslices"
    ),
    VM_RULE,
  );
  assert.deepEqual(summary(plain)[1], ["True", "Enforced", ENFORCED_VPCS]);
  const cannot = conditionOf(plain, INDEXED_CONDITION);
  assert.deepEqual([cannot.status, cannot.reason], [
    "False",
    "WebhookCannotWatch",
  ]);
  assert.equal(
    cannot.message,
    "the webhook's identity dependency-webhook may not watch virtualmachines.compute.example.com, list apiexports.apis.kcp.io/content compute.example.com, watch apiexports.apis.kcp.io/content compute.example.com, list apiexportendpointslices.apis.kcp.io, watch apiexportendpointslices.apis.kcp.io, " +
      "so it cannot feed its dependents index of virtualmachines.compute.example.com and lists them on every review instead (deletes stay protected, only more slowly): " +
      "grant it in system:admin of every shard (controller grants --dependents-index --kubeconfig=<webhook kubeconfig> | kubectl apply -f -, and kubectl apply -k manifests/kcp/system-admin/dependents-index)",
  );
  // The grants, not the endpoint slices' manifest: only the grants named.
  const slicesOnly = conditionOf(
    statusOf(
      plan((ref) => ref.verb !== "watch" || ref.resource !== "virtualmachines"),
      VM_RULE,
    ),
    INDEXED_CONDITION,
  );
  assert.equal(slicesOnly.reason, "WebhookCannotWatch");
  assert.match(
    slicesOnly.message,
    /may not watch virtualmachines\.compute\.example\.com, so .*\(controller grants --dependents-index --kubeconfig=<webhook kubeconfig> \| kubectl apply -f -\)$/,
  );
  // A read the webhook needs for Ready missing too: both conditions say so.
  const both = statusOf(
    plan((ref) => ref.verb === "get"),
    VM_RULE,
  );
  assert.equal(conditionOf(both, READY_CONDITION).reason, "WebhookCannotRead");
  assert.equal(
    conditionOf(both, INDEXED_CONDITION).reason,
    "WebhookCannotWatch",
  );
  // Not asked successfully: Unknown, saying why; Ready untouched.
  const failed = statusOf(
    plan((ref) =>
      ref.resource === "apiexports" ? new Error("403 Forbidden") : true
    ),
    VM_RULE,
  );
  assert.deepEqual(summary(failed)[1], ["True", "Enforced", ENFORCED_VPCS]);
  const unknown = conditionOf(failed, INDEXED_CONDITION);
  assert.deepEqual([unknown.status, unknown.reason], [
    "Unknown",
    "IndexNotChecked",
  ]);
  assert.match(
    unknown.message,
    /^not checked whether the webhook may feed its dependents index: whether dependency-webhook may list apiexports\.apis\.kcp\.io\/content compute\.example\.com: 403 Forbidden; /,
  );
});

Deno.test("planReconcile() with dependentsIndex waits for kcp's answers about the index's reads before writing a rule's status", () => {
  const base = { ...networkInput([vmRule()], [VPCS]), dependentsIndex: true };
  const refs = planReconcile(base).webhookAccess;
  const index = refs.filter((r) =>
    r.verb === "watch" || r.group === "apis.kcp.io"
  );
  assert.equal(index.length, 5);
  const some = planReconcile({
    ...base,
    webhookAccess: {
      readings: answered(refs.filter((r) => r !== index[2]), () => true),
      user: "dependency-webhook",
    },
  });
  assert.deepEqual(some.statuses, []);
  const all = planReconcile({
    ...base,
    webhookAccess: {
      readings: answered(refs, () => true),
      user: "dependency-webhook",
    },
  });
  assert.equal(all.statuses.length, 1);
  // Shown, it is not written again; the flag turned off, the condition goes.
  const shown = vmRule(statusOf(all, VM_RULE).status);
  const again = planReconcile({
    ...base,
    rules: [shown],
    webhookAccess: {
      readings: answered(refs, () => true),
      user: "dependency-webhook",
    },
  });
  assert.deepEqual(again.statuses, []);
  const off = planReconcile({
    ...base,
    dependentsIndex: false,
    rules: [shown],
    webhookAccess: {
      readings: answered(refs, () => true),
      user: "dependency-webhook",
    },
  });
  assert.deepEqual(
    statusOf(off, VM_RULE).status.conditions?.map((c) => c.type),
    [WEBHOOKS_INSTALLED_CONDITION, READY_CONDITION],
  );
});

Deno.test("planReconcile() with dependentsIndex says NotIndexed, and asks nothing more, for a rule with a when or with only owner references", () => {
  const cases: [string, EndpointObject, RegExp][] = [
    [
      "when",
      withSpec(vmRule(), { when: GOOD_WHEN }),
      /^not indexed: spec\.when may read any field of a VirtualMachine/,
    ],
    [
      "from: Target",
      vmRuleAt({ from: "Target", path: '.metadata.labels["owner"]' }),
      /^not indexed: every dependency is read on the protected object or its Namespace/,
    ],
  ];
  for (const [what, source, message] of cases) {
    const base = { ...networkInput([source], [VPCS]), dependentsIndex: true };
    const refs = planReconcile(base).webhookAccess;
    assert.ok(
      refs.every((r) => r.verb !== "watch" && r.group !== "apis.kcp.io"),
      what,
    );
    const plan = planReconcile({
      ...base,
      webhookAccess: { readings: answered(refs, () => true), user: "u" },
    });
    const indexed = conditionOf(statusOf(plan, VM_RULE), INDEXED_CONDITION);
    assert.deepEqual([indexed.status, indexed.reason], ["False", "NotIndexed"]);
    assert.match(indexed.message, message, what);
    assert.equal(
      conditionOf(statusOf(plan, VM_RULE), READY_CONDITION).reason,
      "Enforced",
      what,
    );
  }
});

Deno.test("planReconcile() with dependentsIndex writes no Indexed condition for a rule that is not installed", () => {
  const plan = planReconcile({
    ...input({
      rules: [vmRule()],
      resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
    }),
    dependentsIndex: true,
    webhookAccess: { readings: new Map(), user: "dependency-webhook" },
  });
  const action = statusOf(plan, VM_RULE);
  assert.equal(conditionOf(action, READY_CONDITION).reason, "ProviderNotBound");
  assert.deepEqual(action.status.conditions?.map((c) => c.type), [
    WEBHOOKS_INSTALLED_CONDITION,
    READY_CONDITION,
  ]);
});
