/**
 * Stress test of the webhook's memory bound on dependent lists: the real
 * `webhook.ts` process, as the image runs it (a 128 MB old generation),
 * against a fake kcp whose consumer workspaces hold VirtualMachines of 27
 * KB each, streamed up to 10 000 to a page (270 MB: one such page killed
 * the webhook before lists were bounded). Eight DELETE reviews at once,
 * each in its own workspace so that all eight read kcp together:
 *
 * - five workspaces hold 10 000 usual VMs (strings and small objects),
 * - two hold 1 000 VMs made of empty objects (`[{},{},...]`, which parse
 *   into 20 times their bytes: counting bytes alone did not bound them),
 * - one holds 10 000 usual VMs and, second, one VM of 5 MiB.
 *
 * Each of the first seven must find the one VM that refers to the VPC, its
 * last (pages shrink until they fit the cap); the eighth must be denied
 * with a 503 naming the cap. Afterwards the process must still serve and
 * stop cleanly.
 */
import assert from "node:assert/strict";
import {
  delay,
  dependencyRule,
  endpointSlice,
  FakeApi,
  GiveUp,
  json,
  type SeenRequest,
  SLICE_PATH,
  streamed,
  waitFor,
} from "../../testing/fakes.ts";
import { createServingCert } from "../../testing/tls.ts";
import { freePorts } from "../../testing/kcp_server.ts";
import { WEBHOOK_RUN } from "../../testing/components.ts";
import { LOCKS_PATH } from "../locks/mod.ts";
import { RULES_PATH } from "../rules/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Most objects a page holds, whatever the limit asked for. */
const MAX_PAGE_OBJECTS = 10_000;
/** Bytes of one VirtualMachine's JSON, about. */
const DEPENDENT_BYTES = 27 * 1024;
/** The virtual workspace of the dep-ctrl export on the fake. */
const ENDPOINT = "/services/apiexport/root:dep-ctrl/dependencies";
const VPC_UID = "uid-vpc-a";

const encoder = new TextEncoder();

/** The JSON of a VM after its name: `"` ending the name, then the rest. */
type Tail = Uint8Array;

/**
 * The tail of a usual VirtualMachine: a spec with a list of small objects
 * and a long string, as `kubectl apply` leaves them, `bytes` long in all.
 */
function usualTail(vpc: string, bytes: number): Tail {
  const disks = Array.from(
    { length: 100 },
    (_, i) => ({ name: `disk-${i}`, sizeGi: 10 + i, bus: "virtio" }),
  );
  const head = `","namespace":"default"},"spec":{"vpcRef":{"name":"${vpc}"},` +
    `"disks":${JSON.stringify(disks)},"notes":"`;
  const filler = Math.max(0, bytes - head.length - 200);
  return encoder.encode(`${head}${"n".repeat(filler)}"}}`);
}

/** The tail of a VirtualMachine whose spec is a list of empty objects. */
function emptiesTail(vpc: string, bytes: number): Tail {
  const head = `","namespace":"default"},"spec":{"vpcRef":{"name":"${vpc}"},`;
  const empties = Array(Math.floor((bytes - head.length - 200) / 3))
    .fill("{}");
  return encoder.encode(`${head}"disks":[${empties.join(",")}]}}`);
}

/** A consumer workspace's VirtualMachines. */
interface Workspace {
  /** How many. */
  count: number;
  /** The tail of VM `index`. */
  tail: (index: number) => Tail;
}

const USUAL = usualTail("vpc-b", DEPENDENT_BYTES);
const USUAL_BLOCKER = usualTail("vpc-a", DEPENDENT_BYTES);
const EMPTIES = emptiesTail("vpc-b", DEPENDENT_BYTES);
const EMPTIES_BLOCKER = emptiesTail("vpc-a", DEPENDENT_BYTES);
const OVERSIZED = usualTail("vpc-b", 5 * 1024 * 1024);

/** The consumer workspaces, one review each; the last VM refers to `vpc-a`. */
const WORKSPACES: Record<string, Workspace> = {
  ...Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`consumer${n}`, {
    count: 10_000,
    tail: (i: number) => i === 9_999 ? USUAL_BLOCKER : USUAL,
  }])),
  ...Object.fromEntries([6, 7].map((n) => [`consumer${n}`, {
    count: 1_000,
    tail: (i: number) => i === 999 ? EMPTIES_BLOCKER : EMPTIES,
  }])),
  consumer8: {
    count: 10_000,
    tail: (i) => i === 1 ? OVERSIZED : i === 9_999 ? USUAL_BLOCKER : USUAL,
  },
};

/** The workspace with the VM over the cap. */
const OVERSIZED_WORKSPACE = "consumer8";

/**
 * One page of a workspace's VirtualMachines, streamed an object at a time
 * as the client reads (never built whole): `limit` of them (at most
 * {@linkcode MAX_PAGE_OBJECTS}) from the index the `continue` token names.
 */
function vmPage(request: SeenRequest, workspace: Workspace): Response {
  const token = request.url.searchParams.get("continue");
  const start = token === null ? 0 : Number(token);
  const limit = Number(request.url.searchParams.get("limit"));
  const end = Math.min(
    start + Math.min(limit, MAX_PAGE_OBJECTS),
    workspace.count,
  );
  const more = end < workspace.count ? `,"continue":"${end}"` : "";
  let next = start;
  let opened = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!opened) {
        opened = true;
        controller.enqueue(encoder.encode(
          `{"apiVersion":"compute.example.com/v1alpha1","kind":"VirtualMachineList",` +
            `"metadata":{"resourceVersion":"7"${more}},"items":[`,
        ));
        return;
      }
      if (next === end) {
        controller.enqueue(encoder.encode("]}"));
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode(
        `${
          next === start ? "" : ","
        }{"apiVersion":"compute.example.com/v1alpha1",` +
          `"kind":"VirtualMachine","metadata":{"name":"vm-${next}`,
      ));
      controller.enqueue(workspace.tail(next));
      next++;
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/json" },
  });
}

/**
 * The rule's provider workspace: its APIExport `compute.example.com`, which
 * serves `virtualmachines` (the webhook enforces only rules whose own
 * workspace exports their dependent type), and that type's schema.
 */
const PROVIDER_READS: Record<string, unknown> = {
  "/clusters/provider1/apis/apis.kcp.io/v1alpha2/apiexports/compute.example.com":
    {
      spec: {
        resources: [{
          group: "compute.example.com",
          name: "virtualmachines",
          schema: "v1.virtualmachines.compute.example.com",
        }],
      },
    },
  "/clusters/provider1/apis/apis.kcp.io/v1alpha1/apiresourceschemas/v1.virtualmachines.compute.example.com":
    {
      spec: {
        names: { kind: "VirtualMachine" },
        versions: [{
          name: "v1alpha1",
          served: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              "x-kubernetes-preserve-unknown-fields": true,
            },
          },
        }],
      },
    },
};

/**
 * The fake kcp: the export's slice, one rule and its provider's export, no
 * Locks, and the consumers.
 */
function fakeKcp(api: FakeApi): (request: SeenRequest) => Response {
  return (request) => {
    const path = request.url.pathname;
    const watch = request.url.searchParams.get("watch") === "true";
    if (watch) return streamed(api.stream());
    if (path === SLICE_PATH) {
      return json({
        metadata: { resourceVersion: "1" },
        items: [endpointSlice(api.url, [ENDPOINT])],
      });
    }
    if (path === `${ENDPOINT}/clusters/*${RULES_PATH}`) {
      const rule = dependencyRule("vm-needs-vpc", {
        dependencies: [{
          path: "root:providers:network",
          resource: "vpcs",
          field: ".spec.vpcRef.name",
        }],
      });
      return json({
        metadata: { resourceVersion: "1" },
        items: [{
          ...rule,
          metadata: {
            name: "vm-needs-vpc",
            uid: "uid-rule",
            resourceVersion: "1",
            generation: 1,
            annotations: { "kcp.io/cluster": "provider1" },
          },
        }],
      });
    }
    if (PROVIDER_READS[path] !== undefined) return json(PROVIDER_READS[path]);
    if (path === `${ENDPOINT}/clusters/*${LOCKS_PATH}`) {
      return json({ metadata: { resourceVersion: "1" }, items: [] });
    }
    const consumer = path.match(/^\/clusters\/(consumer\d+)\/(.*)$/);
    const workspace = WORKSPACES[consumer?.[1] ?? ""];
    if (consumer !== null && workspace !== undefined) {
      const rest = consumer[2];
      if (
        rest ===
          "apis/compute.example.com/v1alpha1/namespaces/default/virtualmachines"
      ) return vmPage(request, workspace);
      if (
        rest ===
          "apis/network.example.com/v1alpha1/namespaces/default/vpcs/vpc-a"
      ) return json({ metadata: { name: "vpc-a", uid: VPC_UID } });
      if (rest === "apis/core.kcp.io/v1alpha1/logicalclusters/cluster") {
        return json({ metadata: { name: "cluster" } });
      }
    }
    return json({ kind: "Status", code: 404, reason: "NotFound" }, 404);
  };
}

/** The DELETE review of `vpc-a` in namespace `default` of `cluster`. */
function deleteReview(cluster: string): string {
  const vpcs = {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
  };
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: `review-${cluster}`,
      kind: { group: vpcs.group, version: vpcs.version, kind: "VPC" },
      resource: vpcs,
      name: "vpc-a",
      namespace: "default",
      operation: "DELETE",
      userInfo: { username: "alice", groups: ["system:authenticated"] },
      oldObject: {
        apiVersion: "network.example.com/v1alpha1",
        kind: "VPC",
        metadata: {
          name: "vpc-a",
          namespace: "default",
          uid: VPC_UID,
          annotations: { "kcp.io/cluster": cluster },
        },
      },
      dryRun: false,
    },
  });
}

/** A kubeconfig for the fake's dep-ctrl workspace, in `dir`. */
async function kubeconfig(dir: string, server: string): Promise<string> {
  const path = `${dir}/kubeconfig`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return path;
}

interface ReviewAnswer {
  allowed: boolean;
  status?: { code: number; message: string };
}

Deno.test({
  name:
    "webhook.ts with a 128 MB heap answers 8 concurrent reviews over up to 10 000 dependents of 27 KB each and stays up",
  async fn() {
    const dir = await Deno.makeTempDir();
    const api = new FakeApi(() => json({}));
    api.handler = fakeKcp(api);
    const cert = await createServingCert(`${dir}/tls`);
    const [port, health] = freePorts(2) as [number, number];
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...WEBHOOK_RUN.flags,
        `${ROOT}webhook.ts`,
        `--kubeconfig=${await kubeconfig(
          dir,
          `${api.url}/clusters/root:dep-ctrl`,
        )}`,
        "--allow-insecure-http",
        `--tls-cert-dir=${cert.dir}`,
        `--webhook-bind-address=127.0.0.1:${port}`,
        `--health-probe-bind-address=127.0.0.1:${health}`,
        "--metrics-bind-address=0",
        // Every review reads kcp at once: only the list byte budget bounds
        // the lists' memory. The deadline is the machine's, not kcp's, so
        // that a slow machine still gets the verdicts.
        `--max-concurrent-reviews=${Object.keys(WORKSPACES).length}`,
        "--list-timeout=120s",
        "--review-queue-timeout=60s",
      ],
      cwd: ROOT,
      env: { ...WEBHOOK_RUN.env, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const output = Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
    ]).then((texts) => texts.join("\n"));
    const webhook: { exited?: Deno.CommandStatus } = {};
    const status = child.status.then((s) => webhook.exited = s);
    /** What the process printed last, once it has exited. */
    const last = async () =>
      webhook.exited === undefined
        ? "(still running)"
        : `exited with ${webhook.exited.code}: ${(await output).slice(-3000)}`;
    const client = Deno.createHttpClient({ caCerts: [cert.caPem] });
    try {
      await waitFor("the webhook to be ready", async () => {
        if (webhook.exited !== undefined) throw new GiveUp(await last());
        const r = await fetch(`http://127.0.0.1:${health}/readyz`)
          .catch(() => undefined);
        await r?.body?.cancel();
        return r?.status === 200 || undefined;
      }, { timeoutMs: 60_000, intervalMs: 100 });

      const answers = await Promise.all(
        Object.keys(WORKSPACES).map(async (cluster) => {
          const response = await fetch(`https://127.0.0.1:${port}/validate`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: deleteReview(cluster),
            client,
          }).catch(async (error) => {
            // Let the exit, if that is why, be seen.
            await Promise.race([status, delay(1000)]);
            throw new Error(
              `the review in ${cluster} got no answer (${error}); the webhook ${await last()}`,
            );
          });
          assert.equal(response.status, 200, cluster);
          const review = await response.json() as { response: ReviewAnswer };
          return { cluster, answer: review.response };
        }),
      );
      for (const { cluster, answer } of answers) {
        assert.equal(answer.allowed, false, cluster);
        if (cluster === OVERSIZED_WORKSPACE) {
          assert.equal(answer.status?.code, 503, cluster);
          assert.match(
            answer.status?.message ?? "",
            /listing virtualmachines\.compute\.example\.com failed: a page of 1 object would take over 8 MiB of memory, as did pages of 500, 50 and 5: /,
          );
        } else {
          assert.equal(
            answer.status?.code,
            409,
            `${cluster}: ${answer.status?.message}`,
          );
          assert.match(
            answer.status?.message ?? "",
            new RegExp(
              `still referenced by VirtualMachine/vm-${
                WORKSPACES[cluster]!.count - 1
              } \\(\\.spec\\.vpcRef\\.name\\)$`,
            ),
          );
        }
      }
      // Pages shrank until they fit: usual VMs 50 to a page, empty
      // objects 5, and the 5 MiB VM alone did not fit.
      const limits = (cluster: string) => [
        ...new Set(
          api.requests
            .filter((r) => r.url.pathname.startsWith(`/clusters/${cluster}/`))
            .filter((r) => r.url.pathname.endsWith("/virtualmachines"))
            .map((r) => r.url.searchParams.get("limit")),
        ),
      ];
      for (const cluster of Object.keys(WORKSPACES)) {
        assert.deepEqual(
          limits(cluster),
          cluster === OVERSIZED_WORKSPACE
            ? ["500", "50", "5", "1"]
            : WORKSPACES[cluster]!.count === 1_000
            ? ["500", "50", "5"]
            : ["500", "50"],
          cluster,
        );
      }

      assert.equal(webhook.exited, undefined, await last());
      const healthz = await fetch(`http://127.0.0.1:${health}/healthz`);
      await healthz.body?.cancel();
      assert.equal(healthz.status, 200);
    } finally {
      client.close();
      if (webhook.exited === undefined) child.kill("SIGTERM");
      await status;
      await api.close();
      await Deno.remove(dir, { recursive: true });
    }
    assert.equal((await status).code, 0, await last());
  },
});
