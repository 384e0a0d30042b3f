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
  assertDeleteAllowed,
  assertStatusTruth,
  buildTopology,
  type ComponentProcess,
  DEP_CTRL_EXPORT,
  type KcpServer,
  kubectlDelete,
  networkProvider,
  startController,
  startWebhook,
  type Step,
  subnetManifest,
  vmManifest,
  vpcManifest,
  VWC_CLAIM,
  waitFor,
  waitForDryRunDelete,
  waitForRuleEnforced,
} from "../../testing/mod.ts";
import {
  getDependencyRule,
  protectedResources,
  STATUS_POLL,
  waitForRuleNotReady,
  waitForWebhookConfiguration,
  watchesFailing,
  webhookConfiguration,
  withControllerWorld,
} from "../../testing/controller_world.ts";
import { kcpVersionFromEnv } from "../../testing/kcp/binaries.ts";

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
  await withControllerWorld(async (w) => {
    await step(
      "topology, webhook and controller start from the manifests users apply",
      async () => {
        w.topo = await buildTopology(kcp, {
          networkPath: w.network,
          computePath: w.compute,
        });
        w.c1 = w.topo.consumers[0]!.path;
        w.c2 = w.topo.consumers[1]!.path;
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
        w.webhook = await startWebhook(kcp);
        w.controller = await startController(kcp, { webhook: w.webhook });
        assert.equal(
          (await w.controller.get(w.controller.healthPort, "/healthz")).status,
          200,
        );
      },
    );

    await step(
      "a rule installs the configuration in a provider three levels deep and reports Ready",
      async () => {
        await applyObjects(kcp, w.compute, [
          w.rule("vm-vpc", [{ resource: "vpcs", field: ".spec.vpcRef.name" }]),
        ]);
        const config = await waitForWebhookConfiguration(kcp, w.network, [
          "vpcs",
        ]);
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
          url: `${w.webhook.url}/${w.network}`,
          caBundle: btoa(w.webhook.cert.caPem),
        });
        assert.deepEqual(hook.rules, [{
          apiGroups: ["network.example.com"],
          apiVersions: ["v1alpha1"],
          resources: ["vpcs"],
          operations: ["DELETE"],
          scope: "*",
        }]);
        const ready = await waitForRuleEnforced(kcp, {
          workspace: w.compute,
          name: "vm-vpc",
        }, STATUS_POLL);
        assert.match(ready.message, /vpcs\.network\.example\.com/);
        const installed = (await getDependencyRule(kcp, {
          workspace: w.compute,
          name: "vm-vpc",
        })).status
          ?.conditions?.find((c) => c.type === "WebhooksInstalled");
        assert.equal(installed?.status, "True");
        assert.match(installed!.message, /root:org:team:network/);
        const table = await kcp.kubectlOk(["get", "dependencyrules"], {
          workspace: w.compute,
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
        await applyObjects(kcp, w.c1, [
          vpcManifest("vpc-a"),
          vmManifest("vm-1", { vpc: "vpc-a" }),
          vmManifest("vm-2", { vpc: "vpc-a" }),
        ]);
        await waitForDryRunDelete(kcp, w.inC1("vpcs", "vpc-a"), ANY_DENIAL);
        let r = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-a"));
        assert.notEqual(r.code, 0);
        assert.match(
          r.stderr,
          /still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\), VirtualMachine\/vm-2/,
        );
        await assertDeleteAllowed(kcp, w.inC1("virtualmachines", "vm-1"));
        r = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-a"));
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-2/);
        assert.doesNotMatch(r.stderr, /vm-1/);
        await assertDeleteAllowed(kcp, w.inC1("virtualmachines", "vm-2"));
        r = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-a"));
        assert.equal(r.code, 0, r.stderr);
      },
    );

    await step(
      "another consumer deletes its VPCs (no leakage); skip-protection lets a delete through",
      async () => {
        await applyObjects(kcp, w.c1, [
          vpcManifest("vpc-b"),
          vmManifest("vm-b", { vpc: "vpc-b" }),
        ]);
        await applyObjects(kcp, w.c2, [vpcManifest("vpc-b")]);
        await waitForDryRunDelete(kcp, w.inC1("vpcs", "vpc-b"), ANY_DENIAL);
        const r = await kubectlDelete(kcp, w.inC2("vpcs", "vpc-b"));
        assert.equal(r.code, 0, r.stderr);
        await kcp.kubectlOk([
          "annotate",
          "vpcs",
          "vpc-b",
          "-n",
          "default",
          "dependencies.opendefense.cloud/skip-protection=true",
        ], { workspace: w.c1 });
        const skipped = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-b"));
        assert.equal(skipped.code, 0, skipped.stderr);
      },
    );

    await step(
      "two rules on one provider merge into one configuration; deleting one keeps the other's protection",
      async () => {
        await applyObjects(kcp, w.compute, [w.rule("vm-subnet", [{
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForWebhookConfiguration(kcp, w.network, ["subnets", "vpcs"]);
        await applyObjects(kcp, w.c1, [
          vpcManifest("vpc-c"),
          subnetManifest("subnet-c"),
          vmManifest("vm-c", {
            vpc: "vpc-c",
            spec: { subnetRef: { name: "subnet-c" } },
          }),
        ]);
        await waitForDryRunDelete(
          kcp,
          w.inC1("subnets", "subnet-c"),
          ANY_DENIAL,
        );
        await waitForDryRunDelete(kcp, w.inC1("vpcs", "vpc-c"), ANY_DENIAL);
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-vpc"], {
          workspace: w.compute,
        });
        await waitForWebhookConfiguration(kcp, w.network, ["subnets"]);
        await waitForDryRunDelete(kcp, w.inC1("vpcs", "vpc-c"), undefined);
        const r = await kubectlDelete(kcp, w.inC1("subnets", "subnet-c"));
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-c/);
      },
    );

    await step(
      "an in-place edit that removes a dependency removes it from the configuration",
      async () => {
        const before = await getDependencyRule(kcp, {
          workspace: w.compute,
          name: "vm-subnet",
        });
        await applyObjects(kcp, w.compute, [w.rule("vm-subnet", [{
          resource: "vpcs",
          field: ".spec.altVpcRef.name",
        }])]);
        await waitForWebhookConfiguration(kcp, w.network, ["vpcs"]);
        await waitForRuleEnforced(kcp, {
          workspace: w.compute,
          name: "vm-subnet",
        }, STATUS_POLL);
        const after = await getDependencyRule(kcp, {
          workspace: w.compute,
          name: "vm-subnet",
        });
        assert.equal(
          after.status?.observedGeneration,
          before.metadata.generation + 1,
        );
        // The subnet is no longer protected, though vm-c still names it.
        const r = await kubectlDelete(kcp, w.inC1("subnets", "subnet-c"));
        assert.equal(r.code, 0, r.stderr);
        // vm-c names vpc-c in vpcRef, which the rule no longer reads.
        await applyObjects(kcp, w.c1, [
          vpcManifest("vpc-d"),
          vmManifest("vm-d", { altVpc: "vpc-d" }),
        ]);
        await waitForDryRunDelete(kcp, w.inC1("vpcs", "vpc-d"), ANY_DENIAL);
        const allowed = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-c"));
        assert.equal(allowed.code, 0, allowed.stderr);
      },
    );

    await step(
      "a rule deleted while the controller is stopped: the restarted controller removes its configuration",
      async () => {
        assert.equal(await w.controller!.stop(), 0);
        w.controller = undefined;
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-subnet"], {
          workspace: w.compute,
        });
        // Nobody removes it while the controller is down.
        assert.deepEqual(
          protectedResources(await webhookConfiguration(kcp, w.network)),
          ["vpcs"],
        );
        w.controller = await startController(kcp, { webhook: w.webhook });
        await waitForWebhookConfiguration(kcp, w.network, []);
        const r = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-d"));
        assert.equal(r.code, 0, r.stderr);
      },
    );

    await step(
      "an unresolvable path, a self-dependency and a cycle are reported in status; other rules keep working",
      async () => {
        await applyObjects(kcp, w.compute, [
          w.rule("vm-vpc", [{ resource: "vpcs", field: ".spec.vpcRef.name" }]),
          w.rule("bad-path", [{
            path: "root:org:nope",
            resource: "vpcs",
            field: ".spec.altVpcRef.name",
          }]),
          w.rule("vm-self", [{
            resource: "virtualmachines",
            field: ".spec.parentRef.name",
          }]),
        ]);
        const unresolved = await waitForRuleNotReady(kcp, {
          workspace: w.compute,
          name: "bad-path",
        }, "PathNotResolved");
        assert.match(unresolved.message, /root:org:nope/);
        const self = await waitForRuleNotReady(kcp, {
          workspace: w.compute,
          name: "vm-self",
        }, "SelfDependency");
        assert.match(self.message, /virtualmachines\.compute\.example\.com/);
        await waitForRuleEnforced(
          kcp,
          { workspace: w.compute, name: "vm-vpc" },
          STATUS_POLL,
        );
        // The self-dependency installs nothing in the compute provider.
        assert.equal(await webhookConfiguration(kcp, w.compute), undefined);
        await applyObjects(kcp, w.c1, [
          vpcManifest("vpc-e"),
          vmManifest("vm-e", { vpc: "vpc-e" }),
        ]);
        await waitForDryRunDelete(kcp, w.inC1("vpcs", "vpc-e"), ANY_DENIAL);

        // A VPC that protects VMs closes a cycle VPC -> VM -> VPC.
        await applyObjects(kcp, w.network, [w.rule("vpc-vm", [{
          resource: "virtualmachines",
          field: ".spec.vpcRef.name",
        }], { dependent: "VPC" })]);
        for (
          const [workspace, name] of [[w.compute, "vm-vpc"], [
            w.network,
            "vpc-vm",
          ]] as const
        ) {
          const cycle = await waitForRuleNotReady(
            kcp,
            { workspace, name },
            "DependencyCycle",
          );
          assert.match(cycle.message, /dependency cycle/);
          assert.match(cycle.message, /skip-protection/);
        }
        // Fail closed: the cycle's protections stay installed.
        await waitForWebhookConfiguration(kcp, w.compute, ["virtualmachines"]);
        const r = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-e"));
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-e/);

        for (
          const [workspace, name] of [[w.network, "vpc-vm"], [
            w.compute,
            "bad-path",
          ], [w.compute, "vm-self"]] as const
        ) {
          await kcp.kubectlOk(["delete", "dependencyrules", name], {
            workspace,
          });
        }
        await waitForRuleEnforced(
          kcp,
          { workspace: w.compute, name: "vm-vpc" },
          STATUS_POLL,
        );
        await waitForWebhookConfiguration(kcp, w.compute, []);
      },
    );

    await step(
      "a provider workspace deleted and recreated under the same path gets the configuration again",
      async () => {
        const path = "root:org:team:edge";
        const first = await networkProvider(kcp, path);
        await applyObjects(kcp, w.compute, [w.rule("vm-edge", [{
          path,
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForWebhookConfiguration(kcp, path, ["subnets"]);
        await waitForRuleEnforced(kcp, {
          workspace: w.compute,
          name: "vm-edge",
        }, STATUS_POLL);
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
          const ready = (await getDependencyRule(kcp, {
            workspace: w.compute,
            name: "vm-edge",
          })).status
            ?.conditions?.find((c) => c.type === "Ready");
          return (ready?.status === "False" &&
            ["ProviderNotBound", "PathNotResolved"].includes(ready.reason)) ||
            undefined;
        }, { timeoutMs: 30_000, intervalMs: 200 });
        const second = await networkProvider(kcp, path);
        assert.notEqual(second.cluster, first.cluster);
        await waitForWebhookConfiguration(kcp, path, ["subnets"]);
        const ready = await waitForRuleEnforced(kcp, {
          workspace: w.compute,
          name: "vm-edge",
        }, STATUS_POLL);
        assert.ok(ready);
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-edge"], {
          workspace: w.compute,
        });
        await waitForWebhookConfiguration(kcp, path, []);
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
        await applyObjects(kcp, w.compute, [w.rule("vm-labelled", [{
          path,
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        const ready = await waitForRuleNotReady(kcp, {
          workspace: w.compute,
          name: "vm-labelled",
        }, "ClaimNotAccepted");
        assert.match(
          ready.message,
          /accepts its validatingwebhookconfigurations\.admissionregistration\.k8s\.io permission claim only for objects matching a label selector: accept it with selector matchAll: true/,
        );
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-labelled"], {
          workspace: w.compute,
        });
      },
    );

    await step(
      "a changed webhook URL reaches the existing configuration",
      async () => {
        assert.equal(await w.controller!.stop(), 0);
        const url = w.webhook.url.replace("127.0.0.1", "localhost");
        w.controller = await startController(kcp, {
          webhook: { url, cert: w.webhook.cert },
        });
        await waitFor("the configuration to carry the new URL", async () => {
          const config = await webhookConfiguration(kcp, w.network);
          const hooks = (config?.webhooks ?? []) as {
            clientConfig?: { url?: string };
          }[];
          return hooks[0]?.clientConfig?.url === `${url}/${w.network}` ||
            undefined;
        });
        const r = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-e"));
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /still referenced by VirtualMachine\/vm-e/);
      },
    );

    await step(
      "two replicas with --leader-elect: one writes; stop it and the other takes over",
      async () => {
        assert.equal(await w.controller!.stop(), 0);
        w.controller = undefined;
        const replicas = await Promise.all(
          [0, 1].map(() =>
            startController(kcp, {
              webhook: w.webhook,
              args: ["--leader-elect"],
            })
          ),
        );
        w.others.push(...replicas);
        const leads = async (p: ComponentProcess) =>
          /"msg":"reconciling"/.test(await p.log());
        const leader = await waitFor("one replica to lead", async () => {
          const states = await Promise.all(replicas.map(leads));
          return states.filter(Boolean).length === 1
            ? replicas[states.indexOf(true)]
            : undefined;
        }) as ComponentProcess;
        const follower = replicas.find((p) => p !== leader)!;
        await applyObjects(kcp, w.compute, [w.rule("vm-subnet", [{
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForWebhookConfiguration(kcp, w.network, ["subnets", "vpcs"]);
        assert.equal(await leads(follower), false);
        assert.doesNotMatch(await follower.log(), /configuration written/);

        assert.equal(await leader.stop(), 0);
        await waitFor("the other replica to lead", () => leads(follower));
        await kcp.kubectlOk(["delete", "dependencyrules", "vm-subnet"], {
          workspace: w.compute,
        });
        await waitForWebhookConfiguration(kcp, w.network, ["vpcs"]);
        // The log is copied from the process's stderr as it comes: the
        // line may land a moment after kcp shows the write.
        await waitFor(
          "the new leader to log its write",
          async () =>
            /configuration written/.test(await follower.log()) || undefined,
        );
        w.controller = follower;
      },
    );

    await step(
      "kcp restarts under the running controller and webhook; both reconnect and protection holds",
      async () => {
        await kcp.stop({ keepRootDir: true });
        // Both report their watches failing while kcp is away, for alerts.
        for (
          const [process, name] of [[w.controller!, "controller"], [
            w.webhook,
            "webhook",
          ]] as const
        ) {
          await waitFor(`${name} to report failing watches`, async () => {
            return (await watchesFailing(process, name)) > 0 || undefined;
          }, { timeoutMs: 60_000, intervalMs: 200 });
        }
        await kcp.start();
        for (
          const [process, name] of [[w.controller!, "controller"], [
            w.webhook,
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
        await applyObjects(kcp, w.compute, [w.rule("vm-subnet", [{
          resource: "subnets",
          field: ".spec.subnetRef.name",
        }])]);
        await waitForWebhookConfiguration(kcp, w.network, ["subnets", "vpcs"]);
        await applyObjects(kcp, w.c1, [
          subnetManifest("subnet-f"),
          vmManifest("vm-f", { spec: { subnetRef: { name: "subnet-f" } } }),
        ]);
        await waitForDryRunDelete(
          kcp,
          w.inC1("subnets", "subnet-f"),
          ANY_DENIAL,
        );
        const r = await kubectlDelete(kcp, w.inC1("vpcs", "vpc-e"));
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
            w.topo.depCtrl.path,
            w.network,
            "root:org:team:edge",
            w.compute,
            w.c1,
            w.c2,
          ],
          minimum: { rules: 2 },
        });
        assert.deepEqual(truth.rulesProven.sort(), [
          `${w.compute}/vm-subnet`,
          `${w.compute}/vm-vpc`,
        ]);
      },
    );

    await step(
      "SIGTERM stops controller and webhook with exit code 0",
      async () => {
        assert.equal(await w.controller!.stop(), 0);
        assert.match(await w.controller!.log(), /"msg":"stopped"/);
        w.controller = undefined;
        assert.equal(await w.webhook.stop(), 0);
      },
    );
  });
}
