import assert from "node:assert/strict";
import { INDEXED_CONDITION, READY_CONDITION } from "../rules/mod.ts";
import {
  type EndpointObject,
  type ExportWatcher,
  KubeClient,
  type KubeObject,
} from "../kcp/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import {
  connection,
  FakeApi,
  json,
  VPCS,
  waitUntil,
} from "../../testing/fakes.ts";
import {
  type ControllerCollection,
  type ReconcileObserver,
  Reconciler,
} from "./reconciler.ts";
import type { AccessRef } from "./webhook_access.ts";
import type { WorkspaceResolver } from "./workspace_resolver.ts";
import {
  binding,
  configuration,
  ENFORCED_VPCS,
  EXPORT_REF,
  NETWORK,
  NETWORK_PATH,
  SETTINGS,
  vmRule,
} from "../../testing/plan_fixtures.ts";

/** What the stub watches show; the test changes it and triggers a pass. */
type Shown = Record<ControllerCollection, EndpointObject[]>;

/** An access review the test answers when it likes. */
interface Asked {
  ref: AccessRef;
  answer: (allowed: boolean) => void;
}

interface Harness {
  shown: Shown;
  /** `source` as read through the fake API's endpoint. */
  here: (source: EndpointObject) => EndpointObject;
  /** The rule as the watch shows it after its status was written. */
  written: (status: KubeObject) => EndpointObject;
  reconciler: Reconciler;
  /** The status bodies written, in order. */
  statuses: KubeObject[];
  /** Configurations created. */
  created: () => number;
  /** The access reviews asked so far. */
  asked: Asked[];
  /** Waits for `count` more passes, asking for them. */
  morePasses: (count: number) => Promise<void>;
}

/**
 * A reconciler over stub watches and path resolution, writing to a fake
 * API, whose access reviews wait for the test to answer them.
 */
async function withReconciler(
  options: { accessWaitMs?: number; dependentsIndex?: boolean },
  fn: (h: Harness) => Promise<void>,
): Promise<void> {
  const statuses: KubeObject[] = [];
  let created = 0;
  const api = new FakeApi((request) => {
    if (
      request.method === "PATCH" && request.url.pathname.endsWith("/status")
    ) {
      statuses.push(JSON.parse(request.body).status);
      return json({});
    }
    if (request.method === "POST") {
      created++;
      return json(JSON.parse(request.body), 201);
    }
    return json({}, 404);
  });
  const shown: Shown = {
    rules: [],
    locks: [],
    bindings: [],
    configurations: [],
  };
  const watcher = {
    synced: true,
    items: (collection: ControllerCollection) => shown[collection],
    lists: () => 1,
  } as unknown as ExportWatcher<ControllerCollection>;
  const resolver = {
    resolve: (path: string) =>
      path === NETWORK_PATH
        ? Promise.resolve(NETWORK)
        : Promise.reject(new Error(`no workspace ${path}`)),
    invalidate: () => {},
  } as unknown as WorkspaceResolver;
  const asked: Asked[] = [];
  let passes = 0;
  const observer: ReconcileObserver = {
    passed: () => passes++,
    wrote: () => {},
  };
  const client = new KubeClient(connection(api.url));
  const reconciler = new Reconciler({
    client,
    watcher,
    resolver,
    webhookAccess: {
      read: (ref) =>
        new Promise((resolve) => asked.push({ ref, answer: resolve })),
      user: "dependency-webhook",
    },
    ...(options.dependentsIndex === undefined
      ? {}
      : { dependentsIndex: options.dependentsIndex }),
    readSettings: () => Promise.resolve(SETTINGS),
    exportRef: EXPORT_REF,
    log: createLogger({ level: "error", write: () => {} }),
    observer,
    resyncPeriodMs: 3_600_000,
    minPassIntervalMs: 0,
    ...(options.accessWaitMs === undefined
      ? {}
      : { accessWaitMs: options.accessWaitMs }),
  });
  const morePasses = async (count: number) => {
    const until = passes + count;
    while (passes < until) {
      reconciler.trigger();
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };
  try {
    await fn({
      shown,
      here: (source) => ({ ...source, endpoint: api.url }),
      written: (status) => {
        const { object } = vmRule(status);
        object.metadata!.resourceVersion = String(2000 + statuses.length);
        return { endpoint: api.url, object };
      },
      reconciler,
      statuses,
      created: () => created,
      asked,
      morePasses,
    });
  } finally {
    // Reviews still waiting end, so that the reconciler can stop.
    for (const { answer } of asked) answer(true);
    await reconciler.stop();
    client.close();
    await api.close();
  }
}

/** The Ready condition of a status body. */
function readyOf(status: KubeObject): Record<string, unknown> | undefined {
  return conditionOf(status, READY_CONDITION);
}

/** Condition `type` of a status body. */
function conditionOf(
  status: KubeObject,
  type: string,
): Record<string, unknown> | undefined {
  const conditions = (status as { conditions?: Record<string, unknown>[] })
    .conditions;
  return conditions?.find((c) => c.type === type);
}

Deno.test("Reconciler writes no status at a cold start while the webhook's reads are being asked about, then one status once they are answered", async () => {
  await withReconciler({}, async (h) => {
    h.shown.rules = [h.here(vmRule())];
    h.shown.bindings = [h.here(binding(NETWORK))];
    h.reconciler.start();
    await waitUntil("the configuration to be created", () => h.created() > 0);
    h.shown.configurations = [h.here(configuration(NETWORK, [VPCS]))];
    await waitUntil("the reads to be asked about", () => h.asked.length === 3);
    await h.morePasses(3);
    // Installed, but the answers are not in: nothing is written.
    assert.deepEqual(h.statuses, []);
    for (const { answer } of h.asked) answer(true);
    await waitUntil("the status to be written", () => h.statuses.length > 0);
    const ready = readyOf(h.statuses[0]!);
    assert.equal(ready?.reason, "Enforced");
    assert.equal(ready?.message, ENFORCED_VPCS);
    // Shown by the watch, it is not written again.
    h.shown.rules = [h.written(h.statuses[0]!)];
    await h.morePasses(3);
    assert.equal(h.statuses.length, 1);
  });
});

Deno.test("Reconciler writes a rule's status with a note once the wait for the webhook's reads is over, and again when they are answered", async () => {
  await withReconciler({ accessWaitMs: 0 }, async (h) => {
    h.shown.rules = [h.here(vmRule())];
    h.shown.bindings = [h.here(binding(NETWORK))];
    h.shown.configurations = [h.here(configuration(NETWORK, [VPCS]))];
    h.reconciler.start();
    await waitUntil("the status to be written", () => h.statuses.length > 0);
    const noted = readyOf(h.statuses[0]!);
    assert.equal(noted?.reason, "Enforced");
    assert.match(
      String(noted?.message),
      /not checked whether the webhook may read: whether dependency-webhook may list virtualmachines\.compute\.example\.com: not answered within 0 s/,
    );
    h.shown.rules = [h.written(h.statuses[0]!)];
    for (const { ref, answer } of h.asked) {
      answer(!(ref.verb === "get" && ref.resource === VPCS.resource));
    }
    await waitUntil("the answers to be written", () => h.statuses.length > 1);
    assert.equal(readyOf(h.statuses[1]!)?.reason, "WebhookCannotRead");
    assert.equal(h.statuses.length, 2);
  });
});

Deno.test("Reconciler with dependentsIndex asks whether the webhook may feed the index, and writes Indexed beside an Enforced Ready", async () => {
  await withReconciler({ dependentsIndex: true }, async (h) => {
    h.shown.rules = [h.here(vmRule())];
    h.shown.bindings = [h.here(binding(NETWORK))];
    h.shown.configurations = [h.here(configuration(NETWORK, [VPCS]))];
    h.reconciler.start();
    // Three reads for Ready, five that feed the index.
    await waitUntil("the reads to be asked about", () => h.asked.length === 8);
    assert.deepEqual(
      h.asked.filter(({ ref }) => ref.subresource !== undefined).map((
        { ref },
      ) => `${ref.verb} ${ref.resource}/${ref.subresource} ${ref.name}`),
      [
        "list apiexports/content compute.example.com",
        "watch apiexports/content compute.example.com",
      ],
    );
    for (const { ref, answer } of h.asked) answer(ref.verb !== "watch");
    await waitUntil("the status to be written", () => h.statuses.length > 0);
    assert.equal(readyOf(h.statuses[0]!)?.reason, "Enforced");
    const indexed = conditionOf(h.statuses[0]!, INDEXED_CONDITION);
    assert.equal(indexed?.status, "False");
    assert.equal(indexed?.reason, "WebhookCannotWatch");
  });
});
