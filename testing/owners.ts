/**
 * Owners for e2e tests: a provider exporting owner types (namespaced
 * Networks and cluster-scoped Projects, `testing/fixtures/owners/`), and
 * {@linkcode assertOwnerStatusTruth}, which holds rules whose dependencies
 * read the reference on the protected object (`fieldRef.from: Target`) or
 * on its Namespace (`TargetNamespace`) to their status: every such rule
 * that says `Ready=True`/`Enforced` must deny the delete of an object that
 * names a live owner. (`assertStatusTruth` builds a dependent that names the
 * protected object, which is the proof of a `from: Dependent` rule only.)
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseFieldPath } from "../lib/rules/mod.ts";
import { applyFiles, applyObjects, bindExport } from "./apis.ts";
import { waitForExportIdentity } from "./apis.ts";
import { type KcpApi, KcpRequestError } from "./kcp_server.ts";
import { DEP_CTRL_EXPORT, VWC_CLAIM } from "./topology.ts";
import { waitFor } from "./wait.ts";
import { createWorkspace, type WorkspaceRef } from "./workspaces.ts";

const FIXTURES = new URL("./fixtures/owners/", import.meta.url).pathname;

/** The owners provider's APIExport (and API group). */
export const OWNERS_EXPORT = "owners.example.com";

/**
 * Creates the owners provider at `path`: its APIResourceSchemas and
 * APIExport (Networks, Projects) applied as a provider applies them, and an
 * APIBinding to the dep-ctrl export accepting its claim, so that rules can
 * be written there.
 */
export async function ownersProvider(
  kcp: KcpApi,
  path: string,
): Promise<WorkspaceRef> {
  const ws = await createWorkspace(kcp, path);
  await applyFiles(kcp, ws.path, [
    `${FIXTURES}apiresourceschema-networks.yaml`,
    `${FIXTURES}apiresourceschema-projects.yaml`,
    `${FIXTURES}apiexport.yaml`,
  ]);
  await waitForExportIdentity(kcp, ws.path, OWNERS_EXPORT);
  await bindExport(kcp, ws.path, {
    exportPath: "root:dep-ctrl",
    exportName: DEP_CTRL_EXPORT,
    acceptClaims: [VWC_CLAIM],
  });
  return ws;
}

/**
 * An ownerReference kcp's garbage collector cannot resolve (no API serves
 * its group): while an object carries one, the collector leaves it alone
 * (it neither deletes the object nor drops its other, dangling, references),
 * so only the webhook decides what happens to it.
 */
export const GC_ANCHOR = {
  apiVersion: "gc-anchor.example.com/v1",
  kind: "Anchor",
  name: "anchor",
  uid: "00000000-0000-4000-8000-00000000a0c4",
} as const;

/** Options for {@linkcode assertOwnerStatusTruth}. */
export interface OwnerTruthOptions {
  /** The workspaces (paths) whose DependencyRules are checked. */
  workspaces: readonly string[];
  /** The workspace proofs are placed in: it binds the owner and protected types. */
  consumer: string;
  /** Waits until at least this many owner rules are Enforced for their generation. @default {0} */
  minimum?: number;
  /** The `spec` of every owner created, so that the rules' `when` holds. @default {{ deletionProtection: true }} */
  ownerSpec?: Record<string, unknown>;
  /** How long each denial (and each wait) may take. @default {90_000} */
  timeoutMs?: number;
}

/** What {@linkcode assertOwnerStatusTruth} proved. */
export interface OwnerTruth {
  /** The Enforced owner rules, each proven, as `<workspace>/<name>`. */
  rulesProven: string[];
  /** Rules with an owner dependency that are not Enforced, as `<workspace>/<name> (<reason>)`. */
  notEnforced: string[];
  /** Rules without an owner dependency (for `assertStatusTruth`). */
  skipped: string[];
  /** Denials observed, one per owner dependency. */
  denials: number;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  observedGeneration?: number;
}

interface Rule {
  metadata: { name: string; generation?: number };
  spec: {
    dependent: {
      group: string;
      version: string;
      kind: string;
      resource: string;
    };
    dependencies: {
      group: string;
      version: string;
      resource: string;
      fieldRef: { from?: string; path: string };
    }[];
  };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

interface Found {
  workspace: string;
  rule: Rule;
}

interface Served {
  kind: string;
  namespaced: boolean;
}

/** Something the check created, deleted afterwards in reverse roles. */
interface Created {
  role: "owner" | "protected" | "namespace";
  type: string;
  name: string;
  namespace?: string;
}

/**
 * Proves every `Ready=True`/`Enforced` rule in `options.workspaces` that has
 * a dependency `from: Target` or `from: TargetNamespace`, one such
 * dependency at a time, in `options.consumer`: an owner of the rule's
 * dependent type (with `options.ownerSpec`), and a protected object that
 * names it at `fieldRef.path` (a label, an annotation or its
 * ownerReferences, with the owner's uid) or sits in a Namespace that names
 * it there; a server-side dry-run delete of the protected object must be
 * denied with 409, naming the owner. Then the owners are deleted and the
 * protected objects must be deletable. Rules without such a dependency are
 * only listed (prove them with `assertStatusTruth`).
 *
 * @throws {AssertionError} Naming the rule whose status lied, with what the
 * delete returned.
 */
export async function assertOwnerStatusTruth(
  kcp: KcpApi,
  options: OwnerTruthOptions,
): Promise<OwnerTruth> {
  const {
    consumer,
    minimum = 0,
    ownerSpec = { deletionProtection: true },
    timeoutMs = 90_000,
  } = options;
  const id = crypto.randomUUID().slice(0, 6);
  let found: Found[] = [];
  const settle = async () => {
    found = await listRules(kcp, options.workspaces);
    const owning = found.filter((f) => ownerDependencies(f.rule).length > 0);
    const enforced = owning.filter((f) => isEnforced(f.rule));
    return enforced.length >= minimum &&
        enforced.every((f) => isCurrent(f.rule))
      ? true
      : undefined;
  };
  await waitFor("the owner rules' statuses to settle", settle, {
    timeoutMs,
    intervalMs: 500,
  }).catch(() => undefined);
  const owning = found.filter((f) => ownerDependencies(f.rule).length > 0);
  const enforced = owning.filter((f) =>
    isEnforced(f.rule) && isCurrent(f.rule)
  );
  assert.ok(
    enforced.length >= minimum,
    `expected at least ${minimum} Enforced owner rule(s); found: ${
      owning.map(shown).join(", ") || "none"
    }`,
  );
  assert.deepEqual(
    owning.filter((f) => isEnforced(f.rule) && !isCurrent(f.rule)).map(shown),
    [],
    "Enforced owner rules whose status is of an older generation",
  );

  const created: Created[] = [];
  let denials = 0;
  let serial = 0;
  const sayLie = (f: Found, index: number, text: string) =>
    `DependencyRule ${f.rule.metadata.name} in ${f.workspace} says Ready=True Enforced, but its dependency ${index} ${text}`;

  for (const f of enforced) {
    const { dependent } = f.rule.spec;
    const owner = await discover(kcp, consumer, dependent);
    for (const [index, dependency] of f.rule.spec.dependencies.entries()) {
      const from = dependency.fieldRef.from ?? "Dependent";
      if (from === "Dependent") continue;
      const target = await discover(kcp, consumer, dependency);
      assert.ok(
        owner && target,
        sayLie(
          f,
          index,
          `cannot be proven: ${consumer} does not serve both ${dependent.resource}.${dependent.group} and ${dependency.resource}.${dependency.group}`,
        ),
      );
      const where = metadataField(dependency.fieldRef.path);
      assert.ok(
        where,
        sayLie(
          f,
          index,
          `cannot be proven: its path ${dependency.fieldRef.path} is not a label, an annotation or .metadata.ownerReferences[*].name`,
        ),
      );
      const n = serial++;
      const name = `owner-truth-${id}-${n}`;
      const ownerName = `${name}-owner`;
      // Every object of the proof lives in a namespace of its own.
      const namespace = name;
      const namespaceObject: Record<string, unknown> = {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: namespace },
      };
      if (from === "TargetNamespace") {
        assert.ok(
          where.field !== "ownerReferences" && target.namespaced,
          sayLie(
            f,
            index,
            "cannot be proven: from TargetNamespace needs a namespaced protected type and a label or annotation",
          ),
        );
        namespaceObject.metadata = {
          name: namespace,
          [where.field]: { [where.key!]: ownerName },
        };
      }
      await applyObjects(kcp, consumer, [namespaceObject]);
      created.push({ role: "namespace", type: "namespaces", name: namespace });

      const ownerType = `${dependent.resource}.${dependent.group}`;
      await applyObjects(kcp, consumer, [{
        apiVersion: `${dependent.group}/${dependent.version}`,
        kind: owner.kind,
        metadata: {
          name: ownerName,
          ...(owner.namespaced ? { namespace } : {}),
        },
        spec: ownerSpec,
      }]);
      created.push({
        role: "owner",
        type: ownerType,
        name: ownerName,
        ...(owner.namespaced ? { namespace } : {}),
      });
      const metadata: Record<string, unknown> = {
        name,
        ...(target.namespaced ? { namespace } : {}),
      };
      if (from === "Target" && where.field === "ownerReferences") {
        const uid = await kcp.kubectlOk([
          "get",
          ownerType,
          ownerName,
          ...(owner.namespaced ? ["-n", namespace] : []),
          "-o",
          "jsonpath={.metadata.uid}",
        ], { workspace: consumer });
        metadata.ownerReferences = [{
          apiVersion: `${dependent.group}/${dependent.version}`,
          kind: owner.kind,
          name: ownerName,
          uid,
        }];
      } else if (from === "Target") {
        metadata[where.field] = { [where.key!]: ownerName };
      }
      const targetType = `${dependency.resource}.${dependency.group}`;
      await applyObjects(kcp, consumer, [{
        apiVersion: `${dependency.group}/${dependency.version}`,
        kind: target.kind,
        metadata,
      }]);
      created.push({
        role: "protected",
        type: targetType,
        name,
        ...(target.namespaced ? { namespace } : {}),
      });
      const args = [
        "delete",
        targetType,
        name,
        ...(target.namespaced ? ["-n", namespace] : []),
        "--dry-run=server",
      ];
      const ownerShown = `${owner.kind}/${ownerName} (`;
      let last = "no answer";
      await waitFor(`kubectl ${args.join(" ")} to be denied`, async () => {
        const r = await kcp.kubectl(args, { workspace: consumer });
        last = r.code === 0
          ? `allowed: ${r.stdout.trim()}`
          : `exit ${r.code}: ${r.stderr.trim()}`;
        return r.code !== 0 && /\(Conflict\)/.test(r.stderr) &&
            r.stderr.includes("it belongs to ") &&
            r.stderr.includes(ownerShown) || undefined;
      }, { timeoutMs, intervalMs: 250 }).catch(() => {
        assert.fail(sayLie(
          f,
          index,
          `(${from} at ${dependency.fieldRef.path}) does not hold ${targetType}/${name} in ${consumer} while ${owner.kind}/${ownerName} exists: kubectl ${
            args.join(" ")
          } was not denied within ${timeoutMs} ms; last answer: ${last}`,
        ));
      });
      denials++;
    }
  }

  // Owners first; then what they held must go; then the namespaces.
  const scoped = (c: Created) => [
    c.type,
    c.name,
    ...(c.namespace === undefined ? [] : ["-n", c.namespace]),
  ];
  for (const c of created.filter((c) => c.role === "owner")) {
    await kcp.kubectlOk(["delete", ...scoped(c), "--ignore-not-found"], {
      workspace: consumer,
    });
  }
  for (const c of created.filter((c) => c.role === "protected")) {
    let last = "";
    await waitFor(
      `${c.type}/${c.name} to be deletable once its owner is gone`,
      async () => {
        const r = await kcp.kubectl(
          ["delete", ...scoped(c), "--ignore-not-found"],
          { workspace: consumer },
        );
        last = r.stderr.trim();
        return r.code === 0 || undefined;
      },
      { timeoutMs, intervalMs: 500 },
    ).catch((error: Error) => {
      assert.fail(`${error.message}; last answer: ${last}`);
    });
  }
  for (const c of created.filter((c) => c.role === "namespace")) {
    await kcp.kubectlOk(["delete", "namespace", c.name, "--wait=false"], {
      workspace: consumer,
    });
  }

  const truth: OwnerTruth = {
    rulesProven: enforced.map((f) => `${f.workspace}/${f.rule.metadata.name}`),
    notEnforced: owning.filter((f) => !isEnforced(f.rule)).map(shown),
    skipped: found.filter((f) => ownerDependencies(f.rule).length === 0).map((
      f,
    ) => `${f.workspace}/${f.rule.metadata.name}`),
    denials,
  };
  console.log(
    `owner status truth: proved ${truth.rulesProven.length} Enforced owner rule(s) [${
      truth.rulesProven.join(", ")
    }] with ${denials} denial(s); not Enforced: [${
      truth.notEnforced.join(", ")
    }]; without owner dependencies: [${truth.skipped.join(", ")}]`,
  );
  return truth;
}

/** The dependencies of a rule that read the reference on the target or its Namespace. */
function ownerDependencies(rule: Rule): Rule["spec"]["dependencies"] {
  return rule.spec.dependencies.filter((d) =>
    (d.fieldRef.from ?? "Dependent") !== "Dependent"
  );
}

/**
 * Where in `metadata` a path reads: a label or annotation key, or the
 * names of the ownerReferences; `undefined` for any other path.
 */
function metadataField(
  path: string,
):
  | { field: "labels" | "annotations"; key: string }
  | { field: "ownerReferences"; key?: undefined }
  | undefined {
  const segments = parseFieldPath(path);
  const [metadata, field, last] = segments;
  if (metadata?.name !== "metadata" || metadata.lists !== 0) return undefined;
  if (
    segments.length === 3 && field?.name === "ownerReferences" &&
    field.lists === 1 && last?.name === "name" && last.lists === 0
  ) return { field: "ownerReferences" };
  if (
    segments.length === 3 && field?.lists === 0 && last?.lists === 0 &&
    (field.name === "labels" || field.name === "annotations")
  ) return { field: field.name, key: last.name };
  return undefined;
}

async function listRules(
  kcp: KcpApi,
  workspaces: readonly string[],
): Promise<Found[]> {
  const found: Found[] = [];
  for (const workspace of workspaces) {
    const list = JSON.parse(
      await kcp.kubectlOk(["get", "dependencyrules", "-o", "json"], {
        workspace,
      }),
    ) as { items: Rule[] };
    for (const rule of list.items) found.push({ workspace, rule });
  }
  return found;
}

function readyOf(rule: Rule): Condition | undefined {
  return rule.status?.conditions?.find((c) => c.type === "Ready");
}

function isEnforced(rule: Rule): boolean {
  const ready = readyOf(rule);
  return ready?.status === "True" && ready.reason === "Enforced";
}

function isCurrent(rule: Rule): boolean {
  const observed = readyOf(rule)?.observedGeneration ??
    rule.status?.observedGeneration;
  return rule.metadata.generation === undefined || observed === undefined ||
    observed === rule.metadata.generation;
}

function shown(f: Found): string {
  const ready = readyOf(f.rule);
  return `${f.workspace}/${f.rule.metadata.name} (${
    ready?.status ?? "no status"
  }/${ready?.reason ?? "-"})`;
}

/** What discovery in `workspace` says of a type: its kind and scope, if served. */
async function discover(
  kcp: KcpApi,
  workspace: string,
  type: { group: string; version: string; resource: string },
): Promise<Served | undefined> {
  const path = type.group === ""
    ? `/clusters/${workspace}/api/${type.version}`
    : `/clusters/${workspace}/apis/${type.group}/${type.version}`;
  try {
    const list = await kcp.request<{
      resources: { name: string; kind: string; namespaced: boolean }[];
    }>("GET", path);
    const found = list.resources.find((r) => r.name === type.resource);
    return found === undefined
      ? undefined
      : { kind: found.kind, namespaced: found.namespaced };
  } catch (error) {
    if (error instanceof KcpRequestError && error.status === 404) {
      return undefined;
    }
    throw error;
  }
}
