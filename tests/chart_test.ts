/**
 * The Helm chart in `charts/dependency-controller` follows `manifests/deploy`
 * and cannot drift from it: rendered by `helm template` (built from
 * `testing/kcp/helm` by `deno task kcp:build`) with default values and
 * `namespace.create=true` it gives the objects
 * `kubectl kustomize manifests/deploy` gives, after the normalisation in
 * {@linkcode normalise}; with `webhook.skipProtectionMode` `authorized`
 * those of the authorised break-glass overlay. By default it renders no
 * Namespace, as a chart installed with `--create-namespace` should. Its
 * output passes `manifest-check` (kube-apiserver's validation and the
 * restricted Pod Security Standard; the cert-manager and Prometheus Operator
 * objects, which it cannot know, are checked here by shape), its Deployments
 * pass the assertions `tests/manifests_test.ts` makes of the kustomize build
 * (`testing/deploy_manifests.ts`: flags parsed by the components' own
 * parsers, mounts, probes, ports), non-default values land where they
 * should, and values it cannot render correctly are refused with a message
 * naming them.
 *
 * In kcp mode (`kcpWebhookReads.render`) the chart renders only the
 * webhook's read grants for kcp's `system:admin`: the ClusterRole
 * `webhookReadsRole()` (what `controller grants` prints) makes of
 * DependencyRules naming the same types, and nothing for the hosting
 * cluster. It refuses wildcards and the types of `NEVER_GRANTED`, whose list
 * `files/never-granted.yaml` repeats.
 *
 * What the chart keeps beside its templates cannot drift either: the flag
 * lists in `files/flags.yaml` equal the binaries' flag tables, the alerts in
 * `files/alerts.yaml` equal those docs/operations.md shows (or it links
 * there), and the chart's README lists every value with its default and
 * links only to what exists.
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { parse as parseYaml, parseAllDocuments, stringify } from "yaml";
import { CONTROLLER_FLAGS } from "../lib/controller/mod.ts";
import {
  NEVER_GRANTED,
  RULE_READS_ROLE,
  WEBHOOK_FLAGS,
  webhookReadsRole,
} from "../lib/webhook/mod.ts";
import type { FlagSpec } from "../lib/runtime/mod.ts";
import { type CommandResult, runCommand } from "../testing/mod.ts";
import {
  HELM_VERSION,
  requireHelm,
  requireManifestCheck,
} from "../testing/kcp/binaries.ts";
import {
  assertDeployAgrees,
  assertNetworkPolicies,
  DEPLOY_NAMES,
  findObject,
  type ManifestObject as Obj,
} from "../testing/deploy_manifests.ts";
import { kustomizeYaml } from "../testing/kustomize.ts";
import { linkTargets, withoutCode } from "../testing/markdown_links.ts";
import {
  dependency,
  LOAD_BALANCERS,
  SUBNETS,
  validLock,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../testing/rule_fixtures.ts";

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
  /**
   * The release namespace; `null` passes none, so Helm uses `default`.
   * @default "dependency-controller"
   */
  namespace?: string | null;
  /** More arguments to `helm template`. */
  args?: string[];
  /** The chart's directory. @default CHART */
  chart?: string;
}

/**
 * The environment of a helm run: its cache, config and data directories are
 * under `dir`, so the tests read no repositories or plugins of the user's.
 */
function helmEnv(dir: string): Record<string, string> {
  return {
    HELM_CACHE_HOME: `${dir}/cache`,
    HELM_CONFIG_HOME: `${dir}/config`,
    HELM_DATA_HOME: `${dir}/data`,
  };
}

/**
 * `helm template` of the chart with `values` over its values.yaml, in a
 * temporary Helm home ({@linkcode helmEnv}).
 */
async function helmTemplate(
  values: Obj = {},
  options: TemplateOptions = {},
): Promise<CommandResult> {
  const helm = await requireHelm();
  const dir = await Deno.makeTempDir();
  const namespace = options.namespace === undefined ? NS : options.namespace;
  try {
    await Deno.writeTextFile(`${dir}/values.json`, JSON.stringify(values));
    return await runCommand(helm, [
      "template",
      "dependency-controller",
      options.chart ?? CHART,
      ...(namespace === null ? [] : ["--namespace", namespace]),
      "--values",
      `${dir}/values.json`,
      ...(options.args ?? []),
    ], { env: helmEnv(dir) });
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

/** An object as `<kind> [<namespace>/]<name>`. */
function describeObject(o: Obj): string {
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
        `${from}: ${describeObject(o)} ${
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
  const byName = new Map(out.map((o) => [describeObject(o), o]));
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

/** `helm lint --strict` of the chart with `values` over its values.yaml. */
async function helmLint(values: Obj): Promise<CommandResult> {
  const helm = await requireHelm();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/values.json`, JSON.stringify(values));
    return await runCommand(helm, [
      "lint",
      "--strict",
      "--namespace",
      NS,
      "--values",
      `${dir}/values.json`,
      CHART,
    ], { env: helmEnv(dir) });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("helm is the pinned release built from Go modules, and lints the chart with default values, with every option and in kcp mode", async () => {
  const helm = await requireHelm();
  const version = await runCommand(helm, ["version", "--short"]);
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout.trim(), HELM_VERSION);
  for (
    const [what, values] of [
      ["default", {}],
      ["every", CUSTOM],
      ["kcp mode", KCP_MODE],
    ] as const
  ) {
    const lint = await helmLint(values);
    assert.equal(
      lint.code,
      0,
      `helm lint with ${what} values failed:\n${lint.stdout}`,
    );
    assert.match(lint.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
  // A negative control: lint sees the values it is given. (It logs the
  // templates' fail calls without failing, so a refusal by the schema.)
  const refused = await helmLint({ webhook: { replica: 1 } });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stdout, /additional properties 'replica' not allowed/);
});

/**
 * The values under which the chart renders what `manifests/deploy` does: the
 * kustomize build has a Namespace, which the chart renders only when asked.
 */
const AS_KUSTOMIZE = { namespace: { create: true } };

Deno.test("with default values and namespace.create the chart renders the objects of manifests/deploy", async () => {
  const chart = (await render(AS_KUSTOMIZE)).objects;
  const kustomize = parseObjects(await kustomizeYaml(DEPLOY));
  assert.deepEqual(
    [...normalise(chart, "helm").keys()].sort(),
    [...normalise(kustomize, "kustomize").keys()].sort(),
    "the same objects",
  );
  assertNoDrift(chart, kustomize);
  // The comparison sees a changed field: a negative control.
  const changed = (await render({
    ...AS_KUSTOMIZE,
    controller: { replicas: 3 },
  })).objects;
  assert.deepEqual(differences(changed, kustomize), [
    `Deployment ${NS}/dependency-controller`,
  ]);
});

Deno.test("with skipProtectionMode authorized the chart renders the authorised break-glass overlay", async () => {
  const chart = (await render({
    ...AS_KUSTOMIZE,
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

Deno.test("by default the chart renders no Namespace, as with helm install --create-namespace; namespace.create renders a restricted one", async () => {
  // Without --namespace, helm template uses "default".
  const { objects } = await render({}, { namespace: null });
  assert.equal(objects.some((o) => o.kind === "Namespace"), false);
  assert.ok(objects.length > 0);
  for (const o of objects) {
    assert.equal(o.metadata.namespace, "default", describeObject(o));
  }
  const created = (await render(AS_KUSTOMIZE, { namespace: "platform-deps" }))
    .objects.filter((o) => o.kind === "Namespace");
  assert.equal(created.length, 1);
  assert.equal(created[0]!.metadata.name, "platform-deps");
  assert.equal(
    created[0]!.metadata.labels["pod-security.kubernetes.io/enforce"],
    "restricted",
  );
  assert.deepEqual(created[0]!.metadata.annotations, {
    "helm.sh/resource-policy": "keep",
  });
});

/** A PEM-shaped placeholder for `webhook.ca.cert`. */
const CA_CERT =
  "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

/**
 * Non-default values for every setting of the chart, and every option
 * enabled (a test asserts that it names every value of values.yaml).
 */
const CUSTOM = {
  image: {
    repository: "registry.internal/platform/dependency-controller",
    tag: "1.2.3",
    pullPolicy: "Always",
  },
  imagePullSecrets: [{ name: "registry-credentials" }],
  namespace: { create: true },
  controller: {
    replicas: 3,
    resources: {
      requests: { cpu: "200m", memory: "256Mi" },
      limits: { cpu: "2", memory: "1Gi" },
    },
    kubeconfigSecret: "kcp-controller",
    extraArgs: ["--max-writes-in-flight=16"],
    serviceAccount: {
      annotations: { "iam.example.com/role": "deps-controller" },
    },
    podAnnotations: { "example.com/owner": "platform" },
    podLabels: { "example.com/team": "platform" },
    nodeSelector: { "kubernetes.io/os": "linux" },
    tolerations: [{
      key: "dedicated",
      operator: "Equal",
      value: "infra",
      effect: "NoSchedule",
    }],
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{
            matchExpressions: [{
              key: "kubernetes.io/arch",
              operator: "In",
              values: ["amd64", "arm64"],
            }],
          }],
        },
      },
    },
    priorityClassName: "platform-critical",
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: "topology.kubernetes.io/zone",
        whenUnsatisfiable: "DoNotSchedule",
      },
      {
        maxSkew: 2,
        topologyKey: "kubernetes.io/hostname",
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: { matchLabels: { "example.com/team": "platform" } },
      },
    ],
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
    ca: { configMap: "deps-ca", cert: CA_CERT },
    certManager: {
      enabled: true,
      issuerRef: {
        name: "platform-ca",
        kind: "ClusterIssuer",
        group: "cert-manager.io",
      },
      duration: "720h",
      renewBefore: "240h",
    },
    skipProtectionMode: "authorized",
    extraArgs: ["--teardown-order-timeout=5m", "--log-level=debug"],
    serviceAccount: {
      annotations: { "iam.example.com/role": "deps-webhook" },
    },
    podAnnotations: { "example.com/owner": "platform-webhook" },
    podLabels: { "example.com/team": "platform-webhook" },
    nodeSelector: { "node-role.example.com/infra": "true" },
    tolerations: [{ key: "infra", operator: "Exists" }],
    affinity: {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [{
          topologyKey: "kubernetes.io/hostname",
          labelSelector: {
            matchLabels: { "app.kubernetes.io/component": "webhook" },
          },
        }],
      },
    },
    priorityClassName: "system-cluster-critical",
    topologySpreadConstraints: [],
  },
  networkPolicy: {
    shards: {
      namespace: "kcp-prod",
      podSelector: {
        matchExpressions: [{
          key: "app.kubernetes.io/name",
          operator: "In",
          values: ["kcp-shard"],
        }],
      },
      ipBlocks: [{ cidr: "203.0.113.0/24" }],
    },
    metricsNamespace: "observability",
    nodeIpBlocks: [{ cidr: "10.0.0.0/16" }],
  },
  metrics: {
    serviceMonitor: {
      enabled: true,
      labels: { release: "prometheus" },
      interval: "30s",
      scrapeTimeout: "10s",
    },
    prometheusRule: { enabled: true, labels: { release: "prometheus" } },
  },
  // Every value, but not kcp mode, which renders nothing of the above
  // (KCP_MODE and the kcp mode tests turn it on).
  kcpWebhookReads: {
    render: false,
    name: "dependency-webhook:reads:platform",
    dependents: [{ group: "lb.example.com", resources: ["loadbalancers"] }],
    protected: [{ group: "network.example.com", resources: ["vpcs"] }],
    indexedExports: ["lb.example.com"],
  },
};

/**
 * kcp mode for the types of {@linkcode GRANT_RULES}: VirtualMachines
 * (dependent) refer to VPCs and Subnets (protected).
 */
const KCP_MODE = {
  kcpWebhookReads: {
    render: true,
    dependents: [{
      group: "compute.example.com",
      resources: ["virtualmachines"],
    }],
    protected: [{
      group: "network.example.com",
      resources: ["vpcs", "subnets"],
    }],
  },
};

/** The DependencyRules that name the types of {@linkcode KCP_MODE}. */
const GRANT_RULES = [
  validRule("vm", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
    dependency(SUBNETS, ".spec.subnetRef.name"),
  ]),
];

/** The chart's values.yaml, parsed. */
async function chartValues(): Promise<Obj> {
  return parseYaml(await Deno.readTextFile(`${CHART}/values.yaml`));
}

/**
 * The leaves of a values tree by dotted path: every value that is not a
 * non-empty map (scalars, lists and empty maps, each whole).
 */
function leaves(value: unknown, prefix = ""): [string, unknown][] {
  if (
    value === null || typeof value !== "object" || Array.isArray(value) ||
    Object.keys(value).length === 0
  ) {
    return [[prefix, value]];
  }
  return Object.entries(value).flatMap(([key, item]) =>
    leaves(item, prefix === "" ? key : `${prefix}.${key}`)
  );
}

/** The value at a dotted path, or `undefined`. */
function valueAt(values: unknown, path: string): unknown {
  let value = values;
  for (const key of path.split(".")) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      return undefined;
    }
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

Deno.test("the values with every option set name every value of values.yaml", async () => {
  const missing = leaves(await chartValues()).map(([path]) => path).filter(
    (path) => valueAt(CUSTOM, path) === undefined,
  );
  assert.deepEqual(missing, [], "values CUSTOM does not set");
});

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
    // The Pod settings.
    const pod = deployment.spec.template;
    const selector = deployment.spec.selector.matchLabels;
    assert.deepEqual(pod.metadata.labels, {
      ...selector,
      ...component.podLabels,
    });
    assert.deepEqual(pod.metadata.annotations, component.podAnnotations);
    assert.deepEqual(pod.spec.imagePullSecrets, CUSTOM.imagePullSecrets);
    assert.deepEqual(pod.spec.nodeSelector, component.nodeSelector);
    assert.deepEqual(pod.spec.tolerations, component.tolerations);
    assert.deepEqual(pod.spec.affinity, component.affinity);
    assert.equal(pod.spec.priorityClassName, component.priorityClassName);
    assert.deepEqual(
      findObject(objects, "ServiceAccount", pod.spec.serviceAccountName)
        .metadata.annotations,
      component.serviceAccount.annotations,
    );
    // A constraint without a labelSelector gets the component's selector;
    // [] renders none.
    const constraints: Obj[] = component.topologySpreadConstraints.map((
      constraint: Obj,
    ) => ({ labelSelector: { matchLabels: selector }, ...constraint }));
    assert.deepEqual(
      pod.spec.topologySpreadConstraints,
      constraints.length === 0 ? undefined : constraints,
      name,
    );
  }
  assert.deepEqual(
    container(objects, "dependency-controller").args.slice(-1),
    CUSTOM.controller.extraArgs,
  );
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

Deno.test("in another namespace, with one webhook replica, the chart still agrees", async () => {
  const { objects } = await render({
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

/**
 * The API versions of CRDs the chart may render (cert-manager's Certificate,
 * the Prometheus Operator's ServiceMonitor and PrometheusRule).
 * manifest-check knows only Kubernetes' own types, so these are left out of
 * its input; the tests of their values assert their shape.
 */
const CRD_API_VERSIONS = new Set([
  "cert-manager.io/v1",
  "monitoring.coreos.com/v1",
]);

Deno.test("the chart's output passes kube-apiserver's validation and the restricted Pod Security Standard", async () => {
  const check = await requireManifestCheck();
  for (
    const [what, values, crdObjects] of [
      ["default values", {}, 0],
      ["every option", CUSTOM, 4],
      ["no resource limits", {
        controller: { resources: { limits: null } },
        webhook: { resources: { limits: { cpu: null } } },
      }, 0],
      ["kcp mode", KCP_MODE, 0],
    ] as const
  ) {
    const all = (await render(values)).objects;
    const objects = all.filter((o) => !CRD_API_VERSIONS.has(o.apiVersion));
    assert.equal(all.length - objects.length, crdObjects, `${what}: CRDs`);
    const yaml = objects.map((o) => stringify(o)).join("---\n");
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
  // It validates the kcp mode ClusterRole as kube-apiserver does: a name
  // kube-apiserver refuses (which only the schema refuses here) fails.
  const invalid = await helmTemplate({
    kcpWebhookReads: { ...KCP_MODE.kcpWebhookReads, name: ".." },
  }, { args: ["--skip-schema-validation"] });
  assert.equal(invalid.code, 0, invalid.stderr);
  const refused = await runCommand(check, [], { stdin: invalid.stdout });
  assert.notEqual(refused.code, 0, refused.stdout);
  assert.match(
    refused.stdout,
    /FAIL rbac\.authorization\.k8s\.io\/v1 ClusterRole \.\.\n {2}metadata\.name: Invalid value: "\.\.": may not be '\.\.'/,
  );
});

Deno.test("resource limits and requests are removed by null, not by an empty map", async () => {
  const resources = async (values: Obj) => {
    const { objects } = await render(values);
    return {
      controller: container(objects, "dependency-controller").resources,
      webhook: container(objects, "dependency-webhook").resources,
    };
  };
  const defaults = await resources({});
  assert.deepEqual(defaults.controller, {
    requests: { cpu: "50m", memory: "128Mi" },
    limits: { cpu: "1", memory: "384Mi" },
  });
  const removed = await resources({
    controller: { resources: { limits: null } },
    webhook: { resources: { limits: { cpu: null } } },
  });
  assert.deepEqual(removed.controller, {
    requests: defaults.controller.requests,
  });
  assert.deepEqual(removed.webhook, {
    requests: defaults.webhook.requests,
    limits: { memory: defaults.webhook.limits.memory },
  });
  const none = await resources({ controller: { resources: null } });
  assert.equal(none.controller, undefined, "resources: null renders none");
  // Helm merges an empty map into the defaults, which stay (README.md says
  // so): a negative control for the removals above.
  const merged = await resources({ controller: { resources: { limits: {} } } });
  assert.deepEqual(merged.controller, defaults.controller);
});

Deno.test("the chart's schema refuses unknown and invalid values, and the chart clusters older than 1.30", async () => {
  for (
    const [values, message] of [
      [{ webhook: { skipProtectionMode: "always" } }, /skipProtectionMode/],
      [{ webhook: { replica: 3 } }, /additional properties 'replica'/],
      [{ controller: { replicas: 0 } }, /replicas/],
      [{ webhook: { url: "http://deps.example.org/validate" } }, /url/],
      [{ image: { pullPolicy: "Sometimes" } }, /pullPolicy/],
      [{ webhook: { extraArgs: ["; rm -rf /"] } }, /extraArgs/],
      [{ controller: { extraArgs: "--leader-elect" } }, /extraArgs/],
      [{ imagePullSecret: [{ name: "x" }] }, /additional properties/],
      [{ imagePullSecrets: [{ nmae: "x" }] }, /imagePullSecrets/],
      [{ controller: { nodeSelectors: {} } }, /'nodeSelectors'/],
      [{ webhook: { tolerations: [{ keys: "x" }] } }, /tolerations/],
      [{ controller: { affinity: { nodeAfinity: {} } } }, /affinity/],
      [{ controller: { resources: { limits: { cpus: "1" } } } }, /resources/],
      [{ webhook: { podLabels: { team: 1 } } }, /podLabels/],
      [{ webhook: { serviceAccount: { annotation: {} } } }, /serviceAccount/],
      [
        { controller: { topologySpreadConstraints: [{ maxSkew: 1 }] } },
        /topologySpreadConstraints/,
      ],
      [{ webhook: { certManager: { enable: true } } }, /certManager/],
      [{ metrics: { serviceMonitor: { interval: "soon" } } }, /interval/],
      [{ metrics: { prometheusRules: {} } }, /additional properties/],
      [{ kcpWebhookReads: { render: "yes" } }, /kcpWebhookReads\/render/],
      [{ kcpWebhookReads: { name: "reads/helm" } }, /kcpWebhookReads\/name/],
      [
        {
          kcpWebhookReads: { dependents: [{ group: "", resource: ["pods"] }] },
        },
        /kcpWebhookReads\/dependents/,
      ],
      [
        { kcpWebhookReads: { protected: [{ group: "", resources: "pods" }] } },
        /kcpWebhookReads\/protected/,
      ],
      [{ kcpWebhookReads: { protect: [] } }, /additional properties 'protect'/],
    ] as const
  ) {
    const run = await helmTemplate(values);
    assert.notEqual(run.code, 0, `${JSON.stringify(values)} is refused`);
    assert.match(run.stderr, /values don't meet the specifications/);
    assert.match(run.stderr, message);
  }
  const old = await helmTemplate({}, { args: ["--kube-version", "1.29.9"] });
  assert.notEqual(old.code, 0);
  assert.match(old.stderr, /incompatible with Kubernetes v1\.29\.9/);
});

/**
 * Asserts that `helm template` with `values` fails with `message`, also
 * without the schema (`--skip-schema-validation`): the templates' own checks
 * hold either way.
 */
async function assertRefused(values: Obj, message: RegExp): Promise<void> {
  for (const args of [[], ["--skip-schema-validation"]]) {
    const run = await helmTemplate(values, { args });
    assert.notEqual(
      run.code,
      0,
      `${JSON.stringify(values)} ${args.join(" ")} is refused`,
    );
    assert.match(run.stderr, message, JSON.stringify(values));
  }
}

Deno.test("the chart refuses a webhook URL kcp cannot call, with a message naming it", async () => {
  for (
    const [url, message] of [
      ["https://deps.example.org/hook", /path must end with \/validate/],
      ["https://deps.example.org/validate/", /path must end with \/validate/],
      ["https://deps.example.org", /path must end with \/validate/],
      ["https:///validate", /webhook\.url names no host/],
      ["https://user@deps.example.org/validate", /no query, fragment or user/],
    ] as const
  ) {
    await assertRefused({ webhook: { url } }, message);
  }
  // http is refused by the schema, and by the templates without it.
  const http = await helmTemplate(
    { webhook: { url: "http://deps.example.org/validate" } },
    { args: ["--skip-schema-validation"] },
  );
  assert.notEqual(http.code, 0);
  assert.match(http.stderr, /webhook\.url must start with https:\/\//);
  // A path that ends in /validate behind a prefix is fine.
  const { objects } = await render({
    webhook: { url: "https://gw.example.org:8443/deps/validate" },
  });
  const options = await assertDeployAgrees(objects, {
    ...DEPLOY_NAMES,
    webhookUrl: "https://gw.example.org:8443/deps/validate",
  });
  assert.equal(
    options.controller.webhookUrl,
    "https://gw.example.org:8443/deps/validate",
  );
});

/** `files/flags.yaml`: each component's flags, as the chart checks them. */
interface ChartFlags {
  /** Flags that take a value. */
  values: string[];
  /** Switches. */
  switches: string[];
  /** Flags the chart sets, which extraArgs may not set. */
  set: string[];
}

/** The chart's flag lists by component. */
async function chartFlags(): Promise<Record<Component, ChartFlags>> {
  return parseYaml(await Deno.readTextFile(`${CHART}/files/flags.yaml`));
}

/** The two components. */
type Component = "controller" | "webhook";

/** Each component's flag table, as its binary parses it. */
const BINARY_FLAGS: Record<Component, readonly FlagSpec[]> = {
  controller: CONTROLLER_FLAGS,
  webhook: WEBHOOK_FLAGS,
};

/**
 * Flags the chart does not pass but reserves: `--webhook-port` is the
 * webhook's alias of `--webhook-bind-address`, which it does pass.
 */
const RESERVED_ALIASES: Record<Component, string[]> = {
  controller: [],
  webhook: ["webhook-port"],
};

Deno.test("files/flags.yaml lists each binary's own flags, and reserves exactly those the chart passes", async () => {
  const flags = await chartFlags();
  assert.deepEqual(Object.keys(flags).sort(), ["controller", "webhook"]);
  // Both renders together pass every flag the chart sets (the break-glass
  // mode only when it is not the default).
  const renders = [
    (await render()).objects,
    (await render({ webhook: { skipProtectionMode: "authorized" } })).objects,
  ];
  for (const component of ["controller", "webhook"] as const) {
    const specs = BINARY_FLAGS[component];
    const chart = flags[component];
    assert.deepEqual(
      [...chart.values].sort(),
      specs.filter((f) => !f.boolean).map((f) => f.name).sort(),
      `${component}: the flags that take a value`,
    );
    assert.deepEqual(
      [...chart.switches].sort(),
      specs.filter((f) => f.boolean).map((f) => f.name).sort(),
      `${component}: the switches`,
    );
    const passed = new Set(
      renders.flatMap((objects) =>
        container(objects, `dependency-${component}`).args as string[]
      ).map((arg) => /^--([^=]+)/.exec(arg)![1]!),
    );
    assert.deepEqual(
      [...chart.set].sort(),
      [...passed, ...RESERVED_ALIASES[component]].sort(),
      `${component}: the flags the chart sets`,
    );
  }
});

Deno.test("extraArgs take every flag of the binary the chart does not set, and refuse others with a clear message", async () => {
  const flags = await chartFlags();
  for (const component of ["controller", "webhook"] as const) {
    const { values, switches, set } = flags[component];
    const free = (list: string[]) => list.filter((f) => !set.includes(f));
    const extraArgs = [
      ...free(values).map((f) => `--${f}=1`),
      ...free(switches).map((f) => `--${f}`),
      ...free(switches).map((f) => `--${f}=false`),
    ];
    const { objects } = await render({ [component]: { extraArgs } });
    assert.deepEqual(
      container(objects, `dependency-${component}`).args.slice(
        -extraArgs.length,
      ),
      extraArgs,
    );
    for (const flag of set) {
      await assertRefused(
        { [component]: { extraArgs: [`--${flag}=x`] } },
        new RegExp(
          `${component}\\.extraArgs cannot set --${flag}: the chart sets it`,
        ),
      );
    }
    await assertRefused(
      { [component]: { extraArgs: ["--no-such-flag=1"] } },
      new RegExp(
        `${component}\\.extraArgs: --no-such-flag is not a flag of the ${component} \\(extraArgs may set --${
          free(values)[0]
        }, `,
      ),
    );
    await assertRefused(
      { [component]: { extraArgs: [`--${free(values)[0]}`] } },
      new RegExp(`--${free(values)[0]} takes a value: --${free(values)[0]}=`),
    );
    await assertRefused(
      { [component]: { extraArgs: ["--allow-insecure-http=yes"] } },
      /--allow-insecure-http is a switch: --allow-insecure-http, --allow-insecure-http=true or --allow-insecure-http=false/,
    );
  }
  // Without the schema, the templates refuse what is no flag at all.
  const run = await helmTemplate(
    { webhook: { extraArgs: ["list-timeout=5s"] } },
    { args: ["--skip-schema-validation"] },
  );
  assert.notEqual(run.code, 0);
  assert.match(
    run.stderr,
    /webhook\.extraArgs: "list-timeout=5s" is not --<flag>=<value> or --<flag>/,
  );
});

Deno.test("podLabels may not set the selector labels", async () => {
  for (const component of ["controller", "webhook"] as const) {
    for (
      const key of [
        "app.kubernetes.io/name",
        "app.kubernetes.io/part-of",
        "app.kubernetes.io/component",
      ]
    ) {
      await assertRefused(
        { [component]: { podLabels: { [key]: "x" } } },
        new RegExp(
          `${component}\\.podLabels cannot set ${key}: the chart's selectors use it`,
        ),
      );
    }
  }
});

Deno.test("webhook.certManager renders a Certificate for the serving Secret, naming the Service and the URL's host", async () => {
  const certificates = (objects: Obj[]) =>
    objects.filter((o) => o.kind === "Certificate");
  assert.deepEqual(
    certificates((await render()).objects),
    [],
    "off by default",
  );
  await assertRefused(
    { webhook: { certManager: { enabled: true } } },
    /webhook\.certManager\.issuerRef\.name is required when webhook\.certManager\.enabled is true/,
  );
  const issuerRef = {
    name: "deps-ca",
    kind: "Issuer",
    group: "cert-manager.io",
  };
  const [own] = certificates(
    (await render({ webhook: { certManager: { enabled: true, issuerRef } } }))
      .objects,
  );
  assert.deepEqual(own, {
    apiVersion: "cert-manager.io/v1",
    kind: "Certificate",
    metadata: {
      name: "dependency-webhook-tls",
      namespace: NS,
      labels: own!.metadata.labels,
    },
    spec: {
      secretName: "dependency-webhook-tls",
      duration: "2160h",
      renewBefore: "720h",
      dnsNames: [
        `dependency-webhook.${NS}.svc`,
        `dependency-webhook.${NS}.svc.cluster.local`,
      ],
      usages: ["server auth", "digital signature"],
      privateKey: {
        algorithm: "ECDSA",
        size: 256,
        encoding: "PKCS8",
        rotationPolicy: "Always",
      },
      issuerRef,
    },
  });
  // The Secret it writes is the one the webhook serves.
  const { objects } = await render(CUSTOM);
  const [custom] = certificates(objects);
  assert.equal(custom!.metadata.name, CUSTOM.webhook.tlsSecret);
  assert.equal(custom!.spec.secretName, CUSTOM.webhook.tlsSecret);
  assert.ok(
    findObject(objects, "Deployment", "dependency-webhook").spec.template.spec
      .volumes.some((v: Obj) =>
        v.secret?.secretName === CUSTOM.webhook.tlsSecret
      ),
  );
  assert.deepEqual(custom!.spec.dnsNames, [
    `dependency-webhook.${NS}.svc`,
    `dependency-webhook.${NS}.svc.cluster.local`,
    "deps.example.org",
  ]);
  assert.deepEqual(
    custom!.spec.issuerRef,
    CUSTOM.webhook.certManager.issuerRef,
  );
  assert.equal(custom!.spec.duration, "720h");
  assert.equal(custom!.spec.renewBefore, "240h");
  // An address goes into ipAddresses; the Service's own name is not repeated.
  for (
    const [url, dnsNames, ipAddresses] of [
      ["https://192.0.2.10:8443/validate", [], ["192.0.2.10"]],
      ["https://[2001:db8::1]/validate", [], ["2001:db8::1"]],
      [`https://dependency-webhook.${NS}.svc/validate`, [], undefined],
    ] as const
  ) {
    const [cert] = certificates(
      (await render({
        webhook: { url, certManager: { enabled: true, issuerRef } },
      })).objects,
    );
    assert.deepEqual(cert!.spec.dnsNames, [
      `dependency-webhook.${NS}.svc`,
      `dependency-webhook.${NS}.svc.cluster.local`,
      ...dnsNames,
    ], url);
    assert.deepEqual(cert!.spec.ipAddresses, ipAddresses, url);
  }
});

/** The `job` labels an alert expression selects, e.g. `job="x"`. */
function jobsOf(expr: string): string[] {
  return [...expr.matchAll(/\bjob="([^"]+)"/g)].map((m) => m[1]!);
}

/** The rule groups of `files/alerts.yaml`. */
async function alertGroups(): Promise<Obj[]> {
  const alerts = parseYaml(
    await Deno.readTextFile(`${CHART}/files/alerts.yaml`),
  );
  assert.deepEqual(Object.keys(alerts), ["groups"]);
  return alerts.groups;
}

Deno.test("metrics.serviceMonitor scrapes each component's metrics port as the job the alerts name", async () => {
  const defaults = (await render()).objects;
  assert.equal(
    defaults.some((o) => o.apiVersion === "monitoring.coreos.com/v1"),
    false,
    "off by default",
  );
  assert.deepEqual(
    findObject(defaults, "Service", "dependency-webhook").spec.ports.map((
      p: Obj,
    ) => p.name),
    ["https"],
  );
  const { objects } = await render({
    metrics: {
      serviceMonitor: {
        enabled: true,
        labels: { release: "prometheus", "app.kubernetes.io/name": "other" },
        interval: "30s",
        scrapeTimeout: "10s",
      },
    },
  });
  const monitors = objects.filter((o) => o.kind === "ServiceMonitor");
  assert.deepEqual(monitors.map((m) => m.metadata.name).sort(), [
    "dependency-controller",
    "dependency-webhook",
  ]);
  const jobs: string[] = [];
  for (const monitor of monitors) {
    assert.equal(monitor.apiVersion, "monitoring.coreos.com/v1");
    assert.equal(monitor.metadata.namespace, NS);
    // More labels join the chart's, which stay.
    assert.equal(monitor.metadata.labels.release, "prometheus");
    assert.equal(
      monitor.metadata.labels["app.kubernetes.io/name"],
      "dependency-controller",
    );
    assert.deepEqual(monitor.spec.namespaceSelector, { matchNames: [NS] });
    assert.deepEqual(monitor.spec.endpoints, [{
      port: "metrics",
      path: "/metrics",
      scheme: "http",
      interval: "30s",
      scrapeTimeout: "10s",
    }]);
    // Exactly one Service, whose port metrics reaches the port metrics of
    // the Deployment of the same name, which serves /metrics there.
    const selected = objects.filter((o) =>
      o.kind === "Service" &&
      Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) =>
        o.metadata.labels[k] === v
      )
    );
    assert.deepEqual(selected.map((o) => o.metadata.name), [
      monitor.metadata.name,
    ]);
    const service = selected[0]!;
    const port = service.spec.ports.find((p: Obj) => p.name === "metrics");
    assert.ok(port, `Service ${service.metadata.name} has a port metrics`);
    const deployment = findObject(objects, "Deployment", monitor.metadata.name);
    const labels = deployment.spec.template.metadata.labels;
    assert.ok(
      Object.entries(service.spec.selector).every(([k, v]) => labels[k] === v),
      `Service ${service.metadata.name} selects the Pods of ${deployment.metadata.name}`,
    );
    const c = deployment.spec.template.spec.containers[0];
    const target = c.ports.find((p: Obj) => p.name === port.targetPort);
    assert.ok(
      c.args.includes(`--metrics-bind-address=:${target.containerPort}`),
    );
    // Prometheus names the job after the Service.
    jobs.push(service.metadata.name);
  }
  // The admission port stays the Service's first.
  assert.equal(
    findObject(objects, "Service", "dependency-webhook").spec.ports[0].name,
    "https",
  );
  assertNetworkPolicies(objects);
  const named = (await alertGroups()).flatMap((g: Obj) =>
    g.rules.flatMap((r: Obj) => jobsOf(r.expr))
  );
  assert.ok(named.length > 0, "the alerts name jobs");
  for (const job of named) {
    assert.ok(jobs.includes(job), `the alerts' job ${job} is scraped`);
  }
});

Deno.test("metrics.prometheusRule renders the groups of files/alerts.yaml", async () => {
  assert.equal(
    (await render()).objects.some((o) => o.kind === "PrometheusRule"),
    false,
    "off by default",
  );
  const groups = await alertGroups();
  assert.deepEqual(groups.map((g) => g.name), [
    "dependency-webhook",
    "dependency-controller",
  ]);
  for (const rule of groups.flatMap((g) => g.rules)) {
    assert.deepEqual(Object.keys(rule).sort(), [
      "alert",
      "expr",
      "for",
      "labels",
    ]);
    assert.match(rule.alert, /^Dependency[A-Za-z]+$/);
    assert.match(rule.labels.severity, /^(critical|warning|info)$/);
  }
  const { objects } = await render({
    metrics: { prometheusRule: { enabled: true, labels: { role: "alerts" } } },
  });
  const rule = findObject(objects, "PrometheusRule", "dependency-controller");
  assert.equal(rule.apiVersion, "monitoring.coreos.com/v1");
  assert.equal(rule.metadata.namespace, NS);
  assert.equal(rule.metadata.labels.role, "alerts");
  assert.deepEqual(rule.spec, { groups });
});

/**
 * The ClusterRole that kcp mode renders with `values`, asserting that it is
 * the only object.
 */
async function kcpRole(values: Obj): Promise<Obj> {
  const { objects } = await render(values);
  assert.deepEqual(
    objects.map((o) => o.kind),
    ["ClusterRole"],
    "kcp mode renders one ClusterRole and nothing else",
  );
  return objects[0]!;
}

Deno.test("kcp mode renders the ClusterRole controller grants prints for rules naming the same types", async () => {
  const role = await kcpRole(KCP_MODE);
  assert.equal(role.metadata.name, "dependency-webhook:reads:helm");
  // Not the name of controller grants' role: the two live side by side.
  assert.notEqual(role.metadata.name, RULE_READS_ROLE);
  assert.deepEqual(
    role,
    webhookReadsRole(GRANT_RULES, { name: role.metadata.name }),
  );
  assert.deepEqual(role.rules, [
    {
      apiGroups: ["compute.example.com"],
      resources: ["virtualmachines"],
      verbs: ["get", "list"],
    },
    {
      apiGroups: ["network.example.com"],
      resources: ["subnets", "vpcs"],
      verbs: ["get"],
    },
  ]);
  // With the dependents index, watch too on the dependents, as controller
  // grants --dependents-index prints.
  const indexed = await kcpRole({
    ...KCP_MODE,
    kcpWebhookReads: {
      ...KCP_MODE.kcpWebhookReads,
      indexedExports: ["compute.example.com"],
    },
  });
  assert.deepEqual(
    indexed,
    webhookReadsRole(GRANT_RULES, { name: role.metadata.name, watch: true }),
  );
  assert.deepEqual(indexed.rules[0]!.verbs, ["get", "list", "watch"]);

  // Types in any order and split over entries, a type that is both
  // dependent and protected, the core group (a protected type, as a Lock's
  // target the operator allows), and a group whose rules come in the order
  // of their first resource, as webhookReadsRole orders them.
  const certificates = {
    group: "lb.example.com",
    version: "v1",
    resource: "certificates",
  };
  const addresses = {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "addresses",
    kind: "Address",
  };
  const rules = [
    validRule("lb", LOAD_BALANCERS, [
      dependency(VPCS, ".spec.vpcRef.name"),
      dependency(certificates, ".spec.certificateRef.name"),
    ]),
    validRule("vpc", { ...VPCS, kind: "VPC" }, [
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
    validRule("address", addresses, [
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
    ...GRANT_RULES,
  ];
  const namespaceLock = validLock("home", "team-a", {
    target: {
      group: "",
      version: "v1",
      resource: "namespaces",
      name: "team-a",
    },
    reason: "r",
  });
  const expected = webhookReadsRole(rules, {
    name: "dependency-webhook:reads:team",
    locks: [namespaceLock],
    lockTypes: new Set(["namespaces"]),
  });
  const mixed = await kcpRole({
    kcpWebhookReads: {
      render: true,
      name: "dependency-webhook:reads:team",
      dependents: [
        { group: "network.example.com", resources: ["vpcs", "addresses"] },
        { group: "lb.example.com", resources: ["loadbalancers"] },
        { group: "compute.example.com", resources: ["virtualmachines"] },
      ],
      protected: [
        { group: "network.example.com", resources: ["subnets", "vpcs"] },
        { group: "", resources: ["namespaces"] },
        { group: "network.example.com", resources: ["subnets"] },
        { group: "lb.example.com", resources: ["certificates"] },
      ],
    },
  });
  assert.deepEqual(mixed, expected);
  // What the comparison covers: the core group first; in lb.example.com the
  // rule of certificates (get) before that of loadbalancers (get, list);
  // in network.example.com the rule of addresses (get, list) before that of
  // subnets (get), with vpcs' verbs merged into it.
  assert.deepEqual(expected.rules[0], {
    apiGroups: [""],
    resources: ["namespaces"],
    verbs: ["get"],
  });
  assert.deepEqual(
    expected.rules.filter((r) => r.apiGroups[0] === "lb.example.com"),
    [
      {
        apiGroups: ["lb.example.com"],
        resources: ["certificates"],
        verbs: ["get"],
      },
      {
        apiGroups: ["lb.example.com"],
        resources: ["loadbalancers"],
        verbs: ["get", "list"],
      },
    ],
  );
  assert.deepEqual(
    expected.rules.filter((r) => r.apiGroups[0] === "network.example.com"),
    [
      {
        apiGroups: ["network.example.com"],
        resources: ["addresses", "vpcs"],
        verbs: ["get", "list"],
      },
      {
        apiGroups: ["network.example.com"],
        resources: ["subnets"],
        verbs: ["get"],
      },
    ],
  );
});

Deno.test("kcp mode renders nothing for the hosting cluster, and by default there is no such ClusterRole", async () => {
  // Every option on, and kcp mode: only the ClusterRole.
  const every = {
    ...CUSTOM,
    kcpWebhookReads: { ...CUSTOM.kcpWebhookReads, render: true },
  };
  const { yaml, objects } = await render(every);
  assert.deepEqual(objects.map(describeObject), [
    "ClusterRole dependency-webhook:reads:platform",
  ]);
  // So --show-only is optional: it changes nothing.
  const shown = await render(every, {
    args: ["--show-only", "templates/kcp-webhook-reads.yaml"],
  });
  assert.equal(shown.yaml, yaml);
  // Each other template renders something with every option, and nothing in
  // kcp mode (helm's --show-only then finds nothing).
  const templates: string[] = [];
  for await (const entry of Deno.readDir(`${CHART}/templates`)) {
    if (
      entry.name.endsWith(".yaml") && entry.name !== "kcp-webhook-reads.yaml"
    ) templates.push(entry.name);
  }
  assert.ok(templates.length >= 8, `the templates: ${templates}`);
  for (const template of templates.sort()) {
    const args = ["--show-only", `templates/${template}`];
    const off = await helmTemplate(CUSTOM, { args });
    assert.equal(off.code, 0, `${template} renders:\n${off.stderr}`);
    const on = await helmTemplate(every, { args });
    assert.notEqual(on.code, 0, `${template} in kcp mode:\n${on.stdout}`);
    assert.match(on.stderr, /could not find template/, template);
  }
  // Off by default, and with render false even when the lists are set.
  for (const values of [{}, CUSTOM]) {
    const { objects } = await render(values);
    assert.ok(objects.length > 5, "the hosting cluster's objects");
    assert.equal(objects.some((o) => o.kind === "ClusterRole"), false);
  }
  const hidden = await helmTemplate({}, {
    args: ["--show-only", "templates/kcp-webhook-reads.yaml"],
  });
  assert.notEqual(hidden.code, 0);
  assert.match(
    hidden.stderr,
    /could not find template templates\/kcp-webhook-reads\.yaml/,
  );
});

/** `<resource>.<group>` (`<resource>` for core) as a kcpWebhookReads entry. */
function typeEntry(type: string): { group: string; resources: string[] } {
  const dot = type.indexOf(".");
  return dot === -1
    ? { group: "", resources: [type] }
    : { group: type.slice(dot + 1), resources: [type.slice(0, dot)] };
}

/** `text` as a regular expression that matches it literally. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

Deno.test("kcp mode refuses wildcards, the types the webhook is never granted, and empty lists, with a message naming them", async () => {
  const reads = (lists: Obj) => ({
    kcpWebhookReads: { render: true, ...lists },
  });
  for (const lists of [{}, { dependents: [], protected: [] }]) {
    await assertRefused(
      reads(lists),
      /kcpWebhookReads\.render is true but kcpWebhookReads\.dependents and kcpWebhookReads\.protected are both empty/,
    );
  }
  // Every type of NEVER_GRANTED, in either list, after a type that is fine.
  const fine = { group: "compute.example.com", resources: ["virtualmachines"] };
  for (const type of NEVER_GRANTED) {
    for (const list of ["dependents", "protected"]) {
      await assertRefused(
        reads({ [list]: [fine, typeEntry(type)] }),
        new RegExp(
          `kcpWebhookReads\\.${list}\\[1\\]: the webhook is never granted ${
            literal(type)
          }: its objects are tenants' secrets and credentials, or RBAC`,
        ),
      );
    }
  }
  for (
    const [entry, message] of [
      [
        { group: "network.example.com", resources: ["vpcs", "*"] },
        /kcpWebhookReads\.protected\[0\]\.resources "\*": no wildcards, a wildcard would grant the webhook every type of group "network\.example\.com"/,
      ],
      [
        { group: "", resources: ["*"] },
        /kcpWebhookReads\.protected\[0\]\.resources "\*": no wildcards/,
      ],
      [
        { group: "network.example.com", resources: ["vpcs/*"] },
        /kcpWebhookReads\.protected\[0\]\.resources "vpcs\/\*": no wildcards/,
      ],
      [
        { group: "*", resources: ["vpcs"] },
        /kcpWebhookReads\.protected\[0\]\.group "\*": no wildcards, a wildcard would grant the webhook every group/,
      ],
      [
        { group: "Network.example.com", resources: ["vpcs"] },
        /kcpWebhookReads\.protected\[0\]\.group "Network\.example\.com" is not an API group/,
      ],
      [
        { group: "network.example.com", resources: ["VPCs"] },
        /kcpWebhookReads\.protected\[0\]\.resources "VPCs" is not a resource/,
      ],
      [
        { group: "network.example.com", resources: ["vpcs/status"] },
        /kcpWebhookReads\.protected\[0\]\.resources "vpcs\/status" is not a resource/,
      ],
      [
        { group: "network.example.com", resources: [] },
        /kcpWebhookReads\.protected\[0\]\.resources must list at least one resource of group "network\.example\.com"/,
      ],
    ] as const
  ) {
    await assertRefused(reads({ protected: [entry] }), message);
  }
  // Without the schema, an entry without a group is refused, not read as
  // the core group.
  const noGroup = await helmTemplate(
    reads({ dependents: [{ resources: ["pods"] }] }),
    { args: ["--skip-schema-validation"] },
  );
  assert.notEqual(noGroup.code, 0);
  assert.match(
    noGroup.stderr,
    /kcpWebhookReads\.dependents\[0\]\.group must be a string, "" for the core group/,
  );
});

Deno.test("files/never-granted.yaml lists exactly the types the webhook is never granted (NEVER_GRANTED)", async () => {
  const file = parseYaml(
    await Deno.readTextFile(`${CHART}/files/never-granted.yaml`),
  );
  assert.deepEqual(Object.keys(file), ["neverGranted"]);
  assert.equal(new Set(file.neverGranted).size, file.neverGranted.length);
  assert.deepEqual([...file.neverGranted].sort(), [...NEVER_GRANTED].sort());
});

/** The kcp mode command the README and values.yaml show. */
const KCP_MODE_COMMAND =
  "helm template dep-ctrl charts/dependency-controller --show-only templates/kcp-webhook-reads.yaml --set kcpWebhookReads.render=true -f grants.yaml | kubectl --server https://<shard>/clusters/system:admin apply -f -";

Deno.test("the README's kcp mode example, rendered as it shows, gives the grants of its types", async () => {
  const markdown = await Deno.readTextFile(README);
  const examples = [...markdown.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)]
    .map(([, body]) => parseYaml(body!))
    .filter((values) => values?.kcpWebhookReads !== undefined);
  assert.equal(examples.length, 1, "one example grants.yaml");
  // As the command renders it: the example file, and render=true by --set.
  const { objects } = await render(examples[0], {
    args: [
      "--show-only",
      "templates/kcp-webhook-reads.yaml",
      "--set",
      "kcpWebhookReads.render=true",
    ],
  });
  assert.deepEqual(objects, [await kcpRole(KCP_MODE)]);
  const values = await Deno.readTextFile(`${CHART}/values.yaml`);
  for (
    const [file, text] of [
      ["README.md", markdown.replace(/\s*\\\n\s*/g, " ")],
      ["values.yaml", values.replace(/\s*\\\n#\s*/g, " ")],
    ] as const
  ) {
    assert.ok(text.includes(KCP_MODE_COMMAND), `${file} shows the command`);
    assert.ok(
      text.includes("kcp mode: renders only the ClusterRole for kcp's"),
      `${file} says what kcp mode is`,
    );
  }
});

/** The rule groups of every YAML code block in `markdown` with a key groups. */
function alertBlocks(markdown: string): Obj[][] {
  return [...markdown.matchAll(/^```ya?ml\n([\s\S]*?)^```$/gm)]
    .filter(([, body]) => /^groups:/m.test(body!))
    .map(([, body]) => parseYaml(body!).groups);
}

const OPERATIONS = `${ROOT}docs/operations.md`;

/**
 * Asserts that `doc`, the text of docs/operations.md, shows exactly the
 * rule groups `groups` in each YAML block of alerts, or, with no such block,
 * links to `files/alerts.yaml`.
 *
 * @throws {AssertionError} If it does neither.
 */
function assertAlertsShownOrLinked(doc: string, groups: Obj[]): void {
  const blocks = alertBlocks(doc);
  for (const block of blocks) {
    assert.deepEqual(
      block,
      groups,
      "the alerts in docs/operations.md are those of files/alerts.yaml",
    );
  }
  if (blocks.length > 0) return;
  const alertsFile = `${CHART}/files/alerts.yaml`;
  assert.ok(
    linkTargets(doc).some((target) =>
      new URL(target.replace(/#.*$/, ""), `file://${OPERATIONS}`).pathname ===
        alertsFile ||
      /^https:\/\/.*\/charts\/dependency-controller\/files\/alerts\.yaml$/.test(
        target,
      )
    ),
    "docs/operations.md shows no alerts and does not link to files/alerts.yaml",
  );
}

Deno.test("docs/operations.md shows the alerts of files/alerts.yaml, or links to it", async () => {
  const doc = await Deno.readTextFile(OPERATIONS);
  const groups = await alertGroups();
  assertAlertsShownOrLinked(doc, groups);
  // Either form of the docs is checked, whichever they have now.
  const shown = `## Suggested alerts\n\n\`\`\`yaml\n${
    stringify({ groups }, { lineWidth: 0 })
  }\`\`\`\n`;
  assertAlertsShownOrLinked(shown, groups);
  assert.throws(
    () =>
      assertAlertsShownOrLinked(
        shown.replace("> 450 * 1024 * 1024", "> 500 * 1024 * 1024"),
        groups,
      ),
    /the alerts in docs\/operations\.md are those of files\/alerts\.yaml/,
  );
  const linked =
    "## Suggested alerts\n\nThe chart's [alerts](../charts/dependency-controller/files/alerts.yaml).\n";
  assertAlertsShownOrLinked(linked, groups);
  assert.throws(
    () =>
      assertAlertsShownOrLinked(
        linked.replace("files/alerts.yaml", "values.yaml"),
        groups,
      ),
    /does not link to files\/alerts\.yaml/,
  );
});

/** The anchors GitHub gives the headings of `markdown`. */
function anchors(markdown: string): Set<string> {
  return new Set(
    [...withoutCode(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)].map((
      [, heading],
    ) =>
      heading!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(
        / /g,
        "-",
      )
    ),
  );
}

const README = `${CHART}/README.md`;

Deno.test("the chart's README links only to files and headings that exist", async () => {
  const markdown = await Deno.readTextFile(README);
  const broken: string[] = [];
  let checked = 0;
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    checked++;
    const [path, anchor] = target.split("#") as [string, string | undefined];
    const file = path === ""
      ? README
      : new URL(decodeURIComponent(path), `file://${README}`).pathname;
    let text: string;
    try {
      text = (await Deno.stat(file)).isFile
        ? await Deno.readTextFile(file)
        : "";
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      broken.push(`${target}: no such file`);
      continue;
    }
    if (anchor !== undefined && !anchors(text).has(anchor)) {
      broken.push(`${target}: no such heading`);
    }
  }
  assert.ok(checked > 10, "found the relative links");
  assert.deepEqual(broken, [], "broken links in the chart's README");
  // The check sees a missing heading: a negative control.
  assert.equal(anchors(markdown).has("no-such-heading"), false);
  assert.ok(anchors(markdown).has("extraargs"));
});

/** The rows of the README's values table: each value's path and default. */
async function readmeValues(): Promise<Map<string, string>> {
  const markdown = await Deno.readTextFile(README);
  const section = markdown.split(/^## Values$/m)[1]?.split(/^##+ /m)[0];
  assert.ok(section, "README.md has a section ## Values");
  const rows = new Map<string, string>();
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    const path = /^`([^`]+)`$/.exec(cells[1] ?? "")?.[1];
    if (path === undefined) continue;
    assert.equal(rows.has(path), false, `one row for ${path}`);
    rows.set(path, cells[2]!);
  }
  return rows;
}

Deno.test("the chart's README lists every value of values.yaml with its default, and no other", async () => {
  const values = await chartValues();
  const rows = await readmeValues();
  const problems: string[] = [];
  for (const [path, value] of leaves(values)) {
    const cell = rows.get(path);
    if (cell === undefined) {
      problems.push(`${path}: no row`);
      continue;
    }
    const code = /^`([^`]*)`$/.exec(cell)?.[1];
    if (code === undefined) {
      problems.push(`${path}: the default is not one code span: ${cell}`);
    } else if (!isDeepStrictEqual(parseYaml(code), value)) {
      problems.push(
        `${path}: the README says ${code}, values.yaml ${
          JSON.stringify(value)
        }`,
      );
    }
  }
  const paths = new Set(leaves(values).map(([path]) => path));
  for (const path of rows.keys()) {
    if (!paths.has(path)) problems.push(`${path}: not a value of values.yaml`);
  }
  assert.deepEqual(problems, []);
  assert.ok(rows.size > 50, "the table is read");
  // The comparison is by value and type: "1" is not 1.
  assert.equal(rows.get("controller.resources.limits.cpu"), '`"1"`');
  assert.equal(isDeepStrictEqual(parseYaml("1"), "1"), false);
});

/**
 * NOTES.txt rendered with `values`. `helm template` leaves NOTES.txt out and
 * `helm install --dry-run` needs a cluster, so a copy of the chart renders
 * it with `tpl` into a ConfigMap.
 */
async function renderNotes(values: Obj): Promise<string> {
  const dir = await Deno.makeTempDir();
  try {
    const copy = `${dir}/dependency-controller`;
    const cp = await runCommand("cp", ["-r", CHART, copy]);
    assert.equal(cp.code, 0, cp.stderr);
    await Deno.copyFile(
      `${copy}/templates/NOTES.txt`,
      `${copy}/files/NOTES.txt`,
    );
    await Deno.writeTextFile(
      `${copy}/templates/notes-for-test.yaml`,
      [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata: {name: notes}",
        "data:",
        '  notes: {{ tpl (.Files.Get "files/NOTES.txt") . | toJson }}',
        "",
      ].join("\n"),
    );
    const { objects } = await render(values, { chart: copy });
    return findObject(objects, "ConfigMap", "notes").data.notes;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("NOTES.txt says what to apply on the kcp side and how to check that rules are enforced", async () => {
  const notes = await renderNotes({});
  for (
    const text of [
      "kubectl apply -k manifests/kcp/dep-ctrl",
      "root:dep-ctrl",
      "system:admin of EVERY shard",
      "kubectl apply -k manifests/kcp/system-admin",
      "controller grants --kubeconfig=<webhook kubeconfig> | kubectl apply -f -",
      "docker run --rm -v $PWD/webhook.kubeconfig:/k:ro registry.example.com/dependency-controller:0.2.0 grants --kubeconfig=/k",
      "this chart's kcp mode (kcpWebhookReads",
      "kubectl apply -k manifests/kcp/workspace-reader",
      "kubectl get dependencyrules",
      "READY True and REASON Enforced",
      `kubectl -n ${NS} rollout status deployment/dependency-webhook`,
      "Secret    dependency-webhook-tls  tls.crt, tls.key",
      "ConfigMap dependency-webhook-ca",
    ]
  ) {
    assert.ok(notes.includes(text), `NOTES.txt says ${text}:\n${notes}`);
  }
  assert.equal(notes.includes("break-glass"), false);
  // Chart users need no checkout of the Deno project for the grants.
  assert.equal(notes.includes("deno task"), false, notes);
  const custom = await renderNotes(CUSTOM);
  assert.ok(
    custom.includes("kubectl apply -k manifests/kcp/system-admin/break-glass"),
    custom,
  );
  assert.ok(
    custom.includes(
      "Secret    deps-serving-cert  written by the Certificate deps-serving-cert (ClusterIssuer platform-ca)",
    ),
    custom,
  );
  assert.equal(custom.includes("ConfigMap deps-ca"), false, "ca.cert is set");
});

Deno.test("in kcp mode NOTES.txt says that the release is the ClusterRole for kcp, and where it goes", async () => {
  const notes = await renderNotes(KCP_MODE);
  assert.ok(
    notes.startsWith(
      "kcp mode: renders only the ClusterRole dependency-webhook:reads:helm for kcp's\nsystem:admin",
    ),
    notes,
  );
  assert.ok(
    notes.includes(
      "| kubectl --server https://<shard>/clusters/system:admin apply -f -",
    ),
    notes,
  );
  // Not the hosting cluster's notes: nothing rolls out there.
  assert.equal(notes.includes("rollout status"), false, notes);
});
