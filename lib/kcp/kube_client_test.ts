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
} from "../../testing/mod.ts";
import {
  KubeApiError,
  KubeClient,
  type KubeClientOptions,
  type KubeList,
  type WatchEvent,
} from "./kube_client.ts";

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
