import assert from "node:assert/strict";
import { createLogger } from "../runtime/mod.ts";
import { type EndpointObject, KubeClient } from "../kcp/mod.ts";
import {
  connection,
  delay,
  FakeApi,
  json,
  type SeenRequest,
  status,
  waitUntil,
} from "../../testing/fakes.ts";
import {
  Applier,
  type ApplierOptions,
  type Observed,
  REFRESHED_ANNOTATION,
} from "./applier.ts";
import type { ConfigurationAction } from "./configuration_plan.ts";
import type { Plan } from "./reconcile_plan.ts";
import type { StatusAction } from "./status_tally.ts";

const NOTHING_OBSERVED: Observed = { configurations: [], rules: [] };

function statusAction(name: string, resourceVersion = "1"): StatusAction {
  return {
    cluster: "consumer",
    name,
    endpoint: "",
    resourceVersion,
    status: {
      conditions: [{
        type: "Ready",
        status: "True",
        reason: "Enforced",
        message: name,
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  };
}

/** A rule as the watch shows it, at `resourceVersion`. */
function observedRule(name: string, resourceVersion: string): EndpointObject {
  return {
    endpoint: "",
    object: {
      metadata: {
        name,
        resourceVersion,
        annotations: { "kcp.io/cluster": "consumer" },
      },
    },
  };
}

/** A configuration write of `action` in provider `cluster` through `endpoint`. */
function configurationAction(
  endpoint: string,
  cluster: string,
  action: ConfigurationAction["action"] = "create",
): ConfigurationAction {
  return {
    cluster,
    endpoint,
    action,
    object: {
      metadata: {
        name: "dependency-controller",
        ...(action === "create" ? {} : { resourceVersion: "7" }),
      },
    },
  };
}

/** The answer of a provider cluster whose storage fails. */
function onFire(): Response {
  return json(status(500, "InternalError", "etcd is on fire"), 500);
}

/**
 * Runs `fn` with an applier writing to a {@linkcode FakeApi} that answers
 * with `handler`; its backoff is a minute unless `options` say otherwise,
 * and `options.onRetry`, if given, is called as the reconciler's pass
 * would be when the applier asks for a plan.
 */
async function withApplier(
  handler: (request: SeenRequest) => Response | Promise<Response>,
  fn: (
    applier: Applier,
    api: FakeApi,
    retries: () => number,
  ) => Promise<void>,
  options:
    & Pick<
      ApplierOptions,
      | "maxInFlight"
      | "expectationTimeoutMs"
      | "refreshAfterMs"
      | "backoff"
      | "onWritten"
    >
    & { onRetry?: (applier: Applier) => void } = {},
): Promise<void> {
  const api = new FakeApi(handler);
  const client = new KubeClient({
    ...connection(api.url),
    allowInsecureHttp: true,
  });
  let retries = 0;
  const { onRetry, ...rest } = options;
  const applier: Applier = new Applier({
    client,
    log: createLogger({ write: () => {} }),
    backoff: { initialMs: 60_000, maxMs: 60_000 },
    ...rest,
    onRetry: () => {
      retries++;
      onRetry?.(applier);
    },
  });
  try {
    await fn(applier, api, () => retries);
  } finally {
    await applier.stop();
    client.close();
    await api.close();
  }
}

/** The plan's status writes against the fake server's URL. */
function statuses(api: FakeApi, names: string[]): StatusAction[] {
  return names.map((name) => ({ ...statusAction(name), endpoint: api.url }));
}

Deno.test("Applier runs at most maxInFlight writes at once and drains its queue without another plan", async () => {
  let running = 0;
  let most = 0;
  const { promise: gate, resolve: open } = Promise.withResolvers<void>();
  await withApplier(async () => {
    running++;
    most = Math.max(most, running);
    await gate;
    running--;
    return json({});
  }, async (applier, api) => {
    applier.apply({
      configurations: [],
      statuses: statuses(api, ["a", "b", "c", "d", "e"]),
    }, NOTHING_OBSERVED);
    await waitUntil("two writes to arrive", () => api.requests.length === 2);
    await delay(20); // room for a third, were there any
    assert.equal(api.requests.length, 2);
    assert.equal(applier.inFlight, 2);
    open();
    await waitUntil("every write", () => api.requests.length === 5);
    await waitUntil("the last to end", () => applier.inFlight === 0);
    assert.equal(most, 2);
    assert.deepEqual(
      api.requests.map((r) => r.url.pathname.split("/").at(-2)).sort(),
      ["a", "b", "c", "d", "e"],
    );
  }, { maxInFlight: 2 });
});

Deno.test("Applier does not repeat a write until the watch shows it, then writes again what the plan still asks", async () => {
  await withApplier(() => json({}), async (applier, api) => {
    const plan = { configurations: [], statuses: statuses(api, ["a"]) };
    applier.apply(plan, {
      configurations: [],
      rules: [observedRule("a", "1")],
    });
    await waitUntil("the write", () => api.requests.length === 1);
    await waitUntil("it to end", () => applier.inFlight === 0);
    // The cache still shows resourceVersion 1: the write is expected.
    applier.apply(plan, {
      configurations: [],
      rules: [observedRule("a", "1")],
    });
    await delay(20);
    assert.equal(api.requests.length, 1);
    // The watch shows the write (a new resourceVersion); a plan that still
    // asks for a different status writes it.
    const next = {
      configurations: [],
      statuses: [{
        ...statusAction("a", "2"),
        endpoint: api.url,
        status: { conditions: [] },
      }],
    };
    applier.apply(next, {
      configurations: [],
      rules: [observedRule("a", "2")],
    });
    await waitUntil("the second write", () => api.requests.length === 2);
    assert.equal(api.requests[1]!.method, "PATCH");
    assert.equal(
      api.requests[1]!.headers.get("content-type"),
      "application/merge-patch+json",
    );
  });
});

Deno.test("Applier reports a failed configuration write by provider cluster and asks for a plan; a conflict is not reported", async () => {
  let answer = json(status(500, "InternalError", "etcd is down"), 500);
  await withApplier(() => answer.clone(), async (applier, api, retries) => {
    const create = (cluster: string) => configurationAction(api.url, cluster);
    applier.apply(
      { configurations: [create("provider-a")], statuses: [] },
      NOTHING_OBSERVED,
    );
    await waitUntil("the failure", () => applier.failures().size === 1);
    assert.match(applier.failures().get("provider-a")!, /etcd is down/);
    await waitUntil("a plan to be asked for", () => retries() >= 1);
    answer = json(status(409, "Conflict", "the object has been modified"), 409);
    applier.apply(
      { configurations: [create("provider-b")], statuses: [] },
      NOTHING_OBSERVED,
    );
    await waitUntil("the conflict", () => api.requests.length === 2);
    await waitUntil("it to end", () => applier.inFlight === 0);
    // provider-a left the plan: forgotten; provider-b's conflict: quiet.
    assert.deepEqual([...applier.failures().keys()], []);
  });
});

Deno.test("Applier replaces queued writes with the next plan's", async () => {
  const { promise: gate, resolve: open } = Promise.withResolvers<void>();
  await withApplier(async () => {
    await gate;
    return json({});
  }, async (applier, api) => {
    applier.apply(
      { configurations: [], statuses: statuses(api, ["a", "b", "c"]) },
      NOTHING_OBSERVED,
    );
    await waitUntil("the first write", () => api.requests.length === 1);
    applier.apply(
      { configurations: [], statuses: statuses(api, ["a", "c"]) },
      NOTHING_OBSERVED,
    );
    open();
    await waitUntil("the queue to drain", () => api.requests.length === 2);
    await waitUntil("every write to end", () => applier.inFlight === 0);
    await delay(20);
    assert.deepEqual(
      api.requests.map((r) => r.url.pathname.split("/").at(-2)),
      ["a", "c"],
    );
  }, { maxInFlight: 1 });
});

Deno.test("Applier touches a changed configuration once more a little later, so that kcp's hook cache sees an update event", async () => {
  await withApplier(() => json({}), async (applier, api) => {
    applier.apply({
      configurations: [{
        cluster: "provider-a",
        endpoint: api.url,
        action: "update",
        object: {
          metadata: { name: "dependency-controller", resourceVersion: "7" },
        },
      }],
      statuses: [],
    }, NOTHING_OBSERVED);
    await waitUntil(
      "the update and its refresh",
      () => api.requests.length === 2,
    );
    const [update, refresh] = api.requests;
    assert.equal(update!.method, "PUT");
    assert.equal(refresh!.method, "PATCH");
    assert.equal(refresh!.url.pathname, update!.url.pathname);
    assert.equal(
      refresh!.headers.get("content-type"),
      "application/merge-patch+json",
    );
    const body = JSON.parse(refresh!.body);
    assert.deepEqual(Object.keys(body.metadata.annotations), [
      REFRESHED_ANNOTATION,
    ]);
    await delay(30);
    assert.equal(api.requests.length, 2, "one refresh per change");
  }, { refreshAfterMs: 5 });
});

Deno.test("Applier writes a failed provider cluster's configuration again only after its backoff, and another cluster's at once", async () => {
  await withApplier(
    (request) =>
      request.url.pathname.includes("/clusters/provider-a/")
        ? onFire()
        : json({}, 201),
    async (applier, api, retries) => {
      const failing = configurationAction(api.url, "provider-a");
      applier.apply(
        { configurations: [failing], statuses: [] },
        NOTHING_OBSERVED,
      );
      await waitUntil("the failure", () => applier.failures().size === 1);
      assert.match(
        applier.failures().get("provider-a")!,
        /500.*etcd is on fire/,
      );
      await waitUntil("a plan to be asked for", () => retries() >= 1);
      // The next pass, within the backoff: only provider-b's write starts.
      applier.apply({
        configurations: [failing, configurationAction(api.url, "provider-b")],
        statuses: [],
      }, NOTHING_OBSERVED);
      assert.equal(applier.inFlight, 1);
      await waitUntil(
        "provider-b's write to end",
        () => applier.inFlight === 0,
      );
      // More passes within the backoff start nothing: no retry loop.
      for (let pass = 0; pass < 3; pass++) {
        applier.apply(
          { configurations: [failing], statuses: [] },
          NOTHING_OBSERVED,
        );
        assert.equal(applier.inFlight, 0, "no write starts");
      }
      assert.deepEqual(
        api.requests.map((r) => `${r.method} ${r.url.pathname.split("/")[2]}`),
        ["POST provider-a", "POST provider-b"],
      );
      assert.deepEqual([...applier.failures().keys()], ["provider-a"]);
    },
  );
});

Deno.test("Applier asks for a plan once a failed configuration write may be tried again, and repeats it until it succeeds", async (t) => {
  for (const action of ["create", "update"] as const) {
    await t.step(action, async () => {
      let failing = true;
      let plan: Pick<Plan, "configurations" | "statuses"> | undefined;
      const written: { kind: string; error?: unknown }[] = [];
      await withApplier(
        () => failing ? onFire() : json({}, action === "create" ? 201 : 200),
        async (applier, api) => {
          const write = configurationAction(api.url, "provider-a", action);
          plan = { configurations: [write], statuses: [] };
          applier.apply(plan, NOTHING_OBSERVED);
          await waitUntil("retries", () => api.requests.length >= 3);
          assert.match(
            applier.failures().get("provider-a") ?? "",
            /500.*etcd is on fire/,
          );
          failing = false;
          await waitUntil(
            "a successful write",
            () => written.some((w) => w.error === undefined),
          );
          assert.deepEqual(written.at(-1), { kind: "configuration" });
          assert.ok(written.slice(0, -1).every((w) => w.error !== undefined));
          assert.deepEqual([...applier.failures().keys()], []);
          const collection =
            "/clusters/provider-a/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
          for (const request of api.requests) {
            assert.equal(request.method, action === "create" ? "POST" : "PUT");
            assert.equal(
              request.url.pathname,
              action === "create"
                ? collection
                : `${collection}/dependency-controller`,
            );
            assert.deepEqual(JSON.parse(request.body), write.object);
          }
        },
        {
          backoff: { initialMs: 10, maxMs: 40 },
          refreshAfterMs: 60_000,
          onWritten: (kind, error) =>
            written.push({ kind, ...(error === undefined ? {} : { error }) }),
          onRetry: (applier) => {
            if (plan !== undefined) applier.apply(plan, NOTHING_OBSERVED);
          },
        },
      );
    });
  }
});
