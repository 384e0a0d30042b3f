/**
 * The proof of an Enforced Lock for `assertStatusTruth`
 * (`status_truth.ts`): its target (reused, or created empty in the Lock's
 * namespace); a dry-run delete (or, for a Lock on updates only, update) of
 * it must be denied by the Lock. Internal to `status_truth.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ProofContext } from "./_status_truth_context.ts";
import {
  apiVersion,
  discover,
  escape,
  type Found,
  kubectlType,
  type LockSpec,
} from "./_status_truth_shared.ts";

/** How far ahead a Lock's expiry must be for its Enforced to be proven. */
const EXPIRY_MARGIN_MS = 60_000;

/**
 * Proves an Enforced Lock in its workspace. A Lock that expires within
 * {@linkcode EXPIRY_MARGIN_MS} is not proven: it may let go while the
 * proof runs, which is what it says it will do.
 *
 * @throws {AssertionError} Naming the Lock and what the request returned if
 * it is not denied.
 */
export async function proveLock(
  context: ProofContext,
  found: Found,
): Promise<void> {
  const { kcp } = context;
  const { workspace, object } = found;
  const spec = object.spec as unknown as LockSpec;
  const { target } = spec;
  if (
    spec.expiresAt !== undefined &&
    !(Date.parse(spec.expiresAt) - Date.now() > EXPIRY_MARGIN_MS)
  ) {
    return;
  }
  const lockNamespace = object.metadata.namespace!;
  const lockName = object.metadata.name;
  const name = `Lock ${lockNamespace}/${lockName} in ${workspace}`;
  const isNamespace = target.group === "" && target.resource === "namespaces";
  const type = kubectlType(target);
  const exists = await kcp.kubectl(
    ["get", type, target.name, ...(isNamespace ? [] : ["-n", lockNamespace])],
    { workspace },
  );
  let namespaced = !isNamespace;
  if (exists.code !== 0) {
    assert.match(
      exists.stderr,
      /NotFound|not found/,
      `${name}: reading its target ${type}/${target.name}`,
    );
    const served = await discover(kcp, workspace, target);
    assert.ok(
      served,
      `${name} says Ready=True Enforced, but its workspace does not serve ${type}`,
    );
    namespaced = served.namespaced;
    await context.create(workspace, {
      apiVersion: apiVersion(target),
      kind: served.kind,
      metadata: {
        name: target.name,
        ...(served.namespaced ? { namespace: lockNamespace } : {}),
      },
    }, {
      role: "lock target",
      type,
      name: target.name,
      ...(served.namespaced ? { namespace: lockNamespace } : {}),
    });
  }
  const scope = namespaced ? ["-n", lockNamespace] : [];
  const operations = spec.operations ?? ["Delete"];
  const args = operations.includes("Delete")
    ? ["delete", type, target.name, ...scope, "--dry-run=server"]
    : [
      "label",
      type,
      target.name,
      ...scope,
      `status-truth=${crypto.randomUUID().slice(0, 8)}`,
      "--overwrite",
      "--dry-run=server",
    ];
  const lock = `Lock ${escape(`${lockNamespace}/${lockName}`)} \\(`;
  await context.denied(workspace, args, {
    message: new RegExp(
      `locked by (.*, )?${lock}|locked by Lock .* and \\d+ more|a Lock may hold it`,
    ),
    lie:
      `${name} says Ready=True Enforced, but ${type}/${target.name} is not held (${
        operations.includes("Delete") ? "delete" : "update"
      })`,
  });
}
