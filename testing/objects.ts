/**
 * The demo objects of the test topology, as users write them in a
 * manifest: the network provider's VPCs and Subnets, the compute
 * provider's VirtualMachines, and Locks on any of them. Each builder takes
 * the name and an options object for everything a test varies (namespace,
 * labels, annotations, `spec.cidr`, references); what is not given is not
 * written. DependencyRules over these types are built by
 * {@linkcode dependencyRule} (`rules.ts`).
 *
 * ```ts
 * import { applyObjects, vmManifest, vpcManifest } from "./mod.ts";
 *
 * const objects = [
 *   vpcManifest("core", { namespace: "team-a" }),
 *   vmManifest("vm-1", { namespace: "team-a", vpc: "core" }),
 * ];
 * ```
 *
 * @module
 */

/** What every builder of this module takes. */
export interface ManifestOptions {
  /** `metadata.namespace`. @default {"default"} */
  namespace?: string;
  /** `metadata.labels`; absent if not given. */
  labels?: Record<string, string>;
  /** `metadata.annotations`; absent if not given. */
  annotations?: Record<string, string>;
}

/** Options for {@linkcode vpcManifest} and {@linkcode subnetManifest}. */
export interface NetworkManifestOptions extends ManifestOptions {
  /** `spec.cidr`; the spec is empty if not given. */
  cidr?: string;
}

/** Options for {@linkcode vmManifest}. */
export interface VmManifestOptions extends ManifestOptions {
  /** The VPC `spec.vpcRef.name` names, if any. */
  vpc?: string;
  /** The VPC `spec.altVpcRef.name` names, if any. */
  altVpc?: string;
  /** Further fields of the spec (NICs, references with a namespace, ...). */
  spec?: Record<string, unknown>;
}

/** A Lock's `spec.target` on a type a provider exports. */
export interface LockTarget {
  /** The APIExport that exports the type: its workspace path and name. */
  apiExportRef?: { path: string; name: string };
  /** The type's API group (`""` for the core group). */
  group: string;
  /** The type's version. */
  version: string;
  /** The type's resource. */
  resource: string;
  /** The locked object's name. */
  name: string;
}

/** Options for {@linkcode lockManifest}. */
export interface LockManifestOptions extends ManifestOptions {
  /** What the Lock holds. */
  target: LockTarget | Record<string, unknown>;
  /** `spec.reason`, quoted in denials. */
  reason: string;
  /** `spec.operations`; absent (the default, Delete) if not given. */
  operations?: string[];
}

/** `metadata` with the name and what `options` gives. */
function metadataOf(
  name: string,
  options: ManifestOptions,
): Record<string, unknown> {
  return {
    name,
    namespace: options.namespace ?? "default",
    ...(options.labels === undefined ? {} : { labels: options.labels }),
    ...(options.annotations === undefined
      ? {}
      : { annotations: options.annotations }),
  };
}

/** A namespaced object of the network provider, VPC or Subnet. */
function networkManifest(
  kind: "VPC" | "Subnet",
  name: string,
  options: NetworkManifestOptions,
): Record<string, unknown> {
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind,
    metadata: metadataOf(name, options),
    spec: options.cidr === undefined ? {} : { cidr: options.cidr },
  };
}

/** A VPC of the network provider. */
export function vpcManifest(
  name: string,
  options: NetworkManifestOptions = {},
): Record<string, unknown> {
  return networkManifest("VPC", name, options);
}

/** A Subnet of the network provider. */
export function subnetManifest(
  name: string,
  options: NetworkManifestOptions = {},
): Record<string, unknown> {
  return networkManifest("Subnet", name, options);
}

/** A VirtualMachine of the compute provider, referring to the VPCs given. */
export function vmManifest(
  name: string,
  options: VmManifestOptions = {},
): Record<string, unknown> {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: metadataOf(name, options),
    spec: {
      ...(options.vpc === undefined ? {} : { vpcRef: { name: options.vpc } }),
      ...(options.altVpc === undefined
        ? {}
        : { altVpcRef: { name: options.altVpc } }),
      ...options.spec,
    },
  };
}

/** The exported types of the test topology a Lock may target. */
export type ExportedResource = "vpcs" | "subnets" | "virtualmachines";

/**
 * The target of a Lock on an object of the network provider (VPCs,
 * Subnets) or the compute provider (VirtualMachines) at `path`.
 */
export function exportedTarget(
  path: string,
  target: { resource: ExportedResource; name: string },
): LockTarget {
  const group = target.resource === "virtualmachines"
    ? "compute.example.com"
    : "network.example.com";
  return {
    apiExportRef: { path, name: group },
    group,
    version: "v1alpha1",
    resource: target.resource,
    name: target.name,
  };
}

/** A Lock in a consumer's namespace. */
export function lockManifest(
  name: string,
  options: LockManifestOptions,
): Record<string, unknown> {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "Lock",
    metadata: metadataOf(name, options),
    spec: {
      target: options.target,
      reason: options.reason,
      ...(options.operations === undefined
        ? {}
        : { operations: options.operations }),
    },
  };
}
