import assert from "node:assert/strict";
import { probeVersion, startDependentsIndex } from "./index_service.ts";
import { indexKey } from "./index_plan.ts";
import { KubeClient } from "../kcp/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import { connection, FakeApi, json, status } from "../../testing/mod.ts";

const log = createLogger({ level: "error", write: () => {} });
const signal = new AbortController().signal;

Deno.test("probeVersion() reads a list's version, and no version where the shard does not hold the workspace", async () => {
  const seen: string[] = [];
  const api = new FakeApi((request) => {
    const url = new URL(request.url);
    seen.push(`${url.pathname}?${url.searchParams}`);
    const cluster = url.pathname.split("/")[2]!;
    if (cluster === "here") {
      return json({ metadata: { resourceVersion: "42" }, items: [] });
    }
    if (cluster === "elsewhere") {
      return json(status(403, "Forbidden", "no such workspace"), 403);
    }
    if (cluster === "unserved") {
      return json(status(404, "NotFound", "the server could not find"), 404);
    }
    return json(status(500, "InternalError", "boom"), 500);
  });
  const client = new KubeClient(connection(api.url));
  try {
    const at = (cluster: string) =>
      probeVersion(
        client,
        `${api.url}/clusters/${cluster}/apis/g.example/v1/things`,
        { signal, maxBytes: 1 << 20 },
      );
    assert.equal(await at("here"), "42");
    assert.equal(seen[0], "/clusters/here/apis/g.example/v1/things?limit=1");
    assert.equal(await at("elsewhere"), undefined);
    assert.equal(await at("unserved"), undefined);
    await assert.rejects(at("broken"), /500/);
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("startDependentsIndex() follows the root workspace's Shards and feeds an index from each", async () => {
  const requests: string[] = [];
  const api = new FakeApi((request, self) => {
    const url = new URL(request.url);
    requests.push(
      url.pathname + (url.searchParams.has("watch") ? "?watch" : ""),
    );
    if (url.pathname === "/clusters/root/apis/core.kcp.io/v1alpha1/shards") {
      if (url.searchParams.has("watch")) return new Response(null);
      return json({
        metadata: { resourceVersion: "3" },
        items: [{
          metadata: { name: "root" },
          spec: { baseURL: self.url },
        }],
      });
    }
    if (url.searchParams.has("watch")) return new Response(null);
    return json({ metadata: { resourceVersion: "7" }, items: [] });
  });
  const client = new KubeClient(connection(api.url));
  const service = startDependentsIndex({
    client,
    reviewClient: client,
    base: api.url,
    pageSize: 10,
    maxPageBytes: 1 << 20,
    maxDependents: 10,
    allowInsecureHttp: true,
    log,
    observe: () => {},
  });
  try {
    const key = indexKey(
      { group: "g.example", version: "v1", resource: "things" },
      "abc",
    );
    service.keeper.update(
      new Map([[key, {
        key,
        dependent: { group: "g.example", version: "v1", resource: "things" },
        identity: "abc",
        paths: [],
        pathKeys: [],
      }]]),
    );
    service.start();
    for (let i = 0; i < 200 && service.keeper.ready(key) === undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const ready = service.keeper.ready(key);
    assert.ok(ready, `not ready after: ${requests.join(", ")}`);
    assert.deepEqual(ready.sources, ["root"]);
    assert.ok(
      requests.includes("/clusters/*/apis/g.example/v1/things:abc"),
      requests.join(", "),
    );
  } finally {
    await service.stop();
    client.close();
    await api.close();
  }
});
