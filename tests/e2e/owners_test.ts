/**
 * Owners, end to end on a real kcp: rules whose reference is read on the
 * protected object (`fieldRef.from: Target`: a label, or its
 * ownerReferences) or on its Namespace (`from: TargetNamespace`), so that a
 * Subnet cannot be deleted while the Network (or Project) it belongs to
 * exists; a `when` switch on the owner (`object.spec.deletionProtection`),
 * failing closed when it cannot be evaluated or does not compile; and
 * `protectWhile: Active`, under which an owner being deleted lets go.
 * `controller.ts` and `webhook.ts` run as separate processes with their own
 * identities, the webhook's reads are granted with `controller grants`, and
 * users act with kubectl. An owners provider exports Networks and Projects
 * (`testing/fixtures/owners/`) and holds the rules; the network provider's
 * Subnets are what they protect.
 */
import assert from "node:assert/strict";
import {
  applyObjects,
  assertOwnerStatusTruth,
  assertStatusTruth,
  bindExport,
  buildTopology,
  type ComponentProcess,
  GC_ANCHOR,
  grantWebhookReads,
  type KcpServer,
  kcpTest,
  type KubectlResult,
  OWNERS_EXPORT,
  ownersProvider,
  startController,
  startWebhook,
  waitFor,
  type WebhookProcess,
} from "../../testing/mod.ts";

const NETWORK = "root:providers:network";
const COMPUTE = "root:providers:compute";
/** The owners provider: exports Networks and Projects, holds the owner rules. */
const OWNERS = "root:providers:owners";
const C1 = "root:consumers:c1";
/** Another tenant, bound to the same providers, with objects of the same names. */
const C2 = "root:consumers:c2";

/** The labels the rules read, one per rule so that each is seen alone. */
const OWNER = "network.example.com/owner";
const GUARDED_BY = "network.example.com/guarded-by";
const BADLY_GUARDED_BY = "network.example.com/badly-guarded-by";
const ACTIVE_OWNER = "network.example.com/active-owner";
const PROJECT = "owners.example.com/project";

const SWITCH = "object.spec.deletionProtection == true";

/** The owner types, as a rule's `spec.dependent` names them. */
const OWNER_TYPES = {
  Network: { resource: "networks" },
  Project: { resource: "projects" },
} as const;

/** An owner rule in the owners provider, protecting the network provider's Subnets. */
function ownerRule(
  name: string,
  owner: keyof typeof OWNER_TYPES,
  fieldRef: { from: "Target" | "TargetNamespace"; path: string },
  options: { when?: string; protectWhile?: "Exists" | "Active" } = {},
): unknown {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent: {
        apiExportName: OWNERS_EXPORT,
        group: OWNERS_EXPORT,
        version: "v1alpha1",
        kind: owner,
        resource: OWNER_TYPES[owner].resource,
      },
      ...options,
      dependencies: [{
        apiExportRef: { path: NETWORK, name: "network.example.com" },
        group: "network.example.com",
        version: "v1alpha1",
        resource: "subnets",
        fieldRef,
      }],
    },
  };
}

/** `.metadata.labels["<key>"]`. */
function label(key: string): string {
  return `.metadata.labels["${key}"]`;
}

function namespace(name: string, labels?: Record<string, string>): unknown {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, ...(labels === undefined ? {} : { labels }) },
  };
}

/** A namespaced Network with its `spec.deletionProtection` switch, if given. */
function network(
  ns: string,
  name: string,
  options: { deletionProtection?: boolean; finalizers?: string[] } = {},
): unknown {
  return {
    apiVersion: `${OWNERS_EXPORT}/v1alpha1`,
    kind: "Network",
    metadata: {
      name,
      namespace: ns,
      ...(options.finalizers === undefined
        ? {}
        : { finalizers: options.finalizers }),
    },
    spec: options.deletionProtection === undefined
      ? {}
      : { deletionProtection: options.deletionProtection },
  };
}

/** A cluster-scoped Project. */
function project(name: string): unknown {
  return {
    apiVersion: `${OWNERS_EXPORT}/v1alpha1`,
    kind: "Project",
    metadata: { name },
    spec: {},
  };
}

interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** A Subnet of the network provider, with labels and ownerReferences as given. */
function subnetObject(
  ns: string,
  name: string,
  metadata: {
    labels?: Record<string, string>;
    ownerReferences?: OwnerReference[];
  } = {},
): unknown {
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: "Subnet",
    metadata: { name, namespace: ns, ...metadata },
    spec: { cidr: "10.0.0.0/24" },
  };
}

/** A Network ownerReference. */
function networkRef(name: string, uid: string): OwnerReference {
  return {
    apiVersion: `${OWNERS_EXPORT}/v1alpha1`,
    kind: "Network",
    name,
    uid,
  };
}

/** A Subnet to delete: its namespace and name. */
interface Target {
  namespace: string;
  name: string;
}

function subnet(namespace: string, name: string): Target {
  return { namespace, name };
}

/** `kubectl delete subnet`, for real or as a server-side dry run. */
function deleteSubnet(
  kcp: KcpServer,
  workspace: string,
  target: Target,
  options: { dryRun?: boolean } = {},
): Promise<KubectlResult> {
  return kcp.kubectl([
    "delete",
    "subnet",
    target.name,
    "-n",
    target.namespace,
    ...(options.dryRun ? ["--dry-run=server"] : []),
  ], { workspace });
}

async function exists(
  kcp: KcpServer,
  workspace: string,
  target: Target,
): Promise<boolean> {
  const r = await kcp.kubectl(
    ["get", "subnet", target.name, "-n", target.namespace, "-o", "name"],
    { workspace },
  );
  if (r.code === 0) return true;
  assert.match(r.stderr, /NotFound|not found/, r.stderr);
  return false;
}

/** The webhook's denial as kubectl prints it, after kcp's prefix. */
const DENIED = /denied the request: (.*)$/m;

/**
 * Whether `stderr` is the webhook's 409 denial with exactly `message`
 * (a string) or a message matching it (a RegExp).
 */
function isDenial(stderr: string, message: string | RegExp): boolean {
  const said = DENIED.exec(stderr)?.[1];
  if (!/\(Conflict\)/.test(stderr) || said === undefined) return false;
  return typeof message === "string" ? said === message : message.test(said);
}

/**
 * Asserts that a real delete of `target` is denied with `message` (exact
 * text, or a match) and that the Subnet is still there. Returns the denial.
 */
async function assertDenied(
  kcp: KcpServer,
  workspace: string,
  target: Target,
  message: string | RegExp,
): Promise<string> {
  const r = await deleteSubnet(kcp, workspace, target);
  assert.notEqual(r.code, 0, `delete of ${target.name} was allowed`);
  assert.ok(
    isDenial(r.stderr, message),
    `delete of ${target.name} in ${workspace}: expected the denial ${message}, got: ${r.stderr}`,
  );
  assert.ok(await exists(kcp, workspace, target), `${target.name} is gone`);
  return DENIED.exec(r.stderr)![1]!;
}

/** Asserts that a real delete of `target` succeeds and the Subnet is gone. */
async function assertDeleted(
  kcp: KcpServer,
  workspace: string,
  target: Target,
): Promise<void> {
  const r = await deleteSubnet(kcp, workspace, target);
  assert.equal(r.code, 0, `delete of ${target.name}: ${r.stderr}`);
  assert.ok(!(await exists(kcp, workspace, target)), `${target.name} remains`);
}

/**
 * Polls a server-side dry-run delete of `target` until it is denied with
 * `message`: a new rule takes effect once the controller installed the
 * configuration and the webhook read the rule. Returns kubectl's stderr.
 */
async function waitForDenial(
  kcp: KcpServer,
  workspace: string,
  target: Target,
  message: string | RegExp,
): Promise<string> {
  let last = "";
  return await waitFor(
    `a delete of subnet ${target.namespace}/${target.name} to be denied with ${message}`,
    async () => {
      const r = await deleteSubnet(kcp, workspace, target, { dryRun: true });
      last = r.code === 0 ? `allowed: ${r.stdout}` : r.stderr;
      if (r.code !== 0 && isDenial(r.stderr, message)) return r.stderr;
      throw new Error(`last answer: ${last.trim()}`);
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

interface RuleObject {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

/** Waits until the rule's Ready condition, for its current generation, passes `test`. */
async function waitForReady(
  kcp: KcpServer,
  workspace: string,
  name: string,
  test: (ready: Condition) => boolean,
  description: string,
): Promise<Condition> {
  return await waitFor(`rule ${name} to be ${description}`, async () => {
    const object = JSON.parse(
      await kcp.kubectlOk(["get", "dependencyrules", name, "-o", "json"], {
        workspace,
      }),
    ) as RuleObject;
    const ready = object.status?.conditions?.find((c) => c.type === "Ready");
    if (
      ready !== undefined && test(ready) &&
      object.status?.observedGeneration === object.metadata.generation
    ) return ready;
    throw new Error(`Ready is ${JSON.stringify(ready)}`);
  }, { timeoutMs: 60_000, intervalMs: 250 });
}

function waitForEnforced(
  kcp: KcpServer,
  workspace: string,
  name: string,
): Promise<Condition> {
  return waitForReady(
    kcp,
    workspace,
    name,
    (ready) => ready.status === "True" && ready.reason === "Enforced",
    "Enforced",
  );
}

/** `metadata.uid` of an object in C1 (or `workspace`). */
function uidOf(
  kcp: KcpServer,
  args: string[],
  workspace = C1,
): Promise<string> {
  return kcp.kubectlOk(
    ["get", ...args, "-o", "jsonpath={.metadata.uid}"],
    { workspace },
  );
}

/** The denial naming one owner that holds `subnets/<name>`. */
function ownedBy(name: string, owner: string, field: string): string {
  return `cannot delete subnets/${name}: it belongs to ${owner} (${field}), which still exists`;
}

kcpTest(
  "owners: a Subnet cannot be deleted while the Network or Project it (or its Namespace) names exists, as `when` and `protectWhile` say",
  async (kcp, step) => {
    let webhook: WebhookProcess | undefined;
    let controller: ComponentProcess | undefined;
    let depCtrl = "";
    let failed = true;

    try {
      await step(
        "topology, an owners provider exporting Networks and Projects bound by two consumers, webhook and controller",
        async () => {
          const topo = await buildTopology(kcp, {
            networkPath: NETWORK,
            computePath: COMPUTE,
            consumerPaths: [C1, C2],
          });
          depCtrl = topo.depCtrl.path;
          await ownersProvider(kcp, OWNERS);
          for (const consumer of [C1, C2]) {
            await bindExport(kcp, consumer, {
              exportPath: OWNERS,
              exportName: OWNERS_EXPORT,
            });
            await waitFor(
              `networks and subnets to be served in ${consumer}`,
              async () => {
                const r = await kcp.kubectl(
                  ["get", "networks,projects,subnets", "-A"],
                  { workspace: consumer },
                );
                return r.code === 0 || undefined;
              },
            );
          }
          await applyObjects(kcp, C1, [
            namespace("team-a"),
            namespace("team-b"),
          ]);
          await applyObjects(kcp, C2, [namespace("team-a")]);
          webhook = await startWebhook(kcp);
          controller = await startController(kcp, { webhook });
        },
      );

      await step(
        "from: Target with a label: the Network a Subnet names holds it (a dry run explains), only in the Subnet's namespace, beside its dependents, until the Network is deleted",
        async () => {
          await applyObjects(kcp, OWNERS, [
            ownerRule("subnet-owner", "Network", {
              from: "Target",
              path: label(OWNER),
            }),
          ]);
          const role = await grantWebhookReads(kcp);
          const ready = await waitForEnforced(kcp, OWNERS, "subnet-owner");
          assert.match(
            ready.message,
            /^deleting subnets\.network\.example\.com is denied while the Network it names exists/,
          );
          assert.match(role, /- networks\n\s+verbs:\n\s+- get\n/);
          assert.match(role, /- subnets\n\s+verbs:\n\s+- get\n/);
          const stored = await kcp.kubectlOk([
            "get",
            "dependencyrule",
            "subnet-owner",
            "-o",
            "jsonpath={.spec.dependencies[0].fieldRef.from} {.spec.dependencies[0].fieldRef.path}",
          ], { workspace: OWNERS });
          assert.equal(stored, `Target ${label(OWNER)}`);

          await applyObjects(kcp, C1, [
            network("team-a", "net-a"),
            subnetObject("team-a", "s-1", { labels: { [OWNER]: "net-a" } }),
            // No Network net-a in team-b: the owner is looked up in the
            // Subnet's own namespace.
            subnetObject("team-b", "s-2", { labels: { [OWNER]: "net-a" } }),
            subnetObject("team-a", "s-free"),
          ]);
          const message = ownedBy(
            "s-1",
            "Network/net-a",
            label(OWNER),
          );
          assert.equal(
            message,
            'cannot delete subnets/s-1: it belongs to Network/net-a (.metadata.labels["network.example.com/owner"]), which still exists',
          );
          const dryRun = await waitForDenial(
            kcp,
            C1,
            subnet("team-a", "s-1"),
            message,
          );
          assert.match(dryRun, /Error from server \(Conflict\)/);
          assert.ok(await exists(kcp, C1, subnet("team-a", "s-1")));
          await assertDenied(kcp, C1, subnet("team-a", "s-1"), message);
          await assertDeleted(kcp, C1, subnet("team-b", "s-2"));
          await assertDeleted(kcp, C1, subnet("team-a", "s-free"));

          // A dependent that refers too (a from: Dependent rule of the
          // compute provider) is named after the owner.
          await applyObjects(kcp, COMPUTE, [{
            apiVersion: "dependencies.opendefense.cloud/v1alpha1",
            kind: "DependencyRule",
            metadata: { name: "vm-subnet" },
            spec: {
              dependent: {
                apiExportName: "compute.example.com",
                group: "compute.example.com",
                version: "v1alpha1",
                kind: "VirtualMachine",
                resource: "virtualmachines",
              },
              dependencies: [{
                apiExportRef: { path: NETWORK, name: "network.example.com" },
                group: "network.example.com",
                version: "v1alpha1",
                resource: "subnets",
                fieldRef: { path: ".spec.subnetRef.name" },
              }],
            },
          }]);
          await grantWebhookReads(kcp);
          await waitForEnforced(kcp, COMPUTE, "vm-subnet");
          await applyObjects(kcp, C1, [{
            apiVersion: "compute.example.com/v1alpha1",
            kind: "VirtualMachine",
            metadata: { name: "vm-1", namespace: "team-a" },
            spec: { subnetRef: { name: "s-1" } },
          }]);
          const both =
            `${message}; still referenced by VirtualMachine/vm-1 (.spec.subnetRef.name)`;
          await waitForDenial(kcp, C1, subnet("team-a", "s-1"), both);
          await assertDenied(kcp, C1, subnet("team-a", "s-1"), both);
          await kcp.kubectlOk(
            ["delete", "virtualmachine", "vm-1", "-n", "team-a"],
            { workspace: C1 },
          );
          await assertDenied(kcp, C1, subnet("team-a", "s-1"), message);

          await kcp.kubectlOk(["delete", "network", "net-a", "-n", "team-a"], {
            workspace: C1,
          });
          await assertDeleted(kcp, C1, subnet("team-a", "s-1"));
        },
      );

      await step(
        "from: Target with .metadata.ownerReferences[*].name: only an entry of the Network kind and group, with the live Network's uid, holds",
        async () => {
          await applyObjects(kcp, OWNERS, [
            ownerRule("subnet-owner-refs", "Network", {
              from: "Target",
              path: ".metadata.ownerReferences[*].name",
            }),
          ]);
          await waitForEnforced(kcp, OWNERS, "subnet-owner-refs");
          await applyObjects(kcp, C1, [
            network("team-a", "net-o"),
            project("net-o"),
          ]);
          const uid = await uidOf(kcp, ["network", "net-o", "-n", "team-a"]);
          const projectUid = await uidOf(kcp, ["project", "net-o"]);
          assert.notEqual(uid, projectUid);
          await applyObjects(kcp, C1, [
            subnetObject("team-a", "s-owned", {
              ownerReferences: [networkRef("net-o", uid)],
            }),
            // The Network's name and uid, but the kind Project (kcp's
            // garbage collector would drop the dangling entry: the anchor
            // keeps it).
            subnetObject("team-a", "s-other-kind", {
              ownerReferences: [
                { ...networkRef("net-o", uid), kind: "Project" },
                GC_ANCHOR,
              ],
            }),
            // The Network's kind, name and uid in another API group.
            subnetObject("team-a", "s-other-group", {
              ownerReferences: [{
                ...networkRef("net-o", uid),
                apiVersion: "network.example.com/v1alpha1",
              }],
            }),
            // The right kind, group and name, with a uid that is not the
            // live Network's (a Network of that name deleted and created
            // again).
            subnetObject("team-a", "s-stale", {
              ownerReferences: [
                networkRef("net-o", "6a1f3c2e-0000-4000-8000-000000000001"),
                GC_ANCHOR,
              ],
            }),
          ]);
          const message = ownedBy(
            "s-owned",
            "Network/net-o",
            ".metadata.ownerReferences[0].name",
          );
          await waitForDenial(kcp, C1, subnet("team-a", "s-owned"), message);
          await assertDenied(kcp, C1, subnet("team-a", "s-owned"), message);
          // A dry run is allowed while the entry is still there as written
          // (the garbage collector only ever removes entries: still there
          // after the dry run, it was there during it); then the delete.
          const expected = {
            "s-other-kind": `Project/${OWNERS_EXPORT}/v1alpha1/${uid}`,
            "s-other-group": `Network/network.example.com/v1alpha1/${uid}`,
            "s-stale":
              `Network/${OWNERS_EXPORT}/v1alpha1/6a1f3c2e-0000-4000-8000-000000000001`,
          };
          for (const [name, entry] of Object.entries(expected)) {
            const target = subnet("team-a", name);
            const dryRun = await deleteSubnet(kcp, C1, target, {
              dryRun: true,
            });
            assert.equal(dryRun.code, 0, `${name}: ${dryRun.stderr}`);
            const stored = await kcp.kubectlOk([
              "get",
              "subnet",
              name,
              "-n",
              "team-a",
              "-o",
              "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].apiVersion}/{.metadata.ownerReferences[0].uid}",
            ], { workspace: C1 });
            assert.equal(stored, entry, `${name}'s first ownerReference`);
            await assertDeleted(kcp, C1, target);
          }

          // Deleting the Network (kubectl's default, background cascade):
          // kcp's garbage collector deletes the Subnet it owns, or the user
          // does; either delete passes the webhook now.
          await kcp.kubectlOk(["delete", "network", "net-o", "-n", "team-a"], {
            workspace: C1,
          });
          let last = "";
          await waitFor("s-owned to be deleted", async () => {
            const r = await kcp.kubectl([
              "delete",
              "subnet",
              "s-owned",
              "-n",
              "team-a",
              "--ignore-not-found",
            ], { workspace: C1 });
            last = r.stderr;
            return r.code === 0 || undefined;
          }, { timeoutMs: 30_000, intervalMs: 500 }).catch((error: Error) => {
            assert.fail(`${error.message}; last answer: ${last}`);
          });
          assert.ok(!(await exists(kcp, C1, subnet("team-a", "s-owned"))));
          await kcp.kubectlOk(["delete", "project", "net-o"], {
            workspace: C1,
          });
        },
      );

      await step(
        "when: a Network with deletionProtection on holds its Subnets, off lets go, on again holds; one the condition cannot evaluate holds, saying so",
        async () => {
          await applyObjects(kcp, OWNERS, [
            ownerRule("subnet-guard", "Network", {
              from: "Target",
              path: label(GUARDED_BY),
            }, { when: SWITCH }),
          ]);
          const ready = await waitForEnforced(kcp, OWNERS, "subnet-guard");
          assert.match(
            ready.message,
            /^deleting subnets\.network\.example\.com is denied while the Network it names exists \(counting only one for which spec\.when is true\)/,
          );
          await applyObjects(kcp, C1, [
            network("team-a", "net-g", { deletionProtection: true }),
            subnetObject("team-a", "s-g1", {
              labels: { [GUARDED_BY]: "net-g" },
            }),
            subnetObject("team-a", "s-g2", {
              labels: { [GUARDED_BY]: "net-g" },
            }),
          ]);
          const on = (name: string) =>
            ownedBy(
              name,
              "Network/net-g",
              `${label(GUARDED_BY)}, with ${SWITCH}`,
            );
          await waitForDenial(kcp, C1, subnet("team-a", "s-g1"), on("s-g1"));
          await assertDenied(kcp, C1, subnet("team-a", "s-g1"), on("s-g1"));
          const flip = (value: boolean) =>
            kcp.kubectlOk([
              "patch",
              "network",
              "net-g",
              "-n",
              "team-a",
              "--type=merge",
              "-p",
              JSON.stringify({ spec: { deletionProtection: value } }),
            ], { workspace: C1 });
          // The owner is read live at every delete: the switch acts at once.
          await flip(false);
          await assertDeleted(kcp, C1, subnet("team-a", "s-g1"));
          await flip(true);
          await assertDenied(kcp, C1, subnet("team-a", "s-g2"), on("s-g2"));

          // A Network without the switch: object.spec.deletionProtection
          // cannot be read, so the condition cannot say, and the Network
          // holds (fail closed).
          await applyObjects(kcp, C1, [
            network("team-a", "net-u"),
            subnetObject("team-a", "s-u", {
              labels: { [GUARDED_BY]: "net-u" },
            }),
          ]);
          const unevaluated = new RegExp(
            `^cannot delete subnets/s-u: it belongs to Network/net-u \\(${
              escape(label(GUARDED_BY))
            }; the rule's condition ${
              escape(SWITCH)
            } could not be evaluated \\(.+\\), so it protects\\), which still exists$`,
          );
          await assertDenied(kcp, C1, subnet("team-a", "s-u"), unevaluated);
          await flip(false);
          await assertDeleted(kcp, C1, subnet("team-a", "s-g2"));
        },
      );

      await step(
        "when that does not compile: the rule is Ready=False InvalidCondition and still holds, the denial says the condition does not compile",
        async () => {
          await applyObjects(kcp, OWNERS, [
            ownerRule("subnet-bad-guard", "Network", {
              from: "Target",
              path: label(BADLY_GUARDED_BY),
            }, { when: "object.spec.deletionProtection ==" }),
          ]);
          const ready = await waitForReady(
            kcp,
            OWNERS,
            "subnet-bad-guard",
            (ready) => ready.reason === "InvalidCondition",
            "InvalidCondition",
          );
          assert.equal(ready.status, "False");
          assert.match(
            ready.message,
            /^spec\.when: .+; until it compiles, the webhook counts it as true for every Network/,
          );
          const shownReason = await kcp.kubectlOk([
            "get",
            "dependencyrule",
            "subnet-bad-guard",
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}',
          ], { workspace: OWNERS });
          assert.equal(shownReason, "False/InvalidCondition");
          // Its switch is off, and still it holds: the condition cannot say.
          await applyObjects(kcp, C1, [
            network("team-a", "net-b", { deletionProtection: false }),
            subnetObject("team-a", "s-b", {
              labels: { [BADLY_GUARDED_BY]: "net-b" },
            }),
          ]);
          const doesNotCompile = new RegExp(
            `^cannot delete subnets/s-b: it belongs to Network/net-b \\(${
              escape(label(BADLY_GUARDED_BY))
            }; the rule's condition does not compile \\(.+\\), so it protects\\), which still exists$`,
          );
          await waitForDenial(kcp, C1, subnet("team-a", "s-b"), doesNotCompile);
          await assertDenied(kcp, C1, subnet("team-a", "s-b"), doesNotCompile);
          await kcp.kubectlOk(["delete", "network", "net-b", "-n", "team-a"], {
            workspace: C1,
          });
          await assertDeleted(kcp, C1, subnet("team-a", "s-b"));
        },
      );

      await step(
        "protectWhile: a Network being deleted (held by a finalizer) lets go of its Subnets under Active and holds them under Exists",
        async () => {
          await applyObjects(kcp, OWNERS, [
            ownerRule("subnet-active-owner", "Network", {
              from: "Target",
              path: label(ACTIVE_OWNER),
            }, { protectWhile: "Active" }),
          ]);
          const ready = await waitForEnforced(
            kcp,
            OWNERS,
            "subnet-active-owner",
          );
          assert.match(
            ready.message,
            /^deleting subnets\.network\.example\.com is denied while the Network it names exists \(counting only one that is not being deleted\)/,
          );
          await applyObjects(kcp, C1, [
            network("team-a", "net-f", {
              finalizers: ["owners.example.com/hold"],
            }),
            subnetObject("team-a", "s-active", {
              labels: { [ACTIVE_OWNER]: "net-f" },
            }),
            subnetObject("team-a", "s-exists", {
              labels: { [OWNER]: "net-f" },
            }),
          ]);
          const active = ownedBy(
            "s-active",
            "Network/net-f",
            label(ACTIVE_OWNER),
          );
          const existing = ownedBy("s-exists", "Network/net-f", label(OWNER));
          // While the Network is active, both rules hold.
          await waitForDenial(kcp, C1, subnet("team-a", "s-active"), active);
          await assertDenied(kcp, C1, subnet("team-a", "s-exists"), existing);

          await kcp.kubectlOk([
            "delete",
            "network",
            "net-f",
            "-n",
            "team-a",
            "--wait=false",
          ], { workspace: C1 });
          const stamp = await kcp.kubectlOk([
            "get",
            "network",
            "net-f",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
          ], { workspace: C1 });
          assert.notEqual(stamp, "", "net-f has no deletionTimestamp");
          await assertDeleted(kcp, C1, subnet("team-a", "s-active"));
          await assertDenied(kcp, C1, subnet("team-a", "s-exists"), existing);

          await kcp.kubectlOk([
            "patch",
            "network",
            "net-f",
            "-n",
            "team-a",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers"}]',
          ], { workspace: C1 });
          await waitFor("net-f to be gone", async () => {
            const r = await kcp.kubectl(
              ["get", "network", "net-f", "-n", "team-a"],
              { workspace: C1 },
            );
            return /NotFound|not found/.test(r.stderr) || undefined;
          }, { timeoutMs: 30_000, intervalMs: 250 });
          await assertDeleted(kcp, C1, subnet("team-a", "s-exists"));
        },
      );

      await step(
        "from: TargetNamespace: a Namespace labelled with a Project's name puts its Subnets under that Project; a rule cannot name core namespaces",
        async () => {
          await applyObjects(kcp, OWNERS, [
            ownerRule("subnet-project", "Project", {
              from: "TargetNamespace",
              path: label(PROJECT),
            }),
          ]);
          const role = await grantWebhookReads(kcp);
          const ready = await waitForEnforced(kcp, OWNERS, "subnet-project");
          assert.match(
            ready.message,
            /^deleting subnets\.network\.example\.com is denied while the Project its Namespace names exists/,
          );
          assert.match(role, /- projects\n\s+verbs:\n\s+- get\n/);
          // The webhook reads the Subnet's Namespace (its metadata).
          assert.match(role, /- namespaces\n\s+verbs:\n\s+- get\n/);
          await applyObjects(kcp, C1, [
            project("p-1"),
            namespace("proj-a", { [PROJECT]: "p-1" }),
            namespace("proj-none"),
          ]);
          await applyObjects(kcp, C1, [
            subnetObject("proj-a", "s-p"),
            subnetObject("proj-none", "s-q"),
          ]);
          const message = ownedBy(
            "s-p",
            "Project/p-1",
            `${label(PROJECT)} of namespace proj-a`,
          );
          const dryRun = await waitForDenial(
            kcp,
            C1,
            subnet("proj-a", "s-p"),
            message,
          );
          assert.match(dryRun, /Error from server \(Conflict\)/);
          await assertDenied(kcp, C1, subnet("proj-a", "s-p"), message);
          await assertDeleted(kcp, C1, subnet("proj-none", "s-q"));

          // The Namespace itself cannot be protected: a dependency names a
          // type by its APIExport and API group, and kcp's schema for
          // DependencyRules refuses the core group "" of namespaces.
          const refused = await kcp.kubectl(["apply", "-f", "-"], {
            workspace: OWNERS,
            stdin: JSON.stringify({
              apiVersion: "dependencies.opendefense.cloud/v1alpha1",
              kind: "DependencyRule",
              metadata: { name: "namespace-project" },
              spec: {
                dependent: {
                  apiExportName: OWNERS_EXPORT,
                  group: OWNERS_EXPORT,
                  version: "v1alpha1",
                  kind: "Project",
                  resource: "projects",
                },
                dependencies: [{
                  apiExportRef: { path: OWNERS, name: OWNERS_EXPORT },
                  group: "",
                  version: "v1",
                  resource: "namespaces",
                  fieldRef: { from: "Target", path: label(PROJECT) },
                }],
              },
            }),
          });
          assert.notEqual(refused.code, 0, refused.stdout);
          assert.match(refused.stderr, /spec\.dependencies\[0\]\.group/);
          assert.match(refused.stderr, /should match/);

          await kcp.kubectlOk(["delete", "project", "p-1"], { workspace: C1 });
          await assertDeleted(kcp, C1, subnet("proj-a", "s-p"));
        },
      );

      await step(
        "tenancy: another consumer with the same names is not held by the first one's owners",
        async () => {
          // C1: owners by label, by ownerReference, by Namespace.
          await applyObjects(kcp, C1, [
            network("team-a", "net-t"),
            network("team-a", "net-r"),
            project("p-t"),
            namespace("proj-t", { [PROJECT]: "p-t" }),
          ]);
          const c1Uid = await uidOf(kcp, ["network", "net-r", "-n", "team-a"]);
          // C2: the same namespaces, labels and Subnets; no net-t and no
          // p-t; a net-r of its own, whose uid is not the one C2's Subnet
          // names (C1's).
          await applyObjects(kcp, C2, [
            network("team-a", "net-r"),
            namespace("proj-t", { [PROJECT]: "p-t" }),
          ]);
          const c2Uid = await uidOf(
            kcp,
            ["network", "net-r", "-n", "team-a"],
            C2,
          );
          assert.notEqual(c1Uid, c2Uid);
          for (const consumer of [C1, C2]) {
            await applyObjects(kcp, consumer, [
              subnetObject("team-a", "s-t", { labels: { [OWNER]: "net-t" } }),
              subnetObject("team-a", "s-tr", {
                ownerReferences: [networkRef("net-r", c1Uid), GC_ANCHOR],
              }),
              subnetObject("proj-t", "s-tn"),
            ]);
          }
          await assertDenied(
            kcp,
            C1,
            subnet("team-a", "s-t"),
            ownedBy("s-t", "Network/net-t", label(OWNER)),
          );
          await assertDenied(
            kcp,
            C1,
            subnet("team-a", "s-tr"),
            ownedBy(
              "s-tr",
              "Network/net-r",
              ".metadata.ownerReferences[0].name",
            ),
          );
          await assertDenied(
            kcp,
            C1,
            subnet("proj-t", "s-tn"),
            ownedBy(
              "s-tn",
              "Project/p-t",
              `${label(PROJECT)} of namespace proj-t`,
            ),
          );
          for (
            const target of [
              subnet("team-a", "s-t"),
              subnet("team-a", "s-tr"),
              subnet("proj-t", "s-tn"),
            ]
          ) {
            const dryRun = await deleteSubnet(kcp, C2, target, {
              dryRun: true,
            });
            assert.equal(dryRun.code, 0, `${target.name}: ${dryRun.stderr}`);
            // Still naming C1's net-r after the dry run (the garbage
            // collector only ever removes entries).
            const named = await kcp.kubectlOk([
              "get",
              "subnet",
              target.name,
              "-n",
              target.namespace,
              "-o",
              "jsonpath={.metadata.ownerReferences[0].uid}",
            ], { workspace: C2 });
            assert.equal(named, target.name === "s-tr" ? c1Uid : "");
            await assertDeleted(kcp, C2, target);
            // C1's stays held while C2's went.
            assert.ok(await exists(kcp, C1, target));
          }
          await assertDenied(
            kcp,
            C1,
            subnet("team-a", "s-t"),
            ownedBy("s-t", "Network/net-t", label(OWNER)),
          );
        },
      );

      await step(
        "status truth: every rule that says Ready=True Enforced denies a delete of what it covers",
        async () => {
          const owners = await assertOwnerStatusTruth(kcp, {
            workspaces: [OWNERS],
            consumer: C1,
            minimum: 5,
          });
          assert.deepEqual(owners.rulesProven.sort(), [
            `${OWNERS}/subnet-active-owner`,
            `${OWNERS}/subnet-guard`,
            `${OWNERS}/subnet-owner`,
            `${OWNERS}/subnet-owner-refs`,
            `${OWNERS}/subnet-project`,
          ]);
          assert.deepEqual(owners.notEnforced, [
            `${OWNERS}/subnet-bad-guard (False/InvalidCondition)`,
          ]);
          // The from: Dependent rule of the compute provider (the owners
          // provider's rules are all owner rules, which assertStatusTruth
          // would prove with a dependent: it is not given that workspace).
          const truth = await assertStatusTruth(kcp, {
            workspaces: [depCtrl, NETWORK, COMPUTE, C1],
            minimum: { rules: 1 },
          });
          assert.deepEqual(truth.rulesProven, [`${COMPUTE}/vm-subnet`]);
        },
      );

      await step(
        "SIGTERM stops controller and webhook with exit code 0",
        async () => {
          assert.equal(await controller!.stop(), 0);
          controller = undefined;
          assert.equal(await webhook!.stop(), 0);
          webhook = undefined;
        },
      );
      failed = false;
    } finally {
      for (const process of [controller, webhook]) {
        if (process === undefined) continue;
        if (failed) {
          console.error(
            `--- ${process.logFile} ---\n${(await process.log()).slice(-4000)}`,
          );
        }
        await process.stop();
      }
    }
  },
);

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}
