import assert from "node:assert/strict";
import { type Cause, statusCause } from "../causes/mod.ts";
import { KubeClient } from "../kcp/mod.ts";
import { connection, FakeApi, json, status } from "../../testing/fake_api.ts";
import { type PluginContext, PluginError, type PluginIo } from "./context.ts";
import type { HttpAnswer } from "./dry_run.ts";
import { parseWhyArgs, WHY_USAGE, type WhyArgs, whyCommand } from "./why.ts";

const WORKSPACE = "/clusters/root:consumers:c1";

/** Discovery of a workspace serving VPCs (namespaced) and VPCAttachments (cluster-scoped). */
function discovery(path: string): Response {
  switch (path) {
    case `${WORKSPACE}/api/v1`:
      return json({
        kind: "APIResourceList",
        groupVersion: "v1",
        resources: [{
          name: "configmaps",
          singularName: "configmap",
          namespaced: true,
          kind: "ConfigMap",
          shortNames: ["cm"],
        }],
      });
    case `${WORKSPACE}/apis`:
      return json({
        kind: "APIGroupList",
        groups: [{
          name: "network.example.com",
          versions: [{
            groupVersion: "network.example.com/v1alpha1",
            version: "v1alpha1",
          }],
          preferredVersion: {
            groupVersion: "network.example.com/v1alpha1",
            version: "v1alpha1",
          },
        }],
      });
    case `${WORKSPACE}/apis/network.example.com/v1alpha1`:
      return json({
        kind: "APIResourceList",
        groupVersion: "network.example.com/v1alpha1",
        resources: [
          {
            name: "vpcs",
            singularName: "vpc",
            namespaced: true,
            kind: "VPC",
          },
          {
            name: "vpcattachments",
            singularName: "vpcattachment",
            namespaced: false,
            kind: "VPCAttachment",
          },
        ],
      });
    default:
      return json(status(404, "NotFound", "the server could not find it"), 404);
  }
}

/** What a command wrote. */
interface Captured extends PluginIo {
  stdout: string;
  stderr: string;
}

function capture(color = false): Captured {
  const io: Captured = {
    stdout: "",
    stderr: "",
    color,
    out: (text) => void (io.stdout += text),
    err: (text) => void (io.stderr += text),
  };
  return io;
}

/**
 * A context on a fake API serving {@linkcode discovery}, and what `objects`
 * answers, in the namespace team-a.
 */
async function withContext(
  test: (
    context: PluginContext & { io: Captured },
    api: FakeApi,
  ) => Promise<void>,
  objects: (path: string) => Response | undefined = () => undefined,
): Promise<void> {
  const api = new FakeApi((request) =>
    objects(request.url.pathname) ?? discovery(request.url.pathname)
  );
  const server = `${api.url}${WORKSPACE}`;
  const client = new KubeClient(connection(server));
  try {
    await test({ client, server, namespace: "team-a", io: capture() }, api);
  } finally {
    client.close();
    await api.close();
  }
}

function vm(name: string): Cause {
  return {
    type: "Reference",
    object: {
      group: "compute.example.com",
      version: "v1alpha1",
      resource: "virtualmachines",
      kind: "VirtualMachine",
      namespace: "team-a",
      name,
    },
    fields: [".spec.vpcRef.name"],
    rules: ["c/vm-vpc"],
  };
}

function held(...causes: Cause[]): HttpAnswer {
  return {
    status: 409,
    body: {
      kind: "Status",
      code: 409,
      reason: "Conflict",
      message:
        'admission webhook "dependency-controller.dependencies.opendefense.cloud" denied the request: cannot delete ...',
      details: { causes: causes.map(statusCause) },
    },
  };
}

/** A dry run answering from `answers` by URL path (200 when absent), recording the URLs. */
function dryRuns(answers: Record<string, HttpAnswer>): {
  dryRun: (url: string) => Promise<HttpAnswer>;
  urls: string[];
} {
  const urls: string[] = [];
  return {
    urls,
    dryRun: (url) => {
      urls.push(url);
      const path = new URL(url).pathname;
      return Promise.resolve(answers[path] ?? { status: 200, body: {} });
    },
  };
}

const VPC_PATH =
  `${WORKSPACE}/apis/network.example.com/v1alpha1/namespaces/team-a/vpcs/core`;
const VM_PATH = (name: string) =>
  `${WORKSPACE}/apis/compute.example.com/v1alpha1/namespaces/team-a/virtualmachines/${name}`;

Deno.test("parseWhyArgs: <type>/<name> or <type> <name>, --recursive, -o", () => {
  assert.deepEqual(parseWhyArgs(["vpc/core"]), {
    type: "vpc",
    name: "core",
    recursive: false,
    output: "tree",
  });
  assert.deepEqual(
    parseWhyArgs(["vpcs.network.example.com", "core", "-R", "-o", "json"]),
    {
      type: "vpcs.network.example.com",
      name: "core",
      recursive: true,
      output: "json",
    },
  );
  assert.deepEqual(parseWhyArgs(["--recursive", "--output=dot", "vpc/x"]), {
    type: "vpc",
    name: "x",
    recursive: true,
    output: "dot",
  });
  assert.deepEqual(parseWhyArgs(["-o", "yaml", "vpc/x"]), {
    type: "vpc",
    name: "x",
    recursive: false,
    output: "yaml",
  });
  assert.deepEqual(parseWhyArgs(["vpc/x", "--help"]), { help: true });
  assert.deepEqual(parseWhyArgs(["-h"]), { help: true });
});

Deno.test("parseWhyArgs: usage errors exit 2 and say what is wanted", () => {
  const cases: [string[], RegExp][] = [
    [[], /which object\? want <type>\/<name> or <type> <name>/],
    [["vpc/a", "vpc/b"], /cannot read 'vpc\/a vpc\/b'/],
    [["vpc", "a", "b"], /one object at a time/],
    [["vpc/"], /cannot read 'vpc\/'/],
    [["/core"], /cannot read '\/core'/],
    [["vpc/a/b"], /cannot read 'vpc\/a\/b'/],
    [
      ["vpc/x", "-o", "wide"],
      /-o must be one of tree, json, yaml, dot: current value is 'wide'/,
    ],
    [["vpc/x", "--no-such"], /why: .*no-such.*\(see --help\)/],
    [["vpc/x", "-o"], /why: .*(-o|output).*\(see --help\)/],
    [["\u001b[31mvpc/"], /cannot read '\\u\{1b\}\[31mvpc\/'/],
  ];
  for (const [args, message] of cases) {
    assert.throws(
      () => parseWhyArgs(args),
      (error: unknown) =>
        error instanceof PluginError && error.exitCode === 2 &&
        message.test(error.message),
      JSON.stringify(args),
    );
  }
});

Deno.test("whyCommand: a held VPC exits 1 and names what holds it; the dry run goes to the object's URL in the context's namespace", async () => {
  await withContext(async (context) => {
    const { dryRun, urls } = dryRuns({ [VPC_PATH]: held(vm("vm-1")) });
    const code = await whyCommand(["vpc/core"], context, { dryRun });
    assert.equal(code, 1);
    assert.deepEqual(urls, [
      `${context.server.replace(WORKSPACE, "")}${VPC_PATH}`,
    ]);
    assert.equal(
      context.io.stdout,
      "VPC team-a/core is held by:\n\u2514\u2500\u2500 referenced by VirtualMachine team-a/vm-1 (.spec.vpcRef.name; rule c/vm-vpc)\n",
    );
    assert.equal(context.io.stderr, "");
  });
});

Deno.test("whyCommand: nothing holds it: exit 0, in every output format", async () => {
  for (const output of ["tree", "json", "yaml", "dot"]) {
    await withContext(async (context) => {
      const { dryRun } = dryRuns({});
      const code = await whyCommand(["vpcs", "core", "-o", output], context, {
        dryRun,
      });
      assert.equal(code, 0, output);
      if (output === "json") {
        assert.deepEqual(JSON.parse(context.io.stdout), {
          object: {
            group: "network.example.com",
            version: "v1alpha1",
            resource: "vpcs",
            kind: "VPC",
            namespace: "team-a",
            name: "core",
          },
          state: "free",
          held: false,
          causes: [],
        });
      }
    });
  }
});

Deno.test("whyCommand: --recursive asks about each blocker in turn; -o json carries the tree; exit 1 in every format", async () => {
  const answers = {
    [VPC_PATH]: held(vm("vm-1"), vm("vm-2")),
    [VM_PATH("vm-1")]: held({
      type: "Lock",
      lock: { namespace: "team-a", name: "keep" },
      reason: "keep it",
    }),
  };
  for (const output of ["tree", "json", "yaml", "dot"]) {
    await withContext(async (context) => {
      const { dryRun, urls } = dryRuns(answers);
      const code = await whyCommand(
        ["vpc/core", "--recursive", "-o", output],
        context,
        { dryRun },
      );
      assert.equal(code, 1, output);
      assert.equal(urls.length, 3);
      if (output === "json") {
        const tree = JSON.parse(context.io.stdout);
        assert.equal(tree.state, "held");
        assert.deepEqual(
          tree.children.map((c: { object: { name: string }; state: string }) =>
            `${c.object.name}:${c.state}`
          ),
          ["vm-1:held", "vm-2:free"],
        );
        assert.equal(tree.children[0].causes[0].reason, "keep it");
      }
      if (output === "tree") {
        assert.match(
          context.io.stdout,
          /vm-1 .*\n.*locked by Lock team-a\/keep \(reason: keep it\)\n.*vm-2 .*, nothing holds it\n$/,
        );
      }
    });
  }
});

Deno.test("whyCommand: a cluster-scoped type is asked about without a namespace", async () => {
  await withContext(async (context) => {
    const { dryRun, urls } = dryRuns({});
    assert.equal(
      await whyCommand(["vpcattachment/att-1"], context, { dryRun }),
      0,
    );
    assert.equal(
      new URL(urls[0]!).pathname,
      `${WORKSPACE}/apis/network.example.com/v1alpha1/vpcattachments/att-1`,
    );
    assert.equal(
      context.io.stdout,
      "VPCAttachment att-1: nothing holds it, a delete would go through\n",
    );
  });
});

Deno.test("whyCommand: a denial without causes exits 1, whatever its status", async () => {
  await withContext(async (context) => {
    const { dryRun } = dryRuns({
      [VPC_PATH]: {
        status: 503,
        body: status(
          503,
          "ServiceUnavailable",
          'admission webhook "d" denied the request: cannot delete vpcs/core: the dependency webhook cannot check now',
        ),
      },
    });
    assert.equal(await whyCommand(["vpc/core"], context, { dryRun }), 1);
    assert.equal(
      context.io.stdout,
      "VPC team-a/core cannot be deleted now: cannot delete vpcs/core: the dependency webhook cannot check now\n",
    );
  });
});

Deno.test("whyCommand: missing object, no permission, unknown type, no answer: exit 2 with a message, nothing on stdout", async () => {
  const forbidden = status(
    403,
    "Forbidden",
    'vpcs.network.example.com "core" is forbidden: User "user-1" cannot delete resource "vpcs"',
  );
  const cases: [string[], Record<string, HttpAnswer>, RegExp][] = [
    [
      ["vpc/core"],
      { [VPC_PATH]: { status: 404, body: status(404, "NotFound", "nope") } },
      /^not found: vpcs\.network\.example\.com "core" in namespace team-a$/,
    ],
    [
      ["vpc/core", "-o", "json"],
      { [VPC_PATH]: { status: 403, body: forbidden } },
      /^you may not delete vpcs\.network\.example\.com in namespace team-a: vpcs\.network\.example\.com "core" is forbidden/,
    ],
    [["subnet/core"], {}, /doesn't have a resource type "subnet"/],
    [["vpc/.."], {}, /Cannot use '\.\.' as a URL path segment/],
  ];
  for (const [args, answers, message] of cases) {
    await withContext(async (context) => {
      const { dryRun } = dryRuns(answers);
      await assert.rejects(
        whyCommand(args, context, { dryRun }),
        (error: unknown) =>
          error instanceof PluginError && error.exitCode === 2 &&
          message.test(error.message),
        args.join(" "),
      );
      assert.equal(context.io.stdout, "");
    });
  }
  await withContext(async (context) => {
    await assert.rejects(
      whyCommand(["vpc/core"], context, {
        dryRun: () =>
          Promise.reject(new PluginError("cannot reach https://kcp: refused")),
      }),
      (error: unknown) =>
        error instanceof PluginError && error.exitCode === 2 &&
        /cannot reach https:\/\/kcp: refused/.test(error.message),
    );
  });
});

Deno.test("whyCommand: --help writes the usage and exits 0 without asking", async () => {
  await withContext(async (context, api) => {
    const { dryRun, urls } = dryRuns({});
    assert.equal(await whyCommand(["--help"], context, { dryRun }), 0);
    assert.equal(context.io.stdout, WHY_USAGE);
    assert.deepEqual(urls, []);
    assert.equal(api.requests.length, 0);
  });
});

Deno.test("whyCommand: the bound of a walk is kept and named", async () => {
  await withContext(async (context) => {
    const answers: Record<string, HttpAnswer> = {
      [VPC_PATH]: held(vm("vm-0")),
    };
    for (let i = 0; i < 10; i++) {
      answers[VM_PATH(`vm-${i}`)] = held(vm(`vm-${i + 1}`));
    }
    const { dryRun, urls } = dryRuns(answers);
    const code = await whyCommand(["vpc/core", "-R"], context, {
      dryRun,
      limit: 4,
      concurrency: 2,
    });
    assert.equal(code, 1);
    assert.equal(urls.length, 4);
    assert.match(
      context.io.stdout,
      /vm-3 .*\(not asked: the walk's bound was reached\)\n/,
    );
    assert.match(
      context.io.stdout,
      /the walk stopped at 4 objects: 1 not asked about\n$/,
    );
  });
});

Deno.test("parseWhyArgs: namespace/<ns> and workspace are scopes, bounded by --max-objects and --max-held", () => {
  assert.deepEqual(parseWhyArgs(["namespace/team-a"]), {
    type: "namespace",
    name: "team-a",
    recursive: false,
    output: "tree",
    scope: { kind: "namespace", name: "team-a" },
  });
  assert.deepEqual(
    (parseWhyArgs(["ns", "team-a", "--max-objects", "50"]) as WhyArgs).scope,
    {
      kind: "namespace",
      name: "team-a",
    },
  );
  assert.deepEqual(
    parseWhyArgs(["workspace", "-o", "json", "--max-held=3"]),
    {
      type: "",
      name: "workspace",
      recursive: false,
      output: "json",
      scope: { kind: "workspace" },
      maxHeld: 3,
    },
  );
  for (
    const args of [
      ["namespace/a", "-R"],
      ["namespace/a", "--max-objects", "0"],
      ["namespace/a", "--max-held", "1e3"],
      ["workspace", "--max-objects", "100001"],
    ]
  ) {
    assert.throws(() => parseWhyArgs(args), PluginError, args.join(" "));
  }
});

Deno.test("whyCommand: a held VPC being deleted, whose owner is deleted in the foreground: its own deletion and the owner's, since when, in the tree and JSON", async () => {
  const DELETED = "2026-11-29T12:00:00Z";
  const CM_PATH = `${WORKSPACE}/api/v1/namespaces/team-a/configmaps/cm-1`;
  const objects = (path: string): Response | undefined => {
    if (path === VPC_PATH) {
      return json({
        kind: "PartialObjectMetadata",
        metadata: {
          name: "core",
          deletionTimestamp: DELETED,
          ownerReferences: [
            {
              apiVersion: "v1",
              kind: "ConfigMap",
              name: "cm-1",
              uid: "u-1",
              blockOwnerDeletion: true,
            },
            { apiVersion: "v1", kind: "ConfigMap", name: "../../x" },
          ],
        },
      });
    }
    if (path === CM_PATH) {
      return json({
        kind: "PartialObjectMetadata",
        metadata: {
          name: "cm-1",
          uid: "u-1",
          deletionTimestamp: DELETED,
          finalizers: ["foregroundDeletion"],
        },
      });
    }
    return undefined;
  };
  await withContext(async (context, api) => {
    const { dryRun } = dryRuns({ [VPC_PATH]: held(vm("vm-1")) });
    assert.equal(await whyCommand(["vpc/core"], context, { dryRun }), 1);
    assert.match(
      context.io.stdout,
      /^VPC team-a\/core is held by: \[being deleted since 2026-11-29T12:00:00Z \(\d+[smhd] ago\)\] \[owner ConfigMap team-a\/cm-1 being deleted since 2026-11-29T12:00:00Z \(for \d+[smhd]\), waiting for it\] \[1 owner not read\]\n\u2514\u2500\u2500 referenced by VirtualMachine team-a\/vm-1 /,
    );
    assert.ok(api.requests.every((r) => !r.url.pathname.endsWith("/x")));
  }, objects);
  await withContext(async (context) => {
    const { dryRun } = dryRuns({ [VPC_PATH]: held(vm("vm-1")) });
    await whyCommand(["vpc/core", "-o", "json"], context, { dryRun });
    const parsed = JSON.parse(context.io.stdout);
    assert.equal(parsed.deletionTimestamp, DELETED);
    assert.deepEqual(parsed.deletingOwners, [{
      object: {
        group: "",
        version: "v1",
        resource: "configmaps",
        kind: "ConfigMap",
        namespace: "team-a",
        name: "cm-1",
      },
      deletionTimestamp: DELETED,
      foreground: true,
      blockOwnerDeletion: true,
    }]);
    assert.equal(parsed.ownersNotRead, 1);
  }, objects);
});

Deno.test("whyCommand: a VPC nothing holds is not read; one that cannot be read is shown as the dry run says", async () => {
  await withContext(async (context, api) => {
    const { dryRun } = dryRuns({});
    assert.equal(await whyCommand(["vpc/core"], context, { dryRun }), 0);
    assert.ok(api.requests.every((r) => r.url.pathname !== VPC_PATH));
  });
  await withContext(async (context, api) => {
    const { dryRun } = dryRuns({ [VPC_PATH]: held(vm("vm-1")) });
    assert.equal(await whyCommand(["vpc/core"], context, { dryRun }), 1);
    assert.ok(api.requests.some((r) => r.url.pathname === VPC_PATH));
    assert.equal(
      context.io.stdout,
      "VPC team-a/core is held by:\n\u2514\u2500\u2500 referenced by VirtualMachine team-a/vm-1 (.spec.vpcRef.name; rule c/vm-vpc)\n",
    );
  });
});
