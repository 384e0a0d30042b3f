import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import {
  cannotWatchMessage,
  INDEX_GRANTS_COMMAND,
  INDEX_SLICES_COMMAND,
  indexAccessNeeded,
  indexAccessProblems,
  indexedMessage,
  indexNotCheckedMessage,
  notIndexedReason,
} from "./index_access.ts";
import { accessKey } from "./webhook_access.ts";

const DEPENDENT = {
  apiExportName: "compute.example.com",
  group: "compute.example.com",
  kind: "VirtualMachine",
  resource: "virtualmachines",
};

const RULE = {
  spec: { dependent: DEPENDENT, dependencies: [{}] },
};

const describe = (refs: ReturnType<typeof indexAccessNeeded>) =>
  refs.map((r) =>
    `${r.cluster} ${r.verb} ${r.resource}${
      r.subresource === undefined ? "" : `/${r.subresource}`
    }.${r.group}${r.name === undefined ? "" : ` ${r.name}`}`
  );

Deno.test("indexAccessNeeded() asks, in the rule's workspace, for watch on the dependent type, the export's content by name and its endpoint slices", () => {
  assert.deepEqual(describe(indexAccessNeeded("c1", RULE)), [
    "c1 watch virtualmachines.compute.example.com",
    "c1 list apiexports/content.apis.kcp.io compute.example.com",
    "c1 watch apiexports/content.apis.kcp.io compute.example.com",
    "c1 list apiexportendpointslices.apis.kcp.io",
    "c1 watch apiexportendpointslices.apis.kcp.io",
  ]);
  // The export is the rule's dependent export, whatever its types' group.
  const other = {
    spec: {
      dependent: { ...DEPENDENT, apiExportName: "compute-v2" },
      dependencies: [{ fieldRef: { from: "Dependent" as const } }],
    },
  };
  assert.match(describe(indexAccessNeeded("c2", other))[1]!, / compute-v2$/);
});

Deno.test("indexAccessNeeded() asks nothing for a rule the webhook does not index", () => {
  const cases = [
    { ...RULE.spec, when: "object.spec.keep == true" },
    { ...RULE.spec, dependencies: [{ fieldRef: { from: "Target" as const } }] },
    {
      ...RULE.spec,
      dependencies: [
        { fieldRef: { from: "Target" as const } },
        { fieldRef: { from: "TargetNamespace" as const } },
      ],
    },
  ];
  for (const spec of cases) {
    assert.deepEqual(indexAccessNeeded("c1", { spec }), []);
    assert.notEqual(notIndexedReason({ spec }), undefined);
  }
  // One dependency read on the dependent is enough to index the rule.
  const mixed = {
    spec: {
      ...RULE.spec,
      dependencies: [{ fieldRef: { from: "Target" as const } }, {}],
    },
  };
  assert.equal(notIndexedReason(mixed), undefined);
  assert.equal(indexAccessNeeded("c1", mixed).length, 5);
});

Deno.test("notIndexedReason() says why: a spec.when, or owners read on the protected object", () => {
  assert.match(
    notIndexedReason({ spec: { ...RULE.spec, when: "true" } })!,
    /^not indexed: spec\.when may read any field of a VirtualMachine.*lists virtualmachines\.compute\.example\.com on each review$/,
  );
  assert.match(
    notIndexedReason({
      spec: {
        ...RULE.spec,
        dependencies: [{ fieldRef: { from: "TargetNamespace" as const } }],
      },
    })!,
    /^not indexed: every dependency is read on the protected object or its Namespace/,
  );
  assert.equal(notIndexedReason(RULE), undefined);
});

Deno.test("indexAccessNeeded() hands out the same frozen refs per rule object and cluster with a memo", () => {
  const memo = new PlanMemo();
  const first = indexAccessNeeded("c1", RULE, { memo });
  assert.ok(Object.isFrozen(first));
  assert.ok(first.every((ref) => Object.isFrozen(ref)));
  assert.equal(indexAccessNeeded("c1", RULE, { memo }), first);
  const moved = indexAccessNeeded("c2", RULE, { memo });
  assert.notEqual(moved, first);
  assert.equal(moved[0]!.cluster, "c2");
  // Without a memo, equal but not the same.
  assert.deepEqual(indexAccessNeeded("c1", RULE), first);
});

Deno.test("indexAccessProblems() sorts the answers: missing, unverified, still being asked", () => {
  const refs = indexAccessNeeded("c1", RULE);
  const [watch, contentList, contentWatch, slicesList, slicesWatch] = refs;
  const readings = new Map([
    [accessKey(watch!), { answer: false }],
    [accessKey(contentList!), { answer: true }],
    [accessKey(contentWatch!), { answer: false }],
    [accessKey(slicesList!), { error: "403 Forbidden" }],
  ]);
  assert.deepEqual(
    indexAccessProblems(refs, readings, { user: "dependency-webhook" }),
    {
      missing: [
        "watch virtualmachines.compute.example.com",
        "watch apiexports.apis.kcp.io/content compute.example.com",
      ],
      slicesMissing: false,
      unverified: [
        "whether dependency-webhook may list apiexportendpointslices.apis.kcp.io: 403 Forbidden",
      ],
      unanswered: 1,
    },
  );
  assert.equal(slicesWatch!.resource, "apiexportendpointslices");
  const slices = indexAccessProblems(
    refs,
    new Map(refs.map((ref) => [accessKey(ref), {
      answer: ref.resource !== "apiexportendpointslices",
    }])),
    { user: "u" },
  );
  assert.deepEqual(slices.missing, [
    "list apiexportendpointslices.apis.kcp.io",
    "watch apiexportendpointslices.apis.kcp.io",
  ]);
  assert.equal(slices.slicesMissing, true);
});

Deno.test("cannotWatchMessage() names each read, what it costs and the grant to apply in system:admin of every shard", () => {
  const message = cannotWatchMessage(RULE, {
    missing: [
      "watch virtualmachines.compute.example.com",
      "list apiexports.apis.kcp.io/content compute.example.com",
    ],
    slicesMissing: false,
  }, { user: "dependency-webhook" });
  assert.equal(
    message,
    "the webhook's identity dependency-webhook may not watch virtualmachines.compute.example.com, list apiexports.apis.kcp.io/content compute.example.com, " +
      "so it cannot feed its dependents index of virtualmachines.compute.example.com and lists them on every review instead (deletes stay protected, only more slowly): " +
      `grant it in system:admin of every shard (${INDEX_GRANTS_COMMAND})`,
  );
  assert.ok(message.includes(
    "controller grants --dependents-index --kubeconfig=<webhook kubeconfig> | kubectl apply -f -",
  ));
  assert.ok(
    cannotWatchMessage(RULE, {
      missing: ["list apiexportendpointslices.apis.kcp.io"],
      slicesMissing: true,
    }, { user: "u" }).endsWith(
      `(${INDEX_GRANTS_COMMAND}, and ${INDEX_SLICES_COMMAND})`,
    ),
  );
});

Deno.test("indexedMessage() and indexNotCheckedMessage() say what was found", () => {
  assert.equal(
    indexedMessage(RULE, { user: "dependency-webhook" }),
    "the webhook's identity dependency-webhook may watch virtualmachines.compute.example.com and the content of the APIExport compute.example.com: with --dependents-index, the webhook answers this rule's reviews from its dependents index",
  );
  assert.equal(
    indexNotCheckedMessage([
      "whether u may watch x: 403",
      "whether u may watch x: 403",
      "y",
    ]),
    "not checked whether the webhook may feed its dependents index: whether u may watch x: 403; y",
  );
});
