/**
 * A rule's `when` for `assertStatusTruth` (`status_truth.ts`): the object of
 * the rule's dependent type a proof creates (the dependent that names the
 * protected object, or the owner it names) must make the `when` true, or
 * the denial it waits for would prove nothing. {@linkcode satisfyWhen}
 * builds such an object, with the fields the caller gives for the rule or,
 * failing that, the values the `when` compares fields to, and checks it
 * with the webhook's own CEL evaluation; {@linkcode assertWhenHolds} checks
 * the object as kcp stored it. Internal to `status_truth.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { compileWhen } from "../lib/when/mod.ts";
import { printable } from "../lib/runtime/mod.ts";
import { deepMerge, isRecord } from "./_status_truth_shared.ts";

/** The rule whose `when` an object must satisfy, for the messages. */
export interface WhenRule {
  /** `DependencyRule <name> in <workspace>`. */
  shown: string;
  /** `<workspace>/<name>`: its key in the `whenFields` option. */
  key: string;
  /** Its `spec.when`, if any. */
  when: string | undefined;
}

/**
 * `base` (an object the proof is about to create: apiVersion, kind,
 * metadata, and for a dependent the reference) made to satisfy the rule's
 * `when`: with `given` (the caller's `whenFields` for the rule) merged under
 * it; else as it is, or with the values the `when` compares fields to
 * (`object.spec.on == true` sets `spec.on: true`, `has(object.spec.x)` sets
 * `spec.x: true`, a bare `object.spec.on` sets it `true`). The first that the
 * `when`, evaluated as the webhook does, finds true is returned.
 *
 * @throws {AssertionError} Naming the rule, what was tried and what it
 * evaluated to, and the option that provides an object, when none is true.
 */
export function satisfyWhen(
  base: Record<string, unknown>,
  rule: WhenRule,
  given: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const withGiven = given === undefined ? base : deepMerge(given, base);
  if (rule.when === undefined) return withGiven;
  const compiled = compileWhen(rule.when);
  assert.ok(
    compiled.ok,
    `${rule.shown} says Ready=True Enforced, but its spec.when does not compile here: ${
      compiled.ok ? "" : compiled.error
    }`,
  );
  const candidates = given === undefined
    ? [base, deepMerge(derivedFields(rule.when), base)]
    : [withGiven];
  const tried: string[] = [];
  for (const candidate of candidates) {
    const result = compiled.when.evaluate(candidate);
    if (result.ok && result.value) return candidate;
    tried.push(
      `${JSON.stringify(shownFields(candidate))}: ${
        result.ok ? result.value : `cannot be evaluated (${result.error})`
      }`,
    );
  }
  assert.fail(
    `${rule.shown} says Ready=True Enforced with spec.when ${
      printable(rule.when, 200)
    }, and the check cannot build a ${
      String(base.kind)
    } for which it is true (tried ${
      tried.join("; ")
    }): give the fields of one as whenFields[${
      JSON.stringify(rule.key)
    }] (merged under the name, namespace and reference the check sets), such as { spec: { ... } }`,
  );
}

/**
 * Asserts that `stored` (the object as kcp returned it, after defaulting
 * and pruning) still satisfies the rule's `when`: otherwise a missing
 * denial would not be the rule's fault.
 */
export function assertWhenHolds(
  stored: Record<string, unknown>,
  rule: WhenRule,
): void {
  if (rule.when === undefined) return;
  const compiled = compileWhen(rule.when);
  if (!compiled.ok) return;
  const result = compiled.when.evaluate(stored);
  assert.ok(
    result.ok && result.value,
    `${rule.shown}: the ${
      String(stored.kind)
    } the check created for spec.when ${
      printable(rule.when, 200)
    } no longer satisfies it as kcp stored it (${
      JSON.stringify(shownFields(stored))
    }: ${
      result.ok ? result.value : `cannot be evaluated (${result.error})`
    }), so its proof would prove nothing: give fields kcp keeps as whenFields[${
      JSON.stringify(rule.key)
    }]`,
  );
}

/** The object without apiVersion, kind and the metadata kcp writes. */
function shownFields(object: Record<string, unknown>): Record<string, unknown> {
  const { apiVersion: _a, kind: _k, metadata, ...rest } = object;
  if (!isRecord(metadata)) return rest;
  const {
    uid: _u,
    resourceVersion: _r,
    generation: _g,
    creationTimestamp: _c,
    managedFields: _m,
    annotations,
    ...meta
  } = metadata;
  const kept = isRecord(annotations)
    ? Object.fromEntries(
      Object.entries(annotations).filter(([k]) =>
        k !== "kcp.io/cluster" &&
        k !== "kubectl.kubernetes.io/last-applied-configuration"
      ),
    )
    : {};
  return {
    metadata: {
      ...meta,
      ...(Object.keys(kept).length === 0 ? {} : { annotations: kept }),
    },
    ...rest,
  };
}

const PATH = String.raw`object((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`;
const LITERAL = String
  .raw`(true|false|-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')`;
/** `object.a.b == literal` and `literal == object.a.b`. */
const EQUALS = new RegExp(
  `${PATH}\\s*==\\s*${LITERAL}|${LITERAL}\\s*==\\s*${PATH}`,
  "g",
);
/** `has(object.a.b)`. */
const HAS = new RegExp(String.raw`\bhas\(\s*${PATH}\s*\)`, "g");
/** A bare `object.a.b` or `!object.a.b` between `&&`, `||` and parentheses. */
const BARE = new RegExp(
  String.raw`(?:^|&&|\|\||\()\s*(!?)\s*${PATH}\s*(?=$|&&|\|\||\))`,
  "g",
);
/** Fields of `metadata` the check sets itself. */
const OWN_FIELDS = new Set(["metadata.name", "metadata.namespace"]);

/**
 * The fields a `when` compares to literals, as an object: a guess that
 * {@linkcode satisfyWhen} checks by evaluating the `when`.
 */
function derivedFields(when: string): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const set = (path: string, value: unknown, overwrite: boolean) => {
    const keys = path.slice(1).split(".");
    if (OWN_FIELDS.has(keys.join("."))) return;
    let node = fields;
    for (const key of keys.slice(0, -1)) {
      if (!isRecord(node[key])) node[key] = {};
      node = node[key] as Record<string, unknown>;
    }
    const last = keys[keys.length - 1]!;
    if (overwrite || !(last in node)) node[last] = value;
  };
  for (const m of when.matchAll(EQUALS)) {
    const path = m[1] ?? m[4]!;
    set(path, literal(m[2] ?? m[3]!), true);
  }
  for (const m of when.matchAll(BARE)) set(m[2]!, m[1] !== "!", false);
  for (const m of when.matchAll(HAS)) {
    // Present already if a deeper field was set on the way.
    if (!hasPath(fields, m[1]!)) set(m[1]!, true, false);
  }
  return fields;
}

function hasPath(object: Record<string, unknown>, path: string): boolean {
  let node: unknown = object;
  for (const key of path.slice(1).split(".")) {
    if (!isRecord(node) || !(key in node)) return false;
    node = node[key];
  }
  return true;
}

/** A CEL literal's value: a bool, a number or a string. */
function literal(text: string): unknown {
  if (text === "true") return true;
  if (text === "false") return false;
  if (text.startsWith('"')) return JSON.parse(text);
  if (text.startsWith("'")) return text.slice(1, -1).replace(/\\(.)/g, "$1");
  return Number(text);
}
