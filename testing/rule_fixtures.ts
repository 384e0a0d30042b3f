/**
 * Test fixtures shared by the unit tests: the example
 * types (VPCs, subnets, VirtualMachines, LoadBalancers) and validated
 * DependencyRules and Locks built from them. Only for `*_test.ts` files.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type Dependency,
  type DependencyRule,
  type GroupVersionResource,
  parseDependencyRule,
} from "../lib/rules/mod.ts";
import { type Lock, parseLock } from "../lib/locks/mod.ts";

/** A dependent type: a group/version/resource with its kind. */
export interface DependentType extends GroupVersionResource {
  /** Kind, e.g. `VirtualMachine`. */
  kind: string;
}

/** VPCs, the usual protected type. */
export const VPCS: GroupVersionResource = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
};
/** Subnets, a second protected type from the same provider. */
export const SUBNETS: GroupVersionResource = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "subnets",
};
/** VirtualMachines, the usual dependent type. */
export const VIRTUAL_MACHINES: DependentType = {
  group: "compute.example.com",
  version: "v1alpha1",
  resource: "virtualmachines",
  kind: "VirtualMachine",
};
/** LoadBalancers, a second dependent type. */
export const LOAD_BALANCERS: DependentType = {
  group: "lb.example.com",
  version: "v1",
  resource: "loadbalancers",
  kind: "LoadBalancer",
};

/** A dependency on `target` at `path`, provided by the network APIExport. */
export function dependency(
  target: GroupVersionResource,
  path: string,
): Dependency {
  return {
    apiExportRef: { path: "root:providers:network", name: target.group },
    group: target.group,
    version: target.version,
    resource: target.resource,
    fieldRef: { path },
  };
}

/**
 * A DependencyRule named `name` in which `dependent` refers to
 * `dependencies`, run through the real validation (which must accept it).
 */
export function validRule(
  name: string,
  dependent: DependentType,
  dependencies: readonly Dependency[],
): DependencyRule {
  const parsed = parseDependencyRule({
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent: { apiExportName: dependent.group, ...dependent },
      dependencies,
    },
  });
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
  return parsed.rule;
}

/**
 * A Lock `name` in `namespace` on `target` with `spec` (reason and
 * operations), run through the real validation (which must accept it).
 */
export function validLock(
  name: string,
  namespace: string,
  spec: {
    target: Record<string, unknown>;
    reason: string;
    operations?: string[];
    expiresAt?: string;
  },
): Lock {
  const parsed = parseLock({
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: { name, namespace },
    spec,
  });
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.error);
  return parsed.lock;
}
