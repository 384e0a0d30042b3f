import assert from "node:assert/strict";
import {
  connection,
  FakeApi,
  json,
  SUBNETS,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  buildGraph,
  graphJson,
  type GraphRuleInput,
  PAGE_CSP,
} from "../graph/mod.ts";
import {
  type EndpointObject,
  KubeClient,
  type KubeObject,
} from "../kcp/mod.ts";
import { parseDependencyRule } from "../rules/mod.ts";
import {
  createLogger,
  MetricsRegistry,
  serveServiceEndpoints,
} from "../runtime/mod.ts";
import {
  createGraphApp,
  GRAPH_CSP,
  type GraphAppOptions,
  PathRecordingResolver,
  readHolds,
} from "./graph_endpoint.ts";

const log = createLogger({ write: () => {} });
const NOW = new Date("2030-01-02T03:04:05Z");

/** A DependencyRule as the watch shows it: in `cluster`, at `rv`, with a Ready condition. */
function ruleObject(
  cluster: string,
  name: string,
  options: {
    rv: string;
    dependent: { group: string; resource: string; kind: string };
    protects: readonly { group: string; resource: string }[];
    ready?: { status: string; reason: string };
    when?: string;
  },
): KubeObject {
  const { dependent } = options;
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: {
      name,
      resourceVersion: options.rv,
      generation: 1,
      annotations: { "kcp.io/cluster": cluster },
    },
    spec: {
      dependent: {
        apiExportName: dependent.group,
        version: "v1alpha1",
        ...dependent,
      },
      ...(options.when === undefined ? {} : { when: options.when }),
      dependencies: options.protects.map((type) => ({
        apiExportRef: { path: "root:providers:network", name: type.group },
        group: type.group,
        version: "v1alpha1",
        resource: type.resource,
        fieldRef: { path: `.spec.${type.resource}Ref.name` },
      })),
    },
    ...(options.ready === undefined ? {} : {
      status: {
        observedGeneration: 1,
        conditions: [{
          type: "Ready",
          lastTransitionTime: "2030-01-01T00:00:00Z",
          message: "",
          ...options.ready,
        }],
      },
    }),
  };
}

/** A Lock on a VPC, as the watch shows it. */
function lockObject(cluster: string, name: string): KubeObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: {
      name,
      namespace: "team-a",
      resourceVersion: "1",
      annotations: { "kcp.io/cluster": cluster },
    },
    spec: {
      target: {
        apiExportRef: { path: "root:providers:network", name: VPCS.group },
        group: VPCS.group,
        version: VPCS.version,
        resource: VPCS.resource,
        name: "core",
      },
      reason: "production",
    },
  };
}

/** Watches whose rules and Locks the test sets. */
class FakeWatches {
  rules: KubeObject[] = [];
  locks: KubeObject[] = [];

  items(collection: "rules" | "locks"): EndpointObject[] {
    return this[collection].map((object) => ({
      endpoint: "https://vw.example/services/apiexport/root:dep-ctrl",
      object,
    }));
  }
}

/** A VM-protects-VPC rule in `c1` and a cycle between VPCs and Subnets in `c2`. */
function demoWatches(): FakeWatches {
  const watches = new FakeWatches();
  watches.rules = [
    ruleObject("c1", "vm-vpc", {
      rv: "10",
      dependent: VIRTUAL_MACHINES,
      protects: [VPCS],
      ready: { status: "True", reason: "Enforced" },
    }),
    ruleObject("c2", "vpc-subnet", {
      rv: "11",
      dependent: { ...VPCS, kind: "VPC" },
      protects: [SUBNETS],
      ready: { status: "False", reason: "DependencyCycle" },
    }),
    ruleObject("c2", "subnet-vpc", {
      rv: "12",
      dependent: { ...SUBNETS, kind: "Subnet" },
      protects: [VPCS],
      ready: { status: "False", reason: "DependencyCycle" },
      when: "'</svg><script>alert(1)</script>' != object.metadata.name",
    }),
  ];
  watches.locks = [lockObject("c3", "prod"), lockObject("c3", "prod-2")];
  return watches;
}

/** Options of a graph app over `watches` whose renders are counted. */
function counted(
  watches: FakeWatches,
  extra: Partial<GraphAppOptions> = {},
): { options: GraphAppOptions; renders: string[] } {
  const renders: string[] = [];
  return {
    renders,
    options: {
      watches,
      title: "Dependencies",
      log,
      now: () => NOW,
      render: (dot) => {
        renders.push(dot);
        return Promise.resolve(
          `<svg id="rendered-${renders.length}"><g class="node"></g></svg>`,
        );
      },
      ...extra,
    },
  };
}

/** The rules of `watches` as the graph is to take them. */
function inputs(
  watches: FakeWatches,
  workspaces: Record<string, string> = {},
): GraphRuleInput[] {
  return watches.rules.map((object) => {
    const parsed = parseDependencyRule(object);
    assert.ok(parsed.ok);
    const cluster = object.metadata!.annotations!["kcp.io/cluster"]!;
    const workspace = workspaces[cluster];
    return {
      cluster,
      ...(workspace === undefined ? {} : { workspace }),
      rule: parsed.rule,
    };
  });
}

function assertHardened(response: Response): void {
  assert.equal(response.headers.get("cache-control"), "no-store");
  assert.equal(response.headers.get("x-content-type-options"), "nosniff");
  const csp = response.headers.get("content-security-policy") ?? "";
  assert.equal(csp, GRAPH_CSP);
  // The page's own policy, and what only a header can add.
  assert.ok(csp.startsWith(`${PAGE_CSP}; `));
  assert.match(csp, /frame-ancestors 'none'/);
}

Deno.test("createGraphApp() serves the page with its SVG, hardened headers, and renders only when the rules change", async () => {
  const watches = demoWatches();
  const { options, renders } = counted(watches);
  const app = createGraphApp(options);

  const first = await app.request("/graph");
  assert.equal(first.status, 200);
  assert.equal(
    first.headers.get("content-type"),
    "text/html; charset=utf-8",
  );
  assertHardened(first);
  const html = await first.text();
  assert.match(html, /<svg id="rendered-1">/);
  assert.doesNotMatch(html, /<script/i);
  assert.equal(renders.length, 1);
  assert.match(renders[0]!, /vpcs\.network\.example\.com/);

  // The same rules, Locks and paths: the SVG is kept.
  await (await app.request("/graph")).text();
  assert.equal(renders.length, 1);

  // A status update is a new version of the object: drawn again.
  watches.rules[0] = ruleObject("c1", "vm-vpc", {
    rv: "20",
    dependent: VIRTUAL_MACHINES,
    protects: [VPCS],
    ready: { status: "False", reason: "WebhookCannotRead" },
  });
  assert.match(
    await (await app.request("/graph")).text(),
    /<svg id="rendered-2">/,
  );
  // Another Lock count: drawn again.
  watches.locks.pop();
  await (await app.request("/graph")).text();
  assert.equal(renders.length, 3);
});

Deno.test("createGraphApp() serves /graph.json as the graph of the watched rules with their Lock counts and workspaces", async () => {
  const watches = demoWatches();
  // A rule that is not valid is left out.
  watches.rules.push({
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "broken", annotations: { "kcp.io/cluster": "c1" } },
    spec: {},
  });
  const workspaces: Record<string, string> = { c2: "root:providers:network" };
  const { options, renders } = counted(watches, {
    workspaces: { pathOf: (cluster) => workspaces[cluster] },
  });
  const response = await createGraphApp(options).request("/graph.json");
  assert.equal(response.status, 200);
  assert.equal(
    response.headers.get("content-type"),
    "application/json; charset=utf-8",
  );
  assertHardened(response);
  watches.rules.pop();
  const want = graphJson(
    buildGraph(inputs(watches, workspaces), {
      locks: new Map([["vpcs.network.example.com", 2]]),
    }),
  );
  assert.deepEqual(await response.json(), JSON.parse(JSON.stringify(want)));
  assert.equal(want.edges.filter((e) => e.inCycle).length, 2);
  assert.equal(
    want.nodes.find((n) => n.id === "vpcs.network.example.com")?.locks,
    2,
  );
  // The JSON needs no SVG.
  assert.equal(renders.length, 0);
});

Deno.test("createGraphApp() renders one graph at a time, and a page waiting its turn takes the newest rules", async () => {
  const watches = demoWatches();
  let running = 0;
  let most = 0;
  const renders: string[] = [];
  const gates: (() => void)[] = [];
  const app = createGraphApp({
    watches,
    title: "Dependencies",
    log,
    now: () => NOW,
    async render(dot) {
      running++;
      most = Math.max(most, running);
      renders.push(dot);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      return `<svg id="rendered-${renders.length}"></svg>`;
    },
  });
  const first = app.request("/graph");
  while (gates.length === 0) await new Promise((r) => setTimeout(r, 0));
  // The rules change while the first render runs; two more pages ask.
  watches.rules.pop();
  const second = app.request("/graph");
  const third = app.request("/graph");
  gates.shift()!();
  const firstHtml = await (await first).text();
  while (gates.length === 0) await new Promise((r) => setTimeout(r, 0));
  gates.shift()!();
  const secondHtml = await (await second).text();
  const thirdHtml = await (await third).text();
  assert.equal(most, 1);
  assert.equal(renders.length, 2);
  assert.match(firstHtml, /rendered-1/);
  assert.match(secondHtml, /rendered-2/);
  assert.match(thirdHtml, /rendered-2/);
  assert.doesNotMatch(renders[1]!, /subnet-vpc/);
});

Deno.test("createGraphApp() answers 500 naming the failure when the render fails, and tries again at the next page", async () => {
  let fail = true;
  const app = createGraphApp({
    watches: demoWatches(),
    title: "Dependencies",
    log,
    render: () =>
      fail
        ? Promise.reject(new Error("graphviz cannot render the graph: boom"))
        : Promise.resolve("<svg></svg>"),
  });
  const failed = await app.request("/graph");
  assert.equal(failed.status, 500);
  assertHardened(failed);
  assert.equal(
    await failed.text(),
    "cannot render the graph: graphviz cannot render the graph: boom\n",
  );
  fail = false;
  assert.equal((await app.request("/graph")).status, 200);
});

Deno.test("createGraphApp() renders the real SVG: a node per type, an edge per dependency, and the hostile text as text", async () => {
  const app = createGraphApp({
    watches: demoWatches(),
    title: "Dependencies",
    log,
    now: () => NOW,
  });
  const html = await (await app.request("/graph")).text();
  assert.equal(html.match(/<g id="node:[^"]*" class="node[ "]/g)?.length, 3);
  assert.equal(html.match(/<g id="edge:[^"]*" class="edge[ "]/g)?.length, 3);
  assert.equal(html.match(/class="edge[^"]*\bcycle\b/g)?.length, 2);
  assert.doesNotMatch(html, /<script/i);
  assert.match(html, /&lt;\/svg&gt;&lt;script&gt;alert\(1\)/);
});

/** A `/holds.json` body with one held VPC. */
const HOLDS = {
  now: "2030-01-02T03:04:00Z",
  capacity: 1000,
  dropped: 0,
  holds: [{
    cluster: "c3",
    group: "network.example.com",
    resource: "vpcs",
    namespace: "team-a",
    name: "held-vpc",
    outcome: "denied_referenced",
    causes: [],
    firstDenied: "2030-01-02T03:00:00Z",
    lastDenied: "2030-01-02T03:03:00Z",
    count: 3,
  }],
};

Deno.test("readHolds() reads and validates the webhook's holds, and words every failure", async () => {
  const answers: Record<string, () => Response> = {
    "/holds.json": () => json(HOLDS),
    "/missing": () => new Response("not found\n", { status: 404 }),
    "/garbage": () => new Response("<html>"),
    "/wrong": () => json({ holds: "none" }),
    "/huge": () => json({ ...HOLDS, padding: "x".repeat(4096) }),
  };
  const api = new FakeApi((request) =>
    answers[request.url.pathname]?.() ?? new Response("", { status: 404 })
  );
  try {
    assert.deepEqual(await readHolds(`${api.url}/holds.json`), {
      holds: HOLDS,
    });
    const failures = {
      "/missing": /^GET .*\/missing: HTTP 404$/,
      "/garbage": /JSON/,
      "/wrong": /^not a holds report: /,
    };
    for (const [path, want] of Object.entries(failures)) {
      const answer = await readHolds(`${api.url}${path}`);
      assert.ok("holdsError" in answer, path);
      assert.match(answer.holdsError, want, path);
    }
    const huge = await readHolds(`${api.url}/huge`, { maxBytes: 2048 });
    assert.ok("holdsError" in huge);
    assert.match(huge.holdsError, /over 2 KiB/);
  } finally {
    await api.close();
  }
  // A port nobody listens on any more.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = listener.addr.port;
  listener.close();
  const refused = await readHolds(`http://127.0.0.1:${closedPort}/holds.json`);
  assert.ok("holdsError" in refused);
  assert.match(refused.holdsError, /Connection refused/);
  // No answer within the timeout: said so.
  const silent = await readHolds("http://webhook.example/holds.json", {
    timeoutMs: 5,
    fetch: (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => {
          reject(init.signal?.reason);
        });
      }),
  });
  assert.deepEqual(silent, {
    holdsError: "GET http://webhook.example/holds.json: no answer within 5 ms",
  });
});

Deno.test("createGraphApp() shows the webhook's holds, or why it could not read them, on the page", async () => {
  const watches = demoWatches();
  const holdsAnswers = [json(HOLDS), new Response("", { status: 503 })];
  const { options } = counted(watches, {
    holdsUrl: "http://webhook.example:8080/holds.json",
    fetch: (input) => {
      assert.equal(String(input), "http://webhook.example:8080/holds.json");
      return Promise.resolve(holdsAnswers.shift()!);
    },
  });
  const app = createGraphApp(options);
  assert.match(await (await app.request("/graph")).text(), /held-vpc/);
  const failed = await (await app.request("/graph")).text();
  assert.doesNotMatch(failed, /held-vpc/);
  assert.match(failed, /HTTP 503/);
});

Deno.test("createGraphApp() as the metrics listener's extra routes: /graph and /graph.json beside /metrics", async () => {
  const registry = new MetricsRegistry();
  registry.gauge({ name: "things", help: "Things" }).set(3);
  const bind = { hostname: "127.0.0.1", port: 0 };
  const { options } = counted(demoWatches());
  const [server] = serveServiceEndpoints({ metricsBind: bind }, {
    ready: () => true,
    registry,
    collect() {},
    metricsRoutes: createGraphApp(options),
  });
  try {
    const base = `http://127.0.0.1:${server!.port}`;
    const get = async (path: string) => {
      const response = await fetch(`${base}${path}`);
      return { status: response.status, text: await response.text() };
    };
    assert.match((await get("/metrics")).text, /^things 3$/m);
    assert.equal((await get("/graph")).status, 200);
    assert.equal((await get("/graph.json")).status, 200);
    assert.equal((await get("/nope")).status, 404);
  } finally {
    await server!.shutdown();
  }
});

Deno.test("PathRecordingResolver remembers the path each logical cluster was resolved from", async () => {
  const api = new FakeApi((request) => {
    const names: Record<string, string> = {
      "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/providers":
        "c-providers",
      "/clusters/c-providers/apis/tenancy.kcp.io/v1alpha1/workspaces/network":
        "c-network",
    };
    const cluster = names[request.url.pathname];
    if (cluster === undefined) return json({}, 404);
    return json({
      apiVersion: "tenancy.kcp.io/v1alpha1",
      kind: "Workspace",
      metadata: { name: request.url.pathname.split("/").at(-1) },
      spec: { cluster },
      status: { phase: "Ready" },
    });
  });
  const client = new KubeClient(connection(api.url));
  try {
    const resolver = new PathRecordingResolver({ client, base: api.url });
    assert.equal(await resolver.resolve("root:providers:network"), "c-network");
    assert.equal(resolver.pathOf("c-network"), "root:providers:network");
    // Parents resolved on the way are not what a rule named.
    assert.equal(resolver.pathOf("c-providers"), undefined);
    // A path that is a logical cluster's own name says nothing new.
    assert.equal(await resolver.resolve("c-network"), "c-network");
    assert.equal(resolver.pathOf("c-network"), "root:providers:network");
    await assert.rejects(resolver.resolve("root:missing"));
    assert.equal(resolver.pathOf("root:missing"), undefined);
  } finally {
    client.close();
    await api.close();
  }
});
