/**
 * The hosting-cluster manifests pass Kubernetes' own checks, without a
 * cluster: `kubectl kustomize manifests/deploy` piped into `manifest-check`
 * (`testing/kcp/server/manifestcheck/`), which runs kube-apiserver's strict
 * decoding, defaulting and create validation (kcp's Kubernetes 1.32 fork)
 * and the restricted Pod Security Standard on every object. The negative
 * controls break the build through kustomize overlays, as an operator's
 * overlay would, and prove each mistake is caught and named.
 */
import assert from "node:assert/strict";
import { relative } from "node:path";
import { type CommandResult, runCommand } from "../testing/mod.ts";
import {
  requireKcpBinaries,
  requireManifestCheck,
} from "../testing/kcp/binaries.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DEPLOY = `${ROOT}manifests/deploy`;
const NS = "dependency-controller";

type Run = CommandResult;

async function kustomize(dir: string): Promise<string> {
  const { kubectl } = await requireKcpBinaries();
  const output = await runCommand(kubectl, ["kustomize", dir]);
  assert.equal(
    output.code,
    0,
    `kubectl kustomize ${dir} failed: ${output.stderr}`,
  );
  return output.stdout;
}

async function manifestCheck(yaml: string): Promise<Run> {
  return await runCommand(await requireManifestCheck(), [], { stdin: yaml });
}

/**
 * Builds manifests/deploy through an overlay that applies the given JSON 6902
 * patches (YAML) to one object.
 */
async function overlay(
  target: { kind: string; name: string },
  patch: string,
): Promise<string> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/kustomization.yaml`,
      [
        "resources:",
        `  - ${relative(dir, DEPLOY)}`,
        "patches:",
        `  - target: {kind: ${target.kind}, name: ${target.name}}`,
        "    patch: |",
        ...patch.trim().split("\n").map((line) => `      ${line}`),
        "",
      ].join("\n"),
    );
    return await kustomize(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The lines of one object's report: "FAIL <id>" and its indented errors. */
function failure(stdout: string, id: string): string {
  const lines = stdout.split("\n");
  const start = lines.indexOf(`FAIL ${id}`);
  assert.notEqual(start, -1, `${id} failed:\n${stdout}`);
  const end = lines.findIndex((l, i) => i > start && !l.startsWith("  "));
  return lines.slice(start, end).join("\n");
}

/** Asserts that exactly the object `id` failed, with an error matching `error`. */
function assertOnlyFailure(run: Run, id: string, error: RegExp): void {
  assert.equal(run.code, 1, `manifest-check exits 1:\n${run.stdout}`);
  assert.match(failure(run.stdout, id), error);
  assert.match(run.stdout, /^\d+ objects, 1 failed$/m, run.stdout);
}

const CONTROLLER = `apps/v1 Deployment ${NS}/dependency-controller`;
const WEBHOOK = `apps/v1 Deployment ${NS}/dependency-webhook`;

Deno.test("manifests/deploy passes kube-apiserver's strict decoding, defaulting and validation and the restricted Pod Security Standard", async () => {
  const run = await manifestCheck(await kustomize(DEPLOY));
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
      `ok ${CONTROLLER}`,
      `ok ${WEBHOOK}`,
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

Deno.test("manifest-check rejects an unknown field, naming its path (strict decoding)", async () => {
  const run = await manifestCheck(
    await overlay(
      { kind: "Deployment", name: "dependency-controller" },
      `
- op: add
  path: /spec/template/spec/containers/0/imagePullPolicyy
  value: Always`,
    ),
  );
  assertOnlyFailure(
    run,
    CONTROLLER,
    /strict decoding: unknown field "spec\.template\.spec\.containers\[0\]\.imagePullPolicyy"/,
  );
});

Deno.test("manifest-check rejects a duplicate field and an unknown kind", async () => {
  const run = await manifestCheck(
    `${await kustomize(DEPLOY)}---
apiVersion: v1
kind: ConfigMap
metadata:
  name: duplicate
  namespace: ${NS}
data:
  a: "1"
data:
  b: "2"
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
`,
  );
  assert.equal(run.code, 1, run.stdout);
  assert.match(
    failure(run.stdout, `v1 ConfigMap ${NS}/duplicate`),
    /strict decoding: .*\n.*key "data" already set in map/,
  );
  assert.match(
    run.stdout,
    /^FAIL .*example\.com\/v1 Widget.*\n {2}unknown kind: /m,
  );
  assert.match(run.stdout, /^\d+ objects, 2 failed$/m);
});

Deno.test("manifest-check rejects a CPU request above its limit, naming the field", async () => {
  const run = await manifestCheck(
    await overlay(
      { kind: "Deployment", name: "dependency-controller" },
      `
- op: replace
  path: /spec/template/spec/containers/0/resources/requests/cpu
  value: "64"`,
    ),
  );
  assertOnlyFailure(
    run,
    CONTROLLER,
    /spec\.template\.spec\.containers\[0\]\.resources\.requests: Invalid value: "64": must be less than or equal to cpu limit/,
  );
});

Deno.test("manifest-check rejects a malformed quantity (kube-apiserver's decoder names no field for it)", async () => {
  const run = await manifestCheck(
    await overlay(
      { kind: "Deployment", name: "dependency-controller" },
      `
- op: replace
  path: /spec/template/spec/containers/0/resources/limits/memory
  value: 384Mx`,
    ),
  );
  assertOnlyFailure(
    run,
    CONTROLLER,
    /cannot decode: quantities must match the regular expression/,
  );
});

Deno.test("manifest-check rejects a probe port that is not a valid port name, and one the container does not declare", async () => {
  const invalid = await manifestCheck(
    await overlay(
      { kind: "Deployment", name: "dependency-webhook" },
      `
- op: replace
  path: /spec/template/spec/containers/0/livenessProbe/httpGet/port
  value: Health_Port`,
    ),
  );
  assertOnlyFailure(
    invalid,
    WEBHOOK,
    /spec\.template\.spec\.containers\[0\]\.livenessProbe\.httpGet\.port: Invalid value: "Health_Port"/,
  );
  // A well-formed name that no container port has passes kube-apiserver
  // (the kubelet's probe fails later): manifest-check's own cross-check.
  const undeclared = await manifestCheck(
    await overlay(
      { kind: "Deployment", name: "dependency-webhook" },
      `
- op: replace
  path: /spec/template/spec/containers/0/readinessProbe/httpGet/port
  value: healthz`,
    ),
  );
  assertOnlyFailure(
    undeclared,
    WEBHOOK,
    /spec\.template\.spec\.containers\[0\]\.readinessProbe\.httpGet\.port: Not found: "healthz"/,
  );
});

Deno.test("manifest-check rejects a Service targetPort that the selected Pods do not declare", async () => {
  const run = await manifestCheck(
    await overlay(
      { kind: "Service", name: "dependency-webhook" },
      `
- op: replace
  path: /spec/ports/0/targetPort
  value: webhook`,
    ),
  );
  assertOnlyFailure(
    run,
    `v1 Service ${NS}/dependency-webhook`,
    /spec\.ports\[0\]\.targetPort: Not found: "webhook"/,
  );
});

Deno.test("manifest-check rejects a NetworkPolicy port that is not a valid port name", async () => {
  const run = await manifestCheck(
    await overlay(
      { kind: "NetworkPolicy", name: "dependency-webhook" },
      `
- op: replace
  path: /spec/ingress/0/ports/0/port
  value: Https_Port`,
    ),
  );
  assertOnlyFailure(
    run,
    `networking.k8s.io/v1 NetworkPolicy ${NS}/dependency-webhook`,
    /spec\.ingress\[0\]\.ports\[0\]\.port: Invalid value: "Https_Port"/,
  );
});

Deno.test("manifest-check rejects a Pod template that breaks the restricted Pod Security Standard", async () => {
  const run = await manifestCheck(
    await overlay(
      { kind: "Deployment", name: "dependency-webhook" },
      `
- op: replace
  path: /spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation
  value: true`,
    ),
  );
  assertOnlyFailure(
    run,
    WEBHOOK,
    /pod security restricted:latest: allowPrivilegeEscalation != false \(container "webhook" must set securityContext\.allowPrivilegeEscalation=false\)/,
  );
});
