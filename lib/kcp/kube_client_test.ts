import assert from "node:assert/strict";
import {
  connection,
  delay,
  type EventStream,
  FakeApi,
  type FakeHandler,
  json,
  status,
  streamed,
  waitUntil,
} from "../../testing/fakes.ts";
import {
  KubeApiError,
  REDIRECT_REFUSED,
  RESPONSE_BUDGET_EXHAUSTED,
  RESPONSE_TOO_LARGE,
} from "./kube_api_error.ts";
import { KubeClient } from "./kube_client.ts";
import type { KubeClientOptions, KubeList, WatchEvent } from "./kube_types.ts";
import { estimateMemory } from "./response_body.ts";
import { Semaphore } from "../runtime/mod.ts";

/** Runs `fn` with a fake API and a client of it, and cleans both up. */
async function withApi(
  handler: FakeHandler,
  fn: (api: FakeApi, client: KubeClient) => Promise<void>,
  options: KubeClientOptions = {},
): Promise<void> {
  const api = new FakeApi(handler);
  const client = new KubeClient(connection(api.url), options);
  try {
    await fn(api, client);
  } finally {
    client.close();
    await api.close();
  }
}

/** The KubeApiError `promise` rejects with. */
async function apiError(promise: Promise<unknown>): Promise<KubeApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(
      error instanceof KubeApiError,
      `expected a KubeApiError, got ${String(error)}`,
    );
    return error;
  }
  assert.fail("expected a rejection");
}

/** A watch answered by a fresh stream (kept in `api.streams`). */
const watchStream: FakeHandler = (_request, api) => streamed(api.stream());

function configMap(name: string, resourceVersion: string) {
  return { metadata: { name, namespace: "default", resourceVersion } };
}

Deno.test("KubeClient.request() sends the bearer token, accept and user-agent headers and decodes JSON", async () => {
  await withApi(
    () => json({ kind: "Thing", spec: { n: 1 } }),
    async (api, client) => {
      const answer = await client.request<
        { kind: string; spec: { n: number } }
      >(
        "GET",
        `${api.url}/apis/g/v1/things/a`,
      );
      assert.deepEqual(answer, { kind: "Thing", spec: { n: 1 } });
      const [seen] = api.requests;
      assert.ok(seen);
      assert.equal(seen.method, "GET");
      assert.equal(seen.url.pathname, "/apis/g/v1/things/a");
      assert.equal(seen.headers.get("authorization"), "Bearer t");
      assert.equal(seen.headers.get("accept"), "application/json");
      assert.equal(seen.headers.get("user-agent"), "dependency-controller");
      assert.equal(seen.headers.get("content-type"), null);
    },
  );
});

Deno.test("KubeClient.request() sends a JSON body with its content type and the configured user agent", async () => {
  await withApi(() => json({ ok: true }, 201), async (api, client) => {
    const answer = await client.request("PATCH", `${api.url}/x`, {
      body: { spec: { replicas: 2 } },
      contentType: "application/merge-patch+json",
    });
    assert.deepEqual(answer, { ok: true });
    const [seen] = api.requests;
    assert.ok(seen);
    assert.equal(seen.method, "PATCH");
    assert.equal(
      seen.headers.get("content-type"),
      "application/merge-patch+json",
    );
    assert.deepEqual(JSON.parse(seen.body), { spec: { replicas: 2 } });
    assert.equal(seen.headers.get("user-agent"), "dep-test/1");
  }, { userAgent: "dep-test/1" });
});

Deno.test("KubeClient.request() sends no authorization header without a token", async () => {
  const api = new FakeApi(() => json({}));
  const client = new KubeClient({
    server: api.url,
    base: api.url,
    insecureSkipTlsVerify: false,
    allowInsecureHttp: true,
  });
  try {
    await client.get(`${api.url}/x`);
    assert.equal(api.requests[0]?.headers.get("authorization"), null);
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("KubeClient.request() returns undefined for an empty 2xx body", async () => {
  await withApi(
    () => new Response(null, { status: 204 }),
    async (api, client) => {
      assert.equal(await client.request("DELETE", `${api.url}/x`), undefined);
    },
  );
});

Deno.test("KubeClient.request() turns a 404 Status into a notFound KubeApiError with the server's message", async () => {
  await withApi(
    () => json(status(404, "NotFound", 'things.g "a" not found'), 404),
    async (api, client) => {
      const error = await apiError(client.get(`${api.url}/apis/g/v1/things/a`));
      assert.equal(error.name, "KubeApiError");
      assert.equal(error.status, 404);
      assert.equal(error.reason, "NotFound");
      assert.equal(error.notFound, true);
      assert.equal(error.gone, false);
      assert.match(error.message, /things\.g "a" not found/);
      assert.match(
        error.message,
        /^GET http:\/\/127\.0\.0\.1:\d+\/apis\/g\/v1\/things\/a: 404: /,
      );
    },
  );
});

Deno.test("KubeClient.request() keeps a non-JSON error body in the message", async () => {
  await withApi(
    () => new Response("upstream connect error\n", { status: 502 }),
    async (api, client) => {
      const error = await apiError(client.get(`${api.url}/x`));
      assert.equal(error.status, 502);
      assert.equal(error.reason, "");
      assert.equal(error.notFound, false);
      assert.match(error.message, /: 502: upstream connect error$/);
    },
  );
});

Deno.test("KubeClient.request() says (no message) for an empty error body", async () => {
  await withApi(
    () => new Response("", { status: 503 }),
    async (api, client) => {
      const error = await apiError(client.get(`${api.url}/x`));
      assert.equal(error.status, 503);
      assert.match(error.message, /: 503: \(no message\)$/);
    },
  );
});

Deno.test("KubeClient.request() survives an error body that is JSON but not an object", async () => {
  await withApi(
    () => new Response("null", { status: 500 }),
    async (api, client) => {
      const error = await apiError(client.get(`${api.url}/x`));
      assert.equal(error.status, 500);
      assert.equal(error.reason, "");
      assert.match(error.message, /: 500: null$/);
    },
  );
});

Deno.test("KubeClient.request() marks a 410 as gone", async () => {
  await withApi(
    () => json(status(410, "Gone", "too old resource version: 1 (5)"), 410),
    async (api, client) => {
      const error = await apiError(client.get(`${api.url}/x`));
      assert.equal(error.status, 410);
      assert.equal(error.gone, true);
      assert.equal(error.notFound, false);
    },
  );
});

Deno.test("KubeClient.request() marks reason Expired as gone whatever the status", async () => {
  await withApi(
    () =>
      json(
        status(500, "Expired", "The provided continue parameter is too old"),
        500,
      ),
    async (api, client) => {
      const error = await apiError(client.get(`${api.url}/x`));
      assert.equal(error.status, 500);
      assert.equal(error.reason, "Expired");
      assert.equal(error.gone, true);
    },
  );
});

Deno.test("KubeClient.request() fails with status 0 and reason Timeout when the server never answers", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  await withApi(async () => {
    await released;
    return json({});
  }, async (api, client) => {
    try {
      const error = await apiError(client.get(`${api.url}/slow`));
      assert.equal(error.status, 0);
      assert.equal(error.reason, "Timeout");
      assert.match(error.message, /no answer within 50 ms/);
    } finally {
      release();
    }
  }, { timeoutMs: 50 });
});

Deno.test("KubeClient.request() timeoutMs option overrides the client's deadline", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  await withApi(async () => {
    await released;
    return json({});
  }, async (api, client) => {
    try {
      const error = await apiError(
        client.get(`${api.url}/slow`, { timeoutMs: 30 }),
      );
      assert.equal(error.reason, "Timeout");
      assert.match(error.message, /no answer within 30 ms/);
    } finally {
      release();
    }
  });
});

Deno.test("KubeClient.request() aborted by the caller fails with status 0 and no Timeout reason", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  await withApi(async () => {
    await released;
    return json({});
  }, async (api, client) => {
    const abort = new AbortController();
    try {
      const pending = apiError(
        client.get(`${api.url}/slow`, { signal: abort.signal }),
      );
      await waitUntil("the request to arrive", () => api.requests.length === 1);
      abort.abort();
      const error = await pending;
      assert.equal(error.status, 0);
      assert.equal(error.reason, "");
    } finally {
      release();
    }
  });
});

Deno.test("KubeClient.request() fails with status 0 when the connection is refused", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const url = `http://127.0.0.1:${port}`;
  const client = new KubeClient(connection(url));
  try {
    const error = await apiError(client.get(`${url}/x`));
    assert.equal(error.status, 0);
    assert.notEqual(error.reason, "Timeout");
    assert.ok(error.message.startsWith(`GET ${url}/x: `), error.message);
    assert.notEqual(error.cause, undefined);
  } finally {
    client.close();
  }
});

Deno.test("new KubeClient() refuses a connection that skips TLS verification", () => {
  assert.throws(
    () =>
      new KubeClient({
        server: "https://kcp.example",
        base: "https://kcp.example",
        insecureSkipTlsVerify: true,
      }),
    TypeError,
  );
});

Deno.test("new KubeClient() refuses a plain http server unless allowInsecureHttp says so", () => {
  assert.throws(
    () =>
      new KubeClient({
        server: "http://kcp.example/clusters/root",
        base: "http://kcp.example",
        insecureSkipTlsVerify: false,
        token: "secret",
      }),
    /Cannot talk to kcp over plain http \(http:\/\/kcp\.example\/clusters\/root\): the credentials would travel in clear; use https, or --allow-insecure-http/,
  );
});

Deno.test("KubeClient.request() refuses a plain http URL of an https client and sends nothing", async () => {
  const api = new FakeApi(() => json({}));
  const client = new KubeClient({
    server: "https://kcp.example",
    base: "https://kcp.example",
    insecureSkipTlsVerify: false,
    token: "secret",
  });
  try {
    await assert.rejects(client.get(`${api.url}/x`), (error: unknown) => {
      assert.ok(error instanceof KubeApiError);
      assert.equal(error.reason, "InsecureUrl");
      return true;
    });
    assert.equal(api.requests.length, 0);
  } finally {
    client.close();
    await api.close();
  }
});

Deno.test("KubeClient.listPages() follows continue tokens lazily with limit and selectors in the query", async () => {
  const pages: KubeList[] = [
    {
      metadata: { resourceVersion: "10", continue: "tok/1+=" },
      items: [configMap("a", "1")],
    },
    {
      metadata: { resourceVersion: "10", continue: "tok2" },
      items: [configMap("b", "2"), configMap("c", "3")],
    },
    { metadata: { resourceVersion: "10" }, items: [configMap("d", "4")] },
  ];
  await withApi((request) => {
    const token = request.url.searchParams.get("continue");
    const index = token === null ? 0 : token === "tok/1+=" ? 1 : 2;
    return json(pages[index]);
  }, async (api, client) => {
    const iterator = client.listPages(`${api.url}/api/v1/configmaps`, {
      limit: 2,
      labelSelector: "app=web",
      fieldSelector: "metadata.namespace=default",
    });
    assert.equal(api.requests.length, 0, "nothing is requested before next()");
    const first = await iterator.next();
    assert.deepEqual(
      first.value?.items.map((i: { metadata?: { name?: string } }) =>
        i.metadata?.name
      ),
      ["a"],
    );
    assert.equal(api.requests.length, 1, "page 2 is not requested early");
    const second = await iterator.next();
    assert.deepEqual(
      second.value?.items.map((i: { metadata?: { name?: string } }) =>
        i.metadata?.name
      ),
      ["b", "c"],
    );
    assert.equal(api.requests.length, 2);
    const third = await iterator.next();
    assert.deepEqual(
      third.value?.items.map((i: { metadata?: { name?: string } }) =>
        i.metadata?.name
      ),
      ["d"],
    );
    assert.equal((await iterator.next()).done, true);
    assert.equal(api.requests.length, 3);

    const queries = api.requests.map((r) => r.url.searchParams);
    for (const query of queries) {
      assert.equal(query.get("limit"), "2");
      assert.equal(query.get("labelSelector"), "app=web");
      assert.equal(query.get("fieldSelector"), "metadata.namespace=default");
    }
    assert.deepEqual(queries.map((q) => q.get("continue")), [
      null,
      "tok/1+=",
      "tok2",
    ]);
  });
});

Deno.test("KubeClient.listPages() appends to a URL that already has a query and defaults the limit to 500", async () => {
  await withApi(
    () => json({ metadata: {}, items: [] }),
    async (api, client) => {
      const pages = [];
      for await (const page of client.listPages(`${api.url}/things?x=1`)) {
        pages.push(page);
      }
      assert.equal(pages.length, 1);
      const [seen] = api.requests;
      assert.equal(seen?.url.searchParams.get("x"), "1");
      assert.equal(seen?.url.searchParams.get("limit"), "500");
    },
  );
});

Deno.test("KubeClient.listPages() fills in missing items and metadata", async () => {
  await withApi(() => json({ kind: "ThingList" }), async (api, client) => {
    const pages = [];
    for await (const page of client.listPages(`${api.url}/things`)) {
      pages.push(page);
    }
    assert.deepEqual(pages, [{ kind: "ThingList", items: [], metadata: {} }]);
  });
});

Deno.test("KubeClient.list() concatenates pages, fills apiVersion and kind, returns the last resourceVersion", async () => {
  await withApi((request) => {
    const second = request.url.searchParams.get("continue") === "next";
    return json(
      second
        ? {
          apiVersion: "g/v1",
          kind: "ThingList",
          metadata: { resourceVersion: "22" },
          items: [
            { apiVersion: "g/v2", kind: "Other", metadata: { name: "c" } },
          ],
        }
        : {
          apiVersion: "g/v1",
          kind: "ThingList",
          metadata: { resourceVersion: "21", continue: "next" },
          items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }],
        },
    );
  }, async (api, client) => {
    const list = await client.list(`${api.url}/apis/g/v1/things`);
    assert.deepEqual(list, {
      apiVersion: "g/v1",
      metadata: { resourceVersion: "22" },
      items: [
        { apiVersion: "g/v1", kind: "Thing", metadata: { name: "a" } },
        { apiVersion: "g/v1", kind: "Thing", metadata: { name: "b" } },
        { apiVersion: "g/v2", kind: "Other", metadata: { name: "c" } },
      ],
    });
    assert.equal(api.requests.length, 2);
  });
});

Deno.test("KubeClient.list() keeps at most maxItems items over all pages, and stops reading past them", async () => {
  await withApi(
    (request) => {
      const page = Number(request.url.searchParams.get("continue") ?? "0");
      return json({
        metadata: { continue: String(page + 1) },
        items: [{ metadata: { name: `a${page}` } }, {
          metadata: { name: `b${page}` },
        }],
      });
    },
    async (api, client) => {
      const error = await apiError(
        client.list(`${api.url}/things`, { maxItems: 5 }),
      );
      assert.equal(error.reason, RESPONSE_TOO_LARGE);
      assert.match(error.message, /more than 5 items/);
      // Pages of 2: the third page would make 6.
      assert.equal(api.requests.length, 3);
    },
  );
});

Deno.test("KubeClient.list() fails with the failing page's KubeApiError", async () => {
  await withApi(
    (request) =>
      request.url.searchParams.has("continue")
        ? json(status(410, "Expired", "continue token too old"), 410)
        : json({ metadata: { continue: "c" }, items: [{}] }),
    async (api, client) => {
      const error = await apiError(client.list(`${api.url}/things`));
      assert.equal(error.status, 410);
      assert.equal(error.gone, true);
    },
  );
});

Deno.test("KubeClient.watch() passes watch, allowWatchBookmarks, timeoutSeconds, resourceVersion and fieldSelector", async () => {
  await withApi(watchStream, async (api, client) => {
    const events = client.watch(`${api.url}/apis/g/v1/things`, {
      resourceVersion: "42",
      fieldSelector: "metadata.name=x",
      timeoutSeconds: 7,
    });
    const next = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    api.streams[0]!.end();
    assert.equal((await next).done, true);
    const query = api.requests[0]!.url.searchParams;
    assert.equal(query.get("watch"), "true");
    assert.equal(query.get("allowWatchBookmarks"), "true");
    assert.equal(query.get("timeoutSeconds"), "7");
    assert.equal(query.get("resourceVersion"), "42");
    assert.equal(query.get("fieldSelector"), "metadata.name=x");
    assert.equal(api.requests[0]!.headers.get("authorization"), "Bearer t");
  });
});

Deno.test("KubeClient.watch() defaults timeoutSeconds to 300 and sends no resourceVersion when none is given", async () => {
  await withApi(watchStream, async (api, client) => {
    const events = client.watch(`${api.url}/things`);
    const next = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    api.streams[0]!.end();
    assert.equal((await next).done, true);
    const query = api.requests[0]!.url.searchParams;
    assert.equal(query.get("timeoutSeconds"), "300");
    assert.equal(query.has("resourceVersion"), false);
    assert.equal(query.has("fieldSelector"), false);
  });
});

Deno.test("KubeClient.watch() parses events split across arbitrary chunk boundaries", async () => {
  await withApi(watchStream, async (api, client) => {
    const events = client.watch(`${api.url}/things`);
    const first = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    const stream = api.streams[0]!;
    // One event in three chunks, the middle one splitting a multi-byte
    // character (the e-acute of the name) between two of its bytes.
    const line = new TextEncoder().encode(
      `${
        JSON.stringify({
          type: "ADDED",
          object: { metadata: { name: "caf\u00e9", resourceVersion: "5" } },
        })
      }\n`,
    );
    const split = line.indexOf(0xc3) + 1;
    stream.send(line.slice(0, 10));
    await delay(10);
    stream.send(line.slice(10, split));
    await delay(10);
    stream.send(line.slice(split));
    const added = await first;
    assert.deepEqual(added.value, {
      type: "ADDED",
      object: { metadata: { name: "caf\u00e9", resourceVersion: "5" } },
    });
    // Two events and blank lines in one chunk, the last without a newline.
    stream.send(
      `\n${
        JSON.stringify({
          type: "MODIFIED",
          object: { metadata: { name: "b", resourceVersion: "6" } },
        })
      }\r\n  \n${
        JSON.stringify({
          type: "BOOKMARK",
          object: { metadata: { resourceVersion: "7" } },
        })
      }`,
    );
    stream.end();
    const rest: WatchEvent[] = [];
    for await (const event of events) rest.push(event);
    assert.deepEqual(rest, [
      {
        type: "MODIFIED",
        object: { metadata: { name: "b", resourceVersion: "6" } },
      },
      { type: "BOOKMARK", object: { metadata: { resourceVersion: "7" } } },
    ]);
  });
});

Deno.test("KubeClient.watch() throws a gone KubeApiError on an ERROR event with a 410 Status", async () => {
  await withApi(watchStream, async (api, client) => {
    const events = client.watch(`${api.url}/things`, { resourceVersion: "1" });
    const pending = apiError((async () => {
      for await (const _ of events) { /* drain */ }
    })());
    await waitUntil("the watch request", () => api.streams.length === 1);
    const stream = api.streams[0]!;
    stream.event("ADDED", { metadata: { name: "a", resourceVersion: "2" } });
    stream.event(
      "ERROR",
      status(410, "Expired", "too old resource version: 1 (40)"),
    );
    const error = await pending;
    assert.equal(error.status, 410);
    assert.equal(error.reason, "Expired");
    assert.equal(error.gone, true);
    assert.match(error.message, /too old resource version: 1 \(40\)/);
    await stream.closed;
    assert.equal(stream.cancelled, true, "the client hangs up the stream");
  });
});

Deno.test("KubeClient.watch() throws a KubeApiError that is not gone on an ERROR event with a 500 Status", async () => {
  await withApi(watchStream, async (api, client) => {
    const pending = apiError((async () => {
      for await (const _ of client.watch(`${api.url}/things`)) { /* drain */ }
    })());
    await waitUntil("the watch request", () => api.streams.length === 1);
    api.streams[0]!.event("ERROR", status(500, "InternalError", "etcd down"));
    const error = await pending;
    assert.equal(error.status, 500);
    assert.equal(error.reason, "InternalError");
    assert.equal(error.gone, false);
    assert.match(error.message, /etcd down/);
  });
});

Deno.test("KubeClient.watch() throws gone when the watch request itself answers 410", async () => {
  await withApi(
    () => json(status(410, "Gone", "too old resource version"), 410),
    async (api, client) => {
      const error = await apiError(
        client.watch(`${api.url}/things`, { resourceVersion: "1" }).next(),
      );
      assert.equal(error.status, 410);
      assert.equal(error.gone, true);
      assert.match(error.message, /^WATCH /);
    },
  );
});

Deno.test("KubeClient.watch() fails with status 0 on a line that is not JSON", async () => {
  await withApi(watchStream, async (api, client) => {
    const pending = apiError((async () => {
      for await (const _ of client.watch(`${api.url}/things`)) { /* drain */ }
    })());
    await waitUntil("the watch request", () => api.streams.length === 1);
    api.streams[0]!.send("<html>proxy error</html>\n");
    const error = await pending;
    assert.equal(error.status, 0);
    assert.ok(error.cause instanceof SyntaxError);
  });
});

Deno.test("KubeClient.watch() ends quietly when its signal aborts", async () => {
  await withApi(watchStream, async (api, client) => {
    const abort = new AbortController();
    const events = client.watch(`${api.url}/things`, { signal: abort.signal });
    const first = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    const stream = api.streams[0]!;
    stream.event("ADDED", { metadata: { name: "a", resourceVersion: "2" } });
    assert.equal((await first).value?.type, "ADDED");
    const second = events.next();
    abort.abort();
    assert.deepEqual(await second, { done: true, value: undefined });
    await stream.closed;
    assert.equal(stream.cancelled, true, "the server sees the client go");
  });
});

Deno.test("KubeClient.watch() with an already aborted signal yields nothing and does not throw", async () => {
  await withApi(watchStream, async (api, client) => {
    const events: WatchEvent[] = [];
    for await (
      const event of client.watch(`${api.url}/things`, {
        signal: AbortSignal.abort(),
      })
    ) events.push(event);
    assert.deepEqual(events, []);
    assert.equal(api.requests.length, 0);
  });
});

Deno.test("KubeClient.watch() fails with status 0 when the connection is refused", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${listener.addr.port}`;
  listener.close();
  const client = new KubeClient(connection(url));
  try {
    const error = await apiError(client.watch(`${url}/things`).next());
    assert.equal(error.status, 0);
  } finally {
    client.close();
  }
});

Deno.test("KubeClient.watch() keeps streaming past the client's per-request timeoutMs", async () => {
  // A watch lasts up to timeoutSeconds (300 s by default); the request
  // deadline (timeoutMs, 10 s by default) should bound getting the answer's
  // headers, not the life of the stream.
  let stream: EventStream | undefined;
  await withApi(watchStream, async (api, client) => {
    const events = client.watch(`${api.url}/things`, { timeoutSeconds: 60 });
    const first = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    stream = api.streams[0]!;
    stream.event("ADDED", { metadata: { name: "a", resourceVersion: "2" } });
    assert.equal((await first).value?.type, "ADDED");
    const second = events.next().then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    // Let the 1 s request deadline pass while the watch is idle (the
    // deadline is generous so a busy machine still delivers the headers).
    await delay(1_500);
    if (stream.open) {
      stream.event("MODIFIED", {
        metadata: { name: "a", resourceVersion: "3" },
      });
    }
    const outcome = await second;
    assert.ok(
      "result" in outcome,
      `the watch failed after the request deadline: ${
        "error" in outcome ? String(outcome.error) : ""
      }`,
    );
    assert.equal(outcome.result.value?.type, "MODIFIED");
    stream.end();
    assert.equal((await events.next()).done, true);
  }, { timeoutMs: 1_000 });
});

Deno.test("KubeClient.watch() with sendInitialEvents asks for them with resourceVersionMatch=NotOlderThan", async () => {
  await withApi(watchStream, async (api, client) => {
    const events = client.watch(`${api.url}/things`, {
      sendInitialEvents: true,
      resourceVersion: "9",
    });
    const next = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    api.streams[0]!.end();
    assert.equal((await next).done, true);
    const query = api.requests[0]!.url.searchParams;
    assert.equal(query.get("sendInitialEvents"), "true");
    assert.equal(query.get("resourceVersionMatch"), "NotOlderThan");
    assert.equal(query.get("allowWatchBookmarks"), "true");
    assert.equal(query.get("resourceVersion"), "9");
  });
  await withApi(watchStream, async (api, client) => {
    const events = client.watch(`${api.url}/things`, {
      sendInitialEvents: false,
    });
    const next = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    api.streams[0]!.end();
    assert.equal((await next).done, true);
    const query = api.requests[0]!.url.searchParams;
    assert.equal(query.has("sendInitialEvents"), false);
    assert.equal(query.has("resourceVersionMatch"), false);
  });
});

Deno.test("KubeClient.watch() with maxLineBytes yields events up to it and fails with ResponseTooLarge on a larger one, hanging up", async () => {
  await withApi(watchStream, async (api, client) => {
    const small = { metadata: { name: "a", resourceVersion: "2" } };
    const line = JSON.stringify({ type: "ADDED", object: small });
    const events = client.watch(`${api.url}/things`, {
      maxLineBytes: line.length,
    });
    const first = events.next();
    await waitUntil("the watch request", () => api.streams.length === 1);
    const stream = api.streams[0]!;
    stream.event("ADDED", small);
    assert.deepEqual((await first).value, { type: "ADDED", object: small });
    // One byte more, sent in pieces that never end the line.
    const second = apiError(events.next());
    stream.send(line.slice(0, 10));
    await delay(10);
    stream.send(`${line.slice(10)}x`);
    const error = await second;
    assert.equal(error.reason, RESPONSE_TOO_LARGE);
    assert.equal(error.status, 200);
    assert.equal(
      error.message,
      `WATCH ${api.url}/things: a line of the stream is over ${line.length} bytes; stopped reading it`,
    );
    await stream.closed;
    assert.equal(stream.cancelled, true, "the client hangs up the stream");
  });
});

Deno.test("KubeClient.watch() bounds events at 8 MiB by default", async () => {
  await withApi(watchStream, async (api, client) => {
    const pending = apiError((async () => {
      for await (const _ of client.watch(`${api.url}/things`)) { /* drain */ }
    })());
    await waitUntil("the watch request", () => api.streams.length === 1);
    const stream = api.streams[0]!;
    const chunk = "x".repeat(1024 * 1024);
    // The first 8 MiB of an event that would never end.
    for (let i = 0; i < 9 && stream.open; i++) {
      stream.send(i === 0 ? `{"type":"ADDED","object":"${chunk}` : chunk);
      await delay(1);
    }
    const error = await pending;
    assert.equal(error.reason, RESPONSE_TOO_LARGE);
    assert.match(error.message, /over 8 MiB/);
  });
});

Deno.test("KubeClient.watch() reads an error answer up to maxLineBytes", async () => {
  const sent: Sent = { bytes: 0, cancelled: false };
  await withApi(
    () => {
      const response = endless(sent);
      return new Response(response.body, { status: 500 });
    },
    async (api, client) => {
      const error = await apiError(
        client.watch(`${api.url}/things`, { maxLineBytes: 1024 * 1024 })
          .next(),
      );
      assert.equal(error.reason, RESPONSE_TOO_LARGE);
      assert.equal(error.status, 500);
      assert.match(error.message, /^WATCH .*over 1 MiB/);
      await waitUntil("the body cancelled", () => sent.cancelled);
    },
  );
  await withApi(
    () => json(status(403, "Forbidden", "no"), 403),
    async (api, client) => {
      const error = await apiError(
        client.watch(`${api.url}/things`, { maxLineBytes: 64 }).next(),
      );
      assert.equal(error.reason, RESPONSE_TOO_LARGE, "the Status is 90 bytes");
      const fits = await apiError(
        client.watch(`${api.url}/things`, { maxLineBytes: 1024 }).next(),
      );
      assert.equal(fits.status, 403);
      assert.equal(fits.reason, "Forbidden");
    },
  );
});

Deno.test("KubeClient.watch() refuses a maxLineBytes that is not a positive integer, sending nothing", async () => {
  await withApi(watchStream, async (api, client) => {
    await assert.rejects(
      client.watch(`${api.url}/things`, { maxLineBytes: 0 }).next(),
      RangeError,
    );
    assert.equal(api.requests.length, 0);
  });
});

// ---------------------------------------------------------------------------
// Bounded answers: maxBytes and byteBudget

/** What an {@linkcode endless} answer has sent, and whether the client cancelled it. */
interface Sent {
  bytes: number;
  cancelled: boolean;
}

/** Where {@linkcode endless} gives up: far past any limit a test sets. */
const ENDLESS_BYTES = 64 * 1024 * 1024;

/**
 * An answer that does not end for a client with a limit: `{"items":[` and
 * then `0,` chunks of 64 KiB for as long as the client reads (up to 64 MiB,
 * then the stream ends, still not JSON), counting the bytes it hands to the
 * connection in `sent`.
 */
function endless(sent: Sent): Response {
  const encoder = new TextEncoder();
  const filler = encoder.encode("0,".repeat(32 * 1024));
  let started = false;
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent.bytes >= ENDLESS_BYTES) {
          controller.close();
          return;
        }
        const chunk = started ? filler : encoder.encode('{"items":[');
        started = true;
        sent.bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
      cancel() {
        sent.cancelled = true;
      },
    }),
    { headers: { "content-type": "application/json" } },
  );
}

Deno.test("KubeClient.request() with maxBytes stops reading an endless body, cancels it and fails with ResponseTooLarge naming the URL and the limit", async () => {
  const sent: Sent = { bytes: 0, cancelled: false };
  await withApi(() => endless(sent), async (api, client) => {
    const error = await apiError(
      client.get(`${api.url}/apis/g/v1/things`, { maxBytes: 1024 * 1024 }),
    );
    assert.equal(error.reason, RESPONSE_TOO_LARGE);
    assert.equal(error.status, 200);
    assert.equal(error.notFound, false);
    assert.equal(
      error.message,
      `GET ${api.url}/apis/g/v1/things: the answer is over 1 MiB; stopped reading it`,
    );
    // The client went away: the server's stream is cancelled, not drained.
    await waitUntil(
      "the server to see the body cancelled",
      () => sent.cancelled,
    );
    assert.ok(sent.bytes > 1024 * 1024, `sent only ${sent.bytes} bytes`);
    assert.ok(sent.bytes < ENDLESS_BYTES, `sent ${sent.bytes} bytes`);
  });
});

Deno.test("KubeClient.request() with maxBytes reads a body of exactly maxBytes and refuses one byte more", async () => {
  const body = JSON.stringify({ items: ["x".repeat(100)] });
  let extra = "";
  await withApi(
    () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            // Without a Content-Length: the count alone decides.
            const bytes = new TextEncoder().encode(body + extra);
            controller.enqueue(bytes.subarray(0, 50));
            controller.enqueue(bytes.subarray(50));
            controller.close();
          },
        }),
      ),
    async (api, client) => {
      const maxBytes = new TextEncoder().encode(body).byteLength;
      assert.deepEqual(
        await client.get(`${api.url}/x`, { maxBytes }),
        JSON.parse(body),
      );
      extra = " ";
      const error = await apiError(client.get(`${api.url}/x`, { maxBytes }));
      assert.equal(error.reason, RESPONSE_TOO_LARGE);
      assert.match(error.message, new RegExp(`over ${maxBytes} bytes;`));
    },
  );
});

Deno.test("KubeClient.request() with maxBytes refuses a body whose Content-Length is over it, and bounds error answers too, keeping their status", async () => {
  await withApi(
    (request) =>
      request.url.pathname === "/big"
        ? json({ items: ["x".repeat(5000)] })
        : json(status(404, "NotFound", "y".repeat(5000)), 404),
    async (api, client) => {
      const big = await apiError(client.get(`${api.url}/big`, {
        maxBytes: 4096,
      }));
      assert.equal(big.reason, RESPONSE_TOO_LARGE);
      assert.equal(big.status, 200);
      assert.match(big.message, /the answer is over 4 KiB; stopped reading it/);
      const missing = await apiError(client.get(`${api.url}/missing`, {
        maxBytes: 4096,
      }));
      assert.equal(missing.reason, RESPONSE_TOO_LARGE);
      assert.equal(missing.notFound, true);
    },
  );
});

Deno.test("KubeClient.request() with maxBytes still decodes JSON, empty bodies and Status errors under the limit", async () => {
  await withApi(
    (request) =>
      request.url.pathname === "/empty"
        ? new Response(null, { status: 204 })
        : request.url.pathname === "/gone"
        ? json(status(410, "Expired", "too old"), 410)
        : json({ kind: "Thing" }),
    async (api, client) => {
      const maxBytes = 4096;
      assert.deepEqual(await client.get(`${api.url}/x`, { maxBytes }), {
        kind: "Thing",
      });
      assert.equal(
        await client.request("DELETE", `${api.url}/empty`, { maxBytes }),
        undefined,
      );
      const gone = await apiError(client.get(`${api.url}/gone`, { maxBytes }));
      assert.equal(gone.gone, true);
      assert.match(gone.message, /410: too old/);
    },
  );
});

Deno.test("KubeClient.listPages() starts at options.continue and bounds every page by maxBytes", async () => {
  await withApi(
    (request) =>
      request.url.searchParams.get("continue") === "t1"
        ? json({ metadata: { continue: "t2" }, items: [configMap("b", "2")] })
        : json({ metadata: {}, items: [configMap("c".repeat(3000), "3")] }),
    async (api, client) => {
      const pages = client.listPages(`${api.url}/api/v1/configmaps`, {
        continue: "t1",
        maxBytes: 1000,
      });
      const first = await pages.next();
      assert.equal(first.value?.items[0]?.metadata?.name, "b");
      const error = await apiError(pages.next());
      assert.equal(error.reason, RESPONSE_TOO_LARGE);
      assert.deepEqual(
        api.requests.map((r) => r.url.searchParams.get("continue")),
        ["t1", "t2"],
      );
    },
  );
});

Deno.test("KubeClient.listPages() holds a page's room under byteBudget until the consumer asks for the next page; a request without room waits and sends nothing", async () => {
  await withApi(
    (request) =>
      request.url.searchParams.get("continue") === null &&
        request.url.pathname === "/list"
        ? json({ metadata: { continue: "t1" }, items: [configMap("a", "1")] })
        : json({ metadata: {}, items: [] }),
    async (api, client) => {
      const budget = new Semaphore(1000);
      const options = { maxBytes: 600, byteBudget: budget };
      const pages = client.listPages(`${api.url}/list`, options);
      await pages.next();
      assert.equal(budget.used, 600, "the consumer holds the first page");
      const other = client.get(`${api.url}/other`, options);
      await waitUntil("the other request to wait", () => budget.waiting === 1);
      assert.deepEqual(api.requests.map((r) => r.url.pathname), ["/list"]);
      // Asking for the next page gives the first page's room back: the
      // waiting request goes first, then the second page gets room.
      assert.equal((await pages.next()).value?.metadata.continue, undefined);
      assert.deepEqual(await other, { metadata: {}, items: [] });
      assert.equal(budget.used, 600, "the consumer holds the second page");
      assert.equal((await pages.next()).done, true);
      assert.equal(budget.used, 0);
      assert.deepEqual(api.requests.map((r) => r.url.pathname), [
        "/list",
        "/other",
        "/list",
      ]);
    },
  );
});

Deno.test("KubeClient.listPages() gives a page's room back when its consumer stops early", async () => {
  await withApi(
    () => json({ metadata: { continue: "more" }, items: [] }),
    async (api, client) => {
      const budget = new Semaphore(1000);
      for await (
        const _page of client.listPages(`${api.url}/list`, {
          maxBytes: 1000,
          byteBudget: budget,
        })
      ) {
        assert.equal(budget.used, 1000);
        break;
      }
      assert.equal(budget.used, 0);
    },
  );
});

Deno.test("KubeClient.request() without room under byteBudget within its deadline fails with ResponseBudgetExhausted and sends nothing", async () => {
  await withApi(() => json({}), async (api, client) => {
    const budget = new Semaphore(4 * 1024 * 1024);
    const held = await budget.acquire(budget.capacity, { timeoutMs: 0 });
    assert.ok(held);
    try {
      const error = await apiError(client.get(`${api.url}/x`, {
        maxBytes: 1024 * 1024,
        byteBudget: budget,
        timeoutMs: 20,
      }));
      assert.equal(error.reason, RESPONSE_BUDGET_EXHAUSTED);
      assert.equal(error.status, 0);
      assert.equal(
        error.message,
        `GET ${api.url}/x: no room within 20 ms to read an answer of up to 1 MiB: answers may hold 4 MiB at once and that much is taken`,
      );
      assert.equal(api.requests.length, 0);
      assert.equal(budget.waiting, 0);
    } finally {
      held();
    }
  });
});

Deno.test("KubeClient.request() waiting for room under byteBudget ends when the caller aborts, and sends nothing", async () => {
  await withApi(() => json({}), async (api, client) => {
    const budget = new Semaphore(1000);
    const held = await budget.acquire(1000, { timeoutMs: 0 });
    assert.ok(held);
    try {
      const abort = new AbortController();
      const pending = apiError(client.get(`${api.url}/x`, {
        maxBytes: 1000,
        byteBudget: budget,
        signal: abort.signal,
      }));
      await waitUntil("the request to wait", () => budget.waiting === 1);
      abort.abort();
      const error = await pending;
      assert.equal(error.status, 0);
      assert.equal(error.reason, "");
      assert.equal(budget.waiting, 0);
      assert.equal(api.requests.length, 0);
    } finally {
      held();
    }
  });
});

Deno.test("KubeClient.request() gives its room under byteBudget back after an answer, a failure and a body over maxBytes", async () => {
  await withApi(
    (request) =>
      request.url.pathname === "/ok"
        ? json({ kind: "Thing" })
        : request.url.pathname === "/big"
        ? json({ data: "x".repeat(2000) })
        : json(status(500, "InternalError", "no"), 500),
    async (api, client) => {
      const budget = new Semaphore(1000);
      const options = { maxBytes: 1000, byteBudget: budget };
      await client.get(`${api.url}/ok`, options);
      assert.equal(budget.used, 0);
      await apiError(client.get(`${api.url}/big`, options));
      assert.equal(budget.used, 0);
      await apiError(client.get(`${api.url}/fail`, options));
      assert.equal(budget.used, 0);
      // Without maxBytes a request takes the whole budget: one byte of it
      // taken elsewhere keeps it waiting.
      const held = await budget.acquire(1, { timeoutMs: 0 });
      assert.ok(held);
      try {
        const alone = await apiError(client.get(`${api.url}/ok`, {
          byteBudget: budget,
          timeoutMs: 20,
        }));
        assert.equal(alone.reason, RESPONSE_BUDGET_EXHAUSTED);
        assert.match(alone.message, /an answer of up to 1000 bytes:/);
      } finally {
        held();
      }
    },
  );
});

Deno.test("KubeClient.request() with measure memory refuses a body whose bytes fit maxBytes but whose objects would not", async () => {
  const empties = `[${Array(1000).fill("{}").join(",")}]`;
  const text = JSON.stringify({ notes: "x".repeat(2000) });
  await withApi(
    (request) =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            const body = request.url.pathname === "/empties" ? empties : text;
            controller.enqueue(new TextEncoder().encode(body));
            controller.close();
          },
        }),
      ),
    async (api, client) => {
      const limit = { maxBytes: 10_000 };
      assert.equal(
        (await client.get<unknown[]>(`${api.url}/empties`, limit)).length,
        1000,
        "3001 bytes are under 10000",
      );
      const error = await apiError(client.get(`${api.url}/empties`, {
        ...limit,
        measure: "memory",
      }));
      assert.equal(error.reason, RESPONSE_TOO_LARGE);
      assert.equal(
        error.message,
        `GET ${api.url}/empties: the answer would take over 10000 bytes of memory ` +
          "(estimated from its first 3001 bytes); stopped reading it",
      );
      // Strings count twice their bytes: the text, and the parsed copy;
      // then one {, four quotes and a colon.
      const textBytes = new TextEncoder().encode(text).byteLength;
      const memory = estimateMemory(new TextEncoder().encode(text));
      assert.equal(memory, 2 * textBytes + 64 + 4 * 8 + 8);
      assert.deepEqual(
        await client.get(`${api.url}/text`, {
          maxBytes: memory,
          measure: "memory",
        }),
        JSON.parse(text),
      );
      const over = await apiError(client.get(`${api.url}/text`, {
        maxBytes: memory - 1,
        measure: "memory",
      }));
      assert.equal(over.reason, RESPONSE_TOO_LARGE);
    },
  );
});

Deno.test("KubeClient.request() with measure memory refuses a Content-Length over half of maxBytes without reading", async () => {
  await withApi(
    () => new Response("x".repeat(600)),
    async (api, client) => {
      const error = await apiError(client.get(`${api.url}/x`, {
        maxBytes: 1000,
        measure: "memory",
      }));
      assert.equal(
        error.message,
        `GET ${api.url}/x: the answer would take over 1000 bytes of memory ` +
          "(estimated from its Content-Length, 600 bytes); stopped reading it",
      );
      assert.equal(
        await client.get(`${api.url}/x`, { maxBytes: 1000 }).catch((e) =>
          e.reason
        ),
        "InvalidResponse",
        "600 bytes are under 1000: read, then not JSON",
      );
    },
  );
});

Deno.test("KubeClient.request() follows no redirect, to another origin or its own, and says so", async () => {
  const elsewhere = new FakeApi(() => json({ stolen: true }));
  try {
    for (
      const [status, location] of [
        [302, `${elsewhere.url}/apis`],
        [307, "/apis/other"],
        [301, undefined],
      ] as const
    ) {
      await withApi(
        () =>
          new Response("moved", {
            status,
            headers: location === undefined ? {} : { location },
          }),
        async (api, client) => {
          const error = await apiError(client.get(`${api.url}/apis`));
          assert.equal(error.status, status);
          assert.equal(error.reason, REDIRECT_REFUSED);
          assert.match(
            error.message,
            new RegExp(
              `^GET ${api.url}/apis: the server answered ${status}, a redirect ${
                location === undefined ? "without a Location" : "to "
              }`,
            ),
          );
          assert.match(error.message, /redirects are not followed/);
          assert.equal(api.requests.length, 1);
        },
      );
    }
    assert.equal(elsewhere.requests.length, 0);
  } finally {
    await elsewhere.close();
  }
});

Deno.test("KubeClient: the client's maxBytes bounds every answer read without its own, and stops reading there", async () => {
  let pulled = 0;
  let cancelled = false;
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  const endless = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled += chunk.byteLength;
          controller.enqueue(chunk);
        },
        cancel() {
          cancelled = true;
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  await withApi(endless, async (api, client) => {
    const error = await apiError(client.get(`${api.url}/apis`));
    assert.equal(error.reason, RESPONSE_TOO_LARGE);
    assert.match(error.message, /the answer is over 1 MiB; stopped reading it/);
    const page = await apiError(client.list(`${api.url}/apis/g/v1/things`));
    assert.equal(page.reason, RESPONSE_TOO_LARGE);
    // A request's own bound still wins.
    const own = await apiError(
      client.get(`${api.url}/apis`, { maxBytes: 64 * 1024 }),
    );
    assert.match(own.message, /over 64 KiB/);
  }, { maxBytes: 1024 * 1024 });
  await waitUntil("the body cancelled", () => cancelled);
  // Three answers, each given up at its bound (plus what was in flight).
  assert.ok(pulled < 3 * 1024 * 1024 + 16 * 1024 * 1024, `${pulled}`);
});
