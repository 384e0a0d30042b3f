/**
 * The world of the sharded harness's own suite
 * (`tests/e2e/sharded_harness_steps.ts`): the objects it reads of kcp
 * (shards, ConfigMaps, a workspace's LogicalCluster), who kcp says a caller
 * is, the status a request fails with, and the workspaces the suite places
 * on each shard.
 *
 * ```ts
 * import { shardedKcpTest } from "./mod.ts";
 * import { shardedHarnessWorld, whoAmI } from "./sharded_harness_world.ts";
 *
 * shardedKcpTest("who am I", async (kcp, step) => {
 *   const w = shardedHarnessWorld(kcp);
 *   try {
 *     await step("admin", async () => {
 *       console.log((await whoAmI(w.front, "admin")).username); // admin
 *     });
 *   } finally {
 *     w.done();
 *   }
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import { type KcpApi, KcpRequestError } from "./kcp_server.ts";
import type {
  KcpShard,
  ShardedFront,
  ShardedKcp,
  ShardName,
} from "./sharded_kcp.ts";
import type { WorkspaceRef } from "./workspaces.ts";

export { NETWORK_FIXTURES } from "./harness_world.ts";
export { THIS_CLUSTER } from "./workspaces.ts";

/** ConfigMaps of namespace `default`, after `/clusters/<workspace>/`. */
export const CONFIGMAPS = "api/v1/namespaces/default/configmaps";

/** Any object, as far as the harness suite reads it. */
export interface NamedObject {
  /** Its metadata. */
  metadata: {
    /** Its name. */
    name: string;
    /** Its labels. */
    labels?: Record<string, string>;
    /** Its annotations. */
    annotations?: Record<string, string>;
  };
}

/** A kcp Shard object. */
export interface ShardObject extends NamedObject {
  /** Where the shard is, and where its clients are sent. */
  spec: { baseURL: string; externalURL?: string };
}

/** A ConfigMap. */
export interface ConfigMapObject extends NamedObject {
  /** Its data. */
  data?: Record<string, string>;
}

/** A SelfSubjectReview as kcp answers it. */
export interface SelfSubjectReview {
  /** Who the caller is. */
  status: { userInfo: { username: string; groups?: string[] } };
}

/** Who kcp says the caller is, by a SelfSubjectReview in root. */
export async function whoAmI(
  kcp: KcpApi,
  identity: "admin" | "controller" | "webhook" | "user",
): Promise<{ username: string; groups: string[] }> {
  const review = await kcp.request<SelfSubjectReview>(
    "POST",
    "/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews",
    {
      identity,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "SelfSubjectReview",
      },
    },
  );
  return {
    username: review.status.userInfo.username,
    groups: review.status.userInfo.groups ?? [],
  };
}

/**
 * The HTTP status a request fails with (a {@linkcode KcpRequestError});
 * another error is thrown on.
 *
 * @throws {AssertionError} If the request succeeds.
 */
export async function failureStatus(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (error) {
    if (error instanceof KcpRequestError) return error.status;
    throw error;
  }
  assert.fail("the request succeeded");
}

/** The harness suite's world; see {@linkcode shardedHarnessWorld}. */
export interface ShardedHarnessWorld {
  /** The front-proxy's view. */
  readonly front: ShardedFront;
  /** Each shard, talked to directly. */
  readonly shards: Readonly<Record<ShardName, KcpShard>>;
  /** The workspace placed on each shard, once placed. */
  readonly placed: Partial<Record<ShardName, WorkspaceRef>>;
  /** Prints the suite's wall time. */
  done(): void;
}

/** The harness suite's world on `kcp`, its wall time counted from now. */
export function shardedHarnessWorld(kcp: ShardedKcp): ShardedHarnessWorld {
  const started = performance.now();
  return {
    front: kcp.front,
    shards: kcp.shards,
    placed: {},
    done() {
      console.log(
        `sharded harness test wall time: ${
          ((performance.now() - started) / 1000).toFixed(1)
        } s`,
      );
    },
  };
}
