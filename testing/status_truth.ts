/**
 * "Status is a promise": every DependencyRule and Lock whose `Ready`
 * condition is `True` with reason `Enforced` is made to prove it on the
 * running kcp. {@linkcode assertStatusTruth} lists them in the given
 * workspaces and, for each, builds what it covers and asserts that a
 * server-side dry-run delete of the covered object is denied by the webhook
 * (409 Conflict, naming what holds it); a 503 or any other failure is never
 * counted as proof:
 *
 * - a rule's dependency `from: Dependent` (the default): a protected object
 *   and a dependent naming it through the rule's field, named in the denial;
 * - a rule's dependency `from: Target` or `TargetNamespace` (an owner rule):
 *   an owner of the rule's dependent type and a protected object that names
 *   it (a label, an annotation or an ownerReference with its uid), or sits
 *   in a Namespace that names it; the owner named in the denial;
 * - a Lock: its target, reused or created.
 *
 * The object of a rule's dependent type (the dependent, or the owner) is
 * made to satisfy the rule's `when` (see
 * {@linkcode StatusTruthOptions.whenFields}). It works on one kcp and on a
 * sharded one behind its front-proxy alike: everything goes through
 * {@linkcode KcpApi.kubectl} and {@linkcode KcpApi.request}.
 *
 * ```ts
 * import { assertStatusTruth, kcpTest } from "./mod.ts";
 *
 * kcpTest("every Enforced status is true", async (kcp, step) => {
 *   await step("status truth", async () => {
 *     await assertStatusTruth(kcp, {
 *       workspaces: ["root:providers:compute", "root:consumers:c1"],
 *       minimum: { rules: 1 },
 *     });
 *   });
 * });
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import type { KcpApi } from "./kcp_server.ts";
import { waitFor } from "./wait.ts";
import { ProofContext } from "./_status_truth_context.ts";
import { proveDependentReference } from "./_status_truth_dependents.ts";
import { proveLock } from "./_status_truth_locks.ts";
import { proveOwnerReference } from "./_status_truth_owners.ts";
import {
  type Found,
  isCurrent,
  isEnforced,
  listAll,
  type RuleSpec,
  shown,
  where,
  withReady,
} from "./_status_truth_shared.ts";

/** Options for {@linkcode assertStatusTruth}. */
export interface StatusTruthOptions {
  /**
   * The workspaces (paths) whose rules and Locks are checked, and where a
   * rule's proof may be placed: the first that binds both of the rule's
   * types (its dependent or owner type, and the protected type) from the
   * exports the rule names (the rule's own workspace is tried first).
   */
  workspaces: readonly string[];
  /**
   * Waits until at least this many rules and Locks are `Enforced` for their
   * current generation (status converges after the steps that wrote them),
   * and fails if they are not. @default {{ rules: 0, locks: 0 }}
   */
  minimum?: { rules?: number; locks?: number };
  /**
   * Proves each rule in every listed workspace that binds both of its types
   * (on a sharded kcp: a consumer on each shard), not only in the first.
   * @default {false}
   */
  everywhere?: boolean;
  /**
   * Deletes what the check created once everything is proven: dependents
   * and owners first, then the protected objects (which must now be
   * deletable), then the namespaces the check created. A Lock's target the
   * check had to create stays, since its Lock holds it (see
   * {@linkcode StatusTruth.leftBehind}). @default {true}
   */
  cleanup?: boolean;
  /** The namespace namespaced objects are created in. @default {"status-truth"} */
  namespace?: string;
  /** How long each denial (and each wait) may take. @default {90_000} */
  timeoutMs?: number;
  /**
   * For a rule with a `when` the check cannot satisfy by itself: fields of
   * the object of the rule's dependent type it creates (the dependent that
   * names the protected object, or the owner it names), keyed by the rule
   * as `<workspace>/<name>`, such as `{ spec: { tier: "gold" } }`. They are
   * merged under the name, namespace and reference the check sets, and the
   * condition must be true for the result. Without them the check tries the
   * object as it is, then with the values the condition compares fields to
   * (`object.spec.deletionProtection == true` sets
   * `spec.deletionProtection: true`), and fails naming the rule and this
   * option if neither makes `when` true. @default {{}}
   */
  whenFields?: Readonly<Record<string, Record<string, unknown>>>;
}

/** What {@linkcode assertStatusTruth} proved. */
export interface StatusTruth {
  /** How many DependencyRules the workspaces hold. */
  rulesListed: number;
  /**
   * The `Enforced` rules, each proven (every dependency, owner rules'
   * too), as `<workspace>/<name>`.
   */
  rulesProven: string[];
  /** How many Locks the workspaces hold. */
  locksListed: number;
  /** The `Enforced` Locks, each proven, as `<workspace>/<namespace>/<name>`. */
  locksProven: string[];
  /**
   * Rules and Locks listed that do not say `Enforced` (only counted), as
   * `<workspace>/[<namespace>/]<name> (<status>/<reason>)`, rules first.
   */
  notEnforced: string[];
  /**
   * `Enforced` rules and Locks whose status is of an older generation even
   * after waiting (the controller has not caught up): not proven.
   */
  stale: string[];
  /**
   * Denials observed: one per rule dependency and workspace (an owner
   * dependency's as a dependent's), one per Lock.
   */
  denials: number;
  /**
   * Objects the check created and did not delete (all of them without
   * `cleanup`; a Lock's target it had to create, which its Lock holds), as
   * `<workspace>: <type>/<namespace>/<name>`.
   */
  leftBehind: string[];
}

/**
 * Proves every `Ready=True`/`Enforced` DependencyRule and Lock in
 * `options.workspaces` by a denial, and returns what it proved.
 *
 * A rule: for each of its dependencies, in a workspace that binds the
 * rule's dependent type from the rule's own export and the protected type
 * from the dependency's `apiExportRef`, namespaced objects in
 * `options.namespace`:
 *
 * - `from: Dependent`: a protected object `truth-<id>-<n>` and a dependent
 *   `truth-<id>-<n>-dependent` naming it at `fieldRef.path` (and the
 *   namespace at `fieldRef.namespacePath`); the denial names the dependent;
 * - `from: Target`: an owner `truth-<id>-<n>-owner` and a protected object
 *   `truth-<id>-<n>` naming it at `fieldRef.path` (a label, an annotation,
 *   or `.metadata.ownerReferences[*].name` with the owner's uid);
 *   `TargetNamespace`: the protected object in a Namespace `truth-<id>-<n>`
 *   of its own, labelled (or annotated) with the owner's name; the denial
 *   names the owner.
 *
 * The dependent or owner satisfies the rule's `when` (checked with the
 * webhook's CEL, on the object as kcp stored it); a dry-run delete of the
 * protected object must be denied. A Lock: its target, reused or created
 * empty; a dry-run delete (an update, for a Lock on updates only) must be
 * denied by a Lock naming it (or, for a type the webhook may not read, by
 * "a Lock may hold it"). Rules and Locks that are not `Enforced` (typos,
 * cycles, conditions that do not compile, tenants' rules, no controller)
 * are only listed.
 *
 * @param kcp The kcp (one server, or a sharded one's front-proxy).
 * @param options The workspaces, and how to check.
 * @returns What was listed and proven.
 * @throws {AssertionError} Naming the object whose status lied (or that
 * could not be proven, and why), with what the delete returned.
 */
export async function assertStatusTruth(
  kcp: KcpApi,
  options: StatusTruthOptions,
): Promise<StatusTruth> {
  const {
    workspaces,
    everywhere = false,
    cleanup = true,
    namespace = "status-truth",
    timeoutMs = 90_000,
    whenFields = {},
  } = options;
  const minRules = options.minimum?.rules ?? 0;
  const minLocks = options.minimum?.locks ?? 0;
  const context = new ProofContext(kcp, {
    workspaces,
    namespace,
    timeoutMs,
    id: crypto.randomUUID().slice(0, 6),
    everywhere,
    whenFields,
  });

  let rules: Found[] = [];
  let locks: Found[] = [];
  let enforced: Found[] = [];
  const settled = async () => {
    rules = await listAll(kcp, workspaces, "dependencyrules");
    locks = await listAll(kcp, workspaces, "locks");
    enforced = [...rules, ...locks].filter((f) => isEnforced(f.object));
    const current = enforced.filter((f) => isCurrent(f.object));
    const count = (resource: string) =>
      current.filter((f) => f.resource === resource).length;
    return {
      enough: count("dependencyrules") >= minRules &&
        count("locks") >= minLocks,
      stale: enforced.length - current.length,
    };
  };
  // Status converges after the steps that wrote the objects: wait until
  // enough are Enforced and none says so of an older generation.
  let state = await settled();
  if (!state.enough || state.stale > 0) {
    await waitFor(
      "the statuses to settle",
      async () => {
        state = await settled();
        return state.enough && state.stale === 0 || undefined;
      },
      { timeoutMs, intervalMs: 500 },
    ).catch(() => undefined);
  }
  assert.ok(
    state.enough,
    `expected at least ${minRules} Enforced rule(s) and ${minLocks} Enforced Lock(s) within ${timeoutMs} ms; rules: ${
      shown(rules)
    }; Locks: ${shown(locks)}`,
  );
  // An Enforced status of an older generation speaks of a spec that is no
  // more: it is reported, not proven.
  const stale = enforced.filter((f) => !isCurrent(f.object));
  const enforcedRules = enforced.filter((f) =>
    f.resource === "dependencyrules" && isCurrent(f.object)
  );
  const enforcedLocks = enforced.filter((f) =>
    f.resource === "locks" && isCurrent(f.object)
  );

  for (const found of enforcedRules) {
    const spec = found.object.spec as unknown as RuleSpec;
    for (const [index, dependency] of spec.dependencies.entries()) {
      if ((dependency.fieldRef.from ?? "Dependent") === "Dependent") {
        await proveDependentReference(context, found, index);
      } else {
        await proveOwnerReference(context, found, index);
      }
    }
  }
  for (const found of enforcedLocks) await proveLock(context, found);
  if (cleanup) await context.cleanup();

  const truth: StatusTruth = {
    rulesListed: rules.length,
    rulesProven: enforcedRules.map(where),
    locksListed: locks.length,
    locksProven: enforcedLocks.map(where),
    notEnforced: [...rules, ...locks].filter((f) => !isEnforced(f.object))
      .map(withReady),
    stale: stale.map(where),
    denials: context.denials,
    leftBehind: context.leftBehind(),
  };
  console.log(
    `status truth: proved ${truth.rulesProven.length} Enforced rule(s) [${
      truth.rulesProven.join(", ")
    }] and ${truth.locksProven.length} Enforced Lock(s) [${
      truth.locksProven.join(", ")
    }] with ${truth.denials} denial(s), of ${truth.rulesListed} rule(s) and ${truth.locksListed} Lock(s) listed${
      truth.notEnforced.length === 0
        ? ""
        : `; not Enforced: ${truth.notEnforced.join(", ")}`
    }${
      truth.stale.length === 0
        ? ""
        : `; stale, not proven: ${truth.stale.join(", ")}`
    }${
      truth.leftBehind.length === 0
        ? ""
        : `; left behind: ${truth.leftBehind.join(", ")}`
    }`,
  );
  return truth;
}
