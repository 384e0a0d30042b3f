/**
 * The proof of one owner dependency (`fieldRef.from: Target` or
 * `TargetNamespace`) of an Enforced rule for `assertStatusTruth`
 * (`status_truth.ts`): an owner of the rule's dependent type, made to
 * satisfy the rule's `when`, and a protected object that names it at
 * `fieldRef.path` (a label, an annotation, or its ownerReferences with the
 * owner's uid), or that sits in a Namespace of its own that names it there;
 * a dry-run delete of the protected object must be denied naming the
 * owner. Internal to `status_truth.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { formatFieldPath, parseFieldPath } from "../lib/rules/mod.ts";
import { type ProofContext, ruleShown } from "./_status_truth_context.ts";
import {
  apiVersion,
  escape,
  type Found,
  kubectlType,
  type RuleSpec,
  type SpecDependency,
} from "./_status_truth_shared.ts";
import { assertWhenHolds, satisfyWhen } from "./_status_truth_when.ts";

/**
 * Proves `found`'s dependency `index` (`from: Target` or `TargetNamespace`)
 * in every place {@linkcode ProofContext.places} finds for it.
 *
 * @throws {AssertionError} Naming the rule and what the delete returned if
 * it is not denied, or why it cannot be proven.
 */
export async function proveOwnerReference(
  context: ProofContext,
  found: Found,
  index: number,
): Promise<void> {
  const spec = found.object.spec as unknown as RuleSpec;
  const dependency: SpecDependency = spec.dependencies[index]!;
  const from = dependency.fieldRef.from!;
  const name = ruleShown(found);
  const what = `its dependency ${index} (${
    kubectlType(dependency)
  }, ${from} at ${dependency.fieldRef.path})`;
  const cannot = (why: string) =>
    `${name} says Ready=True Enforced, but ${what} cannot be proven: ${why}`;
  const whenRule = {
    shown: name,
    key: `${found.workspace}/${found.object.metadata.name}`,
    when: spec.when,
  };
  const field = metadataField(dependency.fieldRef.path);
  assert.ok(
    field,
    cannot(
      "its path is not a label, an annotation or .metadata.ownerReferences[*].name",
    ),
  );
  for (const place of await context.places(found, dependency, what)) {
    const { workspace, protectedType } = place;
    const owner = place.dependent;
    if (from === "TargetNamespace") {
      assert.ok(
        protectedType.namespaced && field.field !== "ownerReferences",
        cannot(
          "from TargetNamespace needs a namespaced protected type and a label or annotation",
        ),
      );
    } else {
      assert.ok(
        protectedType.namespaced || !owner.namespaced,
        cannot(
          `its owner ${owner.kind} is namespaced, while ${
            kubectlType(dependency)
          } is cluster-scoped: no owner can be looked up for it`,
        ),
      );
    }
    const protectedName = context.nextName();
    const ownerName = `${protectedName}-owner`;
    // From TargetNamespace: a Namespace of its own that names the owner.
    const namespace = from === "TargetNamespace"
      ? protectedName
      : context.namespace;
    if (from === "TargetNamespace") {
      await context.createNamespace(workspace, {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: {
          name: namespace,
          [field.field]: { [field.key!]: ownerName },
        },
      });
    } else if (protectedType.namespaced || owner.namespaced) {
      await context.ensureNamespace(workspace);
    }

    const ownerType = kubectlType(spec.dependent);
    const ownerScope = owner.namespaced ? ["-n", namespace] : [];
    const ownerObject = satisfyWhen(
      {
        apiVersion: apiVersion(spec.dependent),
        kind: owner.kind,
        metadata: {
          name: ownerName,
          ...(owner.namespaced ? { namespace } : {}),
        },
      },
      whenRule,
      context.whenFields[whenRule.key],
    );
    await context.create(workspace, ownerObject, {
      role: "owner",
      type: ownerType,
      name: ownerName,
      ...(owner.namespaced ? { namespace } : {}),
    });
    const stored = JSON.parse(
      await context.kcp.kubectlOk(
        ["get", ownerType, ownerName, ...ownerScope, "-o", "json"],
        { workspace },
      ),
    ) as { metadata: { uid: string } } & Record<string, unknown>;
    assertWhenHolds(stored, whenRule);

    const metadata: Record<string, unknown> = {
      name: protectedName,
      ...(protectedType.namespaced ? { namespace } : {}),
    };
    if (from === "Target" && field.field === "ownerReferences") {
      metadata.ownerReferences = [{
        apiVersion: apiVersion(spec.dependent),
        kind: owner.kind,
        name: ownerName,
        uid: stored.metadata.uid,
      }];
    } else if (from === "Target") {
      metadata[field.field] = { [field.key!]: ownerName };
    }
    const targetType = kubectlType(dependency);
    await context.create(workspace, {
      apiVersion: apiVersion(dependency),
      kind: protectedType.kind,
      metadata,
    }, {
      role: "protected",
      type: targetType,
      name: protectedName,
      ...(protectedType.namespaced ? { namespace } : {}),
    });

    // `<Kind>/<name> (<field>[ of namespace <ns>][, with <when>])`: the
    // owner is in the protected object's namespace or cluster-scoped; a
    // condition that could not say (`; ... so it protects`) is no proof of
    // a `when` the owner satisfies.
    const shownField = formatFieldPath(
      parseFieldPath(dependency.fieldRef.path),
      [0],
    ) + (from === "TargetNamespace" ? ` of namespace ${namespace}` : "");
    const held = new RegExp(
      `it belongs to (.*, )?${escape(`${owner.kind}/${ownerName}`)} \\(${
        escape(shownField)
      }(, with [^;]*)?\\)(, .*)?, which still exists?`,
    );
    await context.denied(workspace, [
      "delete",
      targetType,
      protectedName,
      ...(protectedType.namespaced ? ["-n", namespace] : []),
      "--dry-run=server",
    ], {
      message: held,
      lie:
        `${name} says Ready=True Enforced, but ${what} does not hold ${targetType}/${protectedName} in ${workspace} while ${owner.kind}/${ownerName}, which it names, exists`,
    });
  }
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
