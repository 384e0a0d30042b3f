/**
 * `kubectl kustomize`, with the kubectl the tests build: what
 * `kubectl apply -k` would send, rendered without a cluster. For the tests
 * of the manifests under `manifests/`.
 *
 * ```ts ignore
 * import { kustomizeYaml } from "./kustomize.ts";
 *
 * const yaml = await kustomizeYaml("manifests/deploy");
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import { requireKcpBinaries } from "./kcp/binaries.ts";
import { runCommand } from "./process.ts";

/**
 * The YAML `kubectl kustomize <dir>` prints; asserts that it succeeds,
 * with its stderr in the message when it does not.
 */
export async function kustomizeYaml(dir: string): Promise<string> {
  const { kubectl } = await requireKcpBinaries();
  const output = await runCommand(kubectl, ["kustomize", dir]);
  assert.equal(
    output.code,
    0,
    `kubectl kustomize ${dir} failed: ${output.stderr}`,
  );
  return output.stdout;
}
