/**
 * What operators `kubectl apply -k`: every kustomization under `manifests/`
 * builds with kubectl's kustomize, and the hosting-cluster Deployments agree
 * with the binaries they run: their flags parse with the components' own
 * option parsers, every file a flag names is mounted from the Secret or
 * ConfigMap it should come from, probes and Service reach the ports the
 * flags bind, and the commands are where the Containerfile puts them.
 */
import assert from "node:assert/strict";
import { runCommand, WEBHOOK_RUN } from "../testing/mod.ts";
import { basename, relative } from "node:path";
import { loadAllYaml } from "@kubernetes/client-node";
import {
  type ControllerOptions,
  parseControllerOptions,
} from "../lib/controller/mod.ts";
import {
  parseWebhookOptions,
  type WebhookOptions,
} from "../lib/webhook/mod.ts";
import { requireKcpBinaries } from "../testing/kcp/binaries.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DEPLOY = `${ROOT}manifests/deploy`;

// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;

async function kustomize(dir: string): Promise<Obj[]> {
  const { kubectl } = await requireKcpBinaries();
  const output = await runCommand(kubectl, ["kustomize", dir]);
  assert.equal(
    output.code,
    0,
    `kubectl kustomize ${dir} failed: ${output.stderr}`,
  );
  return (loadAllYaml(output.stdout) as (Obj | null)[])
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

function find(objects: Obj[], kind: string, name: string): Obj {
  const found = objects.find((o) =>
    o.kind === kind && o.metadata?.name === name
  );
  assert.ok(found, `${kind} ${name} is in the build`);
  return found;
}

/** The container's args with `$(VAR)` expanded as the kubelet does. */
function expandedArgs(objects: Obj[], container: Obj): string[] {
  const env = new Map<string, string>();
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.configMapKeyRef;
    if (ref === undefined) {
      env.set(variable.name, variable.value ?? "");
      continue;
    }
    const value = find(objects, "ConfigMap", ref.name).data?.[ref.key];
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
function mountedFrom(pod: Obj, container: Obj, path: string): {
  kind: "secret" | "configMap";
  name: string;
  key: string;
} {
  const mount = (container.volumeMounts as Obj[]).find((m) =>
    path.startsWith(`${m.mountPath}/`)
  );
  assert.ok(mount, `${path} lies in a mounted volume`);
  assert.equal(mount.readOnly, true, `${mount.mountPath} is mounted read-only`);
  const volume = (pod.volumes as Obj[]).find((v) => v.name === mount.name);
  assert.ok(volume, `volume ${mount.name} exists`);
  const key = path.slice(mount.mountPath.length + 1);
  if (volume.secret) {
    return { kind: "secret", name: volume.secret.secretName, key };
  }
  assert.ok(volume.configMap, `volume ${mount.name} is a Secret or ConfigMap`);
  return { kind: "configMap", name: volume.configMap.name, key };
}

function mountDir(pod: Obj, container: Obj, dir: string): string {
  const mount = (container.volumeMounts as Obj[]).find((m) =>
    m.mountPath === dir
  );
  assert.ok(mount, `${dir} is a mount`);
  const volume = (pod.volumes as Obj[]).find((v) => v.name === mount.name);
  assert.ok(volume?.secret, `${dir} comes from a Secret`);
  return volume.secret.secretName;
}

function containerPort(container: Obj, port: string | number): number {
  if (typeof port === "number") return port;
  const named = (container.ports as Obj[]).find((p) => p.name === port);
  assert.ok(named, `port ${port} is declared`);
  return named.containerPort;
}

/** Whether a label selector selects `labels` (only `In` is evaluated). */
function selects(selector: Obj, labels: Record<string, string>): boolean {
  return Object.entries(selector.matchLabels ?? {}).every(([k, v]) =>
    labels[k] === v
  ) && (selector.matchExpressions ?? []).every((e: Obj) => {
    assert.equal(e.operator, "In", `${e.key}: operator ${e.operator}`);
    return e.values.includes(labels[e.key]);
  });
}

/** A Pod that might connect: its namespace and labels. */
type Client = [namespace: string, labels: Record<string, string>];

/** Whether a NetworkPolicy peer admits the Pod (an ipBlock may admit any). */
function admits(policy: Obj, peer: Obj, [namespace, labels]: Client): boolean {
  if (peer.ipBlock !== undefined) return true;
  const inNamespace = peer.namespaceSelector === undefined
    ? namespace === policy.metadata.namespace
    : selects(peer.namespaceSelector, {
      "kubernetes.io/metadata.name": namespace,
    });
  return inNamespace && selects(peer.podSelector ?? {}, labels);
}

function assertHardened(pod: Obj, container: Obj): void {
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
  container: Obj,
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
  const namespace = find(objects, "Namespace", "dependency-controller");
  for (const o of objects) {
    if (o.kind === "Namespace") continue;
    assert.equal(
      o.metadata.namespace,
      namespace.metadata.name,
      `${o.kind} ${o.metadata.name} is in the namespace`,
    );
  }
  const [controllerBin, webhookBin] = await imageBinaries().then((bins) => [
    bins.find((b) => b.endsWith("/controller")),
    bins.find((b) => b.endsWith("/webhook")),
  ]);

  // The controller.
  const controller = find(objects, "Deployment", "dependency-controller");
  const cPod = controller.spec.template.spec;
  const [c] = cPod.containers;
  find(objects, "ServiceAccount", cPod.serviceAccountName);
  assert.deepEqual(c.command, [controllerBin]);
  const parsedController = parseControllerOptions(expandedArgs(objects, c), {
    env: () => undefined,
  });
  assert.equal(parsedController.help, false);
  const co = (parsedController as { options: ControllerOptions }).options;
  assert.deepEqual(mountedFrom(cPod, c, co.kubeconfig), {
    kind: "secret",
    name: "dependency-controller-kubeconfig",
    key: "kubeconfig",
  });
  assert.deepEqual(mountedFrom(cPod, c, co.webhookCaBundlePath), {
    kind: "configMap",
    name: "dependency-webhook-ca",
    key: "ca.crt",
  });
  if (controller.spec.replicas > 1) {
    assert.equal(co.leaderElect, true, "replicas share the leader Lease");
  }
  assertProbes(c, co);
  assert.equal(containerPort(c, "metrics"), co.metricsBind?.port);
  assertHardened(cPod, c);

  // The webhook, its Service and its disruption budget.
  const webhook = find(objects, "Deployment", "dependency-webhook");
  const wPod = webhook.spec.template.spec;
  const [w] = wPod.containers;
  find(objects, "ServiceAccount", wPod.serviceAccountName);
  assert.deepEqual(w.command, [webhookBin]);
  const parsedWebhook = parseWebhookOptions(expandedArgs(objects, w), {
    env: () => undefined,
  });
  assert.equal(parsedWebhook.help, false);
  const wo = (parsedWebhook as { options: WebhookOptions }).options;
  assert.deepEqual(mountedFrom(wPod, w, wo.kubeconfig), {
    kind: "secret",
    name: "dependency-webhook-kubeconfig",
    key: "kubeconfig",
  });
  assert.equal(mountDir(wPod, w, wo.tlsCertDir), "dependency-webhook-tls");
  assertProbes(w, wo);
  assert.equal(containerPort(w, "metrics"), wo.metricsBind?.port);
  assertHardened(wPod, w);
  assert.equal(webhook.spec.strategy.rollingUpdate.maxUnavailable, 0);
  assert.equal(wo.skipProtectionMode, "annotation", "reference-compatible");
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

  const service = find(objects, "Service", "dependency-webhook");
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
  const pdb = find(objects, "PodDisruptionBudget", "dependency-webhook");
  assert.deepEqual(
    pdb.spec.selector.matchLabels,
    webhook.spec.selector.matchLabels,
  );
  assert.ok(pdb.spec.minAvailable >= 1);
  assert.ok(
    webhook.spec.replicas > pdb.spec.minAvailable,
    "a drain can proceed",
  );

  // The default webhook URL is the Service, on the port it serves.
  const url = new URL(co.webhookUrl);
  assert.equal(
    url.hostname,
    `${service.metadata.name}.${namespace.metadata.name}.svc`,
  );
  assert.equal(Number(url.port || 443), servicePort.port);
  assert.equal(url.pathname, "/validate");
});

Deno.test("the network policies admit only kcp's shards to the webhook and Prometheus to metrics", async () => {
  const objects = await kustomize(DEPLOY);
  // Pods that might connect; kcp's as the kcp-operator labels them.
  const kcp = (component: string) => ({
    "app.kubernetes.io/name": "kcp",
    "app.kubernetes.io/component": component,
  });
  const clients: Record<string, Client> = {
    rootshard: ["kcp", kcp("rootshard")],
    shard: ["kcp", kcp("shard")],
    frontProxy: ["kcp", kcp("front-proxy")],
    shardElsewhere: ["default", kcp("shard")],
    prometheus: ["monitoring", {}],
    neighbour: ["dependency-controller", {}],
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
    const policy = find(objects, "NetworkPolicy", name);
    const deployment = find(objects, "Deployment", name);
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
    const ports = (deployment.spec.template.spec.containers as Obj[])
      .flatMap((c) => c.ports as Obj[]);
    const admitted: Record<string, string[]> = {};
    for (const rule of policy.spec.ingress) {
      // loadAllYaml builds V1NetworkPolicyIngressRule, which calls `from` `_from`.
      const peers: Obj[] | undefined = rule._from;
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
