/**
 * The Helm chart in `charts/dependency-controller` follows `manifests/deploy`
 * and cannot drift from it: rendered by `helm template` (built from
 * `testing/kcp/helm` by `deno task kcp:build`) with default values it gives
 * the objects `kubectl kustomize manifests/deploy` gives, after the
 * normalisation in {@linkcode normalise}; with `webhook.skipProtectionMode`
 * `authorized` those of the authorised break-glass overlay. Its output passes
 * `manifest-check` (kube-apiserver's validation and the restricted Pod
 * Security Standard), its Deployments pass the assertions
 * `tests/manifests_test.ts` makes of the kustomize build
 * (`testing/deploy_manifests.ts`: flags parsed by the components' own
 * parsers, mounts, probes, ports), and non-default values land where they
 * should.
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { parseAllDocuments } from "yaml";
import { type CommandResult, runCommand } from "../testing/mod.ts";
import {
  HELM_VERSION,
  requireHelm,
  requireKcpBinaries,
  requireManifestCheck,
} from "../testing/kcp/binaries.ts";
import {
  assertDeployAgrees,
  assertNetworkPolicies,
  DEPLOY_NAMES,
  findObject,
  type ManifestObject as Obj,
} from "../testing/deploy_manifests.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const CHART = `${ROOT}charts/dependency-controller`;
const DEPLOY = `${ROOT}manifests/deploy`;
const AUTHORIZED_OVERLAY = `${ROOT}manifests/overlays/authorized-break-glass`;
const NS = DEPLOY_NAMES.namespace;

/** Decodes multi-document YAML as it is, without a Kubernetes model. */
function parseObjects(yaml: string): Obj[] {
  return parseAllDocuments(yaml).flatMap((doc) => {
    assert.deepEqual(doc.errors, [], "the output is valid YAML");
    const object = doc.toJS() as Obj | null;
    return object === null ? [] : [object];
  });
}

/** Options for {@linkcode helmTemplate}. */
interface TemplateOptions {
  /** The release namespace. @default "dependency-controller" */
  namespace?: string;
  /** More arguments to `helm template`. */
  args?: string[];
}

/**
 * `helm template` of the chart with `values` over its values.yaml. Helm's
 * cache, config and data directories are a temporary one, so the tests
 * read no repositories or plugins of the user's.
 */
async function helmTemplate(
  values: Obj = {},
  options: TemplateOptions = {},
): Promise<CommandResult> {
  const helm = await requireHelm();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/values.json`, JSON.stringify(values));
    return await runCommand(helm, [
      "template",
      "dependency-controller",
      CHART,
      "--namespace",
      options.namespace ?? NS,
      "--values",
      `${dir}/values.json`,
      ...(options.args ?? []),
    ], {
      env: {
        HELM_CACHE_HOME: `${dir}/cache`,
        HELM_CONFIG_HOME: `${dir}/config`,
        HELM_DATA_HOME: `${dir}/data`,
      },
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The chart rendered with `values`: its YAML and its objects. */
async function render(
  values: Obj = {},
  options: TemplateOptions = {},
): Promise<{ yaml: string; objects: Obj[] }> {
  const run = await helmTemplate(values, options);
  assert.equal(run.code, 0, `helm template failed:\n${run.stderr}`);
  return { yaml: run.stdout, objects: parseObjects(run.stdout) };
}

/** `kubectl kustomize dir`, as YAML. */
async function kustomizeYaml(dir: string): Promise<string> {
  const { kubectl } = await requireKcpBinaries();
  const output = await runCommand(kubectl, ["kustomize", dir]);
  assert.equal(
    output.code,
    0,
    `kubectl kustomize ${dir} failed: ${output.stderr}`,
  );
  return output.stdout;
}

/** Helm's standard labels: the chart's additions to `metadata.labels`. */
const HELM_LABELS = [
  "helm.sh/chart",
  "app.kubernetes.io/managed-by",
  "app.kubernetes.io/instance",
  "app.kubernetes.io/version",
];

/** The controller's ConfigMap: a fixed name and a 10-character hash. */
const CONFIG_NAME = /^dependency-controller-config-[a-z0-9]{10}$/;
const CONFIG_PLACEHOLDER = "dependency-controller-config-<hash>";

function describe(o: Obj): string {
  return `${o.kind} ${
    o.metadata?.namespace === undefined ? "" : `${o.metadata.namespace}/`
  }${o.metadata?.name}`;
}

/** Replaces every string equal to `from` in `value`; returns how many. */
function replaceString(value: unknown, from: string, to: string): number {
  if (Array.isArray(value)) {
    let n = 0;
    value.forEach((item, i) => {
      if (item === from) {
        value[i] = to;
        n++;
      } else n += replaceString(item, from, to);
    });
    return n;
  }
  if (value === null || typeof value !== "object") return 0;
  let n = 0;
  const record = value as Record<string, unknown>;
  for (const [key, item] of Object.entries(record)) {
    if (item === from) {
      record[key] = to;
      n++;
    } else n += replaceString(item, from, to);
  }
  return n;
}

/**
 * The objects by kind, namespace and name, after the normalisation that
 * makes a chart render and a kustomize build comparable. Every rule first
 * asserts that what it removes is there, and only on the side that adds it:
 *
 * 1. Helm's standard labels (`helm.sh/chart`, `app.kubernetes.io/managed-by`,
 *    `app.kubernetes.io/instance`, `app.kubernetes.io/version`): the chart
 *    puts them into every object's `metadata.labels` (never into a selector
 *    or a Pod template, where the comparison still sees everything);
 *    kustomize has none of them.
 * 2. `helm.sh/resource-policy: keep`, the only annotation of the chart's
 *    Namespace: uninstalling the release must not delete the namespace and
 *    the Secrets and CA ConfigMap the operator made in it. kustomize has no
 *    uninstall, and no annotation there.
 * 3. The hash in the controller's ConfigMap name,
 *    `dependency-controller-config-<10 characters>`: kustomize's
 *    configMapGenerator and the chart each append a hash of the data, so that
 *    a new webhook URL renames the ConfigMap and rolls the controller, but
 *    they compute it differently. Each side must have exactly one such
 *    ConfigMap and refer to it; its name becomes
 *    `dependency-controller-config-<hash>` wherever it occurs as a value.
 *
 * Nothing else differs: not the order of keys or documents, not YAML
 * formatting or comments (objects are compared, not text).
 */
function normalise(
  objects: Obj[],
  from: "helm" | "kustomize",
): Map<string, Obj> {
  const out = structuredClone(objects);
  for (const o of out) {
    const labels: Record<string, string> = o.metadata.labels ?? {};
    for (const key of HELM_LABELS) {
      assert.equal(
        key in labels,
        from === "helm",
        `${from}: ${describe(o)} ${
          from === "helm" ? "has" : "lacks"
        } the label ${key}`,
      );
      delete labels[key];
    }
    if (o.kind === "Namespace" && from === "helm") {
      assert.deepEqual(o.metadata.annotations, {
        "helm.sh/resource-policy": "keep",
      });
      delete o.metadata.annotations;
    }
  }
  const configs = out.filter((o) =>
    o.kind === "ConfigMap" && CONFIG_NAME.test(o.metadata.name)
  );
  assert.equal(configs.length, 1, `${from}: one controller ConfigMap`);
  const replaced = replaceString(
    out,
    configs[0]!.metadata.name,
    CONFIG_PLACEHOLDER,
  );
  assert.ok(replaced >= 2, `${from}: the controller refers to its ConfigMap`);
  const byName = new Map(out.map((o) => [describe(o), o]));
  assert.equal(byName.size, out.length, `${from}: no object twice`);
  return byName;
}

/**
 * The objects in which the normalised chart render and kustomize build
 * differ (including those only one side has), by kind, namespace and name.
 */
function differences(chart: Obj[], kustomize: Obj[]): string[] {
  const a = normalise(chart, "helm");
  const b = normalise(kustomize, "kustomize");
  return [...new Set([...a.keys(), ...b.keys()])].sort().filter((key) =>
    !isDeepStrictEqual(a.get(key), b.get(key))
  );
}

/** Asserts no difference, showing the first differing object in full. */
function assertNoDrift(chart: Obj[], kustomize: Obj[]): void {
  const differ = differences(chart, kustomize);
  const [first] = differ;
  if (first === undefined) return;
  assert.deepEqual(
    normalise(chart, "helm").get(first),
    normalise(kustomize, "kustomize").get(first),
    `the chart and kustomize differ in ${
      differ.join(", ")
    }; first ${first} (actual: chart, expected: kustomize)`,
  );
}

function container(objects: Obj[], deployment: string): Obj {
  return findObject(objects, "Deployment", deployment).spec.template.spec
    .containers[0];
}

Deno.test("helm is the pinned release built from Go modules, and lints the chart", async () => {
  const helm = await requireHelm();
  const version = await runCommand(helm, ["version", "--short"]);
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout.trim(), HELM_VERSION);
  const dir = await Deno.makeTempDir();
  try {
    const lint = await runCommand(helm, [
      "lint",
      "--strict",
      "--namespace",
      NS,
      CHART,
    ], {
      env: {
        HELM_CACHE_HOME: `${dir}/cache`,
        HELM_CONFIG_HOME: `${dir}/config`,
        HELM_DATA_HOME: `${dir}/data`,
      },
    });
    assert.equal(lint.code, 0, `helm lint failed:\n${lint.stdout}`);
    assert.match(lint.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with default values the chart renders the objects of manifests/deploy", async () => {
  const chart = (await render()).objects;
  const kustomize = parseObjects(await kustomizeYaml(DEPLOY));
  assert.deepEqual(
    [...normalise(chart, "helm").keys()].sort(),
    [...normalise(kustomize, "kustomize").keys()].sort(),
    "the same objects",
  );
  assertNoDrift(chart, kustomize);
  // The comparison sees a changed field: a negative control.
  const changed = (await render({ controller: { replicas: 3 } })).objects;
  assert.deepEqual(differences(changed, kustomize), [
    `Deployment ${NS}/dependency-controller`,
  ]);
});

Deno.test("with skipProtectionMode authorized the chart renders the authorised break-glass overlay", async () => {
  const chart = (await render({
    webhook: { skipProtectionMode: "authorized" },
  })).objects;
  const overlay = parseObjects(await kustomizeYaml(AUTHORIZED_OVERLAY));
  assertNoDrift(chart, overlay);
  assert.ok(
    container(chart, "dependency-webhook").args.includes(
      "--skip-protection-mode=authorized",
    ),
  );
});

Deno.test("the chart's Deployments agree with the binaries they run, as the kustomize build's do", async () => {
  const { objects } = await render();
  const options = await assertDeployAgrees(objects);
  assert.equal(
    options.controller.webhookUrl,
    "https://dependency-webhook.dependency-controller.svc:443/validate",
  );
  assertNetworkPolicies(objects);
});

/** Non-default values for every setting of the chart. */
const CUSTOM = {
  image: {
    repository: "registry.internal/platform/dependency-controller",
    tag: "1.2.3",
    pullPolicy: "Always",
  },
  controller: {
    replicas: 3,
    resources: {
      requests: { cpu: "200m", memory: "256Mi" },
      limits: { cpu: "2", memory: "1Gi" },
    },
    kubeconfigSecret: "kcp-controller",
    extraArgs: ["--max-writes-in-flight=16"],
  },
  webhook: {
    replicas: 4,
    resources: {
      requests: { cpu: "300m", memory: "512Mi" },
      limits: { cpu: "3", memory: "2Gi" },
    },
    kubeconfigSecret: "kcp-webhook",
    tlsSecret: "deps-serving-cert",
    url: "https://deps.example.org:8443/validate",
    ca: {
      configMap: "deps-ca",
      cert: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    },
    skipProtectionMode: "authorized",
    extraArgs: ["--teardown-order-timeout=5m", "--log-level=debug"],
  },
};

Deno.test("non-default values land where expected, and the flags still parse", async () => {
  const { objects } = await render(CUSTOM);
  const options = await assertDeployAgrees(objects, {
    namespace: NS,
    controllerKubeconfigSecret: "kcp-controller",
    webhookKubeconfigSecret: "kcp-webhook",
    webhookTlsSecret: "deps-serving-cert",
    webhookCaConfigMap: "deps-ca",
    skipProtectionMode: "authorized",
    webhookUrl: "https://deps.example.org:8443/validate",
  });
  assert.equal(options.webhook.skipProtectionMode, "authorized");
  // extraArgs reach the binaries, after the chart's own flags.
  assert.equal(options.webhook.teardownOrderMs, 300_000);
  assert.equal(options.webhook.logLevel, "debug");
  assert.equal(options.controller.maxWritesInFlight, 16);
  assert.deepEqual(
    container(objects, "dependency-webhook").args.slice(-2),
    CUSTOM.webhook.extraArgs,
  );
  for (
    const [name, component] of [
      ["dependency-controller", CUSTOM.controller],
      ["dependency-webhook", CUSTOM.webhook],
    ] as const
  ) {
    const deployment = findObject(objects, "Deployment", name);
    assert.equal(deployment.spec.replicas, component.replicas);
    const c = deployment.spec.template.spec.containers[0];
    assert.equal(
      c.image,
      "registry.internal/platform/dependency-controller:1.2.3",
    );
    assert.equal(c.imagePullPolicy, "Always");
    assert.deepEqual(c.resources, component.resources);
  }
  assert.deepEqual(findObject(objects, "ConfigMap", "deps-ca").data, {
    "ca.crt": CUSTOM.webhook.ca.cert,
  });
  // A new URL renames the ConfigMap in the controller's Pod template, which
  // rolls the controller, as kustomize's generated name does.
  const configName = (list: Obj[]) =>
    list.find((o) =>
      o.kind === "ConfigMap" && CONFIG_NAME.test(o.metadata.name)
    )
      ?.metadata.name;
  const defaults = (await render()).objects;
  assert.notEqual(configName(objects), configName(defaults));
  assert.equal(
    container(objects, "dependency-controller").env[0].valueFrom
      .configMapKeyRef.name,
    configName(objects),
  );
  // Defaults leave imagePullPolicy to Kubernetes and create no CA ConfigMap.
  assert.equal(
    "imagePullPolicy" in container(defaults, "dependency-webhook"),
    false,
  );
  assert.equal(
    defaults.some((o) => o.metadata.name === "dependency-webhook-ca"),
    false,
  );
});

Deno.test("in a namespace of its own making or not, with one webhook replica, the chart still agrees", async () => {
  const { objects } = await render({
    namespace: { create: false },
    webhook: { replicas: 1 },
  }, { namespace: "platform-deps" });
  assert.equal(objects.some((o) => o.kind === "Namespace"), false);
  assert.equal(
    objects.some((o) => o.kind === "PodDisruptionBudget"),
    false,
    "no PodDisruptionBudget that would block every drain",
  );
  const options = await assertDeployAgrees(objects, {
    ...DEPLOY_NAMES,
    namespace: "platform-deps",
  });
  assert.equal(
    options.controller.webhookUrl,
    "https://dependency-webhook.platform-deps.svc:443/validate",
  );
  assertNetworkPolicies(objects, {
    kcp: "kcp",
    metrics: "monitoring",
    own: "platform-deps",
  });
});

Deno.test("the network policy values set who reaches which port", async () => {
  const { objects } = await render({
    networkPolicy: {
      shards: { namespace: "kcp-prod" },
      metricsNamespace: "observability",
    },
  });
  assertNetworkPolicies(objects, {
    kcp: "kcp-prod",
    metrics: "observability",
    own: NS,
  });

  // kcp outside the cluster, and a CNI that filters the kubelet's probes.
  const blocks = [{ cidr: "203.0.113.0/24", except: ["203.0.113.8/29"] }];
  const nodes = [{ cidr: "10.0.0.0/16" }];
  const { objects: ip } = await render({
    networkPolicy: { shards: { ipBlocks: blocks }, nodeIpBlocks: nodes },
  });
  const metricsRule = {
    from: [{
      namespaceSelector: {
        matchLabels: { "kubernetes.io/metadata.name": "monitoring" },
      },
    }],
    ports: [{ port: "metrics", protocol: "TCP" }],
  };
  const probeRule = {
    from: [{ ipBlock: nodes[0] }],
    ports: [{ port: "health", protocol: "TCP" }],
  };
  assert.deepEqual(
    findObject(ip, "NetworkPolicy", "dependency-webhook").spec.ingress,
    [
      {
        from: [{ ipBlock: blocks[0] }],
        ports: [{ port: "https", protocol: "TCP" }],
      },
      metricsRule,
      probeRule,
    ],
  );
  assert.deepEqual(
    findObject(ip, "NetworkPolicy", "dependency-controller").spec.ingress,
    [metricsRule, probeRule],
  );
});

Deno.test("the chart's output passes kube-apiserver's validation and the restricted Pod Security Standard", async () => {
  const check = await requireManifestCheck();
  for (
    const [what, values] of [
      ["default values", {}],
      ["non-default values", {
        ...CUSTOM,
        networkPolicy: {
          shards: { ipBlocks: [{ cidr: "203.0.113.0/24" }] },
          nodeIpBlocks: [{ cidr: "10.0.0.0/16" }],
        },
      }],
    ] as const
  ) {
    const { yaml, objects } = await render(values);
    const run = await runCommand(check, [], { stdin: yaml });
    assert.equal(
      run.code,
      0,
      `manifest-check of the chart with ${what} failed:\n${run.stdout}${run.stderr}`,
    );
    const lines = run.stdout.trim().split("\n");
    for (const o of objects) {
      const ref = o.metadata.namespace === undefined
        ? o.metadata.name
        : `${o.metadata.namespace}/${o.metadata.name}`;
      const line = `ok ${o.apiVersion} ${o.kind} ${ref}`;
      assert.ok(lines.includes(line), `${what}: ${line}:\n${run.stdout}`);
    }
    assert.equal(lines.at(-1), `${objects.length} objects, 0 failed`);
    assert.doesNotMatch(run.stdout, /warning:/, what);
  }
});

Deno.test("the chart refuses values it cannot render correctly, flags it sets itself in extraArgs, and clusters older than 1.30", async () => {
  for (
    const [values, message] of [
      [{ webhook: { skipProtectionMode: "always" } }, /skipProtectionMode/],
      [{ webhook: { replica: 3 } }, /additional properties 'replica'/],
      [{ controller: { replicas: 0 } }, /replicas/],
      [{ webhook: { url: "http://deps.example.org/validate" } }, /url/],
      [{ image: { pullPolicy: "Sometimes" } }, /pullPolicy/],
      [{ webhook: { extraArgs: ["; rm -rf /"] } }, /extraArgs/],
      [{ controller: { extraArgs: "--leader-elect" } }, /extraArgs/],
    ] as const
  ) {
    const run = await helmTemplate(values);
    assert.notEqual(run.code, 0, `${JSON.stringify(values)} is refused`);
    assert.match(run.stderr, /values don't meet the specifications/);
    assert.match(run.stderr, message);
  }
  // A flag the chart sets cannot be set again: its mounts depend on it.
  for (
    const [values, message] of [
      [
        { webhook: { extraArgs: ["--kubeconfig=/tmp/other"] } },
        /webhook\.extraArgs cannot set --kubeconfig: the chart sets it/,
      ],
      [
        { controller: { extraArgs: ["--webhook-url=https://x/validate"] } },
        /controller\.extraArgs cannot set --webhook-url: the chart sets it/,
      ],
    ] as const
  ) {
    const run = await helmTemplate(values);
    assert.notEqual(run.code, 0, `${JSON.stringify(values)} is refused`);
    assert.match(run.stderr, message);
  }
  const old = await helmTemplate({}, { args: ["--kube-version", "1.29.9"] });
  assert.notEqual(old.code, 0);
  assert.match(old.stderr, /incompatible with Kubernetes v1\.29\.9/);
});
