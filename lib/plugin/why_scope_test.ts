import assert from "node:assert/strict";
import { type Cause, statusCause } from "../causes/mod.ts";
import { KubeClient } from "../kcp/mod.ts";
import {
  connection,
  FakeApi,
  json,
  type SeenRequest,
  status,
} from "../../testing/fake_api.ts";
import type { PluginContext, PluginIo } from "./context.ts";
import { PluginError } from "./context.ts";
import type { HttpAnswer } from "./dry_run.ts";
import { scopeReport, whyScope } from "./why_scope.ts";

const WORKSPACE = "/clusters/root:consumers:c1";
const GV = `${WORKSPACE}/apis/network.example.com/v1alpha1`;
const DELETED = "2026-11-29T12:00:00Z";
const SINCE = "2026-11-28T12:00:00Z";

const RESOURCES = {
  kind: "APIResourceList",
  resources: [
    { name: "vpcs", namespaced: true, kind: "VPC", verbs: ["list", "delete"] },
    { name: "vpcs/status", namespaced: true, kind: "VPC", verbs: ["get"] },
    {
      name: "vpcattachments",
      namespaced: false,
      kind: "VPCAttachment",
      verbs: ["list", "delete"],
    },
    { name: "readonly", namespaced: true, kind: "R", verbs: ["get", "list"] },
  ],
};

const GROUPS = {
  kind: "APIGroupList",
  groups: ["network.example.com", "apps", "dependencies.opendefense.cloud"]
    .map((name) => ({
      name,
      versions: [{ version: "v1alpha1" }],
      preferredVersion: { version: "v1alpha1" },
    })),
};

/** A kcp serving `count` VPCs in team-a, two to a page, and the namespace. */
function api(
  options: { count: number; deleting: boolean },
): (request: SeenRequest) => Response {
  return (request) => {
    const path = request.url.pathname;
    if (path === `${WORKSPACE}/apis`) return json(GROUPS);
    if (path === GV) return json(RESOURCES);
    if (path === `${WORKSPACE}/api/v1/namespaces/team-a`) {
      return json({
        kind: "Namespace",
        metadata: {
          name: "team-a",
          ...(options.deleting ? { deletionTimestamp: DELETED } : {}),
        },
      });
    }
    if (path === `${GV}/namespaces/team-a/vpcs`) {
      const limit = Number(request.url.searchParams.get("limit"));
      const from = Number(request.url.searchParams.get("continue") ?? "0");
      const to = Math.min(options.count, from + Math.min(limit, 2));
      return json({
        kind: "PartialObjectMetadataList",
        metadata: to < options.count
          ? { continue: String(to), remainingItemCount: options.count - to }
          : {},
        items: Array.from({ length: to - from }, (_, i) => ({
          metadata: {
            name: `vpc-${from + i}`,
            namespace: "team-a",
            ...(from + i === 0 ? { deletionTimestamp: DELETED } : {}),
          },
        })),
      });
    }
    return json(status(404, "NotFound", "not found"), 404);
  };
}

const io: PluginIo = { out() {}, err() {}, color: false };

async function withContext(
  handler: (request: SeenRequest) => Response,
  test: (context: PluginContext, fake: FakeApi) => Promise<void>,
): Promise<void> {
  const fake = new FakeApi(handler);
  const server = `${fake.url}${WORKSPACE}`;
  const client = new KubeClient(connection(server));
  try {
    await test({ client, server, namespace: "default", io }, fake);
  } finally {
    client.close();
    await fake.close();
  }
}

const LOCK: Cause = {
  type: "Lock",
  lock: { namespace: "team-a", name: "keep" },
  reason: "keep it",
  since: SINCE,
};

function denial(...causes: Cause[]): HttpAnswer {
  return {
    status: 409,
    body: {
      kind: "Status",
      message: 'admission webhook "x" denied the request: cannot delete',
      details: { causes: causes.map(statusCause) },
    },
  };
}

/** Dry runs that hold the VPCs named, recording every URL asked. */
function dryRuns(held: readonly string[]) {
  const urls: string[] = [];
  return {
    urls,
    dryRun: (url: string): Promise<HttpAnswer> => {
      urls.push(new URL(url).pathname);
      const name = url.split("/").pop()!;
      return Promise.resolve(
        held.includes(name) ? denial(LOCK) : { status: 200, body: {} },
      );
    },
  };
}

Deno.test("whyScope(): a namespace being deleted, its held objects named and counted, bounded", async () => {
  await withContext(
    api({ count: 5, deleting: true }),
    async (context, fake) => {
      const asks = dryRuns(["vpc-0", "vpc-2"]);
      const report = await whyScope(context, {
        kind: "namespace",
        name: "team-a",
      }, {
        dryRun: asks.dryRun,
        maxObjects: 3,
        maxHeld: 1,
      });
      assert.deepEqual(report.scope, {
        kind: "Namespace",
        name: "team-a",
        deletionTimestamp: DELETED,
      });
      assert.equal(report.state, "held");
      assert.equal(report.asked, 3);
      assert.equal(report.heldCount, 2);
      assert.equal(report.notNamed, 1);
      assert.equal(report.notAsked, 2);
      assert.equal(report.complete, false);
      assert.deepEqual(report.objects.map((o) => o.object.name), ["vpc-0"]);
      assert.equal(report.objects[0]!.deletionTimestamp, DELETED);
      assert.deepEqual(report.objects[0]!.causes, [LOCK]);
      // A namespace being deleted is not asked about itself; vpcs only.
      assert.equal(asks.urls.length, 3);
      assert.ok(asks.urls.every((u) => u.includes("/vpcs/")));
      // Metadata only, pages no larger than what is left to ask.
      const lists = fake.requests.filter((r) =>
        r.url.pathname.endsWith("/vpcs")
      );
      assert.ok(
        lists.every((r) =>
          r.headers.get("accept")?.includes("PartialObjectMetadataList")
        ),
      );
      assert.deepEqual(
        lists.map((r) => r.url.searchParams.get("limit")),
        ["3", "1"],
      );
    },
  );
});

Deno.test("whyScope(): a namespace not being deleted is asked about itself first; all free is free", async () => {
  await withContext(api({ count: 2, deleting: false }), async (context) => {
    const asks = dryRuns([]);
    const report = await whyScope(context, {
      kind: "namespace",
      name: "team-a",
    }, {
      dryRun: asks.dryRun,
    });
    assert.equal(asks.urls[0], `${WORKSPACE}/api/v1/namespaces/team-a`);
    assert.equal(report.asked, 3);
    assert.equal(report.state, "free");
    assert.equal(report.held, false);
    assert.deepEqual(report.objects, []);
  });
});

Deno.test("whyScope(): a namespace that does not exist is an error", async () => {
  await withContext(api({ count: 0, deleting: false }), async (context) => {
    await assert.rejects(
      whyScope(context, { kind: "namespace", name: "nope" }, {
        dryRun: dryRuns([]).dryRun,
      }),
      (error: unknown) =>
        error instanceof PluginError &&
        /^not found: namespace "nope"$/.test(error.message),
    );
  });
});

Deno.test("scopeReport(): held when anything is, free only when all was asked, else unknown", () => {
  const scope = { kind: "Namespace" as const, name: "a" };
  const object = {
    group: "g.io",
    version: "v1",
    resource: "things",
    kind: "Thing",
    namespace: "a",
    name: "x",
  };
  const base = { scope, asked: 2, notAsked: 0, notListed: [], maxHeld: 5 };
  assert.equal(
    scopeReport({ ...base, answers: [undefined, undefined] }).state,
    "free",
  );
  const failed = scopeReport({
    ...base,
    answers: [{ object, state: "error", error: "forbidden" }, undefined],
  });
  assert.equal(failed.state, "unknown");
  assert.equal(failed.objects.length, 1);
  assert.equal(
    scopeReport({ ...base, notAsked: 1, answers: [undefined] }).state,
    "unknown",
  );
  assert.equal(
    scopeReport({
      ...base,
      notListed: [{ type: "things.g.io", why: "403" }],
      answers: [],
    }).state,
    "unknown",
  );
  const held = scopeReport({
    ...base,
    answers: [{ object, state: "held", causes: [LOCK] }, {
      object,
      state: "error",
      error: "e",
    }],
  });
  assert.equal(held.state, "held");
  assert.deepEqual(held.objects.map((o) => o.state), ["held", "error"]);
});

Deno.test("whyScope(): a Namespace the user may not read is taken as not being deleted, and asked about", async () => {
  const inner = api({ count: 1, deleting: true });
  const forbidden = (request: SeenRequest) =>
    request.url.pathname === `${WORKSPACE}/api/v1/namespaces/team-a`
      ? json(status(403, "Forbidden", "namespaces is forbidden"), 403)
      : inner(request);
  await withContext(forbidden, async (context) => {
    const asks = dryRuns([]);
    const report = await whyScope(context, {
      kind: "namespace",
      name: "team-a",
    }, {
      dryRun: asks.dryRun,
    });
    assert.deepEqual(report.scope, { kind: "Namespace", name: "team-a" });
    assert.equal(asks.urls[0], `${WORKSPACE}/api/v1/namespaces/team-a`);
    assert.equal(report.state, "free");
  });
});

Deno.test("whyScope(): a held object whose owner (cluster-scoped, not asked about) is being deleted in the foreground: the owner and since when; only named objects' owners are read", async () => {
  const OWNERS = `${WORKSPACE}/apis/owners.example.com/v1alpha1`;
  const owned = (name: string, project: string) => ({
    metadata: {
      name,
      namespace: "team-a",
      ownerReferences: [{
        apiVersion: "owners.example.com/v1alpha1",
        kind: "Project",
        name: project,
        uid: `uid-${project}`,
        blockOwnerDeletion: true,
      }],
    },
  });
  const inner = api({ count: 0, deleting: false });
  const handler = (request: SeenRequest): Response => {
    const path = request.url.pathname;
    if (path === `${GV}/namespaces/team-a/vpcs`) {
      return json({
        kind: "PartialObjectMetadataList",
        metadata: {},
        items: [
          owned("vpc-0", "p-1"),
          owned("vpc-1", "p-2"),
          owned("vpc-2", "p-3"),
        ],
      });
    }
    if (path === OWNERS) {
      return json({
        kind: "APIResourceList",
        resources: [{
          name: "projects",
          namespaced: false,
          kind: "Project",
          verbs: ["get", "list", "delete"],
        }],
      });
    }
    const project = /\/projects\/([^/]+)$/.exec(path);
    if (project !== null) {
      return json({
        kind: "PartialObjectMetadata",
        metadata: {
          name: project[1],
          uid: `uid-${project[1]}`,
          deletionTimestamp: DELETED,
          finalizers: ["foregroundDeletion"],
        },
      });
    }
    return inner(request);
  };
  await withContext(handler, async (context, fake) => {
    const report = await whyScope(context, {
      kind: "namespace",
      name: "team-a",
    }, { dryRun: dryRuns(["vpc-0", "vpc-1"]).dryRun, maxHeld: 1 });
    assert.equal(report.heldCount, 2);
    assert.deepEqual(report.objects.map((o) => o.object.name), ["vpc-0"]);
    assert.deepEqual(report.objects[0]!.deletingOwners, [{
      object: {
        group: "owners.example.com",
        version: "v1alpha1",
        resource: "projects",
        kind: "Project",
        namespace: "",
        name: "p-1",
      },
      deletionTimestamp: DELETED,
      foreground: true,
      blockOwnerDeletion: true,
    }]);
    assert.equal(report.objects[0]!.ownersNotRead, undefined);
    // vpc-1 is held but not named, vpc-2 free: their owners are not read.
    assert.deepEqual(
      fake.requests.map((r) => r.url.pathname).filter((p) =>
        p.includes("/projects/")
      ),
      [`${OWNERS}/projects/p-1`],
    );
  });
});
