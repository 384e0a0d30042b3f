import assert from "node:assert/strict";
import {
  connection,
  FakeApi,
  json,
  logCollector,
  status,
  waitUntil,
} from "../../testing/fakes.ts";
import { createLogger } from "../runtime/mod.ts";
import {
  checkExportAccess,
  watchExportAccess,
  workspaceOf,
} from "./export_access.ts";
import { KubeClient } from "./kube_client.ts";

const SLICE_PATH =
  "/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/dependencies.opendefense.cloud";

/** A fake kcp answering `answer()` to every request, and a client of it. */
async function withKcp(
  answer: () => Response,
  fn: (api: FakeApi, client: KubeClient, server: string) => Promise<void>,
): Promise<void> {
  const api = new FakeApi(answer);
  const server = `${api.url}/clusters/root`;
  const client = new KubeClient(connection(server));
  try {
    await fn(api, client, server);
  } finally {
    client.close();
    await api.close();
  }
}

const FORBIDDEN = () =>
  json(
    status(
      403,
      "Forbidden",
      'apiexportendpointslices.apis.kcp.io "dependencies.opendefense.cloud" is forbidden: User "dependency-webhook" cannot get resource "apiexportendpointslices" in API group "apis.kcp.io" at the cluster scope: access denied',
    ),
    403,
  );
const UNAUTHORIZED = () =>
  json(status(401, "Unauthorized", "Unauthorized"), 401);

function target(server: string) {
  return {
    workspaceUrl: server,
    apiExportName: "dependencies.opendefense.cloud",
    kubeconfig: "webhook.kubeconfig",
  };
}

Deno.test("checkExportAccess() reads the slice by name and says what a 403 means in one sentence", async () => {
  await withKcp(FORBIDDEN, async (api, client, server) => {
    const problem = await checkExportAccess(client, target(server));
    assert.equal(api.requests[0]!.url.pathname, `/clusters/root${SLICE_PATH}`);
    assert.deepEqual(problem, {
      status: 403,
      message:
        "kcp answered 403 Forbidden when user dependency-webhook read the APIExportEndpointSlice dependencies.opendefense.cloud in workspace root: check that the server of kubeconfig webhook.kubeconfig is the dep-ctrl workspace (it ends in /clusters/root:dep-ctrl), that its user is the one manifests/kcp/dep-ctrl binds (dependency-controller or dependency-webhook), and that those manifests are applied there",
    });
  });
});

Deno.test("checkExportAccess() says a 401 is the kubeconfig's credentials", async () => {
  await withKcp(UNAUTHORIZED, async (_api, client, server) => {
    const problem = await checkExportAccess(client, target(server));
    assert.equal(problem?.status, 401);
    assert.equal(
      problem?.message,
      "kcp answered 401 Unauthorized when reading the APIExportEndpointSlice dependencies.opendefense.cloud in workspace root: it does not accept the credentials of kubeconfig webhook.kubeconfig, so check its token (kcp's --token-auth-file) or client certificate (kcp's client CA)",
    );
  });
});

Deno.test("checkExportAccess() leaves every other answer to the watches", async () => {
  for (
    const answer of [
      () => json({ kind: "APIExportEndpointSlice" }),
      () => json(status(404, "NotFound", "not found"), 404),
      () => json(status(500, "InternalError", "boom"), 500),
    ]
  ) {
    await withKcp(answer, async (_api, client, server) => {
      assert.equal(await checkExportAccess(client, target(server)), undefined);
    });
  }
});

Deno.test("workspaceOf() names the workspace of a server URL, or says it has none", () => {
  assert.equal(
    workspaceOf("https://kcp:6443/clusters/root:dep-ctrl"),
    "workspace root:dep-ctrl",
  );
  assert.equal(
    workspaceOf("https://kcp:6443"),
    "no workspace (the server URL has no /clusters/<path>)",
  );
});

Deno.test("watchExportAccess() fails fast on a 401", async () => {
  await withKcp(UNAUTHORIZED, async (api, client, server) => {
    const logs = logCollector();
    await assert.rejects(
      watchExportAccess(client, {
        ...target(server),
        log: createLogger({ write: logs.write }),
      }),
      /^Error: kcp answered 401 Unauthorized when reading/,
    );
    assert.equal(api.requests.length, 1);
  });
});

Deno.test("watchExportAccess() logs a 403 at once, again every repeatMs, and stops once the slice can be read", async () => {
  let answer = FORBIDDEN;
  await withKcp(() => answer(), async (api, client, server) => {
    const logs = logCollector();
    const watch = await watchExportAccess(client, {
      ...target(server),
      log: createLogger({ write: logs.write }),
      repeatMs: 20,
    });
    try {
      const errors = () => logs.records.filter((r) => r.level === "error");
      assert.equal(errors().length, 1);
      assert.match(String(errors()[0]!.msg), /^kcp answered 403 Forbidden/);
      await waitUntil("the 403 logged again", () => errors().length >= 2);
      answer = () => json({ kind: "APIExportEndpointSlice" });
      await waitUntil(
        "readable logged",
        () => logs.records.some((r) => /can be read now/.test(String(r.msg))),
      );
      const asked = api.requests.length;
      await new Promise((resolve) => setTimeout(resolve, 60));
      assert.equal(api.requests.length, asked);
    } finally {
      await watch.stop();
    }
  });
});

Deno.test("watchExportAccess() asks once and logs nothing when the slice can be read", async () => {
  await withKcp(
    () => json({ kind: "APIExportEndpointSlice" }),
    async (api, client, server) => {
      const logs = logCollector();
      const watch = await watchExportAccess(client, {
        ...target(server),
        log: createLogger({ write: logs.write }),
        repeatMs: 10,
      });
      await new Promise((resolve) => setTimeout(resolve, 40));
      await watch.stop();
      assert.equal(api.requests.length, 1);
      assert.deepEqual(logs.records, []);
    },
  );
});
