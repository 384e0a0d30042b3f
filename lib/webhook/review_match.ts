/**
 * What the review's reads keep of a dependent list, pure: which rules speak
 * of a workspace's dependents (by the export they are bound from), which
 * fields of a dependent refer to the object under review, and the first
 * blockers by name.
 *
 * @module
 */
import { formatFieldPath, referencesOf } from "../rules/mod.ts";
import { sinceOf } from "../causes/mod.ts";
import { compareStrings } from "../runtime/mod.ts";
import type { Protection } from "./rule_registry.ts";
import { asRecord, type ReviewTarget } from "./review_target.ts";
import type { Blocker } from "./verdicts.ts";
import { type Protects, protectsNow } from "./protects_now.ts";
import type { WhenBudget } from "../when/mod.ts";

/**
 * The protections whose rule's dependent export is the one the workspace
 * binds the dependent type from: a rule about another export's type of the
 * same group and resource (another provider's, or a tenant's look-alike)
 * says nothing of these objects. Without the bindings, all of them.
 */
export function ownDependents(
  group: readonly Protection[],
  bound: ReadonlyMap<string, string> | undefined,
): readonly Protection[] {
  if (bound === undefined) return group;
  const { group: apiGroup, resource } = group[0]!.dependent;
  const identity = bound.get(`${apiGroup}/${resource}`);
  return group.filter((p) =>
    p.dependentIdentity === undefined || p.dependentIdentity === identity
  );
}

/** Most fields named per dependent in a denial; the rest are counted. */
const MAX_FIELDS_NAMED = 3;

/** The fields of a dependent that refer to the object, and what to say about them. */
export interface Referring {
  /** The fields (concrete, `.spec.nics[1].subnetRef.name`), at most {@linkcode MAX_FIELDS_NAMED}. */
  paths: string[];
  /** How many more fields refer than `paths` shows, if any. */
  pathsNotShown?: number;
  /** The rules (their keys) under which it refers, in rule order. */
  rules: string[];
  /** Why it protects though its rule's `when` could not say, if so. */
  note?: string;
}

/**
 * The fields of `item` (concrete, `.spec.nics[1].subnetRef.name`) that refer
 * to `target` under a rule for which the dependent protects now (see
 * `protectsNow`): same name, and same namespace unless the object is
 * cluster-scoped. Past {@linkcode MAX_FIELDS_NAMED} the rest are only
 * counted, so one dependent with a huge list cannot make a huge message.
 */
export function referringFields(
  item: unknown,
  group: readonly Protection[],
  target: ReviewTarget,
  budget?: WhenBudget,
): Referring {
  const paths: string[] = [];
  const rules: string[] = [];
  let note: string | undefined;
  let more = 0;
  for (const p of group) {
    let protects: Protects | undefined;
    for (const reference of referencesOf(item, p)) {
      if (reference.name !== target.name) continue;
      if (
        target.namespace !== undefined &&
        reference.namespace !== target.namespace
      ) continue;
      protects ??= protectsNow(item, p, budget);
      if (!protects.protects) break;
      note ??= protects.note;
      if (!rules.includes(p.rule)) rules.push(p.rule);
      if (paths.length < MAX_FIELDS_NAMED) {
        paths.push(formatFieldPath(p.fieldPath, reference.indexes));
      } else more++;
    }
  }
  return {
    paths,
    ...(more > 0 ? { pathsNotShown: more } : {}),
    rules,
    ...(note === undefined ? {} : { note }),
  };
}

/**
 * `item`, a dependent of `group`'s type, as the blocker a denial names when
 * it refers to `options.target` (see {@linkcode referringFields});
 * `undefined` when it does not. A list and the index's confirming read
 * name a dependent alike, since its `metadata.creationTimestamp` when that
 * is an RFC 3339 time.
 */
export function referringBlocker(
  item: unknown,
  group: readonly Protection[],
  options: { target: ReviewTarget; budget?: WhenBudget },
): Blocker | undefined {
  const { paths, pathsNotShown, rules, note } = referringFields(
    item,
    group,
    options.target,
    options.budget,
  );
  if (paths.length === 0) return undefined;
  const dependent = group[0]!.dependent;
  const metadata = asRecord(asRecord(item)?.metadata);
  const since = sinceOf(item);
  return {
    kind: dependent.kind,
    type: {
      group: dependent.group,
      version: dependent.version,
      resource: dependent.resource,
    },
    namespace: typeof metadata?.namespace === "string"
      ? metadata.namespace
      : "",
    name: typeof metadata?.name === "string" ? metadata.name : "",
    paths,
    ...(pathsNotShown === undefined ? {} : { pathsNotShown }),
    rules,
    ...(note === undefined ? {} : { note }),
    ...(since === undefined ? {} : { since }),
  };
}

/** Keeps `named` the `max` smallest blockers in (kind, namespace, name) order, whatever order they come in. */
export function keepFirst(
  named: Blocker[],
  blocker: Blocker,
  max: number,
): void {
  named.push(blocker);
  named.sort(compareBlockers);
  if (named.length > max) named.pop();
}

/** (kind, namespace, name) in code-point order: the same on every locale. */
function compareBlockers(a: Blocker, b: Blocker): number {
  return compareStrings(a.kind, b.kind) ||
    compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name);
}
