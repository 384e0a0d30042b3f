/**
 * A consumer workspace in which Projects own what they create
 * (`owned_projects.ts`), as the ordered-teardown e2e tests drive it with
 * kubectl: create a Project and its tree, wait until the rules order it,
 * tear it down while watches record the order, hold a foreground delete
 * until kcp's garbage collector was denied everything, and a probe Project
 * that our own finalizer keeps deleting (it shows which `protectWhile` the
 * webhook has taken). Also the webhook's denial counters the teardowns
 * report.
 *
 * ```ts
 * import { kcpTest, ownedTree, ProjectConsumer } from "./mod.ts";
 *
 * kcpTest("a Project's teardown", async (kcp, step) => {
 *   await step("foreground", async () => {
 *     const c1 = new ProjectConsumer(kcp, "root:consumers:c1");
 *     const owned = ownedTree("fg");
 *     await c1.createProject("fg", owned);
 *     await c1.waitForReferences("fg", owned);
 *     const order = await c1.teardown("fg", "foreground");
 *     console.log(order.deleted.length);
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import { applyObjects } from "./apis.ts";
import type { WebhookProcess } from "./components.ts";
import { dropFinalizers } from "./delete_checks.ts";
import {
  type DeletionOrder,
  type DeletionRecorder,
  recordDeletions,
} from "./deletion_order.ts";
import {
  garbageCollectorErrors,
  kcpLogOffset,
  kcpLogSince,
} from "./kcp_log.ts";
import type { KcpApi, KubectlResult } from "./kcp_server.ts";
import { sample } from "./metrics_text.ts";
import {
  ownedList,
  ownedObjects,
  type OwnedTree,
  projectDenial,
  projectOwnerReferences,
  TEARDOWN_RESOURCES,
  TEARDOWN_TYPES,
  type TeardownResource,
} from "./owned_projects.ts";
import { waitFor } from "./wait.ts";

/** The probe Project (and its namespace) of {@linkcode ProjectConsumer.createProbe}. */
export const PROBE = "probe";
/** Our finalizer on the probe Project: it stays deleting until we let it go. */
export const PROBE_HOLD = "owner-teardown.example.com/hold";

/** An object of a teardown's types in the consumer. */
export interface TeardownObject {
  /** Its resource. */
  resource: TeardownResource;
  /** Its namespace. */
  namespace: string;
  /** Its name. */
  name: string;
}

/** A consumer workspace with Projects, driven as a user drives it. */
export class ProjectConsumer {
  /** The kcp. */
  readonly kcp: KcpApi;
  /** The consumer's workspace (path). */
  readonly workspace: string;

  /** The consumer `workspace` of `kcp`. */
  constructor(kcp: KcpApi, workspace: string) {
    this.kcp = kcp;
    this.workspace = workspace;
  }

  /**
   * Creates the namespace `key`, the Project `key` in it, and what it owns;
   * returns the Project's uid.
   */
  async createProject(key: string, owned: OwnedTree): Promise<string> {
    await applyObjects(this.kcp, this.workspace, [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: key } },
      {
        apiVersion: "network.example.com/v1alpha1",
        kind: "Project",
        metadata: { name: key, namespace: key },
        spec: { description: `owns the network and VMs of ${key}` },
      },
    ]);
    const uid = await this.#uid(key);
    assert.match(uid, /^[0-9a-f-]{36}$/);
    await applyObjects(
      this.kcp,
      this.workspace,
      ownedObjects(owned, { namespace: key, project: { name: key, uid } }),
    );
    return uid;
  }

  /** `kubectl delete <resource> <name> -n <namespace>`, maybe as a dry run. */
  delete(
    object: TeardownObject,
    options: { dryRun?: boolean } = {},
  ): Promise<KubectlResult> {
    return this.kcp.kubectl([
      "delete",
      object.resource,
      object.name,
      "-n",
      object.namespace,
      ...(options.dryRun ? ["--dry-run=server"] : []),
    ], { workspace: this.workspace });
  }

  /**
   * Polls a server-side dry-run delete until it is denied with a message
   * matching `denial` (or, with `undefined`, allowed); returns the output.
   */
  waitForDryRun(
    object: TeardownObject,
    denial: RegExp | undefined,
  ): Promise<string> {
    const { resource, namespace, name } = object;
    return waitFor(
      `a delete of ${resource} ${namespace}/${name} to be ${
        denial === undefined ? "allowed" : `denied matching ${denial}`
      }`,
      async () => {
        const r = await this.delete(object, { dryRun: true });
        if (denial === undefined) return r.code === 0 ? r.stdout : undefined;
        return r.code !== 0 && denial.test(r.stderr) ? r.stderr : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  }

  /** Waits until the rules order what the Project `key` owns. */
  async waitForReferences(key: string, owned: OwnedTree): Promise<void> {
    const vm = owned.vms[0]!;
    const subnet = owned.subnets[0]!;
    await this.waitForDryRun(
      { resource: "subnets", namespace: key, name: vm.subnet },
      new RegExp(`still referenced by VirtualMachine/${vm.name} `),
    );
    await this.waitForDryRun(
      { resource: "vpcs", namespace: key, name: subnet.vpc },
      new RegExp(`still referenced by Subnet/${subnet.name} `),
    );
  }

  /** Watches on the four types, ready to record a teardown. */
  recordTeardown(): Promise<DeletionRecorder> {
    return recordDeletions(this.kcp, {
      workspace: this.workspace,
      types: Object.values(TEARDOWN_TYPES),
    });
  }

  /** The objects of the four types left in `namespace`. */
  async leftIn(namespace: string): Promise<string[]> {
    const out = await this.kcp.kubectlOk(
      ["get", TEARDOWN_RESOURCES, "-n", namespace, "-o", "name"],
      { workspace: this.workspace },
    );
    return out.split("\n").filter((l) => l !== "");
  }

  /** Waits, with a generous bound, until nothing of the four types is left. */
  async waitForEmpty(namespace: string): Promise<void> {
    await waitFor(
      `every Project, VPC, Subnet and VirtualMachine in ${namespace} to be gone`,
      async () => (await this.leftIn(namespace)).length === 0 || undefined,
      { timeoutMs: 300_000, intervalMs: 100 },
    );
  }

  /**
   * Deletes the Project `key` with `cascade`, waits until it and what it
   * owns are gone, and returns what the watches saw.
   */
  async teardown(
    key: string,
    cascade: "foreground" | "background",
  ): Promise<DeletionOrder> {
    const recorder = await this.recordTeardown();
    const from = performance.now();
    await this.kcp.kubectlOk([
      "delete",
      "project",
      key,
      "-n",
      key,
      `--cascade=${cascade}`,
      "--wait=false",
    ], { workspace: this.workspace });
    await this.waitForEmpty(key);
    return await recorder.stop({ namespace: key, from });
  }

  /**
   * Creates the Project `key` (in the namespace `key`) and what it owns,
   * deletes it with `--cascade=foreground`, and waits until kcp's garbage
   * collector was denied every owned object (kcp's log says so). Returns
   * the seconds from the delete until then.
   */
  async holdTeardown(key: string, owned: OwnedTree): Promise<number> {
    await this.createProject(key, owned);
    await this.waitForReferences(key, owned);
    const offset = await kcpLogOffset(this.kcp);
    const from = performance.now();
    await this.kcp.kubectlOk([
      "delete",
      "project",
      key,
      "-n",
      key,
      "--cascade=foreground",
      "--wait=false",
    ], { workspace: this.workspace });
    const list = ownedList(owned);
    await waitFor(
      `kcp's garbage collector to be denied every object Project ${key} owns`,
      async () => {
        const lines = garbageCollectorErrors(
          await kcpLogSince(this.kcp, offset),
        );
        return list.every(([resource, name]) =>
          lines.some((l) => projectDenial({ resource, name }, key).test(l))
        ) || undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    return (performance.now() - from) / 1000;
  }

  /**
   * Creates the probe: a Project {@linkcode PROBE} (in the namespace
   * `probe`) with our finalizer {@linkcode PROBE_HOLD}, owning one
   * VirtualMachine `probe-vm` (background: kcp's collector leaves it alone
   * while its owner exists).
   */
  async createProbe(): Promise<void> {
    await applyObjects(this.kcp, this.workspace, [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: PROBE } },
      {
        apiVersion: "network.example.com/v1alpha1",
        kind: "Project",
        metadata: { name: PROBE, namespace: PROBE, finalizers: [PROBE_HOLD] },
        spec: {},
      },
    ]);
    const uid = await this.#uid(PROBE);
    await applyObjects(this.kcp, this.workspace, [{
      apiVersion: "compute.example.com/v1alpha1",
      kind: "VirtualMachine",
      metadata: {
        name: "probe-vm",
        namespace: PROBE,
        ownerReferences: projectOwnerReferences({ name: PROBE, uid }),
      },
      spec: {},
    }]);
  }

  /** Deletes the probe Project; our finalizer keeps it deleting. */
  async deleteProbe(): Promise<void> {
    await this.kcp.kubectlOk(
      ["delete", "project", PROBE, "-n", PROBE, "--wait=false"],
      { workspace: this.workspace },
    );
  }

  /**
   * Waits until a delete of the probe's VirtualMachine is denied naming
   * the probe (`held`) or allowed (not held); returns the output.
   */
  waitForProbe(held: boolean): Promise<string> {
    return this.waitForDryRun(
      { resource: "virtualmachines", namespace: PROBE, name: "probe-vm" },
      held
        ? projectDenial(
          { resource: "virtualmachines", name: "probe-vm" },
          PROBE,
        )
        : undefined,
    );
  }

  /** Lets the probe go (drops our finalizer) and waits until it is gone with what it owns. */
  async releaseProbe(): Promise<void> {
    const r = await dropFinalizers(this.kcp, {
      workspace: this.workspace,
      type: "project",
      namespace: PROBE,
      name: PROBE,
    });
    assert.equal(r.code, 0, r.stderr);
    await this.waitForEmpty(PROBE);
  }

  /** The uid of the Project `key` in the namespace `key`. */
  #uid(key: string): Promise<string> {
    return this.kcp.kubectlOk([
      "get",
      "project",
      key,
      "-n",
      key,
      "-o",
      "jsonpath={.metadata.uid}",
    ], { workspace: this.workspace });
  }
}

/** The webhook's denial counters the teardowns report. */
export interface TeardownDenials {
  /** `denied_referenced` reviews: a dependent still refers. */
  referenced: number;
  /** `denied_owned` reviews: only an owner holds. */
  owned: number;
}

/** The webhook's `denied_referenced` and `denied_owned` review counts now. */
export async function teardownDenials(
  webhook: WebhookProcess,
): Promise<TeardownDenials> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  const reviews = (outcome: string) =>
    sample(
      text,
      `dependency_webhook_admission_reviews_total{outcome="${outcome}"}`,
    ) ?? 0;
  return {
    referenced: reviews("denied_referenced"),
    owned: reviews("denied_owned"),
  };
}
