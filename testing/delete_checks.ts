/**
 * A user's deletes and what the webhook says to them, as e2e tests check
 * them with kubectl: a real delete denied with an exact message (and the
 * object still there), a delete that goes through (and the object gone),
 * and a server-side dry run polled until a new rule takes effect.
 *
 * ```ts
 * import { assertDeleteDenied, kcpTest } from "./mod.ts";
 *
 * kcpTest("a referenced subnet stays", async (kcp, step) => {
 *   await step("delete", async () => {
 *     await assertDeleteDenied(kcp, {
 *       workspace: "root:consumers:c1",
 *       type: "subnet",
 *       namespace: "team-a",
 *       name: "s-1",
 *     }, "cannot delete subnets/s-1: it belongs to Network/net-a (.metadata.labels[\"example.com/owner\"]), which still exists");
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import type { KcpApi, KubectlResult } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";

/** An object a user deletes. */
export interface DeleteTarget {
  /** The workspace (path) it is in. */
  workspace: string;
  /** Its type as kubectl takes it (`subnet`, `vpcs.network.example.com`). */
  type: string;
  /** Its namespace; absent for a cluster-scoped object. */
  namespace?: string;
  /** Its name. */
  name: string;
}

/** The webhook's denial as kubectl prints it, after kcp's prefix. */
export const DENIED: RegExp = /denied the request: (.*)$/m;

/** `<type> <name> [-n <namespace>]`. */
function named(target: DeleteTarget): string[] {
  return [
    target.type,
    target.name,
    ...(target.namespace === undefined ? [] : ["-n", target.namespace]),
  ];
}

/** `<namespace>/<name>`, or `<name>`. */
function shown(target: DeleteTarget): string {
  return target.namespace === undefined
    ? target.name
    : `${target.namespace}/${target.name}`;
}

/** `kubectl delete`, for real or as a server-side dry run. */
export function kubectlDelete(
  kcp: KcpApi,
  target: DeleteTarget,
  options: { dryRun?: boolean } = {},
): Promise<KubectlResult> {
  return kcp.kubectl([
    "delete",
    ...named(target),
    ...(options.dryRun ? ["--dry-run=server"] : []),
  ], { workspace: target.workspace });
}

/**
 * `kubectl patch` that removes every finalizer of the object, so that a
 * delete asked for earlier completes; kubectl's result, not checked.
 */
export function dropFinalizers(
  kcp: KcpApi,
  target: DeleteTarget,
): Promise<KubectlResult> {
  return kcp.kubectl([
    "patch",
    ...named(target),
    "--type=merge",
    "-p",
    '{"metadata":{"finalizers":null}}',
  ], { workspace: target.workspace });
}

/**
 * Whether the object exists.
 *
 * @throws {AssertionError} If kubectl fails otherwise than with NotFound.
 */
export async function objectExists(
  kcp: KcpApi,
  target: DeleteTarget,
): Promise<boolean> {
  const r = await kcp.kubectl(["get", ...named(target), "-o", "name"], {
    workspace: target.workspace,
  });
  if (r.code === 0) return true;
  assert.match(r.stderr, /NotFound|not found/, r.stderr);
  return false;
}

/**
 * Whether `stderr` is the webhook's 409 denial with exactly `message`
 * (a string) or a message matching it (a RegExp).
 */
export function isDenial(stderr: string, message: string | RegExp): boolean {
  const said = DENIED.exec(stderr)?.[1];
  if (!/\(Conflict\)/.test(stderr) || said === undefined) return false;
  return typeof message === "string" ? said === message : message.test(said);
}

/**
 * Asserts that a real delete of `target` is denied with `message` (exact
 * text, or a match) and that the object is still there. Returns the denial.
 */
export async function assertDeleteDenied(
  kcp: KcpApi,
  target: DeleteTarget,
  message: string | RegExp,
): Promise<string> {
  const r = await kubectlDelete(kcp, target);
  assert.notEqual(r.code, 0, `delete of ${target.name} was allowed`);
  assert.ok(
    isDenial(r.stderr, message),
    `delete of ${target.name} in ${target.workspace}: expected the denial ${message}, got: ${r.stderr}`,
  );
  assert.ok(await objectExists(kcp, target), `${target.name} is gone`);
  return DENIED.exec(r.stderr)![1]!;
}

/** Asserts that a real delete of `target` succeeds and the object is gone. */
export async function assertDeleteAllowed(
  kcp: KcpApi,
  target: DeleteTarget,
): Promise<void> {
  const r = await kubectlDelete(kcp, target);
  assert.equal(r.code, 0, `delete of ${target.name}: ${r.stderr}`);
  assert.ok(!(await objectExists(kcp, target)), `${target.name} remains`);
}

/**
 * Polls a server-side dry-run delete of `target` until it is denied with
 * `message`: a new rule takes effect once the controller installed the
 * configuration and the webhook read the rule. Returns kubectl's stderr.
 *
 * @throws {Error} If it is not within the timeout, with the last answer.
 */
export async function waitForDeleteDenial(
  kcp: KcpApi,
  target: DeleteTarget,
  message: string | RegExp,
): Promise<string> {
  let last = "";
  return await waitFor(
    `a delete of ${target.type} ${shown(target)} to be denied with ${message}`,
    async () => {
      const r = await kubectlDelete(kcp, target, { dryRun: true });
      last = r.code === 0 ? `allowed: ${r.stdout}` : r.stderr;
      if (r.code !== 0 && isDenial(r.stderr, message)) return r.stderr;
      throw new Error(`last answer: ${last.trim()}`);
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}
