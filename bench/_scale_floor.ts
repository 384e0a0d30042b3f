/**
 * The floor of the controller's cold start: the writes the controller
 * made, and nothing else, made by a bare client. One ValidatingWebhook
 * Configuration create per provider workspace (the controller's own
 * objects, as it left them), then one status merge-patch per rule (the
 * status it wrote), at most `concurrency` at a time from one queue, through
 * the same dep-ctrl virtual-workspace endpoint and as the same identity
 * (`dependency-controller`), with the same HTTP client class (one
 * kept-alive HTTP/2 connection pool, as the controller's `KubeClient`).
 * No watch, no path resolution, no export read, no access review.
 *
 * The `direct` floor makes the same writes straight to the workspaces as
 * kcp-admin, past the virtual workspace: what they cost kcp without it.
 *
 * @module
 */
import { cpuUsage } from "node:process";
import { clusterUrl, KubeClient, type KubeObject } from "../lib/kcp/mod.ts";
import type { KcpServer } from "../testing/mod.ts";
import {
  eachLimited,
  RULES_PATH,
  type ScaleSetup,
  VWC_PATH,
} from "./_scale_fixtures.ts";

/** What the controller wrote in one cold start, to be written again. */
export interface Writes {
  /** Each provider's webhook configurations, as created. */
  configurations: { cluster: string; object: KubeObject }[];
  /** Each rule's status. */
  statuses: { name: string; status: unknown }[];
}

/**
 * Checks what kcp shows after a controller run: one webhook configuration
 * per provider, and every rule `Ready=True/Enforced`.
 *
 * @throws {Error} Naming the first rule that is not, or the count of
 * configurations.
 */
export function checkWrites(writes: Writes, setup: ScaleSetup): void {
  if (writes.configurations.length !== setup.providers.length) {
    throw new Error(
      `${writes.configurations.length} webhook configurations in ${setup.providers.length} provider workspaces`,
    );
  }
  if (writes.statuses.length !== setup.ruleNames.length) {
    throw new Error(
      `${writes.statuses.length} rules, ${setup.ruleNames.length} created`,
    );
  }
  for (const { name, status } of writes.statuses) {
    const conditions =
      (status as { conditions?: Record<string, unknown>[] } | undefined)
        ?.conditions ?? [];
    const ready = conditions.find((c) => c.type === "Ready");
    if (ready?.status !== "True" || ready.reason !== "Enforced") {
      throw new Error(
        `rule ${name} is not Ready=True/Enforced: ${JSON.stringify(ready)}`,
      );
    }
  }
}

/** Server-set metadata, and kcp's own annotations, left out of a create. */
function forCreate(object: KubeObject): KubeObject {
  const { metadata = {}, ...rest } = object;
  const annotations = Object.fromEntries(
    Object.entries(metadata.annotations ?? {}).filter(([k]) =>
      !k.startsWith("kcp.io/")
    ),
  );
  return {
    ...rest,
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: {
      name: metadata.name!,
      ...(metadata.labels === undefined ? {} : { labels: metadata.labels }),
      ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
    },
  };
}

/** Reads, as admin, what the controller left: configurations and statuses. */
export async function captureWrites(
  kcp: KcpServer,
  setup: ScaleSetup,
): Promise<Writes> {
  const configurations: Writes["configurations"] = [];
  await eachLimited(setup.providers, 8, async ({ path, cluster }) => {
    const list = await kcp.request<{ items: KubeObject[] }>(
      "GET",
      `/clusters/${path}/${VWC_PATH}`,
    );
    for (const object of list.items) {
      configurations.push({ cluster, object: forCreate(object) });
    }
  });
  const rules = await kcp.request<{ items: KubeObject[] }>(
    "GET",
    `/clusters/${setup.rules.path}/${RULES_PATH}`,
  );
  const statuses = rules.items.map((rule) => ({
    name: rule.metadata!.name!,
    status: rule.status,
  }));
  return { configurations, statuses };
}

/** One floor run. */
export interface FloorRound {
  /** From the first request to the last answer, seconds. */
  seconds: number;
  /** CPU the client spent (this process, user + system), seconds. */
  cpuSeconds: number;
  /** Configurations created. */
  configurations: number;
  /** Statuses written. */
  statuses: number;
}

/** Where the floor writes: the virtual workspace, or the workspaces. */
export type FloorRoute = "virtual-workspace" | "direct";

/**
 * Makes `writes` through `setup.endpoint` as the controller's identity
 * (`route` `direct`: to the workspaces as kcp-admin), `concurrency` at a
 * time. A new client per run, so its connections are set up inside the
 * measurement, as the controller's are.
 *
 * @throws {KubeApiError} If any write fails: the floor is only the writes
 * that succeed.
 */
export async function floorRound(
  kcp: KcpServer,
  setup: ScaleSetup,
  writes: Writes,
  options: { concurrency: number; route?: FloorRoute },
): Promise<FloorRound> {
  const direct = options.route === "direct";
  const base = direct ? kcp.baseUrl : setup.endpoint;
  const cpuBefore = cpuUsage();
  const started = performance.now();
  const client = new KubeClient({
    server: base,
    base: kcp.baseUrl,
    caPem: kcp.caPem,
    token: kcp.identity(direct ? "admin" : "controller").token,
    insecureSkipTlsVerify: false,
  }, { userAgent: "scale-bench-floor" });
  const work: (() => Promise<unknown>)[] = [
    ...writes.configurations.map(({ cluster, object }) => () =>
      client.request(
        "POST",
        `${clusterUrl(base, cluster)}/${VWC_PATH}`,
        { body: object },
      )
    ),
    ...writes.statuses.map(({ name, status }) => () =>
      client.request(
        "PATCH",
        `${clusterUrl(base, setup.rules.cluster)}/${RULES_PATH}/${name}/status`,
        { body: { status }, contentType: "application/merge-patch+json" },
      )
    ),
  ];
  try {
    await eachLimited(work, options.concurrency, async (write) => {
      await write();
    });
  } finally {
    client.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuUsage(cpuBefore);
  return {
    seconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    configurations: writes.configurations.length,
    statuses: writes.statuses.length,
  };
}
