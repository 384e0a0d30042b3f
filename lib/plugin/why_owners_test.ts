import assert from "node:assert/strict";
import type { CauseObject } from "../causes/mod.ts";
import {
  FakeApi,
  json,
  type SeenRequest,
  status,
} from "../../testing/fake_api.ts";
import { fakeContext } from "../../testing/plugin.ts";
import {
  deletingOwner,
  deletingOwners,
  deletionOf,
  isObjectName,
  MAX_OWNERS_PER_OBJECT,
  ownerReferencesOf,
  withDeletingOwners,
  withObjectDeletions,
} from "./why_owners.ts";

const WS = "/clusters/root:c1";
const DELETED = "2026-11-29T12:00:00Z";
const OWNERS_GV = `${WS}/apis/owners.example.com/v1alpha1`;

/** A ref to the Project `name` (cluster-scoped), blocking by default. */
function projectRef(name: string, more: Record<string, unknown> = {}) {
  return {
    apiVersion: "owners.example.com/v1alpha1",
    kind: "Project",
    name,
    uid: `uid-${name}`,
    blockOwnerDeletion: true,
    ...more,
  };
}

function subnet(name: string, namespace = "team-a"): CauseObject {
  return {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "subnets",
    kind: "Subnet",
    namespace,
    name,
  };
}

/**
 * A workspace serving Projects (cluster-scoped), Networks (namespaced) and
 * ConfigMaps: `deleting` Projects and Networks are being deleted in the
 * foreground, `forbidden` may not be read, the others exist and are not.
 */
function ownersApi(
  options: { deleting: string[]; forbidden?: string[]; missing?: string[] },
) {
  return (request: SeenRequest): Response => {
    const path = request.url.pathname;
    if (path === OWNERS_GV) {
      return json({
        kind: "APIResourceList",
        resources: [
          { name: "projects", namespaced: false, kind: "Project" },
          { name: "projects/status", namespaced: false, kind: "Project" },
          { name: "networks", namespaced: true, kind: "Network" },
        ],
      });
    }
    if (path === `${WS}/api/v1`) {
      return json({
        kind: "APIResourceList",
        resources: [{
          name: "configmaps",
          namespaced: true,
          kind: "ConfigMap",
        }],
      });
    }
    const object =
      /\/(?:api\/v1|apis\/owners\.example\.com\/v1alpha1)(?:\/namespaces\/[^/]+)?\/(projects|networks|configmaps)\/([^/]+)$/
        .exec(path);
    if (object === null) {
      return json(status(404, "NotFound", `nothing at ${path}`), 404);
    }
    const name = decodeURIComponent(object[2]!);
    if (options.forbidden?.includes(name)) {
      return json(status(403, "Forbidden", "forbidden"), 403);
    }
    if (options.missing?.includes(name)) {
      return json(status(404, "NotFound", "not found"), 404);
    }
    return json({
      kind: "PartialObjectMetadata",
      metadata: {
        name,
        uid: `uid-${name}`,
        ...(options.deleting.includes(name)
          ? {
            deletionTimestamp: DELETED,
            finalizers: ["foregroundDeletion"],
          }
          : {}),
      },
    });
  };
}

async function withApi(
  handler: (request: SeenRequest) => Response,
  test: (
    context: ReturnType<typeof fakeContext>,
    api: FakeApi,
  ) => Promise<void>,
): Promise<void> {
  const api = new FakeApi(handler);
  const context = fakeContext(api);
  try {
    await test(context, api);
  } finally {
    context.client.close();
    await api.close();
  }
}

/** The object reads (not discovery) the api saw, as paths. */
function objectReads(api: FakeApi): string[] {
  return api.requests.map((r) => r.url.pathname).filter((p) =>
    /\/(projects|networks|configmaps)\//.test(p)
  );
}

Deno.test("ownerReferencesOf(): well-formed references, at most the bound; the rest counted", () => {
  const bad = [
    "nonsense",
    { ...projectRef("a"), apiVersion: "owners.example.com/v1/x" },
    { ...projectRef("a"), apiVersion: "Owners.Example.com/v1alpha1" },
    { ...projectRef("a"), apiVersion: "owners.example.com/" },
    { ...projectRef("a"), apiVersion: 7 },
    { ...projectRef("a"), kind: "Pro ject" },
    { ...projectRef("a"), kind: "" },
    projectRef(".."),
    projectRef("."),
    projectRef("a/b"),
    projectRef("a%2Fb"),
    projectRef("a?b"),
    projectRef("a\u202eb"),
    projectRef(""),
    projectRef("x".repeat(254)),
    { ...projectRef("a"), name: 5 },
  ];
  assert.deepEqual(ownerReferencesOf(bad), { references: [], invalid: 16 });
  assert.deepEqual(ownerReferencesOf(undefined), {
    references: [],
    invalid: 0,
  });
  assert.deepEqual(
    ownerReferencesOf([
      { apiVersion: "v1", kind: "ConfigMap", name: "cm-1" },
      projectRef("p-1", { blockOwnerDeletion: "yes" }),
    ]),
    {
      references: [
        {
          group: "",
          version: "v1",
          kind: "ConfigMap",
          name: "cm-1",
          blockOwnerDeletion: false,
        },
        {
          group: "owners.example.com",
          version: "v1alpha1",
          kind: "Project",
          name: "p-1",
          uid: "uid-p-1",
          blockOwnerDeletion: false,
        },
      ],
      invalid: 0,
    },
  );
  const many = Array.from(
    { length: MAX_OWNERS_PER_OBJECT + 2 },
    (_, i) => projectRef(`p-${i}`),
  );
  const bounded = ownerReferencesOf(many);
  assert.equal(bounded.references.length, MAX_OWNERS_PER_OBJECT);
  assert.equal(bounded.invalid, 2);
  assert.equal(ownerReferencesOf(many, 1).references.length, 1);
});

Deno.test("isObjectName() and deletionOf(): names that go into a URL; an RFC 3339 deletionTimestamp only", () => {
  for (const name of ["p-1", "a.b", "system:x", "a@b+c_d"]) {
    assert.equal(isObjectName(name), true, name);
  }
  for (const name of ["", ".", "..", "a/b", "a b", "a%b", "a\nb"]) {
    assert.equal(isObjectName(name), false, name);
  }
  assert.deepEqual(deletionOf({ metadata: { deletionTimestamp: DELETED } }), {
    deletionTimestamp: DELETED,
  });
  assert.deepEqual(deletionOf({ metadata: { deletionTimestamp: "soon" } }), {});
  assert.deepEqual(deletionOf("nonsense"), {});
});

Deno.test("deletingOwner(): only an owner being deleted, and the one the reference names (its uid)", () => {
  const reference = ownerReferencesOf([projectRef("p-1")]).references[0]!;
  const type = {
    group: "owners.example.com",
    version: "v1alpha1",
    resource: "projects",
    kind: "Project",
    namespaced: false,
  };
  const at = { reference, type, namespace: "" };
  const deleting = {
    metadata: {
      uid: "uid-p-1",
      deletionTimestamp: DELETED,
      finalizers: ["foregroundDeletion"],
    },
  };
  assert.deepEqual(deletingOwner(deleting, at), {
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
  });
  assert.equal(
    deletingOwner({ metadata: { uid: "uid-p-1" } }, at),
    undefined,
  );
  assert.equal(
    deletingOwner({ metadata: { ...deleting.metadata, uid: "other" } }, at),
    undefined,
  );
  assert.equal(
    deletingOwner({ metadata: { deletionTimestamp: DELETED } }, at)
      ?.foreground,
    false,
  );
});

Deno.test("deletingOwners(): each dependent's owners being deleted, a shared owner read once, cluster-scoped and namespaced", async () => {
  await withApi(
    ownersApi({ deleting: ["p-1", "net-1"] }),
    async (context, api) => {
      const found = await deletingOwners(context, [
        {
          object: subnet("s-1"),
          ownerReferences: [
            projectRef("p-1"),
            projectRef("p-2"),
            {
              apiVersion: "owners.example.com/v1alpha1",
              kind: "Network",
              name: "net-1",
            },
          ],
        },
        {
          object: subnet("s-2", "team-b"),
          ownerReferences: [projectRef("p-1")],
        },
        { object: subnet("s-3"), ownerReferences: undefined },
      ]);
      assert.deepEqual(
        found.map((f) =>
          f.deletingOwners.map((o) =>
            `${o.object.kind} ${o.object.namespace}/${o.object.name} ${o.foreground} ${o.blockOwnerDeletion}`
          )
        ),
        [
          ["Project /p-1 true true", "Network team-a/net-1 true false"],
          ["Project /p-1 true true"],
          [],
        ],
      );
      assert.deepEqual(found.map((f) => f.ownersNotRead), [0, 0, 0]);
      assert.deepEqual(objectReads(api).sort(), [
        `${OWNERS_GV}/namespaces/team-a/networks/net-1`,
        `${OWNERS_GV}/projects/p-1`,
        `${OWNERS_GV}/projects/p-2`,
      ]);
      // Discovery once per group version, metadata only for the owners.
      assert.equal(
        api.requests.filter((r) => r.url.pathname === OWNERS_GV).length,
        1,
      );
      assert.ok(
        api.requests.filter((r) => r.url.pathname.includes("/projects/"))
          .every((r) =>
            r.headers.get("accept")?.includes("as=PartialObjectMetadata;")
          ),
      );
    },
  );
});

Deno.test("deletingOwners(): bounded in all; malformed, unknown, unreadable owners are counted as not read, never a request for a bad name", async () => {
  await withApi(
    ownersApi({ deleting: ["p-0", "p-1", "p-2"], forbidden: ["p-3"] }),
    async (context, api) => {
      const found = await deletingOwners(context, [
        {
          object: subnet("s-1"),
          ownerReferences: [
            projectRef("p-0"),
            projectRef("../../secrets/x"),
            {
              apiVersion: "owners.example.com/v1alpha1",
              kind: "Frob",
              name: "f",
            },
            { apiVersion: "unknown.example.com/v1", kind: "Thing", name: "t" },
          ],
        },
        {
          object: subnet("s-2"),
          ownerReferences: [projectRef("p-1"), projectRef("p-3")],
        },
        // Past the bound of three reads (p-0, p-1, p-3).
        { object: subnet("s-3"), ownerReferences: [projectRef("p-2")] },
        // A namespaced owner named by a cluster-scoped object.
        {
          object: { ...subnet("x"), namespace: "" },
          ownerReferences: [{
            apiVersion: "owners.example.com/v1alpha1",
            kind: "Network",
            name: "net-1",
          }],
        },
      ], { reads: 3 });
      assert.deepEqual(
        found.map((f) => f.deletingOwners.map((o) => o.object.name)),
        [["p-0"], ["p-1"], [], []],
      );
      assert.deepEqual(found.map((f) => f.ownersNotRead), [3, 1, 1, 1]);
      assert.deepEqual(objectReads(api).sort(), [
        `${OWNERS_GV}/projects/p-0`,
        `${OWNERS_GV}/projects/p-1`,
        `${OWNERS_GV}/projects/p-3`,
      ]);
      assert.ok(
        api.requests.every((r) => !r.url.pathname.includes("secrets")),
      );
    },
  );
});

Deno.test("deletingOwners(): an owner that is gone (404) or not being deleted is not named, nor counted", async () => {
  await withApi(
    ownersApi({ deleting: [], missing: ["p-gone"] }),
    async (context) => {
      const [found] = await deletingOwners(context, [{
        object: subnet("s-1"),
        ownerReferences: [projectRef("p-gone"), projectRef("p-there")],
      }]);
      assert.deepEqual(found, { deletingOwners: [], ownersNotRead: 0 });
    },
  );
});

Deno.test("withDeletingOwners(): only what there is is added; an entry naming no owner asks nothing", async () => {
  await withApi(ownersApi({ deleting: ["p-1"] }), async (context, api) => {
    const entries = [
      { object: subnet("s-1"), refs: [projectRef("p-1"), projectRef("..")] },
      { object: subnet("s-2"), refs: [projectRef("p-2")] },
      { object: subnet("s-3"), refs: [] },
    ];
    const shown = await withDeletingOwners(context, entries, (e) => e.refs);
    assert.equal(shown[0]!.deletingOwners?.[0]?.object.name, "p-1");
    assert.equal(shown[0]!.ownersNotRead, 1);
    assert.equal("deletingOwners" in shown[1]!, false);
    assert.equal("ownersNotRead" in shown[1]!, false);
    assert.equal(shown[2], entries[2]);
    api.requests.length = 0;
    const none = await withDeletingOwners(context, entries, () => undefined);
    assert.deepEqual(none, entries);
    assert.equal(api.requests.length, 0);
  });
});

Deno.test("withObjectDeletions(): the object's own deletion and its owners', read as metadata; unchanged when it cannot be read", async () => {
  const inner = ownersApi({ deleting: ["p-1"] });
  const handler = (request: SeenRequest): Response => {
    const path = request.url.pathname;
    if (
      path ===
        `${WS}/apis/network.example.com/v1alpha1/namespaces/team-a/subnets/s-1`
    ) {
      return json({
        kind: "PartialObjectMetadata",
        metadata: {
          name: "s-1",
          deletionTimestamp: DELETED,
          ownerReferences: [projectRef("p-1")],
        },
      });
    }
    return inner(request);
  };
  await withApi(handler, async (context, api) => {
    const node = { object: subnet("s-1"), state: "held" };
    const shown = await withObjectDeletions(context, node);
    assert.equal(shown.deletionTimestamp, DELETED);
    assert.deepEqual(
      shown.deletingOwners?.map((o) => [o.object.name, o.deletionTimestamp]),
      [["p-1", DELETED]],
    );
    assert.match(
      api.requests[0]!.headers.get("accept") ?? "",
      /as=PartialObjectMetadata;/,
    );
    const missing = { object: subnet("nope"), state: "held" };
    assert.equal(await withObjectDeletions(context, missing), missing);
  });
});
