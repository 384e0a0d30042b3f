/**
 * What the hosting-cluster manifests must satisfy, however they are made:
 * `kubectl kustomize manifests/deploy` (`tests/manifests_test.ts`) and the
 * Helm chart in `charts/dependency-controller` (`tests/chart_test.ts`) are
 * checked with the same assertions. The Deployments agree with the binaries
 * they run: their flags parse with the components' own option parsers, every
 * file a flag names is mounted from the Secret or ConfigMap it should come
 * from, probes and Service reach the ports the flags bind, and the commands
 * are where the Containerfile puts them. The NetworkPolicies admit only kcp's
 * shards to the webhook and Prometheus to metrics.
 *
 * @module
 */
import assert from "node:assert/strict";
import { basename } from "node:path";
import {
  type ControllerOptions,
  parseControllerOptions,
} from "../lib/controller/mod.ts";
import {
  parseWebhookOptions,
  type WebhookOptions,
} from "../lib/webhook/mod.ts";
import { WEBHOOK_RUN } from "./components.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** A Kubernetes object as YAML decodes it. */
// deno-lint-ignore no-explicit-any
export type ManifestObject = Record<string, any>;

/**
 * The object of that kind and name in `objects`.
 *
 * @throws {AssertionError} If there is none.
 */
export function findObject(
  objects: ManifestObject[],
  kind: string,
  name: string,
): ManifestObject {
  const found = objects.find((o) =>
    o.kind === kind && o.metadata?.name === name
  );
  assert.ok(found, `${kind} ${name} is in the build`);
  return found;
}

/** The container's args with `$(VAR)` expanded as the kubelet does. */
export function expandedArgs(
  objects: ManifestObject[],
  container: ManifestObject,
): string[] {
  const env = new Map<string, string>();
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.configMapKeyRef;
    if (ref === undefined) {
      env.set(variable.name, variable.value ?? "");
      continue;
    }
    const value = findObject(objects, "ConfigMap", ref.name).data?.[ref.key];
    assert.equal(
      typeof value,
      "string",
      `ConfigMap ${ref.name} has ${ref.key}`,
    );
    env.set(variable.name, value);
  }
  return (container.args as string[]).map((arg) =>
    arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => {
      assert.ok(env.has(name), `${whole} in ${arg} names a defined variable`);
      return env.get(name)!;
    })
  );
}

/** The volume source of the file at `path` in the container. */
function mountedFrom(
  pod: ManifestObject,
  container: ManifestObject,
  path: string,
): {
  kind: "secret" | "configMap";
  name: string;
  key: string;
} {
  const mount = (container.volumeMounts as ManifestObject[]).find((m) =>
    path.startsWith(`${m.mountPath}/`)
  );
  assert.ok(mount, `${path} lies in a mounted volume`);
  assert.equal(mount.readOnly, true, `${mount.mountPath} is mounted read-only`);
  const volume = (pod.volumes as ManifestObject[]).find((v) =>
    v.name === mount.name
  );
  assert.ok(volume, `volume ${mount.name} exists`);
  const key = path.slice(mount.mountPath.length + 1);
  if (volume.secret) {
    return { kind: "secret", name: volume.secret.secretName, key };
  }
  assert.ok(volume.configMap, `volume ${mount.name} is a Secret or ConfigMap`);
  return { kind: "configMap", name: volume.configMap.name, key };
}

function mountDir(
  pod: ManifestObject,
  container: ManifestObject,
  dir: string,
): string {
  const mount = (container.volumeMounts as ManifestObject[]).find((m) =>
    m.mountPath === dir
  );
  assert.ok(mount, `${dir} is a mount`);
  const volume = (pod.volumes as ManifestObject[]).find((v) =>
    v.name === mount.name
  );
  assert.ok(volume?.secret, `${dir} comes from a Secret`);
  return volume.secret.secretName;
}

function containerPort(
  container: ManifestObject,
  port: string | number,
): number {
  if (typeof port === "number") return port;
  const named = (container.ports as ManifestObject[]).find((p) =>
    p.name === port
  );
  assert.ok(named, `port ${port} is declared`);
  return named.containerPort;
}

/** Whether a label selector selects `labels` (only `In` is evaluated). */
function selects(
  selector: ManifestObject,
  labels: Record<string, string>,
): boolean {
  return Object.entries(selector.matchLabels ?? {}).every(([k, v]) =>
    labels[k] === v
  ) && (selector.matchExpressions ?? []).every((e: ManifestObject) => {
    assert.equal(e.operator, "In", `${e.key}: operator ${e.operator}`);
    return e.values.includes(labels[e.key]);
  });
}

/** A Pod that might connect: its namespace and labels. */
type Client = [namespace: string, labels: Record<string, string>];

/** Whether a NetworkPolicy peer admits the Pod (an ipBlock may admit any). */
function admits(
  policy: ManifestObject,
  peer: ManifestObject,
  [namespace, labels]: Client,
): boolean {
  if (peer.ipBlock !== undefined) return true;
  const inNamespace = peer.namespaceSelector === undefined
    ? namespace === policy.metadata.namespace
    : selects(peer.namespaceSelector, {
      "kubernetes.io/metadata.name": namespace,
    });
  return inNamespace && selects(peer.podSelector ?? {}, labels);
}

function assertHardened(pod: ManifestObject, container: ManifestObject): void {
  const name = container.name;
  assert.equal(pod.automountServiceAccountToken, false, `${name}: no token`);
  assert.equal(pod.securityContext?.runAsNonRoot, true, `${name}: non-root`);
  assert.notEqual(pod.securityContext?.runAsUser, 0, `${name}: uid is not 0`);
  assert.equal(pod.securityContext?.seccompProfile?.type, "RuntimeDefault");
  const security = container.securityContext ?? {};
  assert.equal(
    security.readOnlyRootFilesystem,
    true,
    `${name}: read-only root`,
  );
  assert.equal(
    security.allowPrivilegeEscalation,
    false,
    `${name}: no escalation`,
  );
  assert.deepEqual(
    security.capabilities?.drop,
    ["ALL"],
    `${name}: no capabilities`,
  );
  for (const kind of ["requests", "limits"]) {
    for (const resource of ["cpu", "memory"]) {
      assert.ok(
        container.resources?.[kind]?.[resource],
        `${name}: resources.${kind}.${resource} is set`,
      );
    }
  }
}

function assertProbes(
  container: ManifestObject,
  options: { healthBind?: { port: number } },
): void {
  assert.ok(options.healthBind, `${container.name} serves probes`);
  for (
    const [probe, path] of [
      ["livenessProbe", "/healthz"],
      ["readinessProbe", "/readyz"],
    ] as const
  ) {
    const get = container[probe]?.httpGet;
    assert.equal(get?.path, path, `${container.name} ${probe} path`);
    assert.equal(
      containerPort(container, get.port),
      options.healthBind.port,
      `${container.name} ${probe} reaches --health-probe-bind-address`,
    );
  }
}

/** Where the Containerfile's runtime stage puts the compiled binaries. */
async function imageBinaries(): Promise<string[]> {
  const containerfile = await Deno.readTextFile(`${ROOT}Containerfile`);
  const copy = /^COPY --from=build (.+) (\S+)\/$/m.exec(containerfile);
  assert.ok(copy, "the runtime stage copies the binaries");
  const [, sources, dest] = copy;
  return sources!.split(/\s+/).map((source) => `${dest}/${basename(source)}`);
}

/** The names the deploy manifests take from their installation. */
export interface DeployNames {
  /** The namespace of every object but the Namespace. */
  namespace: string;
  /** The Secret with the controller's kubeconfig (key `kubeconfig`). */
  controllerKubeconfigSecret: string;
  /** The Secret with the webhook's kubeconfig (key `kubeconfig`). */
  webhookKubeconfigSecret: string;
  /** The Secret with the webhook's serving certificate. */
  webhookTlsSecret: string;
  /** The ConfigMap with the webhook's CA (key `ca.crt`). */
  webhookCaConfigMap: string;
  /** The webhook's `--skip-protection-mode`. */
  skipProtectionMode: WebhookOptions["skipProtectionMode"];
  /**
   * The controller's `--webhook-url`, or `undefined` for the webhook
   * Service's URL on the port it serves.
   */
  webhookUrl?: string;
}

/** The names `manifests/deploy` uses. */
export const DEPLOY_NAMES: Readonly<DeployNames> = {
  namespace: "dependency-controller",
  controllerKubeconfigSecret: "dependency-controller-kubeconfig",
  webhookKubeconfigSecret: "dependency-webhook-kubeconfig",
  webhookTlsSecret: "dependency-webhook-tls",
  webhookCaConfigMap: "dependency-webhook-ca",
  skipProtectionMode: "annotation",
};

/** The options each component's Deployment runs it with. */
export interface DeployOptions {
  /** The controller's, parsed from its container's args. */
  controller: ControllerOptions;
  /** The webhook's, parsed from its container's args. */
  webhook: WebhookOptions;
}

/**
 * Asserts that the Deployments of `objects` agree with the binaries they
 * run, with the Secrets, ConfigMaps and namespace of `names`: flags, mounts,
 * probes, ports, commands, hardening, the Service, the PodDisruptionBudget
 * (required with more than one webhook replica) and the webhook URL.
 * Returns the options each component was given.
 *
 * @throws {AssertionError} If any does not hold.
 */
export async function assertDeployAgrees(
  objects: ManifestObject[],
  names: Readonly<DeployNames> = DEPLOY_NAMES,
): Promise<DeployOptions> {
  const namespace = objects.find((o) => o.kind === "Namespace");
  if (namespace !== undefined) {
    assert.equal(namespace.metadata.name, names.namespace);
  }
  for (const o of objects) {
    if (o.kind === "Namespace") continue;
    assert.equal(
      o.metadata.namespace,
      names.namespace,
      `${o.kind} ${o.metadata.name} is in the namespace`,
    );
  }
  const [controllerBin, webhookBin] = await imageBinaries().then((bins) => [
    bins.find((b) => b.endsWith("/controller")),
    bins.find((b) => b.endsWith("/webhook")),
  ]);

  // The controller.
  const controller = findObject(objects, "Deployment", "dependency-controller");
  const cPod = controller.spec.template.spec;
  const [c] = cPod.containers;
  findObject(objects, "ServiceAccount", cPod.serviceAccountName);
  assert.deepEqual(c.command, [controllerBin]);
  const parsedController = parseControllerOptions(expandedArgs(objects, c), {
    env: () => undefined,
  });
  assert.equal(parsedController.help, false);
  const co = (parsedController as { options: ControllerOptions }).options;
  assert.deepEqual(mountedFrom(cPod, c, co.kubeconfig), {
    kind: "secret",
    name: names.controllerKubeconfigSecret,
    key: "kubeconfig",
  });
  assert.deepEqual(mountedFrom(cPod, c, co.webhookCaBundlePath), {
    kind: "configMap",
    name: names.webhookCaConfigMap,
    key: "ca.crt",
  });
  if (controller.spec.replicas > 1) {
    assert.equal(co.leaderElect, true, "replicas share the leader Lease");
  }
  assertProbes(c, co);
  assert.equal(containerPort(c, "metrics"), co.metricsBind?.port);
  assertHardened(cPod, c);

  // The webhook, its Service and its disruption budget.
  const webhook = findObject(objects, "Deployment", "dependency-webhook");
  const wPod = webhook.spec.template.spec;
  const [w] = wPod.containers;
  findObject(objects, "ServiceAccount", wPod.serviceAccountName);
  assert.deepEqual(w.command, [webhookBin]);
  const parsedWebhook = parseWebhookOptions(expandedArgs(objects, w), {
    env: () => undefined,
  });
  assert.equal(parsedWebhook.help, false);
  const wo = (parsedWebhook as { options: WebhookOptions }).options;
  assert.deepEqual(mountedFrom(wPod, w, wo.kubeconfig), {
    kind: "secret",
    name: names.webhookKubeconfigSecret,
    key: "kubeconfig",
  });
  assert.equal(mountDir(wPod, w, wo.tlsCertDir), names.webhookTlsSecret);
  assertProbes(w, wo);
  assert.equal(containerPort(w, "metrics"), wo.metricsBind?.port);
  assertHardened(wPod, w);
  assert.equal(webhook.spec.strategy.rollingUpdate.maxUnavailable, 0);
  assert.equal(
    wo.skipProtectionMode,
    names.skipProtectionMode,
    names.skipProtectionMode === "annotation"
      ? "reference-compatible"
      : "--skip-protection-mode",
  );
  // The tests run the webhook as the Deployment does.
  for (const [name, value] of Object.entries(WEBHOOK_RUN.env)) {
    assert.equal(
      w.env?.find((e: { name: string }) => e.name === name)?.value,
      value,
      name,
    );
  }
  assert.ok(
    (w.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000 +
        wo.shutdownTimeoutMs < wPod.terminationGracePeriodSeconds * 1000,
    "preStop and --shutdown-timeout end before the kubelet's SIGKILL",
  );

  const service = findObject(objects, "Service", "dependency-webhook");
  const labels = webhook.spec.template.metadata.labels;
  for (const [key, value] of Object.entries(service.spec.selector)) {
    assert.equal(
      labels[key],
      value,
      `the Service selects webhook pods (${key})`,
    );
  }
  const [servicePort] = service.spec.ports;
  assert.equal(
    containerPort(w, servicePort.targetPort),
    wo.webhookBind.port,
    "the Service reaches --webhook-bind-address",
  );
  const pdb = objects.find((o) =>
    o.kind === "PodDisruptionBudget" && o.metadata.name === "dependency-webhook"
  );
  if (webhook.spec.replicas > 1) {
    assert.ok(pdb, "a PodDisruptionBudget keeps a webhook replica up");
  }
  if (pdb !== undefined) {
    assert.deepEqual(
      pdb.spec.selector.matchLabels,
      webhook.spec.selector.matchLabels,
    );
    assert.ok(pdb.spec.minAvailable >= 1);
    assert.ok(
      webhook.spec.replicas > pdb.spec.minAvailable,
      "a drain can proceed",
    );
  }

  if (names.webhookUrl !== undefined) {
    assert.equal(co.webhookUrl, names.webhookUrl);
  } else {
    // The default webhook URL is the Service, on the port it serves.
    const url = new URL(co.webhookUrl);
    assert.equal(
      url.hostname,
      `${service.metadata.name}.${names.namespace}.svc`,
    );
    assert.equal(Number(url.port || 443), servicePort.port);
    assert.equal(url.pathname, "/validate");
  }
  return { controller: co, webhook: wo };
}

/** The namespaces the NetworkPolicies admit from. */
export interface PolicyNamespaces {
  /** Where kcp's shards run, labelled as the kcp-operator labels them. */
  kcp: string;
  /** Where Prometheus runs. */
  metrics: string;
  /** The components' own namespace. */
  own: string;
}

/**
 * Asserts that the NetworkPolicies of `objects` admit only kcp's shards to
 * the webhook's admission port and Prometheus to both components' metrics,
 * with shards and Prometheus in the namespaces of `namespaces`; the probe
 * port admits no Pod (the kubelet probes from the node).
 *
 * @throws {AssertionError} If any does not hold.
 */
export function assertNetworkPolicies(
  objects: ManifestObject[],
  namespaces: Readonly<PolicyNamespaces> = {
    kcp: "kcp",
    metrics: "monitoring",
    own: DEPLOY_NAMES.namespace,
  },
): void {
  // Pods that might connect; kcp's as the kcp-operator labels them.
  const kcp = (component: string) => ({
    "app.kubernetes.io/name": "kcp",
    "app.kubernetes.io/component": component,
  });
  const clients: Record<string, Client> = {
    rootshard: [namespaces.kcp, kcp("rootshard")],
    shard: [namespaces.kcp, kcp("shard")],
    frontProxy: [namespaces.kcp, kcp("front-proxy")],
    shardElsewhere: ["default", kcp("shard")],
    prometheus: [namespaces.metrics, {}],
    neighbour: [namespaces.own, {}],
  };
  // No Pod reaches the probe port (health): the kubelet's probes come from
  // the node, which NetworkPolicy does not filter.
  for (
    const [name, expected] of [
      ["dependency-webhook", {
        https: ["rootshard", "shard"],
        metrics: ["prometheus"],
      }],
      ["dependency-controller", { metrics: ["prometheus"] }],
    ] as const
  ) {
    const policy = findObject(objects, "NetworkPolicy", name);
    const deployment = findObject(objects, "Deployment", name);
    for (const d of objects.filter((o) => o.kind === "Deployment")) {
      assert.equal(
        selects(policy.spec.podSelector, d.spec.template.metadata.labels),
        d === deployment,
        `NetworkPolicy ${name} ${
          d === deployment ? "selects" : "does not select"
        } the Pods of ${d.metadata.name}`,
      );
    }
    assert.deepEqual(policy.spec.policyTypes, ["Ingress"]);
    const ports = (deployment.spec.template.spec.containers as ManifestObject[])
      .flatMap((c) => c.ports as ManifestObject[]);
    const admitted: Record<string, string[]> = {};
    for (const rule of policy.spec.ingress) {
      // loadAllYaml builds V1NetworkPolicyIngressRule, which calls `from`
      // `_from`; a plain YAML parse keeps `from`.
      const peers: ManifestObject[] | undefined = rule._from ?? rule.from;
      assert.ok(rule.ports?.length && peers?.length, "no rule admits all");
      const from = Object.keys(clients).filter((client) =>
        peers.some((peer) => admits(policy, peer, clients[client]!))
      );
      for (const { port } of rule.ports) {
        const declared = ports.find((p) =>
          p.name === port || p.containerPort === port
        );
        assert.ok(declared, `${name}: port ${port} is a container port`);
        (admitted[declared.name] ??= []).push(...from);
      }
    }
    assert.deepEqual(admitted, expected, `who reaches which port of ${name}`);
  }
}
