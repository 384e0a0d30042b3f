/**
 * The webhook end to end on a real kcp: `webhook.ts` runs as its own
 * process with its own least-privilege identity (RBAC from `manifests/`
 * only), the test installs the ValidatingWebhookConfiguration in the
 * network provider, and users act with kubectl.
 */
import assert from "node:assert/strict";
import {
  ANY_DENIAL,
  applyObjects,
  assertStatusTruth,
  buildTopology,
  grantWebhookReads,
  installWebhookConfig,
  KcpRequestError,
  type KcpServer,
  MANIFESTS,
  objectExists,
  startWebhook,
  type Step,
  validRules,
  vmManifest,
  vpcManifest,
  waitFor,
  waitForDryRunDelete,
  type WorldPaths,
} from "../../testing/mod.ts";
import {
  clusterRole,
  deleteReviewOf,
  postReview,
  reviewsAnswered,
  userRoleBinding,
  VM_VPC_RULE_FILE,
  VPC_CIDR,
  WebhookWorld,
} from "../../testing/webhook_world.ts";

/**
 * The steps of "webhook: protects referenced objects across workspaces,
 * following rules live", in the world under `paths`, with no controller.
 * Before any other rule on its kcp: it counts the rules the webhook holds
 * from none (the webhook loads every rule there is). One step restarts kcp.
 */
export async function webhookSteps(
  kcp: KcpServer,
  step: Step,
  paths: WorldPaths,
): Promise<void> {
  const w = new WebhookWorld();

  await step(
    "the topology is built from the manifests users apply",
    async () => {
      w.topo = await buildTopology(kcp, {
        networkPath: paths.network,
        computePath: paths.compute,
        consumerPaths: [paths.consumer("c1"), paths.consumer("c2")],
      });
      w.c1 = w.topo.consumers[0]!.path;
      w.c2 = w.topo.consumers[1]!.path;
      assert.equal(w.topo.endpointUrls.length, 1);
    },
  );

  await step(
    "the webhook starts as its own identity and is ready with no rules",
    async () => {
      w.webhook = await startWebhook(kcp);
      assert.equal(
        (await w.webhook.get(w.webhook.healthPort, "/healthz")).status,
        200,
      );
      assert.equal(await validRules(w.webhook), 0);
    },
  );

  await step(
    "a rule created after start is loaded without a restart",
    async () => {
      await kcp.kubectlOk(["apply", "-f", VM_VPC_RULE_FILE], {
        workspace: w.topo.compute.path,
      });
      await waitFor(
        "the webhook to load the rule",
        async () => (await validRules(w.webhook)) === 1 || undefined,
      );
      await installWebhookConfig(kcp, w.topo.network.path, {
        url: w.webhook.url,
        caPem: w.webhook.cert.caPem,
        resources: [{
          group: "network.example.com",
          version: "v1alpha1",
          resource: "vpcs",
        }],
      });
      await applyObjects(kcp, w.c1, [
        vpcManifest("vpc-a", { cidr: VPC_CIDR }),
        vpcManifest("vpc-b", { cidr: VPC_CIDR }),
        vmManifest("vm-1", { vpc: "vpc-a" }),
      ]);
      await waitForDryRunDelete(kcp, w.inC1("vpc", "vpc-a"), ANY_DENIAL);
    },
  );

  await step(
    "until the webhook may read the rule's types, the delete is denied naming the missing permission",
    async () => {
      const r = await kcp.kubectl(
        ["delete", "vpc", "vpc-a", "-n", "default"],
        { workspace: w.c1 },
      );
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /the webhook's identity may not (get vpcs\.network\.example\.com|list virtualmachines\.compute\.example\.com) in this workspace \(403 Forbidden\): grant/,
      );
      assert.match(r.stderr, /system:admin of every shard/);
      assert.ok(await objectExists(kcp, w.inC1("vpc", "vpc-a")));
      const { text } = await w.webhook.get(w.webhook.metricsPort, "/metrics");
      assert.match(
        text,
        /^dependency_webhook_forbidden_total\{verb="(get|list)",group="(network|compute)\.example\.com",resource="(vpcs|virtualmachines)"\} [1-9]/m,
      );
    },
  );

  await step(
    "controller grants grants exactly the rule's types, and protection names the VM",
    async () => {
      const role = await grantWebhookReads(kcp);
      assert.match(role, /kind: ClusterRole/);
      assert.match(role, /- virtualmachines\n\s+verbs:\n\s+- get\n\s+- list/);
      assert.match(role, /- vpcs\n\s+verbs:\n\s+- get\n/);
      assert.doesNotMatch(role, /'\*'|"\*"|- \*/);
      await waitFor("the webhook to name the VM", async () => {
        const r = await kcp.kubectl([
          "delete",
          "vpc",
          "vpc-a",
          "-n",
          "default",
          "--dry-run=server",
        ], { workspace: w.c1 });
        return /still referenced by VirtualMachine\/vm-1/.test(r.stderr) ||
          undefined;
      }, { timeoutMs: 30_000, intervalMs: 200 });
    },
  );

  await step(
    "the webhook's identity can read no Secret or ConfigMap in a consumer workspace",
    async () => {
      const cluster = w.topo.consumers[0]!.cluster;
      for (const resource of ["secrets", "configmaps"]) {
        const error = await kcp.request(
          "GET",
          `/clusters/${cluster}/api/v1/namespaces/default/${resource}`,
          { identity: "webhook" },
        ).then(() => undefined, (e: unknown) => e);
        assert.ok(error instanceof KcpRequestError, resource);
        assert.equal(error.status, 403, resource);
      }
    },
  );

  await step(
    "deleting a referenced VPC is denied, naming the VM",
    async () => {
      const r = await kcp.kubectl(
        ["delete", "vpc", "vpc-a", "-n", "default"],
        { workspace: w.c1 },
      );
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\)/,
      );
      assert.match(r.stderr, /cannot delete vpcs\/vpc-a/);
      assert.ok(await objectExists(kcp, w.inC1("vpc", "vpc-a")));
    },
  );

  await step(
    "a review copied from a real one names blockers; with the uid changed, or for another workspace, it learns nothing",
    async () => {
      const live = JSON.parse(
        await kcp.kubectlOk([
          "get",
          "vpc",
          "vpc-a",
          "-n",
          "default",
          "-o",
          "json",
        ], {
          workspace: w.c1,
        }),
      );
      const genuine = await postReview(w.webhook, deleteReviewOf(live));
      assert.equal(genuine.allowed, false);
      assert.match(genuine.status?.message ?? "", /VirtualMachine\/vm-1/);

      const forged = structuredClone(live);
      forged.metadata.uid = crypto.randomUUID();
      const changed = await postReview(w.webhook, deleteReviewOf(forged));
      assert.equal(changed.allowed, false);
      assert.equal(changed.status?.code, 409);
      assert.doesNotMatch(changed.status?.message ?? "", /vm-1|vpc-a/);

      // The same object claimed in c2, where nobody named vpc-a exists.
      const elsewhere = structuredClone(forged);
      elsewhere.metadata.annotations["kcp.io/cluster"] =
        w.topo.consumers[1]!.cluster;
      const other = await postReview(w.webhook, deleteReviewOf(elsewhere));
      assert.equal(other.allowed, false);
      assert.deepEqual(other.status, changed.status);
    },
  );

  await step(
    "a server-side dry run reports the blocker and deletes nothing",
    async () => {
      const denied = await kcp.kubectl([
        "delete",
        "vpc",
        "vpc-a",
        "-n",
        "default",
        "--dry-run=server",
      ], {
        workspace: w.c1,
      });
      assert.notEqual(denied.code, 0);
      assert.match(denied.stderr, /still referenced by VirtualMachine\/vm-1/);
      const allowed = await kcp.kubectlOk([
        "delete",
        "vpc",
        "vpc-b",
        "-n",
        "default",
        "--dry-run=server",
      ], {
        workspace: w.c1,
      });
      assert.match(allowed, /"vpc-b" deleted.*\(server dry run\)/);
      assert.ok(await objectExists(kcp, w.inC1("vpc", "vpc-a")));
      assert.ok(await objectExists(kcp, w.inC1("vpc", "vpc-b")));
    },
  );

  await step(
    "kubectl delete vpcs --all is denied while a VM refers to one of them",
    async () => {
      const r = await kcp.kubectl([
        "delete",
        "vpcs",
        "--all",
        "-n",
        "default",
      ], { workspace: w.c1 });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /still referenced by VirtualMachine\/vm-1/);
      assert.ok(await objectExists(kcp, w.inC1("vpc", "vpc-a")));
    },
  );

  await step(
    "with two VMs, removing one still blocks; removing both allows",
    async () => {
      await applyObjects(kcp, w.c1, [vmManifest("vm-2", { vpc: "vpc-a" })]);
      let r = await kcp.kubectl(["delete", "vpc", "vpc-a", "-n", "default"], {
        workspace: w.c1,
      });
      assert.match(
        r.stderr,
        /still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\), VirtualMachine\/vm-2/,
      );
      await kcp.kubectlOk([
        "delete",
        "virtualmachine",
        "vm-1",
        "-n",
        "default",
      ], {
        workspace: w.c1,
      });
      r = await kcp.kubectl(["delete", "vpc", "vpc-a", "-n", "default"], {
        workspace: w.c1,
      });
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /still referenced by VirtualMachine\/vm-2 \(\.spec\.vpcRef\.name\)$/m,
      );
      assert.doesNotMatch(r.stderr, /vm-1/);
      await kcp.kubectlOk([
        "delete",
        "virtualmachine",
        "vm-2",
        "-n",
        "default",
      ], {
        workspace: w.c1,
      });
      await kcp.kubectlOk(["delete", "vpc", "vpc-a", "-n", "default"], {
        workspace: w.c1,
      });
      assert.ok(!(await objectExists(kcp, w.inC1("vpc", "vpc-a"))));
    },
  );

  await step(
    "another consumer's objects of the same names are unaffected",
    async () => {
      await applyObjects(kcp, w.c1, [
        vpcManifest("vpc-x", { cidr: VPC_CIDR }),
        vmManifest("vm-3", { vpc: "vpc-x" }),
      ]);
      await applyObjects(kcp, w.c2, [vpcManifest("vpc-x", { cidr: VPC_CIDR })]);
      await kcp.kubectlOk(["delete", "vpc", "vpc-x", "-n", "default"], {
        workspace: w.c2,
      });
      const r = await kcp.kubectl(
        ["delete", "vpc", "vpc-x", "-n", "default"],
        { workspace: w.c1 },
      );
      assert.match(r.stderr, /still referenced by VirtualMachine\/vm-3/);
    },
  );

  await step(
    'skip-protection "true" lets a delete through while a VM still refers',
    async () => {
      await kcp.kubectlOk([
        "annotate",
        "vpc",
        "vpc-x",
        "-n",
        "default",
        "dependencies.opendefense.cloud/skip-protection=true",
      ], { workspace: w.c1 });
      await kcp.kubectlOk(["delete", "vpc", "vpc-x", "-n", "default"], {
        workspace: w.c1,
      });
      assert.ok(await objectExists(kcp, w.inC1("virtualmachine", "vm-3")));
      const audit = (await w.webhook.log()).split("\n")
        .filter((line) => line.includes("skip-protection annotation"))
        .map((line) => JSON.parse(line));
      assert.equal(audit.length, 1);
      assert.equal(audit[0].level, "info");
      assert.equal(audit[0].user, "admin");
      assert.equal(audit[0].workspace, w.topo.consumers[0]!.cluster);
      assert.equal(audit[0].resource, "vpcs.network.example.com");
      assert.equal(audit[0].name, "vpc-x");
    },
  );

  await step(
    "a tenant breaks glass with the annotation alone by default, and in authorized mode only with 'bypass'",
    async () => {
      // A tenant who may edit and delete VPCs and VMs in c1, nothing more.
      await applyObjects(kcp, w.c1, [
        clusterRole("tenant", [
          { nonResourceURLs: ["/"], verbs: ["access"] },
          {
            apiGroups: ["network.example.com", "compute.example.com"],
            resources: ["vpcs", "virtualmachines"],
            verbs: ["get", "list", "create", "update", "patch", "delete"],
          },
        ]),
        userRoleBinding("tenant", "user-1"),
        vpcManifest("vpc-t1", { cidr: VPC_CIDR }),
        vmManifest("vm-t1", { vpc: "vpc-t1" }),
        vpcManifest("vpc-t2", { cidr: VPC_CIDR }),
        vmManifest("vm-t2", { vpc: "vpc-t2" }),
      ]);
      const asTenant = (args: string[]) =>
        kcp.kubectl(args, { workspace: w.c1, identity: "user" });
      const annotate = (name: string) =>
        asTenant([
          "annotate",
          "vpc",
          name,
          "-n",
          "default",
          "dependencies.opendefense.cloud/skip-protection=true",
        ]);
      await waitFor("the tenant's role to take effect", async () => {
        return (await annotate("vpc-t1")).code === 0 || undefined;
      });
      const deleted = await asTenant([
        "delete",
        "vpc",
        "vpc-t1",
        "-n",
        "default",
      ]);
      assert.equal(deleted.code, 0, deleted.stderr);

      // Authorized mode: the same annotation needs "bypass" on protections.
      await kcp.kubectlOk(
        ["apply", "-k", `${MANIFESTS}kcp/system-admin/break-glass`],
        { workspace: "system:admin", identity: "shardAdmin" },
      );
      const strict = await startWebhook(kcp, {
        cert: w.webhook.cert,
        args: ["--skip-protection-mode=authorized"],
      });
      try {
        await installWebhookConfig(kcp, w.topo.network.path, {
          url: strict.url,
          caPem: strict.cert.caPem,
          resources: [{
            group: "network.example.com",
            version: "v1alpha1",
            resource: "vpcs",
          }],
        });
        assert.equal((await annotate("vpc-t2")).code, 0);
        let denial = "";
        await waitFor("the authorized webhook to answer", async () => {
          const r = await asTenant([
            "delete",
            "vpc",
            "vpc-t2",
            "-n",
            "default",
            "--dry-run=server",
          ]);
          denial = r.stderr;
          return /only for users allowed "bypass"/.test(r.stderr) ||
            undefined;
        }, { timeoutMs: 30_000, intervalMs: 200 });
        assert.match(
          denial,
          /allowed "bypass" on protections\.dependencies\.opendefense\.cloud in this workspace, and "user-1" is not/,
        );
        assert.ok(await objectExists(kcp, w.inC1("vpc", "vpc-t2")));

        await applyObjects(kcp, w.c1, [
          clusterRole("break-glass", [{
            apiGroups: ["dependencies.opendefense.cloud"],
            resources: ["protections"],
            verbs: ["bypass"],
          }]),
          userRoleBinding("break-glass", "user-1"),
        ]);
        await waitFor(
          "the tenant's bypass grant to let the delete through",
          async () => {
            const r = await asTenant([
              "delete",
              "vpc",
              "vpc-t2",
              "-n",
              "default",
            ]);
            return r.code === 0 || undefined;
          },
          { timeoutMs: 30_000, intervalMs: 200 },
        );
        assert.ok(!(await objectExists(kcp, w.inC1("vpc", "vpc-t2"))));
        assert.ok(await objectExists(kcp, w.inC1("virtualmachine", "vm-t2")));
        const audit = (await strict.log()).split("\n")
          .filter((line) => line.includes("skip-protection annotation"))
          .map((line) => JSON.parse(line));
        // One line per delete let through (a retry of the loop above may
        // add one whose delete then found the object gone).
        assert.ok(audit.length >= 1);
        for (const line of audit) {
          assert.equal(line.user, "user-1");
          assert.equal(line.name, "vpc-t2");
          assert.equal(line.workspace, w.topo.consumers[0]!.cluster);
        }
      } finally {
        // Back to the first webhook: wait until kcp calls it again.
        await installWebhookConfig(kcp, w.topo.network.path, {
          url: w.webhook.url,
          caPem: w.webhook.cert.caPem,
          resources: [{
            group: "network.example.com",
            version: "v1alpha1",
            resource: "vpcs",
          }],
        });
        await applyObjects(kcp, w.c2, [
          vpcManifest("vpc-probe", { cidr: VPC_CIDR }),
        ]);
        const before = await reviewsAnswered(w.webhook);
        await waitFor("kcp to call the first webhook again", async () => {
          await kcp.kubectl([
            "delete",
            "vpc",
            "vpc-probe",
            "-n",
            "default",
            "--dry-run=server",
          ], { workspace: w.c2 });
          return (await reviewsAnswered(w.webhook)) > before || undefined;
        }, { timeoutMs: 30_000, intervalMs: 200 });
        await strict.stop();
      }
    },
  );

  await step(
    "an in-place edit of the rule's field path is followed without a restart",
    async () => {
      await applyObjects(kcp, w.c1, [
        vpcManifest("vpc-y", { cidr: VPC_CIDR }),
        vpcManifest("vpc-z", { cidr: VPC_CIDR }),
        vmManifest("vm-4", { vpc: "vpc-y" }),
        vmManifest("vm-5", { altVpc: "vpc-z" }),
      ]);
      await waitForDryRunDelete(kcp, w.inC1("vpc", "vpc-y"), ANY_DENIAL);
      await kcp.kubectlOk([
        "patch",
        "dependencyrule",
        "vm-dependencies",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/dependencies/0/fieldRef/path","value":".spec.altVpcRef.name"}]',
      ], { workspace: w.topo.compute.path });
      await waitForDryRunDelete(kcp, w.inC1("vpc", "vpc-y"), undefined);
      const r = await kcp.kubectl(
        ["delete", "vpc", "vpc-z", "-n", "default"],
        { workspace: w.c1 },
      );
      assert.match(
        r.stderr,
        /still referenced by VirtualMachine\/vm-5 \(\.spec\.altVpcRef\.name\)/,
      );
    },
  );

  await step(
    "a deleted rule stops protecting, without a restart",
    async () => {
      await kcp.kubectlOk(["delete", "dependencyrule", "vm-dependencies"], {
        workspace: w.topo.compute.path,
      });
      await waitFor(
        "the webhook to drop the rule",
        async () => (await validRules(w.webhook)) === 0 || undefined,
      );
      await kcp.kubectlOk(["delete", "vpc", "vpc-z", "-n", "default"], {
        workspace: w.c1,
      });
    },
  );

  await step(
    "a malformed review sent straight to the webhook gets a 400 naming the problem",
    async () => {
      const client = Deno.createHttpClient({ caCerts: [w.webhook.cert.caPem] });
      try {
        for (
          const body of [
            "not json",
            "null",
            "[]",
            '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
          ]
        ) {
          const response = await fetch(w.webhook.url, {
            method: "POST",
            body,
            client,
          });
          const answer = await response.json() as { error?: string };
          assert.equal(response.status, 400, body);
          assert.match(
            answer.error ?? "",
            /^Cannot parse AdmissionReview: /,
            body,
          );
        }
      } finally {
        client.close();
      }
    },
  );

  await step(
    "after kcp restarts, the webhook reconnects by itself and follows new rules",
    async () => {
      await kcp.stop({ keepRootDir: true });
      await kcp.start();
      await kcp.kubectlOk(["apply", "-f", VM_VPC_RULE_FILE], {
        workspace: w.topo.compute.path,
      });
      await waitFor(
        "the webhook to see the rule again",
        async () => (await validRules(w.webhook)) === 1 || undefined,
        {
          timeoutMs: 90_000,
        },
      );
      await applyObjects(kcp, w.c1, [
        vpcManifest("vpc-r", { cidr: VPC_CIDR }),
        vmManifest("vm-r", { vpc: "vpc-r" }),
      ]);
      await waitForDryRunDelete(kcp, w.inC1("vpc", "vpc-r"), ANY_DENIAL);
      const r = await kcp.kubectl(
        ["delete", "vpc", "vpc-r", "-n", "default"],
        { workspace: w.c1 },
      );
      assert.match(r.stderr, /still referenced by VirtualMachine\/vm-r/);
      assert.match(await w.webhook.log(), /list or watch failed, retrying/);
    },
  );

  await step(
    "a webhook that cannot find its export stays unready and denies protected deletes",
    async () => {
      const lost = await startWebhook(kcp, {
        args: ["--api-export-name=no-such-export"],
        waitReady: false,
      });
      try {
        await waitFor("the lost webhook to serve probes", async () => {
          return (await lost.get(lost.healthPort, "/readyz")).status ===
              503 || undefined;
        });
        const client = Deno.createHttpClient({ caCerts: [lost.cert.caPem] });
        try {
          const response = await fetch(lost.url, {
            method: "POST",
            client,
            body: JSON.stringify({
              apiVersion: "admission.k8s.io/v1",
              kind: "AdmissionReview",
              request: {
                uid: "u1",
                kind: {
                  group: "network.example.com",
                  version: "v1alpha1",
                  kind: "VPC",
                },
                resource: {
                  group: "network.example.com",
                  version: "v1alpha1",
                  resource: "vpcs",
                },
                name: "vpc-q",
                namespace: "default",
                operation: "DELETE",
                oldObject: {
                  metadata: {
                    name: "vpc-q",
                    annotations: {
                      "kcp.io/cluster": w.topo.consumers[0]!.cluster,
                    },
                  },
                },
              },
            }),
          });
          const review = await response.json() as {
            response: { allowed: boolean; status?: { message: string } };
          };
          assert.equal(review.response.allowed, false);
          assert.equal(
            review.response.status?.message,
            "dependency webhook not yet initialized, retry later",
          );
        } finally {
          client.close();
        }
        // Its RBAC names the real export's slice only, so kcp refuses the
        // list outright.
        await waitFor("the webhook to log why it is not ready", async () => {
          // e.g. apiexportendpointslices.apis.kcp.io "no-such-export" is
          // forbidden (quotes escaped in the JSON log line).
          return /apiexportendpointslices\.apis\.kcp\.io[^\n]{0,40} is forbidden: User/
            .test(await lost.log()) || undefined;
        });
        assert.equal(
          (await lost.get(lost.healthPort, "/readyz")).status,
          503,
        );
      } finally {
        await lost.stop();
      }
    },
  );

  await step(
    "status truth: every rule and Lock whose Ready is True/Enforced denies a delete of what it covers",
    async () => {
      // No controller runs here, so no status claims anything: the rule
      // is listed and nothing is to prove.
      const truth = await assertStatusTruth(kcp, {
        workspaces: [
          w.topo.depCtrl.path,
          w.topo.network.path,
          w.topo.compute.path,
          w.c1,
          w.c2,
        ],
      });
      assert.equal(truth.rulesListed, 1);
      assert.deepEqual(truth.rulesProven, []);
    },
  );

  await step("SIGTERM stops the webhook with exit code 0", async () => {
    assert.equal(await w.webhook.stop("SIGTERM"), 0);
    assert.match(await w.webhook.log(), /"msg":"stopped"/);
  });
}
