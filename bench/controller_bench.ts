/**
 * `deno task bench:controller`: time from creating a DependencyRule to the
 * first denied delete, on a local kcp with the controller and the webhook
 * running as their own processes (as in the e2e suite). Each run creates
 * the rule over HTTP, then polls a server-side dry-run DELETE of a VPC that
 * a VM refers to every 10 ms until kcp denies it; it also notes when the
 * webhook configuration first appeared. The rule is then deleted and the
 * run waits until deletes are allowed again. Prints every run and the
 * medians (default 5 runs, or the first argument).
 *
 * @module
 */
import {
  buildTopology,
  dependencyRule,
  grantWebhookReads,
  KcpRequestError,
  type KcpServer,
  startController,
  startKcp,
  startWebhook,
  waitFor,
} from "../testing/mod.ts";
import { median, runCount } from "./_stats.ts";

const runs = runCount(Deno.args, { program: "controller_bench", fallback: 5 });

const NETWORK = "root:providers:network";
const COMPUTE = "root:providers:compute";
const RULES =
  `/clusters/${COMPUTE}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`;
const VWC =
  `/clusters/${NETWORK}/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/dependency-controller`;

/** Whether a server-side dry-run delete of the VPC is denied. */
async function denied(kcp: KcpServer, consumer: string): Promise<boolean> {
  try {
    await kcp.request(
      "DELETE",
      `/clusters/${consumer}/apis/network.example.com/v1alpha1/namespaces/default/vpcs/vpc-bench?dryRun=All`,
      { timeoutMs: 15_000 },
    );
    return false;
  } catch (error) {
    if (error instanceof KcpRequestError && error.status === 409) return true;
    throw error;
  }
}

async function exists(kcp: KcpServer, path: string): Promise<boolean> {
  try {
    await kcp.request("GET", path);
    return true;
  } catch (error) {
    if (error instanceof KcpRequestError && error.status === 404) return false;
    throw error;
  }
}

const kcp = await startKcp();
try {
  const topo = await buildTopology(kcp);
  const consumer = topo.consumers[0]!.path;
  const webhook = await startWebhook(kcp);
  const controller = await startController(kcp, { webhook });
  try {
    for (
      const object of [
        {
          apiVersion: "network.example.com/v1alpha1",
          kind: "VPC",
          metadata: { name: "vpc-bench", namespace: "default" },
          spec: {},
        },
        {
          apiVersion: "compute.example.com/v1alpha1",
          kind: "VirtualMachine",
          metadata: { name: "vm-bench", namespace: "default" },
          spec: { vpcRef: { name: "vpc-bench" } },
        },
      ]
    ) {
      await kcp.kubectlOk(["apply", "-f", "-"], {
        workspace: consumer,
        stdin: JSON.stringify(object),
      });
    }
    const rule = dependencyRule("bench", {
      dependencies: [{
        path: NETWORK,
        resource: "vpcs",
        field: ".spec.vpcRef.name",
      }],
    });
    // The webhook's identity reads only the rules' types, as operators grant
    // them: grant once for the rule, then measure from its creation.
    await kcp.request("POST", RULES, { body: rule });
    await grantWebhookReads(kcp);
    await kcp.request("DELETE", `${RULES}/bench`);
    const toDenied: number[] = [];
    const toConfiguration: number[] = [];
    for (let i = 1; i <= runs; i++) {
      const started = performance.now();
      await kcp.request("POST", RULES, { body: rule });
      let configuredAt: number | undefined;
      await waitFor("the first denied delete", async () => {
        if (configuredAt === undefined && await exists(kcp, VWC)) {
          configuredAt = performance.now();
        }
        return (await denied(kcp, consumer)) || undefined;
      }, { timeoutMs: 60_000, intervalMs: 10 });
      const deniedAt = performance.now();
      configuredAt ??= deniedAt;
      toDenied.push(deniedAt - started);
      toConfiguration.push(configuredAt - started);
      console.log(
        `run ${i}: configuration after ${
          (configuredAt - started).toFixed(0)
        } ms, first denied delete after ${(deniedAt - started).toFixed(0)} ms`,
      );
      await kcp.request("DELETE", `${RULES}/bench`);
      await waitFor(
        "deletes to be allowed again",
        async () => !(await denied(kcp, consumer)) || undefined,
        { timeoutMs: 60_000, intervalMs: 50 },
      );
    }
    console.log(
      `rule created -> configuration in the provider: median ${
        median(toConfiguration).toFixed(0)
      } ms over ${runs} runs`,
    );
    console.log(
      `rule created -> first denied delete: median ${
        median(toDenied).toFixed(0)
      } ms over ${runs} runs (target <= 2000 ms)`,
    );
  } finally {
    await controller.stop();
    await webhook.stop();
  }
} finally {
  await kcp.stop();
}
