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
  /** `fieldRef.from`: `Target` for an owner rule (the path is the protected object's). */
  from?: "Target" | "TargetNamespace";
  /** API group, when not the provider's own (`network.example.com` or `compute.example.com`). */
  group?: string;
  /** `apiExportRef.name`, when not the provider's own export. */
  exportName?: string;
  /** `fieldRef.namespacePath` in the dependent, if the reference names a namespace. */
  namespacePath?: string;
}

/** A rule's `spec.dependent`, written out. */
export interface RuleDependent {
  /** The APIExport that exports the type. */
  apiExportName: string;
  /** Its API group. */
  group: string;
  /** Its version. */
  version: string;
  /** Its kind. */
  kind: string;
  /** Its resource. */
  resource: string;
}

/** The topology's types a rule's dependent may be, by kind. */
export const RULE_DEPENDENTS: Readonly<
  Record<"VirtualMachine" | "VPCAttachment" | "VPC" | "Subnet", RuleDependent>
> = Object.freeze({
  VirtualMachine: dependentOf("compute.example.com", "VirtualMachine"),
  VPCAttachment: dependentOf("compute.example.com", "VPCAttachment"),
  VPC: dependentOf("network.example.com", "VPC"),
  Subnet: dependentOf("network.example.com", "Subnet"),
});

function dependentOf(exportName: string, kind: string): RuleDependent {
  return {
    apiExportName: exportName,
    group: exportName,
    version: "v1alpha1",
    kind,
    resource: `${kind.toLowerCase()}s`,
  };
}

/** Options for {@linkcode dependencyRule}. */
export interface DependencyRuleOptions {
  /** The protected types. */
  dependencies: readonly RuleDependency[];
  /**
   * The type that holds the references (or owns the protected objects),
   * by kind, or written out. @default {"VirtualMachine"}
   */
  dependent?: keyof typeof RULE_DEPENDENTS | RuleDependent;
  /** `spec.when`, CEL over the dependent. */
  when?: string;
  /** `spec.protectWhile`. */
  protectWhile?: "Exists" | "Active";
}

/** A DependencyRule object named `name`, ready for `kubectl apply` or a POST. */
export function dependencyRule(
  name: string,
  options: DependencyRuleOptions,
): Record<string, unknown> {
  const { when, protectWhile } = options;
  const dependent = typeof options.dependent === "object"
    ? options.dependent
    : RULE_DEPENDENTS[options.dependent ?? "VirtualMachine"];
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent,
      ...(when === undefined ? {} : { when }),
      ...(protectWhile === undefined ? {} : { protectWhile }),
      dependencies: options.dependencies.map((d) => {
        const provider = d.resource === "virtualmachines"
          ? "compute.example.com"
          : "network.example.com";
        return {
          apiExportRef: { path: d.path, name: d.exportName ?? provider },
          group: d.group ?? provider,
          version: "v1alpha1",
          resource: d.resource,
          fieldRef: {
            ...(d.from === undefined ? {} : { from: d.from }),
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
