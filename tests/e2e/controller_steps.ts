/**
 * The whole system end to end on a real kcp: `controller.ts` and
 * `webhook.ts` run as separate processes with their own least-privilege
 * identities (RBAC from `manifests/` only); rules, VPCs, Subnets and VMs are
 * created with kubectl as users do. The network provider is nested three
 * levels deep (`root:org:team:network`).
 */
import assert from "node:assert/strict";
import {
  ANY_DENIAL,
  applyObjects,
  applySystemAdminOverlay,
  assertStatusTruth,
  buildTopology,
  type ComponentProcess,
  DEP_CTRL_EXPORT,
  dependencyRule,
  type KcpServer,
  networkProvider,
  type RuleDependency,
  startController,
  startWebhook,
  type Step,
  stopComponents,
  type Topology,
  VWC_CLAIM,
  waitFor,
  waitForDryRunDelete,
  type WebhookProcess,
} from "../../testing/mod.ts";
import { kcpVersionFromEnv } from "../../testing/kcp/binaries.ts";

const NETWORK = "root:org:team:network";
const COMPUTE = "root:providers:compute";
const VWC = "validatingwebhookconfigurations";

/** A rule whose dependencies default to the network or compute provider of this test. */
function rule(
  name: string,
  dependencies: (Omit<RuleDependency, "path"> & { path?: string })[],
  dependent: "VirtualMachine" | "VPC" = "VirtualMachine",
): unknown {
  return dependencyRule(name, {
    dependent,
    dependencies: dependencies.map((d) => ({
      ...d,
      path: d.path ?? (d.resource === "virtualmachines" ? COMPUTE : NETWORK),
    })),
  });
}

function object(
  kind: "VPC" | "Subnet" | "VirtualMachine",
  name: string,
  spec: Record<string, unknown> = {},
  annotations: Record<string, string> = {},
): unknown {
  const group = kind === "VirtualMachine"
    ? "compute.example.com"
    : "network.example.com";
  return {
    apiVersion: `${group}/v1alpha1`,
    kind,
    metadata: { name, namespace: "default", annotations },
    spec,
  };
}

function vm(name: string, refs: Record<string, string>): unknown {
  const spec: Record<string, unknown> = {};
  for (const [field, target] of Object.entries(refs)) {
    spec[field] = { name: target };
  }
  return object("VirtualMachine", name, spec);
}

async function remove(
  kcp: KcpServer,
  workspace: string,
  resource: string,
  name: string,
): Promise<void> {
  await kcp.kubectlOk(["delete", resource, name, "-n", "default"], {
    workspace,
  });
}

/** The webhook configuration we own in a workspace, if any. */
async function webhookConfiguration(
  kcp: KcpServer,
  workspace: string,
): Promise<Record<string, unknown> | undefined> {
  const r = await kcp.kubectl(
    ["get", VWC, "dependency-controller", "-o", "json"],
    { workspace },
  );
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get ${VWC} failed: ${r.stderr}`);
  }
  return JSON.parse(r.stdout);
}

/** The resources the configuration in `workspace` protects, in its order. */
function resourcesOf(config: Record<string, unknown> | undefined): string[] {
  const webhooks = (config?.webhooks ?? []) as {
    rules?: { resources?: string[] }[];
  }[];
  return webhooks.flatMap((w) =>
    (w.rules ?? []).flatMap((r) => r.resources ?? [])
  );
}

/** Waits until the configuration protects exactly `resources` (absent for none). */
async function waitForConfiguration(
  kcp: KcpServer,
  workspace: string,
  resources: string[],
): Promise<Record<string, unknown> | undefined> {
  return await waitFor(
    `the webhook configuration in ${workspace} to protect [${resources}]`,
    async () => {
      const config = await webhookConfiguration(kcp, workspace);
      if (resources.length === 0) return config === undefined || undefined;
      return JSON.stringify(resourcesOf(config)) === JSON.stringify(resources)
        ? config
        : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  ) as Record<string, unknown> | undefined;
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}

async function ruleObject(
  kcp: KcpServer,
  workspace: string,
  name: string,
): Promise<
  {
    metadata: { generation: number };
    status?: { observedGeneration?: number; conditions?: Condition[] };
  }
> {
  const r = await kcp.kubectlOk(
    ["get", "dependencyrules", name, "-o", "json"],
    { workspace },
  );
  return JSON.parse(r);
}

/** Waits until a rule's Ready condition has `status` and `reason` for its current generation. */
async function waitForReady(
  kcp: KcpServer,
  workspace: string,
  name: string,
  want: { status: "True" | "False"; reason: string },
): Promise<Condition> {
  return await waitFor(
    `rule ${name} to be Ready=${want.status} (${want.reason})`,
    async () => {
      const object = await ruleObject(kcp, workspace, name);
      const ready = object.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === want.status && ready.reason === want.reason &&
          object.status?.observedGeneration === object.metadata.generation
        ? ready
        : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  ) as Condition;
}

/** Deletes for real and returns kubectl's result. */
function deleteObject(
  kcp: KcpServer,
  workspace: string,
  resource: string,
  name: string,
) {
  return kcp.kubectl(["delete", resource, name, "-n", "default"], {
    workspace,
  });
}

/** `dependency_<name>_watches_failing` as the component's /metrics serves it. */
async function watchesFailing(
  process: ComponentProcess,
  name: "controller" | "webhook",
): Promise<number> {
  const { text } = await process.get(process.metricsPort, "/metrics");
  const match = new RegExp(`^dependency_${name}_watches_failing (\\d+)$`, "m")
    .exec(text);
  return Number(match?.[1] ?? NaN);
}

/**
 * The steps of "controller: webhook configurations follow the rules at any
 * depth, with status on every rule", under `root` (`root:org:team:network`,
 * `root:providers:compute`, `root:consumers:c1` and `c2`). One step
 * restarts kcp under the running components.
 */
export async function controllerSteps(
  kcp: KcpServer,
  step: Step,
): Promise<void> {
  let topo!: Topology;
  let webhook!: WebhookProcess;
  let controller: ComponentProcess | undefined;
  const others: ComponentProcess[] = [];
  let c1 = "";
  let c2 = "";
  let failed = true;

  try {
    await step(
      "topology, webhook and controller start from the manifests users apply",
      async () => {
        topo = await buildTopology(kcp, {
          networkPath: NETWORK,
          computePath: COMPUTE,
        });
        c1 = topo.consumers[0]!.path;
        c2 = topo.consumers[1]!.path;
        // The reads the rules below need, as an operator's overlay.
        await applySystemAdminOverlay(kcp, [
          {
            group: "compute.example.com",
            resources: ["virtualmachines"],
            verbs: ["get", "list"],
          },
          {
            group: "network.example.com",
            resources: ["subnets", "vpcs"],
            verbs: ["get", "list"],
          },
        ]);
        webhook = await startWebhook(kcp);
        controller = await startController(kcp, { webhook });
        assert.equal(
          (await controller.get(controller.healthPort, "/healthz")).status,
          200,
        );
      },
    );

    await step(
      "a rule installs the configuration in a provider three levels deep and reports Ready",
      async () => {
        await applyObjects(kcp, COMPUTE, [
          rule("vm-vpc", [{ resource: "vpcs", field: ".spec.vpcRef.name" }]),
        ]);
        const config = await waitForConfiguration(kcp, NETWORK, ["vpcs"]);
        const metadata = config!.metadata as {
          labels?: Record<string, string>;
        };
        assert.equal(
          metadata.labels?.["app.kubernetes.io/managed-by"],
          "dependency-controller",
        );
        const webhooks = config!.webhooks as Record<string, unknown>[];
        assert.equal(webhooks.length, 1);
        const hook = webhooks[0]!;
        assert.equal(
          hook.name,
          "dependency-controller.dependencies.opendefense.cloud",
        );
        assert.equal(hook.failurePolicy, "Fail");
        assert.equal(hook.sideEffects, "None");
        assert.deepEqual(hook.admissionReviewVersions, ["v1"]);
        assert.equal(hook.timeoutSeconds, 10);
        // The URL names the provider: only rules about its exports apply.
        assert.deepEqual(hook.clientConfig, {
          url: `${webhook.url}/${NETWORK}`,
          caBundle: btoa(webhook.cert.caPem),
        });
        assert.deepEqual(hook.rules, [{
          apiGroups: ["network.example.com"],
          apiVersions: ["v1alpha1"],
          resources: ["vpcs"],
          operations: ["DELETE"],
          scope: "*",
        }]);
        const ready = await waitForReady(kcp, COMPUTE, "vm-vpc", {
          status: "True",
          reason: "Enforced",
        });
        assert.match(ready.message, /vpcs\.network\.example\.com/);
        const installed = (await ruleObject(kcp, COMPUTE, "vm-vpc")).status
          ?.conditions?.find((c) => c.type === "WebhooksInstalled");
        assert.equal(installed?.status, "True");
        assert.match(installed!.message, /root:org:team:network/);
        const table = await kcp.kubectlOk(["get", "dependencyrules"], {
          workspace: COMPUTE,
        });
        assert.match(
          table,
          /NAME\s+DEPENDENT\s+TARGET\s+PATH\s+READY\s+REASON\s+AGE/,
        );
        assert.match(
          table,
          /vm-vpc\s+virtualmachines\s+vpcs\s+\.spec\.vpcRef\.name\s+True\s+Enforced/,
        );
      },
    );

    await step(
      "a VPC a VM refers to cannot be deleted; with two VMs removing one still blocks, removing both allows",
      async () => {
        await applyObjects(kcp, c1, [
          object("VPC", "vpc-a"),
          vm("vm-1", { vpcRef: "vpc-a" }),
          vm("vm-2", { vpcRef: "vpc-a" }),
        ]);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "vpcs",
          namespace: "default",
          name: "vpc-a",
        }, ANY_DENIAL);
        let r = await deleteObject(kcp, c1, "vpcs", "vpc-a");
        assert.notEqual(r.code, 0);
        assert.match(
          r.stderr,
          /still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\), VirtualMachine\/vm-2/,
        );
        await remove(kcp, c1, "virtualmachines", "vm-1");
        r = await deleteObject(kcp, c1, "vpcs", "vpc-a");
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-2/);
        assert.doesNotMatch(r.stderr, /vm-1/);
        await remove(kcp, c1, "virtualmachines", "vm-2");
        r = await deleteObject(kcp, c1, "vpcs", "vpc-a");
        assert.equal(r.code, 0, r.stderr);
      },
    );

    await step(
      "another consumer deletes its VPCs (no leakage); skip-protection lets a delete through",
      async () => {
        await applyObjects(kcp, c1, [
          object("VPC", "vpc-b"),
          vm("vm-b", { vpcRef: "vpc-b" }),
        ]);
        await applyObjects(kcp, c2, [object("VPC", "vpc-b")]);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "vpcs",
          namespace: "default",
          name: "vpc-b",
        }, ANY_DENIAL);
        const r = await deleteObject(kcp, c2, "vpcs", "vpc-b");
        assert.equal(r.code, 0, r.stderr);
        await kcp.kubectlOk([
          "annotate",
          "vpcs",
          "vpc-b",
          "-n",
          "default",
          "dependencies.opendefense.cloud/skip-protection=true",
        ], { workspace: c1 });
        const skipped = await deleteObject(kcp, c1, "vpcs", "vpc-b");
        assert.equal(skipped.code, 0, skipped.stderr);
      },
    );

    await step(
      "two rules on one provider merge into one configuration; deleting one keeps the other's protection",
      async () => {
        await applyObjects(kcp, COMPUTE, [rule("vm-subnet", [{
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForConfiguration(kcp, NETWORK, ["subnets", "vpcs"]);
        await applyObjects(kcp, c1, [
          object("VPC", "vpc-c"),
          object("Subnet", "subnet-c"),
          vm("vm-c", { vpcRef: "vpc-c", subnetRef: "subnet-c" }),
        ]);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "subnets",
          namespace: "default",
          name: "subnet-c",
        }, ANY_DENIAL);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "vpcs",
          namespace: "default",
          name: "vpc-c",
        }, ANY_DENIAL);
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-vpc"], {
          workspace: COMPUTE,
        });
        await waitForConfiguration(kcp, NETWORK, ["subnets"]);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "vpcs",
          namespace: "default",
          name: "vpc-c",
        }, undefined);
        const r = await deleteObject(kcp, c1, "subnets", "subnet-c");
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-c/);
      },
    );

    await step(
      "an in-place edit that removes a dependency removes it from the configuration",
      async () => {
        const before = await ruleObject(kcp, COMPUTE, "vm-subnet");
        await applyObjects(kcp, COMPUTE, [rule("vm-subnet", [{
          resource: "vpcs",
          field: ".spec.altVpcRef.name",
        }])]);
        await waitForConfiguration(kcp, NETWORK, ["vpcs"]);
        await waitForReady(kcp, COMPUTE, "vm-subnet", {
          status: "True",
          reason: "Enforced",
        });
        const after = await ruleObject(kcp, COMPUTE, "vm-subnet");
        assert.equal(
          after.status?.observedGeneration,
          before.metadata.generation + 1,
        );
        // The subnet is no longer protected, though vm-c still names it.
        const r = await deleteObject(kcp, c1, "subnets", "subnet-c");
        assert.equal(r.code, 0, r.stderr);
        // vm-c names vpc-c in vpcRef, which the rule no longer reads.
        await applyObjects(kcp, c1, [
          object("VPC", "vpc-d"),
          vm("vm-d", { altVpcRef: "vpc-d" }),
        ]);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "vpcs",
          namespace: "default",
          name: "vpc-d",
        }, ANY_DENIAL);
        const allowed = await deleteObject(kcp, c1, "vpcs", "vpc-c");
        assert.equal(allowed.code, 0, allowed.stderr);
      },
    );

    await step(
      "a rule deleted while the controller is stopped: the restarted controller removes its configuration",
      async () => {
        assert.equal(await controller!.stop(), 0);
        controller = undefined;
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-subnet"], {
          workspace: COMPUTE,
        });
        // Nobody removes it while the controller is down.
        assert.deepEqual(
          resourcesOf(await webhookConfiguration(kcp, NETWORK)),
          ["vpcs"],
        );
        controller = await startController(kcp, { webhook });
        await waitForConfiguration(kcp, NETWORK, []);
        const r = await deleteObject(kcp, c1, "vpcs", "vpc-d");
        assert.equal(r.code, 0, r.stderr);
      },
    );

    await step(
      "an unresolvable path, a self-dependency and a cycle are reported in status; other rules keep working",
      async () => {
        await applyObjects(kcp, COMPUTE, [
          rule("vm-vpc", [{ resource: "vpcs", field: ".spec.vpcRef.name" }]),
          rule("bad-path", [{
            path: "root:org:nope",
            resource: "vpcs",
            field: ".spec.altVpcRef.name",
          }]),
          rule("vm-self", [{
            resource: "virtualmachines",
            field: ".spec.parentRef.name",
          }]),
        ]);
        const unresolved = await waitForReady(kcp, COMPUTE, "bad-path", {
          status: "False",
          reason: "PathNotResolved",
        });
        assert.match(unresolved.message, /root:org:nope/);
        const self = await waitForReady(kcp, COMPUTE, "vm-self", {
          status: "False",
          reason: "SelfDependency",
        });
        assert.match(self.message, /virtualmachines\.compute\.example\.com/);
        await waitForReady(kcp, COMPUTE, "vm-vpc", {
          status: "True",
          reason: "Enforced",
        });
        // The self-dependency installs nothing in the compute provider.
        assert.equal(await webhookConfiguration(kcp, COMPUTE), undefined);
        await applyObjects(kcp, c1, [
          object("VPC", "vpc-e"),
          vm("vm-e", { vpcRef: "vpc-e" }),
        ]);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "vpcs",
          namespace: "default",
          name: "vpc-e",
        }, ANY_DENIAL);

        // A VPC that protects VMs closes a cycle VPC -> VM -> VPC.
        await applyObjects(kcp, NETWORK, [rule("vpc-vm", [{
          resource: "virtualmachines",
          field: ".spec.vpcRef.name",
        }], "VPC")]);
        for (
          const [workspace, name] of [[COMPUTE, "vm-vpc"], [
            NETWORK,
            "vpc-vm",
          ]] as const
        ) {
          const cycle = await waitForReady(kcp, workspace, name, {
            status: "False",
            reason: "DependencyCycle",
          });
          assert.match(cycle.message, /dependency cycle/);
          assert.match(cycle.message, /skip-protection/);
        }
        // Fail closed: the cycle's protections stay installed.
        await waitForConfiguration(kcp, COMPUTE, ["virtualmachines"]);
        const r = await deleteObject(kcp, c1, "vpcs", "vpc-e");
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-e/);

        for (
          const [workspace, name] of [[NETWORK, "vpc-vm"], [
            COMPUTE,
            "bad-path",
          ], [COMPUTE, "vm-self"]] as const
        ) {
          await kcp.kubectlOk(["delete", "dependencyrules", name], {
            workspace,
          });
        }
        await waitForReady(kcp, COMPUTE, "vm-vpc", {
          status: "True",
          reason: "Enforced",
        });
        await waitForConfiguration(kcp, COMPUTE, []);
      },
    );

    await step(
      "a provider workspace deleted and recreated under the same path gets the configuration again",
      async () => {
        const path = "root:org:team:edge";
        const first = await networkProvider(kcp, path);
        await applyObjects(kcp, COMPUTE, [rule("vm-edge", [{
          path,
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForConfiguration(kcp, path, ["subnets"]);
        await waitForReady(kcp, COMPUTE, "vm-edge", {
          status: "True",
          reason: "Enforced",
        });
        await kcp.kubectlOk(["delete", "workspace", "edge"], {
          workspace: "root:org:team",
        });
        await waitFor("workspace edge to be gone", async () => {
          const r = await kcp.kubectl(["get", "workspace", "edge"], {
            workspace: "root:org:team",
          });
          return r.code !== 0 || undefined;
        }, { timeoutMs: 90_000, intervalMs: 500 });
        // Gone: first its binding (ProviderNotBound), then the path itself.
        await waitFor("vm-edge to report its provider gone", async () => {
          const ready = (await ruleObject(kcp, COMPUTE, "vm-edge")).status
            ?.conditions?.find((c) => c.type === "Ready");
          return (ready?.status === "False" &&
            ["ProviderNotBound", "PathNotResolved"].includes(ready.reason)) ||
            undefined;
        }, { timeoutMs: 30_000, intervalMs: 200 });
        const second = await networkProvider(kcp, path);
        assert.notEqual(second.cluster, first.cluster);
        await waitForConfiguration(kcp, path, ["subnets"]);
        const ready = await waitForReady(kcp, COMPUTE, "vm-edge", {
          status: "True",
          reason: "Enforced",
        });
        assert.ok(ready);
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-edge"], {
          workspace: COMPUTE,
        });
        await waitForConfiguration(kcp, path, []);
      },
    );

    await step(
      "a provider that accepts the VWC claim for labelled objects only: kcp v0.31 takes such a binding and the rule says ClaimNotAccepted; kcp v0.28 refuses it",
      async () => {
        const path = "root:org:team:labelled";
        await networkProvider(kcp, path);
        const binding =
          `/clusters/${path}/apis/apis.kcp.io/v1alpha2/apibindings/${DEP_CTRL_EXPORT}`;
        const narrowed = await kcp.request("PATCH", binding, {
          body: {
            spec: {
              permissionClaims: [{
                ...VWC_CLAIM,
                selector: { matchLabels: { team: "a" } },
                state: "Accepted",
              }],
            },
          },
          contentType: "application/merge-patch+json",
        }).then(() => true, (error: unknown) => error);
        if (kcpVersionFromEnv() === "v0.28.1") {
          // v0.28's APIBinding validation: only matchAll is implemented.
          assert.match(String(narrowed), /matchAll/);
          return;
        }
        assert.equal(narrowed, true);
        await applyObjects(kcp, COMPUTE, [rule("vm-labelled", [{
          path,
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        const ready = await waitForReady(kcp, COMPUTE, "vm-labelled", {
          status: "False",
          reason: "ClaimNotAccepted",
        });
        assert.match(
          ready.message,
          /accepts its validatingwebhookconfigurations\.admissionregistration\.k8s\.io permission claim only for objects matching a label selector: accept it with selector matchAll: true/,
        );
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-labelled"], {
          workspace: COMPUTE,
        });
      },
    );

    await step(
      "a changed webhook URL reaches the existing configuration",
      async () => {
        assert.equal(await controller!.stop(), 0);
        const url = webhook.url.replace("127.0.0.1", "localhost");
        controller = await startController(kcp, {
          webhook: { url, cert: webhook.cert },
        });
        await waitFor("the configuration to carry the new URL", async () => {
          const config = await webhookConfiguration(kcp, NETWORK);
          const hooks = (config?.webhooks ?? []) as {
            clientConfig?: { url?: string };
          }[];
          return hooks[0]?.clientConfig?.url === `${url}/${NETWORK}` ||
            undefined;
        });
        const r = await deleteObject(kcp, c1, "vpcs", "vpc-e");
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-e/);
      },
    );

    await step(
      "two replicas with --leader-elect: one writes; stop it and the other takes over",
      async () => {
        assert.equal(await controller!.stop(), 0);
        controller = undefined;
        const replicas = await Promise.all(
          [0, 1].map(() =>
            startController(kcp, { webhook, args: ["--leader-elect"] })
          ),
        );
        others.push(...replicas);
        const leads = async (p: ComponentProcess) =>
          /"msg":"reconciling"/.test(await p.log());
        const leader = await waitFor("one replica to lead", async () => {
          const states = await Promise.all(replicas.map(leads));
          return states.filter(Boolean).length === 1
            ? replicas[states.indexOf(true)]
            : undefined;
        }) as ComponentProcess;
        const follower = replicas.find((p) => p !== leader)!;
        await applyObjects(kcp, COMPUTE, [rule("vm-subnet", [{
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForConfiguration(kcp, NETWORK, ["subnets", "vpcs"]);
        assert.equal(await leads(follower), false);
        assert.doesNotMatch(await follower.log(), /configuration written/);

        assert.equal(await leader.stop(), 0);
        await waitFor("the other replica to lead", () => leads(follower));
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-subnet"], {
          workspace: COMPUTE,
        });
        await waitForConfiguration(kcp, NETWORK, ["vpcs"]);
        // The log is copied from the process's stderr as it comes: the
        // line may land a moment after kcp shows the write.
        await waitFor(
          "the new leader to log its write",
          async () =>
            /configuration written/.test(await follower.log()) || undefined,
        );
        controller = follower;
      },
    );

    await step(
      "kcp restarts under the running controller and webhook; both reconnect and protection holds",
      async () => {
        await kcp.stop({ keepRootDir: true });
        // Both report their watches failing while kcp is away, for alerts.
        for (
          const [process, name] of [[controller!, "controller"], [
            webhook,
            "webhook",
          ]] as const
        ) {
          await waitFor(`${name} to report failing watches`, async () => {
            return (await watchesFailing(process, name)) > 0 || undefined;
          }, { timeoutMs: 60_000, intervalMs: 200 });
        }
        await kcp.start();
        for (
          const [process, name] of [[controller!, "controller"], [
            webhook,
            "webhook",
          ]] as const
        ) {
          await waitFor(
            `${name} to report its watches recovered`,
            async () => {
              return (await watchesFailing(process, name)) === 0 || undefined;
            },
            { timeoutMs: 60_000, intervalMs: 200 },
          );
        }
        await applyObjects(kcp, COMPUTE, [rule("vm-subnet", [{
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForConfiguration(kcp, NETWORK, ["subnets", "vpcs"]);
        await applyObjects(kcp, c1, [
          object("Subnet", "subnet-f"),
          vm("vm-f", { subnetRef: "subnet-f" }),
        ]);
        await waitForDryRunDelete(kcp, {
          workspace: c1,
          type: "subnets",
          namespace: "default",
          name: "subnet-f",
        }, ANY_DENIAL);
        const r = await deleteObject(kcp, c1, "vpcs", "vpc-e");
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-e/);
      },
    );

    await step(
      "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
      async () => {
        // vm-vpc and vm-subnet, after a kcp restart and a leader change.
        const truth = await assertStatusTruth(kcp, {
          workspaces: [
            topo.depCtrl.path,
            NETWORK,
            "root:org:team:edge",
            COMPUTE,
            c1,
            c2,
          ],
          minimum: { rules: 2 },
        });
        assert.deepEqual(truth.rulesProven.sort(), [
          `${COMPUTE}/vm-subnet`,
          `${COMPUTE}/vm-vpc`,
        ]);
      },
    );

    await step(
      "SIGTERM stops controller and webhook with exit code 0",
      async () => {
        assert.equal(await controller!.stop(), 0);
        assert.match(await controller!.log(), /"msg":"stopped"/);
        controller = undefined;
        assert.equal(await webhook.stop(), 0);
      },
    );
    failed = false;
  } finally {
    await stopComponents([controller, ...others], { showLogs: failed });
    if (failed && webhook !== undefined) {
      console.error(`--- webhook ---\n${(await webhook.log()).slice(-2000)}`);
      await webhook.stop();
    }
  }
}
