/**
 * What e2e tests expect of a user's kubectl commands beyond the single
 * deletes of `delete_checks.ts`: any command polled until the webhook
 * denies it (a new rule or Lock takes effect once the controller installed
 * the configuration and the webhook read it), a server-side dry-run delete
 * whose error text is all a test compares, a delete denied as "still
 * referenced" (the blockers matched, the object still there), the targets
 * of one type in one workspace, and a command's exit code.
 *
 * ```ts
 * import { kcpTest, waitForDenial } from "./mod.ts";
 *
 * kcpTest("a locked VPC stays", async (kcp, step) => {
 *   await step("delete", async () => {
 *     await waitForDenial(kcp, {
 *       workspace: "root:consumers:c1",
 *       args: ["delete", "vpc", "core", "-n", "team-a", "--dry-run=server"],
 *       expected: /is locked by Lock team-a\/prod/,
 *     });
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type DeleteTarget,
  kubectlDelete,
  objectExists,
} from "./delete_checks.ts";
import type { KcpApi } from "./kcp_server.ts";
import type { CommandResult } from "./process.ts";
import { waitFor } from "./wait.ts";

/**
 * Runs kubectl in `workspace` as admin: the error text, or `""` when it
 * succeeded.
 */
export async function attempt(
  kcp: KcpApi,
  workspace: string,
  args: readonly string[],
): Promise<string> {
  const r = await kcp.kubectl([...args], { workspace });
  return r.code === 0 ? "" : r.stderr;
}

/** A command {@linkcode waitForDenial} polls, and the denial it waits for. */
export interface Denial {
  /** The workspace (path) kubectl runs in. */
  workspace: string;
  /**
   * kubectl's arguments; a function gives new ones for each try (an update
   * that must change something to reach admission).
   */
  args: readonly string[] | (() => readonly string[]);
  /** What the error text must match. */
  expected: RegExp;
}

/** How long {@linkcode waitForDenial} polls. */
export interface PollOptions {
  /** @default {60_000} */
  timeoutMs?: number;
  /** @default {250} */
  intervalMs?: number;
}

/**
 * Polls `denial.args` until kubectl fails with an error matching
 * `denial.expected`, and returns that error text.
 *
 * @throws {Error} If it is not within the timeout, with the last answer.
 */
export async function waitForDenial(
  kcp: KcpApi,
  denial: Denial,
  options: PollOptions = {},
): Promise<string> {
  const { workspace, args, expected } = denial;
  const argsOf = typeof args === "function" ? args : () => args;
  const what = typeof args === "function" ? "an update" : args.join(" ");
  return await waitFor(
    `kubectl ${what} in ${workspace} to be denied (${expected.source})`,
    async () => {
      const error = await attempt(kcp, workspace, argsOf());
      if (expected.test(error)) return error;
      // Not yet: the timeout names the last answer.
      throw new Error(`last answer: ${error.trim() || "allowed"}`);
    },
    {
      timeoutMs: options.timeoutMs ?? 60_000,
      intervalMs: options.intervalMs ?? 250,
    },
  );
}

/** A {@linkcode DeleteTarget} in a namespace. */
export type NamespacedTarget = DeleteTarget & { namespace: string };

/**
 * Targets of one type in one workspace: `targetsOf(C1, "subnets")` gives
 * a function from namespace and name to the Subnet to delete.
 */
export function targetsOf(
  workspace: string,
  type: string,
): (namespace: string, name: string) => NamespacedTarget {
  return (namespace, name) => ({ workspace, type, namespace, name });
}

/**
 * A server-side dry-run delete of `target`: the error text (a denial), or
 * `""` when it would be allowed.
 */
export async function dryRunDelete(
  kcp: KcpApi,
  target: DeleteTarget,
): Promise<string> {
  const r = await kubectlDelete(kcp, target, { dryRun: true });
  return r.code === 0 ? "" : r.stderr;
}

/**
 * Polls a server-side dry-run delete of `target` until it is denied with
 * an error matching `denial` (any error for `/[\s\S]/`), or, with
 * `undefined`, until it is allowed; returns kubectl's stderr (denied) or
 * stdout (allowed).
 *
 * @throws {Error} If it is not within 30 s.
 */
export async function waitForDryRunDelete(
  kcp: KcpApi,
  target: DeleteTarget,
  denial: RegExp | undefined,
): Promise<string> {
  return await waitFor(
    `a delete of ${target.type} ${
      target.namespace === undefined ? "" : `${target.namespace}/`
    }${target.name} in ${target.workspace} to be ${
      denial === undefined ? "allowed" : `denied matching ${denial}`
    }`,
    async () => {
      const r = await kubectlDelete(kcp, target, { dryRun: true });
      if (denial === undefined) return r.code === 0 ? r.stdout : undefined;
      return r.code !== 0 && denial.test(r.stderr) ? r.stderr : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

/** Any denial, for {@linkcode waitForDryRunDelete}. */
export const ANY_DENIAL: RegExp = /[\s\S]/;

/**
 * Asserts that a real delete of `target` is denied as still referenced
 * (`cannot delete <type>/<name>: still referenced by ...`), with an error
 * matching `blockers`, and that the object is still there. Returns
 * kubectl's stderr.
 */
export async function assertDenied(
  kcp: KcpApi,
  target: DeleteTarget,
  blockers: RegExp,
): Promise<string> {
  const r = await kubectlDelete(kcp, target);
  assert.notEqual(r.code, 0, `delete of ${target.name} was allowed`);
  assert.match(
    r.stderr,
    new RegExp(
      `cannot delete ${target.type}/${target.name}: still referenced by `,
    ),
  );
  assert.match(r.stderr, blockers);
  assert.ok(await objectExists(kcp, target), `${target.name} is gone`);
  return r.stderr;
}

/**
 * Asserts a command's exit code, showing its output when it differs (the
 * first 2 000 characters of stdout, which may be a whole drawing).
 */
export function assertExit(result: CommandResult, code: number): void {
  assert.equal(
    result.code,
    code,
    `exit ${result.code}\nstdout: ${
      result.stdout.slice(0, 2000)
    }\nstderr: ${result.stderr}`,
  );
}
