/**
 * DependencyRules over the test topology's types, as users write them: a
 * VirtualMachine (or a VPCAttachment, or a VPC) that refers to VPCs,
 * Subnets or VirtualMachines by name (and, if asked, namespace).
 *
 * @module
 */

/** One protected type of a rule, and where the dependent names it. */
export interface RuleDependency {
  /** Workspace path of the provider that exports the type. */
  path: string;
  /** The protected resource. */
  resource: "vpcs" | "subnets" | "virtualmachines";
  /** `fieldRef.path` in the dependent, e.g. `.spec.vpcRef.name`. */
  field: string;
  /** API group, when not the provider's own (`network.example.com` or `compute.example.com`). */
  group?: string;
  /** `fieldRef.namespacePath` in the dependent, if the reference names a namespace. */
  namespacePath?: string;
}

/** Options for {@linkcode dependencyRule}. */
export interface DependencyRuleOptions {
  /** The protected types. */
  dependencies: readonly RuleDependency[];
  /** The type that holds the references. @default {"VirtualMachine"} */
  dependent?: "VirtualMachine" | "VPCAttachment" | "VPC";
}

/** A DependencyRule object named `name`, ready for `kubectl apply` or a POST. */
export function dependencyRule(
  name: string,
  options: DependencyRuleOptions,
): Record<string, unknown> {
  const dependent = options.dependent === "VPC"
    ? {
      apiExportName: "network.example.com",
      group: "network.example.com",
      version: "v1alpha1",
      kind: "VPC",
      resource: "vpcs",
    }
    : {
      apiExportName: "compute.example.com",
      group: "compute.example.com",
      version: "v1alpha1",
      kind: options.dependent ?? "VirtualMachine",
      resource: options.dependent === "VPCAttachment"
        ? "vpcattachments"
        : "virtualmachines",
    };
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent,
      dependencies: options.dependencies.map((d) => {
        const exportName = d.resource === "virtualmachines"
          ? "compute.example.com"
          : "network.example.com";
        return {
          apiExportRef: { path: d.path, name: exportName },
          group: d.group ?? exportName,
          version: "v1alpha1",
          resource: d.resource,
          fieldRef: {
            path: d.field,
            ...(d.namespacePath === undefined
              ? {}
              : { namespacePath: d.namespacePath }),
          },
        };
      }),
    },
  };
}

/**
 * The demo's reference rule, as most tests declare it in the compute
 * provider: a VirtualMachine's `.spec.vpcRef.name` names a VPC the network
 * provider at `networkPath` exports.
 */
export function vmVpcRule(
  networkPath: string,
  name = "vm-vpc",
): Record<string, unknown> {
  return dependencyRule(name, {
    dependencies: [{
      path: networkPath,
      resource: "vpcs",
      field: ".spec.vpcRef.name",
    }],
  });
}
