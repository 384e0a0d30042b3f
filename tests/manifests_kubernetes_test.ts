/**
 * The hosting-cluster manifests pass Kubernetes' own checks, without a
 * cluster: `kubectl kustomize manifests/deploy` piped into `manifest-check`
 * (`testing/kcp/server/manifestcheck/`), which runs kube-apiserver's strict
 * decoding, defaulting and create validation (kcp's Kubernetes 1.32 fork)
 * and the restricted Pod Security Standard on every object. One negative
 * control proves the check can fail.
 */
import assert from "node:assert/strict";
import { type CommandResult, runCommand } from "../testing/mod.ts";
import { requireManifestCheck } from "../testing/kcp/binaries.ts";
import { kustomizeYaml } from "../testing/kustomize.ts";

const DEPLOY = new URL("../manifests/deploy", import.meta.url).pathname;
const NS = "dependency-controller";

async function manifestCheck(yaml: string): Promise<CommandResult> {
  return await runCommand(await requireManifestCheck(), [], { stdin: yaml });
}

Deno.test("manifests/deploy passes kube-apiserver's strict decoding, defaulting and validation and the restricted Pod Security Standard", async () => {
  const run = await manifestCheck(await kustomizeYaml(DEPLOY));
  assert.equal(
    run.code,
    0,
    `manifest-check failed:\n${run.stdout}${run.stderr}`,
  );
  const lines = run.stdout.trim().split("\n");
  for (
    const expected of [
      `ok v1 Namespace ${NS}`,
      `ok v1 ServiceAccount ${NS}/dependency-controller`,
      `ok v1 ServiceAccount ${NS}/dependency-webhook`,
      `ok apps/v1 Deployment ${NS}/dependency-controller`,
      `ok apps/v1 Deployment ${NS}/dependency-webhook`,
      `ok v1 Service ${NS}/dependency-webhook`,
      `ok policy/v1 PodDisruptionBudget ${NS}/dependency-webhook`,
      `ok networking.k8s.io/v1 NetworkPolicy ${NS}/dependency-controller`,
      `ok networking.k8s.io/v1 NetworkPolicy ${NS}/dependency-webhook`,
    ]
  ) {
    assert.ok(lines.includes(expected), `${expected}:\n${run.stdout}`);
  }
  assert.ok(
    lines.some((l) =>
      /^ok v1 ConfigMap dependency-controller\/dependency-controller-config-[a-z0-9]{10}$/
        .test(l)
    ),
    `the generated ConfigMap was checked:\n${run.stdout}`,
  );
  const objects = lines.filter((l) => l.startsWith("ok "));
  assert.equal(lines.at(-1), `${objects.length} objects, 0 failed`);
  assert.ok(objects.length >= 8, run.stdout);
  assert.doesNotMatch(
    run.stdout,
    /warning:/,
    "kube-apiserver would warn about nothing",
  );
});

Deno.test("manifest-check fails a Deployment of manifests/deploy that breaks the restricted Pod Security Standard", async () => {
  const good = await kustomizeYaml(DEPLOY);
  const bad = good.replace(
    "allowPrivilegeEscalation: false",
    "allowPrivilegeEscalation: true",
  );
  assert.notEqual(bad, good, "manifests/deploy sets allowPrivilegeEscalation");
  const run = await manifestCheck(bad);
  assert.equal(run.code, 1, `manifest-check exits 1:\n${run.stdout}`);
  assert.match(
    run.stdout,
    /^FAIL apps\/v1 Deployment dependency-controller\/dependency-[a-z]+\n {2}.*pod security restricted:latest: allowPrivilegeEscalation != false/m,
  );
  assert.match(run.stdout, /^\d+ objects, 1 failed$/m, run.stdout);
});
