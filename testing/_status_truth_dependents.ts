/**
 * The proof of one `from: Dependent` dependency of an Enforced rule for
 * `assertStatusTruth` (`status_truth.ts`): a protected object, and a
 * dependent of the rule's dependent type that names it at `fieldRef.path`
 * (and its namespace at `fieldRef.namespacePath`); a dry-run delete of the
 * protected object must be denied naming the dependent. Internal to
 * `status_truth.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type ProofContext, ruleShown } from "./_status_truth_context.ts";
import {
  apiVersion,
  escape,
  type Found,
  kubectlType,
  type RuleSpec,
  setAtPath,
  type SpecDependency,
} from "./_status_truth_shared.ts";
import { assertWhenHolds, satisfyWhen } from "./_status_truth_when.ts";

/**
 * Proves `found`'s dependency `index` (`from: Dependent`) in every place
 * {@linkcode ProofContext.places} finds for it.
 *
 * @throws {AssertionError} Naming the rule and what the delete returned if
 * it is not denied, or why it cannot be proven.
 */
export async function proveDependentReference(
  context: ProofContext,
  found: Found,
  index: number,
): Promise<void> {
  const spec = found.object.spec as unknown as RuleSpec;
  const dependency: SpecDependency = spec.dependencies[index]!;
  const name = ruleShown(found);
  const what = `its dependency ${index} (${
    kubectlType(dependency)
  } at ${dependency.fieldRef.path})`;
  const whenRule = {
    shown: name,
    key: `${found.workspace}/${found.object.metadata.name}`,
    when: spec.when,
  };
  for (const place of await context.places(found, dependency, what)) {
    const { dependent, protectedType, workspace } = place;
    if (
      !dependent.namespaced && protectedType.namespaced &&
      dependency.fieldRef.namespacePath === undefined
    ) {
      assert.fail(
        `${name} says Ready=True Enforced, but ${what} cannot protect anything: its dependent ${dependent.kind} is cluster-scoped and names no namespace (no fieldRef.namespacePath), while ${
          kubectlType(dependency)
        } is namespaced`,
      );
    }
    const namespace = context.namespace;
    const protectedName = context.nextName();
    if (protectedType.namespaced || dependent.namespaced) {
      await context.ensureNamespace(workspace);
    }
    const dependentName = `${protectedName}-dependent`;
    const base: Record<string, unknown> = {
      apiVersion: apiVersion(spec.dependent),
      kind: dependent.kind,
      metadata: {
        name: dependentName,
        ...(dependent.namespaced ? { namespace } : {}),
      },
    };
    setAtPath(base, dependency.fieldRef.path, protectedName);
    if (
      dependency.fieldRef.namespacePath !== undefined &&
      protectedType.namespaced
    ) {
      setAtPath(base, dependency.fieldRef.namespacePath, namespace);
    }
    const dependentObject = satisfyWhen(
      base,
      whenRule,
      context.whenFields[whenRule.key],
    );
    await context.create(workspace, {
      apiVersion: apiVersion(dependency),
      kind: protectedType.kind,
      metadata: {
        name: protectedName,
        ...(protectedType.namespaced ? { namespace } : {}),
      },
    }, {
      role: "protected",
      type: kubectlType(dependency),
      name: protectedName,
      ...(protectedType.namespaced ? { namespace } : {}),
    });
    const dependentScope = dependent.namespaced ? ["-n", namespace] : [];
    await context.create(workspace, dependentObject, {
      role: "dependent",
      type: kubectlType(spec.dependent),
      name: dependentName,
      ...(dependent.namespaced ? { namespace } : {}),
    });
    if (spec.when !== undefined) {
      const stored = JSON.parse(
        await context.kcp.kubectlOk([
          "get",
          kubectlType(spec.dependent),
          dependentName,
          ...dependentScope,
          "-o",
          "json",
        ], { workspace }),
      ) as Record<string, unknown>;
      assertWhenHolds(stored, whenRule);
    }
    // The dependent goes by its name alone in the protected object's
    // namespace, else as <namespace>/<name>.
    const blocker = new RegExp(
      `still referenced by (.*, )?${escape(dependent.kind)}/(${
        escape(namespace)
      }/)?${escape(dependentName)} \\(`,
    );
    await context.denied(workspace, [
      "delete",
      kubectlType(dependency),
      protectedName,
      ...(protectedType.namespaced ? ["-n", namespace] : []),
      "--dry-run=server",
    ], {
      message: blocker,
      lie: `${name} says Ready=True Enforced, but ${what} does not hold ${
        kubectlType(dependency)
      }/${protectedName} in ${workspace} while ${dependent.kind}/${dependentName} names it`,
    });
  }
}
