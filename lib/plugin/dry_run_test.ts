import assert from "node:assert/strict";
import { connection, FakeApi, json, status } from "../../testing/fake_api.ts";
import { PluginError } from "./context.ts";
import { KubeClient } from "../kcp/mod.ts";
import {
  DRY_RUN_DELETE_OPTIONS,
  DryRunDeleter,
  MAX_ANSWER_BYTES,
  objectUrl,
} from "./dry_run.ts";

const SERVER = "https://kcp.example:6443/clusters/root:org:ws";

Deno.test("objectUrl: /apis/<group>/<version>, /api/v1 for core, namespaces unless cluster-scoped", () => {
  assert.equal(
    objectUrl(SERVER, {
      group: "network.example.com",
      version: "v1alpha1",
      resource: "vpcs",
      namespace: "team-a",
      name: "core",
    }),
    `${SERVER}/apis/network.example.com/v1alpha1/namespaces/team-a/vpcs/core`,
  );
  assert.equal(
    objectUrl(`${SERVER}/`, {
      group: "",
      version: "v1",
      resource: "namespaces",
      namespace: "",
      name: "team-a",
    }),
    `${SERVER}/api/v1/namespaces/team-a`,
  );
  assert.equal(
    objectUrl(SERVER, {
      group: "compute.example.com",
      version: "v1alpha1",
      resource: "vpcattachments",
      namespace: "",
      name: "att-1",
    }),
    `${SERVER}/apis/compute.example.com/v1alpha1/vpcattachments/att-1`,
  );
});

Deno.test("objectUrl: every part is one escaped path segment; . and .. are refused", () => {
  const url = objectUrl(SERVER, {
    group: "g",
    version: "v1",
    resource: "things",
    namespace: "a/b",
    name: "x?dryRun=None#y \u001b",
  });
  assert.equal(
    url,
    `${SERVER}/apis/g/v1/namespaces/a%2Fb/things/x%3FdryRun%3DNone%23y%20%1B`,
  );
  for (const name of ["", ".", ".."]) {
    assert.throws(
      () =>
        objectUrl(SERVER, {
          group: "g",
          version: "v1",
          resource: "things",
          namespace: "",
          name,
        }),
      TypeError,
    );
  }
});

Deno.test("DryRunDeleter: a dry-run DELETE with the identity's token; every answer back whole", async () => {
  const denial = {
    ...status(409, "Conflict", 'admission webhook "d" denied the request'),
    details: { causes: [{ reason: "LockedBy", message: "{}" }] },
  };
  const api = new FakeApi((request) =>
    request.url.pathname.endsWith("/held")
      ? json(denial, 409)
      : request.url.pathname.endsWith("/text")
      ? new Response("upstream gone", { status: 502 })
      : json({ kind: "Thing" })
  );
  const client = new KubeClient(connection(api.url), {
    userAgent: "kubectl-dependencies",
  });
  const deleter = new DryRunDeleter(client);
  try {
    const held = await deleter.ask(`${api.url}/apis/g/v1/things/held`);
    assert.deepEqual(held, { status: 409, body: denial });
    const free = await deleter.ask(`${api.url}/apis/g/v1/things/free`);
    assert.deepEqual(free, { status: 200, body: { kind: "Thing" } });
    const text = await deleter.ask(`${api.url}/apis/g/v1/things/text`);
    assert.equal(text.status, 502);
    assert.match(String(text.body), /upstream gone/);
    for (const request of api.requests) {
      assert.equal(request.method, "DELETE");
      assert.deepEqual([...request.url.searchParams], [["dryRun", "All"]]);
      assert.deepEqual(JSON.parse(request.body), DRY_RUN_DELETE_OPTIONS);
      assert.equal(request.headers.get("authorization"), "Bearer t");
      assert.equal(request.headers.get("user-agent"), "kubectl-dependencies");
    }
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("DryRunDeleter: no answer and a huge answer are errors (exit 2)", async () => {
  const api = new FakeApi(() =>
    new Response("x".repeat(MAX_ANSWER_BYTES + 1), { status: 409 })
  );
  const client = new KubeClient(connection(api.url));
  const deleter = new DryRunDeleter(client);
  const isError = (pattern: RegExp) => (error: unknown) =>
    error instanceof PluginError && error.exitCode === 2 &&
    pattern.test(error.message);
  try {
    await assert.rejects(
      deleter.ask(`${api.url}/apis/g/v1/things/big`),
      isError(/1 MiB|1048576/),
    );
    const port = api.port;
    await api.close();
    await assert.rejects(
      deleter.ask(`http://127.0.0.1:${port}/apis/g/v1/things/x`),
      isError(
        /^cannot reach http:\/\/127\.0\.0\.1:\d+\/apis\/g\/v1\/things\/x: /,
      ),
    );
  } finally {
    client.close();
  }
});
