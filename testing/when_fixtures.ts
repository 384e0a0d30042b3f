/**
 * Test fixtures shared by the unit tests of `lib/when/`: a `when` compiled
 * or refused, evaluated to a value or to an error, the checks every message
 * of a `when` passes, and a Kubernetes-like object to evaluate against.
 * Each helper asserts what it expects, so that a test reads as the values
 * it checks. Only for `*_test.ts` files.
 *
 * ```ts
 * import { sampleObject, value } from "./when_fixtures.ts";
 *
 * value("object.spec.replicas > 2", sampleObject()); // true
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type CompiledWhen,
  compileWhen,
  MAX_WHEN_ERROR_LENGTH,
  WHEN_COST_LIMIT,
  type WhenResult,
} from "../lib/when/mod.ts";

/**
 * The message of a `when` that exceeded its own budget of
 * {@linkcode WHEN_COST_LIMIT} units.
 */
export const EXCEEDED: RegExp = new RegExp(
  `exceeded its budget of ${WHEN_COST_LIMIT} units`,
);

/**
 * Asserts that `message` is readable: not empty, on a single line, and no
 * longer than {@linkcode MAX_WHEN_ERROR_LENGTH} characters.
 */
export function assertMessage(message: string): void {
  assert.ok(message.length > 0, "an empty message");
  assert.ok(
    message.length <= MAX_WHEN_ERROR_LENGTH,
    `a message of ${message.length} characters`,
  );
  assert.doesNotMatch(message, /[\r\n]/);
}

/** `source` compiled; asserts that it compiles and keeps its source. */
export function compiled(source: string): CompiledWhen {
  const result = compileWhen(source);
  assert.ok(result.ok, `${source}: ${result.ok ? "" : result.error}`);
  assert.equal(result.when.source, source);
  return result.when;
}

/**
 * Why `source` does not compile; asserts that it does not, with a readable
 * message ({@linkcode assertMessage}).
 */
export function compileError(source: string): string {
  const result = compileWhen(source);
  assert.ok(!result.ok, `${source} compiled`);
  assertMessage(result.error);
  return result.error;
}

/** The result of `source`, which must compile, on `object`. */
export function evaluate(source: string, object: unknown): WhenResult {
  return compiled(source).evaluate(object);
}

/** The value of `source` on `object`; asserts that it evaluates. */
export function value(source: string, object: unknown): boolean {
  const result = evaluate(source, object);
  assert.ok(result.ok, `${source}: ${result.ok ? "" : result.error}`);
  return result.value;
}

/**
 * Why `source` fails on `object`; asserts that it compiles and fails, with
 * a readable message ({@linkcode assertMessage}).
 */
export function evaluationError(source: string, object: unknown): string {
  const result = evaluate(source, object);
  assert.ok(!result.ok, `${source} evaluated to ${JSON.stringify(result)}`);
  assertMessage(result.error);
  return result.error;
}

/**
 * A Kubernetes-like object, as decoded from JSON: a `Database` named
 * `prod-orders` with labels, numbers, a null, a nested object and lists.
 * A new copy on each call.
 */
export function sampleObject(): unknown {
  return JSON.parse(JSON.stringify({
    apiVersion: "example.io/v1",
    kind: "Database",
    metadata: {
      name: "prod-orders",
      namespace: "shop",
      labels: { tier: "gold", "app.kubernetes.io/name": "orders" },
    },
    spec: {
      deletionProtection: true,
      replicas: 3,
      ratio: 0.5,
      big: 1e20,
      offset: -2,
      owner: null,
      backup: { deletionProtection: false, schedule: "@daily" },
      items: [1, 2, 3],
      volumes: [{ name: "data", size: 10 }, { name: "logs", size: 2 }],
    },
  }));
}
