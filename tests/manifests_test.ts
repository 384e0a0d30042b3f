/**
 * What operators `kubectl apply -k`: every kustomization under `manifests/`
 * builds with kubectl's kustomize, and the hosting-cluster Deployments agree
 * with the binaries they run: their flags parse with the components' own
 * option parsers, every file a flag names is mounted from the Secret or
 * ConfigMap it should come from, probes and Service reach the ports the
 * flags bind, and the commands are where the Containerfile puts them. The
 * assertions are in `testing/deploy_manifests.ts`, which
 * `tests/chart_test.ts` runs on the Helm chart too.
 */
import assert from "node:assert/strict";
import { relative } from "node:path";
import { loadAllYaml } from "@kubernetes/client-node";
import {
  type ControllerOptions,
  parseControllerOptions,
} from "../lib/controller/mod.ts";
import {
  parseWebhookOptions,
  type WebhookOptions,
} from "../lib/webhook/mod.ts";
import { kustomizeYaml } from "../testing/kustomize.ts";
import {
  assertDeployAgrees,
  assertNetworkPolicies,
  DEPLOY_NAMES,
  expandedArgs,
  findObject as find,
  type ManifestObject as Obj,
} from "../testing/deploy_manifests.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DEPLOY = `${ROOT}manifests/deploy`;

/** The objects `kubectl kustomize <dir>` renders. */
async function kustomize(dir: string): Promise<Obj[]> {
  return (loadAllYaml(await kustomizeYaml(dir)) as (Obj | null)[])
    .filter((o): o is Obj => o !== null);
}

async function kustomizations(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) found.push(...await kustomizations(path));
    else if (entry.name === "kustomization.yaml") found.push(dir);
  }
  return found.sort();
}

Deno.test("every kustomization under manifests/ builds", async () => {
  const dirs = await kustomizations(`${ROOT}manifests`);
  const relative = dirs.map((d) => d.slice(ROOT.length));
  for (
    const expected of [
      "manifests/deploy",
      "manifests/kcp/dep-ctrl",
      "manifests/kcp/system-admin",
      "manifests/kcp/workspace-reader",
    ]
  ) assert.ok(relative.includes(expected), `${expected} has a kustomization`);
  for (const dir of dirs) {
    const objects = await kustomize(dir);
    assert.ok(objects.length > 0, `${dir} builds to at least one object`);
    for (const o of objects) {
      assert.ok(
        o.apiVersion && o.kind && o.metadata?.name,
        `${dir}: ${o.kind}`,
      );
    }
  }
});

Deno.test("the deploy manifests agree with the binaries they run", async () => {
  const objects = await kustomize(DEPLOY);
  find(objects, "Namespace", DEPLOY_NAMES.namespace);
  await assertDeployAgrees(objects);
});

Deno.test("the network policies admit only kcp's shards to the webhook and Prometheus to metrics", async () => {
  assertNetworkPolicies(await kustomize(DEPLOY));
});

Deno.test("an overlay sets the image and the webhook URL in one place each", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/kustomization.yaml`,
      [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        // kustomize takes bases by relative path only.
        `resources: ["${relative(dir, DEPLOY)}"]`,
        "images:",
        // The name the base's images entry already set.
        "  - name: registry.example.com/dependency-controller",
        "    newName: registry.internal/platform/dependency-controller",
        "    newTag: 1.2.3",
        "configMapGenerator:",
        "  - name: dependency-controller-config",
        "    behavior: merge",
        "    literals:",
        "      - webhook-url=https://deps.example.org:8443/validate",
        "",
      ].join("\n"),
    );
    const objects = await kustomize(dir);
    for (const name of ["dependency-controller", "dependency-webhook"]) {
      const pod = find(objects, "Deployment", name).spec.template.spec;
      assert.equal(
        pod.containers[0].image,
        "registry.internal/platform/dependency-controller:1.2.3",
      );
    }
    const controller = find(objects, "Deployment", "dependency-controller")
      .spec.template.spec.containers[0];
    const parsed = parseControllerOptions(expandedArgs(objects, controller), {
      env: () => undefined,
    });
    assert.equal(
      (parsed as { options: ControllerOptions }).options.webhookUrl,
      "https://deps.example.org:8443/validate",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the authorised break-glass overlay runs the same webhook with --skip-protection-mode=authorized", async () => {
  const objects = await kustomize(
    `${ROOT}manifests/overlays/authorized-break-glass`,
  );
  const [w] = find(objects, "Deployment", "dependency-webhook").spec.template
    .spec.containers;
  const parsed = parseWebhookOptions(expandedArgs(objects, w), {
    env: () => undefined,
  });
  assert.equal(parsed.help, false);
  const options = (parsed as { options: WebhookOptions }).options;
  assert.equal(options.skipProtectionMode, "authorized");
  const base = find(
    await kustomize(DEPLOY),
    "Deployment",
    "dependency-webhook",
  );
  assert.deepEqual(
    w.args.filter((a: string) => !a.startsWith("--skip-protection-mode")),
    base.spec.template.spec.containers[0].args,
  );
});
