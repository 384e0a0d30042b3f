/**
 * The race the dependents index must never lose, as tenants run it: in
 * each consumer a VPC is created, a VirtualMachine naming it is created,
 * and the VPC is deleted at once (that delete must be denied: the VM still
 * refers to it); every other round the VM is deleted first and then the
 * VPC's delete must pass. {@linkcode backToBackDeletes} runs it over the
 * REST API in several consumers at once and tallies every verdict, so a
 * test can assert there was no wrong allow, also while kcp restarts or the
 * webhook's grants change under it ({@linkcode BackToBackOptions.outage}).
 *
 * {@linkcode indexMetrics} reads what the webhook's dependents index says
 * of itself (how reviews used it, where its feeds are).
 *
 * ```ts
 * import { backToBackDeletes, kcpTest } from "./mod.ts";
 * import assert from "node:assert/strict";
 *
 * kcpTest("always denied", async (kcp, step) => {
 *   await step("the race", async () => {
 *     const tally = await backToBackDeletes(kcp, {
 *       consumers: ["root:consumers:c1"],
 *       namespace: "team-a",
 *       prefix: "race",
 *       rounds: 10,
 *     });
 *     assert.deepEqual(tally.wrongAllows, []);
 *   });
 * });
 * ```
 *
 * @module
 */
import type { WebhookProcess } from "./components.ts";
import { type KcpApi, KcpRequestError } from "./kcp_server.ts";
import { vmManifest, vpcManifest } from "./objects.ts";

/** Options of {@linkcode backToBackDeletes}. */
export interface BackToBackOptions {
  /** The consumer workspaces (paths); each runs its rounds at once with the others. */
  consumers: readonly string[];
  /** The namespace (it exists in every consumer). */
  namespace: string;
  /** Names this run's objects (`<prefix>-vpc-<i>`, `<prefix>-vm-<i>`): unique per run. */
  prefix: string;
  /** Rounds per consumer. @default {Infinity} (until `signal` aborts) */
  rounds?: number;
  /** Ends the run after the round in progress in each consumer. */
  signal?: AbortSignal;
  /**
   * Whether kcp may be unreachable or answering oddly now (stopped,
   * restarting): then an error other than a verdict is retried, and a
   * delete whose answer was lost is repeated until it gets one. Outside an
   * outage such an error fails the run. @default {() => false}
   */
  outage?: () => boolean;
  /** The tally to add to (a test reads it while the run goes on). */
  tally?: BackToBackTally;
}

/** What a run of {@linkcode backToBackDeletes} saw, updated as it goes. */
export interface BackToBackTally {
  /** Rounds completed, over all consumers. */
  rounds: number;
  /** Back-to-back deletes denied with `409` naming the VM (the expected verdict). */
  denied: number;
  /**
   * Back-to-back deletes refused otherwise (kcp could not call the
   * webhook, or the webhook failed closed): `<consumer> <vpc>: <error>`.
   * The delete is then asked again until it gets a verdict.
   */
  refused: string[];
  /**
   * Back-to-back deletes that went through (a 2xx answer, or the VPC gone
   * when asked again after a lost answer): `<consumer> <vpc>`. Never
   * acceptable.
   */
  wrongAllows: string[];
  /** Deletes of a VPC whose VM was deleted first that went through. */
  allowed: number;
}

/** A tally with nothing in it. */
export function emptyTally(): BackToBackTally {
  return { rounds: 0, denied: 0, refused: [], wrongAllows: [], allowed: 0 };
}

/** A pause between retries while kcp is away. */
const RETRY_MS = 250;
/** How long one step of a round keeps trying through an outage. */
const STEP_DEADLINE_MS = 180_000;

/**
 * Runs the back-to-back create-VM/delete-VPC race in every consumer at
 * once (see the module's header) and returns the tally. A denial must be
 * `409` and name `VirtualMachine/<prefix>-vm-<i>`; a delete allowed while
 * the VM names the VPC is recorded in `wrongAllows`, not thrown, so the
 * whole run is seen.
 *
 * @throws {Error} When a request fails outside an outage, a denial names
 * something else, or a step does not get through an outage in 3 minutes.
 */
export async function backToBackDeletes(
  kcp: KcpApi,
  options: BackToBackOptions,
): Promise<BackToBackTally> {
  const tally = options.tally ?? emptyTally();
  const rounds = options.rounds ?? Infinity;
  const outage = options.outage ?? (() => false);
  await Promise.all(options.consumers.map(async (consumer) => {
    const api = (resource: "vpcs" | "virtualmachines") =>
      `/clusters/${consumer}/apis/${
        resource === "vpcs" ? "network" : "compute"
      }.example.com/v1alpha1/namespaces/${options.namespace}/${resource}`;
    /**
     * Runs `call` until it answers, through an outage; `undefined` when,
     * asked again, it answers a `tolerated` status about `name` itself.
     */
    const through = async (
      what: string,
      name: string,
      call: () => Promise<unknown>,
      tolerated: readonly number[] = [],
    ) => {
      const deadline = Date.now() + STEP_DEADLINE_MS;
      let retried = false;
      for (;;) {
        try {
          return await call();
        } catch (error) {
          // A create or delete repeated after a lost answer may find it done.
          if (
            retried && tolerated.some((status) => about(error, status, name))
          ) return undefined;
          if (!outage() || Date.now() > deadline) {
            throw new Error(`${what} in ${consumer}`, { cause: error });
          }
        }
        retried = true;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    };
    for (let i = 0; i < rounds && !options.signal?.aborted; i++) {
      const vpc = `${options.prefix}-vpc-${i}`;
      const vm = `${options.prefix}-vm-${i}`;
      await through(
        `creating VPC ${vpc}`,
        vpc,
        () =>
          kcp.request("POST", api("vpcs"), {
            body: vpcManifest(vpc, { namespace: options.namespace }),
          }),
        [409],
      );
      await through(
        `creating VM ${vm}`,
        vm,
        () =>
          kcp.request("POST", api("virtualmachines"), {
            body: vmManifest(vm, { namespace: options.namespace, vpc }),
          }),
        [409],
      );
      await denyOnce(kcp, `${api("vpcs")}/${vpc}`, {
        what: `${consumer} ${vpc}`,
        vpc,
        vm,
        outage,
        tally,
      });
      if (i % 2 === 0) {
        await through(
          `deleting VM ${vm}`,
          vm,
          () => kcp.request("DELETE", `${api("virtualmachines")}/${vm}`),
          [404],
        );
        await allowSoon(kcp, `${api("vpcs")}/${vpc}`, vpc, outage);
        tally.allowed++;
      }
      tally.rounds++;
    }
  }));
  return tally;
}

/**
 * Deletes the VPC at `path` while its VM names it, until a verdict: a
 * `409` naming the VM (denied), or the VPC gone (a wrong allow). Any other
 * refusal is recorded and asked again.
 */
async function denyOnce(
  kcp: KcpApi,
  path: string,
  context: {
    what: string;
    vpc: string;
    vm: string;
    outage: () => boolean;
    tally: BackToBackTally;
  },
): Promise<void> {
  const { what, tally } = context;
  const deadline = Date.now() + STEP_DEADLINE_MS;
  // The answers lost before, with when each was asked, for the record.
  const lost: string[] = [];
  for (;;) {
    const asked = new Date().toISOString();
    try {
      await kcp.request("DELETE", path);
      tally.wrongAllows.push(what);
      return;
    } catch (error) {
      if (error instanceof KcpRequestError) {
        if (error.status === 409) {
          if (
            !new RegExp(`still referenced by VirtualMachine/${context.vm} `)
              .test(error.message)
          ) {
            throw new Error(`${what}: a denial naming another`, {
              cause: error,
            });
          }
          tally.denied++;
          return;
        }
        // Gone means it was deleted (by a lost answer's request). A 404
        // that is not about the VPC (kcp starting, its API not served
        // yet) is no verdict.
        if (about(error, 404, context.vpc)) {
          tally.wrongAllows.push(
            `${what} (gone after a lost answer: ${lost.join("; ")})`,
          );
          return;
        }
        tally.refused.push(`${what}: ${error.message}`);
      } else if (!context.outage()) {
        throw new Error(`deleting ${what}`, { cause: error });
      } else {
        lost.push(`asked at ${asked}: ${error}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`${what}: no verdict in time`, { cause: error });
      }
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** Deletes the VPC at `path`, its VM gone: retried until it goes through (or is gone). */
async function allowSoon(
  kcp: KcpApi,
  path: string,
  name: string,
  outage: () => boolean,
): Promise<void> {
  const deadline = Date.now() + STEP_DEADLINE_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      await kcp.request("DELETE", path);
      return;
    } catch (error) {
      if (about(error, 404, name)) return;
      // 409 while the webhook still sees the VM (a list is not instant);
      // anything else only while kcp is away.
      if (
        !(error instanceof KcpRequestError && error.status === 409) &&
        !outage()
      ) throw new Error(`deleting ${path}`, { cause: error });
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
  throw new Error(`the delete of ${path} did not pass`, { cause: lastError });
}

/**
 * Whether `error` is kcp's answer `status` about the object `name` itself
 * (its `Status` names it: `404` it is not there, `409` it exists), not
 * about its API (kcp answers `404` for a type it does not serve yet, e.g.
 * while it starts).
 */
export function about(error: unknown, status: number, name: string): boolean {
  if (!(error instanceof KcpRequestError) || error.status !== status) {
    return false;
  }
  const body = error.body as { details?: { name?: unknown } } | undefined;
  return body?.details?.name === name;
}

/** What the webhook's dependents index says of itself on `/metrics`. */
export interface IndexMetrics {
  /** `dependency_webhook_index_answers_total` by outcome (absent: 0). */
  answers: Record<string, number>;
  /** `dependency_webhook_index_feeds`, summed over indexes, by state. */
  feeds: Record<string, number>;
  /** The index lines of the exposition, to print. */
  lines: string[];
}

/** Reads the webhook's `/metrics` for its dependents index. */
export async function indexMetrics(
  webhook: WebhookProcess,
): Promise<IndexMetrics> {
  const { text } = await webhook.get(webhook.metricsPort, "/metrics");
  return parseIndexMetrics(text);
}

/** The dependents index's metrics in Prometheus exposition `text`. */
export function parseIndexMetrics(text: string): IndexMetrics {
  const answers: Record<string, number> = {};
  const feeds: Record<string, number> = {};
  const lines: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("dependency_webhook_index_")) continue;
    lines.push(line);
    const answer =
      /^dependency_webhook_index_answers_total\{[^}]*outcome="([^"]+)"[^}]*\} (\S+)$/
        .exec(line);
    if (answer !== null) {
      answers[answer[1]!] = (answers[answer[1]!] ?? 0) + Number(answer[2]);
    }
    const feed =
      /^dependency_webhook_index_feeds\{[^}]*state="([^"]+)"[^}]*\} (\S+)$/
        .exec(line);
    if (feed !== null) {
      feeds[feed[1]!] = (feeds[feed[1]!] ?? 0) + Number(feed[2]);
    }
  }
  return { answers, feeds, lines };
}
