/**
 * The DependencyRule API (`dependencies.opendefense.cloud/v1alpha1`): names
 * and annotations, a zod schema that mirrors the reference implementation's
 * validation, and {@linkcode parseDependencyRule}, which turns an untrusted
 * value into a typed rule or a readable list of problems.
 *
 * These schemas are the single source of truth for the kcp
 * APIResourceSchema too: `crd_schema.ts` turns them into its OpenAPI (with
 * the field descriptions given here), and `deno task schema` writes it to
 * `manifests/kcp/dep-ctrl/`. Every constraint is therefore a zod check that
 * JSON Schema can express (`.max()`, `.regex()`, `.min()` on arrays,
 * required fields), with an `error` function that words the message.
 *
 * The string fields (names, versions, kinds, resources, paths) and their
 * patterns are in `./api_fields.ts`, shared with the Lock API.
 *
 * DependencyRules are cluster-scoped: a rule is identified by its kcp logical
 * cluster and its name (see {@linkcode ruleKey}).
 *
 * @example Usage
 * ```ts
 * import { parseDependencyRule } from "./api.ts";
 *
 * const result = parseDependencyRule({ apiVersion: "v1", kind: "Pod" });
 * if (!result.ok) console.error(result.error);
 * ```
 *
 * @module
 */

import { z } from "zod";
import { errorText, type Validated, validateWith } from "../runtime/mod.ts";
import {
  dnsSubdomainField,
  fieldPathField,
  kindField,
  resourceField,
  stringLength,
  versionField,
  workspacePathField,
} from "./api_fields.ts";
import { pairingProblem, tryParseFieldPath } from "./field_path.ts";

/** API group of DependencyRule. */
export const GROUP = "dependencies.opendefense.cloud";
/** API version of DependencyRule within {@linkcode GROUP}. */
export const VERSION = "v1alpha1";
/** The `apiVersion` of a DependencyRule object: `<group>/<version>`. */
export const API_VERSION = "dependencies.opendefense.cloud/v1alpha1";
/** The `kind` of a DependencyRule object. */
export const KIND = "DependencyRule";
/** The `kind` of a list of DependencyRules. */
export const LIST_KIND = "DependencyRuleList";
/** Plural resource name of DependencyRule, as used in URLs. */
export const PLURAL = "dependencyrules";
/** Singular resource name of DependencyRule. */
export const SINGULAR = "dependencyrule";
/**
 * Annotation that, set to exactly `"true"` on an object being deleted, lets
 * the DELETE through despite dependents that still refer to it.
 */
export const SKIP_PROTECTION_ANNOTATION =
  "dependencies.opendefense.cloud/skip-protection";

/**
 * The name of the condition that sums up whether a DependencyRule is in
 * effect, shown in the `Ready` printer column.
 */
export const READY_CONDITION = "Ready";
/**
 * The name of the condition that reports whether the controller installed the
 * deletion webhooks a DependencyRule needs.
 */
export const WEBHOOKS_INSTALLED_CONDITION = "WebhooksInstalled";
/**
 * Every reason the controller writes into a DependencyRule's `Ready` and
 * `WebhooksInstalled` conditions: `Enforced` (Ready) and `Installed`
 * (WebhooksInstalled) when all is well, the others when it is not. The
 * `Indexed` condition has its own ({@linkcode INDEXED_CONDITION_REASONS}).
 */
export const CONDITION_REASONS = [
  "Enforced",
  "Installed",
  "InvalidSpec",
  "PathNotResolved",
  "ProviderNotBound",
  "ClaimNotAccepted",
  "InstallFailed",
  "SelfDependency",
  "DependencyCycle",
  "TypeNotExported",
  "APIExportNotFound",
  "FieldNotInSchema",
  "WebhookCannotRead",
  "InvalidCondition",
] as const;
/**
 * The name of the condition that reports, with the controller's
 * `--dependents-index`, whether the webhook may feed its dependents index
 * for an installed DependencyRule. It never changes `Ready`: without the
 * index the webhook lists the dependents on each review, which protects
 * all the same.
 */
export const INDEXED_CONDITION = "Indexed";
/**
 * Every reason of the {@linkcode INDEXED_CONDITION} condition: `Indexed`
 * (True) when kcp says the webhook may feed the index for the rule;
 * `WebhookCannotWatch` (False) when it may not (it lists on each review
 * instead); `IndexNotChecked` (Unknown) when kcp could not be asked;
 * `NotIndexed` (False) for a rule the webhook never indexes (it has a
 * `spec.when`, or reads every reference on the protected object or its
 * Namespace).
 */
export const INDEXED_CONDITION_REASONS = [
  "Indexed",
  "WebhookCannotWatch",
  "IndexNotChecked",
  "NotIndexed",
] as const;
/**
 * One of {@linkcode CONDITION_REASONS} or
 * {@linkcode INDEXED_CONDITION_REASONS}.
 */
export type ConditionReason =
  | typeof CONDITION_REASONS[number]
  | typeof INDEXED_CONDITION_REASONS[number];

const CONDITION_TYPE_MAX = 316;
const CONDITION_REASON_MAX = 1024;
const CONDITION_MESSAGE_MAX = 32768;
/** Longest `spec.when` the schema accepts (the compiler's own bound too). */
const WHEN_MAX = 1024;

/**
 * Where a dependency's `fieldRef` is read: on the dependent, which names the
 * protected object (the default, the reference implementation's meaning);
 * on the protected object itself, which names its owner of the dependent
 * type; or on the protected object's Namespace, which names that owner.
 */
export const REFERENCE_SOURCES = [
  "Dependent",
  "Target",
  "TargetNamespace",
] as const;
/** One of {@linkcode REFERENCE_SOURCES}. */
export type ReferenceSource = typeof REFERENCE_SOURCES[number];

/**
 * How long a dependent (or an owner) protects: while it `Exists` (the
 * default: one being deleted still protects, so a teardown goes in
 * dependency order), or while it is `Active` (one with a
 * `deletionTimestamp` no longer protects, so deleting an owner with
 * `--cascade=foreground` can remove what it owns).
 */
export const PROTECT_WHILE = ["Exists", "Active"] as const;
/** One of {@linkcode PROTECT_WHILE}. */
export type ProtectWhile = typeof PROTECT_WHILE[number];
/** Pattern of a condition type, as in Kubernetes' `metav1.Condition`. */
const CONDITION_TYPE_PATTERN =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
/** Pattern of a condition reason, as in Kubernetes' `metav1.Condition`. */
const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/**
 * Schema of `spec.dependent`: the type that holds references and is listed
 * when a protected object is deleted.
 */
export const DependentSchema = z.object({
  apiExportName: dnsSubdomainField(
    "Name of the APIExport that provides the dependent type.",
  ),
  group: dnsSubdomainField("API group of the dependent type."),
  version: versionField("API version of the dependent type, such as v1."),
  kind: kindField("Kind of the dependent type, such as VirtualMachine."),
  resource: resourceField(
    "Resource (plural) of the dependent type, such as virtualmachines.",
  ),
}).describe(
  "The type that holds references; it is listed when a protected object is deleted.",
);

/** `spec.dependent`: the type that holds references, listed on DELETE. */
export type Dependent = z.infer<typeof DependentSchema>;

/**
 * Schema of one entry of `spec.dependencies`: a protected type, the APIExport
 * that provides it, and where a dependent holds its name.
 */
export const DependencySchema = z.object({
  apiExportRef: z.object({
    path: workspacePathField(
      "Workspace path of the APIExport, such as root:network-provider.",
    ),
    name: dnsSubdomainField("Name of the APIExport."),
  }).describe("The APIExport that provides the protected type."),
  group: dnsSubdomainField("API group of the protected type."),
  version: versionField("API version of the protected type, such as v1."),
  resource: resourceField(
    "Resource (plural) of the protected type, such as vpcs.",
  ),
  fieldRef: z.object({
    from: z.enum(REFERENCE_SOURCES, {
      error: (issue) => _oneOf(REFERENCE_SOURCES, issue.input),
    }).describe(
      "Which object holds the reference: Dependent (the default) when the dependent names the protected object; Target when the protected object names its owner of the dependent type (a label, an annotation, or .metadata.ownerReferences[*].name, where only entries of the dependent's kind and group count); TargetNamespace when the protected object's Namespace names that owner.",
    ).exactOptional(),
    path: fieldPathField(
      "Where the reference is: with from Dependent (the default) the field of the dependent that holds the name of the protected object; with Target or TargetNamespace the field of the protected object (or its Namespace) that holds its owner's name. Dot notation, leading dot optional, at least two segments; the first a field name, each further one .field or a quoted map key [\"key\"] (the key of a label or annotation: letters, digits, '.', '_', '-' and '/', starting and ending with a letter or digit); [*] after a segment for every element of a list, such as .spec.vpcRef.name, .spec.nics[*].subnetRef.name, .metadata.labels[\"example.com/owner\"] or .metadata.ownerReferences[*].name.",
    ),
    namespacePath: fieldPathField(
      "Where the dependent holds the namespace of the protected object (from Dependent only), in the grammar of path, such as .spec.vpcRef.namespace; inside a list, its [*] are those of path and it is read from the same element. Absent, or empty in an object: the dependent's own namespace.",
    ).exactOptional(),
  }).superRefine((ref, context) => {
    if (ref.namespacePath === undefined) return;
    if ((ref.from ?? "Dependent") !== "Dependent") {
      context.addIssue({
        code: "custom",
        path: ["namespacePath"],
        input: ref.namespacePath,
        message:
          `applies only to from: Dependent; an owner named by the protected object (or its Namespace) is in the protected object's namespace or cluster-scoped, as ownerReferences are: current from is '${ref.from}'`,
      });
      return;
    }
    // Either path may be invalid here: its own check reports that.
    const path = tryParseFieldPath(ref.path);
    const namespacePath = tryParseFieldPath(ref.namespacePath);
    if (path === undefined || namespacePath === undefined) return;
    const problem = pairingProblem(path, namespacePath);
    if (problem !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["namespacePath"],
        input: ref.namespacePath,
        message: `${problem}: current value is '${ref.namespacePath}'`,
      });
    }
  }).describe(
    "The fields of the dependent that name the protected object.",
  ),
}).describe("A protected type and the fields of the dependent that name it.");

/** One entry of `spec.dependencies`: a protected type. */
export type Dependency = z.infer<typeof DependencySchema>;

/** Schema of the `spec` of a DependencyRule. */
export const DependencyRuleSpecSchema = z.object({
  dependent: DependentSchema,
  when: z.string().min(1, { error: "must not be empty when set" }).max(
    WHEN_MAX,
    {
      error: (issue) =>
        `must be at most ${WHEN_MAX} characters: current length is ${
          stringLength(issue.input)
        }`,
    },
  ).describe(
    "A CEL expression over the dependent (the variable object): only a dependent for which it is true protects, such as object.spec.deletionProtection == true. One that cannot be evaluated protects. Absent: every dependent protects.",
  ).exactOptional(),
  protectWhile: z.enum(PROTECT_WHILE, {
    error: (issue) => _oneOf(PROTECT_WHILE, issue.input),
  }).describe(
    "Exists (the default): a dependent protects until it is gone, also while it is being deleted. Active: a dependent that is being deleted (has a deletionTimestamp) no longer protects.",
  ).exactOptional(),
  dependencies: z.array(DependencySchema).min(1, {
    error: "must list at least one dependency: current value is an empty list",
  }).describe(
    "The protected types, each with the field of the dependent that names it.",
  ),
}).describe("Which type depends on which protected types.");

/** The `spec` of a DependencyRule. */
export type DependencyRuleSpec = z.infer<typeof DependencyRuleSpecSchema>;

/**
 * Schema of one status condition, shaped like Kubernetes' `metav1.Condition`.
 */
export const ConditionSchema = z.object({
  type: z.string().max(CONDITION_TYPE_MAX).regex(CONDITION_TYPE_PATTERN)
    .describe(`Type of the condition, such as ${READY_CONDITION}.`),
  status: z.enum(["True", "False", "Unknown"]).describe(
    "Status of the condition: True, False or Unknown.",
  ),
  observedGeneration: z.int().min(0).describe(
    "The metadata.generation the condition was set for.",
  ).exactOptional(),
  lastTransitionTime: z.iso.datetime({ offset: true }).describe(
    "When the condition last changed its status.",
  ),
  reason: z.string().min(1).max(CONDITION_REASON_MAX).regex(
    CONDITION_REASON_PATTERN,
  ).describe("A CamelCase reason for the condition's last transition."),
  message: z.string().max(CONDITION_MESSAGE_MAX).describe(
    "A human-readable message about the last transition.",
  ),
}).describe("A condition of the rule, like a metav1.Condition.");

/** One status condition, shaped like Kubernetes' `metav1.Condition`. */
export type Condition = z.infer<typeof ConditionSchema>;

/**
 * Schema of the `status` of a DependencyRule, written by the controller.
 * {@linkcode DependencyRuleSchema} does not apply it when parsing, since the
 * controller overwrites the status anyway.
 */
export const DependencyRuleStatusSchema = z.object({
  observedGeneration: z.int().min(0).describe(
    "The metadata.generation of the rule the controller last acted on.",
  ).exactOptional(),
  conditions: z.array(ConditionSchema).meta({
    description:
      `The rule's conditions, one per type, such as ${READY_CONDITION}.`,
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
  }).exactOptional(),
}).describe("The state of the rule, as observed by the controller.");

/** The `status` of a DependencyRule, written by the controller. */
export type DependencyRuleStatus = z.infer<typeof DependencyRuleStatusSchema>;

/**
 * Schema of a whole DependencyRule object. Metadata fields the schema does
 * not name are kept; other unknown fields are dropped. `status` is not
 * checked (see {@linkcode DependencyRuleStatusSchema}).
 */
export const DependencyRuleSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND),
  metadata: z.looseObject({
    name: z.string().min(1, { error: "must not be empty" }),
    uid: z.string().optional(),
    generation: z.number().int().optional(),
    resourceVersion: z.string().optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: DependencyRuleSpecSchema,
  status: z.unknown().optional(),
}).describe(
  "A DependencyRule protects objects of the listed types from deletion while objects of the dependent type refer to them.",
);

/** A DependencyRule object, as validated by {@linkcode DependencyRuleSchema}. */
export type DependencyRule = z.infer<typeof DependencyRuleSchema>;

/**
 * The outcome of {@linkcode parseDependencyRule}: the rule, or every problem
 * found in one message.
 */
export type DependencyRuleParseResult =
  | { ok: true; rule: DependencyRule }
  | { ok: false; error: string };

/**
 * Validates an untrusted value, such as a decoded watch event, as a
 * DependencyRule. Never throws.
 *
 * @param value The value to validate.
 * @returns The typed rule, or an `error` listing every problem as
 * `<path>: <message>` joined by `; `, for example
 * `spec.dependencies[0].version: must look like v1, v1alpha1 or v2beta3: current value is 'v0'`.
 * Problems with the value itself have the path `(root)`.
 */
export function parseDependencyRule(value: unknown): DependencyRuleParseResult {
  let result: Validated<DependencyRule>;
  try {
    result = validateWith(DependencyRuleSchema, value);
  } catch (error) {
    // Only a hostile value (a throwing getter or proxy) gets here.
    return {
      ok: false,
      error: `(root): cannot read value: ${errorText(error)}`,
    };
  }
  return result.ok
    ? { ok: true, rule: result.data }
    : { ok: false, error: result.error };
}

/**
 * The key that identifies a DependencyRule across kcp logical clusters:
 * `<cluster>/<name>`. Rules are cluster-scoped, so no namespace is involved.
 *
 * @param cluster The logical cluster name (the `kcp.io/cluster` annotation).
 * @param name The rule's `metadata.name`.
 * @returns `<cluster>/<name>`.
 */
export function ruleKey(cluster: string, name: string): string {
  return `${cluster}/${name}`;
}

function _oneOf(values: readonly string[], input: unknown): string {
  return `must be one of ${values.join(", ")}: current value is ${
    JSON.stringify(input) ?? "undefined"
  }`;
}
