import assert from "node:assert/strict";
import {
  indexHeapProblem,
  probeVersion,
  quietSince,
  startDependentsIndex,
} from "./index_service.ts";
import { indexKey } from "./index_plan.ts";
import { KubeClient } from "../kcp/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import {
  connection,
  EventStream,
  FakeApi,
  json,
  status,
  streamed,
} from "../../testing/fakes.ts";

const log = createLogger({ level: "error", write: () => {} });
const signal = new AbortController().signal;

Deno.test("probeVersion() reads a list's version, and no version where the shard does not hold the workspace", async () => {
  const seen: string[] = [];
  const api = new FakeApi((request) => {
    const url = new URL(request.url);
    seen.push(`${url.pathname}?${url.searchParams}`);
    const cluster = url.pathname.split("/")[2]!;
    if (cluster === "here") {
      // More pages follow: the probe reads none of them.
      return json({
        metadata: { resourceVersion: "42", continue: "next" },
        items: [{ metadata: { name: "a" } }],
      });
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
    assert.deepEqual(seen, ["/clusters/here/apis/g.example/v1/things?limit=1"]);
    assert.equal(await at("elsewhere"), undefined);
    assert.equal(await at("unserved"), undefined);
    await assert.rejects(at("broken"), /500/);
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("startDependentsIndex() follows each export's endpoint slice and feeds its index from every URL", async () => {
  const requests: string[] = [];
  const api = new FakeApi((request, self) => {
    const url = new URL(request.url);
    const watch = url.searchParams.has("watch");
    requests.push(
      `${url.pathname}${watch ? "?watch" : ""}${
        url.searchParams.has("fieldSelector")
          ? `?${url.searchParams.get("fieldSelector")}`
          : ""
      }`,
    );
    if (watch) return new Response(null);
    if (
      url.pathname ===
        "/clusters/p1/apis/apis.kcp.io/v1alpha1/apiexportendpointslices"
    ) {
      return json({
        metadata: { resourceVersion: "3" },
        items: [{
          metadata: { name: "compute" },
          status: {
            endpoints: [{ url: `${self.url}/services/apiexport/p1/compute` }],
          },
        }],
      });
    }
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
    const dependent = { group: "g.example", version: "v1", resource: "things" };
    const key = indexKey(dependent, "abc");
    service.keeper.update(
      new Map([[key, {
        key,
        dependent,
        identity: "abc",
        export: { workspace: "p1", name: "compute" },
        paths: [],
        pathKeys: [],
      }]]),
    );
    for (let i = 0; i < 200 && service.keeper.ready(key) === undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const ready = service.keeper.ready(key);
    assert.ok(ready, `not ready after: ${requests.join(", ")}`);
    assert.deepEqual(ready.sources, [
      `${api.url}/services/apiexport/p1/compute`,
    ]);
    assert.ok(
      requests.includes(
        "/clusters/p1/apis/apis.kcp.io/v1alpha1/apiexportendpointslices?metadata.name=compute",
      ),
      requests.join(", "),
    );
    assert.ok(
      requests.includes(
        "/services/apiexport/p1/compute/clusters/*/apis/g.example/v1/things",
      ),
      requests.join(", "),
    );
    const versions = await ready.probe("c1", new AbortController().signal);
    assert.deepEqual([...versions.values()], ["7"]);
  } finally {
    await service.stop();
    client.close();
    await api.close();
  }
});

Deno.test("indexHeapProblem() lets the default bound fit the Deployment's heap and refuses one that does not, saying what to change", () => {
  // --max-old-space-size=128 with --max-semi-space-size=2: 134 MiB.
  const deployment = 134 * 2 ** 20;
  assert.equal(indexHeapProblem(100_000, deployment), undefined);
  assert.equal(
    indexHeapProblem(1_000_000, deployment),
    "--index-max-dependents=1000000 needs up to 496 MiB of heap, more than half of the 134 MiB this process may use: lower it (at most 135104 here), or raise --v8-flags=--max-old-space-size to at least 992 and the container's memory limit with it",
  );
  // The largest that fits does; one more does not.
  assert.equal(indexHeapProblem(135_104, deployment), undefined);
  assert.match(indexHeapProblem(135_105, deployment)!, /at most 135104/);
});

Deno.test("quietSince() is true only when something newer than until comes before any change up to it", async () => {
  /** What each watch answers, by the case named in its path. */
  const cases: Record<string, (stream: EventStream) => void> = {
    // kcp's bookmark about a second in: nothing changed.
    bookmark: (s) =>
      s.event("BOOKMARK", { metadata: { resourceVersion: "12" } }),
    // An older bookmark first, then one past until.
    late: (s) => {
      s.event("BOOKMARK", { metadata: { resourceVersion: "9" } });
      s.event("BOOKMARK", { metadata: { resourceVersion: "13" } });
    },
    // A change past until: everything up to it came before.
    after: (s) => s.event("ADDED", { metadata: { resourceVersion: "11" } }),
    // A bookmark exactly at until: everything up to it was sent.
    at: (s) => s.event("BOOKMARK", { metadata: { resourceVersion: "10" } }),
    // A change exactly at until, or below: not quiet.
    exact: (s) => s.event("ADDED", { metadata: { resourceVersion: "10" } }),
    changed: (s) => s.event("MODIFIED", { metadata: { resourceVersion: "8" } }),
    deleted: (s) => s.event("DELETED", { metadata: { resourceVersion: "10" } }),
    // since too old for kcp's watch cache.
    expired: (s) =>
      s.event("ERROR", status(410, "Expired", "too old resource version")),
    // The watch ends with nothing.
    ended: () => {},
    odd: (s) =>
      s.event("BOOKMARK", { metadata: { resourceVersion: "not-a-number" } }),
  };
  const seen: string[] = [];
  const api = new FakeApi((request, self) => {
    const url = new URL(request.url);
    seen.push(url.search);
    const name = url.pathname.split("/")[2]!;
    const stream = new EventStream();
    self.streams.push(stream);
    cases[name]!(stream);
    if (name === "ended") stream.end();
    return streamed(stream);
  });
  const client = new KubeClient(connection(api.url));
  try {
    const quiet = (name: string) =>
      quietSince(
        client,
        `${api.url}/clusters/${name}/apis/g.example/v1/things`,
        {
          since: "7",
          until: "10",
          signal,
        },
      );
    assert.equal(await quiet("bookmark"), true);
    assert.equal(
      seen[0],
      "?watch=true&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=7",
    );
    assert.equal(await quiet("late"), true);
    assert.equal(await quiet("after"), true);
    assert.equal(await quiet("at"), true);
    assert.equal(await quiet("exact"), false);
    assert.equal(await quiet("changed"), false);
    assert.equal(await quiet("deleted"), false);
    assert.equal(await quiet("expired"), false);
    assert.equal(await quiet("ended"), false);
    assert.equal(await quiet("odd"), false);
  } finally {
    client.close();
    await api.close();
  }
});
